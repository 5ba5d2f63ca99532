// The C++ that RuntimeWrapperPlan::CppSource() prints, compiled (by a
// genrule over runtime_wrapper_cases) and run: on every case it must do
// exactly what RuntimeWrapperPlan::Run does — the same outputs (sizes,
// strides, values, which input's storage each shares) and the same inputs.

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "aot/runtime_wrapper_cases.h"
#include "gtest/gtest.h"
#include "runtime/tensor.h"

namespace lathe::aot {
namespace {

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> j) {
    v.push_back(t.GetDouble(j));
  });
  return v;
}

TEST(RuntimeWrapperCodegenTest, GeneratedSourceDoesWhatThePlanDoes) {
  int checked = 0;
  for (const WrapperCase& c : WrapperCases()) {
    if (absl::EndsWith(c.name, "x1048576")) continue;  // 1 MiB: benchmark only
    SCOPED_TRACE(c.name);
    absl::StatusOr<PreparedCase> a = Prepare(c), b = Prepare(c);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    std::vector<Tensor> a_original = a->inputs, b_original = b->inputs;
    absl::StatusOr<std::vector<Tensor>> want =
        a->aot.plan.Run(absl::MakeSpan(a->inputs), a->fw);
    ASSERT_TRUE(want.ok()) << want.status();
    GeneratedWrapper generated = GeneratedWrapperFor(c.name);
    ASSERT_NE(generated, nullptr);
    std::vector<Tensor> got;
    absl::Status s = generated(absl::MakeSpan(b->inputs), b->fw, &got);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(got.size(), want->size());
    for (size_t k = 0; k < got.size(); ++k) {
      const Tensor &w = (*want)[k], &o = got[k];
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
    for (size_t i = 0; i < a->inputs.size(); ++i) {
      EXPECT_EQ(b->inputs[i].ToString(), a->inputs[i].ToString());
      EXPECT_EQ(Values(b->inputs[i]), Values(a->inputs[i]));
      EXPECT_EQ(Values(b_original[i]), Values(a_original[i]));
    }
    ++checked;
  }
  EXPECT_EQ(checked, 13);
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
