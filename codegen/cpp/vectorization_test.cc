// The assembly the C++ emitter's kernels become, not just their source: the
// fused swish chain x * sigmoid(x) * s + b is compiled with the recorded
// flags, disassembled with objdump, and its kernel must use the machine's
// widest vector registers (zmm with AVX-512, ymm with AVX2) and call
// glibc libmvec's vector expf of that width (_ZGVeN16v_expf /
// _ZGVdN8v_expf) rather than scalar expf. Skipped on a machine without
// AVX2 or without objdump, and in the ASan build (whose kernels are
// instrumented, so not vectorized).

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "codegen/cpp/cpu_function.h"
#include "codegen/cpp/cpu_testing.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "status_macros.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

constexpr char kSwish[] = R"IR(
def forward(self, x: "f32[s0, 256][256, 1]cpu", s: "f32[256][1]cpu", b: "f32[256][1]cpu"):
    sigmoid = torch.ops.aten.sigmoid.default(x)
    mul = torch.ops.aten.mul.Tensor(x, sigmoid)
    mul_1 = torch.ops.aten.mul.Tensor(mul, s)
    add = torch.ops.aten.add.Tensor(mul_1, b)
    return (add,)
)IR";

// The output of `command`, or nullopt when it fails.
std::optional<std::string> Output(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  if (pclose(pipe) != 0) return std::nullopt;
  return out;
}

// The disassembly of `text` compiled (its .so, objdump -d).
absl::StatusOr<std::string> CompiledAssembly(const char* text) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*g, env));
  ASSIGN_OR_RETURN(std::unique_ptr<CpuFunction> f, CompileCpu(*g, env));
  std::optional<std::string> asm_text = Output(
      absl::StrCat("objdump -d --no-show-raw-insn '", f->library().path, "'"));
  if (!asm_text.has_value()) return absl::InternalError("objdump failed");
  return *asm_text;
}

// Why this machine or build cannot check the assembly, or nullopt.
std::optional<std::string> WhyNotChecked() {
#if defined(__SANITIZE_ADDRESS__)
  return "kernels built with -fsanitize=address are instrumented and not "
         "vectorized; the plain run checks this";
#endif
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") && !__builtin_cpu_supports("avx2")) {
    return "no AVX2 on this machine";
  }
  if (std::system("command -v objdump > /dev/null 2>&1") != 0) {
    return "no objdump";
  }
  return std::nullopt;
}

TEST(VectorizationTest, TheSwishKernelUsesTheWidestVectorsAndLibmvec) {
  if (std::optional<std::string> why = WhyNotChecked()) GTEST_SKIP() << *why;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(kSwish));
  symbolic::ShapeEnv env;
  ASSERT_OK(ir::PropagateShapes(*g, env));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuFunction> f, CompileCpu(*g, env));
  ASSERT_EQ(f->stats().kernels, 1);
  std::optional<std::string> asm_text = Output(
      absl::StrCat("objdump -d --no-show-raw-insn '", f->library().path, "'"));
  ASSERT_TRUE(asm_text.has_value());
  // The kernel k0 (a static function, possibly split by OpenMP outlining
  // into k0._omp_fn.N): every vector instruction of the .so is in it.
  const char* reg = avx512 ? "%zmm" : "%ymm";
  const char* expf = avx512 ? "_ZGVeN16v_expf" : "_ZGVdN8v_expf";
  EXPECT_NE(asm_text->find(reg), std::string::npos)
      << "no " << reg << " register in the kernel";
  EXPECT_NE(asm_text->find(expf), std::string::npos)
      << "no call of libmvec's " << expf;
  // Scalar expf is not called from the vectorized loop body.
  EXPECT_EQ(asm_text->find("<expf@plt>"), std::string::npos);
}

