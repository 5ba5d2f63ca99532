// The random family's lowering rules: rand, randn, randperm and
// native_dropout, drawing the interpreter's numbers (ir/ops_creation.cc):
// each op reserves its draws of the call's stream (Lowerer::ReserveDraws) in
// graph order, and element i in row-major order takes draw first + i (randn:
// first + 2i and the next), a pure function of the seed and the counter, so
// any loop order or thread gives the same values.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "codegen/lower/rule_helpers.h"
#include "codegen/scalar_ops.h"
#include "status_macros.h"
#include "symbolic/expr.h"

namespace lathe::codegen::lower {
namespace {

// The scalar op giving draw `first` + `step` * (row-major position of idx)
// as a double: uniform with `bits` bits, or (bits = 0) normal.
int Draw(KernelBuilder& kb, Expr seed, Expr first, int64_t step,
         const std::vector<Expr>& sizes, const std::vector<Expr>& idx,
         int bits) {
  Expr at = Linear(idx, Contiguous(sizes), symbolic::Int(0));
  int counter = kb.Call(
      "add",
      {kb.Index(first), kb.Index(symbolic::Mul(at, symbolic::Int(step)))},
      DType::kInt64);
  int s = kb.Index(seed);
  if (bits == 0) return kb.Call("randn", {s, counter}, DType::kFloat64);
  return kb.Call("rand", {s, counter, kb.Constant(bits, DType::kInt64)},
                 DType::kFloat64);
}

// rand(size) / randn(size): uniform in [0, 1) / standard normal.
LowerFn RandomFn(bool normal) {
  return [normal](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    Expr numel = symbolic::Int(1);
    for (Expr s : m.sizes) numel = symbolic::Mul(numel, s);
    Expr seed = L.Seed();
    Expr first =
        L.ReserveDraws(normal ? symbolic::Mul(numel, symbolic::Int(2)) : numel);
    int bits = normal ? 0 : SignificandBits(m.dtype);
    TBox t;
    t.dtype = m.dtype;
    t.sizes = m.sizes;
    t.cost = 8;
    DType out = m.dtype;
    std::vector<Expr> sizes = m.sizes;
    t.load = [=](KernelBuilder& kb,
                 const std::vector<Expr>& idx) -> absl::StatusOr<int> {
      return kb.Cast(Draw(kb, seed, first, normal ? 2 : 1, sizes, idx, bits),
                     out);
    };
    return TensorValue(t);
  };
}

// randperm(n): Fisher-Yates over draws first .. first + n - 1, one serial
// routine emitted into the source (no library call).
absl::StatusOr<NodeValue> LowerRandperm(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  Expr n = m.sizes[0];
  Expr seed = L.Seed();
  Expr first = L.ReserveDraws(n);
  int out = L.NewBuffer(m.dtype, n);
  L.EmitExtern("randperm", {out}, {n, seed, first});
  return TensorValue(L.FromBuffer(out, m.dtype, m.sizes, {symbolic::Int(1)},
                                  symbolic::Int(0)));
}

// native_dropout(input, p, train): keep element i (row-major) when draw
// first + i (53 bits) is below 1 - p; output = input * keep * scale with
// scale = 1 / (1 - p) (0 for p = 1) in the computation dtype. Not training:
// the input and an all-true mask, no draws. An empty input is returned
// itself.
absl::StatusOr<NodeValue> LowerNativeDropout(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(auto metas, OutPair(L, c, "(output, mask)"));
  const TensorMeta& mo = *metas.first;
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(std::optional<double> p, NumberArg(c, "p"));
  if (!p.has_value()) return c.Error("p is None");
  bool train = true;
  if (c.Has("train")) {
    ASSIGN_OR_RETURN(train, c.Bool("train"));
  }
  const Node* input = c.NodeAt(0);
  if (input != nullptr && input->meta().kind == ir::ValueMeta::Kind::kTensor &&
      mo.storage == input->meta().tensor.storage) {
    // Empty: (input itself, an empty mask).
    TBox mask;
    mask.dtype = DType::kBool;
    mask.sizes = metas.second->sizes;
    mask.load = [](KernelBuilder& kb,
                   const std::vector<Expr>&) -> absl::StatusOr<int> {
      return kb.Constant(0, DType::kBool);
    };
    return TupleValue({TensorValue(x), TensorValue(mask)});
  }
  TBox ones;
  ones.dtype = DType::kBool;
  ones.sizes = mo.sizes;
  if (!train) {
    ones.load = [](KernelBuilder& kb,
                   const std::vector<Expr>&) -> absl::StatusOr<int> {
      return kb.Constant(1, DType::kBool);
    };
    return TupleValue({TensorValue(CastBox(x, mo.dtype)), TensorValue(ones)});
  }
  const double p1m = 1.0 - *p;
  if (!(p1m >= 0 && p1m <= 1)) {
    return c.Error(
        absl::StrCat("bernoulli_ expects p to be in [0, 1], but got p=", p1m));
  }
  double scale = p1m == 0 ? 0.0 : 1.0 / p1m;
  if (mo.dtype != DType::kFloat64) scale = static_cast<float>(scale);
  Expr numel = symbolic::Int(1);
  for (Expr s : mo.sizes) numel = symbolic::Mul(numel, s);
  Expr seed = L.Seed();
  Expr first = L.ReserveDraws(numel);
  std::vector<Expr> sizes = mo.sizes;
  TBox keep = ones;
  keep.cost = 8;
  keep.load = [=](KernelBuilder& kb,
                  const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    int u = Draw(kb, seed, first, 1, sizes, idx, 53);
    return kb.Call("lt", {u, kb.Constant(p1m, DType::kFloat64)}, DType::kBool);
  };
  TBox out;
  out.dtype = mo.dtype;
  out.sizes = mo.sizes;
  out.cost = x.cost + 10;
  out.reads = x.reads;
  DType compute = ComputeDType(mo.dtype), dtype = mo.dtype;
  out.load = [=](KernelBuilder& kb,
                 const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(int v, x.load(kb, idx));
    ASSIGN_OR_RETURN(int k, keep.load(kb, idx));
    v = kb.Call("mul", {kb.Cast(v, compute), kb.Cast(k, compute)}, compute);
    v = kb.Call("mul", {v, kb.Constant(scale, compute)}, compute);
    return kb.Cast(v, dtype);
  };
  return TupleValue({TensorValue(out), TensorValue(keep)});
}

}  // namespace

void RegisterRandom(LoweringTable& T) {
  T.Add(Op("aten.rand.default"), RandomFn(false));
  T.Add(Op("aten.randn.default"), RandomFn(true));
  T.Add(Op("aten.randperm.default"), LowerRandperm);
  T.Add(Op("aten.native_dropout.default"), LowerNativeDropout);
}

}  // namespace lathe::codegen::lower
