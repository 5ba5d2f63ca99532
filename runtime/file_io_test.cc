#include "runtime/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// `name` in this test's scratch directory.
std::string Tmp(const std::string& name) {
  std::string dir = lathe::testing::TestTmpPath("file_io");
  ::mkdir(dir.c_str(), 0755);
  return absl::StrCat(dir, "/", name);
}

void Put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string Get(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The entries of `dir` (none when it cannot be read).
std::vector<std::string> List(const std::string& dir) {
  return ListDirectory(dir).value_or(std::vector<std::string>());
}

TEST(ReadFileLimitedTest, ReadsAFileWithinTheLimit) {
  std::string path = Tmp("small.txt");
  Put(path, "hello");
  EXPECT_EQ(*ReadFileLimited(path, 5), "hello");
  absl::StatusOr<std::string> r = ReadFileLimited(path, 4);
  EXPECT_EQ(r.status().message(),
            absl::StrCat(path, ": larger than the limit of 4 bytes"));
}

TEST(ReadFileLimitedTest, AnEndlessDeviceIsAnErrorNotAnExhaustedHeap) {
  absl::StatusOr<std::string> r = ReadFileLimited("/dev/zero", 1 << 20);
  EXPECT_EQ(r.status().message(),
            "/dev/zero: larger than the limit of 1048576 bytes");
}

TEST(ReadFileLimitedTest, APipeIsReadOnce) {
  std::string fifo = Tmp("fifo");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { Put(fifo, "through a pipe"); });
  absl::StatusOr<std::string> r = ReadFileLimited(fifo, 100);
  writer.join();
  EXPECT_EQ(*r, "through a pipe");
}

TEST(ReadFileLimitedTest, MissingFileAndDirectoryAreErrors) {
  EXPECT_THAT(ReadFileLimited(Tmp("nosuch"), 10).status().message(),
              HasSubstr("nosuch: cannot open: No such file or directory"));
  EXPECT_THAT(ReadFileLimited("/", 10).status().message(),
              HasSubstr("/: is a directory, not a file"));
}

