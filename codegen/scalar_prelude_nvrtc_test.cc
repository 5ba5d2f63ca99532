// The scalar prelude as CUDA: NVRTC compiles every scalar function
// (ScalarFns) for each compute type a kernel may call it with, for sm_80
// and sm_90, on a machine without a GPU; its values are checked on the host
// (scalar_prelude_test) and, through the emulated device, by the CUDA
// backend's tests. Skips where no CUDA toolkit was found.

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/scalar_ops.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/nvrtc.h"
#include "symbolic/parser.h"
#include "symbolic/printer.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

// A kernel that calls every scalar function on each type it takes.
std::string Instantiations() {
  std::vector<std::string> calls;
  int count = 0;
  for (const ScalarFn& fn : ScalarFns()) {
    const std::string name = fn.name;
    if (name == "where" || name == "rand" || name == "randn") continue;
    const bool integer_only = absl::StartsWith(name, "bitwise_") ||
                              name == "lshift" || name == "rshift";
    std::vector<const char*> types;
    if (!integer_only) types = {"float", "double"};
    if (!fn.float_only) {
      types.push_back("int64_t");
      types.push_back("int32_t");
    }
    for (const char* t : types) {
      std::vector<std::string> args(fn.arity, absl::StrCat("(", t, ")v"));
      calls.push_back(absl::StrCat("  sink += (double)lathe_op_", name, "(",
                                   absl::StrJoin(args, ", "), ");"));
      ++count;
    }
  }
  EXPECT_GT(count, 150);
  return absl::StrCat(
      "extern \"C\" __global__ void instantiate(double* out, double v) {\n"
      "  double sink = 0;\n",
      absl::StrJoin(calls, "\n"),
      "\n  sink += lathe_op_where(v > 0, (float)v, (float)-v);\n"
      "  sink += lathe_op_rand((int64_t)1, (int64_t)2, (int64_t)24);\n"
      "  sink += lathe_op_randn((int64_t)1, (int64_t)2);\n"
      "  out[0] = sink;\n}\n");
}

TEST(ScalarPreludeNvrtcTest, EveryFunctionCompilesForSm80AndSm90) {
#ifndef LATHE_HAS_CUDA_TOOLKIT
  GTEST_SKIP() << "no CUDA toolkit";
#endif
  ASSERT_OK_AND_ASSIGN(const Nvrtc* nvrtc, LoadNvrtc());
  const std::string source =
      absl::StrCat(ScalarPrelude(), "\n", Instantiations());
  for (int arch : {80, 90}) {
    ASSERT_OK_AND_ASSIGN(CudaImage image,
                         CompileCuda(*nvrtc, source, "prelude.cu", arch));
    EXPECT_NE(image.ptx.find(".entry instantiate("), std::string::npos);
    // Each function is a device function inlined into the kernel: its
    // math reached the PTX (a call of lathe_op_exp would name it).
    EXPECT_EQ(image.ptx.find("lathe_op_"), std::string::npos);
  }
}

// Index arithmetic as the symbolic printer writes it (symbolic::ToCpp:
// Max and Min of two and more terms, floor division, Python's modulus)
// compiles with NVRTC against the symbolic prelude, as the kernels of
// padding and pooling index.
TEST(ScalarPreludeNvrtcTest, IndexArithmeticCompilesForSm80AndSm90) {
#ifndef LATHE_HAS_CUDA_TOOLKIT
  GTEST_SKIP() << "no CUDA toolkit";
#endif
  ASSERT_OK_AND_ASSIGN(const Nvrtc* nvrtc, LoadNvrtc());
  ASSERT_OK_AND_ASSIGN(
      symbolic::Expr e,
      symbolic::ParseExpr("Max(0, Min(5, 5 - Max(x - 2, 2 - x, s0))) + "
                          "(x // 3) + Mod(x, s0) + Max(s0, 1)"));
  const std::string source = absl::StrCat(
      symbolic::CppPrelude(),
      "\nextern \"C\" __global__ void index(int64_t* out, int64_t x, "
      "int64_t s0) {\n  out[0] = ",
      symbolic::ToCpp(e), ";\n}\n");
  EXPECT_THAT(source, ::testing::HasSubstr("std::max<int64_t>({"));
  for (int arch : {80, 90}) {
    EXPECT_OK(CompileCuda(*nvrtc, source, "index.cu", arch).status()) << source;
  }
}

}  // namespace
}  // namespace lathe::codegen
