// CompileSharedLibrary with the system compiler and a compile cache: the
// second build of a source is a disk hit that writes the same, loadable
// .so without compiling; the bytes to load are the ones the cache verified
// (a kernel.so swapped after the hit changes nothing); under a secret an
// unsigned entry is compiled over, never loaded; another source is a miss;
// a compiler error is not cached; a failure to store is noted, not fatal;
// a compiler that cannot be identified is an error naming it.

#include "codegen/cpp/cpp_compiler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/compile_cache.h"
#include "runtime/file_io.h"
#include "runtime/shared_library.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

using ::lathe::testing::StatusIs;
using ::lathe::testing::TestTmpPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kSource[] =
    "extern \"C\" int lathe_test_answer() { return 42; }\n";

// A new empty directory `name` under the test's scratch directory.
std::string Dir(const std::string& name) {
  std::string dir = TestTmpPath(name);
  EXPECT_OK(RemoveTree(dir));
  EXPECT_OK(MakeDirectories(dir));
  return dir;
}

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileLimited(path, 1 << 30);
  EXPECT_OK(bytes.status());
  return bytes.ok() ? *bytes : "";
}

// Calls lathe_test_answer in `lib`.
int Answer(const absl::StatusOr<SharedLibrary>& lib) {
  EXPECT_OK(lib.status());
  if (!lib.ok()) return -1;
  absl::StatusOr<void*> f = lib->Symbol("lathe_test_answer");
  EXPECT_OK(f.status());
  return f.ok() ? reinterpret_cast<int (*)()>(*f)() : -1;
}

// The library links OpenMP (-fopenmp); kept loaded as LoadedGraph keeps it,
// or unloading it with the library leaks its state (LeakSanitizer).
void KeepOpenMp() {
  static const auto* openmp = new absl::StatusOr<SharedLibrary>(
      SharedLibrary::Open("libgomp.so.1", /*keep=*/true));
  EXPECT_OK(openmp->status());
}

// Calls lathe_test_answer in the library at `path`.
int Answer(const std::string& path) {
  KeepOpenMp();
  return Answer(SharedLibrary::Open(path));
}

// Calls lathe_test_answer in the library `built` holds (its image).
int Answer(const BuiltLibrary& built) {
  KeepOpenMp();
  return Answer(SharedLibrary::OpenImage(built.image, built.path));
}

TEST(CompileSharedLibraryTest, TheSecondBuildIsADiskHitThatLoads) {
  DiskCache cache(Dir("cache"));
  const std::string first_dir = Dir("first");
  ASSERT_OK_AND_ASSIGN(BuiltLibrary first,
                       CompileSharedLibrary(kSource, first_dir, &cache));
  EXPECT_EQ(first.cache_hit, "");
  EXPECT_EQ(first.cache_error, "");
  EXPECT_GT(first.seconds, 0);
  EXPECT_EQ(first.path, first_dir + "/kernel.so");
  EXPECT_EQ(Answer(first.path), 42);

  const std::string second_dir = Dir("second");
  ASSERT_OK_AND_ASSIGN(BuiltLibrary second,
                       CompileSharedLibrary(kSource, second_dir, &cache));
  EXPECT_EQ(second.cache_hit, "disk");
  EXPECT_EQ(second.seconds, 0);
  EXPECT_EQ(second.path, second_dir + "/kernel.so");
  EXPECT_EQ(second.source_path, second_dir + "/kernel.cc");
  EXPECT_THAT(second.command, HasSubstr("-o '" + second_dir + "/kernel.so'"));
  EXPECT_EQ(Read(second.source_path), kSource);
  EXPECT_EQ(Read(second.path), Read(first.path));
  EXPECT_EQ(Answer(second.path), 42);
  // The image is the library's bytes, compiled or hit.
  EXPECT_EQ(first.image, Read(first.path));
  EXPECT_EQ(second.image, Read(first.path));
  EXPECT_EQ(Answer(second), 42);

  // Another source is another key.
  const std::string other = absl::StrCat(kSource, "// another\n");
  ASSERT_OK_AND_ASSIGN(BuiltLibrary third,
                       CompileSharedLibrary(other, Dir("third"), &cache));
  EXPECT_EQ(third.cache_hit, "");
  // Without a cache nothing is looked up.
  ASSERT_OK_AND_ASSIGN(BuiltLibrary plain,
                       CompileSharedLibrary(kSource, Dir("plain")));
  EXPECT_EQ(plain.cache_hit, "");
  EXPECT_GT(plain.seconds, 0);
}

