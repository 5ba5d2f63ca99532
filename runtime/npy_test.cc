#include "runtime/npy.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

// A fixture in runtime/testdata.
std::string TestData(const std::string& name) {
  return lathe::testing::RunfilePath(absl::StrCat("runtime/testdata/", name));
}

// Fixtures written by NumPy (testdata/make_npy_fixtures.py): the 2x3 pattern
// base = [[0, 1, 2], [3, 4, 5]] as base*3 - 4 (signed/float) or base*40 (u8).
TEST(NpyTest, ReadsEveryDTypeInCAndFortranOrder) {
  for (const char* name :
       {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8"}) {
    for (const char* order : {"c", "f"}) {
      std::string file = absl::StrCat(name, "_", order, ".npy");
      ASSERT_OK_AND_ASSIGN(Tensor t, ReadNpy(TestData(file)));
      EXPECT_EQ(ShortName(t.dtype()), name);
      EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 3})) << file;
      std::vector<int64_t> want_strides = order[0] == 'c'
                                              ? std::vector<int64_t>{3, 1}
                                              : std::vector<int64_t>{1, 2};
      EXPECT_EQ(t.strides(), want_strides);
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t j = 0; j < 3; ++j) {
          double base = i * 3 + j;
          double want = name[0] == 'u' ? base * 40 : base * 3 - 4;
          EXPECT_EQ(t.GetDouble({i, j}), want)
              << file << " at " << i << "," << j;
        }
      }
    }
  }
  Tensor b = *ReadNpy(TestData("b8_c.npy"));
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_EQ(b.GetDouble({0, 1}), 1.0);
  EXPECT_EQ(b.GetDouble({1, 1}), 0.0);
}

TEST(NpyTest, ScalarsEmptyVersionTwoAndHalfValues) {
  Tensor s = *ReadNpy(TestData("f64_scalar.npy"));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.GetDouble({}), 2.5);
  EXPECT_EQ(ReadNpy(TestData("i64_scalar.npy"))->GetDouble({}), -7.0);
  Tensor e = *ReadNpy(TestData("f32_empty.npy"));
  EXPECT_EQ(e.sizes(), (std::vector<int64_t>{0, 3}));
  Tensor v2 = *ReadNpy(TestData("f32_v2.npy"));
  EXPECT_EQ(v2.GetDouble({1}), -2.0);
  Tensor h = *ReadNpy(TestData("f16_values.npy"));
  EXPECT_EQ(h.GetDouble({0}), 0.0999755859375);  // f16(0.1)
  EXPECT_EQ(h.GetDouble({1}), 65504.0);
  EXPECT_EQ(h.GetDouble({2}), 1.1920928955078125e-07);  // a subnormal
}

TEST(NpyTest, WriteThenReadRoundTripsEveryDType) {
  for (DType d : AllDTypes()) {
    Tensor t = *Tensor::Empty({2, 3}, d);
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      t.SetDouble(i, d == DType::kBool ? (i[1] % 2) : (i[0] * 3 + i[1]) - 2);
    });
    std::string path =
        lathe::testing::TestTmpPath(absl::StrCat("rt_", ShortName(d), ".npy"));
    ASSERT_OK(WriteNpy(path, t));
    Tensor back = *ReadNpy(path);
    EXPECT_EQ(back.dtype(), d);
    EXPECT_EQ(back.sizes(), t.sizes());
    ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
      EXPECT_EQ(back.GetDouble(i), t.GetDouble(i)) << ShortName(d);
    });
  }
}

TEST(NpyTest, WritesFortranOrderForFortranTensorsAndCopiesOthers) {
  Tensor a = *Tensor::Empty({3, 2}, DType::kFloat32);
  ForEachIndex(a.sizes(), [&](absl::Span<const int64_t> i) {
    a.SetDouble(i, i[0] * 10 + i[1]);
  });
  Tensor t = *a.AsStrided({2, 3}, {1, 2}, 0);  // a.t(): Fortran-contiguous
  std::string bytes = *EncodeNpy(t);
  EXPECT_THAT(bytes, HasSubstr("'fortran_order': True"));
  EXPECT_EQ(bytes.size() % 64, 24u % 64);  // 64-byte header + 6*4 data
  Tensor back = *ParseNpy(bytes);
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    EXPECT_EQ(back.GetDouble(i), t.GetDouble(i));
  });
  Tensor strided = *a.AsStrided({2}, {4}, 1);  // not contiguous either way
  Tensor s = *ParseNpy(*EncodeNpy(strided));
  EXPECT_EQ(s.GetDouble({0}), 1.0);
  EXPECT_EQ(s.GetDouble({1}), 21.0);
}

std::string Header(absl::string_view dict, int pad_to = 64) {
  std::string h = absl::StrCat(std::string("\x93NUMPY\x01\x00", 8), "  ", dict);
  while ((h.size() + 1) % pad_to != 0) h += ' ';
  h += '\n';
  size_t len = h.size() - 10;
  h[8] = static_cast<char>(len & 0xff);
  h[9] = static_cast<char>(len >> 8);
  return h;
}

