#include "ir/ops_util.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/tensor.h"

namespace lathe::ir {
namespace {

// Rows of elements load and store as the element at a time does: every
// dtype's conversion (rounding, overflow, NaN), contiguous, strided and
// broadcast (a step of 0).
TEST(ElementAccessTest, RowsConvertAsElementsDo) {
  const std::vector<double> values = {0.0,
                                      -0.0,
                                      1.0 / 3,
                                      -2.5,
                                      1e-40,
                                      65504.0,
                                      65520.0,
                                      1e39,
                                      -1e300,
                                      3.5e9,
                                      std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN()};
  const int64_t n = static_cast<int64_t>(values.size());
  for (DType dtype : AllDTypes()) {
    SCOPED_TRACE(static_cast<int>(dtype));
    // Every other element of a [2n] tensor: rows stepped by 2.
    absl::StatusOr<Tensor> rows = Tensor::Empty({2 * n}, dtype);
    absl::StatusOr<Tensor> elements = Tensor::Empty({2 * n}, dtype);
    ASSERT_TRUE(rows.ok() && elements.ok());
    const ElementAccess r(*rows), e(*elements);
    if (IsIntegral(dtype, /*include_bool=*/true)) {
      // Integer stores of doubles are PyTorch's casts of in-range values.
      std::vector<double> in = {0, 1, 7, 100, 3, 0, 1, 2, 9, 4, 5, 6};
      r.StoreDoubles(1, 2, n, in.data());
      for (int64_t j = 0; j < n; ++j) e.StoreDouble(1 + 2 * j, in[j]);
    } else {
      r.StoreDoubles(1, 2, n, values.data());
      for (int64_t j = 0; j < n; ++j) e.StoreDouble(1 + 2 * j, values[j]);
    }
    ASSERT_EQ(std::memcmp(rows->data_ptr(), elements->data_ptr(),
                          2 * n * ItemSize(dtype)),
              0);
    std::vector<double> loaded(n);
    r.LoadDoubles(1, 2, n, loaded.data());
    for (int64_t j = 0; j < n; ++j) {
      const double want = e.LoadDouble(1 + 2 * j);
      EXPECT_TRUE(loaded[j] == want ||
                  (std::isnan(want) && std::isnan(loaded[j])))
          << j << ": " << loaded[j] << " vs " << want;
    }
    // Contiguous, and one element broadcast along the row.
    std::vector<double> all(2 * n), same(5);
    r.LoadDoubles(0, 1, 2 * n, all.data());
    for (int64_t j = 0; j < 2 * n; ++j) {
      const double want = e.LoadDouble(j);
      EXPECT_TRUE(all[j] == want || (std::isnan(want) && std::isnan(all[j])));
    }
    r.LoadDoubles(3, 0, 5, same.data());
    for (double v : same) EXPECT_EQ(v, e.LoadDouble(3));
    // Backwards (a negative step), and an empty run that touches nothing.
    std::vector<double> back(n);
    r.LoadDoubles(2 * n - 1, -2, n, back.data());
    for (int64_t j = 0; j < n; ++j) {
      const double want = e.LoadDouble(2 * n - 1 - 2 * j);
      EXPECT_TRUE(back[j] == want || (std::isnan(want) && std::isnan(back[j])));
    }
    r.LoadDoubles(0, 1, 0, nullptr);
    r.StoreDoubles(0, 1, 0, nullptr);
    // A contiguous store, over what the strided one left.
    r.StoreDoubles(0, 1, 2 * n, all.data());
    for (int64_t j = 0; j < 2 * n; ++j) e.StoreDouble(j, all[j]);
    EXPECT_EQ(std::memcmp(rows->data_ptr(), elements->data_ptr(),
                          2 * n * ItemSize(dtype)),
              0);
  }
}

// An op whose one function is its meta and its kernel (convolution) gives
// its result's metadata, computing nothing; an add's broadcast is checked.
TEST(ResultMetaOfTest, GivesTheResultsMetadataAndTheMetasErrors) {
  const OpDef* conv = OpRegistry::Global().Find("aten.convolution.default");
  ASSERT_NE(conv, nullptr);
  auto ints = [](std::vector<int64_t> v) {
    std::vector<Value> l;
    for (int64_t i : v) l.push_back(Value::Int(i));
    return Value::List(l);
  };
  Tensor x = Tensor::Empty({2, 3, 8, 8}, DType::kFloat32).value();
  Tensor w = Tensor::Empty({5, 3, 3, 3}, DType::kFloat32).value();
  OpCall call(*conv,
              {Value::OfTensor(x), Value::OfTensor(w), Value::None(),
               ints({1, 1}), ints({0, 0}), ints({1, 1}), Value::Bool(false),
               ints({0, 0}), Value::Int(1)},
              nullptr);
  absl::StatusOr<Value> meta = ResultMetaOf(call);
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_FALSE(meta->tensor.defined());  // nothing computed
  EXPECT_EQ(meta->meta.ToAnnotation(), "f32[2, 5, 6, 6][180, 36, 6, 1]cpu");
  const OpDef* add = OpRegistry::Global().Find("aten.add.Tensor");
  ASSERT_NE(add, nullptr);
  Tensor y = Tensor::Empty({4}, DType::kFloat32).value();
  OpCall bad(*add, {Value::OfTensor(x), Value::OfTensor(y), Value::Int(1)},
             nullptr);
  EXPECT_FALSE(ResultMetaOf(bad).ok());
  // A list of tensors (cat's Tensor[]) is metadata too.
  const OpDef* cat = OpRegistry::Global().Find("aten.cat.default");
  ASSERT_NE(cat, nullptr);
  OpCall joined(
      *cat,
      {Value::List({Value::OfTensor(y), Value::OfTensor(y)}), Value::Int(0)},
      nullptr);
  absl::StatusOr<Value> both = ResultMetaOf(joined);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_FALSE(both->tensor.defined());
  EXPECT_EQ(both->meta.ToAnnotation(), "f32[8][1]cpu");
}

}  // namespace
}  // namespace lathe::ir
