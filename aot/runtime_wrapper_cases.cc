#include "aot/runtime_wrapper_cases.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aot/aot_testing.h"
#include "ir/interpreter.h"
#include "status_macros.h"

namespace lathe::aot {
namespace {

// n inputs of `numel` floats, each mul_(2)'d, and their sum returned.
WrapperCase Epilogue(int n, int64_t numel) {
  WrapperCase c;
  c.name = absl::StrCat("epilogue_", n, "x", numel * 4);
  std::string params, body, sum;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&params, i ? ", " : "", "a", i, ": \"f32[", numel,
                    "][1]cpu\"");
    absl::StrAppend(&body, "    mul_", i, " = torch.ops.aten.mul_.Tensor(a", i,
                    ", 2)\n");
    c.input_sizes.push_back({numel});
  }
  c.graph = absl::StrCat("def forward(self, ", params, "):\n", body,
                         "    sum_1 = torch.ops.aten.sum.default(a0)\n",
                         "    return (sum_1,)\n");
  return c;
}

}  // namespace

const std::vector<WrapperCase>& WrapperCases() {
  static const auto* cases = new std::vector<WrapperCase>([] {
    std::vector<WrapperCase> v = {
        {"input_mutation_simple",
         R"(# lathe: requires_grad a
def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    mul = torch.ops.aten.mul.Tensor(a, 3)
    return (mul,)
)",
         {{4}}},
        {"input_mutation_is_output",
         R"(# lathe: requires_grad a
def forward(self, a: "f32[4][1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(a, 2)
    return (a,)
)",
         {{4}}},
        {"data_and_metadata_mutation",
         R"(# lathe: requires_grad a
def forward(self, a: "f32[3, 4][4, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    mul_ = torch.ops.aten.mul_.Tensor(transpose_, 2)
    add = torch.ops.aten.add.Tensor(mul_, 1)
    return (add,)
)",
         {{3, 4}}},
        {"set_and_data_mutation",
         R"(def forward(self, a: "f32[3, 3][3, 1]cpu", b: "f32[3, 3][3, 1]cpu"):
    _set_grad_enabled = torch._C._set_grad_enabled(False)
    set_ = torch.ops.aten.set_.source_Tensor(a, b)
    mul_ = torch.ops.aten.mul_.Tensor(b, 2)
    _set_grad_enabled_1 = torch._C._set_grad_enabled(True)
    add = torch.ops.aten.add.Tensor(a, b)
    return (add,)
)",
         {{3, 3}, {3, 3}}},
        {"input_output_view",
         R"(def forward(self, a: "f32[2, 2][2, 1]cpu"):
    view = torch.ops.aten.view.default(a, [-1])
    return (view,)
)",
         {{2, 2}}},
        // A view of the input as another dtype: the wrapper's view keeps
        // the view's dtype (i32 over f32's bits), not the input's.
        {"input_output_view_dtype",
         R"(def forward(self, a: "f32[2, 2][2, 1]cpu"):
    view = torch.ops.aten.view.dtype(a, torch.int32)
    return (view,)
)",
         {{2, 2}}},
        {"input_mutation_and_output_view",
         R"(# lathe: requires_grad a
# lathe: non_leaf a
def forward(self, a: "f32[2, 2][2, 1]cpu"):
    add_ = torch.ops.aten.add_.Tensor(a, 1)
    view = torch.ops.aten.view.default(a, [-1])
    return (view,)
)",
         {{2, 2}}},
        {"views_of_mutated_inputs",
         R"(# lathe: requires_grad b
def forward(self, a: "f32[2, 3][3, 1]cpu", b: "f32[2, 3][3, 1]cpu", c: "f32[2, 3][3, 1]cpu"):
    mul_ = torch.ops.aten.mul_.Tensor(b, 3)
    t_ = torch.ops.aten.t_.default(c)
    view = torch.ops.aten.view.default(a, [-1])
    view_1 = torch.ops.aten.view.default(b, [-1])
    unsqueeze = torch.ops.aten.unsqueeze.default(c, 0)
    return (view, view_1, unsqueeze)
)",
         {{2, 3}, {2, 3}, {2, 3}}},
        {"outputs_alias_intermediate",
         R"(# lathe: requires_grad a
def forward(self, a: "f32[2, 2][2, 1]cpu"):
    mul = torch.ops.aten.mul.Tensor(a, 3)
    view = torch.ops.aten.view.default(mul, [-1])
    view_1 = torch.ops.aten.view.default(mul, [-1])
    return (view, view_1)
)",
         {{2, 2}}},
        {"all_alias_types",
         R"(# lathe: requires_grad a
def forward(self, a: "f32[3, 4][4, 1]cpu"):
    transpose_ = torch.ops.aten.transpose_.default(a, 1, 0)
    mul = torch.ops.aten.mul.Tensor(transpose_, 2)
    squeeze = torch.ops.aten.squeeze.dim(mul, 0)
    transpose = torch.ops.aten.transpose.int(mul, 1, 0)
    unsqueeze = torch.ops.aten.unsqueeze.default(transpose_, 0)
    return (squeeze, transpose, unsqueeze)
)",
         {{3, 4}}},
        {"symbolic_view",
         R"(# lathe: hint s0 5
def forward(self, a: "f32[s0, 4][4, 1]cpu"):
    add_ = torch.ops.aten.add_.Tensor(a, 1)
    view = torch.ops.aten.view.default(a, [-1])
    slice_1 = torch.ops.aten.slice.Tensor(view, 0, 2, 9223372036854775807)
    return (slice_1,)
)",
         {{5, 4}}},
    };
    for (int n : {1, 4, 16}) {
      for (int64_t numel : {int64_t{1024}, int64_t{262144}}) {
        v.push_back(Epilogue(n, numel));
      }
    }
    return v;
  }());
  return *cases;
}

