// The C++ that RuntimeWrapperPlan::CppSource() prints, compiled (by a
// genrule over runtime_wrapper_cases) and run: on every case it must do
// exactly what RuntimeWrapperPlan::Run does — the same outputs (sizes,
// strides, values, which input's storage each shares) and the same inputs.

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "aot/aot_testing.h"
#include "aot/runtime_wrapper_cases.h"
#include "aot/subclass_wrapper_plan.h"
#include "gtest/gtest.h"
#include "runtime/composite.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe::aot {
namespace {

TEST(RuntimeWrapperCodegenTest, GeneratedSourceDoesWhatThePlanDoes) {
  int checked = 0;
  for (const WrapperCase& c : WrapperCases()) {
    if (absl::EndsWith(c.name, "x1048576")) continue;  // 1 MiB: benchmark only
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(PreparedCase a, Prepare(c));
    ASSERT_OK_AND_ASSIGN(PreparedCase b, Prepare(c));
    std::vector<Tensor> a_original = a.inputs, b_original = b.inputs;
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want,
                         a.aot.plan.Run(absl::MakeSpan(a.inputs), a.fw));
    GeneratedWrapper generated = GeneratedWrapperFor(c.name);
    ASSERT_NE(generated, nullptr);
    std::vector<Tensor> got;
    ASSERT_OK(generated(absl::MakeSpan(b.inputs), b.fw, &got));
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      const Tensor &w = want[k], &o = got[k];
      EXPECT_EQ(o.dtype(), w.dtype()) << "output " << k;
      EXPECT_EQ(o.sizes(), w.sizes()) << "output " << k;
      EXPECT_EQ(o.strides(), w.strides()) << "output " << k;
      EXPECT_EQ(o.storage_offset(), w.storage_offset()) << "output " << k;
      EXPECT_EQ(Values(o), Values(w)) << "output " << k;
      for (size_t i = 0; i < a_original.size(); ++i) {
        EXPECT_EQ(w.storage() == a_original[i].storage(),
                  o.storage() == b_original[i].storage())
            << "output " << k << " / input " << i;
      }
    }
    for (size_t i = 0; i < a.inputs.size(); ++i) {
      EXPECT_EQ(b.inputs[i].ToString(), a.inputs[i].ToString());
      EXPECT_EQ(Values(b.inputs[i]), Values(a.inputs[i]));
      EXPECT_EQ(Values(b_original[i]), Values(a_original[i]));
    }
    ++checked;
  }
  EXPECT_EQ(checked, 14);
}

// An argument list for a subclass case: pairs of 4x4 tensors (5x4 for a
// symbolic size), then two trailing arguments.
std::vector<Operand> SubclassArgs(const SubclassCase& c) {
  std::function<Operand(const CompositeLayout&, int64_t)> make =
      [&](const CompositeLayout& l, int64_t rows) -> Operand {
    if (l.type == nullptr) {
      return Operand::Of(*Tensor::Empty({rows, 4}, DType::kFloat32));
    }
    return *MakePair(make(l.inner[0], rows), make(l.inner[1], rows));
  };
  std::vector<Operand> args;
  for (const CompositeLayout& l : c.arguments) {
    args.push_back(make(l, l.symbolic_sizes.empty() ? 4 : 5));
  }
  args.push_back(Operand::Int(1234));  // seed
  args.push_back(Operand::Of(*Tensor::Empty({}, DType::kInt64)));
  return args;
}

bool SameOperand(const Operand& a, const Operand& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Operand::Kind::kTensor:
      return a.tensor.storage() == b.tensor.storage() &&
             a.tensor.ToString() == b.tensor.ToString();
    case Operand::Kind::kComposite:
      if (a.composite->type != b.composite->type ||
          a.composite->sizes != b.composite->sizes ||
          a.composite->strides != b.composite->strides) {
        return false;
      }
      for (size_t k = 0; k < a.composite->inner.size(); ++k) {
        if (!SameOperand(a.composite->inner[k], b.composite->inner[k])) {
          return false;
        }
      }
      return true;
    case Operand::Kind::kInt:
      return a.i == b.i;
    case Operand::Kind::kFloat:
      return a.f == b.f;
    case Operand::Kind::kBool:
      return a.b == b.b;
    case Operand::Kind::kNone:
      return true;
  }
  return false;
}

TEST(RuntimeWrapperCodegenTest, GeneratedSubclassWrappersDoWhatThePlanDoes) {
  for (const SubclassCase& c : SubclassCases()) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(SubclassWrapperPlan plan,
                         SubclassWrapperPlan::Build(c.arguments, c.results));
    GeneratedSubclass g = GeneratedSubclassFor(c.name);
    ASSERT_NE(g.unwrap, nullptr);
    std::vector<Operand> args = SubclassArgs(c);
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> want, plan.Unwrap(args));
    std::vector<Operand> got;
    ASSERT_OK(g.unwrap(args, &got));
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_TRUE(SameOperand(got[k], want[k])) << "dense argument " << k;
    }
    // Results: dense slots of 4x4 tensors.
    std::vector<Operand> dense;
    for (int k = 0; k < plan.num_dense_results(); ++k) {
      dense.push_back(Operand::Of(*Tensor::Empty({4, 4}, DType::kFloat32)));
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Operand> results, plan.Rewrap(dense));
    std::vector<Operand> generated_results, consumed = dense;
    ASSERT_OK(g.rewrap(absl::MakeSpan(consumed), &generated_results));
    ASSERT_EQ(generated_results.size(), results.size());
    for (size_t k = 0; k < results.size(); ++k) {
      EXPECT_TRUE(SameOperand(generated_results[k], results[k]))
          << "result " << k;
    }
    // Errors: a plain tensor where a pair is expected; too few results.
    std::vector<Operand> wrong = args;
    for (size_t i = 0; i < c.arguments.size(); ++i) {
      if (c.arguments[i].type == nullptr || c.arguments[i].frozen) continue;
      wrong[i] = Operand::Of(*Tensor::Empty({4, 4}, DType::kFloat32));
      absl::Status s = g.unwrap(wrong, &got);
      EXPECT_EQ(s.message(),
                plan.Unwrap(wrong).status().message());  // same words
      EXPECT_FALSE(s.ok());
      break;
    }
    dense.pop_back();
    EXPECT_FALSE(g.rewrap(absl::MakeSpan(dense), &generated_results).ok());
  }
}

TEST(RuntimeWrapperCodegenTest, GeneratedSourceChecksArity) {
  GeneratedWrapper f = GeneratedWrapperFor("input_mutation_simple");
  ASSERT_NE(f, nullptr);
  std::vector<Tensor> in(1), fw(3), out;
  absl::Status s = f(absl::MakeSpan(in), fw, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "runtime wrapper: expected 1 inputs and 2 graph outputs");
}

}  // namespace
}  // namespace lathe::aot
