// CompileSharedLibrary with the system compiler and a compile cache: the
// second build of a source is a disk hit that writes the same, loadable
// .so without compiling; the bytes to load are the ones the cache verified
// (a kernel.so swapped after the hit changes nothing); under a secret an
// unsigned entry is compiled over, never loaded; another source is a miss;
// a compiler error is not cached; a failure to store is noted, not fatal;
// a compiler that cannot be identified is an error naming it.

#include "codegen/cpp/cpp_compiler.h"

#include <cstdlib>
#include <string>

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
