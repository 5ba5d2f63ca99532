// The host function's text: graph text in, lowered and scheduled, the
// emitted lathe_call (and lathe_guards) out, FileCheck CHECK lines on the
// steps it takes. That the text compiles and computes the interpreter's
// results is cpu_function_test's and tools/cpu_differential_test's.

#include "codegen/cpp/wrapper_emitter.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aot/aot_dispatch.h"
#include "codegen/codegen_testing.h"
#include "codegen/scalar_ops.h"
#include "codegen/scheduler.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "status_macros.h"
#include "symbolic/shape_env.h"
#include "testing/file_check.h"
#include "testing/status_matchers.h"

namespace lathe::codegen {
namespace {

using ::lathe::testing::RunFileCheck;

// `text` lowered, scheduled and wrapped.
absl::StatusOr<WrapperSource> Wrap(absl::string_view text) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  ASSIGN_OR_RETURN(Scheduled s, ScheduleText(text));
  return EmitWrapper(s.lowered, ir::InputSlots(*g));
}

// Inputs are checked as ir::CheckInputs checks them: kind, dtype (f32 is
// 2), rank, then sizes (s0 bound at its first place, checked at the
// second), then strides only where the dimension has two or more elements.
// The symbol the kernels read takes the checked value; the output is made
// from the symbols and put into the caller's value with its own reference.
TEST(WrapperEmitterTest, InputsAreCheckedAndSymbolsBound) {
  ASSERT_OK_AND_ASSIGN(WrapperSource w, Wrap(R"IR(
def forward(self, x: "f32[s0, 4][4, 1]cpu", y: "f32[s0, 4][4, 1]cpu"):
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)IR"));
  EXPECT_FALSE(w.host_checks);
  EXPECT_FALSE(w.has_guards);
  EXPECT_OK(RunFileCheck(w.text, R"(
CHECK:      int lathe_call(
CHECK:      if (num_inputs != 2 || num_outputs != 1) return LATHE_CALL_BAD_INPUTS;
CHECK-NEXT: if (in[0].kind != LATHE_VALUE_TENSOR || in[0].dtype != 2 || in[0].ndim != 2) return LATHE_CALL_BAD_INPUTS;
CHECK-NEXT: int64_t c0 = 0; bool h0 = false;
CHECK-NEXT: { if (!h0) { c0 = in[0].sizes[0]; h0 = true; } else if (c0 != in[0].sizes[0]) return LATHE_CALL_BAD_INPUTS; }
CHECK-NEXT: if (in[0].sizes[1] != 4LL) return LATHE_CALL_BAD_INPUTS;
CHECK-NEXT: if (in[0].sizes[0] >= 2) if (in[0].strides[0] != 4LL) return LATHE_CALL_BAD_INPUTS;
CHECK-NEXT: if (in[0].sizes[1] >= 2) if (in[0].strides[1] != 1LL) return LATHE_CALL_BAD_INPUTS;
CHECK-NEXT: if (in[1].kind != LATHE_VALUE_TENSOR
CHECK-NEXT: { if (!h0) { c0 = in[1].sizes[0]; h0 = true; } else if (c0 != in[1].sizes[0]) return LATHE_CALL_BAD_INPUTS; }
CHECK:      S[0] = h0 ? c0 : in[0].sizes[0];
CHECK:      static const int64_t input_buffers[] = {0, 0, 4, 1, 1, 4};
CHECK:      B[t[0]] = static_cast<char*>(in[t[1]].data) + in[t[1]].storage_offset * t[2];
CHECK:      H.h[2] = rt->alloc(
CHECK-NEXT: k0(B, S, F, rt, &E);
CHECK:      fw[0].kind = LATHE_VALUE_TENSOR; fw[0].dtype = 2; fw[0].ndim = 2;
CHECK-NEXT: fw[0].sizes[0] = S[0]; fw[0].strides[0] = 4;
CHECK-NEXT: fw[0].sizes[1] = 4; fw[0].strides[1] = 1;
CHECK-NEXT: fw[0].storage_offset = 0; fw[0].data = B[2]; fw[0].storage = H.h[2];
CHECK-NEXT: lathe_put(&out[0], &fw[0], rt);
CHECK-NEXT: return 0;
CHECK-NEXT: }
CHECK:      // lathe_call's outputs: their number, then each one's rank.
CHECK-NEXT: extern "C" __attribute__((visibility("default"))) const int64_t lathe_result_ranks[] = {1, 2};
)"));
}

// Data-dependent symbols: bound by the host function between kernels (x.item()
// reads the element and checks it is within int32's range, the slice length
// is computed from it), checked where a runtime assertion stands, and the
// buffer whose size needs them allocated after, its byte count checked for
// overflow.
TEST(WrapperEmitterTest, BindStepsAndAssertionsRunBetweenKernels) {
  ASSERT_OK_AND_ASSIGN(WrapperSource w, Wrap(R"IR(
def forward(self, n: "i64[]", y: "f32[6]"):
    item = torch.ops.aten._local_scalar_dense.default(n)
    le = item <= 3
    _assert_scalar = torch.ops.aten._assert_scalar.default(le, "u0 <= 3")
    slice_1 = torch.ops.aten.slice.Tensor(y, 0, 0, item)
    mul = torch.ops.aten.mul.Tensor(slice_1, 2)
    return (mul,)
)IR"));
  EXPECT_OK(RunFileCheck(w.text, R"(
CHECK:      S[0] = 0;  // bound below
CHECK-NEXT: S[1] = 0;  // bound below
CHECK:      S[0] = (int64_t)(static_cast<const int64_t*>(B[0])[0]);  // k0
CHECK-NEXT: if (S[0] < -2147483648LL || S[0] > 2147483647LL) return 1;
CHECK-NEXT: if (!((S[0] <= 3))) return 2;  // k1
CHECK-NEXT: S[1] = (int64_t)(std::min<int64_t>(6, std::max<int64_t>(0, ((S[0] < 0) ? (6 + S[0]) : S[0]))));  // k2
CHECK-NEXT: { bool ov = false; int64_t n = (int64_t)(std::max<int64_t>({(int64_t)0LL, lathe_cmul(S[1], std::min<int64_t>({(int64_t)1LL, S[1]}), &ov)})); if (ov || __builtin_mul_overflow(n, (int64_t)4, &n)) return LATHE_CALL_NO_MEMORY;
CHECK-SAME: H.h[2] = rt->alloc(
CHECK-NEXT: k3(B, S, F, rt, &E);
)"));
}

// A host check whose message names values reports them before it returns
// its code: the negative size u0 (S[0]) of zeros, and for [u0, u0, u0]
// the element count (the float product the check compares, saturated to
// int64) and each size.
TEST(WrapperEmitterTest, AFailingHostCheckReportsItsValues) {
  ASSERT_OK_AND_ASSIGN(WrapperSource w, Wrap(R"IR(
def forward(self, n: "i64[]"):
    item = torch.ops.aten._local_scalar_dense.default(n)
    zeros = torch.ops.aten.zeros.default([item, item, item], dtype = torch.float32)
    return (zeros,)
)IR"));
  EXPECT_OK(RunFileCheck(w.text, R"(
CHECK:      if (S[0] < -2147483648LL || S[0] > 2147483647LL) return 1;
CHECK:      if (!((0 <= S[0]))) {  // k{{[0-9]+}}
CHECK-NEXT:   const int64_t CV[] = {(int64_t)(S[0])};
CHECK-NEXT:   lathe_report(rt, CV, 1);
CHECK-NEXT:   return 2;
CHECK-NEXT: }
CHECK:      if (!({{.*}})) {  // k{{[0-9]+}}
CHECK-NEXT:   const int64_t CV[] = {lathe_check_i64({{.*}}), (int64_t)(S[0]), (int64_t)(S[0]), (int64_t)(S[0])};
CHECK-NEXT:   lathe_report(rt, CV, 4);
CHECK-NEXT:   return 3;
CHECK-NEXT: }
)"));
}

// A device backend's HostCode: its launches where host memory's calls the
// kernels, and its element copy where a symbol is read from data; the rest
// of the host function (checks, binds, the allocator) is the same text.
class FakeDeviceCode final : public HostCode {
 public:
  std::string RunKernel(const Program& program, int k,
                        const HostCpp&) const override {
    return absl::StrCat("  E = launch_", program.kernels[k].name,
                        "(B, S, F, rt);\n");
  }
  std::string LoadElement(int b, DType dtype,
                          absl::string_view index) const override {
    return absl::StrCat("copy_to_host<", CType(dtype), ">(B[", b, "], ", index,
                        ")");
  }
};

TEST(WrapperEmitterTest, TheDevicePartsAreTheBackends) {
  constexpr char kText[] = R"IR(
def forward(self, n: "i64[]", y: "f32[6]"):
    item = torch.ops.aten._local_scalar_dense.default(n)
    add = torch.ops.aten.add.Tensor(n, 1)
    zeros = torch.ops.aten.zeros.default([item], dtype = torch.float32)
    return (add, zeros)
)IR";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(kText));
  ASSERT_OK_AND_ASSIGN(Scheduled s, ScheduleText(kText));
  const FakeDeviceCode device;
  ASSERT_OK_AND_ASSIGN(
      WrapperSource w,
      EmitWrapper(s.lowered, ir::InputSlots(*g), {.host = &device}));
  EXPECT_OK(RunFileCheck(w.text, R"(
CHECK:      S[0] = (int64_t)(copy_to_host<int64_t>(B[0], 0));
CHECK-NEXT: if (E != 0) return E;
CHECK:      E = launch_k{{[0-9]+}}(B, S, F, rt);
CHECK-NOT:  k{{[0-9]+}}(B, S, F, rt, &E);
)"));
  // Host memory's, the default: the element read in place, a direct call.
  ASSERT_OK_AND_ASSIGN(WrapperSource cpu,
                       EmitWrapper(s.lowered, ir::InputSlots(*g)));
  EXPECT_OK(RunFileCheck(cpu.text, R"(
CHECK:      S[0] = (int64_t)(static_cast<const int64_t*>(B[0])[0]);
CHECK-NOT:  if (E != 0) return E;
CHECK:      k{{[0-9]+}}(B, S, F, rt, &E);
CHECK-NEXT: if (E != 0) return E;
)"));
}

// The memory plan in the host function: each buffer is allocated just
// before the kernel that first writes it, takes over a dead buffer's memory
// where the plan says so, and memory nothing takes is given back after its
// last reader. (The plan itself: scheduler_test's Memory plan tests.)
TEST(WrapperEmitterTest, BuffersFollowTheMemoryPlan) {
  ASSERT_OK_AND_ASSIGN(WrapperSource w, Wrap(R"IR(
def forward(self, x: "f32[4, 8]", w: "f32[8, 8]"):
    mm = torch.ops.aten.mm.default(x, w)
    relu = torch.ops.aten.relu.default(mm)
    mm_1 = torch.ops.aten.mm.default(relu, w)
    relu_1 = torch.ops.aten.relu.default(mm_1)
    mm_2 = torch.ops.aten.mm.default(relu_1, w)
    return (mm_2,)
)IR"));
  EXPECT_OK(RunFileCheck(w.text, R"(
CHECK:      H.h[[[MM:[0-9]+]]] = rt->alloc(
CHECK-NEXT: k0(B, S, F, rt, &E);
CHECK:      H.h[[[RELU:[0-9]+]]] = rt->alloc(
CHECK-NEXT: k1(B, S, F, rt, &E);
CHECK:      H.h[[[MM1:[0-9]+]]] = H.h[[[MM]]]; H.h[[[MM]]] = nullptr; B[[[MM1]]] = B[[[MM]]];
CHECK-NEXT: k2(B, S, F, rt, &E);
CHECK:      H.h[[[RELU1:[0-9]+]]] = H.h[[[RELU]]]; H.h[[[RELU]]] = nullptr;
CHECK-NEXT: k3(B, S, F, rt, &E);
CHECK:      H.h[[[MM2:[0-9]+]]] = H.h[[[MM1]]];
CHECK-NEXT: k4(B, S, F, rt, &E);
CHECK-NEXT: if (E != 0) return E;
CHECK-NEXT: rt->release(H.h[[[RELU1]]]); H.h[[[RELU1]]] = nullptr;
CHECK-NOT:  rt->alloc
CHECK:      fw[0].storage = H.h[[[MM2]]];
)"));
}

// A size given by an expression of symbols is checked once they are bound;
// an expression with a division is left to the host (ir::CheckInputs).
TEST(WrapperEmitterTest, ExpressionsAreCheckedAfterTheSymbols) {
  ASSERT_OK_AND_ASSIGN(WrapperSource w, Wrap(R"IR(
def forward(self, x: "f32[s0][1]cpu", y: "f32[2*s0][1]cpu"):
    sum_1 = torch.ops.aten.sum.default(x)
    sum_2 = torch.ops.aten.sum.default(y)
    add = torch.ops.aten.add.Tensor(sum_1, sum_2)
    return (add,)
)IR"));
  EXPECT_FALSE(w.host_checks);
  EXPECT_OK(RunFileCheck(w.text, R"(
CHECK:      c0 = in[0].sizes[0]
CHECK:      if (h0 && in[1].sizes[0] != (int64_t)({{.*}}2{{ ?}}*{{ ?}}c0{{.*}})) return LATHE_CALL_BAD_INPUTS;
CHECK:      S[0] =
)"));
  ASSERT_OK_AND_ASSIGN(w, Wrap(R"IR(
def forward(self, x: "f32[s0][1]cpu", y: "f32[(s0//2)][1]cpu"):
    sum_1 = torch.ops.aten.sum.default(x)
    sum_2 = torch.ops.aten.sum.default(y)
    add = torch.ops.aten.add.Tensor(sum_1, sum_2)
    return (add,)
)IR"));
  EXPECT_TRUE(w.host_checks);
}

// `text` through AOT dispatch (functionalization, the runtime wrapper
// plan), lowered, scheduled and wrapped with its plan.
absl::StatusOr<WrapperSource> WrapWithPlan(absl::string_view text,
                                           aot::AotOptions options = {}) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*g, env));
  ASSIGN_OR_RETURN(aot::AotGraph aot, aot::AotDispatch(*g, env, options));
  ASSIGN_OR_RETURN(LoweredGraph lowered, Lower(*g, env));
  RETURN_IF_ERROR(Schedule(lowered).status());
  return EmitWrapper(lowered, ir::InputSlots(*g),
                     {.plan = &aot.plan, .subclass = &aot.subclass});
}

// The plan inside lathe_call (AOT scenario 17): b's mul_ stays in the
// graph (its kernel writes b; nothing to copy back), c's t_ is a new value
// of c (as_strided_), and the three outputs are views of the inputs as
// they are after the epilogue (c's unsqueeze over the transposed c).
// lathe_call returns the three outputs, then c's new value.
TEST(WrapperEmitterTest, ThePlanRunsAfterTheKernels) {
  ASSERT_OK_AND_ASSIGN(WrapperSource w, WrapWithPlan(R"IR(
def forward(self, a: "f32[2, 3][3, 1]cpu", b: "f32[2, 3][3, 1]cpu", c: "f32[2, 3][3, 1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(b, 3)
    t_ = torch.ops.aten.t_.default(c)
    view = torch.ops.aten.view.default(a, [-1])
    view_1 = torch.ops.aten.view.default(b, [-1])
    view_2 = torch.ops.aten.unsqueeze.default(c, 0)
    return (view, view_1, view_2)
)IR"));
  ASSERT_TRUE(w.plan_applied) << w.plan_error;
  EXPECT_EQ(w.output_ranks, (std::vector<int>{1, 1, 3, 2}));
  EXPECT_EQ(w.rebound_inputs, (std::vector<int>{2}));
  EXPECT_OK(RunFileCheck(w.text, R"(
CHECK:      if (num_inputs != 3 || num_outputs != 4) return LATHE_CALL_BAD_INPUTS;
CHECK:      // The runtime wrapper plan
CHECK-NOT:  rt->copy
CHECK:      LatheValue [[C:pv[0-9]+]] = in[2]; [[C]].ndim = 2;
CHECK-NEXT: [[C]].sizes[0] = 3; [[C]].strides[0] = 1;
CHECK-NEXT: [[C]].sizes[1] = 2; [[C]].strides[1] = 3;
CHECK:      LatheValue [[A:pv[0-9]+]] = in[0]; [[A]].ndim = 1;
CHECK-NEXT: [[A]].sizes[0] = 6; [[A]].strides[0] = 1;
CHECK:      LatheValue [[B:pv[0-9]+]] = in[1]; [[B]].ndim = 1;
CHECK:      LatheValue [[U:pv[0-9]+]] = [[C]]; [[U]].ndim = 3;
CHECK:      lathe_put(&out[0], &[[A]], rt);
CHECK-NEXT: lathe_put(&out[1], &[[B]], rt);
CHECK-NEXT: lathe_put(&out[2], &[[U]], rt);
CHECK-NEXT: lathe_put(&out[3], &[[C]], rt);
CHECK-NEXT: return 0;
CHECK:      const int64_t lathe_result_ranks[] = {4, 1, 1, 3, 2};
)"));
}

// With the input mutations left to the wrapper (keep_input_mutations
// off), x's mul_ is the graph's first output, copied into x after the
// kernels; the user output is the graph's second.
TEST(WrapperEmitterTest, AMutationLeftToTheWrapperIsCopiedBack) {
  aot::AotOptions options;
  options.mutations.keep_input_mutations = false;
  ASSERT_OK_AND_ASSIGN(WrapperSource w, WrapWithPlan(R"IR(
def forward(self, x: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(x, 2)
    add = torch.ops.aten.add.Tensor(x, 1)
    return (add,)
)IR",
                                                     options));
  ASSERT_TRUE(w.plan_applied) << w.plan_error;
  EXPECT_EQ(w.output_ranks, (std::vector<int>{1}));
  EXPECT_OK(RunFileCheck(w.text, R"(
CHECK:      // The runtime wrapper plan
CHECK-NEXT: if (rt->copy(&in[0], &fw[0]) != 0) return LATHE_CALL_COPY_FAILED;
CHECK-NEXT: lathe_put(&out[0], &fw[1], rt);
CHECK-NEXT: return 0;
)"));
}

// lathe_call_user around lathe_call (AOT scenario 26's kind): x is a pair of
// pairs, checked level by level (type, inner count, then the outer rank at
// the root) and flattened depth first into four dense inputs; lathe_call
// fills four dense results, which become the pair of pairs the caller
// shaped, each level's outer sizes the first inner value's.
TEST(WrapperEmitterTest, TheCompositeWrapperUnwrapsAndRewrapsInC) {
  ASSERT_OK_AND_ASSIGN(WrapperSource w, WrapWithPlan(R"IR(
# lathe: composite x pair(pair, pair)
def forward(self, x: "f32[4][1]cpu"):
    neg = torch.ops.aten.neg.default(x)
    return (neg,)
)IR"));
  ASSERT_TRUE(w.user_entry) << w.user_entry_error;
  EXPECT_OK(RunFileCheck(w.text, R"(
CHECK:      static int lathe_subclass_unwrap(
CHECK:      if (args[0].kind != LATHE_VALUE_COMPOSITE || !lathe_subclass_same(args[0].type, "pair") || args[0].num_inner != 2) return LATHE_CALL_BAD_INPUTS;
CHECK-NEXT: if (args[0].ndim != 1) return LATHE_CALL_BAD_INPUTS;
CHECK-NEXT: if (args[0].inner[0].kind != LATHE_VALUE_COMPOSITE || !lathe_subclass_same(args[0].inner[0].type, "pair") || args[0].inner[0].num_inner != 2) return LATHE_CALL_BAD_INPUTS;
CHECK-NEXT: if (args[0].inner[0].inner[0].kind == LATHE_VALUE_COMPOSITE) return LATHE_CALL_BAD_INPUTS;
CHECK:      dense[0] = args[0].inner[0].inner[0];
CHECK-NEXT: dense[1] = args[0].inner[0].inner[1];
CHECK-NEXT: dense[2] = args[0].inner[1].inner[0];
CHECK-NEXT: dense[3] = args[0].inner[1].inner[1];
CHECK:      static void lathe_subclass_rewrap(LatheValue* dense, LatheValue* results) {
CHECK-NEXT:   lathe_subclass_move(&results[0].inner[0].inner[0], &dense[0]);
CHECK-NEXT:   lathe_subclass_move(&results[0].inner[0].inner[1], &dense[1]);
CHECK-NEXT:   results[0].inner[0].kind = LATHE_VALUE_COMPOSITE; results[0].inner[0].type = "pair";
CHECK:        results[0].kind = LATHE_VALUE_COMPOSITE; results[0].type = "pair";
CHECK:      int lathe_call_user(
CHECK:      if (num_results != 1 || !lathe_subclass_shaped(results, num_results)) return LATHE_CALL_BAD_INPUTS;
CHECK-NEXT: LatheValue d[4];
CHECK-NEXT: int rc = lathe_subclass_unwrap(args, num_args, d, 4);
CHECK:      rc = lathe_call(d, 4, o, 4, rt);
CHECK-NEXT: if (rc != 0) return rc;
CHECK-NEXT: lathe_subclass_rewrap(o, results);
CHECK-NEXT: return 0;
)"));
}

}  // namespace
}  // namespace lathe::codegen