TEST(NpyTest, MalformedFilesGiveOneClearLineWithTheByte) {
  std::string good =
      Header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
  struct Case {
    std::string bytes;
    std::string message;
  } cases[] = {
      {"", "byte 0: file of 0 bytes is too short"},
      {"hello world!", "byte 0: not a .npy file"},
      {std::string("\x93NUMPY\x09\x00\x10\x00", 10) + "xxxxxx",
       "byte 6: unsupported .npy version 9.0"},
      {std::string("\x93NUMPY\x01\x00\xff\x7f", 10) + "{}",
       "byte 8: header length 32767 runs past the end"},
      {Header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"),
       "data has 0 bytes but shape (2) of <f4 needs 8"},
      {good + std::string(9, '\0'),
       "data has 9 bytes but shape (2) of <f4 needs 8"},
      {Header("{'descr': '<c8', 'fortran_order': False, 'shape': (), }") +
           std::string(8, '\0'),
       "byte 20: unsupported dtype '<c8'"},
      {Header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }") +
           std::string(4, '\0'),
       "byte 20: big-endian data ('>f4') is not supported"},
      {Header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }"),
       "byte 44: expected True or False"},
      {Header("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }"),
       "byte 61: shape dimension -3 is negative"},
      {Header("{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }"),
       "byte 63: expected ',' or ')' in the shape"},
      {Header("{'descr': '<f4', 'fortran_order': False}"),
       "header lacks 'shape'"},
      {Header("{'descr': '<f4', 'colour': 1, 'fortran_order': False, 'shape': "
              "(), }"),
       "byte 27: unexpected header key 'colour'"},
      {Header("{'descr': '<f4', 'fortran_order': False, 'shape': "
              "(99999999999999999999,), }"),
       "shape dimension is too large"},
      {Header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, "
              "4294967296), }") +
           std::string(8, '\0'),
       "needs more than 18446744073709551615 bytes"},
      {Header("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }") +
           std::string("\x01\x07", 2),
       "byte 129: bool value 7 is not 0 or 1"},
      {Header("{'descr': '<f4, 'fortran_order': False, 'shape': (), }"),
       "byte 27: expected '}', got 'f'"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseNpy(c.bytes), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr(c.message)))
        << c.message;
  }
  // Fixtures NumPy wrote that lathe refuses.
  EXPECT_THAT(std::string(ReadNpy(TestData("c64.npy")).status().message()),
              HasSubstr("c64.npy: byte 20: unsupported dtype '<c8'"));
  EXPECT_THAT(
      std::string(ReadNpy(TestData("f32_bigendian.npy")).status().message()),
      HasSubstr("big-endian"));
  EXPECT_THAT(std::string(ReadNpy(lathe::testing::TestTmpPath("missing.npy"))
                              .status()
                              .message()),
              HasSubstr("missing.npy: cannot open"));
}

TEST(NpyTest, FailedWritesLeaveNothingBehind) {
  Tensor t = *Tensor::Empty({2}, DType::kFloat32);
  std::string path = lathe::testing::TestTmpPath("no/such/dir/out.npy");
  EXPECT_THAT(WriteNpy(path, t),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("out.npy: cannot create a temporary file")));
  EXPECT_FALSE(std::ifstream(path).good());
  EXPECT_FALSE(EncodeNpy(Tensor()).ok());
}

TEST(NpyTest, ReadsAreBounded) {
  // A symlink to /dev/zero (or any endless input) is refused at its first
  // bytes, without reading on.
  absl::StatusOr<Tensor> z = ReadNpy("/dev/zero");
  EXPECT_EQ(z.status().message(),
            "/dev/zero: byte 0: not a .npy file (missing the \\x93NUMPY "
            "magic)");
  std::string link = lathe::testing::TestTmpPath("zero.npy");
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink("/dev/zero", link.c_str()), 0);
  EXPECT_THAT(std::string(ReadNpy(link).status().message()),
              HasSubstr("zero.npy: byte 0: not a .npy file"));
  // The header is read first: data the limit cannot hold is refused before
  // any of it is read.
  std::string path = lathe::testing::TestTmpPath("bounded.npy");
  ASSERT_OK(WriteNpy(path, *Tensor::Empty({64}, DType::kFloat64)));
  EXPECT_OK(ReadNpy(path));
  EXPECT_EQ(ReadNpy(path, 100).status().message(),
            absl::StrCat(path,
                         ": shape (64) of <f8 needs 512 bytes, over the "
                         "limit of 100 bytes"));
  std::string huge = lathe::testing::TestTmpPath("huge.npy");
  {
    std::ofstream f(huge, std::ios::binary);
    f << Header(
        "{'descr': '<f4', 'fortran_order': False, 'shape': "
        "(1000000000000,), }");
  }
  EXPECT_THAT(ReadNpy(huge), StatusIs(absl::StatusCode::kResourceExhausted,
                                      HasSubstr("needs 4000000000000 bytes")));
}

// A valid header followed by endless data (a pipe whose writer never stops)
// is read up to the header's size and one byte more, then refused.
TEST(NpyTest, EndlessDataAfterAValidHeaderIsRefusedAtTheHeadersSize) {
  std::signal(SIGPIPE, SIG_IGN);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string header =
      Header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
  std::atomic<int64_t> written{0};
  std::thread writer([&] {
    std::string chunk = header;
    while (true) {
      ssize_t n = ::write(fds[1], chunk.data(), chunk.size());
      if (n <= 0) break;
      written += n;
      chunk.assign(4096, '\0');
    }
    ::close(fds[1]);
  });
  absl::StatusOr<Tensor> t = ReadNpy(absl::StrCat("/proc/self/fd/", fds[0]));
  ::close(fds[0]);
  writer.join();
  EXPECT_THAT(t, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("data has more than 8 bytes but shape (2) "
                                    "of <f4 needs 8 bytes")));
  // The writer stopped when the reader closed: a pipe's buffer, not more.
  EXPECT_LT(written.load(), 1 << 20);
}

}  // namespace
}  // namespace lathe
