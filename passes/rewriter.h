// -----------------------------------------------------------------------------
// File: rewriter.h
// -----------------------------------------------------------------------------
//
// What the decompose pass's rewrite rules share (passes/decompose.cc, the
// forward ops; passes/decompose_backward.cc, the backward ops): a Rewriter
// for one call being decomposed, which reads its arguments by schema name
// and inserts the new nodes before it (undone by Rollback when a rule
// gives up), argument shorthands, and the few node builders several rules
// use. A rule is a DecomposeFn; each file lists its rules in a table of
// Decompositions.
//
// Example (a rule: silu_backward as decompositions.py writes it):
//
//   absl::StatusOr<Outputs> SiluBackward(Rewriter& r) {
//     Node* g = r.Tensor("grad_output");
//     ASSIGN_OR_RETURN(Node* s, r.Unary("aten.sigmoid.default",
//                                       r.Tensor("self")));
//     ...
//     return Outputs{out};
//   }

#ifndef LATHE_PASSES_REWRITER_H_
#define LATHE_PASSES_REWRITER_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "check.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::passes::decomp {

using ir::Arg;
using ir::Node;
using ir::TensorMeta;
using symbolic::Expr;

// A decomposition's results, one per result of the op; empty when the call
// is left alone.
using Outputs = std::vector<Node*>;

// Argument shorthands: a node, an int, a float, a list of ints.
inline Arg A(Node* n) { return Arg::Of(n); }
inline Arg I(int64_t v) { return Arg::Int(v); }
inline Arg F(double v) { return Arg::Float(v); }
inline Arg IntList(const std::vector<int64_t>& v) {
  std::vector<Arg> items;
  for (int64_t x : v) items.push_back(Arg::Int(x));
  return Arg::List(std::move(items));
}

// A tensor node's meta.
inline const TensorMeta& TM(const Node* n) { return n->meta().tensor; }

// Whether `n` is a tensor (not null, not a scalar or a list).
inline bool IsTensor(const Node* n) {
  return n != nullptr && n->meta().kind == ir::ValueMeta::Kind::kTensor;
}

// Whether `e` is a literal integer (no symbol).
inline bool IsConstant(Expr e) {
  return e.kind() == symbolic::ExprKind::kInteger;
}

// The dtype PyTorch computes in (utils.get_computation_dtype): float32 for
// the 16-bit floats.
inline DType OpMath(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16 ? DType::kFloat32 : d;
}

// A literal number argument (not a symbol).
inline bool IsNumber(const Arg& a) {
  return a.kind == Arg::Kind::kInt || a.kind == Arg::Kind::kFloat ||
         a.kind == Arg::Kind::kBool;
}
inline double NumberOf(const Arg& a) {
  if (a.kind == Arg::Kind::kInt) return static_cast<double>(a.i);
  if (a.kind == Arg::Kind::kBool) return a.b ? 1 : 0;
  return a.f;
}

// The argument a schema default stands for.
inline Arg DefaultArg(const ir::DefaultValue& d) {
  using K = ir::DefaultValue::Kind;
  switch (d.kind) {
    case K::kNone:
      return Arg::None();
    case K::kBool:
      return Arg::Bool(d.bool_value);
    case K::kInt:
      return Arg::Int(d.int_value);
    case K::kFloat:
      return Arg::Float(d.float_value);
    case K::kString:
    case K::kName:
      return Arg::String(d.string_value);
    case K::kList: {
      std::vector<int64_t> v;
      for (double x : d.list_values) v.push_back(static_cast<int64_t>(x));
      return IntList(v);
    }
  }
  return Arg::None();
}

// Every dim of a tensor of `rank`.
inline std::vector<int64_t> AllDims(int64_t rank) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  return dims;
}

// Rewriter
//
// One decomposition of one call: reads its arguments by schema name
// (defaults filled in) and creates the new nodes before it, through
// Graph::InsertCall, remembering them so that a decomposition that gives up
// leaves the graph as it was (Rollback).
class Rewriter {
 public:
  Rewriter(ir::Graph& graph, Node* node, symbolic::ShapeEnv& env)
      : graph_(graph), node_(node), env_(env) {}

