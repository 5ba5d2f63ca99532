// The graph walk of lowering: Lowerer::Run lowers each node in order
// (LowerNode: number-valued nodes here, every call of a registry op, graph
// builtins such as getitem included, by its rule in the lowering table) and
// then places the outputs.

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lower/lowerer.h"
#include "codegen/lower/lowering_table.h"
#include "codegen/lower/rule_helpers.h"
#include "ir/alias_info.h"
#include "ir/infer_meta.h"
#include "ir/known_ops.h"
#include "ir/ops_util.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::codegen::lower {

absl::StatusOr<NodeValue> Lowerer::LowerNumber(const Node& n) {
  if (n.op() != nullptr && n.op() == ir::Known().local_scalar_dense) {
    return LowerItem(n);
  }
  // A symbolic number: its value is its expression over the inputs'
  // symbols and those bind steps bound (sym_size, operator.mul, ...).
  const ir::ValueMeta& meta = Meta(&n);
  for (Expr s : symbolic::FreeSymbols(meta.sym)) {
    if (!IsBound(s)) {
      return absl::UnimplementedError(absl::StrCat(
          "node '", n.name(), "' (", n.target(), "): the data-dependent ",
          symbolic::ToString(s), " has no value here in the cpu backend"));
    }
  }
  NodeValue v;
  v.kind = NodeValue::Kind::kNumber;
  v.number = meta.sym;
  return v;
}

void Lowerer::RebindTensorObject(const Node& self, const Node& n,
                                 const NodeValue& v) {
  const Node* object = ir::TensorObject(self);
  const ir::ValueMeta now = Meta(&n);
  for (auto& [prior, value] : values_) {
    if (ir::TensorObject(*prior) != object) continue;
    value = v;
    metas_[prior] = now;
  }
}

// x.item() (_local_scalar_dense): a host step binds the result's symbol
// (u0, or a float zuf0) to x's element once the kernels before it ran.
absl::StatusOr<NodeValue> Lowerer::LowerItem(const Node& n) {
  const ir::ValueMeta& meta = Meta(&n);
  auto error = [&](absl::string_view what) {
    return absl::UnimplementedError(
        absl::StrCat("node '", n.name(), "' (", n.target(), "): ", what));
  };
  Expr s = meta.sym;
  if (!s.is_symbol() || s.is_bool()) {
    return error(absl::StrCat("expected a fresh int or float symbol, got ",
                              symbolic::ToString(s)));
  }
  if (IsBound(s)) {
    return error(absl::StrCat(symbolic::ToString(s),
                              " already has a value (checking a second "
                              "source is not supported)"));
  }
  if (n.args().empty() || n.args()[0].kind != Arg::Kind::kNode ||
      values_.at(n.args()[0].node).kind != NodeValue::Kind::kTensor) {
    return error("argument 0 is not a tensor");
  }
  const Node* x = n.args()[0].node;
  RETURN_IF_ERROR(RealizeNode(x));
  const TBox& t = values_.at(x).t;
  const Node* was = current_;
  current_ = &n;
  EmitBind(s, t.buffer,
           Linear(std::vector<Expr>(t.sizes.size(), symbolic::Int(0)),
                  t.strides, t.offset));
  current_ = was;
  NodeValue v;
  v.kind = NodeValue::Kind::kNumber;
  v.number = s;
  return v;
}

