#include "codegen/cpp/parallel_loops.h"

#include <string>

#include "gtest/gtest.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"

namespace lathe::codegen {
namespace {

std::string Cpp(symbolic::Expr e) { return symbolic::ToCpp(e); }

TEST(ParallelLoopsTest, ALambdaTakesTheKernelsParametersAndItsOwn) {
  std::string out;
  const std::string close = OpenPooledLambda({.n = "4096",
                                              .grain = 64,
                                              .worth = "w > 32768",
                                              .threads = "lathe_threads(1)",
                                              .captures = "v3",
                                              .params = ", float* lathe_acc5",
                                              .args = ", &acc5"},
                                             "  ", &out);
  EXPECT_EQ(out,
            "  lathe_parallel(rt, 4096, 64, w > 32768, lathe_threads(1), [v3]"
            "(int64_t lathe_lo, int64_t lathe_hi, /*lathe:params*/, float* "
            "lathe_acc5) {\n");
  EXPECT_EQ(close, "  }, /*lathe:args*/, &acc5);\n");
}

TEST(ParallelLoopsTest, OneLoopIsTheChunkWithItsSimdClauses) {
  std::string out, indent = "    ";
  const std::string close =
      OpenFlatLoop({"r0_0"}, {symbolic::Int(100)}, Cpp, "int32_t", true,
                   " reduction(+:acc1)", &indent, &out);
  EXPECT_EQ(out,
            "    #pragma omp simd reduction(+:acc1)\n"
            "    for (int32_t r0_0 = static_cast<int32_t>(lathe_lo); r0_0 < "
            "static_cast<int32_t>(lathe_hi); ++r0_0) {\n");
  EXPECT_EQ(indent, "      ");
  EXPECT_EQ(close, "    }\n");
}

// Three loops of extents 2, 3 and s: the chunk's first indices by division
// (the step of each the product of the extents after it), then a carry
// from the last to the first per iteration.
TEST(ParallelLoopsTest, SeveralLoopsAreFlattenedWithACarry) {
  const symbolic::Expr s = symbolic::Symbol("s0");
  std::string out, indent = "  ";
  const std::string close = OpenFlatLoop(
      {"a", "b", "c"}, {symbolic::Int(2), symbolic::Int(3), s},
      [](symbolic::Expr e) {
        return symbolic::ToCpp(e, {.symbol_name = [](symbolic::Expr) {
                                 return std::string("S[0]");
                               }});
      },
      "int64_t", false, "", &indent, &out);
  EXPECT_EQ(out,
            "  int64_t a = static_cast<int64_t>(lathe_lo / ((3 * S[0])));\n"
            "  int64_t b = static_cast<int64_t>(lathe_lo / (S[0]) % (3));\n"
            "  int64_t c = static_cast<int64_t>(lathe_lo % (S[0]));\n"
            "  for (int64_t lathe_f = lathe_lo; lathe_f < lathe_hi; "
            "++lathe_f) {\n");
  EXPECT_EQ(close,
            "    if (++c == S[0]) { c = 0; if (++b == 3) { b = 0; ++a; } }\n"
            "  }\n");
}

TEST(ParallelLoopsTest, PartialsFoldByTheirOperator) {
  EXPECT_EQ(CombineInto("+", "*p", "acc"), "*p += acc;");
  EXPECT_EQ(CombineInto("*", "*p", "acc"), "*p *= acc;");
  EXPECT_EQ(CombineInto("|", "*p", "nan"), "*p |= nan;");
  EXPECT_EQ(CombineInto("&", "*p", "acc"), "*p &= acc;");
  EXPECT_EQ(CombineInto("max", "*p", "acc"), "*p = acc > *p ? acc : *p;");
  EXPECT_EQ(CombineInto("min", "*p", "acc"), "*p = acc < *p ? acc : *p;");
}

// Each partial is the lambda's by pointer, after the lock; a chunk folds
// its own into them under the lock, a Welford accumulator by merging.
TEST(ParallelLoopsTest, PartialsArePassedAndFoldedUnderTheLock) {
  PooledLambda l{.n = "10"};
  EXPECT_EQ(FoldPartials({}, "  ", &l), "");
  EXPECT_EQ(l.params, "");
  const std::string fold = FoldPartials(
      {{"float", "acc1", "+"}, {"lathe_welford", "wf2", "welford"}}, "  ", &l);
  EXPECT_EQ(l.params,
            ", int* lathe_held, float* lathe_acc1, lathe_welford* lathe_wf2");
  EXPECT_EQ(l.args, ", &lathe_held, &acc1, &wf2");
  EXPECT_EQ(fold,
            "  lathe_lock(lathe_held);\n"
            "  *lathe_acc1 += acc1;\n"
            "  *lathe_wf2 = lathe_welford_merge(*lathe_wf2, wf2);\n"
            "  lathe_unlock(lathe_held);\n");
}

}  // namespace
}  // namespace lathe::codegen