  Node* node() const { return node_; }
  const std::vector<Node*>& created() const { return created_; }
  // The ShapeEnv the graph's metas are in.
  symbolic::ShapeEnv& env() const { return env_; }

  // ---- Arguments.

  // The argument called `name` as written, or its default.
  Arg Get(absl::string_view name) const {
    const ir::OpSchema& schema = node_->op()->schema;
    int i = schema.ArgumentIndex(name);
    LATHE_CHECK(i >= 0) << node_->target() << " has no argument " << name;
    if (!schema.arguments[i].kwarg_only &&
        i < static_cast<int>(node_->args().size())) {
      return node_->args()[i];
    }
    for (const auto& [k, a] : node_->kwargs()) {
      if (k == name) return a;
    }
    const auto& d = schema.arguments[i].default_value;
    return d.has_value() ? DefaultArg(*d) : Arg::None();
  }
  // A tensor argument's node; null for None.
  Node* Tensor(absl::string_view name) const {
    Arg a = Get(name);
    return a.kind == Arg::Kind::kNode ? a.node : nullptr;
  }
  // A literal number argument; nullopt for None or a symbol.
  std::optional<double> Number(absl::string_view name) const {
    Arg a = Get(name);
    if (!IsNumber(a)) return std::nullopt;
    return NumberOf(a);
  }
  std::optional<int64_t> Int(absl::string_view name) const {
    Arg a = Get(name);
    if (a.kind == Arg::Kind::kInt) return a.i;
    return std::nullopt;
  }
  std::optional<bool> Bool(absl::string_view name) const {
    Arg a = Get(name);
    if (a.kind == Arg::Kind::kBool) return a.b;
    return std::nullopt;
  }
  // Reduction dims of a tensor of `rank`: wrapped and sorted; None or []
  // is every dim. nullopt unless they are literal ints.
  std::optional<std::vector<int64_t>> Dims(absl::string_view name,
                                           int64_t rank) const {
    Arg a = Get(name);
    std::vector<int64_t> dims;
    if (a.kind == Arg::Kind::kInt) {
      dims.push_back(a.i);
    } else if (a.kind == Arg::Kind::kList) {
      for (const Arg& e : a.list) {
        if (e.kind != Arg::Kind::kInt) return std::nullopt;
        dims.push_back(e.i);
      }
    } else if (a.kind != Arg::Kind::kNone) {
      return std::nullopt;
    }
    if (rank == 0) return std::vector<int64_t>{};
    if (dims.empty()) return AllDims(rank);
    for (int64_t& d : dims) {
      if (d < -rank || d >= rank) return std::nullopt;
      if (d < 0) d += rank;
    }
    std::sort(dims.begin(), dims.end());
    if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) {
      return std::nullopt;
    }
    return dims;
  }

  // Whether `e` (a size) is provably positive.
  bool Positive(Expr e) const {
    if (IsConstant(e)) return e.int_value() > 0;
    return env_.StaticallyKnownTrue(symbolic::Gt(e, symbolic::Int(0)));
  }

  // An int argument's value: a literal, or a SymInt the env knows.
  std::optional<int64_t> KnownInt(const Arg& a) const {
    if (a.kind == Arg::Kind::kInt) return a.i;
    if (a.kind != Arg::Kind::kNode ||
        a.node->meta().kind != ir::ValueMeta::Kind::kSym) {
      return std::nullopt;
    }
    Expr e = env_.Simplify(a.node->meta().sym);
    if (!IsConstant(e)) return std::nullopt;
    return e.int_value();
  }

  // ---- New nodes.

  // A call of `target` before the node being decomposed.
  absl::StatusOr<Node*> Call(
      std::string target, std::vector<Arg> args,
      std::vector<std::pair<std::string, Arg>> kwargs = {}) {
    ASSIGN_OR_RETURN(
        Node * n, graph_.InsertCall(node_, std::move(target), std::move(args),
                                    std::move(kwargs)));
    created_.push_back(n);
    return n;
  }
  absl::StatusOr<Node*> Unary(std::string target, Node* x) {
    return Call(std::move(target), {A(x)});
  }
  absl::StatusOr<Node*> Binary(std::string target, Node* a, Arg b) {
    return Call(std::move(target), {A(a), std::move(b)});
  }

  // `x` as `dtype` (x itself when it is): prims.convert_element_type.
  absl::StatusOr<Node*> To(Node* x, DType dtype) {
    if (TM(x).dtype == dtype) return x;
    return Call("prims.convert_element_type.default",
                {A(x), Arg::OfDType(dtype)});
  }

  // `x` contiguous (x.contiguous()): a clone when it is not provably.
  absl::StatusOr<Node*> Contiguous(Node* x) {
    if (TM(x).IsContiguous()) return x;
    return Call("aten.clone.default", {A(x)},
                {{"memory_format", Arg::MemoryFormat("contiguous_format")}});
  }

  // A factory call (arange, full, zeros, ...) making a strided `dtype`
  // tensor on `device`.
  absl::StatusOr<Node*> Factory(std::string target, std::vector<Arg> args,
                                DType dtype, const Device& device) {
    return Call(std::move(target), std::move(args),
                {{"dtype", Arg::OfDType(dtype)},
                 {"layout", Arg::Layout("strided")},
                 {"device", Arg::OfDevice(device)},
                 {"pin_memory", Arg::Bool(false)}});
  }

  // A 0-d tensor holding `v`.
  absl::StatusOr<Node*> ScalarTensor(Arg v, DType dtype, const Device& device) {
    return Call("aten.scalar_tensor.default", {std::move(v)},
                {{"dtype", Arg::OfDType(dtype)},
                 {"layout", Arg::Layout("strided")},
                 {"device", Arg::OfDevice(device)}});
  }

  // A size of `x` as an argument: the int, or a sym_size node.
  absl::StatusOr<Arg> Size(Node* x, int64_t d) {
    Expr e = TM(x).sizes[d];
    if (IsConstant(e)) return I(e.int_value());
    ASSIGN_OR_RETURN(Node * s, Call("aten.sym_size.int", {A(x), I(d)}));
    return A(s);
  }

  // All sizes of `x` as arguments.
  absl::StatusOr<std::vector<Arg>> Sizes(Node* x) {
    std::vector<Arg> out;
    for (int64_t d = 0; d < TM(x).dim(); ++d) {
      ASSIGN_OR_RETURN(Arg a, Size(x, d));
      out.push_back(std::move(a));
    }
    return out;
  }

  // The number of elements of `x` in `dims`: an int, or a SymInt node (the
  // product of sym_size nodes).
  absl::StatusOr<Arg> Count(Node* x, const std::vector<int64_t>& dims) {
    int64_t constant = 1;
    Node* product = nullptr;
    for (int64_t d : dims) {
      Expr e = TM(x).sizes[d];
      if (IsConstant(e)) {
        constant *= e.int_value();
        continue;
      }
      ASSIGN_OR_RETURN(Arg s, Size(x, d));
      if (product == nullptr) {
        product = s.node;
      } else {
        ASSIGN_OR_RETURN(product, Binary("operator.mul", product, s));
      }
    }
    if (product == nullptr) return I(constant);
    if (constant != 1) {
      ASSIGN_OR_RETURN(product, Binary("operator.mul", product, I(constant)));
    }
    return A(product);
  }

  // Erases the nodes created so far (a decomposition that gave up).
  void Rollback() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      absl::Status s = graph_.Erase(*it);
      LATHE_CHECK(s.ok()) << s.message();
    }
    created_.clear();
  }

 private:
  ir::Graph& graph_;
  Node* node_;
  symbolic::ShapeEnv& env_;
  std::vector<Node*> created_;
};

