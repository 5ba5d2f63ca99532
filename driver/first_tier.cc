#include "driver/first_tier.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "driver/first_tier_loops.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/value.h"
#include "runtime/convolution.h"
#include "runtime/kernel_runtime.h"
#include "runtime/tensor.h"
#include "status_macros.h"

namespace lathe {
namespace {

using Result = std::optional<absl::StatusOr<ir::Value>>;

// Whether `v` is an f32 or bf16 host tensor of rank `rank` with elements.
bool Takes(const ir::Value& v, int64_t rank) {
  return v.is_tensor() && v.tensor.defined() &&
         (v.tensor.dtype() == DType::kFloat32 ||
          v.tensor.dtype() == DType::kBFloat16) &&
         v.tensor.device().is_cpu() && v.tensor.dim() == rank &&
         v.tensor.numel() > 0;
}

// a @ b (rank 2), or per batch (rank 3), in f32 into a new contiguous
// tensor: f32 as the compiled code's sgemm does but by oneDNN's matmul
// primitives (kernel_runtime.h: SgemmByPrimitives; sgemm's kernels, made
// at its first product, would cost a process's first call about 21 ms),
// bf16 operands by the routine the compiled code calls (bgemm, f32 sums);
// std::nullopt for operands the reference must see (another dtype, mixed
// dtypes, sizes that do not match, none).
std::optional<absl::StatusOr<Tensor>> F32Product(const ir::Value& a,
                                                 const ir::Value& b,
                                                 bool batch) {
  const int64_t rank = batch ? 3 : 2;
  if (!Takes(a, rank) || !Takes(b, rank) ||
      a.tensor.dtype() != b.tensor.dtype()) {
    return std::nullopt;
  }
  const Tensor& x = a.tensor;
  const Tensor& y = b.tensor;
  const int64_t k = x.sizes()[rank - 1];
  if (y.sizes()[rank - 2] != k || (batch && x.sizes()[0] != y.sizes()[0])) {
    return std::nullopt;
  }
  const int64_t m = x.sizes()[rank - 2], n = y.sizes()[rank - 1];
  const int64_t batches = batch ? x.sizes()[0] : 1;
  std::vector<int64_t> sizes = {m, n};
  if (batch) sizes.insert(sizes.begin(), batches);
  // The product writes every element (its beta is 0).
  absl::StatusOr<Tensor> out = Tensor::UninitializedStrided(
      sizes, ContiguousStrides(sizes), DType::kFloat32);
  if (!out.ok()) return out.status();
  // Element strides: batch (0 for 2-d operands), row, column.
  auto strides = [rank, batch](const Tensor& t) {
    return std::vector<int64_t>{batch ? t.strides()[0] : 0,
                                t.strides()[rank - 2], t.strides()[rank - 1]};
  };
  const std::vector<int64_t> sx = strides(x), sy = strides(y);
  if (x.dtype() == DType::kFloat32) {
    SgemmByPrimitives(batches, m, n, k, x.data<float>(), sx[0], sx[1], sx[2],
                      y.data<float>(), sy[0], sy[1], sy[2], out->data<float>(),
                      m * n, n, 1);
  } else {
    KernelRuntime()->bgemm(batches, m, n, k, x.data_ptr(), sx[0], sx[1], sx[2],
                           y.data_ptr(), sy[0], sy[1], sy[2],
                           out->data<float>(), m * n, n, 1);
  }
  return out;
}

// alpha * product + beta * bias (bias: null, or a view of the product's
// sizes), the sum in double and rounded once into `dtype`, as the
// reference rounds its double products.
absl::StatusOr<ir::Value> Epilogue(const Tensor& product, const Tensor* bias,
                                   double alpha, double beta, DType dtype) {
  if (bias == nullptr && alpha == 1 && dtype == DType::kFloat32) {
    return ir::Value::OfTensor(product);
  }
  ASSIGN_OR_RETURN(Tensor out,
                   Tensor::UninitializedStrided(
                       product.sizes(), ContiguousStrides(product.sizes()),
                       dtype));  // every element written below
  const ir::ElementAccess p(product), o(out);
  std::optional<ir::ElementAccess> in;
  std::vector<const Tensor*> tensors = {&product, &out};
  if (bias != nullptr) {
    in.emplace(*bias);
    tensors.push_back(bias);
  }
  const int64_t step = bias != nullptr ? bias->strides().back() : 0;
  ir::ForEachRow(product.sizes(), tensors,
                 [&](absl::Span<const int64_t> starts, int64_t len) {
                   for (int64_t j = 0; j < len; ++j) {
                     double v = alpha * p.LoadDouble(starts[0] + j);
                     if (in) v += beta * in->LoadDouble(starts[2] + j * step);
                     o.StoreDouble(starts[1] + j, v);
                   }
                 });
  return ir::Value::OfTensor(std::move(out));
}

// mm and bmm.
Result Product(const ir::OpCall& c, bool batch) {
  std::optional<absl::StatusOr<Tensor>> p =
      F32Product(c.arg(0), c.arg(1), batch);
  if (!p.has_value()) return std::nullopt;
  if (!p->ok()) return p->status();
  return Epilogue(**p, nullptr, 1, 0, c.arg(0).tensor.dtype());
}

// mm.dtype and bmm.dtype: as mm and bmm in the operands' dtype, or their
// f32 sums unrounded for an f32 out_dtype; another the reference refuses.
Result ProductInDtype(const ir::OpCall& c, bool batch) {
  const ir::Value& a = c.arg(0);
  if (!a.is_tensor() || !a.tensor.defined()) return std::nullopt;
  const DType out = c.arg("out_dtype").dtype;
  if (out == a.tensor.dtype()) return Product(c, batch);
  if (out != DType::kFloat32) return std::nullopt;
  std::optional<absl::StatusOr<Tensor>> p = F32Product(a, c.arg(1), batch);
  if (!p.has_value()) return std::nullopt;
  if (!p->ok()) return p->status();
  return ir::Value::OfTensor(**p);
}

// addmm: beta * self + alpha * (m1 @ m2); beta == 0 ignores self (NaNs
// included), as the reference does.
Result AddMm(const ir::OpCall& c) {
  absl::StatusOr<double> beta = c.arg("beta").AsDouble();
  absl::StatusOr<double> alpha = c.arg("alpha").AsDouble();
  const ir::Value& self = c.arg(0);
  if (!beta.ok() || !alpha.ok() || !self.is_tensor() ||
      !self.tensor.defined() || !c.arg(1).is_tensor() ||
      self.tensor.dtype() != c.arg(1).tensor.dtype()) {
    return std::nullopt;
  }
  std::optional<absl::StatusOr<Tensor>> p =
      F32Product(c.arg(1), c.arg(2), /*batch=*/false);
  if (!p.has_value()) return std::nullopt;
  if (!p->ok()) return p->status();
  absl::StatusOr<Tensor> bias = ir::BroadcastView(self.tensor, (*p)->sizes());
  if (!bias.ok()) return std::nullopt;  // the reference names the shapes
  return Epilogue(**p, *beta == 0 ? nullptr : &*bias, *alpha, *beta,
                  self.tensor.dtype());
}

// convolution (not transposed) of f32 operands with 1 to 3 spatial dims, by
// the routine the compiled code calls (Sconv: oneDNN, its products summed
// in f32), into the layout the reference gives; then the bias, added in
// double and rounded once.
Result Convolution(const ir::OpCall& c) {
  const ir::Value& x = c.arg(0);
  const ir::Value& w = c.arg(1);
  const ir::Value& bias = c.arg(2);
  const int64_t rank = x.is_tensor() ? x.tensor.dim() : 0;
  absl::StatusOr<bool> transposed = c.arg("transposed").AsBool();
  if (rank < 3 || rank > 5 || !Takes(x, rank) || !Takes(w, rank) ||
      x.tensor.dtype() != DType::kFloat32 ||
      w.tensor.dtype() != DType::kFloat32 || !transposed.ok() || *transposed ||
      !(bias.is_none() ||
        (Takes(bias, 1) && bias.tensor.dtype() == DType::kFloat32))) {
    return std::nullopt;
  }
  absl::StatusOr<std::vector<int64_t>> stride = c.arg("stride").AsIntList();
  absl::StatusOr<std::vector<int64_t>> padding = c.arg("padding").AsIntList();
  absl::StatusOr<std::vector<int64_t>> dilation = c.arg("dilation").AsIntList();
  absl::StatusOr<int64_t> groups = c.arg("groups").AsInt();
  const size_t s = static_cast<size_t>(rank - 2);
  if (!stride.ok() || !padding.ok() || !dilation.ok() || !groups.ok() ||
      stride->size() != s || padding->size() != s || dilation->size() != s) {
    return std::nullopt;
  }
  // The result as the reference lays it out (the reference reports the
  // meta's errors).
  absl::StatusOr<ir::Value> meta = ir::ResultMetaOf(c);
  if (!meta.ok()) return std::nullopt;
  std::optional<Tensor> out = FirstTierResult(c, *meta, DType::kFloat32);
  if (!out) return std::nullopt;
  const std::vector<int64_t>& sizes = out->sizes();
  // The geometry (runtime/convolution.h), each operand at offset 0 of the
  // pointer passed.
  const Tensor& xt = x.tensor;
  const Tensor& wt = w.tensor;
  std::vector<int64_t> g = {static_cast<int64_t>(s), *groups, xt.sizes()[0],
                            xt.sizes()[1], wt.sizes()[0]};
  for (size_t d = 0; d < s; ++d) g.push_back(xt.sizes()[2 + d]);
  for (size_t d = 0; d < s; ++d) g.push_back(wt.sizes()[2 + d]);
  for (size_t d = 0; d < s; ++d) g.push_back(sizes[2 + d]);
  for (const auto* v : {&*stride, &*padding, &*dilation}) {
    g.insert(g.end(), v->begin(), v->end());
  }
  for (const Tensor* t : {&xt, &wt, static_cast<const Tensor*>(&*out)}) {
    g.push_back(0);
    g.insert(g.end(), t->strides().begin(), t->strides().end());
  }
  g.push_back(0);  // flags: weights as given, the direct algorithm
  Sconv(g.data(), xt.data<float>(), wt.data<float>(), out->data<float>());
  if (bias.is_none()) return ir::Value::OfTensor(*std::move(out));
  // The bias as a [O, 1, ...] view broadcast over the result.
  std::vector<int64_t> bias_sizes(s + 1, 1), bias_strides(s + 1, 0);
  bias_sizes[0] = bias.tensor.sizes()[0];
  bias_strides[0] = bias.tensor.strides()[0];
  absl::StatusOr<Tensor> column = bias.tensor.AsStrided(
      bias_sizes, bias_strides, bias.tensor.storage_offset());
  if (!column.ok()) return column.status();
  absl::StatusOr<Tensor> b = ir::BroadcastView(*column, sizes);
  if (!b.ok()) return b.status();
  const float* pb = static_cast<const float*>(b->storage().data());
  float* po = static_cast<float*>(out->storage().data());
  const int64_t sb = b->strides().back(), so = out->strides().back();
  std::vector<const Tensor*> tensors = {&*b, &*out};
  ir::ForEachRow(sizes, tensors,
                 [&](absl::Span<const int64_t> starts, int64_t n) {
                   for (int64_t j = 0; j < n; ++j) {
                     float& o = po[starts[1] + j * so];
                     o = static_cast<float>(static_cast<double>(o) +
                                            pb[starts[0] + j * sb]);
                   }
                 });
  return ir::Value::OfTensor(*std::move(out));
}

}  // namespace

const ir::KernelOverrides& FirstTierKernels() {
  static const auto* kernels = [] {
    auto* k = new ir::KernelOverrides{
        {"aten.mm.default",
         [](const ir::OpCall& c) { return Product(c, /*batch=*/false); }},
        {"aten.bmm.default",
         [](const ir::OpCall& c) { return Product(c, /*batch=*/true); }},
        {"aten.mm.dtype",
         [](const ir::OpCall& c) {
           return ProductInDtype(c, /*batch=*/false);
         }},
        {"aten.bmm.dtype",
         [](const ir::OpCall& c) { return ProductInDtype(c, /*batch=*/true); }},
        {"aten.addmm.default", &AddMm},
        {"aten.convolution.default", &Convolution},
    };
    AddFirstTierLoops(*k);
    return k;
  }();
  return *kernels;
}

}  // namespace lathe