const std::vector<SubclassCase>& SubclassCases() {
  static const auto* cases = new std::vector<SubclassCase>([] {
    auto pair = [](CompositeLayout a = CompositeLayout::Plain(),
                   CompositeLayout b = CompositeLayout::Plain()) {
      return CompositeLayout::Of(FindCompositeType("pair"), {a, b});
    };
    CompositeLayout frozen = pair();
    frozen.frozen = true;
    CompositeLayout dynamic = pair();
    dynamic.rank = 2;
    dynamic.symbolic_sizes = {0};  // [s0, 4][4, 1]
    return std::vector<SubclassCase>{
        {"pair", {pair()}, {pair()}},
        {"nested_pair", {pair(pair(), pair())}, {pair(pair(), pair())}},
        {"mixed",
         {frozen, CompositeLayout::Plain(), dynamic},
         {CompositeLayout::Plain(), pair()}},
    };
  }());
  return *cases;
}

absl::StatusOr<PreparedCase> Compile(const WrapperCase& c) {
  // Every mutation left to the wrapper.
  ASSIGN_OR_RETURN(CompiledText compiled,
                   CompileText(c.graph, /*keep_input_mutations=*/false));
  PreparedCase p;
  p.graph = std::move(compiled.graph);
  p.aot = std::move(compiled.aot);
  return p;
}

absl::StatusOr<PreparedCase> Prepare(const WrapperCase& c) {
  ASSIGN_OR_RETURN(PreparedCase p, Compile(c));
  std::vector<ir::Value> values;
  for (const std::vector<int64_t>& sizes : c.input_sizes) {
    ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(sizes, DType::kFloat32));
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.data<float>()[i] = static_cast<float>(i % 1000 + 1);
    }
    p.inputs.push_back(t);
    values.push_back(ir::Value::OfTensor(t));
  }
  ASSIGN_OR_RETURN(ir::Interpretation r, ir::Interpret(*p.graph, values));
  for (const ir::Value& v : r.outputs) {
    p.fw.push_back(v.is_tensor() ? v.tensor : Tensor());
  }
  return p;
}

}  // namespace lathe::aot