TEST(WriteFileAtomicTest, ReplacesAPlantedSymlinkInsteadOfFollowingIt) {
  std::string secret = Tmp("secret.txt"), path = Tmp("planted.npy");
  Put(secret, "keep me");
  ::unlink(path.c_str());
  ASSERT_EQ(::symlink(secret.c_str(), path.c_str()), 0);
  ASSERT_OK(WriteFileAtomic(path, "new"));
  EXPECT_EQ(Get(secret), "keep me");
  EXPECT_EQ(Get(path), "new");
  struct stat st;
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(WriteFileAtomicTest, LeavesNoTemporaryFileBehind) {
  std::string dir = Tmp("atomic_dir");
  ::mkdir(dir.c_str(), 0755);
  ASSERT_OK(WriteFileAtomic(dir + "/a.npy", "x"));
  EXPECT_THAT(List(dir), ElementsAre("a.npy"));
  EXPECT_FALSE(WriteFileAtomic(dir + "/nosuchdir/a.npy", "x").ok());
}

TEST(WriteFileAtomicTest, WithoutDurabilityStillReplacesWhole) {
  std::string dir = Tmp("not_durable");
  ::mkdir(dir.c_str(), 0755);
  Put(dir + "/k.so", "old");
  ASSERT_OK(WriteFileAtomic(dir + "/k.so", "new bytes", /*durable=*/false));
  EXPECT_EQ(Get(dir + "/k.so"), "new bytes");
  EXPECT_THAT(List(dir), ElementsAre("k.so"));
}

TEST(WriteFileAtomicTest, GivesTheFileItsMode) {
  const std::string path = Tmp("mode");
  ASSERT_OK(WriteFileAtomic(path, "x", true, 0600));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_OK(WriteFileAtomic(path, "x"));
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(CheckPrivateFileTest, SaysWhyAFileIsNotPrivate) {
  const std::string dir = Tmp("private_files");
  ASSERT_OK(RemoveTree(dir));
  ASSERT_OK(MakeDirectories(dir, 0700));
  const std::string file = dir + "/f";
  EXPECT_THAT(CheckPrivateFile(file, ::geteuid()),
              lathe::testing::StatusIs(absl::StatusCode::kNotFound,
                                       file + ": does not exist"));
  ASSERT_OK(WriteFileAtomic(file, "x", false, 0600));
  EXPECT_OK(CheckPrivateFile(file, ::geteuid()));
  ASSERT_OK(WriteFileAtomic(file, "x", false, 0644));  // others only read
  EXPECT_OK(CheckPrivateFile(file, ::geteuid()));
  EXPECT_THAT(CheckPrivateFile(file, ::geteuid() + 1),
              lathe::testing::StatusIs(absl::StatusCode::kPermissionDenied,
                                       HasSubstr(" is owned by uid ")));
  ASSERT_EQ(::chmod(file.c_str(), 0666), 0);
  EXPECT_THAT(CheckPrivateFile(file, ::geteuid()),
              lathe::testing::StatusIs(
                  absl::StatusCode::kPermissionDenied,
                  file + " is writable by its group or others (mode 0666)"));
  // A link to a private file is not one: what it names can change.
  ASSERT_OK(WriteFileAtomic(dir + "/target", "x", false, 0600));
  ASSERT_EQ(::symlink((dir + "/target").c_str(), (dir + "/link").c_str()), 0);
  EXPECT_THAT(CheckPrivateFile(dir + "/link", ::geteuid()),
              lathe::testing::StatusIs(absl::StatusCode::kPermissionDenied,
                                       dir + "/link is not a regular file"));
  EXPECT_THAT(CheckPrivateFile(dir, ::geteuid()),
              lathe::testing::StatusIs(absl::StatusCode::kPermissionDenied,
                                       dir + " is not a regular file"));
}

TEST(CheckPrivateDirectoryTest, SaysWhyADirectoryIsNotPrivate) {
  const std::string dir = Tmp("private");
  ASSERT_OK(RemoveTree(dir));
  EXPECT_THAT(CheckPrivateDirectory(dir, ::geteuid()),
              lathe::testing::StatusIs(absl::StatusCode::kNotFound,
                                       dir + ": does not exist"));
  ASSERT_OK(MakeDirectories(dir, 0700));
  EXPECT_OK(CheckPrivateDirectory(dir, ::geteuid()));
  EXPECT_THAT(
      CheckPrivateDirectory(dir, ::geteuid() + 1),
      lathe::testing::StatusIs(
          absl::StatusCode::kPermissionDenied,
          absl::StrCat(dir, " is owned by uid ", ::geteuid(), ", not by uid ",
                       ::geteuid() + 1, " (the user running lathe)")));
  ASSERT_EQ(::chmod(dir.c_str(), 0757), 0);
  EXPECT_THAT(CheckPrivateDirectory(dir, ::geteuid()),
              lathe::testing::StatusIs(
                  absl::StatusCode::kPermissionDenied,
                  dir + " is writable by its group or others (mode 0757)"));
  ASSERT_OK(WriteFileAtomic(dir + "/file", "x"));
  EXPECT_THAT(CheckPrivateDirectory(dir + "/file", ::geteuid()),
              lathe::testing::StatusIs(absl::StatusCode::kPermissionDenied,
                                       dir + "/file is not a directory"));
}

TEST(ReadPrivateFileTest, ReadsOnlyARegularFileOfItsOwnersAlone) {
  const std::string path = Tmp("owned");
  ASSERT_OK(WriteFileAtomic(path, "bytes", true, 0600));
  ASSERT_OK_AND_ASSIGN(std::string got,
                       ReadPrivateFile(path, 100, ::geteuid()));
  EXPECT_EQ(got, "bytes");
  using lathe::testing::StatusIs;
  EXPECT_THAT(ReadPrivateFile(path, 3, ::geteuid()),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("larger than the limit of 3 bytes")));
  EXPECT_THAT(ReadPrivateFile(path, 100, ::geteuid() + 1),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr(path + " is owned by uid ")));
  ASSERT_EQ(::chmod(path.c_str(), 0620), 0);
  EXPECT_THAT(ReadPrivateFile(path, 100, ::geteuid()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       path + " is writable by its group or others (mode "
                              "0620)"));
  const std::string link = Tmp("owned_link");
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  EXPECT_THAT(ReadPrivateFile(link, 100, ::geteuid()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       link + " is not a regular file"));
  const std::string fifo = Tmp("owned_fifo");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(ReadPrivateFile(fifo, 100, ::geteuid()),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       fifo + " is not a regular file"));
  EXPECT_THAT(ReadPrivateFile(Tmp("absent"), 100, ::geteuid()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent")));
}

TEST(ListDirectoryTest, ListsSortedNamesOrSaysWhyNot) {
  std::string dir = Tmp("listed");
  ASSERT_OK(MakeDirectories(dir + "/sub"));
  Put(dir + "/b", "");
  Put(dir + "/.a", "");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, ListDirectory(dir));
  EXPECT_THAT(names, ElementsAre(".a", "b", "sub"));
  EXPECT_THAT(ListDirectory(dir + "/none").status(),
              lathe::testing::StatusIs(absl::StatusCode::kNotFound,
                                       HasSubstr("/none: cannot list: ")));
}

