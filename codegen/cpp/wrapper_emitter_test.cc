// The host function's text: graph text in, lowered and scheduled, the
// emitted lathe_call (and lathe_guards) out, FileCheck CHECK lines on the
// steps it takes. That the text compiles and computes the interpreter's
// results is cpu_function_test's and tools/cpu_differential_test's.

#include "codegen/cpp/wrapper_emitter.h"

#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen_testing.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "status_macros.h"
#include "tools/testing/file_check.h"
#include "tools/testing/status_matchers.h"

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
// The symbol the kernels read is bound from its source.
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
CHECK:      S[0] = in[0].sizes[0];
CHECK:      B[0] = static_cast<char*>(in[0].data) + in[0].storage_offset * 4;
CHECK:      B[1] = static_cast<char*>(in[1].data) + in[1].storage_offset * 4;
CHECK:      H.h[2] = rt->alloc(
CHECK-NEXT: k0(B, S, F, rt, &E);
CHECK:      out[0].kind = LATHE_VALUE_TENSOR; out[0].dtype = 2; out[0].ndim = 2;
CHECK-NEXT: out[0].sizes[0] = S[0]; out[0].strides[0] = 4;
CHECK-NEXT: out[0].sizes[1] = 4; out[0].strides[1] = 1;
CHECK-NEXT: out[0].storage_offset = 0; out[0].data = B[2]; out[0].storage = rt->retain(H.h[2]);
CHECK-NEXT: return 0;
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
CHECK:      out[0].storage = rt->retain(H.h[[[MM2]]]);
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

}  // namespace
}  // namespace lathe::codegen
