// Matrix products: mm, bmm (also their out_dtype forms), mv, addmm,
// baddbmm, computed with Eigen in double precision and rounded to the
// output dtype; and the FFT ops, which need complex dtypes lathe does not
// have (they report that).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Dense"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::ir {
namespace {

using symbolic::Expr;

absl::Status SameDtype(const OpCall& c, const Value& a, const Value& b) {
  if (DTypeOf(a) != DTypeOf(b)) {
    return c.Error(
        absl::StrCat("expected m1 and m2 to have the same dtype, but got: ",
                     ShortName(DTypeOf(a)), " != ", ShortName(DTypeOf(b))));
  }
  return absl::OkStatus();
}

// The [m, n] result of a @ b for 2-d (batch = false) or 3-d operands.
absl::StatusOr<std::vector<Expr>> ProductShape(const OpCall& c, const Value& a,
                                               const Value& b, bool batch) {
  int64_t want = batch ? 3 : 2;
  if (!a.is_tensor() || !b.is_tensor() || RankOf(a) != want ||
      RankOf(b) != want) {
    return c.Error(absl::StrCat(batch ? "batch1" : "self", " must be a ", want,
                                "D tensor"));
  }
  RETURN_IF_ERROR(SameDtype(c, a, b));
  std::vector<Expr> sa = SizesOf(a), sb = SizesOf(b);
  auto shape = [](const std::vector<Expr>& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      absl::StrAppend(&out, i ? "x" : "", symbolic::ToString(s[i]));
    }
    return out;
  };
  size_t k = batch ? 2 : 1;
  ASSIGN_OR_RETURN(bool ok, Decide(c, symbolic::Eq(sa[k], sb[k - 1])));
  if (!ok) {
    return c.Error(absl::StrCat(
        batch ? "Expected size for first two dimensions of batch2 tensor "
              : "mat1 and mat2 shapes cannot be multiplied (",
        shape(sa), " and ", shape(sb), ")"));
  }
  if (batch) {
    ASSIGN_OR_RETURN(bool same, Decide(c, symbolic::Eq(sa[0], sb[0])));
    if (!same) {
      return c.Error("batch1 and batch2 must have the same batch size");
    }
    return std::vector<Expr>{sa[0], sa[1], sb[2]};
  }
  return std::vector<Expr>{sa[0], sb[1]};
}

Eigen::MatrixXd Matrix(const Tensor& t, int64_t batch) {
  int64_t rows = t.sizes()[t.dim() - 2], cols = t.sizes()[t.dim() - 1];
  Eigen::MatrixXd m(rows, cols);
  std::vector<int64_t> i(t.dim(), 0);
  if (t.dim() == 3) i[0] = batch;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      i[t.dim() - 2] = r;
      i[t.dim() - 1] = c;
      m(r, c) = LoadDouble(t, i);
    }
  }
  return m;
}

// a @ b (+ beta * bias), in `out_dtype` (none: the operands'), which may be
// the operands' dtype or float32 for float16/bfloat16 operands; the shapes
// are checked first, as PyTorch's meta checks them.
absl::StatusOr<Value> Product(const OpCall& c, const Value& a, const Value& b,
                              bool batch, const Value* bias, double beta,
                              double alpha,
                              std::optional<DType> out_dtype = std::nullopt) {
  ASSIGN_OR_RETURN(std::vector<Expr> shape, ProductShape(c, a, b, batch));
  const DType in = DTypeOf(a);
  const DType dt = out_dtype.value_or(in);
  if (dt != in && !(dt == DType::kFloat32 &&
                    (in == DType::kFloat16 || in == DType::kBFloat16))) {
    return c.Error(
        "out_dtype only supported for torch.float32 output with "
        "float16/bfloat16 inputs or same as input dtypes");
  }
  if (!a.tensor.defined()) return MetaResult(dt, DeviceOf(a), shape);
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ConcreteSizes(c, shape));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(sizes, dt));
  Tensor bias_view;
  if (bias != nullptr) {
    Tensor t;
    if (bias->is_tensor()) {
      t = bias->tensor;
    } else {
      ASSIGN_OR_RETURN(t, ScalarTensor(*bias, out.dtype()));
    }
    absl::StatusOr<Tensor> v = BroadcastView(t, sizes);
    if (!v.ok()) return c.Error(v.status().message());
    bias_view = *v;
  }
  int64_t batches = batch ? sizes[0] : 1;
  for (int64_t n = 0; n < batches; ++n) {
    Eigen::MatrixXd r = Matrix(a.tensor, n) * Matrix(b.tensor, n);
    for (int64_t i = 0; i < r.rows(); ++i) {
      for (int64_t j = 0; j < r.cols(); ++j) {
        std::vector<int64_t> index =
            batch ? std::vector<int64_t>{n, i, j} : std::vector<int64_t>{i, j};
        double v = alpha * r(i, j);
        if (bias != nullptr) v += beta * LoadDouble(bias_view, index);
        StoreDouble(out, index, v);
      }
    }
  }
  return Value::OfTensor(out);
}

// addmm / baddbmm: beta * self + alpha * (a @ b); beta == 0 ignores self
// (NaNs in it included), as PyTorch does.
absl::StatusOr<Value> AddProduct(const OpCall& c, bool batch) {
  ASSIGN_OR_RETURN(double beta, c.arg("beta").AsDouble());
  ASSIGN_OR_RETURN(double alpha, c.arg("alpha").AsDouble());
  if (!c.arg(1).tensor.defined()) {
    ASSIGN_OR_RETURN(Value meta,
                     Product(c, c.arg(1), c.arg(2), batch, nullptr, 1, 1));
    if (c.arg(0).is_tensor()) {
      ASSIGN_OR_RETURN(
          std::vector<Expr> b,
          BroadcastShapes(c, {SizesOf(c.arg(0)), meta.meta.sizes}));
      if (b.size() != meta.meta.sizes.size()) {
        return c.Error("self must broadcast to the product's shape");
      }
    }
    return meta;
  }
  return Product(c, c.arg(1), c.arg(2), batch, beta == 0 ? nullptr : &c.arg(0),
                 beta, alpha);
}