TEST(CompileSharedLibraryTest, WhatLoadsIsTheHitVerifiedNotTheFileWritten) {
  DiskCache cache(Dir("verified_cache"));
  ASSERT_OK(CompileSharedLibrary(kSource, Dir("warm"), &cache).status());
  ASSERT_OK_AND_ASSIGN(BuiltLibrary hit,
                       CompileSharedLibrary(kSource, Dir("hit"), &cache));
  ASSERT_EQ(hit.cache_hit, "disk");
  // The written kernel.so swapped for another library after the hit.
  ASSERT_OK_AND_ASSIGN(
      BuiltLibrary other,
      CompileSharedLibrary("extern \"C\" int lathe_test_answer() { return 7; }",
                           Dir("other")));
  ASSERT_OK(WriteFileAtomic(hit.path, other.image));
  EXPECT_EQ(Answer(hit.path), 7);
  EXPECT_EQ(Answer(hit), 42);
}

TEST(CompileSharedLibraryTest, AnEntryWithoutTheSecretsHmacIsNeverLoaded) {
  const std::string dir = Dir("signed_cache");
  // Another library planted under kSource's key, unsigned.
  ASSERT_OK_AND_ASSIGN(
      BuiltLibrary evil,
      CompileSharedLibrary(
          "extern \"C\" int lathe_test_answer() { return 666; }", Dir("evil")));
  ASSERT_OK_AND_ASSIGN(std::string identity, CompilerIdentity("g++"));
  DiskCache unsigned_cache(dir);
  ASSERT_OK(unsigned_cache.Put(CacheKey(kSource, identity, CompilerFlags()),
                               evil.image));
  DiskCache::Options options;
  options.secret = "fleet";
  DiskCache cache(dir, options);
  ::testing::internal::CaptureStderr();
  ASSERT_OK_AND_ASSIGN(BuiltLibrary lib,
                       CompileSharedLibrary(kSource, Dir("built"), &cache));
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(lib.cache_hit, "");  // compiled, not loaded from the cache
  EXPECT_EQ(cache.codec().untrusted(), 1);
  EXPECT_EQ(Answer(lib), 42);
  // Stored signed now: the next build is a hit.
  ASSERT_OK_AND_ASSIGN(BuiltLibrary again,
                       CompileSharedLibrary(kSource, Dir("again"), &cache));
  EXPECT_EQ(again.cache_hit, "disk");
  EXPECT_EQ(Answer(again), 42);
}

TEST(CompileSharedLibraryTest, ACompilerErrorIsNotCached) {
  DiskCache cache(Dir("error_cache"));
  for (int i = 0; i < 2; ++i) {
    EXPECT_THAT(CompileSharedLibrary("int f( {", Dir("error"), &cache).status(),
                StatusIs(absl::StatusCode::kInternal,
                         HasSubstr("the C++ compiler failed on")));
  }
}

TEST(CompileSharedLibraryTest, AFailureToStoreIsNotedNotFatal) {
  DiskCache tiny(Dir("tiny_cache"), 10);
  ASSERT_OK_AND_ASSIGN(BuiltLibrary lib,
                       CompileSharedLibrary(kSource, Dir("tiny"), &tiny));
  EXPECT_EQ(lib.cache_hit, "");
  EXPECT_THAT(lib.cache_error, HasSubstr("over the disk cache's limit of 10"));
  EXPECT_EQ(Answer(lib.path), 42);
}