// ---- Builders several rules use ---------------------------------------

// `x` with size-1 dims inserted at `dims` (in order).
absl::StatusOr<Node*> Unsqueezed(Rewriter& r, Node* x,
                                 const std::vector<int64_t>& dims);

// arange(n) as int64.
absl::StatusOr<Node*> Iota(Rewriter& r, const Arg& n, const Device& device);

// An attention's causal mask (top-left aligned) over [l, s] scores: true
// above the diagonal, where the key comes after the query.
absl::StatusOr<Node*> CausalMask(Rewriter& r, const Arg& l, const Arg& s,
                                 const Device& device);

// The lanes ExpUnmasked masks: `mask` (bool, true where masked; null for
// none) and `keep`, float(!mask) in the scores' dtype, which multiplies the
// masked lanes to 0.
struct MaskedLanes {
  Node* mask = nullptr;
  Node* keep = nullptr;
};

// MaskLanes()
//
// `mask` (null: none) and its `keep` factor in `dtype`, made where the
// caller makes the mask: before the scores' softmax, whose passes its
// kernels would otherwise stand between (and keep apart).
absl::StatusOr<MaskedLanes> MaskLanes(Rewriter& r, Node* mask, DType dtype);

// exp(x) for an attention's softmax weights: 0 where x < kExpTinyBelow
// (the weight would be below FLT_MIN) and where `lanes.mask` (null: none)
// is true. x holds the unmasked scores there, so exp never reads a -inf the
// mask would put in. glibc's vector expf computes every lane below -87.3 by
// scalar expf, about 15x slower than its vector lanes, so exp is given
// copysign(0, x) instead of x where x < kExpSkipBelow (a lane set to 0
// after) or the mask is true (a lane multiplied by 0 after). A
// subnormal weight costs the core a microcode assist in every op that
// reads it (the sum, the division, the product with v); as 0 it moves the
// attention's output by less than FLT_MIN * |v| per key, and its
// log-sum-exp not at all (the sum is at least 1). `lanes` is MaskLanes',
// its keep factor in x's dtype.
absl::StatusOr<Node*> ExpUnmasked(Rewriter& r, Node* x,
                                  const MaskedLanes& lanes);