// x[start:u0] makes a fresh length u1 (ops_views.cc); the host computes it
// as Python slicing does: a negative bound counts from the end, both are
// clamped to [0, size], and the length is ceil((end - start) / step), at
// least 0.
absl::Status Lowerer::BindSliceLength(const Call& c) {
  const Node& n = c.node();
  if (c.op().target != "aten.slice.Tensor" || n.unbacked_bindings().empty()) {
    return absl::OkStatus();
  }
  Node* self = c.NodeAt(0);
  if (self == nullptr) return c.Error("argument 0 is not a tensor");
  const TensorMeta& in = TMeta(self);
  ASSIGN_OR_RETURN(int64_t dim, c.Int(1));
  if (dim < 0) dim += static_cast<int64_t>(in.sizes.size());
  if (dim < 0 || dim >= static_cast<int64_t>(in.sizes.size())) {
    return c.Error("dim out of range");
  }
  Expr size = in.sizes[dim];
  auto clamp = [&](Expr e) {
    Expr wrapped = symbolic::Ite(symbolic::Lt(e, symbolic::Int(0)),
                                 symbolic::Add(e, size), e);
    return symbolic::Min(symbolic::Max(wrapped, symbolic::Int(0)), size);
  };
  Expr start = symbolic::Int(0), end = size;
  if (!c.at(2).is_none()) {
    ASSIGN_OR_RETURN(Expr e, IntExpr(c, 2));
    start = clamp(e);
  }
  if (!c.at(3).is_none()) {
    ASSIGN_OR_RETURN(Expr e, IntExpr(c, 3));
    end = clamp(e);
  }
  ASSIGN_OR_RETURN(Expr step, IntExpr(c, 4));
  ASSIGN_OR_RETURN(Expr len,
                   symbolic::CeilDiv(symbolic::Sub(end, start), step));
  len = symbolic::Max(len, symbolic::Int(0));
  const TensorMeta& out = TMeta(&n);
  for (const auto& [u, path] : n.unbacked_bindings()) {
    if (IsBound(u)) continue;
    if (path != absl::StrCat(".size(", dim, ")") || out.sizes[dim] != u) {
      return c.Error(absl::StrCat("unexpected data-dependent ",
                                  symbolic::ToString(u), " at ", path));
    }
    for (Expr s : symbolic::FreeSymbols(len)) {
      if (!IsBound(s)) {
        return c.Error(absl::StrCat("the length of the slice needs ",
                                    symbolic::ToString(s),
                                    ", which has no value here"));
      }
    }
    EmitBind(u, -1, len);
  }
  return absl::OkStatus();
}

absl::Status Lowerer::LowerNode(const Node& n) {
  current_ = &n;
  NodeValue v;
  const ir::ValueMeta& meta = Meta(&n);
  if (n.kind() == Node::Kind::kGetAttr) {  // an input given by name
    ASSIGN_OR_RETURN(TBox t, AddInput(meta.tensor, nullptr));
    if (graph_.attributes().constants.count(n.target()) > 0) {
      frozen_buffers_.insert(t.buffer);
    }
    values_[&n] = TensorValue(std::move(t));
    constants_.push_back(n.target());
    return absl::OkStatus();
  }
  if (meta.kind == ir::ValueMeta::Kind::kSym && n.kind() == Node::Kind::kCall) {
    ASSIGN_OR_RETURN(v, LowerNumber(n));
    values_[&n] = v;
    return absl::OkStatus();
  }
  const OpDef* op = n.op();
  if (op == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "node '", n.name(), "': '", n.target(), "' has no cpu lowering"));
  }
  Call c(n);
  const LowerFn* rule = Table().Find(*op);
  if (rule != nullptr && op->HasTag(ir::OpTag::kBuiltin)) {
    // A graph builtin (getitem, the grad-mode switch) is its rule alone:
    // the checks and realization below are a tensor op's.
    ASSIGN_OR_RETURN(v, (*rule)(*this, c));
    values_[&n] = v;
    return RealizeIfShared(n);
  }
  RETURN_IF_ERROR(BindSliceLength(c));
  CheckDataDependentSizes(n, meta);
  if (!op->HasTag(ir::OpTag::kView) && !ir::MutatesMetadata(n)) {
    for (const Node* in : n.Inputs()) {
      const ir::ValueMeta& im = Meta(in);
      if (im.kind != ir::ValueMeta::Kind::kTensor) continue;
      RETURN_IF_ERROR(CheckElements(n, im.tensor, /*result=*/false));
    }
    if (meta.kind == ir::ValueMeta::Kind::kTensor) {
      RETURN_IF_ERROR(CheckElements(n, meta.tensor, /*result=*/true));
    }
  }
  if (rule == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "node '", n.name(), "': ", op->target, " has no cpu lowering"));
  }
  ASSIGN_OR_RETURN(v, (*rule)(*this, c));
  values_[&n] = v;
  for (const auto& [u, path] : n.unbacked_bindings()) {
    if (!IsBound(u)) {
      return absl::UnimplementedError(absl::StrCat(
          "node '", n.name(), "': ", op->target, " makes the data-dependent ",
          symbolic::ToString(u), " (", path.empty() ? "its value" : path,
          "), which the cpu backend cannot compute"));
    }
  }
  // Values whose storage the program writes later live in memory from the
  // start, so every alias sees the write.
  if (v.kind == NodeValue::Kind::kTensor &&
      meta.kind == ir::ValueMeta::Kind::kTensor &&
      mutated_.contains(meta.tensor.storage)) {
    RETURN_IF_ERROR(RealizeNode(&n));
  }
  return RealizeIfShared(n);
}