// A prelude as generated code has one: headers and helpers every source of
// its kind begins with.
constexpr char kPrelude[] =
    "#include <cmath>\n#include <algorithm>\n"
    "static int lathe_twice(int x) { return std::max(2 * x, 0); }\n";
constexpr char kBody[] =
    "extern \"C\" int lathe_test_answer() { return lathe_twice(21); }\n";

// The names in `dir` ending in `suffix`.
std::vector<std::string> Named(const std::string& dir,
                               const std::string& suffix) {
  std::vector<std::string> out;
  for (const std::string& name :
       ListDirectory(dir).value_or(std::vector<std::string>())) {
    if (absl::EndsWith(name, suffix)) out.push_back(name);
  }
  return out;
}

struct stat Stat(const std::string& path) {
  struct stat st = {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(PrecompiledPreludeTest, IsMadeOnceInTheCacheAndReadInPlace) {
  const std::string cache_dir = Dir("prelude_cache");
  DiskCache cache(cache_dir);
  const std::string source = absl::StrCat(kPrelude, kBody);
  const std::string built = Dir("with_prelude");
  ASSERT_OK_AND_ASSIGN(
      BuiltLibrary lib,
      CompileSharedLibrary(source, built, &cache, {}, kPrelude));
  EXPECT_EQ(Answer(lib), 42);
  EXPECT_EQ(Read(lib.source_path), source);  // the whole source, as ever
  // The command that reproduces it is the one-step one.
  EXPECT_THAT(lib.command, HasSubstr("/with_prelude/kernel.cc'"));
  EXPECT_THAT(Named(built, ".cc"), ElementsAre("kernel.cc"));

  // One header and its precompiled form, private, named by one key.
  std::vector<std::string> headers = Named(cache_dir, ".h");
  ASSERT_EQ(headers.size(), 1u);
  const std::string header = cache_dir + "/" + headers[0];
  EXPECT_THAT(Named(cache_dir, ".gch"), ElementsAre(headers[0] + ".gch"));
  EXPECT_EQ(Read(header), kPrelude);
  EXPECT_EQ(Stat(header).st_mode & 0777, 0600u);
  const struct stat made = Stat(header + ".gch");
  EXPECT_EQ(made.st_mode & 0777, 0600u);

  // What the compiler reads is the precompiled form: with the header's
  // text changed under it (lathe_twice triples), a new source still gets
  // the prelude it was made from.
  ASSERT_OK(WriteFileAtomic(
      header,
      "#include <cmath>\n#include <algorithm>\n"
      "static int lathe_twice(int x) { return std::max(3 * x, 0); }\n",
      false, 0600));
  ASSERT_OK_AND_ASSIGN(
      BuiltLibrary from_gch,
      CompileSharedLibrary(absl::StrCat(source, "// another\n"),
                           Dir("from_gch"), &cache, {}, kPrelude));
  EXPECT_EQ(Answer(from_gch), 42);
  ASSERT_OK(WriteFileAtomic(header, kPrelude, false, 0600));

  // Found, not made again, by a later build (another process's, here
  // another call); other flags are another prelude.
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> again,
                       PrecompilePrelude(kPrelude, CompilerFlags(), cache_dir));
  EXPECT_EQ(again, header);
  EXPECT_EQ(Stat(header + ".gch").st_ino, made.st_ino);
  std::vector<std::string> o1 = CompilerFlags();
  absl::c_replace(o1, std::string("-O3"), std::string("-O1"));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> other,
                       PrecompilePrelude(kPrelude, o1, cache_dir));
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(*other, header);
  EXPECT_EQ(Named(cache_dir, ".gch").size(), 2u);
}