// mm.dtype / bmm.dtype(self, mat2, out_dtype): the product in out_dtype
// (PyTorch's CUDA kernels; the products are summed in float32 either way,
// so a float32 result skips the rounding to 16 bits).
absl::StatusOr<Value> ProductInDtype(const OpCall& c, bool batch) {
  return Product(c, c.arg(0), c.arg(1), batch, nullptr, 1, 1,
                 c.arg("out_dtype").dtype);
}

// mv(self, vec): [n, m] @ [m] -> [n].
absl::StatusOr<Value> Mv(const OpCall& c) {
  const Value &a = c.arg(0), &v = c.arg(1);
  if (RankOf(a) != 2 || RankOf(v) != 1) {
    return c.Error(absl::StrCat("vector + matrix @ vector expected, got 1, ",
                                RankOf(a), ", ", RankOf(v)));
  }
  std::vector<Expr> sa = SizesOf(a), sv = SizesOf(v);
  ASSIGN_OR_RETURN(bool ok, Decide(c, symbolic::Eq(sa[1], sv[0])));
  if (!ok) {
    return c.Error(absl::StrCat(
        "size mismatch, got input (", symbolic::ToString(sa[0]), "), mat (",
        symbolic::ToString(sa[0]), "x", symbolic::ToString(sa[1]), "), vec (",
        symbolic::ToString(sv[0]), ")"));
  }
  if (DTypeOf(a) != DTypeOf(v)) {
    return c.Error(absl::StrCat(
        "addmv input tensors must have the same dtype, but got ",
        ScalarTypeName(DTypeOf(v)), ", ", ScalarTypeName(DTypeOf(a)), ", and ",
        ScalarTypeName(DTypeOf(v))));
  }
  if (!a.tensor.defined()) return MetaResult(DTypeOf(a), DeviceOf(a), {sa[0]});
  const Tensor &m = a.tensor, &x = v.tensor;
  ASSIGN_OR_RETURN(Tensor out, Tensor::Empty({m.sizes()[0]}, m.dtype()));
  bool ints = IsIntegral(m.dtype(), true);
  for (int64_t i = 0; i < m.sizes()[0]; ++i) {
    double acc = 0;
    uint64_t iacc = 0;  // wrapping, as int64 arithmetic does
    for (int64_t j = 0; j < m.sizes()[1]; ++j) {
      if (ints) {
        iacc += static_cast<uint64_t>(LoadInt(m, {i, j})) *
                static_cast<uint64_t>(LoadInt(x, {j}));
      } else {
        acc += LoadDouble(m, {i, j}) * LoadDouble(x, {j});
      }
    }
    if (ints) {
      StoreInt(out, {i}, static_cast<int64_t>(iacc));
    } else {
      StoreDouble(out, {i}, acc);
    }
  }
  return Value::OfTensor(out);
}

}  // namespace

absl::Status RegisterLinalgOps(OpRegistry& r) {
  // FFTs produce or take complex tensors, and lathe has no complex dtypes:
  // the ops are registered (graphs that use them parse and bind) but their
  // meta function and kernel say so.
  for (const char* schema :
       {"_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) "
        "-> Tensor",
        "_fft_c2r(Tensor self, int[] dim, int normalization, SymInt "
        "last_dim_size) -> Tensor"}) {
    RETURN_IF_ERROR(r.Add(schema, [](const OpCall& c) -> absl::StatusOr<Value> {
      return c.Error("complex dtypes are not supported");
    }));
  }
  auto mm = [](const OpCall& c) {
    return Product(c, c.arg(0), c.arg(1), false, nullptr, 1, 1);
  };
  auto bmm = [](const OpCall& c) {
    return Product(c, c.arg(0), c.arg(1), true, nullptr, 1, 1);
  };
  RETURN_IF_ERROR(r.Add("mm(Tensor self, Tensor mat2) -> Tensor", mm));
  RETURN_IF_ERROR(r.Add("bmm(Tensor self, Tensor mat2) -> Tensor", bmm));
  RETURN_IF_ERROR(r.Add(
      "mm.dtype(Tensor self, Tensor mat2, ScalarType out_dtype) -> Tensor",
      [](const OpCall& c) { return ProductInDtype(c, false); }));
  RETURN_IF_ERROR(r.Add(
      "bmm.dtype(Tensor self, Tensor mat2, ScalarType out_dtype) -> Tensor",
      [](const OpCall& c) { return ProductInDtype(c, true); }));
  RETURN_IF_ERROR(r.Add("mv(Tensor self, Tensor vec) -> Tensor", Mv));
  auto addmm = [](const OpCall& c) { return AddProduct(c, false); };
  RETURN_IF_ERROR(
      r.Add("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
            "Scalar alpha=1) -> Tensor",
            addmm));
  auto baddbmm = [](const OpCall& c) { return AddProduct(c, true); };
  RETURN_IF_ERROR(
      r.Add("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar "
            "beta=1, Scalar alpha=1) -> "
            "Tensor",
            baddbmm));
  return absl::OkStatus();
}

}  // namespace lathe::ir
