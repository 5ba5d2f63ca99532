// Libraries loaded from the bytes in hand (SharedLibrary::OpenImage): the
// symbols of a compiled graph (testdata/add_graph.so), its bytes copied
// and sealed (changing the caller's buffer, or the file it came from,
// changes nothing), each copy its own library, no descriptor left behind;
// and CheckElfImage's refusal of everything that is not a whole shared
// object, with the message that says why.

#include "runtime/shared_library.h"

#include <dirent.h>
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/file_io.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kLibrary[] = "runtime/testdata/add_graph.so";

std::string Image() {
  absl::StatusOr<std::string> s = ReadFileLimited(kLibrary, 1 << 26);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : "";
}

// The number of this process's open file descriptors.
int OpenDescriptors() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (d != nullptr && ::readdir(d) != nullptr) ++n;
  if (d != nullptr) ::closedir(d);
  return n;
}

TEST(SharedLibraryTest, OpensAnImageAndFindsItsSymbols) {
  std::string image = Image();
  ASSERT_OK_AND_ASSIGN(SharedLibrary lib,
                       SharedLibrary::OpenImage(image, "dir/kernel.so"));
  EXPECT_EQ(lib.path(), "dir/kernel.so");
  ASSERT_OK_AND_ASSIGN(void* call, lib.Symbol("lathe_call_user"));
  EXPECT_NE(call, nullptr);
  EXPECT_THAT(lib.Symbol("no_such_symbol"),
              StatusIs(absl::StatusCode::kNotFound,
                       "dir/kernel.so has no symbol 'no_such_symbol'"));
  // The bytes were copied: the caller's buffer is its own again.
  std::memset(image.data(), 0, image.size());
  ASSERT_OK_AND_ASSIGN(void* again, lib.Symbol("lathe_call_user"));
  EXPECT_EQ(again, call);
  // A data symbol with its size: add_graph.cc's {1, 1}, two int64s.
  ASSERT_OK_AND_ASSIGN(absl::string_view ranks,
                       lib.DataSymbol("lathe_result_ranks"));
  ASSERT_EQ(ranks.size(), 16u);
  int64_t values[2];
  std::memcpy(values, ranks.data(), sizeof(values));
  EXPECT_EQ(values[0], 1);
  EXPECT_EQ(values[1], 1);
  EXPECT_THAT(lib.DataSymbol("no_such_symbol"),
              StatusIs(absl::StatusCode::kNotFound,
                       "dir/kernel.so has no symbol 'no_such_symbol'"));
}

TEST(SharedLibraryTest, EachImageIsItsOwnLibraryAndLeavesNoDescriptor) {
  const std::string image = Image();
  const int before = OpenDescriptors();
  for (int i = 0; i < 50; ++i) {
    ASSERT_OK_AND_ASSIGN(SharedLibrary a, SharedLibrary::OpenImage(image, "a"));
    ASSERT_OK_AND_ASSIGN(SharedLibrary b, SharedLibrary::OpenImage(image, "b"));
    ASSERT_OK_AND_ASSIGN(void* fa, a.Symbol("lathe_call_user"));
    ASSERT_OK_AND_ASSIGN(void* fb, b.Symbol("lathe_call_user"));
    EXPECT_NE(fa, fb);  // two loaded copies, not one shared by name
    // A copy of a handle keeps the library (and its memfd) alive.
    SharedLibrary copy = a;
    a = SharedLibrary();
    EXPECT_OK(copy.Symbol("lathe_call_user").status());
  }
  EXPECT_EQ(OpenDescriptors(), before);
}

TEST(SharedLibraryTest, AnImageThatIsNotAWholeSharedObjectIsNeverLoaded) {
  const std::string image = Image();
  auto refused = [](const std::string& what) {
    return StatusIs(
        absl::StatusCode::kInvalidArgument,
        HasSubstr("k.so is not a loadable shared library: " + what));
  };
  EXPECT_THAT(SharedLibrary::OpenImage("", "k.so"),
              refused("shorter than an ELF header (0 bytes)"));
  EXPECT_THAT(SharedLibrary::OpenImage(std::string(4096, 'x'), "k.so"),
              refused("no ELF magic number"));
  auto edited = [&](size_t offset, const void* value, size_t size) {
    std::string copy = image;
    std::memcpy(copy.data() + offset, value, size);
    return copy;
  };
  const unsigned char class32 = ELFCLASS32;
  EXPECT_THAT(CheckElfImage(edited(EI_CLASS, &class32, 1), "k.so"),
              refused("not a 64-bit little-endian ELF file"));
  const uint16_t exec = ET_EXEC;
  EXPECT_THAT(
      CheckElfImage(edited(offsetof(Elf64_Ehdr, e_type), &exec, 2), "k.so"),
      refused("not a shared object (ET_DYN)"));
  const uint16_t arm = EM_ARM;
  EXPECT_THAT(
      CheckElfImage(edited(offsetof(Elf64_Ehdr, e_machine), &arm, 2), "k.so"),
      refused("built for another machine"));
  const uint64_t far = uint64_t{1} << 40;
  EXPECT_THAT(
      CheckElfImage(edited(offsetof(Elf64_Ehdr, e_phoff), &far, 8), "k.so"),
      refused("its program headers lie past its end (truncated?)"));
  // Cut anywhere past the headers: a segment, or at least the section
  // headers at the end, lies past the end.
  for (size_t keep : {image.size() / 4, image.size() / 2}) {
    EXPECT_THAT(SharedLibrary::OpenImage(image.substr(0, keep), "k.so"),
                refused("segment "))
        << keep;
  }
  EXPECT_THAT(
      SharedLibrary::OpenImage(image.substr(0, image.size() - 1), "k.so"),
      refused("its section headers lie past its end (truncated?)"));
  EXPECT_OK(CheckElfImage(image, "k.so"));
}

}  // namespace
}  // namespace lathe