TEST(PrecompiledPreludeTest, ItsDirectoryIsPrivateAndNamedAbsolutely) {
  const std::string open = Dir("open_prelude_dir");
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  EXPECT_THAT(PrecompilePrelude(kPrelude, CompilerFlags(), open).status(),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("is writable by its group or others")));
  // A relative directory (LATHE_CACHE_DIR=rel) is resolved here, not where
  // the compiler looks from.
  const std::string rel = Dir("rel_prelude_dir");
  ASSERT_EQ(::chmod(rel.c_str(), 0700), 0);
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(::chdir(TestTmpPath("").c_str()), 0);
  absl::StatusOr<std::optional<std::string>> header =
      PrecompilePrelude(kPrelude, CompilerFlags(), "rel_prelude_dir");
  ASSERT_EQ(::chdir(cwd), 0);
  ASSERT_OK(header.status());
  ASSERT_TRUE(header->has_value());
  EXPECT_THAT(**header, StartsWith(rel + "/"));
}

TEST(PrecompiledPreludeTest, OneNotItsOwnersAloneIsMadeAgain) {
  const std::string dir = Dir("unsafe_prelude");
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> header,
                       PrecompilePrelude(kPrelude, CompilerFlags(), dir));
  ASSERT_TRUE(header.has_value());
  const std::string gch = *header + ".gch";
  const ino_t first = Stat(gch).st_ino;
  // Writable by others: anyone could have put it there.
  ASSERT_EQ(::chmod(gch.c_str(), 0666), 0);
  ASSERT_OK(PrecompilePrelude(kPrelude, CompilerFlags(), dir).status());
  EXPECT_EQ(Stat(gch).st_mode & 0777, 0600u);
  EXPECT_NE(Stat(gch).st_ino, first);
  // A link in its place: replaced by a file, what it named left alone.
  const std::string elsewhere = Dir("elsewhere") + "/x.gch";
  ASSERT_OK(WriteFileAtomic(elsewhere, "not a header", false, 0600));
  ASSERT_OK(RemoveTree(gch));
  ASSERT_EQ(::symlink(elsewhere.c_str(), gch.c_str()), 0);
  ASSERT_OK(PrecompilePrelude(kPrelude, CompilerFlags(), dir).status());
  EXPECT_TRUE(S_ISREG(Stat(gch).st_mode));
  EXPECT_EQ(Read(elsewhere), "not a header");
  // A FIFO in its place is never opened (it would block): made again.
  ASSERT_OK(RemoveTree(gch));
  ASSERT_EQ(::mkfifo(gch.c_str(), 0600), 0);
  ASSERT_OK(PrecompilePrelude(kPrelude, CompilerFlags(), dir).status());
  EXPECT_TRUE(S_ISREG(Stat(gch).st_mode));
  // No temporary file is left beside it.
  EXPECT_THAT(Named(dir, ".gch"), ElementsAre(Named(dir, ".h")[0] + ".gch"));
  EXPECT_EQ(ListDirectory(dir)->size(), 2u);
}

TEST(PrecompiledPreludeTest, ADamagedOneBuildsTheWholeSourceAndIsDropped) {
  const std::string cache_dir = Dir("damaged_prelude_cache");
  DiskCache cache(cache_dir);
  // Made by the first build; this process looks for it once.
  ASSERT_OK(CompileSharedLibrary(absl::StrCat(kPrelude, kBody), Dir("first"),
                                 &cache, {}, kPrelude)
                .status());
  std::vector<std::string> gch = Named(cache_dir, ".gch");
  ASSERT_EQ(gch.size(), 1u);
  const std::string path = cache_dir + "/" + gch[0];
  // Cut short (a crash of the machine after a write that was not synced).
  const std::string bytes = Read(path);
  ASSERT_OK(
      WriteFileAtomic(path, bytes.substr(0, bytes.size() / 2), false, 0600));
  const std::string source =
      absl::StrCat(kPrelude, kBody, "// another source\n");
  ASSERT_OK_AND_ASSIGN(
      BuiltLibrary lib,
      CompileSharedLibrary(source, Dir("damaged"), &cache, {}, kPrelude));
  EXPECT_EQ(Answer(lib), 42);
  EXPECT_THAT(Named(cache_dir, ".gch"), ::testing::IsEmpty());
  // A compiler error is the whole source's, reported as ever.
  EXPECT_THAT(
      CompileSharedLibrary(absl::StrCat(kPrelude, "int f( {"), Dir("broken"),
                           &cache, {}, kPrelude)
          .status(),
      StatusIs(absl::StatusCode::kInternal, HasSubstr("/broken/kernel.cc (")));
}