// ln(FLT_MIN), rounded up to a float: exp of any float at or above it is
// at least FLT_MIN.
constexpr double kExpTinyBelow = -87.33654f;
// Below kExpTinyBelow, so that GCC cannot prove the lanes exp is not given
// x are the lanes set to 0 (and compute exp on x after all).
constexpr double kExpSkipBelow = -87.5;

// `a` op `b` for sizes (ints or SymInt nodes): operator.add / mul /
// floordiv, folded when both are ints.
absl::StatusOr<Arg> SizeOp(Rewriter& r, const char* op, const Arg& a,
                           const Arg& b);

// A size (an int or a SymInt node) plus `k`.
absl::StatusOr<Arg> SizePlus(Rewriter& r, const Arg& size, int64_t k);

// A new tensor of `sizes` filled with `value`.
absl::StatusOr<Node*> Full(Rewriter& r, std::vector<Arg> sizes, Arg value,
                           DType dtype, const Device& device);

// PyTorch's make_offset2bag: for each of the `n` indices of an
// embedding_bag, the number of bag starts offsets[1:end] (int64) at or
// before it (ones index_add-ed into zeros [n + 1], then cumsum), as int64.
absl::StatusOr<Node*> Offset2Bag(Rewriter& r, Node* offsets, const Arg& end,
                                 const Arg& n, const Device& device);

// `x` (of `like`'s sizes, any layout) laid out as empty_like(like) (dense,
// in `like`'s dimension order) through a copy in that memory order; x
// itself when it already is.
absl::StatusOr<Node*> LaidOutAs(Rewriter& r, Node* x, const TensorMeta& like);

// `x` summed over `dims` (kept as size 1 when `keepdim`); x itself for no
// dims.
absl::StatusOr<Node*> Sum(Rewriter& r, Node* x,
                          const std::vector<int64_t>& dims, bool keepdim);

// A rewrite rule: the call's results, or none when it leaves the call
// alone (after Rollback, or before creating anything).
using DecomposeFn = absl::StatusOr<Outputs> (*)(Rewriter&);

// One table entry: the op (its target) and its rule.
struct Decomposition {
  const char* target;
  DecomposeFn fn;
};

}  // namespace lathe::passes::decomp

#endif  // LATHE_PASSES_REWRITER_H_