absl::Status Lowerer::RealizeIfShared(const Node& n) {
  // A loader read more than once, or grown large, is computed once.
  NodeValue& mine = values_.at(&n);
  if (mine.kind == NodeValue::Kind::kTensor && mine.t.buffer < 0 &&
      ((n.users().size() > 1 && mine.t.cost > 1) || mine.t.cost > 64)) {
    RETURN_IF_ERROR(RealizeNode(&n));
  }
  return absl::OkStatus();
}

absl::StatusOr<LoweredGraph> Lowerer::Run() {
  LoweredGraph out;
  // Storages some op writes.
  for (const auto& node : graph_.nodes()) {
    remaining_[node.get()] = static_cast<int>(node->users().size());
    const OpDef* op = node->op();
    if (op == nullptr) continue;
    for (size_t i = 0;
         i < op->schema.arguments.size() && i < node->args().size(); ++i) {
      const Arg& a = node->args()[i];
      if (op->schema.arguments[i].is_written() && a.kind == Arg::Kind::kNode) {
        mutated_.insert(Meta(a.node).tensor.storage);
      }
    }
    for (const auto& [name, a] : node->kwargs()) {
      int i = op->schema.ArgumentIndex(name);
      if (i >= 0 && op->schema.arguments[i].is_written() &&
          a.kind == Arg::Kind::kNode) {
        mutated_.insert(Meta(a.node).tensor.storage);
      }
    }
  }
  layouts_ = BufferLayouts(
      graph_,
      [this](const Node* n) -> const ir::ValueMeta& { return Meta(n); });
  int position = 0;
  for (Node* p : graph_.Placeholders()) {
    const ir::ValueMeta& m = Meta(p);
    if (m.kind == ir::ValueMeta::Kind::kTensor) {
      ASSIGN_OR_RETURN(TBox t, AddInput(m.tensor, &out));
      values_[p] = TensorValue(std::move(t));
      ir::ForEachSymbolDim(m.tensor, [&](Expr s, bool stride, int d) {
        out.sources.push_back(
            {s, position,
             stride ? SymbolSource::Kind::kStride : SymbolSource::Kind::kSize,
             d});
      });
    } else if (m.kind == ir::ValueMeta::Kind::kSym) {
      ++num_inputs_;
      out.input_buffers.push_back(-1);
      if (m.sym.is_symbol()) {
        out.sources.push_back(
            {m.sym, position, SymbolSource::Kind::kScalar, 0});
      }
      NodeValue v;
      v.kind = NodeValue::Kind::kNumber;
      v.number = m.sym;
      values_[p] = v;
    } else {
      ++num_inputs_;
      out.input_buffers.push_back(-1);
      values_[p] = NodeValue();
    }
    ++position;
  }
  // The constants after the placeholders: those the caller gives, then the
  // frozen ones (the compiled function's own, given last).
  const std::set<std::string>& frozen = graph_.attributes().constants;
  for (bool frozen_ones : {false, true}) {
    for (const auto& node : graph_.nodes()) {
      const Node& n = *node;
      if (n.kind() != Node::Kind::kGetAttr ||
          (frozen.count(n.target()) > 0) != frozen_ones) {
        continue;
      }
      RETURN_IF_ERROR(LowerNode(n));
      if (frozen_ones) ++out.frozen_constants;
    }
  }
  for (const auto& node : graph_.nodes()) {
    const Node& n = *node;
    if (n.kind() == Node::Kind::kPlaceholder ||
        n.kind() == Node::Kind::kGetAttr) {
      continue;
    }
    if (n.kind() == Node::Kind::kOutput) break;
    RETURN_IF_ERROR(LowerNode(n));
    for (Node* in : n.Inputs()) --remaining_[in];
  }
  // Outputs: in memory, where their metas say.
  const Node* output = graph_.output();
  std::vector<const Arg*> flat;
  std::function<void(const Arg&)> walk = [&](const Arg& a) {
    if (a.kind == Arg::Kind::kList) {
      for (const Arg& e : a.list) walk(e);
    } else {
      flat.push_back(&a);
    }
  };
  for (const Arg& a : output->args()) walk(a);
  for (const Arg* a : flat) {
    LoweredOutput o;
    if (a->kind != Arg::Kind::kNode) {
      if (a->kind == Arg::Kind::kInt) {
        o.kind = LoweredOutput::Kind::kNumber;
        o.number = symbolic::Int(a->i);
      }
      out.outputs.push_back(o);
      continue;
    }
    const Node* n = a->node;
    NodeValue& v = values_.at(n);
    if (v.kind == NodeValue::Kind::kNumber) {
      o.kind = LoweredOutput::Kind::kNumber;
      o.number = v.number;
      UseSymbols({v.number});
    } else if (v.kind == NodeValue::Kind::kTensor) {
      const TensorMeta& m = TMeta(n);
      if (v.t.buffer < 0) RETURN_IF_ERROR(RealizeNode(n));
      TBox t = values_.at(n).t;
      // A frozen constant is the function's own: the caller gets a copy it
      // may write.
      if ((t.strides != m.strides && !m.sizes.empty()) ||
          frozen_buffers_.contains(t.buffer)) {
        // In memory, but not in the layout the meta promises: copy.
        t.buffer = -1;
        v.t = t;
        TBox copy;
        ASSIGN_OR_RETURN(copy, Realize(TBox{t.dtype, t.sizes, t.load}, &m));
        t = copy;
      }
      o.kind = LoweredOutput::Kind::kTensor;
      o.buffer = t.buffer;
      o.dtype = m.dtype;
      o.sizes = m.sizes;
      o.strides = t.strides;
      o.offset = t.offset;
      UseSymbols(o.sizes);
      UseSymbols(o.strides);
      UseSymbols({o.offset});
    }
    out.outputs.push_back(o);
  }
  if (seeded_) {
    out.sources.push_back(
        {symbolic::Symbol("rng_seed"), 0, SymbolSource::Kind::kSeed, 0});
  }
  out.input_buffers.insert(out.input_buffers.end(), constant_buffers_.begin(),
                           constant_buffers_.end());
  out.constants = constants_;
  out.program = std::move(program_);
  out.base_offsets = base_offsets_;
  // Only symbols some input or bind step binds can be read at run time.
  for (Expr s : out.program.symbols) {
    bool bound = bound_.contains(s);
    for (const SymbolSource& src : out.sources)
      bound = bound || src.symbol == s;
    if (!bound) {
      return absl::UnimplementedError(absl::StrCat(
          "symbol ", symbolic::ToString(s),
          " is not a size, stride or number of an input (the cpu backend "
          "cannot bind it yet)"));
    }
  }
  return out;
}

}  // namespace lathe::codegen::lower