TEST(PrecompiledPreludeTest, NoneWithoutAPrivateDirectory) {
  const std::string source = absl::StrCat(kPrelude, kBody);
  // A signing cache: a header read in place cannot be checked.
  const std::string signed_dir = Dir("signed_prelude_cache");
  DiskCache::Options options;
  options.secret = "fleet";
  DiskCache signs(signed_dir, options);
  ASSERT_OK_AND_ASSIGN(
      BuiltLibrary lib,
      CompileSharedLibrary(source, Dir("signed_build"), &signs, {}, kPrelude));
  EXPECT_EQ(Answer(lib), 42);
  EXPECT_THAT(Named(signed_dir, ".h"), ::testing::IsEmpty());
  // A source that does not begin with the prelude is built whole.
  const std::string unprefixed = Dir("unprefixed_cache");
  DiskCache cache(unprefixed);
  ASSERT_OK_AND_ASSIGN(lib, CompileSharedLibrary(kSource, Dir("unprefixed"),
                                                 &cache, {}, kPrelude));
  EXPECT_EQ(Answer(lib), 42);
  EXPECT_THAT(Named(unprefixed, ".h"), ::testing::IsEmpty());
}

// Gold links where the compiler can use it, probed by running it: a
// compiler that does not run, or whose -fuse-ld=gold fails, links with its
// default linker.
TEST(CompilerFlagsTest, GoldOnlyWhereTheCompilerLinksWithIt) {
  EXPECT_FALSE(LinksWithGold("/nonexistent/c++"));
  const std::string fake = Dir("fake_cxx") + "/c++";
  ASSERT_OK(
      WriteFileAtomic(fake, "#!/bin/sh\necho GNU gold; exit 1\n", false, 0755));
  EXPECT_FALSE(LinksWithGold(fake));
  const std::string quiet = Dir("quiet_cxx") + "/c++";
  ASSERT_OK(WriteFileAtomic(quiet, "#!/bin/sh\nexit 0\n", false, 0755));
  EXPECT_FALSE(LinksWithGold(quiet));
  // Not a compile flag (the cache key's): a build's linker option.
  EXPECT_FALSE(absl::c_linear_search(CompilerFlags(), "-fuse-ld=gold"));
  ASSERT_OK_AND_ASSIGN(BuiltLibrary lib,
                       CompileSharedLibrary(kSource, Dir("gold")));
  EXPECT_EQ(absl::StrContains(lib.command, " -fuse-ld=gold "),
            LinksWithGold("g++"));
  EXPECT_EQ(Answer(lib), 42);
}

TEST(CompilerIdentityTest, NamesTheCompilerItsVersionAndTheCpu) {
  ASSERT_OK_AND_ASSIGN(std::string identity, CompilerIdentity("g++"));
  EXPECT_THAT(identity, StartsWith("g++\n"));
  EXPECT_THAT(identity, HasSubstr("\nflags"));
  ASSERT_OK_AND_ASSIGN(std::string again, CompilerIdentity("g++"));
  EXPECT_EQ(again, identity);
}

TEST(CompilerIdentityTest, ACompilerThatDoesNotRunIsAnError) {
  ::setenv("LATHE_CXX", "/nonexistent/c++", 1);
  DiskCache cache(Dir("unknown_cache"));
  EXPECT_THAT(
      CompileSharedLibrary(kSource, Dir("unknown"), &cache).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("cannot identify the C++ compiler for the compile "
                         "cache: `/nonexistent/c++ --version` failed: ")));
  ::unsetenv("LATHE_CXX");
}

}  // namespace
}  // namespace lathe::codegen