TEST(MakeDirectoriesTest, CreatesMissingParentsAndAcceptsExistingOnes) {
  std::string dir = Tmp("mkdirs");
  ASSERT_OK(MakeDirectories(dir + "/a/b/c"));
  ASSERT_OK(MakeDirectories(dir + "/a/b/c/"));
  EXPECT_THAT(List(dir + "/a/b"), ElementsAre("c"));
  Put(dir + "/file", "x");
  EXPECT_THAT(MakeDirectories(dir + "/file/d"),
              lathe::testing::StatusIs(absl::StatusCode::kPermissionDenied,
                                       HasSubstr("cannot create directory")));
}

TEST(StagedDirTest, FilesAppearOnlyOnCommit) {
  std::string dest = Tmp("staged_out");
  ASSERT_OK(RemoveTree(dest));
  {
    ASSERT_OK_AND_ASSIGN(StagedDir s, StagedDir::Create(dest, ".marker"));
    ASSERT_OK(s.Write("out0.npy", "zero"));
    ASSERT_OK(s.Write("1/out1.npy", "one"));
    EXPECT_FALSE(::access(dest.c_str(), F_OK) == 0);
    ASSERT_OK(s.Commit());
  }
  EXPECT_THAT(List(dest), ElementsAre(".marker", "1", "out0.npy"));
  EXPECT_EQ(Get(dest + "/1/out1.npy"), "one");
}

TEST(StagedDirTest, AnAbandonedStageLeavesNothing) {
  std::string parent = Tmp("abandon");
  ASSERT_OK(RemoveTree(parent));
  {
    ASSERT_OK_AND_ASSIGN(StagedDir s, StagedDir::Create(parent + "/out", ".m"));
    ASSERT_OK(s.Write("out0.npy", "zero"));
  }
  EXPECT_TRUE(List(parent).empty());
}

TEST(StagedDirTest, ReplacesAnEarlierOutputWholeWithNoStaleFiles) {
  std::string dest = Tmp("rerun");
  ASSERT_OK(RemoveTree(dest));
  for (const char* name : {"old.npy", "new.npy"}) {
    ASSERT_OK_AND_ASSIGN(StagedDir s, StagedDir::Create(dest, ".m"));
    ASSERT_OK(s.Write(name, name));
    ASSERT_OK(s.Commit());
  }
  EXPECT_THAT(List(dest), ElementsAre(".m", "new.npy"));
  EXPECT_THAT(
      List(Tmp("")),
      ::testing::Not(::testing::Contains(::testing::HasSubstr(".rerun.tmp-"))));
}

TEST(StagedDirTest, NeverReplacesAForeignDirectoryOrASymlink) {
  std::string dest = Tmp("foreign");
  ASSERT_OK(RemoveTree(dest));
  ::mkdir(dest.c_str(), 0755);
  Put(dest + "/thesis.tex", "precious");
  ASSERT_OK_AND_ASSIGN(StagedDir s, StagedDir::Create(dest, ".m"));
  EXPECT_EQ(s.Commit().message(),
            absl::StrCat(dest,
                         ": exists, is not empty and is not an earlier output "
                         "(no .m); nothing was written"));
  EXPECT_THAT(List(dest), ElementsAre("thesis.tex"));

  std::string link = Tmp("linked_out");
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink(dest.c_str(), link.c_str()), 0);
  ASSERT_OK_AND_ASSIGN(StagedDir t, StagedDir::Create(link, ".m"));
  EXPECT_THAT(t.Commit().message(), HasSubstr("is not a directory"));
}

TEST(StagedDirTest, AnEmptyDirectoryIsReplaced) {
  std::string dest = Tmp("empty_out");
  ASSERT_OK(RemoveTree(dest));
  ::mkdir(dest.c_str(), 0755);
  ASSERT_OK_AND_ASSIGN(StagedDir s, StagedDir::Create(dest, ".m"));
  ASSERT_OK(s.Write("a", "1"));
  ASSERT_OK(s.Commit());
  EXPECT_THAT(List(dest), ElementsAre(".m", "a"));
}

TEST(StagedDirTest, WritesStayInside) {
  ASSERT_OK_AND_ASSIGN(StagedDir s, StagedDir::Create(Tmp("inside"), ".m"));
  for (const char* bad : {"../escape", "/etc/x", "a//b", ""}) {
    EXPECT_THAT(s.Write(bad, "x").message(),
                HasSubstr("is not a plain relative path inside"))
        << bad;
  }
  EXPECT_THAT(s.Write(".m", "x").message(), HasSubstr("cannot create"));
}

}  // namespace
}  // namespace lathe