// A bf16 kernel vectorizes as an f32 one does: gelu over bf16 as the
// decompose pass writes it (computed in f32, rounded once) calls libmvec's
// vector erff. Its elements are loaded
// and stored as their 16 bits; a load that copied the lathe_bfloat16 struct
// whole kept GCC from vectorizing the loop, which then called scalar erff.
TEST(VectorizationTest, ABf16KernelCallsTheVectorErf) {
  if (std::optional<std::string> why = WhyNotChecked()) GTEST_SKIP() << *why;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  ASSERT_OK_AND_ASSIGN(std::string asm_text, CompiledAssembly(R"IR(
def forward(self, x: "bf16[s0, 256][256, 1]cpu"):
    convert_element_type = torch.ops.prims.convert_element_type.default(x, torch.float32)
    mul = torch.ops.aten.mul.Tensor(convert_element_type, 0.5)
    mul_1 = torch.ops.aten.mul.Tensor(convert_element_type, 0.7071067811865476)
    erf = torch.ops.aten.erf.default(mul_1)
    add = torch.ops.aten.add.Tensor(erf, 1)
    mul_2 = torch.ops.aten.mul.Tensor(mul, add)
    convert_element_type_1 = torch.ops.prims.convert_element_type.default(mul_2, torch.bfloat16)
    return (convert_element_type_1,)
)IR"));
  const char* erff = avx512 ? "_ZGVeN16v_erff" : "_ZGVdN8v_erff";
  EXPECT_NE(asm_text.find(erff), std::string::npos)
      << "no call of libmvec's " << erff;
  EXPECT_EQ(asm_text.find("<erff@plt>"), std::string::npos);
}

// A Welford reduction (var_mean over rows) runs its block passes as vector
// loops in float: the shifted values subtracted (vsubps) and summed (vaddps
// or an FMA) in the widest registers.
TEST(VectorizationTest, TheWelfordBlockPassesAreVectorLoops) {
  if (std::optional<std::string> why = WhyNotChecked()) GTEST_SKIP() << *why;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  ASSERT_OK_AND_ASSIGN(std::string asm_text, CompiledAssembly(R"IR(
def forward(self, x: "f32[s0, 1024][1024, 1]cpu"):
    vm = torch.ops.aten.var_mean.correction(x, [1], correction = 0)
    getitem = vm[0]
    getitem_1 = vm[1];  vm = None
    return (getitem, getitem_1)
)IR"));
  const std::string reg = avx512 ? "%zmm" : "%ymm";
  bool shifted = false, summed = false;
  for (absl::string_view line : absl::StrSplit(asm_text, '\n')) {
    if (!absl::StrContains(line, reg)) continue;
    shifted = shifted || absl::StrContains(line, "vsubps");
    summed = summed || absl::StrContains(line, "vaddps") ||
             absl::StrContains(line, "vfmadd");
  }
  EXPECT_TRUE(shifted) << "no vsubps on " << reg;
  EXPECT_TRUE(summed) << "no packed-float add on " << reg;
}

// A loop that loads bool and float elements together vectorizes: a causal
// mask's fill before a row max (the attention softmax's first loop) takes
// its maxima with vmaxps in the widest registers. GCC 12 vectorized no such
// loop while the mask was loaded as bool (not as its byte).
TEST(VectorizationTest, ALoopReadingABoolMaskIsAVectorLoop) {
  if (std::optional<std::string> why = WhyNotChecked()) GTEST_SKIP() << *why;
  const bool avx512 = __builtin_cpu_supports("avx512f");
  ASSERT_OK_AND_ASSIGN(std::string asm_text, CompiledAssembly(R"IR(
def forward(self, x: "f32[s0, 256][256, 1]cpu", m: "b8[s0, 256][256, 1]cpu"):
    masked_fill = torch.ops.aten.masked_fill.Scalar(x, m, -inf)
    amax = torch.ops.aten.amax.default(masked_fill, [-1], True)
    return (amax,)
)IR"));
  const std::string reg = avx512 ? "%zmm" : "%ymm";
  bool max = false;
  for (absl::string_view line : absl::StrSplit(asm_text, '\n')) {
    max = max ||
          (absl::StrContains(line, "vmaxps") && absl::StrContains(line, reg));
  }
  EXPECT_TRUE(max) << "no vmaxps on " << reg;
}

// A large f32 output (2^22 elements) is written with streaming stores
// (vmovntps), not ordinary ones.
TEST(VectorizationTest, LargeOutputsUseStreamingStores) {
  if (std::optional<std::string> why = WhyNotChecked()) GTEST_SKIP() << *why;
  ASSERT_OK_AND_ASSIGN(std::string asm_text, CompiledAssembly(R"IR(
def forward(self, x: "f32[2048, 2048][2048, 1]cpu"):
    sigmoid = torch.ops.aten.sigmoid.default(x)
    mul = torch.ops.aten.mul.Tensor(x, sigmoid)
    return (mul,)
)IR"));
  EXPECT_NE(asm_text.find("vmovntps"), std::string::npos)
      << "no streaming store in the kernel";
}

}  // namespace
}  // namespace lathe::codegen
