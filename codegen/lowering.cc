#include "codegen/lowering.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check.h"
#include "codegen/scalar_ops.h"
#include "ir/alias_info.h"
#include "ir/eval_call.h"
#include "ir/infer_meta.h"
#include "ir/known_ops.h"
#include "ir/ops_util.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::codegen {
namespace {

using ir::Arg;
using ir::Node;
using ir::OpDef;
using ir::TensorMeta;
using symbolic::Expr;

// ---- Kernel building
// ---------------------------------------------------------

// Adds ops to one section of a kernel, reusing an identical earlier op of
// that section.
class KernelBuilder {
 public:
  explicit KernelBuilder(Kernel* kernel) : k_(kernel) {}
  Kernel& kernel() { return *k_; }
  void set_section(int s) { section_ = s; }
  int section() const { return section_; }

  int Add(ScalarOp op) {
    op.section = section_;
    bool pure = op.kind != ScalarOp::Kind::kStore &&
                op.kind != ScalarOp::Kind::kReduce &&
                op.kind != ScalarOp::Kind::kScan;
    std::string key;
    if (pure) {
      key = absl::StrCat(static_cast<int>(op.kind), "|", ShortName(op.dtype),
                         "|", op.fn, "|", absl::StrJoin(op.args, ","), "|",
                         op.buffer, "|",
                         op.index.is_null() ? "" : symbolic::ToString(op.index),
                         "|", op.f, "|", op.i, "|", section_);
      if (std::signbit(op.f)) key += "-";
      auto it = cse_.find(key);
      if (it != cse_.end()) return it->second;
    }
    k_->ops.push_back(std::move(op));
    int id = static_cast<int>(k_->ops.size()) - 1;
    if (pure) cse_[key] = id;
    return id;
  }
  DType dtype(int op) const { return k_->ops[op].dtype; }

  int Cast(int op, DType to) {
    if (k_->ops[op].dtype == to) return op;
    ScalarOp c;
    c.kind = ScalarOp::Kind::kCast;
    c.dtype = to;
    c.args = {op};
    return Add(std::move(c));
  }
  int Call(const std::string& fn, std::vector<int> args, DType dtype) {
    LATHE_CHECK(FindScalarFn(fn) != nullptr) << fn;
    ScalarOp c;
    c.kind = ScalarOp::Kind::kCall;
    c.fn = fn;
    c.dtype = dtype;
    c.args = std::move(args);
    return Add(std::move(c));
  }
  int Constant(double v, DType dtype) {
    ScalarOp c;
    c.kind = ScalarOp::Kind::kConstant;
    c.dtype = dtype;
    if (IsFloatingPoint(dtype)) {
      c.f = v;
    } else if (dtype == DType::kBool) {
      c.i = v != 0;
    } else {
      c.i = static_cast<int64_t>(v);
    }
    return Add(std::move(c));
  }
  int IntConstant(int64_t v, DType dtype) {
    if (IsFloatingPoint(dtype)) return Constant(static_cast<double>(v), dtype);
    ScalarOp c;
    c.kind = ScalarOp::Kind::kConstant;
    c.dtype = dtype;
    c.i = dtype == DType::kBool ? (v != 0) : v;
    return Add(std::move(c));
  }
  // Stores op `value`, cast to `dtype` (the buffer's), at buffer[index];
  // `indirect` are the checked loaded values the index names ind0, ind1...
  void Store(int buffer, DType dtype, Expr index, int value,
             const std::vector<int>& indirect = {}) {
    AddStore(buffer, dtype, std::move(index), value, -1, indirect);
  }
  // Store() only where bool op `mask` is true.
  void MaskedStore(int buffer, DType dtype, Expr index, int value, int mask,
                   const std::vector<int>& indirect = {}) {
    AddStore(buffer, dtype, std::move(index), value, mask, indirect);
  }
  int Index(Expr e) {
    ScalarOp c;
    c.kind = ScalarOp::Kind::kIndex;
    c.dtype = DType::kInt64;
    c.index = e;
    return Add(std::move(c));
  }

 private:
  void AddStore(int buffer, DType dtype, Expr index, int value, int mask,
                const std::vector<int>& indirect) {
    ScalarOp st;
    st.kind = ScalarOp::Kind::kStore;
    st.buffer = buffer;
    st.dtype = dtype;
    st.index = std::move(index);
    st.args = {Cast(value, dtype)};
    st.masked = mask >= 0;
    if (st.masked) st.args.push_back(Cast(mask, DType::kBool));
    st.args.insert(st.args.end(), indirect.begin(), indirect.end());
    Add(std::move(st));
  }

  Kernel* k_;
  int section_ = 0;
  absl::flat_hash_map<std::string, int> cse_;
};

using Loader = std::function<absl::StatusOr<int>(KernelBuilder&,
                                                 const std::vector<Expr>&)>;

// A tensor value during lowering: a loader over its sizes, and where it is
// in memory when it is (buffer >= 0: strides and offset in the buffer's
// storage coordinates).
struct TBox {
  DType dtype = DType::kFloat32;
  std::vector<Expr> sizes;
  Loader load;
  int buffer = -1;
  std::vector<Expr> strides;
  Expr offset = symbolic::Int(0);
  std::set<int> reads;  // buffers the loader reads
  int cost = 1;         // ops the loader adds, roughly
};

struct NodeValue {
  enum class Kind : uint8_t { kNone, kTensor, kNumber, kTuple };
  Kind kind = Kind::kNone;
  TBox t;
  Expr number;
  std::vector<NodeValue> elements;
};

Expr Linear(const std::vector<Expr>& idx, const std::vector<Expr>& strides,
            Expr offset) {
  std::vector<Expr> terms = {offset};
  for (size_t d = 0; d < idx.size(); ++d) {
    terms.push_back(symbolic::Mul(idx[d], strides[d]));
  }
  return symbolic::Add(terms);
}

std::vector<Expr> Contiguous(const std::vector<Expr>& sizes) {
  return ir::ContiguousStrides(sizes);
}

// Elements a storage needs so that every index of the layout is inside.
Expr StorageNumel(const std::vector<Expr>& sizes,
                  const std::vector<Expr>& strides, Expr offset) {
  std::vector<Expr> terms = {offset, symbolic::Int(1)};
  std::vector<Expr> numel = {symbolic::Int(1)};
  for (size_t d = 0; d < sizes.size(); ++d) {
    terms.push_back(
        symbolic::Mul(symbolic::Sub(sizes[d], symbolic::Int(1)), strides[d]));
    numel.push_back(sizes[d]);
  }
  // An empty tensor needs nothing: max(0, ...) keeps the formula valid.
  return symbolic::Max(
      symbolic::Int(0),
      symbolic::Mul(symbolic::Min(symbolic::Int(1), symbolic::Mul(numel)),
                    symbolic::Add(terms)));
}

bool IsOne(Expr e) { return e == symbolic::Int(1); }

// ---- Arguments by schema
// ------------------------------------------------------

// One argument of a call as the schema binds it: given, or its default.
struct Bound {
  const Arg* arg = nullptr;  // null: the schema default (or absent)
  const ir::DefaultValue* def = nullptr;
  bool is_none() const {
    if (arg != nullptr) return arg->kind == Arg::Kind::kNone;
    return def == nullptr || def->kind == ir::DefaultValue::Kind::kNone;
  }
};

class Call {
 public:
  explicit Call(const Node& n) : n_(n), op_(*n.op()) {
    const ir::OpSchema& s = op_.schema;
    bound_.resize(s.arguments.size());
    for (size_t i = 0; i < s.arguments.size(); ++i) {
      if (s.arguments[i].default_value.has_value()) {
        bound_[i].def = &*s.arguments[i].default_value;
      }
    }
    for (size_t i = 0; i < n.args().size() && i < bound_.size(); ++i) {
      bound_[i].arg = &n.args()[i];
    }
    for (const auto& [name, a] : n.kwargs()) {
      int i = s.ArgumentIndex(name);
      if (i >= 0) bound_[i].arg = &a;
    }
  }
  const Node& node() const { return n_; }
  const OpDef& op() const { return op_; }
  int num() const { return static_cast<int>(bound_.size()); }
  int Index(absl::string_view name) const {
    return op_.schema.ArgumentIndex(name);
  }
  const Bound& at(int i) const { return bound_[i]; }
  bool Has(absl::string_view name) const {
    int i = Index(name);
    return i >= 0 && !bound_[i].is_none();
  }
  Node* NodeAt(int i) const {
    const Arg* a = bound_[i].arg;
    return a != nullptr && a->kind == Arg::Kind::kNode ? a->node : nullptr;
  }
  absl::StatusOr<int64_t> Int(int i) const {
    const Bound& b = bound_[i];
    if (b.arg != nullptr) {
      if (b.arg->kind == Arg::Kind::kInt) return b.arg->i;
      if (b.arg->kind == Arg::Kind::kBool) return b.arg->b ? 1 : 0;
      if (b.arg->kind == Arg::Kind::kNode &&
          b.arg->node->meta().kind == ir::ValueMeta::Kind::kSym &&
          b.arg->node->meta().sym.kind() == symbolic::ExprKind::kInteger) {
        return b.arg->node->meta().sym.int_value();
      }
      return Error(absl::StrCat("argument ", i, " is not a known int"));
    }
    if (b.def != nullptr && b.def->kind == ir::DefaultValue::Kind::kInt) {
      return b.def->int_value;
    }
    if (b.def != nullptr && b.def->kind == ir::DefaultValue::Kind::kBool) {
      return b.def->bool_value ? 1 : 0;
    }
    return Error(absl::StrCat("argument ", i, " has no int value"));
  }
  absl::StatusOr<int64_t> Int(absl::string_view name) const {
    return Int(Index(name));
  }
  absl::StatusOr<bool> Bool(absl::string_view name) const {
    ASSIGN_OR_RETURN(int64_t v, Int(Index(name)));
    return v != 0;
  }
  // An int list argument (dims); nullopt when None.
  absl::StatusOr<std::optional<std::vector<int64_t>>> IntList(int i) const {
    const Bound& b = bound_[i];
    if (b.is_none()) return std::nullopt;
    std::vector<int64_t> out;
    if (b.arg != nullptr) {
      if (b.arg->kind == Arg::Kind::kInt) return std::vector<int64_t>{b.arg->i};
      if (b.arg->kind != Arg::Kind::kList) {
        return Error(absl::StrCat("argument ", i, " is not an int list"));
      }
      for (const Arg& e : b.arg->list) {
        if (e.kind != Arg::Kind::kInt) {
          return Error(absl::StrCat("argument ", i, " is not an int list"));
        }
        out.push_back(e.i);
      }
      return out;
    }
    if (b.def->kind == ir::DefaultValue::Kind::kInt) {
      return std::vector<int64_t>{b.def->int_value};
    }
    if (b.def->kind == ir::DefaultValue::Kind::kList && b.def->text == "[]") {
      return out;
    }
    return Error(absl::StrCat("argument ", i, " default ", b.def->text,
                              " is not supported"));
  }
  absl::StatusOr<std::string> String(absl::string_view name) const {
    const Bound& b = bound_[Index(name)];
    if (b.arg != nullptr && b.arg->kind == Arg::Kind::kString) return b.arg->s;
    if (b.def != nullptr) return b.def->string_value;
    return std::string();
  }
  absl::Status Error(absl::string_view message) const {
    return absl::UnimplementedError(
        absl::StrCat("node '", n_.name(), "' (", op_.target, "): ", message));
  }

 private:
  const Node& n_;
  const OpDef& op_;
  std::vector<Bound> bound_;
};

// ---- The lowerer
// ----------------------------------------------------------------

class Lowerer;
using LowerFn = std::function<absl::StatusOr<NodeValue>(Lowerer&, const Call&)>;

const absl::flat_hash_map<std::string, LowerFn>& Table();

class Lowerer {
 public:
  Lowerer(const ir::Graph& graph, symbolic::ShapeEnv& env)
      : graph_(graph), env_(env) {}

  absl::StatusOr<LoweredGraph> Run();

  // The meta of `n` with what the env learned applied.
  const ir::ValueMeta& Meta(const Node* n) {
    auto it = metas_.find(n);
    if (it == metas_.end()) {
      it = metas_.emplace(n, ir::ApplyReplacements(n->meta(), env_)).first;
    }
    return it->second;
  }
  const TensorMeta& TMeta(const Node* n) { return Meta(n).tensor; }
  symbolic::ShapeEnv& env() { return env_; }

  // The tensor value of node `n` (an argument of the call being lowered).
  absl::StatusOr<TBox> Tensor(const Call& c, int i) {
    Node* n = c.NodeAt(i);
    if (n == nullptr)
      return c.Error(absl::StrCat("argument ", i, " is not a tensor"));
    const NodeValue& v = values_.at(n);
    if (v.kind != NodeValue::Kind::kTensor) {
      return c.Error(absl::StrCat("argument ", i, " is not a tensor"));
    }
    return v.t;
  }

  // An operand of a pointwise op: a tensor, or a number (a literal or a
  // symbolic value) broadcast as a 0-d tensor of `dtype`.
  absl::StatusOr<TBox> Operand(const Call& c, int i, DType dtype) {
    const Bound& b = c.at(i);
    if (b.arg != nullptr && b.arg->kind == Arg::Kind::kNode) {
      const NodeValue& v = values_.at(b.arg->node);
      if (v.kind == NodeValue::Kind::kTensor) return v.t;
      if (v.kind == NodeValue::Kind::kNumber) return NumberBox(v.number, dtype);
      return c.Error(absl::StrCat("argument ", i, " is not a number"));
    }
    if (b.arg != nullptr) {
      switch (b.arg->kind) {
        case Arg::Kind::kInt:
          return NumberBox(symbolic::Int(b.arg->i), dtype);
        case Arg::Kind::kFloat:
          return NumberBox(symbolic::Float(b.arg->f), dtype);
        case Arg::Kind::kBool:
          return NumberBox(symbolic::Int(b.arg->b ? 1 : 0), dtype);
        default:
          return c.Error(absl::StrCat("argument ", i, " is not a number"));
      }
    }
    if (b.def != nullptr) {
      if (b.def->kind == ir::DefaultValue::Kind::kInt) {
        return NumberBox(symbolic::Int(b.def->int_value), dtype);
      }
      if (b.def->kind == ir::DefaultValue::Kind::kFloat) {
        return NumberBox(symbolic::Float(b.def->float_value), dtype);
      }
      if (b.def->kind == ir::DefaultValue::Kind::kBool) {
        return NumberBox(symbolic::Int(b.def->bool_value), dtype);
      }
    }
    return c.Error(absl::StrCat("argument ", i, " is missing"));
  }

  // A number as a 0-d tensor of `dtype`.
  TBox NumberBox(Expr number, DType dtype) {
    TBox t;
    t.dtype = dtype;
    t.cost = 0;
    symbolic::ExprKind kind = number.kind();
    if (kind == symbolic::ExprKind::kInteger ||
        kind == symbolic::ExprKind::kFloat ||
        kind == symbolic::ExprKind::kBoolean) {
      bool is_int = kind == symbolic::ExprKind::kInteger;
      double v = kind == symbolic::ExprKind::kFloat ? number.float_value()
                 : kind == symbolic::ExprKind::kBoolean
                     ? (number.bool_value() ? 1 : 0)
                     : static_cast<double>(number.int_value());
      int64_t iv = is_int ? number.int_value() : static_cast<int64_t>(v);
      t.load = [v, iv, is_int, dtype](
                   KernelBuilder& kb,
                   const std::vector<Expr>&) -> absl::StatusOr<int> {
        return is_int ? kb.IntConstant(iv, dtype) : kb.Constant(v, dtype);
      };
      return t;
    }
    // A symbolic number: an index expression or a float symbol's value.
    bool is_float = number.is_float();
    std::vector<Expr> syms = symbolic::FreeSymbols(number);
    for (Expr s : syms) UseSymbol(s);
    t.load = [number, dtype, is_float](
                 KernelBuilder& kb,
                 const std::vector<Expr>&) -> absl::StatusOr<int> {
      ScalarOp op;
      op.kind = is_float ? ScalarOp::Kind::kSymbol : ScalarOp::Kind::kIndex;
      op.dtype = is_float ? DType::kFloat64 : DType::kInt64;
      op.index = number;
      return kb.Cast(kb.Add(std::move(op)), dtype);
    };
    return t;
  }

  // The seed of the random ops, a symbol bound from the call's seed
  // (SymbolSource::Kind::kSeed).
  Expr Seed() {
    Expr s = symbolic::Symbol("rng_seed");
    UseSymbol(s);
    seeded_ = true;
    return s;
  }
  bool seeded() const { return seeded_; }
  // Reserves `n` draws of the call's stream for one random op, in graph
  // order as the interpreter's Generator does; the counter of the first.
  Expr ReserveDraws(Expr n) {
    Expr first = draws_;
    draws_ = symbolic::Add(draws_, n);
    UseSymbols({first});
    return first;
  }

  // Registers a symbol the program reads at run time.
  void UseSymbol(Expr s) {
    if (symbol_set_.insert(s).second) program_.symbols.push_back(s);
  }
  void UseSymbols(const std::vector<Expr>& exprs) {
    for (Expr e : exprs) {
      for (Expr s : symbolic::FreeSymbols(e)) {
        if (s.is_symbol() && !IsIndexVar(s)) UseSymbol(s);
      }
    }
  }
  static bool IsIndexVar(Expr s) {
    std::string n = symbolic::ToString(s);
    return (n[0] == 'x' || n[0] == 'r') && n.size() > 1 &&
           std::isdigit(static_cast<unsigned char>(n[1]));
  }

  // A loader reading buffer `b` at the layout.
  TBox FromBuffer(int b, DType dtype, std::vector<Expr> sizes,
                  std::vector<Expr> strides, Expr offset) {
    UseSymbols(sizes);
    UseSymbols(strides);
    UseSymbols({offset});
    TBox t;
    t.dtype = dtype;
    t.sizes = std::move(sizes);
    t.buffer = b;
    t.strides = strides;
    t.offset = offset;
    t.reads = {b};
    t.load = [b, dtype, strides, offset](
                 KernelBuilder& kb,
                 const std::vector<Expr>& idx) -> absl::StatusOr<int> {
      ScalarOp op;
      op.kind = ScalarOp::Kind::kLoad;
      op.dtype = dtype;
      op.buffer = b;
      op.index = Linear(idx, strides, offset);
      return kb.Add(std::move(op));
    };
    return t;
  }

  // The box of a value whose meta says where it is in storage `b`.
  TBox FromStorage(int b, const TensorMeta& m) {
    Expr offset = symbolic::Sub(m.storage_offset, base_offsets_[b]);
    return FromBuffer(b, m.dtype, m.sizes, m.strides, offset);
  }

  int NewBuffer(DType dtype, Expr numel) {
    UseSymbols({numel});
    Buffer b;
    b.name = absl::StrCat("buf", program_.buffers.size());
    b.kind = Buffer::Kind::kAllocated;
    b.dtype = dtype;
    b.numel = numel;
    program_.buffers.push_back(b);
    base_offsets_.push_back(symbolic::Int(0));
    return static_cast<int>(program_.buffers.size()) - 1;
  }

  Kernel NewKernel(const std::vector<Expr>& ranges) {
    Kernel k;
    k.name = absl::StrCat("k", kernel_count_++);
    for (size_t d = 0; d < ranges.size(); ++d) {
      k.vars.push_back(IndexVar(static_cast<int>(d)));
    }
    k.ranges = ranges;
    UseSymbols(ranges);
    k.sections.push_back(Section());
    return k;
  }

  void Emit(Kernel k) {
    k.fused_from = {k.name};
    if (current_ != nullptr) k.nodes = {current_->name()};
    program_.kernels.push_back(std::move(k));
  }

  // Stores `value` into buffer b at the layout (one kernel over the sizes).
  absl::Status Store(int b, const std::vector<Expr>& strides, Expr offset,
                     const TBox& value) {
    Kernel k = NewKernel(value.sizes);
    KernelBuilder kb(&k);
    ASSIGN_OR_RETURN(int v, value.load(kb, k.vars));
    kb.Store(b, program_.buffers[b].dtype, Linear(k.vars, strides, offset), v);
    Emit(std::move(k));
    return absl::OkStatus();
  }

  // `value` in memory: a new buffer laid out as `meta` says (its strides and
  // offset; contiguous without one).
  absl::StatusOr<TBox> Realize(const TBox& value, const TensorMeta* meta) {
    if (value.buffer >= 0) return value;
    std::vector<Expr> strides =
        meta != nullptr ? meta->strides : Contiguous(value.sizes);
    Expr offset = meta != nullptr ? meta->storage_offset : symbolic::Int(0);
    int b = NewBuffer(value.dtype, StorageNumel(value.sizes, strides, offset));
    RETURN_IF_ERROR(Store(b, strides, offset, value));
    return FromBuffer(b, value.dtype, value.sizes, strides, offset);
  }

  // Realizes node n's value in place of its loader (laid out as its meta
  // says when it owns its storage, which then maps to the buffer).
  absl::Status RealizeNode(const Node* n) {
    // The kernel is n's, whichever node's lowering needed it in memory.
    const Node* was = current_;
    current_ = n;
    absl::Status status = RealizeNodeInMemory(n);
    current_ = was;
    return status;
  }
  absl::Status RealizeNodeInMemory(const Node* n) {
    NodeValue& v = values_.at(n);
    if (v.kind != NodeValue::Kind::kTensor || v.t.buffer >= 0) {
      return absl::OkStatus();
    }
    const TensorMeta& m = TMeta(n);
    if (n->op() != nullptr && n->op()->HasTag(ir::OpTag::kView) &&
        !n->args().empty() && n->args()[0].kind == Arg::Kind::kNode) {
      // A view lives where its storage does: realize the storage's owner and
      // read the view through its own meta.
      const Node* root = n->args()[0].node;
      while (root->op() != nullptr && root->op()->HasTag(ir::OpTag::kView) &&
             !root->args().empty() &&
             root->args()[0].kind == Arg::Kind::kNode) {
        root = root->args()[0].node;
      }
      if (values_.contains(root)) RETURN_IF_ERROR(RealizeNode(root));
      auto it = storage_buffer_.find(m.storage);
      if (it != storage_buffer_.end()) {
        v.t = FromStorage(it->second, m);
        return CheckViewInBuffer(*n, v.t.buffer, v.t.sizes, v.t.strides,
                                 v.t.offset);
      }
    }
    bool owner = n->op() != nullptr && !n->op()->HasTag(ir::OpTag::kView) &&
                 m.storage != ir::kUnknownStorage &&
                 !storage_buffer_.contains(m.storage);
    ASSIGN_OR_RETURN(TBox t, Realize(v.t, owner ? &m : nullptr));
    if (owner) storage_buffer_[m.storage] = t.buffer;
    v.t = t;
    return absl::OkStatus();
  }

  // Pointwise: fn over operands broadcast to `sizes`, computed in
  // `compute`, the result in `out`.
  TBox Pointwise(const std::string& fn, std::vector<TBox> operands,
                 DType compute, DType out, std::vector<Expr> sizes) {
    TBox t;
    t.dtype = out;
    t.sizes = sizes;
    t.cost = 1;
    for (const TBox& o : operands) {
      t.reads.insert(o.reads.begin(), o.reads.end());
      t.cost += o.cost;
    }
    const ScalarFn* f = FindScalarFn(fn);
    LATHE_CHECK(f != nullptr) << fn;
    bool bool_result = f->bool_result;
    bool is_where = fn == "where";
    // Integer division by zero raises, as the interpreter does.
    int zero_check = -1;
    if (IsIntegral(compute, /*include_bool=*/false) &&
        (fn == "floordiv" || fn == "truncdiv" || fn == "fmod" ||
         fn == "remainder")) {
      // The interpreter's message (OpCall::Error's form).
      std::string op = current_ != nullptr && current_->op() != nullptr
                           ? absl::StrCat(current_->op()->target, ": ")
                           : "";
      zero_check = CheckId(
          absl::StrCat("node '", current_ != nullptr ? current_->name() : "",
                       "': ", op, "ZeroDivisionError"));
    }
    t.load = [fn, operands, compute, out, sizes, bool_result, is_where,
              zero_check](KernelBuilder& kb,
                          const std::vector<Expr>& idx) -> absl::StatusOr<int> {
      std::vector<int> args;
      for (size_t k = 0; k < operands.size(); ++k) {
        const TBox& o = operands[k];
        // Broadcast: align right; a size-1 dim of a bigger result reads 0.
        std::vector<Expr> sub;
        size_t off = idx.size() - o.sizes.size();
        for (size_t d = 0; d < o.sizes.size(); ++d) {
          bool broadcast = IsOne(o.sizes[d]) && !IsOne(sizes[off + d]);
          sub.push_back(broadcast ? symbolic::Int(0) : idx[off + d]);
        }
        ASSIGN_OR_RETURN(int v, o.load(kb, sub));
        DType want = (is_where && k == 0) ? DType::kBool : compute;
        args.push_back(kb.Cast(v, want));
      }
      if (zero_check >= 0) {
        // The divisor as an index into [0, 1): 1 (out of range) when zero.
        int zero = kb.IntConstant(0, compute);
        int is_zero = kb.Call("eq", {args[1], zero}, DType::kBool);
        ScalarOp op;
        op.kind = ScalarOp::Kind::kCheckIndex;
        op.dtype = DType::kInt64;
        op.args = {kb.Cast(is_zero, DType::kInt64)};
        op.index = symbolic::Int(1);
        op.i = zero_check;
        kb.Add(std::move(op));
      }
      int r = kb.Call(fn, args, bool_result ? DType::kBool : compute);
      return kb.Cast(r, out);
    };
    return t;
  }

  // A reduction kernel's frame: outer loops over the dims of `in` not in
  // `dims`, a reduction section over those in it, and `in` loaded there
  // (value `loaded`, at `idx`); section 1 (the epilogue) is current.
  struct ReductionFrame {
    Kernel k;
    std::vector<bool> reduced;
    std::vector<Expr> idx;
    Expr count;  // elements per reduction
  };
  ReductionFrame NewReduction(const TBox& in,
                              const std::vector<int64_t>& dims) {
    ReductionFrame f;
    int64_t rank = static_cast<int64_t>(in.sizes.size());
    f.reduced.assign(rank, false);
    for (int64_t d : dims) f.reduced[d < 0 ? d + rank : d] = true;
    std::vector<Expr> outer, inner;
    for (int64_t d = 0; d < rank; ++d) {
      (f.reduced[d] ? inner : outer).push_back(in.sizes[d]);
    }
    f.count = Product(inner);
    f.k = NewKernel(outer);
    f.k.sections[0].reduction = true;
    for (size_t d = 0; d < inner.size(); ++d) {
      f.k.sections[0].vars.push_back(SectionVar(0, static_cast<int>(d)));
      f.k.sections[0].ranges.push_back(inner[d]);
    }
    UseSymbols(inner);
    f.k.sections.push_back(Section());
    int o = 0, r = 0;
    for (int64_t d = 0; d < rank; ++d) {
      f.idx.push_back(f.reduced[d] ? f.k.sections[0].vars[r++] : f.k.vars[o++]);
    }
    return f;
  }
  // Stores `value` (an epilogue op of f's kernel) into a new buffer laid
  // out as `meta` (keepdim or not) and returns it.
  TBox StoreReduced(ReductionFrame& f, KernelBuilder& kb,
                    const TensorMeta& meta, int value) {
    int b = NewBuffer(meta.dtype, StorageNumel(meta.sizes, meta.strides,
                                               meta.storage_offset));
    // The output index: the outer vars, 0 at kept reduced dims.
    std::vector<Expr> out_idx;
    const size_t rank = f.reduced.size();
    bool keepdim = meta.sizes.size() == rank;
    for (size_t d = 0, o = 0; d < rank; ++d) {
      if (!f.reduced[d]) {
        out_idx.push_back(f.k.vars[o++]);
      } else if (keepdim) {
        out_idx.push_back(symbolic::Int(0));
      }
    }
    kb.Store(b, meta.dtype, Linear(out_idx, meta.strides, meta.storage_offset),
             value);
    return FromBuffer(b, meta.dtype, meta.sizes, meta.strides,
                      meta.storage_offset);
  }

  // A reduction of `in` over `dims` into a new buffer laid out as `meta`
  // (keepdim or not); `post` maps the reduced value (acc dtype) to the
  // stored one.
  absl::StatusOr<TBox> Reduce(
      const TBox& in, std::vector<int64_t> dims, ReduceKind kind, DType acc,
      const TensorMeta& meta,
      std::function<int(KernelBuilder&, int, Expr)> post,
      std::function<Expr(const std::vector<Expr>&)> arg_of = nullptr) {
    ReductionFrame f = NewReduction(in, dims);
    KernelBuilder kb(&f.k);
    ASSIGN_OR_RETURN(int v, in.load(kb, f.idx));
    ScalarOp red;
    red.kind = ScalarOp::Kind::kReduce;
    red.reduce = kind;
    if (kind == ReduceKind::kArgMax || kind == ReduceKind::kArgMin) {
      // The flat index over the reduced dims, row-major, unless `arg_of`
      // says which index of the input an element stands for.
      const Section& sec = f.k.sections[0];
      std::vector<Expr> strides = Contiguous(sec.ranges);
      red.arg_index = kb.Index(
          arg_of ? arg_of(f.idx) : Linear(sec.vars, strides, symbolic::Int(0)));
      red.dtype = DType::kInt64;
      red.args = {kb.Cast(v, ComputeDType(in.dtype))};
    } else if (kind == ReduceKind::kAny || kind == ReduceKind::kAll) {
      red.dtype = DType::kBool;
      red.args = {kb.Cast(v, DType::kBool)};
    } else {
      red.dtype = acc;
      red.args = {kb.Cast(v, acc)};
    }
    int rv = kb.Add(std::move(red));
    kb.set_section(1);
    int result = post ? post(kb, rv, f.count) : rv;
    TBox out = StoreReduced(f, kb, meta, result);
    Emit(std::move(f.k));
    return out;
  }

  // var and mean of `in` over `dims` in one Welford reduction (computed in
  // `acc`): var = M2 / max(count - correction, 0), each stored as its meta
  // says.
  absl::StatusOr<std::pair<TBox, TBox>> VarMean(
      const TBox& in, const std::vector<int64_t>& dims, DType acc,
      double correction, const TensorMeta& var_meta,
      const TensorMeta& mean_meta) {
    ReductionFrame f = NewReduction(in, dims);
    KernelBuilder kb(&f.k);
    ASSIGN_OR_RETURN(int v, in.load(kb, f.idx));
    v = kb.Cast(v, acc);
    ScalarOp mean;
    mean.kind = ScalarOp::Kind::kReduce;
    mean.reduce = ReduceKind::kWelfordMean;
    mean.dtype = acc;
    mean.args = {v};
    int mean_op = kb.Add(std::move(mean));
    ScalarOp m2;
    m2.kind = ScalarOp::Kind::kReduce;
    m2.reduce = ReduceKind::kWelfordM2;
    m2.dtype = acc;
    m2.args = {v};
    m2.arg_index = mean_op;
    int m2_op = kb.Add(std::move(m2));
    kb.set_section(1);
    int count = kb.Cast(kb.Index(f.count), acc);
    int divisor =
        kb.Call("maximum",
                {kb.Call("sub", {count, kb.Constant(correction, acc)}, acc),
                 kb.Constant(0, acc)},
                acc);
    int var = kb.Call("truediv", {m2_op, divisor}, acc);
    TBox var_box = StoreReduced(f, kb, var_meta, var);
    TBox mean_box = StoreReduced(f, kb, mean_meta, mean_op);
    Emit(std::move(f.k));
    return std::make_pair(var_box, mean_box);
  }

  // An extern kernel.
  void EmitExtern(const std::string& routine, std::vector<int> buffers,
                  std::vector<Expr> args, int outputs = 1) {
    Kernel k;
    k.name = absl::StrCat("k", kernel_count_++);
    k.kind = Kernel::Kind::kExtern;
    k.routine = routine;
    k.extern_buffers = std::move(buffers);
    k.extern_outputs = outputs;
    UseSymbols(args);
    k.extern_args = std::move(args);
    Emit(std::move(k));
  }

  // Writes `value` (broadcast to the target's sizes) into the memory of
  // `target`; lazily computed values that still read that memory and will
  // be read later are realized first.
  absl::Status WriteInto(const Node* current, const TBox& target, TBox value) {
    int b = target.buffer;
    LATHE_CHECK(b >= 0);
    std::vector<const Node*> borrowed;
    std::optional<ir::StorageId> written;
    if (Meta(current).kind == ir::ValueMeta::Kind::kTensor) {
      written = TMeta(current).storage;
    }
    for (auto& [node, v] : values_) {
      if (node == current || remaining_[node] == 0) continue;
      if (v.kind == NodeValue::Kind::kTensor && v.t.buffer < 0 &&
          v.t.reads.count(b) > 0) {
        RETURN_IF_ERROR(RealizeNode(node));
      }
      // A value of another storage that reads b's memory in place (a copy
      // or expand lowered as a view of it) keeps the values it had.
      if (v.kind == NodeValue::Kind::kTensor && v.t.buffer == b &&
          written.has_value() &&
          Meta(node).kind == ir::ValueMeta::Kind::kTensor &&
          TMeta(node).storage != *written) {
        borrowed.push_back(node);
      }
    }
    for (const Node* node : borrowed) {
      TBox loader = values_.at(node).t;
      loader.buffer = -1;
      ASSIGN_OR_RETURN(TBox copy, Realize(loader, &TMeta(node)));
      values_.at(node).t = copy;
    }
    // Broadcast the value to the target's sizes.
    if (value.sizes != target.sizes) {
      value = Broadcast(value, target.sizes);
    }
    // A value reading the target at other elements is computed first.
    Kernel probe = NewKernel(target.sizes);
    --kernel_count_;
    KernelBuilder kb(&probe);
    ASSIGN_OR_RETURN(int unused, value.load(kb, probe.vars));
    (void)unused;
    Expr at = Linear(probe.vars, target.strides, target.offset);
    bool clash = false;
    for (const ScalarOp& op : probe.ops) {
      if (op.kind == ScalarOp::Kind::kLoad && op.buffer == b &&
          op.index != at) {
        clash = true;
      }
    }
    if (clash) {
      ASSIGN_OR_RETURN(value, Realize(value, nullptr));
    }
    return Store(b, target.strides, target.offset, value);
  }

  // `t` broadcast to `sizes` (no computation).
  TBox Broadcast(const TBox& t, std::vector<Expr> sizes) {
    TBox out = t;
    out.buffer = -1;
    out.sizes = sizes;
    TBox in = t;
    out.load = [in, sizes](
                   KernelBuilder& kb,
                   const std::vector<Expr>& idx) -> absl::StatusOr<int> {
      std::vector<Expr> sub;
      size_t off = idx.size() - in.sizes.size();
      for (size_t d = 0; d < in.sizes.size(); ++d) {
        bool broadcast = IsOne(in.sizes[d]) && !IsOne(sizes[off + d]);
        sub.push_back(broadcast ? symbolic::Int(0) : idx[off + d]);
      }
      return in.load(kb, sub);
    };
    if (t.buffer >= 0) {  // still a strided view of the buffer
      std::vector<Expr> strides(sizes.size(), symbolic::Int(0));
      size_t off = sizes.size() - t.sizes.size();
      for (size_t d = 0; d < t.sizes.size(); ++d) {
        bool broadcast = IsOne(t.sizes[d]) && !IsOne(sizes[off + d]);
        strides[off + d] = broadcast ? symbolic::Int(0) : t.strides[d];
      }
      return FromBuffer(t.buffer, t.dtype, sizes, strides, t.offset);
    }
    return out;
  }

  // The id of check `message` (Program::checks), added once.
  int CheckId(const std::string& message) {
    auto [it, added] = check_ids_.emplace(message, program_.checks.size());
    if (added) program_.checks.push_back(message);
    return static_cast<int>(it->second);
  }

  // A check-index op over `value` (an integer): wrapped by `size` when
  // negative (when `wrap`); out of range, the run fails naming the node.
  int CheckIndex(KernelBuilder& kb, const Node& n, int value, Expr size,
                 bool wrap, int64_t dim) {
    UseSymbols({size});
    std::string message =
        absl::StrCat("node '", n.name(), "' (", n.op()->target,
                     "): an index is out of bounds for dimension ", dim,
                     " with size ", symbolic::ToString(size));
    ScalarOp op;
    op.kind = ScalarOp::Kind::kCheckIndex;
    op.dtype = DType::kInt64;
    op.args = {kb.Cast(value, DType::kInt64)};
    op.index = size;
    op.i = CheckId(message);
    op.wrap = wrap;
    return kb.Add(std::move(op));
  }

  // Whether runtime symbol `s` has a value where the program is now: an
  // input's, or one a bind step gave it.
  bool IsBound(Expr s) {
    if (bound_.contains(s)) return true;
    for (Node* p : graph_.Placeholders()) {
      for (Expr q : Meta(p).Symbols()) {
        if (q == s) return true;
      }
    }
    return false;
  }

  // A host step binding data-dependent symbol `s` here: to the element at
  // index `value` of buffer `b` (x.item()), or, with b < 0, to `value`, an
  // expression of bound symbols.
  void EmitBind(Expr s, int b, Expr value) {
    Kernel k;
    k.name = absl::StrCat("k", kernel_count_++);
    k.kind = Kernel::Kind::kBind;
    if (b >= 0) k.extern_buffers = {b};
    if (b >= 0 && s.is_int()) {
      // An int read from data may size buffers: outside int32's range it
      // stops the program (no size expression over it can overflow then).
      std::string message = absl::StrCat(
          "node '", current_ != nullptr ? current_->name() : "", "': the ",
          "data-dependent ", symbolic::ToString(s),
          " is outside [-2^31, 2^31), the values the compiled program admits");
      k.check = CheckId(message);
    }
    k.extern_outputs = 0;
    k.symbol = s;
    k.value = value;
    UseSymbols({value});
    UseSymbol(s);
    bound_.insert(s);
    if (b >= 0) read_from_data_.insert(s);
    Emit(std::move(k));
  }

  // A host step stopping the program with `message` when `cond` (over bound
  // symbols) is false.
  void EmitAssert(Expr cond, const std::string& message) {
    Kernel k;
    k.name = absl::StrCat("k", kernel_count_++);
    k.kind = Kernel::Kind::kAssert;
    k.value = cond;
    k.check = CheckId(message);
    UseSymbols({cond});
    Emit(std::move(k));
  }

  // Refuses a view of buffer `b` at the layout (offset from the buffer's
  // start) that reaches outside it, with the interpreter's message
  // (Tensor::Wrap's): at compile time when that is decided, else (for the
  // ops that take unclamped positions) with a host step before the kernels
  // that read the view.
  absl::Status CheckViewInBuffer(const Node& n, int b,
                                 const std::vector<Expr>& sizes,
                                 const std::vector<Expr>& strides,
                                 Expr offset) {
    auto fail = [&](const std::string& what) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", n.name(), "': ", what));
    };
    std::vector<Expr> conds, empty;
    for (size_t d = 0; d < strides.size(); ++d) {
      Expr nonneg = symbolic::Ge(strides[d], symbolic::Int(0));
      if (env_.MaybeEvaluateStatic(nonneg) == symbolic::Bool(false)) {
        return fail(absl::StrCat("negative stride ",
                                 symbolic::ToString(strides[d]),
                                 " in dimension ", d));
      }
      conds.push_back(nonneg);
    }
    Expr nonneg = symbolic::Ge(offset, symbolic::Int(0));
    if (env_.MaybeEvaluateStatic(nonneg) == symbolic::Bool(false)) {
      return fail(
          absl::StrCat("negative storage offset ", symbolic::ToString(offset)));
    }
    conds.push_back(nonneg);
    Expr end = symbolic::Add(offset, symbolic::Int(1));
    for (size_t d = 0; d < sizes.size(); ++d) {
      end = symbolic::Add(
          end,
          symbolic::Mul(symbolic::Sub(sizes[d], symbolic::Int(1)), strides[d]));
      empty.push_back(symbolic::Eq(sizes[d], symbolic::Int(0)));
    }
    const Buffer& buffer = program_.buffers[b];
    empty.push_back(symbolic::Le(end, buffer.numel));
    conds.push_back(symbolic::Or(empty));
    Expr cond = symbolic::And(conds);
    std::optional<Expr> known = env_.MaybeEvaluateStatic(cond);
    if (known == symbolic::Bool(true)) return absl::OkStatus();
    Expr item = symbolic::Int(ItemSize(buffer.dtype));
    auto list = [](const std::vector<Expr>& es) {
      std::vector<std::string> parts;
      for (Expr e : es) parts.push_back(symbolic::ToString(e));
      return absl::StrJoin(parts, ", ");
    };
    std::string message = absl::StrCat(
        "view of ", symbolic::ToString(symbolic::Mul(end, item)),
        " bytes (sizes [", list(sizes), "], strides [", list(strides),
        "], offset ", symbolic::ToString(offset), ") exceeds its storage of ",
        symbolic::ToString(symbolic::Mul(buffer.numel, item)), " bytes");
    if (known.has_value()) return fail(message);
    // Other views derive their layouts from an in-bounds base with
    // arguments their meta functions checked (a data-dependent slice is
    // clamped); these take positions nothing clamps.
    const std::string& op = n.op() != nullptr ? n.op()->schema.name : "";
    if (absl::StartsWith(op, "as_strided") || absl::StartsWith(op, "select") ||
        absl::StartsWith(op, "narrow")) {
      EmitAssert(cond, absl::StrCat("node '", n.name(), "': ", message));
    }
    return absl::OkStatus();
  }

  // A host step per size of `meta` over symbols read from data (x.item()):
  // a negative one stops the program, as the interpreter's meta functions
  // refuse it (the ranges the ShapeEnv gives such a size assume it is one).
  void CheckDataDependentSizes(const Node& n, const ir::ValueMeta& meta) {
    if (meta.kind == ir::ValueMeta::Kind::kTuple) {
      for (const ir::ValueMeta& e : meta.elements) {
        CheckDataDependentSizes(n, e);
      }
      return;
    }
    if (meta.kind != ir::ValueMeta::Kind::kTensor) return;
    for (Expr size : meta.tensor.sizes) {
      bool data_dependent = false;
      for (Expr s : symbolic::FreeSymbols(size)) {
        data_dependent |= read_from_data_.contains(s);
      }
      if (!data_dependent || !checked_sizes_.insert(size).second) continue;
      EmitAssert(symbolic::Ge(size, symbolic::Int(0)),
                 absl::StrCat("node '", n.name(), "': ", n.target(),
                              ": Trying to create tensor with negative "
                              "dimension ",
                              symbolic::ToString(size)));
    }
  }

  // Refuses node `n` taking (or making, when `result`) a tensor of more
  // elements than ir::MaxOpElements(), with the interpreter's message: at
  // compile time when that is decided, else, where the count is a product
  // of sizes (which no one input's size bounds), in the host function, which
  // multiplies in double so that it cannot overflow.
  absl::Status CheckElements(const Node& n, const TensorMeta& m, bool result) {
    const int64_t limit = ir::MaxOpElements();
    Expr numel = symbolic::Int(1);
    std::vector<Expr> factors;
    int symbolic_sizes = 0;
    bool from_data = false;
    int64_t constant = 1;  // the product of the constant sizes, up to 2^40
    for (Expr size : m.sizes) {
      numel = symbolic::Mul(numel, size);
      factors.push_back(symbolic::ToFloat(size));
      if (size.kind() == symbolic::ExprKind::kInteger) {
        constant = std::min<int64_t>(
            int64_t{1} << 40,
            constant * std::min<int64_t>(size.int_value(), int64_t{1} << 40));
        continue;
      }
      ++symbolic_sizes;
      for (Expr s : symbolic::FreeSymbols(size)) {
        from_data |= read_from_data_.contains(s);
      }
    }
    std::string message = absl::StrCat(
        "node '", n.name(), "': ",
        ir::TooManyElements(n.target(), result, numel, m.dtype, m.sizes));
    std::optional<Expr> over =
        env_.MaybeEvaluateStatic(symbolic::Gt(numel, symbolic::Int(limit)));
    if (over == symbolic::Bool(true)) {
      return absl::InvalidArgumentError(message);
    }
    // One symbolic size is an input's (which holds that many elements
    // already) or an int read from data (int32's range, which only a large
    // constant factor takes past the limit).
    bool may_exceed =
        symbolic_sizes >= 2 || (from_data && constant > (limit >> 31));
    if (over.has_value() || !may_exceed ||
        !checked_numels_.insert(numel).second) {
      return absl::OkStatus();
    }
    EmitAssert(symbolic::Le(symbolic::Mul(factors),
                            symbolic::Float(static_cast<double>(limit))),
               message);
    return absl::OkStatus();
  }

  // An int argument that is a literal or a symbolic number.
  absl::StatusOr<Expr> IntExpr(const Call& c, int i) {
    const Bound& b = c.at(i);
    if (b.arg != nullptr && b.arg->kind == Arg::Kind::kNode) {
      const NodeValue& v = values_.at(b.arg->node);
      if (v.kind == NodeValue::Kind::kNumber && v.number.is_int()) {
        return v.number;
      }
    } else {
      absl::StatusOr<int64_t> v = c.Int(i);
      if (v.ok()) return symbolic::Int(*v);
    }
    return c.Error(absl::StrCat("argument ", i, " is not an int"));
  }

  // Whether some op writes storage `s`.
  bool Mutated(ir::StorageId s) const { return mutated_.contains(s); }
  absl::flat_hash_map<ir::StorageId, int>& storage_buffer() {
    return storage_buffer_;
  }
  NodeValue& value(const Node* n) { return values_.at(n); }

 private:
  absl::Status LowerNode(const Node& n);
  absl::StatusOr<NodeValue> LowerItem(const Node& n);
  absl::Status BindSliceLength(const Call& c);

  // A buffer for the next input (a placeholder, or a constant when `out`
  // is null), and its value.
  TBox AddInput(const TensorMeta& m, LoweredGraph* out) {
    Buffer b;
    b.kind = Buffer::Kind::kInput;
    b.dtype = m.dtype;
    b.input = num_inputs_++;
    b.name = absl::StrCat("in", b.input);
    b.numel = StorageNumel(m.sizes, m.strides, symbolic::Int(0));
    program_.buffers.push_back(b);
    int id = static_cast<int>(program_.buffers.size()) - 1;
    base_offsets_.push_back(m.storage_offset);
    (out != nullptr ? out->input_buffers : constant_buffers_).push_back(id);
    if (!storage_buffer_.contains(m.storage)) storage_buffer_[m.storage] = id;
    return FromStorage(storage_buffer_[m.storage], m);
  }

  const ir::Graph& graph_;
  symbolic::ShapeEnv& env_;
  Program program_;
  const Node* current_ = nullptr;  // the node whose kernels are being emitted
  absl::flat_hash_map<std::string, int64_t> check_ids_;
  // The data-dependent sizes and the element counts host steps check
  // (CheckDataDependentSizes, CheckElements).
  absl::flat_hash_set<Expr> checked_sizes_, checked_numels_;
  // Node-based: lowering functions hold references to metas while asking
  // for others.
  absl::node_hash_map<const Node*, ir::ValueMeta> metas_;
  absl::flat_hash_map<const Node*, NodeValue> values_;
  absl::flat_hash_map<const Node*, int> remaining_;
  absl::flat_hash_map<ir::StorageId, int> storage_buffer_;
  absl::flat_hash_set<ir::StorageId> mutated_;
  absl::flat_hash_set<Expr> symbol_set_;
  absl::flat_hash_set<Expr> bound_;  // data-dependent symbols bound so far
  absl::flat_hash_set<Expr> read_from_data_;  // those of bound_ read from a
                                              // buffer (x.item())
  bool seeded_ = false;                       // a random op read the seed
  Expr draws_ = symbolic::Int(0);             // the next draw's counter
  std::vector<Expr> base_offsets_;
  int kernel_count_ = 0;
  int num_inputs_ = 0;                  // placeholders, then constants
  std::vector<std::string> constants_;  // by input number - placeholders
  std::vector<int> constant_buffers_;
};

// ---- Lowering functions
// ------------------------------------------------------------

// Promotion of the pointwise op's operands: the meta says the result dtype;
// comparisons compute in the promoted operands' type.
absl::StatusOr<DType> OperandsType(Lowerer& L, const Call& c,
                                   const std::vector<int>& operands) {
  std::vector<ir::Value> vals;
  for (int i : operands) {
    const Bound& b = c.at(i);
    if (b.arg != nullptr && b.arg->kind == Arg::Kind::kNode) {
      const ir::ValueMeta& m = L.Meta(b.arg->node);
      if (m.kind == ir::ValueMeta::Kind::kTensor) {
        vals.push_back(ir::Value::OfMeta(m.tensor));
      } else if (m.kind == ir::ValueMeta::Kind::kSym) {
        vals.push_back(ir::Value::Number(m.sym));
      }
    } else if (b.arg != nullptr && b.arg->kind == Arg::Kind::kInt) {
      vals.push_back(ir::Value::Int(b.arg->i));
    } else if (b.arg != nullptr && b.arg->kind == Arg::Kind::kFloat) {
      vals.push_back(ir::Value::Float(b.arg->f));
    } else if (b.arg != nullptr && b.arg->kind == Arg::Kind::kBool) {
      vals.push_back(ir::Value::Bool(b.arg->b));
    }
  }
  return ir::ResultType(vals);
}

const TensorMeta& OutMeta(Lowerer& L, const Call& c) {
  return L.TMeta(&c.node());
}

// The metas of a call's two results (values and indices, output and total
// weight); `what` names them in the error when the call has not two.
absl::StatusOr<std::pair<const TensorMeta*, const TensorMeta*>> OutPair(
    Lowerer& L, const Call& c, absl::string_view what) {
  const ir::ValueMeta& vm = L.Meta(&c.node());
  if (vm.kind != ir::ValueMeta::Kind::kTuple || vm.elements.size() != 2) {
    return c.Error(absl::StrCat("expects ", what));
  }
  return std::make_pair(&vm.elements[0].tensor, &vm.elements[1].tensor);
}

NodeValue TensorValue(TBox t) {
  NodeValue v;
  v.kind = NodeValue::Kind::kTensor;
  v.t = std::move(t);
  return v;
}

NodeValue TupleValue(std::vector<NodeValue> elements) {
  NodeValue v;
  v.kind = NodeValue::Kind::kTuple;
  v.elements = std::move(elements);
  return v;
}

// fn(operands...) with the output dtype the meta gives.
LowerFn PointwiseFn(std::string fn, std::vector<int> operands,
                    bool compare = false) {
  return [fn, operands, compare](Lowerer& L,
                                 const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    DType compute = ComputeDType(m.dtype);
    if (compare || m.dtype == DType::kBool) {
      ASSIGN_OR_RETURN(DType common, OperandsType(L, c, operands));
      compute = ComputeDType(common);
    }
    const ScalarFn* f = FindScalarFn(fn);
    if (f->float_only && !IsFloatingPoint(compute)) compute = DType::kFloat32;
    std::vector<TBox> boxes;
    for (int i : operands) {
      ASSIGN_OR_RETURN(TBox b, L.Operand(c, i, compute));
      boxes.push_back(std::move(b));
    }
    return TensorValue(L.Pointwise(fn, boxes, compute, m.dtype, m.sizes));
  };
}

// self +- alpha * other.
LowerFn AddSubFn(std::string fn, bool reversed) {
  return
      [fn, reversed](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
        const TensorMeta& m = OutMeta(L, c);
        DType compute = ComputeDType(m.dtype);
        ASSIGN_OR_RETURN(TBox a, L.Operand(c, 0, compute));
        ASSIGN_OR_RETURN(TBox b, L.Operand(c, 1, compute));
        if (reversed) std::swap(a, b);
        int ai = c.Index("alpha");
        if (ai >= 0 && c.at(ai).arg != nullptr) {
          ASSIGN_OR_RETURN(TBox alpha, L.Operand(c, ai, compute));
          b = L.Pointwise("mul", {b, alpha}, compute, compute, b.sizes);
        }
        return TensorValue(L.Pointwise(fn, {a, b}, compute, m.dtype, m.sizes));
      };
}

absl::StatusOr<NodeValue> LowerDiv(Lowerer& L, const Call& c) {
  std::string fn = "truediv";
  int mi = c.Index("rounding_mode");
  if (mi >= 0) {
    ASSIGN_OR_RETURN(std::string mode, c.String("rounding_mode"));
    if (mode == "floor") fn = "floordiv";
    if (mode == "trunc") fn = "truncdiv";
  }
  if (absl::StartsWith(c.op().schema.name, "floor_divide")) fn = "floordiv";
  return PointwiseFn(fn, {0, 1})(L, c);
}

// where(cond, a, b) over the arguments at those positions (where: 0, 1, 2;
// masked_fill(self, mask, value): 1, 2, 0).
LowerFn WhereFn(int cond_arg, int a_arg, int b_arg) {
  return [=](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    DType compute = ComputeDType(m.dtype);
    ASSIGN_OR_RETURN(TBox cond, L.Operand(c, cond_arg, DType::kBool));
    ASSIGN_OR_RETURN(TBox a, L.Operand(c, a_arg, compute));
    ASSIGN_OR_RETURN(TBox b, L.Operand(c, b_arg, compute));
    return TensorValue(
        L.Pointwise("where", {cond, a, b}, compute, m.dtype, m.sizes));
  };
}

// f applied to each element of `t`, giving `to`.
TBox MapBox(const TBox& t, DType to,
            std::function<int(KernelBuilder&, int)> f) {
  TBox out = t;
  out.buffer = -1;
  out.dtype = to;
  TBox in = t;
  out.load = [in, f](KernelBuilder& kb,
                     const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(int v, in.load(kb, idx));
    return f(kb, v);
  };
  return out;
}

// `t` converted to `to` element by element.
TBox CastBox(const TBox& t, DType to) {
  if (t.dtype == to) return t;
  return MapBox(t, to,
                [to](KernelBuilder& kb, int v) { return kb.Cast(v, to); });
}

// What a mean does with a reduced sum: divides it by the count.
std::function<int(KernelBuilder&, int, Expr)> MeanOf(DType acc) {
  return [acc](KernelBuilder& kb, int v, Expr count) {
    return kb.Call("truediv", {v, kb.Cast(kb.Index(count), acc)}, acc);
  };
}

absl::StatusOr<NodeValue> LowerClamp(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType compute = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, compute));
  TBox t = x;
  std::string name = c.op().schema.name;
  auto apply = [&](absl::string_view arg, const char* fn) -> absl::Status {
    int i = c.Index(arg);
    if (i < 0 || c.at(i).is_none()) return absl::OkStatus();
    ASSIGN_OR_RETURN(TBox bound, L.Operand(c, i, compute));
    t = L.Pointwise(fn, {t, bound}, compute, compute, m.sizes);
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(apply("min", "maximum"));
  RETURN_IF_ERROR(apply("max", "minimum"));
  return TensorValue(CastBox(t, m.dtype));
}

// A cast of self to the meta's dtype (clone, _to_copy, convert_element_type,
// contiguous, ...): a loader; realized only when needed.
absl::StatusOr<NodeValue> LowerCopyLike(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  TBox t = x;
  t.buffer = -1;
  t.dtype = m.dtype;
  t.sizes = m.sizes;
  DType to = m.dtype;
  TBox in = x;
  t.load = [in, to](KernelBuilder& kb,
                    const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(int v, in.load(kb, idx));
    return kb.Cast(v, to);
  };
  return TensorValue(t);
}

// full / scalar_tensor / zeros / ones / *_like: a constant loader.
LowerFn FillFn(int value_arg, double fixed) {
  return [value_arg, fixed](Lowerer& L,
                            const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    TBox v;
    if (value_arg >= 0) {
      ASSIGN_OR_RETURN(v, L.Operand(c, value_arg, m.dtype));
    } else {
      v = L.NumberBox(symbolic::Float(fixed), m.dtype);
    }
    return TensorValue(CastBox(L.Broadcast(v, m.sizes), m.dtype));
  };
}

// arange(start, end, step) and prims.iota(length, start, step) as index
// arithmetic.
absl::StatusOr<NodeValue> LowerArange(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType compute = IsFloatingPoint(m.dtype) ? DType::kFloat64 : DType::kInt64;
  TBox start = L.NumberBox(symbolic::Int(0), compute);
  TBox step = L.NumberBox(symbolic::Int(1), compute);
  std::string overload = c.op().schema.overload;
  const bool iota = c.op().target == "prims.iota.default";
  if (overload == "start" || overload == "start_step" || iota) {
    ASSIGN_OR_RETURN(start, L.Operand(c, c.Index("start"), compute));
  }
  if (overload == "start_step" || iota) {
    ASSIGN_OR_RETURN(step, L.Operand(c, c.Index("step"), compute));
  }
  TBox t;
  t.dtype = m.dtype;
  t.sizes = m.sizes;
  DType out = m.dtype;
  t.load = [start, step, compute, out](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    int i = kb.Cast(kb.Index(idx[0]), compute);
    ASSIGN_OR_RETURN(int s0, start.load(kb, {}));
    ASSIGN_OR_RETURN(int s1, step.load(kb, {}));
    int v = kb.Call("add", {s0, kb.Call("mul", {i, s1}, compute)}, compute);
    return kb.Cast(v, out);
  };
  return TensorValue(t);
}

// Reductions over `dim` (an int list; None or [] = all dims).
LowerFn ReduceFn(ReduceKind kind, bool mean = false) {
  return [kind, mean](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
    const ir::ValueMeta& vm = L.Meta(&c.node());
    const TensorMeta& m = vm.kind == ir::ValueMeta::Kind::kTuple
                              ? vm.elements[0].tensor
                              : vm.tensor;
    int64_t rank = static_cast<int64_t>(x.sizes.size());
    std::vector<int64_t> dims;
    int di = c.Index("dim");
    if (di >= 0) {
      ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> d, c.IntList(di));
      if (d.has_value()) dims = *d;
    }
    if (dims.empty()) {
      for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    }
    for (int64_t& d : dims) d = d < 0 ? d + rank : d;
    if (rank == 0) {  // a 0-d reduction is the value itself
      NodeValue v;
      if (kind == ReduceKind::kArgMax || kind == ReduceKind::kArgMin) {
        return TensorValue(L.NumberBox(symbolic::Int(0), DType::kInt64));
      }
      ASSIGN_OR_RETURN(v, LowerCopyLike(L, c));
      return v;
    }
    DType acc = ComputeDType(m.dtype);
    if (kind == ReduceKind::kMax || kind == ReduceKind::kMin) {
      acc = ComputeDType(x.dtype);
    }
    ASSIGN_OR_RETURN(TBox out, L.Reduce(x, dims, kind, acc, m,
                                        mean ? MeanOf(acc) : nullptr));
    if (vm.kind != ir::ValueMeta::Kind::kTuple) return TensorValue(out);
    // max.dim / min.dim: (values, indices).
    ReduceKind arg =
        kind == ReduceKind::kMax ? ReduceKind::kArgMax : ReduceKind::kArgMin;
    ASSIGN_OR_RETURN(TBox idx, L.Reduce(x, dims, arg, DType::kInt64,
                                        vm.elements[1].tensor, nullptr));
    return TupleValue({TensorValue(out), TensorValue(idx)});
  };
}

absl::StatusOr<NodeValue> LowerMatmul(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  std::string name = c.op().schema.name;
  bool addmm = name == "addmm" || name == "baddbmm";
  int ai = addmm ? 1 : 0;
  ASSIGN_OR_RETURN(TBox a, L.Tensor(c, ai));
  ASSIGN_OR_RETURN(TBox b, L.Tensor(c, ai + 1));
  bool batched = a.sizes.size() == 3;
  if (m.dtype == DType::kFloat32 || m.dtype == DType::kFloat64) {
    ASSIGN_OR_RETURN(a, L.Realize(a, nullptr));
    ASSIGN_OR_RETURN(b, L.Realize(b, nullptr));
    std::vector<Expr> strides = Contiguous(m.sizes);
    int out = L.NewBuffer(m.dtype, Product(m.sizes));
    Expr zero = symbolic::Int(0);
    auto st = [&](const TBox& t, int d) {
      return batched ? t.strides[d] : (d == 0 ? zero : t.strides[d - 1]);
    };
    size_t r = batched ? 1 : 0;
    std::vector<Expr> args = {batched ? m.sizes[0] : symbolic::Int(1),
                              m.sizes[r],
                              m.sizes[r + 1],
                              a.sizes[r + 1],
                              a.offset,
                              st(a, 0),
                              st(a, 1),
                              st(a, 2),
                              b.offset,
                              st(b, 0),
                              st(b, 1),
                              st(b, 2),
                              zero,
                              batched ? strides[0] : zero,
                              strides[r],
                              strides[r + 1]};
    L.EmitExtern(m.dtype == DType::kFloat32 ? "sgemm" : "dgemm",
                 {out, a.buffer, b.buffer}, args);
    TBox prod = L.FromBuffer(out, m.dtype, m.sizes, strides, zero);
    if (!addmm) return TensorValue(prod);
    // beta * self + alpha * product, as a loader the epilogue fuses into.
    ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
    ASSIGN_OR_RETURN(TBox beta, L.Operand(c, c.Index("beta"), m.dtype));
    ASSIGN_OR_RETURN(TBox alpha, L.Operand(c, c.Index("alpha"), m.dtype));
    TBox sb = L.Pointwise("mul", {self, beta}, m.dtype, m.dtype, m.sizes);
    TBox pa = L.Pointwise("mul", {prod, alpha}, m.dtype, m.dtype, m.sizes);
    return TensorValue(L.Pointwise("add", {sb, pa}, m.dtype, m.dtype, m.sizes));
  }
  // Other dtypes: a sum-of-products reduction, computed in the opmath type.
  DType acc = ComputeDType(m.dtype);
  size_t r = batched ? 1 : 0;
  Expr k = a.sizes[r + 1];
  // prod[b, i, j, kk] = a[b, i, kk] * b[b, kk, j], reduced over kk.
  TBox p;
  p.dtype = acc;
  p.sizes = m.sizes;
  p.sizes.push_back(k);
  p.reads = a.reads;
  p.reads.insert(b.reads.begin(), b.reads.end());
  p.load = [a, b, acc, batched](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> ia, ib;
    if (batched) {
      ia = {idx[0], idx[1], idx[3]};
      ib = {idx[0], idx[3], idx[2]};
    } else {
      ia = {idx[0], idx[2]};
      ib = {idx[2], idx[1]};
    }
    ASSIGN_OR_RETURN(int va, a.load(kb, ia));
    ASSIGN_OR_RETURN(int vb, b.load(kb, ib));
    return kb.Call("mul", {kb.Cast(va, acc), kb.Cast(vb, acc)}, acc);
  };
  ASSIGN_OR_RETURN(TBox prod,
                   L.Reduce(p, {static_cast<int64_t>(p.sizes.size()) - 1},
                            ReduceKind::kSum, acc, m, nullptr));
  if (!addmm) return TensorValue(prod);
  ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox beta, L.Operand(c, c.Index("beta"), acc));
  ASSIGN_OR_RETURN(TBox alpha, L.Operand(c, c.Index("alpha"), acc));
  TBox sb = L.Pointwise("mul", {self, beta}, acc, acc, m.sizes);
  TBox pa = L.Pointwise("mul", {prod, alpha}, acc, acc, m.sizes);
  return TensorValue(L.Pointwise("add", {sb, pa}, acc, m.dtype, m.sizes));
}

// `in` read in row-major order as a tensor of `sizes` (view/reshape of a
// value that is not in memory).
TBox ReshapeLoader(const TBox& in, std::vector<Expr> sizes) {
  TBox t = in;
  t.buffer = -1;
  t.sizes = sizes;
  t.load = [in, sizes](KernelBuilder& kb,
                       const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    Expr lin = Linear(idx, Contiguous(sizes), symbolic::Int(0));
    std::vector<Expr> st = Contiguous(in.sizes);
    std::vector<Expr> sub;
    for (size_t d = 0; d < in.sizes.size(); ++d) {
      if (IsOne(in.sizes[d])) {
        sub.push_back(symbolic::Int(0));
        continue;
      }
      ASSIGN_OR_RETURN(Expr e,
                       symbolic::ModularIndexing(lin, st[d], in.sizes[d]));
      sub.push_back(e);
    }
    return in.load(kb, sub);
  };
  return t;
}

// `in` with its dims permuted: result dim d is in's dim perm[d].
TBox PermuteLoader(const TBox& in, std::vector<int64_t> perm,
                   std::vector<Expr> sizes) {
  TBox t = in;
  t.buffer = -1;
  t.sizes = sizes;
  t.load = [in, perm](KernelBuilder& kb,
                      const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> sub(idx.size());
    for (size_t d = 0; d < perm.size(); ++d) sub[perm[d]] = idx[d];
    return in.load(kb, sub);
  };
  return t;
}

// The view `m` of in-memory `b` (the value of `base`): index arithmetic over
// the view's meta.
absl::StatusOr<TBox> ViewLayoutOfBuffer(Lowerer& L, const Call& c,
                                        const Node* base, const TBox& b,
                                        const TensorMeta& m) {
  auto it = L.storage_buffer().find(m.storage);
  if (it != L.storage_buffer().end() && it->second == b.buffer) {
    return L.FromStorage(b.buffer, m);
  }
  // The base's buffer does not hold the view's storage coordinates (a
  // realized view of a loader): translate through the base's own meta.
  const TensorMeta& bm = L.TMeta(base);
  Expr delta = symbolic::Sub(b.offset, bm.storage_offset);
  if (b.strides == bm.strides) {
    return L.FromBuffer(b.buffer, m.dtype, m.sizes, m.strides,
                        symbolic::Add(m.storage_offset, delta));
  }
  if (L.Mutated(m.storage)) {
    // A copy would not alias the storage the program writes.
    return c.Error("a view of a value whose layout differs from its meta");
  }
  // The base is in memory in another layout than its meta's (a value
  // realized before its view was known): a copy of it in the meta's
  // layout, which the view's meta then indexes.
  TBox loader = b;
  loader.buffer = -1;
  ASSIGN_OR_RETURN(TBox copy, L.Realize(loader, &bm));
  return L.FromBuffer(copy.buffer, m.dtype, m.sizes, m.strides,
                      m.storage_offset);
}

// The view `m` of in-memory `b` (the value of `base`): index arithmetic over
// the view's meta, refused where it reaches outside the buffer (as_strided
// may ask for any layout).
absl::StatusOr<TBox> ViewOfBuffer(Lowerer& L, const Call& c, const Node* base,
                                  const TBox& b, const TensorMeta& m) {
  ASSIGN_OR_RETURN(TBox t, ViewLayoutOfBuffer(L, c, base, b, m));
  RETURN_IF_ERROR(
      L.CheckViewInBuffer(c.node(), t.buffer, t.sizes, t.strides, t.offset));
  return t;
}

// A view op: index arithmetic over the view's meta when the base is in
// memory; otherwise a few structural views compose with the base's loader,
// and the rest realize the base first. Ops returning several views (split,
// unbind, ...) give a tuple of them.
absl::StatusOr<NodeValue> LowerView(Lowerer& L, const Call& c) {
  const ir::ValueMeta& vm = L.Meta(&c.node());
  Node* base = c.NodeAt(0);
  if (base == nullptr) return c.Error("the viewed argument is not a tensor");
  TBox b = L.value(base).t;
  std::string name = c.op().schema.name;
  if (ir::MutatesMetadata(c.node())) name.pop_back();  // t_ views as t
  if (vm.kind == ir::ValueMeta::Kind::kTuple) {
    RETURN_IF_ERROR(L.RealizeNode(base));
    b = L.value(base).t;
    std::vector<NodeValue> pieces;
    for (const ir::ValueMeta& e : vm.elements) {
      if (e.kind != ir::ValueMeta::Kind::kTensor) {
        return c.Error("a view op result that is not a tensor");
      }
      ASSIGN_OR_RETURN(TBox t, ViewOfBuffer(L, c, base, b, e.tensor));
      pieces.push_back(TensorValue(std::move(t)));
    }
    return TupleValue(std::move(pieces));
  }
  const TensorMeta& m = vm.tensor;
  if (b.buffer < 0) {
    if (name == "expand" || name == "expand_copy") {
      return TensorValue(L.Broadcast(b, m.sizes));
    }
    int64_t rank = static_cast<int64_t>(b.sizes.size());
    if (name == "permute") {
      ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> p, c.IntList(1));
      std::vector<int64_t> perm = *p;
      for (int64_t& d : perm) d = d < 0 ? d + rank : d;
      return TensorValue(PermuteLoader(b, perm, m.sizes));
    }
    if (name == "transpose" || name == "t") {
      std::vector<int64_t> perm;
      for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
      int64_t d0 = 0, d1 = 1;
      if (name == "transpose") {
        ASSIGN_OR_RETURN(d0, c.Int(1));
        ASSIGN_OR_RETURN(d1, c.Int(2));
      }
      if (d0 < 0) d0 += rank;
      if (d1 < 0) d1 += rank;
      if (rank >= 2) std::swap(perm[d0], perm[d1]);
      return TensorValue(PermuteLoader(b, perm, m.sizes));
    }
    if (name == "unsqueeze" || name == "squeeze" || name == "view" ||
        name == "reshape" || name == "_unsafe_view" || name == "alias") {
      return TensorValue(ReshapeLoader(b, m.sizes));
    }
    RETURN_IF_ERROR(L.RealizeNode(base));
    b = L.value(base).t;
  }
  ASSIGN_OR_RETURN(TBox t, ViewOfBuffer(L, c, base, b, m));
  return TensorValue(std::move(t));
}

// _unsafe_view (a reshape that PyTorch does not count as a view): the
// buffer reread when it is contiguous, else the row-major loader.
absl::StatusOr<NodeValue> LowerUnsafeView(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  if (x.buffer >= 0 && x.strides == Contiguous(x.sizes)) {
    return TensorValue(L.FromBuffer(x.buffer, m.dtype, m.sizes,
                                    Contiguous(m.sizes), x.offset));
  }
  return TensorValue(ReshapeLoader(x, m.sizes));
}

// copy(self, src): src broadcast to self's sizes in self's dtype.
absl::StatusOr<NodeValue> LowerCopy(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox src, L.Operand(c, 1, m.dtype));
  return TensorValue(CastBox(L.Broadcast(src, m.sizes), m.dtype));
}

// scatter(self, src, *args): a copy of self (laid out as the result's meta)
// with src stored where view(result, *args) sees; the view's layout comes
// from the paired view op's meta function.
absl::StatusOr<NodeValue> LowerScatter(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  const OpDef* view = ir::OpRegistry::Global().Find(c.op().scattered_view);
  if (view == nullptr) return c.Error("no paired view op");
  std::vector<ir::Value> positional = {ir::Value::OfMeta(m)};
  absl::flat_hash_map<const Node*, ir::Value> env;
  for (const Node* in : c.node().Inputs()) {
    env[in] = ir::ValueOfMeta(L.Meta(in));
  }
  for (size_t i = 2; i < c.node().args().size(); ++i) {
    ASSIGN_OR_RETURN(ir::Value v, ir::ArgValue(c.node().args()[i], env));
    positional.push_back(std::move(v));
  }
  std::vector<std::pair<std::string, ir::Value>> kwargs;
  for (const auto& [name, a] : c.node().kwargs()) {
    ASSIGN_OR_RETURN(ir::Value v, ir::ArgValue(a, env));
    kwargs.emplace_back(name, std::move(v));
  }
  ASSIGN_OR_RETURN(std::vector<ir::Value> bound,
                   ir::BindArguments(view->schema, std::move(positional),
                                     std::move(kwargs), view->target));
  ir::OpCall call(*view, std::move(bound), &L.env());
  ASSIGN_OR_RETURN(ir::Value vm, view->meta(call));
  if (!vm.is_tensor()) return c.Error("the paired view is not a tensor");
  TensorMeta region =
      ir::ApplyReplacements(ir::ValueMeta::Tensor(vm.meta), L.env()).tensor;
  ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox src, L.Tensor(c, 1));
  TBox fresh = CastBox(self, m.dtype);
  fresh.buffer = -1;  // a new copy, never self's memory
  ASSIGN_OR_RETURN(TBox out, L.Realize(fresh, &m));
  RETURN_IF_ERROR(L.CheckViewInBuffer(c.node(), out.buffer, region.sizes,
                                      region.strides, region.storage_offset));
  TBox dst = L.FromBuffer(out.buffer, m.dtype, region.sizes, region.strides,
                          region.storage_offset);
  RETURN_IF_ERROR(L.WriteInto(&c.node(), dst, CastBox(src, m.dtype)));
  return TensorValue(out);
}

// ---- Composite pointwise ops
// -------------------------------------------------------

// A number argument (Scalar or float); nullopt when None.
absl::StatusOr<std::optional<double>> NumberArg(const Call& c,
                                                absl::string_view name) {
  int i = c.Index(name);
  if (i < 0 || c.at(i).is_none()) return std::nullopt;
  const Bound& b = c.at(i);
  if (b.arg != nullptr) {
    if (b.arg->kind == Arg::Kind::kFloat) return b.arg->f;
    if (b.arg->kind == Arg::Kind::kInt) return static_cast<double>(b.arg->i);
    if (b.arg->kind == Arg::Kind::kBool) return b.arg->b ? 1.0 : 0.0;
    return c.Error(absl::StrCat("argument '", name, "' is not a known number"));
  }
  if (b.def->kind == ir::DefaultValue::Kind::kFloat) return b.def->float_value;
  if (b.def->kind == ir::DefaultValue::Kind::kInt) {
    return static_cast<double>(b.def->int_value);
  }
  return c.Error(absl::StrCat("argument '", name, "' has no number default"));
}

// ---- Random ops --------------------------------------------------------
//
// The interpreter's numbers (ir/ops_creation.cc): each op reserves its
// draws of the call's stream (Lowerer::ReserveDraws) in graph order, and
// element i in row-major order takes draw first + i (randn: first + 2i and
// the next), a pure function of the seed and the counter, so any loop order
// or thread gives the same values.

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

// Pointwise expressions over boxes broadcast to one result's sizes, computed
// in one dtype.
class Expression {
 public:
  Expression(Lowerer& L, DType compute, std::vector<Expr> sizes)
      : L_(L), compute_(compute), sizes_(std::move(sizes)) {}
  TBox operator()(const std::string& fn, std::vector<TBox> args) {
    DType out = FindScalarFn(fn)->bool_result ? DType::kBool : compute_;
    return L_.Pointwise(fn, std::move(args), compute_, out, sizes_);
  }
  TBox Number(double v) { return L_.NumberBox(symbolic::Float(v), compute_); }
  DType compute() const { return compute_; }

 private:
  Lowerer& L_;
  DType compute_;
  std::vector<Expr> sizes_;
};

// An activation over self with the given number arguments, built by `f`.
using ActivationBody =
    std::function<TBox(Expression&, TBox x, const std::vector<double>& args)>;
LowerFn ActivationFn(std::vector<std::string> arg_names, ActivationBody f) {
  return
      [arg_names, f](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
        const TensorMeta& m = OutMeta(L, c);
        DType compute = ComputeDType(m.dtype);
        if (!IsFloatingPoint(compute)) compute = DType::kFloat32;
        std::vector<double> args;
        for (const std::string& a : arg_names) {
          ASSIGN_OR_RETURN(std::optional<double> v, NumberArg(c, a));
          if (!v.has_value()) return c.Error(absl::StrCat("'", a, "' is None"));
          args.push_back(*v);
        }
        ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, compute));
        Expression e(L, compute, m.sizes);
        return TensorValue(CastBox(f(e, x, args), m.dtype));
      };
}

void AddActivations(absl::flat_hash_map<std::string, LowerFn>& T) {
  // x > 0 ? x : x * negative_slope
  T["aten.leaky_relu.default"] =
      ActivationFn({"negative_slope"}, [](Expression& e, TBox x, auto& a) {
        return e("where",
                 {e("gt", {x, e.Number(0)}), x, e("mul", {x, e.Number(a[0])})});
      });
  T["aten.hardtanh.default"] =
      ActivationFn({"min_val", "max_val"}, [](Expression& e, TBox x, auto& a) {
        return e("minimum",
                 {e("maximum", {x, e.Number(a[0])}), e.Number(a[1])});
      });
  // x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale
  T["aten.elu.default"] = ActivationFn(
      {"alpha", "scale", "input_scale"}, [](Expression& e, TBox x, auto& a) {
        TBox neg = e("mul", {e("expm1", {e("mul", {x, e.Number(a[2])})}),
                             e.Number(a[0] * a[1])});
        return e("where", {e("gt", {x, e.Number(0)}),
                           e("mul", {x, e.Number(a[1])}), neg});
      });
  // x * beta > threshold ? x : log1p(exp(x * beta)) / beta
  T["aten.softplus.default"] =
      ActivationFn({"beta", "threshold"}, [](Expression& e, TBox x, auto& a) {
        TBox xb = e("mul", {x, e.Number(a[0])});
        TBox soft =
            e("truediv", {e("log1p", {e("exp", {xb})}), e.Number(a[0])});
        return e("where", {e("gt", {xb, e.Number(a[1])}), x, soft});
      });
  // min(max(x + 3, 0), 6) / 6, and x times it.
  auto hardsigmoid = [](Expression& e, TBox x) {
    TBox r = e("maximum", {e("add", {x, e.Number(3)}), e.Number(0)});
    return e("truediv", {e("minimum", {r, e.Number(6)}), e.Number(6)});
  };
  T["aten.hardsigmoid.default"] =
      ActivationFn({}, [hardsigmoid](Expression& e, TBox x, auto&) {
        return hardsigmoid(e, x);
      });
  T["aten.hardswish.default"] =
      ActivationFn({}, [hardsigmoid](Expression& e, TBox x, auto&) {
        return e("mul", {x, hardsigmoid(e, x)});
      });
  T["aten.mish.default"] = ActivationFn({}, [](Expression& e, TBox x, auto&) {
    TBox sp = e("log1p", {e("exp", {x})});
    return e("mul", {x, e("tanh", {sp})});
  });
  T["aten.logit.default"] = ActivationFn({}, [](Expression& e, TBox x, auto&) {
    return e("log", {e("truediv", {x, e("sub", {e.Number(1), x})})});
  });
}

// nan_to_num(self, nan, posinf, neginf): NaN and infinities replaced; the
// infinities by the dtype's largest finite values unless given.
absl::StatusOr<NodeValue> LowerNanToNum(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  if (!IsFloatingPoint(m.dtype)) return LowerCopyLike(L, c);
  double big = MaxFinite(m.dtype);
  ASSIGN_OR_RETURN(std::optional<double> nan, NumberArg(c, "nan"));
  ASSIGN_OR_RETURN(std::optional<double> posinf, NumberArg(c, "posinf"));
  ASSIGN_OR_RETURN(std::optional<double> neginf, NumberArg(c, "neginf"));
  DType compute = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, compute));
  Expression e(L, compute, m.sizes);
  TBox inf = e("isinf", {x});
  TBox r = e("where", {e("logical_and", {inf, e("gt", {x, e.Number(0)})}),
                       e.Number(posinf.value_or(big)), x});
  r = e("where", {e("logical_and", {inf, e("lt", {x, e.Number(0)})}),
                  e.Number(neginf.value_or(-big)), r});
  r = e("where", {e("isnan", {x}), e.Number(nan.value_or(0)), r});
  return TensorValue(CastBox(r, m.dtype));
}

// round.decimals: round(x * 10^d) / 10^d, or round(x / 10^-d) * 10^-d for
// d <= 0, half to even, in float (double for f64) as PyTorch computes it.
absl::StatusOr<NodeValue> LowerRoundDecimals(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  if (!IsFloatingPoint(m.dtype)) {
    return c.Error("expects a floating-point input");
  }
  ASSIGN_OR_RETURN(int64_t decimals, c.Int("decimals"));
  DType compute = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, compute));
  Expression e(L, compute, m.sizes);
  double ten = std::pow(10.0, static_cast<double>(std::abs(decimals)));
  if (compute != DType::kFloat64) ten = static_cast<float>(ten);
  TBox r = decimals > 0
               ? e("truediv",
                   {e("round", {e("mul", {x, e.Number(ten)})}), e.Number(ten)})
               : e("mul", {e("round", {e("truediv", {x, e.Number(ten)})}),
                           e.Number(ten)});
  return TensorValue(CastBox(r, m.dtype));
}

// prims.fma(a, b, c): a * b + c.
absl::StatusOr<NodeValue> LowerFma(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType compute = ComputeDType(m.dtype);
  std::vector<TBox> x;
  for (int i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(TBox t, L.Operand(c, i, compute));
    x.push_back(std::move(t));
  }
  Expression e(L, compute, m.sizes);
  return TensorValue(
      CastBox(e("add", {e("mul", {x[0], x[1]}), x[2]}), m.dtype));
}

// ---- Index remapping: triangles, flips, pads, repeats
// ----------------------------------------

// A loader over `sizes` reading `in` at map(idx) (which must stay inside
// in's sizes), optionally masked: where `valid(idx)` is false the value is
// `fill`.
using IndexMap =
    std::function<absl::StatusOr<std::vector<Expr>>(const std::vector<Expr>&)>;
using IndexMask = std::function<int(KernelBuilder&, const std::vector<Expr>&)>;
TBox Remap(const TBox& in, std::vector<Expr> sizes, IndexMap map,
           IndexMask valid = nullptr, double fill = 0) {
  TBox t = in;
  t.buffer = -1;
  t.sizes = std::move(sizes);
  t.cost = in.cost + (valid ? 4 : 0);
  DType compute = ComputeDType(in.dtype);
  DType dtype = in.dtype;
  t.load = [in, map, valid, fill, compute, dtype](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(std::vector<Expr> sub, map(idx));
    ASSIGN_OR_RETURN(int v, in.load(kb, sub));
    if (!valid) return v;
    int keep = valid(kb, idx);
    int w = kb.Call("where",
                    {keep, kb.Cast(v, compute), kb.Constant(fill, compute)},
                    compute);
    return kb.Cast(w, dtype);
  };
  return t;
}

// upsample_nearest2d(self, output_size, scales_h, scales_w) and its .vec
// overload (input, output_size, scale_factors): each output element reads
// the input at PyTorch's nearest index per spatial dim (ir/ops_nn.cc's
// NearestIndex: floor(o * s) in float, s = 1 / scale or in / out, at most
// in - 1). The spatial sizes are static, so that index is worked out for
// every o at compile time and expressed as FloorDiv(o * a, b) (a / b = in /
// out, or the scale's inverse as a fraction) when that quotient gives it
// for every o; otherwise (a float rounding or a clamp no quotient makes)
// the op is refused.
absl::StatusOr<NodeValue> LowerUpsampleNearest(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  if (x.sizes.size() != 4 || m.sizes.size() != 4) {
    return c.Error("expects a 4-d input");
  }
  double scale[2] = {0, 0};
  if (c.Index("scale_factors") >= 0) {
    const Bound& b = c.at(c.Index("scale_factors"));
    if (!b.is_none() && b.arg != nullptr && b.arg->kind == Arg::Kind::kList &&
        b.arg->list.size() == 2) {
      for (int d = 0; d < 2; ++d) {
        const Arg& e = b.arg->list[d];
        if (e.kind == Arg::Kind::kFloat) {
          scale[d] = e.f;
        } else if (e.kind == Arg::Kind::kInt) {
          scale[d] = static_cast<double>(e.i);
        } else {
          return c.Error("a scale factor that is not a known number");
        }
      }
    } else if (!b.is_none()) {
      return c.Error("scale_factors is not a list of two numbers");
    }
  } else {
    int d = 0;
    for (const char* name : {"scales_h", "scales_w"}) {
      ASSIGN_OR_RETURN(std::optional<double> v, NumberArg(c, name));
      if (v.has_value()) scale[d] = *v;
      ++d;
    }
  }
  int64_t frac[2][2] = {{0, 0}, {0, 0}};  // per dim: o * a // b
  for (int d = 0; d < 2; ++d) {
    Expr in_e = x.sizes[2 + d], out_e = m.sizes[2 + d];
    if (in_e.kind() != symbolic::ExprKind::kInteger ||
        out_e.kind() != symbolic::ExprKind::kInteger) {
      return c.Error("expects static spatial sizes");
    }
    const int64_t in = in_e.int_value(), out = out_e.int_value();
    auto nearest = [&](int64_t o) -> int64_t {  // PyTorch's, in float
      if (out == in) return o;
      if (out == 2 * in) return o >> 1;
      float s = scale[d] > 0 ? static_cast<float>(1.0 / scale[d])
                             : static_cast<float>(in) / static_cast<float>(out);
      return std::min(
          static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
    };
    std::vector<std::pair<int64_t, int64_t>> fractions = {{in, out}};
    if (scale[d] > 0) {
      for (int64_t q = 1; q <= 64; ++q) {
        double p = std::round(q / scale[d]);
        if (std::abs(p / q - 1 / scale[d]) < 1e-9) {
          fractions.push_back({static_cast<int64_t>(p), q});
          break;
        }
      }
    }
    for (const auto& [a, b] : fractions) {
      bool all = true;
      for (int64_t o = 0; o < out && all; ++o) {
        all = (o * a) / b == nearest(o);  // in range: nearest's is
      }
      if (!all) continue;
      frac[d][0] = a;
      frac[d][1] = b;
      break;
    }
    if (frac[d][1] == 0) {
      return c.Error("a nearest index that no integer quotient gives");
    }
  }
  return TensorValue(Remap(
      x, m.sizes,
      [a0 = frac[0][0], b0 = frac[0][1], a1 = frac[1][0], b1 = frac[1][1]](
          const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        ASSIGN_OR_RETURN(
            Expr h, symbolic::FloorDiv(symbolic::Mul(idx[2], symbolic::Int(a0)),
                                       symbolic::Int(b0)));
        ASSIGN_OR_RETURN(
            Expr w, symbolic::FloorDiv(symbolic::Mul(idx[3], symbolic::Int(a1)),
                                       symbolic::Int(b1)));
        return std::vector<Expr>{idx[0], idx[1], h, w};
      }));
}

// The bool `lo <= e < hi`.
int InRange(KernelBuilder& kb, Expr e, Expr lo, Expr hi) {
  int v = kb.Index(e);
  int a = kb.Call("ge", {v, kb.Index(lo)}, DType::kBool);
  int b = kb.Call("lt", {v, kb.Index(hi)}, DType::kBool);
  return kb.Call("logical_and", {a, b}, DType::kBool);
}

// e clamped into [0, size - 1].
Expr ClampIndex(Expr e, Expr size) {
  return symbolic::Max(
      {symbolic::Int(0),
       symbolic::Min({e, symbolic::Sub(size, symbolic::Int(1))})});
}

Expr AbsIndex(Expr e) { return symbolic::Max({e, symbolic::Neg(e)}); }

// tril / triu(self, diagonal): elements off the triangle are 0.
LowerFn TriangleFn(bool lower) {
  return [lower](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
    ASSIGN_OR_RETURN(int64_t diagonal, c.Int("diagonal"));
    size_t n = x.sizes.size();
    if (n < 2) return c.Error("needs at least 2 dims");
    auto identity =
        [](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
      return idx;
    };
    auto keep = [lower, diagonal, n](KernelBuilder& kb,
                                     const std::vector<Expr>& idx) {
      int d = kb.Index(symbolic::Sub(idx[n - 1], idx[n - 2]));
      return kb.Call(lower ? "le" : "ge",
                     {d, kb.IntConstant(diagonal, DType::kInt64)},
                     DType::kBool);
    };
    return TensorValue(Remap(x, x.sizes, identity, keep, 0));
  };
}

absl::StatusOr<NodeValue> LowerFlip(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, c.IntList(1));
  int64_t rank = static_cast<int64_t>(x.sizes.size());
  std::vector<bool> flip(rank, false);
  for (int64_t d : dims.value_or(std::vector<int64_t>{})) {
    flip[d < 0 ? d + rank : d] = true;
  }
  std::vector<Expr> sizes = x.sizes;
  return TensorValue(Remap(
      x, sizes,
      [flip, sizes](
          const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        std::vector<Expr> sub = idx;
        for (size_t d = 0; d < idx.size(); ++d) {
          if (flip[d]) {
            sub[d] = symbolic::Sub(symbolic::Sub(sizes[d], symbolic::Int(1)),
                                   idx[d]);
          }
        }
        return sub;
      }));
}

// roll(self, shifts, dims): with no dims, the flattened tensor rolls.
absl::StatusOr<NodeValue> LowerRoll(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> shifts, c.IntList(1));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims,
                   c.IntList(c.Index("dims")));
  std::vector<int64_t> dl = dims.value_or(std::vector<int64_t>{});
  std::vector<int64_t> sl = shifts.value_or(std::vector<int64_t>{});
  TBox in = x;
  if (dl.empty()) {  // flatten, roll, restore
    if (sl.size() != 1) return c.Error("expects one shift without dims");
    in = ReshapeLoader(x, {Product(x.sizes)});
    dl = {0};
  }
  if (dl.size() != sl.size()) return c.Error("shifts and dims differ in size");
  int64_t rank = static_cast<int64_t>(in.sizes.size());
  std::vector<Expr> shift(rank, symbolic::Int(0));
  for (size_t k = 0; k < dl.size(); ++k) {
    int64_t d = dl[k] < 0 ? dl[k] + rank : dl[k];
    shift[d] = symbolic::Add(shift[d], symbolic::Int(sl[k]));
  }
  std::vector<Expr> sizes = in.sizes;
  TBox r = Remap(
      in, sizes,
      [shift, sizes](
          const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        std::vector<Expr> sub = idx;
        for (size_t d = 0; d < idx.size(); ++d) {
          if (shift[d] == symbolic::Int(0)) continue;
          // (i - shift) mod size, kept non-negative.
          ASSIGN_OR_RETURN(Expr s, symbolic::Mod(shift[d], sizes[d]));
          ASSIGN_OR_RETURN(
              sub[d],
              symbolic::Mod(symbolic::Add(symbolic::Sub(idx[d], s), sizes[d]),
                            sizes[d]));
        }
        return sub;
      });
  if (dims.value_or(std::vector<int64_t>{}).empty()) {
    r = ReshapeLoader(r, m.sizes);
  }
  return TensorValue(r);
}

// repeat(self, repeats): result index i reads self at i mod size.
absl::StatusOr<NodeValue> LowerRepeat(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  std::vector<Expr> in = x.sizes;
  return TensorValue(Remap(
      x, m.sizes,
      [in](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        size_t off = idx.size() - in.size();
        std::vector<Expr> sub;
        for (size_t d = 0; d < in.size(); ++d) {
          if (IsOne(in[d])) {
            sub.push_back(symbolic::Int(0));
            continue;
          }
          ASSIGN_OR_RETURN(Expr e, symbolic::Mod(idx[off + d], in[d]));
          sub.push_back(e);
        }
        return sub;
      }));
}

// The (left, right) padding of each dim from pad lists given from the last
// dim backwards ([l_last, r_last, l_prev, r_prev, ...]).
std::vector<std::pair<int64_t, int64_t>> PadsByDim(
    const std::vector<int64_t>& pad, size_t rank) {
  std::vector<std::pair<int64_t, int64_t>> out(rank, {0, 0});
  for (size_t k = 0; k < pad.size() && k / 2 < rank; k += 2) {
    size_t d = rank - 1 - k / 2;
    out[d] = {pad[k], k + 1 < pad.size() ? pad[k + 1] : 0};
  }
  return out;
}

// constant_pad_nd / reflection_pad / replication_pad.
enum class PadMode { kConstant, kReflect, kReplicate };
LowerFn PadFn(PadMode mode) {
  return [mode](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> pad, c.IntList(1));
    double value = 0;
    if (mode == PadMode::kConstant) {
      ASSIGN_OR_RETURN(std::optional<double> v, NumberArg(c, "value"));
      value = v.value_or(0);
    }
    auto pads = PadsByDim(pad.value_or(std::vector<int64_t>{}), x.sizes.size());
    std::vector<Expr> in = x.sizes;
    IndexMap map =
        [mode, pads, in](
            const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
      std::vector<Expr> sub = idx;
      for (size_t d = 0; d < idx.size(); ++d) {
        if (pads[d].first == 0 && pads[d].second == 0) continue;
        Expr i = symbolic::Sub(idx[d], symbolic::Int(pads[d].first));
        Expr last = symbolic::Sub(in[d], symbolic::Int(1));
        if (mode == PadMode::kReflect) {  // last - |last - |i||
          i = symbolic::Sub(last, AbsIndex(symbolic::Sub(last, AbsIndex(i))));
        }
        sub[d] = ClampIndex(i, in[d]);
      }
      return sub;
    };
    IndexMask valid = nullptr;
    if (mode == PadMode::kConstant) {
      valid = [pads, in](KernelBuilder& kb, const std::vector<Expr>& idx) {
        int keep = kb.Constant(1, DType::kBool);
        for (size_t d = 0; d < idx.size(); ++d) {
          if (pads[d].first <= 0 && pads[d].second <= 0) continue;
          Expr i = symbolic::Sub(idx[d], symbolic::Int(pads[d].first));
          keep = kb.Call("logical_and",
                         {keep, InRange(kb, i, symbolic::Int(0), in[d])},
                         DType::kBool);
        }
        return keep;
      };
    }
    return TensorValue(Remap(x, m.sizes, map, valid, value));
  };
}

// diag_embed(self, offset, dim1, dim2): self's last dim on a diagonal of
// two new dims, zeros elsewhere.
absl::StatusOr<NodeValue> LowerDiagEmbed(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(int64_t offset, c.Int("offset"));
  ASSIGN_OR_RETURN(int64_t dim1, c.Int("dim1"));
  ASSIGN_OR_RETURN(int64_t dim2, c.Int("dim2"));
  int64_t rank = static_cast<int64_t>(m.sizes.size());
  if (dim1 < 0) dim1 += rank;
  if (dim2 < 0) dim2 += rank;
  Expr n = x.sizes.back();
  IndexMap map =
      [=](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
    std::vector<Expr> sub;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != dim1 && d != dim2) sub.push_back(idx[d]);
    }
    sub.push_back(ClampIndex(offset >= 0 ? idx[dim1] : idx[dim2], n));
    return sub;
  };
  IndexMask on_diagonal = [=](KernelBuilder& kb, const std::vector<Expr>& idx) {
    int d = kb.Index(symbolic::Sub(idx[dim2], idx[dim1]));
    return kb.Call("eq", {d, kb.IntConstant(offset, DType::kInt64)},
                   DType::kBool);
  };
  return TensorValue(Remap(x, m.sizes, map, on_diagonal, 0));
}

// linspace(start, end, steps) as PyTorch's CPU kernel computes it: from
// start for the first half, from end for the second.
absl::StatusOr<NodeValue> LowerLinspace(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(std::optional<double> start, NumberArg(c, "start"));
  ASSIGN_OR_RETURN(std::optional<double> end, NumberArg(c, "end"));
  ASSIGN_OR_RETURN(int64_t steps, c.Int("steps"));
  if (!start.has_value() || !end.has_value()) {
    return c.Error("start and end must be known numbers");
  }
  double a = *start, b = *end;
  double step = steps > 1 ? (b - a) / static_cast<double>(steps - 1) : 0;
  int64_t half = steps / 2;
  DType out = m.dtype;
  TBox t;
  t.dtype = out;
  t.sizes = m.sizes;
  t.load = [=](KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    DType f = DType::kFloat64;
    int i = kb.Cast(kb.Index(idx[0]), f);
    int lo = kb.Call(
        "add",
        {kb.Constant(a, f), kb.Call("mul", {i, kb.Constant(step, f)}, f)}, f);
    int back =
        kb.Call("sub", {kb.Constant(static_cast<double>(steps - 1), f), i}, f);
    int hi = kb.Call(
        "sub",
        {kb.Constant(b, f), kb.Call("mul", {back, kb.Constant(step, f)}, f)},
        f);
    int first =
        kb.Call("lt", {kb.Index(idx[0]), kb.IntConstant(half, DType::kInt64)},
                DType::kBool);
    return kb.Cast(kb.Call("where", {first, lo, hi}, f), out);
  };
  return TensorValue(t);
}

// The tensors of list argument i (cat's and stack's `tensors`).
absl::StatusOr<std::vector<TBox>> TensorList(Lowerer& L, const Call& c, int i) {
  const Bound& list = c.at(i);
  if (list.arg == nullptr || list.arg->kind != Arg::Kind::kList) {
    return c.Error(absl::StrCat("argument ", i, " is not a list"));
  }
  std::vector<TBox> out;
  for (const Arg& a : list.arg->list) {
    const NodeValue* v =
        a.kind == Arg::Kind::kNode ? &L.value(a.node) : nullptr;
    if (v == nullptr || v->kind != NodeValue::Kind::kTensor) {
      return c.Error(
          absl::StrCat("an element of argument ", i, " is not a tensor"));
    }
    out.push_back(v->t);
  }
  return out;
}

// A new buffer laid out as the call's result meta `m` says, the buffer of
// its storage from now on.
int ResultBuffer(Lowerer& L, const TensorMeta& m) {
  int b =
      L.NewBuffer(m.dtype, StorageNumel(m.sizes, m.strides, m.storage_offset));
  L.storage_buffer()[m.storage] = b;
  return b;
}

// cat(tensors, dim): each input stored into its slice of one buffer.
absl::StatusOr<NodeValue> LowerCat(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(std::vector<TBox> inputs, TensorList(L, c, 0));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  int64_t rank = static_cast<int64_t>(m.sizes.size());
  if (dim < 0) dim += rank;
  int b = ResultBuffer(L, m);
  Expr start = symbolic::Int(0);
  for (const TBox& t : inputs) {
    // PyTorch skips 1-d empty inputs of any other shape.
    if (t.sizes.size() == 1 && t.sizes[0] == symbolic::Int(0) && rank != 1) {
      continue;
    }
    Expr offset =
        symbolic::Add(m.storage_offset, symbolic::Mul(start, m.strides[dim]));
    RETURN_IF_ERROR(L.Store(b, m.strides, offset, t));
    start = symbolic::Add(start, t.sizes[dim]);
  }
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

// The p-norm of values |d|: each |d|'s term, how the terms reduce, and the
// root taken of the result (none for p = 0, 1 and +-inf).
struct PNorm {
  ReduceKind kind = ReduceKind::kSum;
  std::function<int(KernelBuilder&, int)> term;
  std::function<int(KernelBuilder&, int, Expr)> root;
};
PNorm PNormOf(double p, DType acc) {
  PNorm n;
  n.term = [p, acc](KernelBuilder& kb, int v) {
    if (p == 0) {
      return kb.Cast(kb.Call("ne", {v, kb.Constant(0, acc)}, DType::kBool),
                     acc);
    }
    if (p == 1 || std::isinf(p)) return v;
    if (p == 2) return kb.Call("mul", {v, v}, acc);
    return kb.Call("pow", {v, kb.Constant(p, acc)}, acc);
  };
  if (std::isinf(p)) n.kind = p > 0 ? ReduceKind::kMax : ReduceKind::kMin;
  if (p == 2) {
    n.root = [acc](KernelBuilder& kb, int v, Expr) {
      return kb.Call("sqrt", {v}, acc);
    };
  } else if (p != 0 && p != 1 && !std::isinf(p)) {
    n.root = [acc, p](KernelBuilder& kb, int v, Expr) {
      return kb.Call("pow", {v, kb.Constant(1 / p, acc)}, acc);
    };
  }
  return n;
}

// linalg_vector_norm(self, ord, dim, keepdim, dtype).
absl::StatusOr<NodeValue> LowerVectorNorm(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType acc = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, acc));
  ASSIGN_OR_RETURN(std::optional<double> ord, NumberArg(c, "ord"));
  PNorm norm = PNormOf(ord.value_or(2), acc);
  TBox terms = MapBox(x, acc, [acc, norm](KernelBuilder& kb, int v) {
    return norm.term(kb, kb.Call("abs", {v}, acc));
  });
  int64_t rank = static_cast<int64_t>(x.sizes.size());
  if (rank == 0) {  // the norm of one value
    DType out = m.dtype;
    return TensorValue(
        MapBox(terms, out, [norm, out](KernelBuilder& kb, int v) {
          return kb.Cast(norm.root ? norm.root(kb, v, symbolic::Int(1)) : v,
                         out);
        }));
  }
  std::vector<int64_t> dims;
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> d,
                   c.IntList(c.Index("dim")));
  if (d.has_value()) dims = *d;
  if (dims.empty()) {
    for (int64_t k = 0; k < rank; ++k) dims.push_back(k);
  }
  for (int64_t& k : dims) k = k < 0 ? k + rank : k;
  ASSIGN_OR_RETURN(TBox out,
                   L.Reduce(terms, dims, norm.kind, acc, m, norm.root));
  return TensorValue(out);
}

// stack(tensors, dim): input k stored at index k of the new dim.
absl::StatusOr<NodeValue> LowerStack(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(std::vector<TBox> inputs, TensorList(L, c, 0));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  int64_t rank = static_cast<int64_t>(m.sizes.size());
  if (dim < 0) dim += rank;
  int b = ResultBuffer(L, m);
  std::vector<Expr> sizes = m.sizes, strides = m.strides;
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  for (size_t k = 0; k < inputs.size(); ++k) {
    Expr offset = symbolic::Add(
        m.storage_offset,
        symbolic::Mul(symbolic::Int(static_cast<int64_t>(k)), m.strides[dim]));
    RETURN_IF_ERROR(L.Store(b, strides, offset, L.Broadcast(inputs[k], sizes)));
  }
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

// eye(n, m): ones on the diagonal.
absl::StatusOr<NodeValue> LowerEye(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  TBox t;
  t.dtype = m.dtype;
  t.sizes = m.sizes;
  DType out = m.dtype;
  t.load = [out](KernelBuilder& kb,
                 const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    int d = kb.Call("eq", {kb.Index(idx[0]), kb.Index(idx[1])}, DType::kBool);
    return kb.Cast(d, out);
  };
  return TensorValue(t);
}

// mv(self, vec) and dot(self, other): a sum of products.
absl::StatusOr<NodeValue> LowerContraction(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType acc = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox a, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox v, L.Tensor(c, 1));
  TBox p;
  p.dtype = acc;
  p.sizes = a.sizes;  // [m, k] or [k]
  p.reads = a.reads;
  p.reads.insert(v.reads.begin(), v.reads.end());
  p.load = [a, v, acc](KernelBuilder& kb,
                       const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(int x, a.load(kb, idx));
    ASSIGN_OR_RETURN(int y, v.load(kb, {idx.back()}));
    return kb.Call("mul", {kb.Cast(x, acc), kb.Cast(y, acc)}, acc);
  };
  ASSIGN_OR_RETURN(TBox out,
                   L.Reduce(p, {static_cast<int64_t>(a.sizes.size()) - 1},
                            ReduceKind::kSum, acc, m, nullptr));
  return TensorValue(out);
}

// A pointwise loss of (self, target), then reduction none (0), mean (1) or
// sum (2).
using LossBody = std::function<absl::StatusOr<TBox>(Lowerer&, const Call&,
                                                    Expression&, TBox, TBox)>;
LowerFn LossFn(LossBody body) {
  return [body](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    DType compute = ComputeDType(m.dtype);
    ASSIGN_OR_RETURN(TBox a, L.Operand(c, 0, compute));
    ASSIGN_OR_RETURN(TBox b, L.Operand(c, 1, compute));
    ASSIGN_OR_RETURN(int64_t reduction, c.Int("reduction"));
    std::vector<Expr> sizes =
        a.sizes.size() >= b.sizes.size() ? a.sizes : b.sizes;
    Expression e(L, compute, sizes);
    ASSIGN_OR_RETURN(TBox l, body(L, c, e, a, b));
    std::vector<int64_t> dims;
    for (size_t k = 0; k < sizes.size(); ++k) dims.push_back(k);
    if (reduction == 0 || dims.empty()) return TensorValue(CastBox(l, m.dtype));
    ASSIGN_OR_RETURN(TBox out,
                     L.Reduce(l, dims, ReduceKind::kSum, compute, m,
                              reduction == 1 ? MeanOf(compute) : nullptr));
    return TensorValue(out);
  };
}

void AddLosses(absl::flat_hash_map<std::string, LowerFn>& T) {
  T["aten.mse_loss.default"] =
      LossFn([](Lowerer&, const Call&, Expression& e, TBox a,
                TBox b) -> absl::StatusOr<TBox> {
        TBox d = e("sub", {a, b});
        return e("mul", {d, d});
      });
  T["aten.l1_loss.default"] =
      LossFn([](Lowerer&, const Call&, Expression& e, TBox a,
                TBox b) -> absl::StatusOr<TBox> {
        return e("abs", {e("sub", {a, b})});
      });
  // |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta
  T["aten.smooth_l1_loss.default"] =
      LossFn([](Lowerer&, const Call& c, Expression& e, TBox a,
                TBox b) -> absl::StatusOr<TBox> {
        ASSIGN_OR_RETURN(std::optional<double> beta, NumberArg(c, "beta"));
        double bt = beta.value_or(1);
        TBox d = e("abs", {e("sub", {a, b})});
        if (bt == 0) return d;
        TBox quad = e("truediv", {e("mul", {e("mul", {d, d}), e.Number(0.5)}),
                                  e.Number(bt)});
        return e("where", {e("lt", {d, e.Number(bt)}), quad,
                           e("sub", {d, e.Number(0.5 * bt)})});
      });
  // (1 - y) x - log_sigmoid(x) with log_sigmoid(x) = min(x, 0) -
  // log1p(exp(-|x|)); weight and pos_weight as PyTorch applies them.
  T["aten.binary_cross_entropy_with_logits.default"] =
      LossFn([](Lowerer& L, const Call& c, Expression& e, TBox x,
                TBox y) -> absl::StatusOr<TBox> {
        TBox log_sig =
            e("sub", {e("minimum", {x, e.Number(0)}),
                      e("log1p", {e("exp", {e("neg", {e("abs", {x})})})})});
        TBox one_minus_y = e("sub", {e.Number(1), y});
        TBox loss;
        if (c.Has("pos_weight")) {
          ASSIGN_OR_RETURN(TBox pw,
                           L.Operand(c, c.Index("pos_weight"), e.compute()));
          // (1 - y) x - (1 + (pw - 1) y) log_sigmoid(x)
          TBox lw = e(
              "add", {e.Number(1), e("mul", {e("sub", {pw, e.Number(1)}), y})});
          loss =
              e("sub", {e("mul", {one_minus_y, x}), e("mul", {lw, log_sig})});
        } else {
          loss = e("sub", {e("mul", {one_minus_y, x}), log_sig});
        }
        if (c.Has("weight")) {
          ASSIGN_OR_RETURN(TBox w,
                           L.Operand(c, c.Index("weight"), e.compute()));
          loss = e("mul", {loss, w});
        }
        return loss;
      });
}

// _cdist_forward(x1, x2, p, compute_mode): the p-norm distance of every
// row pair, [..., P, M] x [..., R, M] -> [..., P, R].
absl::StatusOr<NodeValue> LowerCdist(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType acc = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x1, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox x2, L.Tensor(c, 1));
  ASSIGN_OR_RETURN(std::optional<double> p, NumberArg(c, "p"));
  PNorm norm = PNormOf(p.value_or(2), acc);
  TBox d;
  d.dtype = acc;
  d.sizes = m.sizes;
  d.sizes.push_back(x1.sizes.back());
  d.reads = x1.reads;
  d.reads.insert(x2.reads.begin(), x2.reads.end());
  size_t rank = d.sizes.size();
  d.load = [x1, x2, acc, norm, rank](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    auto at = [&](const TBox& x, Expr row) {
      std::vector<Expr> sub;
      size_t batch = x.sizes.size() - 2;
      for (size_t b = 0; b < batch; ++b) {
        Expr i = idx[rank - 3 - batch + b];
        sub.push_back(IsOne(x.sizes[b]) ? symbolic::Int(0) : i);
      }
      sub.push_back(row);
      sub.push_back(idx[rank - 1]);
      return sub;
    };
    ASSIGN_OR_RETURN(int a, x1.load(kb, at(x1, idx[rank - 3])));
    ASSIGN_OR_RETURN(int b, x2.load(kb, at(x2, idx[rank - 2])));
    int diff = kb.Call(
        "abs", {kb.Call("sub", {kb.Cast(a, acc), kb.Cast(b, acc)}, acc)}, acc);
    return norm.term(kb, diff);
  };
  ASSIGN_OR_RETURN(TBox out, L.Reduce(d, {static_cast<int64_t>(rank) - 1},
                                      norm.kind, acc, m, norm.root));
  return TensorValue(out);
}

// ---- Convolution and pooling
// ------------------------------------------------------

// A per-spatial-dim int list argument (stride, padding, ...): one value
// serves every dim; `fallback` when the list is empty or the op has none.
absl::StatusOr<std::vector<int64_t>> SpatialArg(const Call& c,
                                                absl::string_view name,
                                                size_t dims,
                                                std::vector<int64_t> fallback) {
  std::vector<int64_t> out;
  if (c.Index(name) >= 0) {
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> v,
                     c.IntList(c.Index(name)));
    out = v.value_or(std::vector<int64_t>{});
  }
  if (out.empty()) out = std::move(fallback);
  if (out.size() == 1) out.resize(dims, out[0]);
  if (out.size() != dims) {
    return c.Error(absl::StrCat(name, " has ", out.size(), " values for ", dims,
                                " spatial dims"));
  }
  return out;
}

// The window geometry of a convolution or pool over `dims` spatial dims.
struct Window {
  std::vector<int64_t> stride, padding, dilation;
  // The input position output position `o` reads at kernel offset `k`.
  Expr Position(size_t d, Expr o, Expr k) const {
    return symbolic::Add({symbolic::Mul(o, symbolic::Int(stride[d])),
                          symbolic::Int(-padding[d]),
                          symbolic::Mul(k, symbolic::Int(dilation[d]))});
  }
};

absl::StatusOr<Window> WindowArgs(const Call& c, size_t dims,
                                  std::vector<int64_t> default_stride) {
  Window w;
  ASSIGN_OR_RETURN(w.stride,
                   SpatialArg(c, "stride", dims, std::move(default_stride)));
  ASSIGN_OR_RETURN(w.padding, SpatialArg(c, "padding", dims, {0}));
  ASSIGN_OR_RETURN(w.dilation, SpatialArg(c, "dilation", dims, {1}));
  for (size_t d = 0; d < dims; ++d) {
    if (w.stride[d] <= 0 || w.dilation[d] <= 0) {
      return c.Error("stride and dilation must be positive");
    }
  }
  return w;
}

// The bool and of `masks` (true for none).
int AllOf(KernelBuilder& kb, const std::vector<int>& masks) {
  if (masks.empty()) return kb.IntConstant(1, DType::kBool);
  int m = masks[0];
  for (size_t i = 1; i < masks.size(); ++i) {
    m = kb.Call("logical_and", {m, masks[i]}, DType::kBool);
  }
  return m;
}

// An f32 convolution without transposition as one call of the runtime's
// sconv (oneDNN; runtime/convolution.h gives the geometry's layout) on the
// realized operands, into a buffer with the output's strides.
absl::StatusOr<TBox> ConvolutionCall(Lowerer& L, TBox x, TBox w,
                                     const Window& win, int64_t groups,
                                     const TensorMeta& m) {
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(w, L.Realize(w, nullptr));
  size_t nsp = w.sizes.size() - 2;
  auto ints = [](const std::vector<int64_t>& v) {
    std::vector<Expr> e;
    for (int64_t i : v) e.push_back(symbolic::Int(i));
    return e;
  };
  std::vector<Expr> g = {symbolic::Int(static_cast<int64_t>(nsp)),
                         symbolic::Int(groups), x.sizes[0], x.sizes[1],
                         w.sizes[0]};
  auto append = [&g](const std::vector<Expr>& v, size_t from) {
    g.insert(g.end(), v.begin() + static_cast<std::ptrdiff_t>(from), v.end());
  };
  append(x.sizes, 2);
  append(w.sizes, 2);
  append(m.sizes, 2);
  append(ints(win.stride), 0);
  append(ints(win.padding), 0);
  append(ints(win.dilation), 0);
  Expr zero = symbolic::Int(0);
  int out =
      L.NewBuffer(DType::kFloat32, StorageNumel(m.sizes, m.strides, zero));
  for (const auto& [offset, strides] :
       {std::pair{x.offset, x.strides}, std::pair{w.offset, w.strides},
        std::pair{zero, m.strides}}) {
    g.push_back(offset);
    append(strides, 0);
  }
  L.EmitExtern("sconv", {out, x.buffer, w.buffer}, std::move(g));
  return L.FromBuffer(out, DType::kFloat32, m.sizes, m.strides, zero);
}

// sort(self, dim, descending) and topk(self, k, dim, largest, sorted): one
// call of the runtime's sort (runtime/sort.h: PyTorch's CPU order, ties
// included) on the realized input, into values and indices buffers laid
// out as the metas say. A dimension eager PyTorch sees with stride 0 (an
// expanded input) keeps its order, as PyTorch's kernel does.
absl::StatusOr<NodeValue> SortCall(Lowerer& L, const Call& c, bool topk) {
  ASSIGN_OR_RETURN(auto metas, OutPair(L, c, "(values, indices)"));
  const TensorMeta& mv = *metas.first;
  const TensorMeta& mi = *metas.second;
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  if (dim < 0) dim += std::max<int64_t>(rank, 1);
  if (dim < 0 || dim >= std::max<int64_t>(rank, 1)) {
    return c.Error("dim out of range");
  }
  ASSIGN_OR_RETURN(bool descending, c.Bool(topk ? "largest" : "descending"));
  // topk's sorted; for sort 1, or 2 for a stable sort (sort.stable with
  // stable=True; None is False), in the same slot.
  int64_t sorted = 1;
  if (topk) {
    ASSIGN_OR_RETURN(bool s, c.Bool("sorted"));
    sorted = s ? 1 : 0;
  } else if (c.Has("stable")) {
    ASSIGN_OR_RETURN(bool stable, c.Bool("stable"));
    sorted = stable ? 2 : 1;
  }
  Expr k = symbolic::Int(-1);
  if (topk) k = rank == 0 ? symbolic::Int(1) : mv.sizes[dim];
  bool keep_order = false;
  if (const Node* in = c.NodeAt(0);
      !topk && rank > 0 && in != nullptr &&
      in->meta().kind == ir::ValueMeta::Kind::kTensor) {
    keep_order = in->meta().tensor.strides[dim] == symbolic::Int(0);
  }
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  Expr zero = symbolic::Int(0);
  int values = L.NewBuffer(mv.dtype, StorageNumel(mv.sizes, mv.strides, zero));
  int indices =
      L.NewBuffer(DType::kInt64, StorageNumel(mi.sizes, mi.strides, zero));
  std::vector<Expr> g = {symbolic::Int(static_cast<int64_t>(x.dtype)),
                         symbolic::Int(rank),
                         symbolic::Int(dim),
                         symbolic::Int(descending ? 1 : 0),
                         k,
                         symbolic::Int(sorted),
                         symbolic::Int(keep_order ? 1 : 0)};
  g.insert(g.end(), x.sizes.begin(), x.sizes.end());
  for (const auto& [offset, strides] :
       {std::pair{x.offset, x.strides}, std::pair{zero, mv.strides},
        std::pair{zero, mi.strides}}) {
    g.push_back(offset);
    g.insert(g.end(), strides.begin(), strides.end());
  }
  L.EmitExtern("sort", {values, indices, x.buffer}, std::move(g),
               /*outputs=*/2);
  return TupleValue(
      {TensorValue(L.FromBuffer(values, mv.dtype, mv.sizes, mv.strides, zero)),
       TensorValue(
           L.FromBuffer(indices, DType::kInt64, mi.sizes, mi.strides, zero))});
}

// The convolution's result plus its bias (argument 2) broadcast along the
// channel dim, when there is one: a pointwise epilogue.
absl::StatusOr<NodeValue> ConvolutionBias(Lowerer& L, const Call& c,
                                          const TBox& out,
                                          const TensorMeta& m) {
  if (c.NodeAt(2) == nullptr) return TensorValue(out);
  ASSIGN_OR_RETURN(TBox bias, L.Tensor(c, 2));
  TBox b = Remap(
      bias, m.sizes,
      [](const std::vector<Expr>& idx) -> absl::StatusOr<std::vector<Expr>> {
        return std::vector<Expr>{idx[1]};
      });
  return TensorValue(
      L.Pointwise("add", {out, b}, ComputeDType(m.dtype), m.dtype, m.sizes));
}

// convolution(input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups): per output element, a sum over the group's input
// channels and the kernel offsets. Padding is a mask over a clamped index;
// a transposed convolution reads input position (o + padding - k*dilation)
// / stride where that divides. The bias is an epilogue.
absl::StatusOr<NodeValue> LowerConvolution(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  DType acc = ComputeDType(m.dtype);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox w, L.Tensor(c, 1));
  if (w.sizes.size() < 3 || x.sizes.size() != w.sizes.size()) {
    return c.Error("expects a batched input with the weight's rank");
  }
  size_t nsp = w.sizes.size() - 2;
  ASSIGN_OR_RETURN(Window win, WindowArgs(c, nsp, {1}));
  ASSIGN_OR_RETURN(bool transposed, c.Bool("transposed"));
  ASSIGN_OR_RETURN(int64_t groups, c.Int("groups"));
  if (groups <= 0) return c.Error("groups must be positive");
  // The library takes 1 to 3 spatial dims (shape propagation already
  // refuses more, as PyTorch does).
  if (m.dtype == DType::kFloat32 && !transposed && nsp <= 3) {
    ASSIGN_OR_RETURN(TBox out, ConvolutionCall(L, x, w, win, groups, m));
    return ConvolutionBias(L, c, out, m);
  }
  Expr g_count = symbolic::Int(groups);
  // Input and output channels per group.
  ASSIGN_OR_RETURN(Expr w0_per_group, symbolic::FloorDiv(w.sizes[0], g_count));
  Expr icg = transposed ? w0_per_group : w.sizes[1];
  Expr ocg = transposed ? w.sizes[1] : w0_per_group;
  TBox p;
  p.dtype = acc;
  p.sizes = m.sizes;
  p.sizes.push_back(icg);
  for (size_t d = 0; d < nsp; ++d) p.sizes.push_back(w.sizes[2 + d]);
  p.reads = x.reads;
  p.reads.insert(w.reads.begin(), w.reads.end());
  p.cost = x.cost + w.cost + 8;
  p.load = [x, w, win, transposed, icg, ocg, nsp, acc, groups](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    Expr oc = idx[1], ic = idx[2 + nsp];
    Expr g = symbolic::Int(0);
    if (groups > 1) {
      ASSIGN_OR_RETURN(g, symbolic::FloorDiv(oc, ocg));
    }
    Expr cin = symbolic::Add(symbolic::Mul(g, icg), ic);
    std::vector<Expr> xi = {idx[0], cin};
    std::vector<Expr> wi = {
        transposed ? cin : oc,
        transposed ? symbolic::Sub(oc, symbolic::Mul(g, ocg)) : ic};
    std::vector<int> masks;
    for (size_t d = 0; d < nsp; ++d) {
      Expr o = idx[2 + d], k = idx[3 + nsp + d], in = x.sizes[2 + d];
      wi.push_back(k);
      if (!transposed) {
        Expr pos = win.Position(d, o, k);
        masks.push_back(InRange(kb, pos, symbolic::Int(0), in));
        xi.push_back(ClampIndex(pos, in));
        continue;
      }
      Expr s = symbolic::Int(win.stride[d]);
      Expr t =
          symbolic::Add({o, symbolic::Int(win.padding[d]),
                         symbolic::Mul(k, symbolic::Int(-win.dilation[d]))});
      masks.push_back(InRange(kb, t, symbolic::Int(0), symbolic::Mul(in, s)));
      ASSIGN_OR_RETURN(Expr rem, symbolic::PythonMod(t, s));
      masks.push_back(kb.Call("eq", {kb.Index(rem), kb.Index(symbolic::Int(0))},
                              DType::kBool));
      ASSIGN_OR_RETURN(Expr q, symbolic::FloorDiv(t, s));
      xi.push_back(ClampIndex(q, in));
    }
    ASSIGN_OR_RETURN(int xv, x.load(kb, xi));
    ASSIGN_OR_RETURN(int wv, w.load(kb, wi));
    int prod = kb.Call("mul", {kb.Cast(xv, acc), kb.Cast(wv, acc)}, acc);
    return kb.Call("where", {AllOf(kb, masks), prod, kb.Constant(0, acc)}, acc);
  };
  std::vector<int64_t> dims;
  for (size_t d = 0; d <= nsp; ++d) {
    dims.push_back(static_cast<int64_t>(m.sizes.size() + d));
  }
  ASSIGN_OR_RETURN(TBox out,
                   L.Reduce(p, dims, ReduceKind::kSum, acc, m, nullptr));
  return ConvolutionBias(L, c, out, m);
}

// A pool's windows over `x`'s trailing spatial dims: sizes out_sizes + the
// kernel sizes, reading x at each window position (in the compute dtype),
// `fill` where the position is outside the input.
struct PoolWindows {
  TBox box;
  std::vector<Expr> in;  // the input's spatial sizes
  size_t lead = 0;       // dims before the spatial ones
  Window win;
  std::vector<int64_t> kernel;
  // The input positions the window element `idx` reads (unclamped).
  std::vector<Expr> Positions(const std::vector<Expr>& idx) const {
    std::vector<Expr> pos;
    for (size_t d = 0; d < in.size(); ++d) {
      pos.push_back(win.Position(d, idx[lead + d], idx[lead + in.size() + d]));
    }
    return pos;
  }
  // The reduced dims (the kernel's).
  std::vector<int64_t> Dims() const {
    std::vector<int64_t> dims;
    for (size_t d = 0; d < in.size(); ++d) {
      dims.push_back(static_cast<int64_t>(lead + in.size() + d));
    }
    return dims;
  }
};

absl::StatusOr<PoolWindows> PoolWindowsOf(Lowerer& L, const Call& c,
                                          const std::vector<Expr>& out_sizes,
                                          double fill) {
  PoolWindows pw;
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  size_t nsp = absl::StrContains(c.op().schema.name, "3d") ? 3 : 2;
  ASSIGN_OR_RETURN(pw.kernel, SpatialArg(c, "kernel_size", nsp, {}));
  ASSIGN_OR_RETURN(pw.win, WindowArgs(c, nsp, pw.kernel));
  if (x.sizes.size() < nsp + 1 || out_sizes.size() != x.sizes.size()) {
    return c.Error("unexpected input rank");
  }
  if (!IsFloatingPoint(x.dtype)) {
    return c.Error("integer pooling is not supported by the cpu backend");
  }
  pw.lead = x.sizes.size() - nsp;
  pw.in.assign(x.sizes.begin() + pw.lead, x.sizes.end());
  DType compute = ComputeDType(x.dtype);
  TBox& p = pw.box;
  p.dtype = compute;
  p.sizes = out_sizes;
  for (int64_t k : pw.kernel) p.sizes.push_back(symbolic::Int(k));
  p.reads = x.reads;
  p.cost = x.cost + 8;
  PoolWindows geometry = pw;
  p.load = [x, geometry, compute, fill](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> xi(idx.begin(), idx.begin() + geometry.lead);
    std::vector<int> masks;
    std::vector<Expr> pos = geometry.Positions(idx);
    for (size_t d = 0; d < pos.size(); ++d) {
      Expr in = geometry.in[d];
      masks.push_back(InRange(kb, pos[d], symbolic::Int(0), in));
      xi.push_back(ClampIndex(pos[d], in));
    }
    ASSIGN_OR_RETURN(int v, x.load(kb, xi));
    return kb.Call(
        "where",
        {AllOf(kb, masks), kb.Cast(v, compute), kb.Constant(fill, compute)},
        compute);
  };
  return pw;
}

// max_pool2d/3d_with_indices(self, kernel_size, stride, padding, dilation,
// ceil_mode): the window's maximum (NaN propagates) and the flat spatial
// index of the input element it came from. Windows past the input (padding,
// ceil_mode) see -inf there.
absl::StatusOr<NodeValue> LowerMaxPool(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(auto metas, OutPair(L, c, "(values, indices)"));
  const TensorMeta& mv = *metas.first;
  const TensorMeta& mi = *metas.second;
  ASSIGN_OR_RETURN(
      PoolWindows pw,
      PoolWindowsOf(L, c, mv.sizes, -std::numeric_limits<double>::infinity()));
  ASSIGN_OR_RETURN(TBox values, L.Reduce(pw.box, pw.Dims(), ReduceKind::kMax,
                                         pw.box.dtype, mv, nullptr));
  std::vector<Expr> in_strides = Contiguous(pw.in);
  ASSIGN_OR_RETURN(
      TBox indices,
      L.Reduce(pw.box, pw.Dims(), ReduceKind::kArgMax, DType::kInt64, mi,
               nullptr, [pw, in_strides](const std::vector<Expr>& idx) {
                 return Linear(pw.Positions(idx), in_strides, symbolic::Int(0));
               }));
  return TupleValue({TensorValue(values), TensorValue(indices)});
}

// avg_pool2d/3d(self, kernel_size, stride, padding, ceil_mode,
// count_include_pad, divisor_override): the window's sum over the input
// elements it covers, divided by PyTorch's divisor (the override; the
// window clipped to the padded input; or the elements it covers); an empty
// window gives 0.
absl::StatusOr<NodeValue> LowerAvgPool(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(PoolWindows pw, PoolWindowsOf(L, c, m.sizes, 0));
  ASSIGN_OR_RETURN(bool include_pad, c.Bool("count_include_pad"));
  std::optional<int64_t> override;
  if (c.Has("divisor_override")) {
    ASSIGN_OR_RETURN(override, c.Int("divisor_override"));
    if (*override == 0) return c.Error("division by zero");
  }
  // The divisor and the covered count per output element, from the kernel's
  // outer index variables (the output's dims).
  std::vector<Expr> pool, count;
  for (size_t d = 0; d < pw.in.size(); ++d) {
    Expr lo = pw.win.Position(d, IndexVar(static_cast<int>(pw.lead + d)),
                              symbolic::Int(0));
    Expr pad = symbolic::Int(pw.win.padding[d]);
    Expr hi = symbolic::Min(symbolic::Add(lo, symbolic::Int(pw.kernel[d])),
                            symbolic::Add(pw.in[d], pad));
    pool.push_back(symbolic::Sub(hi, lo));
    Expr covered = symbolic::Sub(symbolic::Min(hi, pw.in[d]),
                                 symbolic::Max(lo, symbolic::Int(0)));
    count.push_back(symbolic::Max(covered, symbolic::Int(0)));
  }
  Expr covered = Product(count);
  Expr divisor = override.has_value() ? symbolic::Int(*override)
                 : include_pad        ? Product(pool)
                                      : covered;
  DType acc = pw.box.dtype;
  auto divide = [acc, divisor, covered](KernelBuilder& kb, int sum, Expr) {
    int q = MeanOf(acc)(kb, sum, divisor);
    int some = kb.Call("gt", {kb.Index(covered), kb.Index(symbolic::Int(0))},
                       DType::kBool);
    return kb.Call("where", {some, q, kb.Constant(0, acc)}, acc);
  };
  ASSIGN_OR_RETURN(
      TBox out, L.Reduce(pw.box, pw.Dims(), ReduceKind::kSum, acc, m, divide));
  return TensorValue(out);
}

// _adaptive_avg_pool2d/3d(self, output_size): output o of a dim averages
// input [floor(o*I/O), ceil((o+1)*I/O)); the window loop runs to the widest
// window, masked past each one's end.
absl::StatusOr<NodeValue> LowerAdaptiveAvgPool(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  size_t nsp = absl::StrContains(c.op().schema.name, "3d") ? 3 : 2;
  if (x.sizes.size() < nsp + 1 || m.sizes.size() != x.sizes.size()) {
    return c.Error("unexpected input rank");
  }
  if (!IsFloatingPoint(x.dtype)) {
    return c.Error("integer pooling is not supported by the cpu backend");
  }
  size_t lead = x.sizes.size() - nsp;
  DType acc = ComputeDType(x.dtype);
  std::vector<Expr> in(x.sizes.begin() + lead, x.sizes.end());
  std::vector<Expr> out(m.sizes.begin() + lead, m.sizes.end());
  // The window [start, end) of output index o in spatial dim d.
  auto window = [in, out](size_t d,
                          Expr o) -> absl::StatusOr<std::pair<Expr, Expr>> {
    ASSIGN_OR_RETURN(Expr start,
                     symbolic::FloorDiv(symbolic::Mul(o, in[d]), out[d]));
    ASSIGN_OR_RETURN(
        Expr end,
        symbolic::CeilDiv(
            symbolic::Mul(symbolic::Add(o, symbolic::Int(1)), in[d]), out[d]));
    return std::make_pair(start, end);
  };
  TBox p;
  p.dtype = acc;
  p.sizes = m.sizes;
  for (size_t d = 0; d < nsp; ++d) {
    ASSIGN_OR_RETURN(Expr w, symbolic::CeilDiv(in[d], out[d]));
    p.sizes.push_back(symbolic::Add(w, symbolic::Int(1)));
  }
  p.reads = x.reads;
  p.cost = x.cost + 8;
  p.load = [x, in, lead, nsp, acc, window](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> xi(idx.begin(), idx.begin() + lead);
    std::vector<int> masks;
    for (size_t d = 0; d < nsp; ++d) {
      ASSIGN_OR_RETURN(auto se, window(d, idx[lead + d]));
      Expr pos = symbolic::Add(se.first, idx[lead + nsp + d]);
      masks.push_back(
          kb.Call("lt", {kb.Index(pos), kb.Index(se.second)}, DType::kBool));
      xi.push_back(ClampIndex(pos, in[d]));
    }
    ASSIGN_OR_RETURN(int v, x.load(kb, xi));
    return kb.Call(
        "where", {AllOf(kb, masks), kb.Cast(v, acc), kb.Constant(0, acc)}, acc);
  };
  // The divisor from the kernel's outer index variables (the output's dims).
  std::vector<Expr> counts;
  std::vector<int64_t> dims;
  for (size_t d = 0; d < nsp; ++d) {
    ASSIGN_OR_RETURN(auto se, window(d, IndexVar(static_cast<int>(lead + d))));
    counts.push_back(symbolic::Sub(se.second, se.first));
    dims.push_back(static_cast<int64_t>(lead + nsp + d));
  }
  Expr count = Product(counts);
  auto divide = [acc, count](KernelBuilder& kb, int sum, Expr) {
    return MeanOf(acc)(kb, sum, count);
  };
  ASSIGN_OR_RETURN(TBox result,
                   L.Reduce(p, dims, ReduceKind::kSum, acc, m, divide));
  return TensorValue(result);
}

// ---- Indirect indexing: gather, index_select, embedding, index
// ----------------------------------

// In-memory `x` read at `sub`, whose IndirectVar(k) stand for values[k]
// (check-index ops).
int IndirectLoad(KernelBuilder& kb, const TBox& x, const std::vector<Expr>& sub,
                 std::vector<int> values) {
  ScalarOp op;
  op.kind = ScalarOp::Kind::kLoad;
  op.dtype = x.dtype;
  op.buffer = x.buffer;
  op.index = Linear(sub, x.strides, x.offset);
  op.args = std::move(values);
  return kb.Add(std::move(op));
}

// A loader over `sizes` reading in-memory `x` at x_index(idx), where some
// dims are indirect: `lookups` gives, per indirect dim, the value loaded at
// idx (before its check).
struct Lookup {
  int64_t dim;  // x's dim it indexes
  Loader value;
  bool wrap;  // negative values count from the end
};
TBox IndirectBox(
    Lowerer& L, const Call& c, const TBox& x, std::vector<Expr> sizes,
    std::vector<Lookup> lookups,
    std::function<std::vector<Expr>(const std::vector<Expr>&)> direct) {
  TBox t;
  t.dtype = x.dtype;
  t.sizes = std::move(sizes);
  t.reads = x.reads;
  t.cost = x.cost + 4 * static_cast<int>(lookups.size());
  Lowerer* lp = &L;
  const Node* node = &c.node();
  t.load = [lp, node, x, lookups, direct](
               KernelBuilder& kb,
               const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    std::vector<Expr> sub = direct(idx);
    std::vector<int> values;
    for (size_t k = 0; k < lookups.size(); ++k) {
      const Lookup& l = lookups[k];
      ASSIGN_OR_RETURN(int v, l.value(kb, idx));
      Expr size = x.sizes.empty() ? symbolic::Int(1) : x.sizes[l.dim];
      values.push_back(lp->CheckIndex(kb, *node, v, size, l.wrap, l.dim));
      if (!x.sizes.empty()) sub[l.dim] = IndirectVar(static_cast<int>(k));
    }
    return IndirectLoad(kb, x, sub, values);
  };
  return t;
}

// A Lookup's loader: `index` read at the dims of idx that `pick` chooses.
Loader ReadAt(const TBox& index,
              std::function<std::vector<Expr>(const std::vector<Expr>&)> pick) {
  return [index, pick](KernelBuilder& kb,
                       const std::vector<Expr>& idx) -> absl::StatusOr<int> {
    return index.load(kb, pick(idx));
  };
}

// In-memory `x` read over `sizes` with dim `dim` taken from `index`: at
// output index i, x's coordinates are direct(i) with dim replaced by the
// (checked, unwrapped) value of index at pick(i). gather, index_select and
// embedding differ only in pick and direct.
TBox LookupAlong(
    Lowerer& L, const Call& c, const TBox& x, const TBox& index, int64_t dim,
    std::vector<Expr> sizes,
    std::function<std::vector<Expr>(const std::vector<Expr>&)> pick,
    std::function<std::vector<Expr>(const std::vector<Expr>&)> direct) {
  TBox t = IndirectBox(L, c, x, std::move(sizes),
                       {{dim, ReadAt(index, std::move(pick)), false}},
                       std::move(direct));
  t.reads.insert(index.reads.begin(), index.reads.end());
  return t;
}

int64_t WrapDim(int64_t dim, size_t rank) {
  int64_t r = std::max<int64_t>(static_cast<int64_t>(rank), 1);
  return dim < 0 ? dim + r : dim;
}

// A kernel whose one section walks `sizes` in row-major order, the order a
// scan counts in.
Kernel RowMajorWalk(Lowerer& L, const std::vector<Expr>& sizes) {
  Kernel k = L.NewKernel({});
  Section& sec = k.sections[0];
  for (size_t d = 0; d < sizes.size(); ++d) {
    sec.vars.push_back(SectionVar(0, static_cast<int>(d)));
  }
  sec.ranges = sizes;
  return k;
}

// Where bool `flag` holds, how many elements before this one in the walk it
// held for (a running count, minus 1); 0 elsewhere.
int TruePosition(KernelBuilder& kb, int flag) {
  ScalarOp scan;
  scan.kind = ScalarOp::Kind::kScan;
  scan.reduce = ReduceKind::kSum;
  scan.dtype = DType::kInt64;
  scan.args = {kb.Cast(flag, DType::kInt64)};
  int running = kb.Add(std::move(scan));
  return kb.Call("where",
                 {flag,
                  kb.Call("sub", {running, kb.IntConstant(1, DType::kInt64)},
                          DType::kInt64),
                  kb.IntConstant(0, DType::kInt64)},
                 DType::kInt64);
}

// masked_scatter(self, mask, source): one kernel whose single section walks
// the broadcast result in row-major order, counting the mask's true
// elements with a scan; where mask is true the element is source's
// (count - 1)-th in row-major order (source flattened into a contiguous
// buffer, the position checked against its size), elsewhere self's.
absl::StatusOr<NodeValue> LowerMaskedScatter(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox mask, L.Tensor(c, 1));
  ASSIGN_OR_RETURN(TBox source, L.Tensor(c, 2));
  Expr numel = symbolic::Int(1);
  for (Expr e : source.sizes) numel = symbolic::Mul(numel, e);
  if (numel == symbolic::Int(0)) return c.Error("an empty source");
  ASSIGN_OR_RETURN(TBox flat,
                   L.Realize(ReshapeLoader(source, {numel}), nullptr));
  self = L.Broadcast(self, m.sizes);
  mask = L.Broadcast(mask, m.sizes);
  Kernel k = RowMajorWalk(L, m.sizes);
  const std::vector<Expr> idx = k.sections[0].vars;
  KernelBuilder kb(&k);
  ASSIGN_OR_RETURN(int keep, mask.load(kb, idx));
  keep = kb.Cast(keep, DType::kBool);
  // Source position where mask is true, 0 elsewhere (not read).
  int at = TruePosition(kb, keep);
  int checked = L.CheckIndex(kb, c.node(), at, numel, false, 0);
  int from_source = IndirectLoad(kb, flat, {IndirectVar(0)}, {checked});
  ASSIGN_OR_RETURN(int from_self, self.load(kb, idx));
  DType compute = ComputeDType(m.dtype);
  int v = kb.Call(
      "where",
      {keep, kb.Cast(from_source, compute), kb.Cast(from_self, compute)},
      compute);
  int b =
      L.NewBuffer(m.dtype, StorageNumel(m.sizes, m.strides, m.storage_offset));
  kb.Store(b, m.dtype, Linear(idx, m.strides, m.storage_offset),
           kb.Cast(v, m.dtype));
  L.Emit(std::move(k));
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

// var_mean / var (the correction overloads; decompose turns std and the
// other var forms into var_mean): one Welford reduction in the computation
// dtype, var = M2 / max(count - correction, 0).
absl::StatusOr<NodeValue> LowerVarMean(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  if (!IsFloatingPoint(x.dtype)) {
    return c.Error("expects a floating-point input");
  }
  const ir::ValueMeta& vm = L.Meta(&c.node());
  const bool with_mean = vm.kind == ir::ValueMeta::Kind::kTuple;
  const TensorMeta& var_meta = with_mean ? vm.elements[0].tensor : vm.tensor;
  const TensorMeta& mean_meta = with_mean ? vm.elements[1].tensor : vm.tensor;
  int64_t rank = static_cast<int64_t>(x.sizes.size());
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> d,
                   c.IntList(c.Index("dim")));
  std::vector<int64_t> dims = d.value_or(std::vector<int64_t>());
  if (rank == 0) dims.clear();  // dim 0 (or -1) of a 0-d tensor is itself
  if (dims.empty()) {
    for (int64_t k = 0; k < rank; ++k) dims.push_back(k);
  }
  for (int64_t& k : dims) k = k < 0 ? k + rank : k;
  ASSIGN_OR_RETURN(std::optional<double> correction,
                   NumberArg(c, "correction"));
  ASSIGN_OR_RETURN(auto vm_boxes,
                   L.VarMean(x, dims, ComputeDType(x.dtype),
                             correction.value_or(1.0), var_meta, mean_meta));
  if (!with_mean) return TensorValue(vm_boxes.first);
  return TupleValue(
      {TensorValue(vm_boxes.first), TensorValue(vm_boxes.second)});
}

// `flags` realized as bools, and the host step that binds data-dependent
// size `u` to how many are true (a sum reduction of them): the count and
// any later walk must read the same booleans (an expression recomputed in
// a vector and a scalar loop could round differently and disagree at a
// threshold), so they are in memory first.
absl::StatusOr<TBox> BindTrueCount(Lowerer& L, const TBox& flags, Expr u) {
  ASSIGN_OR_RETURN(TBox keep, L.Realize(CastBox(flags, DType::kBool), nullptr));
  TensorMeta count_meta;
  count_meta.dtype = DType::kInt64;
  std::vector<int64_t> all;
  for (size_t d = 0; d < flags.sizes.size(); ++d) {
    all.push_back(static_cast<int64_t>(d));
  }
  ASSIGN_OR_RETURN(TBox count,
                   L.Reduce(CastBox(keep, DType::kInt64), all, ReduceKind::kSum,
                            DType::kInt64, count_meta, nullptr));
  L.EmitBind(u, count.buffer, count.offset);
  return keep;
}

// nonzero(x): the coordinates of x's nonzero elements in row-major order,
// an i64 [u0, rank] laid out column-major as PyTorch's CPU kernel writes
// it. A reduction counts them and a host step binds u0 to the count; then
// one kernel walks x in row-major order with a running count (a scan) and
// stores each nonzero element's coordinates in row count - 1 (a masked
// store: elsewhere nothing is written).
absl::StatusOr<NodeValue> LowerNonzero(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  const size_t rank = x.sizes.size();
  if (m.sizes.size() != 2 || !m.sizes[0].is_symbol() || L.IsBound(m.sizes[0])) {
    return c.Error("expected a result of a fresh data-dependent size");
  }
  const Expr u = m.sizes[0];
  ASSIGN_OR_RETURN(TBox keep, BindTrueCount(L, x, u));
  int b = L.NewBuffer(DType::kInt64,
                      StorageNumel(m.sizes, m.strides, m.storage_offset));
  Kernel k = RowMajorWalk(L, x.sizes);
  const std::vector<Expr> idx = k.sections[0].vars;
  KernelBuilder kb(&k);
  ASSIGN_OR_RETURN(int nz, keep.load(kb, idx));
  // The element's row where x is nonzero (within [0, u0): the count kernel
  // saw the same elements), 0 elsewhere (not written).
  int row = TruePosition(kb, nz);
  // The count kernel read the same buffer, so the row is below u0; the mask
  // says so too, so no store can leave the buffer.
  int in_range = kb.Call("lt", {row, kb.Index(u)}, DType::kBool);
  int mask = kb.Call("logical_and", {nz, in_range}, DType::kBool);
  for (size_t d = 0; d < rank; ++d) {
    Expr at = symbolic::Add(
        {m.storage_offset, symbolic::Mul(IndirectVar(0), m.strides[0]),
         symbolic::Mul(symbolic::Int(static_cast<int64_t>(d)), m.strides[1])});
    kb.MaskedStore(b, DType::kInt64, at, kb.Index(idx[d]), mask, {row});
  }
  L.Emit(std::move(k));
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

// x [P..., M..., R...] (`lead` dims P) and a mask over M: the result
// [P..., u, R...] (m), whose row j holds x's elements at the mask's j-th
// true position in row-major order, as masked_select and x[mask] give. A
// reduction counts the mask's true elements and a host step binds u to the
// count; one kernel walks the mask with a running count (a scan) and
// stores each true position's row; one kernel walks x and stores each
// element whose mask is true into its row (a masked store: the row is below
// u, since the count kernel saw the same booleans).
absl::StatusOr<NodeValue> MaskedRows(Lowerer& L, const Call& c, TBox x,
                                     const TBox& mask, size_t lead) {
  const TensorMeta& m = OutMeta(L, c);
  const size_t mrank = mask.sizes.size();
  if (m.sizes.size() != x.sizes.size() - mrank + 1 ||
      !m.sizes[lead].is_symbol() || L.IsBound(m.sizes[lead])) {
    return c.Error("expected a result of a fresh data-dependent size");
  }
  const Expr u = m.sizes[lead];
  ASSIGN_OR_RETURN(TBox keep, BindTrueCount(L, mask, u));
  // The row of each true position (0 elsewhere), over the mask's dims.
  Expr zero = symbolic::Int(0);
  std::vector<Expr> row_strides = Contiguous(mask.sizes);
  int rows_b =
      L.NewBuffer(DType::kInt64, StorageNumel(mask.sizes, row_strides, zero));
  {
    Kernel k = RowMajorWalk(L, mask.sizes);
    const std::vector<Expr> idx = k.sections[0].vars;
    KernelBuilder kb(&k);
    ASSIGN_OR_RETURN(int nz, keep.load(kb, idx));
    kb.Store(rows_b, DType::kInt64, Linear(idx, row_strides, zero),
             TruePosition(kb, nz));
    L.Emit(std::move(k));
  }
  TBox rows =
      L.FromBuffer(rows_b, DType::kInt64, mask.sizes, row_strides, zero);
  int b =
      L.NewBuffer(m.dtype, StorageNumel(m.sizes, m.strides, m.storage_offset));
  Kernel k = L.NewKernel(x.sizes);
  KernelBuilder kb(&k);
  std::vector<Expr> at_mask(k.vars.begin() + lead,
                            k.vars.begin() + lead + mrank);
  ASSIGN_OR_RETURN(int nz, keep.load(kb, at_mask));
  ASSIGN_OR_RETURN(int row, rows.load(kb, at_mask));
  int in_range = kb.Call("lt", {row, kb.Index(u)}, DType::kBool);
  int store = kb.Call("logical_and", {kb.Cast(nz, DType::kBool), in_range},
                      DType::kBool);
  std::vector<Expr> terms = {m.storage_offset};
  for (size_t d = 0; d < lead; ++d) {
    terms.push_back(symbolic::Mul(k.vars[d], m.strides[d]));
  }
  terms.push_back(symbolic::Mul(IndirectVar(0), m.strides[lead]));
  for (size_t d = lead + mrank; d < x.sizes.size(); ++d) {
    terms.push_back(symbolic::Mul(k.vars[d], m.strides[d - mrank + 1]));
  }
  ASSIGN_OR_RETURN(int v, x.load(kb, k.vars));
  kb.MaskedStore(b, m.dtype, symbolic::Add(terms), kb.Cast(v, m.dtype), store,
                 {row});
  L.Emit(std::move(k));
  return TensorValue(
      L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
}

// masked_select(self, mask): MaskedRows over the two broadcast.
absl::StatusOr<NodeValue> LowerMaskedSelect(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox self, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(TBox mask, L.Tensor(c, 1));
  std::vector<Expr> sizes =
      self.sizes.size() >= mask.sizes.size() ? self.sizes : mask.sizes;
  // The broadcast shape: a 1 takes the other's size (the meta checked it).
  for (const TBox* t : {&self, &mask}) {
    for (size_t e = 0; e < t->sizes.size(); ++e) {
      Expr& s = sizes[sizes.size() - t->sizes.size() + e];
      if (IsOne(s)) s = t->sizes[e];
    }
  }
  return MaskedRows(L, c, L.Broadcast(self, sizes), L.Broadcast(mask, sizes),
                    0);
}

// _assert_scalar(cond, message): a host step checks the condition where it
// stands (a data-dependent u0's range), unless it is a literal. What the
// ShapeEnv knows is not used to drop it: the assertion itself taught it.
absl::StatusOr<NodeValue> LowerAssertScalar(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(std::string message, c.String("assert_msg"));
  Expr cond;
  const Bound& b = c.at(0);
  if (b.arg != nullptr && b.arg->kind == Arg::Kind::kNode) {
    const NodeValue& v = L.value(b.arg->node);
    if (v.kind != NodeValue::Kind::kNumber) {
      return c.Error("argument 0 is not a number");
    }
    cond = v.number;
  } else {
    ASSIGN_OR_RETURN(int64_t v, c.Int(0));
    cond = symbolic::Bool(v != 0);
  }
  if (cond.kind() == symbolic::ExprKind::kBoolean ||
      cond.kind() == symbolic::ExprKind::kInteger) {
    bool holds = cond.kind() == symbolic::ExprKind::kBoolean
                     ? cond.bool_value()
                     : cond.int_value() != 0;
    if (!holds) return c.Error(absl::StrCat("always fails: ", message));
    return NodeValue();
  }
  L.EmitAssert(cond,
               absl::StrCat("node '", c.node().name(),
                            "' (aten._assert_scalar.default): ", message));
  return NodeValue();
}

// gather(self, dim, index): out[i] = self[i with dim replaced by index[i]].
absl::StatusOr<NodeValue> LowerGather(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  dim = WrapDim(dim, x.sizes.size());
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 2));
  return TensorValue(LookupAlong(
      L, c, x, index, dim, m.sizes,
      [](const std::vector<Expr>& i) { return i; },
      [](const std::vector<Expr>& i) { return i; }));
}

// index_select(self, dim, index): self's slices at index's values along dim.
absl::StatusOr<NodeValue> LowerIndexSelect(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  dim = WrapDim(dim, x.sizes.size());
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 2));
  bool scalar = index.sizes.empty() || x.sizes.empty();
  return TensorValue(LookupAlong(
      L, c, x, index, dim, m.sizes,
      [dim, scalar](const std::vector<Expr>& i) {
        return scalar ? std::vector<Expr>{} : std::vector<Expr>{i[dim]};
      },
      [](const std::vector<Expr>& i) { return i; }));
}

// embedding(weight, indices, ...): out[..., j] = weight[indices[...], j].
absl::StatusOr<NodeValue> LowerEmbedding(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox w, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(w, L.Realize(w, nullptr));
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 1));
  if (w.sizes.size() != 2) return c.Error("expects a 2-d weight");
  return TensorValue(LookupAlong(
      L, c, w, index, 0, m.sizes,
      [](const std::vector<Expr>& i) {
        return std::vector<Expr>(i.begin(), i.end() - 1);
      },
      [](const std::vector<Expr>& i) {
        return std::vector<Expr>{symbolic::Int(0), i.back()};
      }));
}

// Advanced indexing by a list of integer tensors (None keeps a dim), as
// index.Tensor and index_put see it. The index tensors broadcast to one
// shape B; when they are adjacent B's dims replace theirs in place, else
// they come first; x's other dims keep their order. Negative indices count
// from the end.
struct AdvancedIndex {
  std::vector<Expr> sizes;  // the indexing result's
  std::vector<Lookup> lookups;
  std::function<std::vector<Expr>(const std::vector<Expr>&)> direct;
  std::set<int> reads;  // of the index tensors
};

absl::StatusOr<AdvancedIndex> AdvancedIndexOf(Lowerer& L, const Call& c,
                                              const TBox& x) {
  const Bound& list = c.at(1);
  if (list.arg == nullptr || list.arg->kind != Arg::Kind::kList) {
    return c.Error("argument 1 is not a list");
  }
  std::vector<std::optional<TBox>> indices;
  std::vector<Expr> b_sizes;  // B, right-aligned broadcast
  for (const Arg& a : list.arg->list) {
    if (a.kind == Arg::Kind::kNone) {
      indices.push_back(std::nullopt);
      continue;
    }
    if (a.kind != Arg::Kind::kNode) return c.Error("an index is not a tensor");
    const NodeValue& v = L.value(a.node);
    if (v.kind != NodeValue::Kind::kTensor) {
      return c.Error("an index is not a tensor");
    }
    if (v.t.dtype == DType::kBool || v.t.dtype == DType::kUInt8) {
      return c.Error(
          "boolean mask indices are data-dependent; the cpu backend does not "
          "support them yet");
    }
    indices.push_back(v.t);
    const std::vector<Expr>& s = v.t.sizes;
    if (s.size() > b_sizes.size()) {
      b_sizes.insert(b_sizes.begin(), s.size() - b_sizes.size(),
                     symbolic::Int(1));
    }
    for (size_t e = 0; e < s.size(); ++e) {
      Expr& b = b_sizes[b_sizes.size() - s.size() + e];
      if (IsOne(b)) b = s[e];
    }
  }
  if (indices.size() > x.sizes.size()) return c.Error("too many indices");
  std::vector<size_t> indexed;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (indices[d].has_value()) indexed.push_back(d);
  }
  if (indexed.empty()) return c.Error("expects at least one index tensor");
  bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  size_t b_at = adjacent ? indexed.front() : 0;
  size_t b_rank = b_sizes.size();
  size_t rank = x.sizes.size();
  AdvancedIndex ai;
  std::vector<size_t> kept;
  for (size_t d = 0; d < rank; ++d) {
    if (d >= indices.size() || !indices[d].has_value()) kept.push_back(d);
  }
  for (size_t k = 0; k <= kept.size(); ++k) {
    if (k == b_at)
      ai.sizes.insert(ai.sizes.end(), b_sizes.begin(), b_sizes.end());
    if (k < kept.size()) ai.sizes.push_back(x.sizes[kept[k]]);
  }
  for (size_t d : indexed) {
    const TBox& ix = *indices[d];
    ai.reads.insert(ix.reads.begin(), ix.reads.end());
    size_t r = ix.sizes.size();
    std::vector<Expr> isz = ix.sizes;
    ai.lookups.push_back(
        {static_cast<int64_t>(d),
         ReadAt(ix,
                [b_at, b_rank, r, isz](const std::vector<Expr>& i) {
                  std::vector<Expr> sub;
                  for (size_t e = 0; e < r; ++e) {
                    sub.push_back(IsOne(isz[e]) ? symbolic::Int(0)
                                                : i[b_at + b_rank - r + e]);
                  }
                  return sub;
                }),
         true});
  }
  ai.direct = [kept, b_at, b_rank, rank](const std::vector<Expr>& i) {
    std::vector<Expr> sub(rank, symbolic::Int(0));
    size_t o = 0;
    for (size_t k = 0; k < kept.size(); ++k) {
      if (k == b_at) o += b_rank;
      sub[kept[k]] = i[o++];
    }
    return sub;
  };
  return ai;
}

// index.Tensor / _unsafe_index.Tensor(self, indices).
absl::StatusOr<NodeValue> LowerIndex(Lowerer& L, const Call& c) {
  const TensorMeta& m = OutMeta(L, c);
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  // x[mask] (a bool mask, every other index None): MaskedRows.
  if (const Bound& list = c.at(1);
      list.arg != nullptr && list.arg->kind == Arg::Kind::kList) {
    std::optional<size_t> mask_at;
    int tensors = 0;
    for (size_t d = 0; d < list.arg->list.size(); ++d) {
      const Arg& a = list.arg->list[d];
      if (a.kind != Arg::Kind::kNode) continue;
      ++tensors;
      const NodeValue& v = L.value(a.node);
      if (v.kind == NodeValue::Kind::kTensor && v.t.dtype == DType::kBool) {
        mask_at = d;
      }
    }
    if (mask_at.has_value() && tensors == 1) {
      return MaskedRows(L, c, x, L.value(list.arg->list[*mask_at].node).t,
                        *mask_at);
    }
  }
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(AdvancedIndex ai, AdvancedIndexOf(L, c, x));
  TBox t = IndirectBox(L, c, x, m.sizes, ai.lookups, ai.direct);
  t.reads.insert(ai.reads.begin(), ai.reads.end());
  return TensorValue(t);
}

// One kernel over `sizes`, run in order (indices may repeat), storing
// value(idx) into in-memory `target` at the element `lookups` and `direct`
// pick, or combining it with the element's value by `combine` ("add",
// "mul", "maximum", "minimum") when given.
using IndexFn = std::function<std::vector<Expr>(const std::vector<Expr>&)>;
absl::Status IndirectStore(Lowerer& L, const Call& c, const TBox& target,
                           std::vector<Expr> sizes,
                           const std::vector<Lookup>& lookups,
                           const IndexFn& direct, const TBox& value,
                           const std::string& combine) {
  DType compute = ComputeDType(target.dtype);
  Kernel k = L.NewKernel(sizes);
  KernelBuilder kb(&k);
  std::vector<Expr> sub = direct(k.vars);
  std::vector<int> checked;
  for (size_t j = 0; j < lookups.size(); ++j) {
    const Lookup& l = lookups[j];
    ASSIGN_OR_RETURN(int v, l.value(kb, k.vars));
    bool scalar = target.sizes.empty();
    checked.push_back(L.CheckIndex(
        kb, c.node(), v, scalar ? symbolic::Int(1) : target.sizes[l.dim],
        l.wrap, l.dim));
    if (!scalar) sub[l.dim] = IndirectVar(static_cast<int>(j));
  }
  ASSIGN_OR_RETURN(int v, value.load(kb, k.vars));
  v = kb.Cast(v, compute);
  if (!combine.empty()) {
    int old = kb.Cast(IndirectLoad(kb, target, sub, checked), compute);
    v = kb.Call(combine, {old, v}, compute);
  }
  kb.Store(target.buffer, target.dtype,
           Linear(sub, target.strides, target.offset), v, checked);
  L.Emit(std::move(k));
  return absl::OkStatus();
}

// A copy of `self` laid out as the call's meta, then IndirectStore into it.
absl::StatusOr<NodeValue> ScatterInto(Lowerer& L, const Call& c,
                                      const TBox& self, std::vector<Expr> sizes,
                                      const std::vector<Lookup>& lookups,
                                      const IndexFn& direct, const TBox& value,
                                      const std::string& combine) {
  const TensorMeta& m = OutMeta(L, c);
  int b = ResultBuffer(L, m);
  RETURN_IF_ERROR(L.Store(b, m.strides, m.storage_offset, self));
  TBox out = L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset);
  RETURN_IF_ERROR(IndirectStore(L, c, out, std::move(sizes), lookups, direct,
                                value, combine));
  return TensorValue(out);
}

// index_put(self, indices, values, accumulate): values (broadcast to the
// indexing result's sizes) stored at, or added to, self[indices].
absl::StatusOr<NodeValue> LowerIndexPut(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(AdvancedIndex ai, AdvancedIndexOf(L, c, x));
  ASSIGN_OR_RETURN(TBox values, L.Tensor(c, 2));
  ASSIGN_OR_RETURN(bool accumulate, c.Bool("accumulate"));
  return ScatterInto(L, c, x, ai.sizes, ai.lookups, ai.direct,
                     L.Broadcast(values, ai.sizes), accumulate ? "add" : "");
}

// The lowest (or highest) value of the integer `dtype`.
int64_t IntLimit(DType dtype, bool lowest) {
  switch (dtype) {
    case DType::kBool:
      return lowest ? 0 : 1;
    case DType::kUInt8:
      return lowest ? 0 : 255;
    case DType::kInt8:
      return lowest ? -128 : 127;
    case DType::kInt16:
      return lowest ? -32768 : 32767;
    case DType::kInt32:
      return lowest ? std::numeric_limits<int32_t>::min()
                    : std::numeric_limits<int32_t>::max();
    default:
      return lowest ? std::numeric_limits<int64_t>::min()
                    : std::numeric_limits<int64_t>::max();
  }
}

// scatter(self, dim, index, src | value [, reduce]), scatter_add and
// scatter_reduce (sum, prod, mean, amax, amin; include_self): for every
// element i of index, self[i with dim replaced by index[i]] is set to (or
// combined with) src[i]. Without include_self the elements index reaches
// start from the reduction's identity; a mean divides by how many values
// each element combined (at least 1).
absl::StatusOr<NodeValue> LowerScatterDim(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  dim = WrapDim(dim, x.sizes.size());
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 2));
  std::string combine = c.op().schema.name == "scatter_add" ? "add" : "";
  bool include_self = true, mean = false;
  double identity = 0;
  if (c.Has("reduce")) {
    ASSIGN_OR_RETURN(std::string reduce, c.String("reduce"));
    if (c.Index("include_self") >= 0) {
      ASSIGN_OR_RETURN(include_self, c.Bool("include_self"));
    }
    mean = reduce == "mean";
    if (reduce == "add" || reduce == "sum" || mean) {
      combine = "add";
    } else if (reduce == "multiply" || reduce == "prod") {
      combine = "mul";
      identity = 1;
    } else if (reduce == "amax" || reduce == "amin") {
      combine = reduce == "amax" ? "maximum" : "minimum";
      identity =
          (reduce == "amax" ? -1 : 1) * std::numeric_limits<double>::infinity();
    } else {
      return c.Error(absl::StrCat("reduce '", reduce, "' is not supported"));
    }
  }
  ASSIGN_OR_RETURN(TBox src, L.Operand(c, 3, x.dtype));
  // A tensor src is read at index's elements; a number is broadcast.
  TBox value = src.sizes.empty() ? L.Broadcast(src, index.sizes) : src;
  value.sizes = index.sizes;
  bool scalar = x.sizes.empty();
  std::vector<Lookup> lookups = {
      {dim, ReadAt(index, [](const std::vector<Expr>& i) { return i; }),
       false}};
  IndexFn direct = [scalar](const std::vector<Expr>& i) {
    return scalar ? std::vector<Expr>{} : i;
  };
  if (include_self && !mean) {
    return ScatterInto(L, c, x, index.sizes, lookups, direct, value, combine);
  }
  const TensorMeta& m = OutMeta(L, c);
  int b = ResultBuffer(L, m);
  RETURN_IF_ERROR(L.Store(b, m.strides, m.storage_offset, x));
  TBox out = L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset);
  if (!include_self) {
    // Integers' amax / amin start from the dtype's lowest / highest.
    Expr start = IsFloatingPoint(m.dtype) ? symbolic::Float(identity)
                 : std::isinf(identity)
                     ? symbolic::Int(IntLimit(m.dtype, identity < 0))
                     : symbolic::Int(static_cast<int64_t>(identity));
    RETURN_IF_ERROR(IndirectStore(L, c, out, index.sizes, lookups, direct,
                                  L.NumberBox(start, m.dtype), ""));
  }
  RETURN_IF_ERROR(
      IndirectStore(L, c, out, index.sizes, lookups, direct, value, combine));
  if (!mean) return TensorValue(out);
  // The count of each element: include_self's 1 (or 0), plus one per value.
  int counts = L.NewBuffer(DType::kInt64, Product(m.sizes));
  std::vector<Expr> cs = Contiguous(m.sizes);
  TBox start = L.Broadcast(
      L.NumberBox(symbolic::Int(include_self ? 1 : 0), DType::kInt64), m.sizes);
  RETURN_IF_ERROR(L.Store(counts, cs, symbolic::Int(0), start));
  TBox count =
      L.FromBuffer(counts, DType::kInt64, m.sizes, cs, symbolic::Int(0));
  RETURN_IF_ERROR(IndirectStore(L, c, count, index.sizes, lookups, direct,
                                L.NumberBox(symbolic::Int(1), DType::kInt64),
                                "add"));
  DType compute = ComputeDType(m.dtype);
  TBox n = L.Pointwise("maximum",
                       {count, L.NumberBox(symbolic::Int(1), DType::kInt64)},
                       DType::kInt64, compute, m.sizes);
  // PyTorch divides an integer mean with rounding_mode="floor".
  return TensorValue(
      L.Pointwise(IsFloatingPoint(m.dtype) ? "truediv" : "floordiv", {out, n},
                  compute, m.dtype, m.sizes));
}

// index_add(self, dim, index, source, alpha): source's slice k (along dim)
// times alpha added to self's slice index[k].
absl::StatusOr<NodeValue> LowerIndexAdd(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
  dim = WrapDim(dim, x.sizes.size());
  ASSIGN_OR_RETURN(TBox index, L.Tensor(c, 2));
  ASSIGN_OR_RETURN(TBox source, L.Tensor(c, 3));
  DType compute = ComputeDType(x.dtype);
  ASSIGN_OR_RETURN(TBox alpha, L.Operand(c, c.Index("alpha"), compute));
  TBox value =
      L.Pointwise("mul", {source, alpha}, compute, compute, source.sizes);
  bool scalar = x.sizes.empty() || source.sizes.empty();
  return ScatterInto(
      L, c, x, source.sizes,
      {{dim,
        ReadAt(index,
               [dim, scalar](const std::vector<Expr>& i) {
                 return scalar ? std::vector<Expr>{}
                               : std::vector<Expr>{i[dim]};
               }),
        false}},
      [scalar](const std::vector<Expr>& i) {
        return scalar ? std::vector<Expr>{} : i;
      },
      value, "add");
}

// nll_loss_forward(self, target, weight, reduction, ignore_index) ->
// (output, total_weight): -weight[t] * self[n, t] per sample (0 where t is
// ignore_index); reduction none, mean (over the weights' sum) or sum.
absl::StatusOr<NodeValue> LowerNllLoss(Lowerer& L, const Call& c) {
  ASSIGN_OR_RETURN(auto metas, OutPair(L, c, "(output, total_weight)"));
  const TensorMeta& mo = *metas.first;
  const TensorMeta& mt = *metas.second;
  ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
  ASSIGN_OR_RETURN(x, L.Realize(x, nullptr));
  ASSIGN_OR_RETURN(TBox target, L.Tensor(c, 1));
  std::optional<TBox> weight;
  if (c.NodeAt(2) != nullptr) {
    ASSIGN_OR_RETURN(TBox w, L.Tensor(c, 2));
    ASSIGN_OR_RETURN(w, L.Realize(w, nullptr));
    weight = w;
  }
  ASSIGN_OR_RETURN(int64_t reduction, c.Int("reduction"));
  ASSIGN_OR_RETURN(int64_t ignore, c.Int("ignore_index"));
  bool batched = x.sizes.size() == 2;
  DType acc = ComputeDType(x.dtype);
  Expr n = batched ? x.sizes[0] : symbolic::Int(1);
  Expr classes = x.sizes.back();
  Lowerer* lp = &L;
  const Node* node = &c.node();
  // The per-sample (weight, loss) over [n]: the class checked unless it is
  // ignore_index (then class 0 is read and the weight is 0).
  auto sample = [=](KernelBuilder& kb, Expr i,
                    bool loss) -> absl::StatusOr<int> {
    ASSIGN_OR_RETURN(
        int t, target.load(kb, target.sizes.empty() ? std::vector<Expr>{}
                                                    : std::vector<Expr>{i}));
    t = kb.Cast(t, DType::kInt64);
    int ignored =
        kb.Call("eq", {t, kb.IntConstant(ignore, DType::kInt64)}, DType::kBool);
    int safe = kb.Call("where", {ignored, kb.IntConstant(0, DType::kInt64), t},
                       DType::kInt64);
    int k = lp->CheckIndex(kb, *node, safe, classes, false, batched ? 1 : 0);
    int w = kb.Constant(1, acc);
    if (weight.has_value()) {
      w = kb.Cast(IndirectLoad(kb, *weight, {IndirectVar(0)}, {k}), acc);
    }
    w = kb.Call("where", {ignored, kb.Constant(0, acc), w}, acc);
    if (!loss) return w;
    std::vector<Expr> sub = {IndirectVar(0)};
    if (batched) sub.insert(sub.begin(), i);
    int v = kb.Cast(IndirectLoad(kb, x, sub, {k}), acc);
    return kb.Call("neg", {kb.Call("mul", {w, v}, acc)}, acc);
  };
  auto per_sample = [&](bool loss) {
    TBox t;
    t.dtype = acc;
    t.sizes = {n};
    t.reads = x.reads;
    t.reads.insert(target.reads.begin(), target.reads.end());
    if (weight.has_value())
      t.reads.insert(weight->reads.begin(), weight->reads.end());
    t.cost = 12;
    t.load = [sample, loss](KernelBuilder& kb, const std::vector<Expr>& idx) {
      return sample(kb, idx[0], loss);
    };
    return t;
  };
  NodeValue v;
  v.kind = NodeValue::Kind::kTuple;
  if (batched && reduction == 0) {
    v.elements = {TensorValue(CastBox(per_sample(true), mo.dtype)),
                  TensorValue(L.NumberBox(symbolic::Int(0), mt.dtype))};
    return v;
  }
  ASSIGN_OR_RETURN(TBox total, L.Reduce(per_sample(false), {0},
                                        ReduceKind::kSum, acc, mt, nullptr));
  ASSIGN_OR_RETURN(TBox sum, L.Reduce(per_sample(true), {0}, ReduceKind::kSum,
                                      acc, mo, nullptr));
  TBox out = sum;
  if (reduction == 1) {
    out = L.Pointwise("truediv", {sum, total}, acc, mo.dtype, mo.sizes);
  }
  v.elements = {TensorValue(out), TensorValue(total)};
  return v;
}

// cumsum / cumprod(self, dim, dtype): per position of the other dims, a
// scan along dim in the result's compute type, stored as the meta says.
LowerFn ScanFn(ReduceKind kind) {
  return [kind](Lowerer& L, const Call& c) -> absl::StatusOr<NodeValue> {
    const TensorMeta& m = OutMeta(L, c);
    ASSIGN_OR_RETURN(TBox x, L.Tensor(c, 0));
    if (x.sizes.empty()) return TensorValue(CastBox(x, m.dtype));
    ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
    dim = WrapDim(dim, x.sizes.size());
    std::vector<Expr> outer;
    for (size_t d = 0; d < x.sizes.size(); ++d) {
      if (static_cast<int64_t>(d) != dim) outer.push_back(x.sizes[d]);
    }
    Kernel k = L.NewKernel(outer);
    Section& sec = k.sections[0];
    sec.vars = {SectionVar(0, 0)};
    sec.ranges = {x.sizes[dim]};
    std::vector<Expr> idx;
    for (size_t d = 0, o = 0; d < x.sizes.size(); ++d) {
      idx.push_back(static_cast<int64_t>(d) == dim ? sec.vars[0] : k.vars[o++]);
    }
    KernelBuilder kb(&k);
    DType acc = ComputeDType(m.dtype);
    ASSIGN_OR_RETURN(int v, x.load(kb, idx));
    ScalarOp scan;
    scan.kind = ScalarOp::Kind::kScan;
    scan.reduce = kind;
    scan.dtype = acc;
    scan.args = {kb.Cast(v, acc)};
    int running = kb.Add(std::move(scan));
    int b = L.NewBuffer(m.dtype,
                        StorageNumel(m.sizes, m.strides, m.storage_offset));
    kb.Store(b, m.dtype, Linear(idx, m.strides, m.storage_offset), running);
    L.Emit(std::move(k));
    return TensorValue(
        L.FromBuffer(b, m.dtype, m.sizes, m.strides, m.storage_offset));
  };
}

absl::StatusOr<NodeValue> LowerGetitem(Lowerer& L, const Node& n) {
  const NodeValue& t = L.value(n.args()[0].node);
  int64_t i = n.args()[1].i;
  if (t.kind != NodeValue::Kind::kTuple || i < 0 ||
      i >= static_cast<int64_t>(t.elements.size())) {
    return absl::UnimplementedError(
        absl::StrCat("node '", n.name(), "': getitem of a non-tuple"));
  }
  return t.elements[i];
}

const absl::flat_hash_map<std::string, LowerFn>& Table() {
  static const auto* table = [] {
    auto* t = new absl::flat_hash_map<std::string, LowerFn>();
    auto& T = *t;
    // Unary math: the op name is the scalar function's.
    for (const ScalarFn& f : ScalarFns()) {
      if (f.arity == 1)
        T[absl::StrCat("aten.", f.name, ".default")] = PointwiseFn(f.name, {0});
    }
    T["aten.bitwise_not.default"] = PointwiseFn("bitwise_not", {0});
    // Binary, Tensor and Scalar overloads.
    for (const char* op :
         {"mul", "maximum", "minimum", "fmax", "fmin", "atan2", "hypot",
          "copysign", "remainder", "fmod", "pow", "bitwise_and", "bitwise_or",
          "bitwise_xor", "logical_and", "logical_or", "logical_xor"}) {
      for (const char* ov : {"default", "Tensor", "Scalar", "Tensor_Tensor",
                             "Tensor_Scalar", "Scalar_Tensor"}) {
        T[absl::StrCat("aten.", op, ".", ov)] = PointwiseFn(op, {0, 1});
      }
    }
    for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      for (const char* ov : {"Tensor", "Scalar"}) {
        T[absl::StrCat("aten.", op, ".", ov)] = PointwiseFn(op, {0, 1}, true);
      }
    }
    for (const char* ov : {"Tensor", "Scalar"}) {
      T[absl::StrCat("aten.__lshift__.", ov)] = PointwiseFn("lshift", {0, 1});
      T[absl::StrCat("aten.__rshift__.", ov)] = PointwiseFn("rshift", {0, 1});
      T[absl::StrCat("aten.add.", ov)] = AddSubFn("add", false);
      T[absl::StrCat("aten.sub.", ov)] = AddSubFn("sub", false);
      T[absl::StrCat("aten.rsub.", ov)] = AddSubFn("sub", true);
      T[absl::StrCat("aten.div.", ov)] = LowerDiv;
      T[absl::StrCat("aten.div.", ov, "_mode")] = LowerDiv;
      T[absl::StrCat("aten.true_divide.", ov)] = LowerDiv;
    }
    T["aten.floor_divide.default"] = LowerDiv;
    T["aten.floor_divide.Scalar"] = LowerDiv;
    T["aten.pow.Scalar"] = PointwiseFn("pow", {0, 1});
    T["aten.where.self"] = WhereFn(0, 1, 2);
    T["aten.where.ScalarSelf"] = WhereFn(0, 1, 2);
    T["aten.where.ScalarOther"] = WhereFn(0, 1, 2);
    T["aten.where.Scalar"] = WhereFn(0, 1, 2);
    T["aten.clamp.default"] = LowerClamp;
    T["aten.clamp.Tensor"] = LowerClamp;
    T["aten.clamp_min.default"] = LowerClamp;
    T["aten.clamp_max.default"] = LowerClamp;
    for (const char* op :
         {"aten.clone.default", "aten._to_copy.default",
          "prims.convert_element_type.default", "aten.contiguous.default",
          "aten.lift_fresh_copy.default", "aten.to.dtype",
          "aten.to.dtype_layout", "aten.type_as.default",
          "aten.positive.default", "aten.detach_copy.default"}) {
      T[op] = LowerCopyLike;
    }
    T["aten.full.default"] = FillFn(1, 0);
    T["aten.fill.Scalar"] = FillFn(1, 0);
    T["aten.fill.Tensor"] = FillFn(1, 0);
    T["aten.zero.default"] = FillFn(-1, 0);
    // Uninitialized memory: zeros are one of its values.
    for (const char* op :
         {"aten.empty.memory_format", "aten.empty_like.default",
          "aten.empty_strided.default", "aten.new_empty.default",
          "aten.new_empty_strided.default", "aten.empty.default"}) {
      T[op] = FillFn(-1, 0);
    }
    T["aten.full_like.default"] = FillFn(1, 0);
    T["aten.scalar_tensor.default"] = FillFn(0, 0);
    T["aten.zeros.default"] = FillFn(-1, 0);
    T["aten.zeros_like.default"] = FillFn(-1, 0);
    T["aten.ones.default"] = FillFn(-1, 1);
    T["aten.ones_like.default"] = FillFn(-1, 1);
    T["aten.new_zeros.default"] = FillFn(-1, 0);
    T["aten.new_ones.default"] = FillFn(-1, 1);
    T["aten.new_full.default"] = FillFn(2, 0);
    T["aten.arange.default"] = LowerArange;
    T["aten.arange.start"] = LowerArange;
    T["aten.arange.start_step"] = LowerArange;
    T["aten.sum.default"] = ReduceFn(ReduceKind::kSum);
    T["aten.sum.dim_IntList"] = ReduceFn(ReduceKind::kSum);
    T["aten.prod.default"] = ReduceFn(ReduceKind::kProd);
    T["aten.prod.dim_int"] = ReduceFn(ReduceKind::kProd);
    T["aten.mean.default"] = ReduceFn(ReduceKind::kSum, true);
    T["aten.mean.dim"] = ReduceFn(ReduceKind::kSum, true);
    T["aten.amax.default"] = ReduceFn(ReduceKind::kMax);
    T["aten.amin.default"] = ReduceFn(ReduceKind::kMin);
    T["aten.max.default"] = ReduceFn(ReduceKind::kMax);
    T["aten.min.default"] = ReduceFn(ReduceKind::kMin);
    T["aten.max.dim"] = ReduceFn(ReduceKind::kMax);
    T["aten.min.dim"] = ReduceFn(ReduceKind::kMin);
    T["aten.argmax.default"] = ReduceFn(ReduceKind::kArgMax);
    T["aten.argmin.default"] = ReduceFn(ReduceKind::kArgMin);
    T["aten.any.default"] = ReduceFn(ReduceKind::kAny);
    T["aten.any.dim"] = ReduceFn(ReduceKind::kAny);
    T["aten.any.dims"] = ReduceFn(ReduceKind::kAny);
    T["aten.all.default"] = ReduceFn(ReduceKind::kAll);
    T["aten.all.dim"] = ReduceFn(ReduceKind::kAll);
    T["aten.all.dims"] = ReduceFn(ReduceKind::kAll);
    T["aten.copy.default"] = LowerCopy;
    AddActivations(T);
    T["aten.nan_to_num.default"] = LowerNanToNum;
    T["aten.masked_fill.Scalar"] = WhereFn(1, 2, 0);
    T["aten.masked_fill.Tensor"] = WhereFn(1, 2, 0);
    T["prims.fma.default"] = LowerFma;
    T["aten.tril.default"] = TriangleFn(true);
    T["aten.triu.default"] = TriangleFn(false);
    T["aten.flip.default"] = LowerFlip;
    T["aten.roll.default"] = LowerRoll;
    T["aten.repeat.default"] = LowerRepeat;
    T["aten.constant_pad_nd.default"] = PadFn(PadMode::kConstant);
    for (const char* d : {"1d", "2d", "3d"}) {
      T[absl::StrCat("aten.reflection_pad", d, ".default")] =
          PadFn(PadMode::kReflect);
      T[absl::StrCat("aten.replication_pad", d, ".default")] =
          PadFn(PadMode::kReplicate);
    }
    T["aten.diag_embed.default"] = LowerDiagEmbed;
    T["aten.linspace.default"] = LowerLinspace;
    T["aten.cat.default"] = LowerCat;
    AddLosses(T);
    T["aten.stack.default"] = LowerStack;
    T["aten.eye.default"] = LowerEye;
    T["aten.eye.m"] = LowerEye;
    T["aten.mv.default"] = LowerContraction;
    T["aten.dot.default"] = LowerContraction;
    T["aten._cdist_forward.default"] = LowerCdist;
    T["aten.linalg_vector_norm.default"] = LowerVectorNorm;
    T["aten._unsafe_view.default"] = LowerUnsafeView;
    T["aten.baddbmm.default"] = LowerMatmul;
    T["aten.mm.default"] = LowerMatmul;
    T["aten.convolution.default"] = LowerConvolution;
    T["aten.masked_scatter.default"] = LowerMaskedScatter;
    T["aten.nonzero.default"] = LowerNonzero;
    T["aten.masked_select.default"] = LowerMaskedSelect;
    T["aten.round.decimals"] = LowerRoundDecimals;
    T["prims.iota.default"] = LowerArange;
    T["aten.empty_permuted.default"] = FillFn(-1, 0);
    T["aten.rand.default"] = RandomFn(false);
    T["aten.randn.default"] = RandomFn(true);
    T["aten.randperm.default"] = LowerRandperm;
    T["aten.native_dropout.default"] = LowerNativeDropout;
    T["aten.var_mean.correction"] = LowerVarMean;
    T["aten.var.correction"] = LowerVarMean;
    T["aten._assert_scalar.default"] = LowerAssertScalar;
    T["aten.upsample_nearest2d.default"] = LowerUpsampleNearest;
    T["aten.upsample_nearest2d.vec"] = LowerUpsampleNearest;
    T["aten.sort.default"] = [](Lowerer& L, const Call& c) {
      return SortCall(L, c, /*topk=*/false);
    };
    T["aten.sort.stable"] = T["aten.sort.default"];
    T["aten.topk.default"] = [](Lowerer& L, const Call& c) {
      return SortCall(L, c, /*topk=*/true);
    };
    T["aten.cumsum.default"] = ScanFn(ReduceKind::kSum);
    T["aten.cumprod.default"] = ScanFn(ReduceKind::kProd);
    T["aten.gather.default"] = LowerGather;
    T["aten.index_select.default"] = LowerIndexSelect;
    T["aten.embedding.default"] = LowerEmbedding;
    T["aten.index.Tensor"] = LowerIndex;
    T["aten.index_put.default"] = LowerIndexPut;
    T["aten.index_add.default"] = LowerIndexAdd;
    for (const char* op :
         {"aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce",
          "aten.scatter.value_reduce", "aten.scatter_add.default",
          "aten.scatter_reduce.two"}) {
      T[op] = LowerScatterDim;
    }
    T["aten._unsafe_index.Tensor"] = LowerIndex;
    T["aten.nll_loss_forward.default"] = LowerNllLoss;
    T["aten.max_pool2d_with_indices.default"] = LowerMaxPool;
    T["aten.max_pool3d_with_indices.default"] = LowerMaxPool;
    T["aten.avg_pool2d.default"] = LowerAvgPool;
    T["aten.avg_pool3d.default"] = LowerAvgPool;
    T["aten._adaptive_avg_pool2d.default"] = LowerAdaptiveAvgPool;
    T["aten._adaptive_avg_pool3d.default"] = LowerAdaptiveAvgPool;
    T["aten.bmm.default"] = LowerMatmul;
    T["aten.addmm.default"] = LowerMatmul;
    return t;
  }();
  return *table;
}

// Whether the op lowers as a view (any registry view op).
bool IsViewOp(const OpDef& op) { return op.HasTag(ir::OpTag::kView); }

const OpDef* FunctionalTwin(const OpDef& op) {
  if (op.functional.empty()) return nullptr;
  return ir::OpRegistry::Global().Find(op.functional);
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
    values_[&n] = TensorValue(AddInput(meta.tensor, nullptr));
    constants_.push_back(n.target());
    return absl::OkStatus();
  }
  if (meta.kind == ir::ValueMeta::Kind::kSym && n.kind() == Node::Kind::kCall &&
      n.target() == "aten._local_scalar_dense.default") {
    ASSIGN_OR_RETURN(v, LowerItem(n));
    values_[&n] = v;
    return absl::OkStatus();
  }
  if (meta.kind == ir::ValueMeta::Kind::kSym && n.kind() == Node::Kind::kCall) {
    // A symbolic number: its value is its expression over the inputs'
    // symbols and those bind steps bound (sym_size, operator.mul, ...).
    for (Expr s : symbolic::FreeSymbols(meta.sym)) {
      if (!IsBound(s)) {
        return absl::UnimplementedError(absl::StrCat(
            "node '", n.name(), "' (", n.target(), "): the data-dependent ",
            symbolic::ToString(s), " has no value here in the cpu backend"));
      }
    }
    v.kind = NodeValue::Kind::kNumber;
    v.number = meta.sym;
    values_[&n] = v;
    return absl::OkStatus();
  }
  if (n.target() == "getitem") {
    ASSIGN_OR_RETURN(v, LowerGetitem(*this, n));
    values_[&n] = v;
    return absl::OkStatus();
  }
  const OpDef* op = n.op();
  if (n.target() == "torch._C._set_grad_enabled") {  // no effect on values
    values_[&n] = NodeValue();
    return absl::OkStatus();
  }
  if (op == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "node '", n.name(), "': '", n.target(), "' has no cpu lowering"));
  }
  Call c(n);
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
  const auto& table = Table();
  auto it = table.find(op->target);
  if (it != table.end()) {
    ASSIGN_OR_RETURN(v, it->second(*this, c));
  } else if (!op->scattered_view.empty()) {
    ASSIGN_OR_RETURN(v, LowerScatter(*this, c));
  } else if (IsViewOp(*op)) {
    ASSIGN_OR_RETURN(v, LowerView(*this, c));
  } else if (ir::MutatesMetadata(n)) {
    // t_, transpose_, unsqueeze_, as_strided_: the view their functional
    // twin makes; set_: source itself. As in the interpreter, the tensor
    // object (self and the in-place results that returned it) takes the
    // new value for the nodes after this one.
    if (op == ir::Known().set_) {
      Node* source = c.NodeAt(1);
      if (source == nullptr) return c.Error("the source is not a tensor");
      v = values_.at(source);
    } else {
      ASSIGN_OR_RETURN(v, LowerView(*this, c));
    }
    const Node* object = ir::TensorObject(*c.NodeAt(0));
    const ir::ValueMeta now = Meta(&n);
    for (auto& [prior, value] : values_) {
      if (ir::TensorObject(*prior) != object) continue;
      value = v;
      metas_[prior] = now;
    }
  } else if (op->HasTag(ir::OpTag::kInplace) || op->HasTag(ir::OpTag::kOut) ||
             op->target == "aten.copy_.default") {
    // The functional twin computes the value; it is stored into the written
    // argument (self, or out=).
    int target_arg = 0;
    if (op->HasTag(ir::OpTag::kOut)) target_arg = c.Index("out");
    Node* target = c.NodeAt(target_arg);
    if (target == nullptr)
      return c.Error("the written argument is not a tensor");
    TBox value;
    if (op->target == "aten.copy_.default") {
      ASSIGN_OR_RETURN(value, Tensor(c, 1));
    } else {
      const OpDef* twin = FunctionalTwin(*op);
      auto tw = twin != nullptr ? table.find(twin->target) : table.end();
      if (tw == table.end()) {
        return absl::UnimplementedError(absl::StrCat(
            "node '", n.name(), "': ", op->target, " has no cpu lowering"));
      }
      ASSIGN_OR_RETURN(NodeValue fv, tw->second(*this, c));
      if (fv.kind != NodeValue::Kind::kTensor) {
        return c.Error("the functional twin's result is not one tensor");
      }
      value = fv.t;
    }
    RETURN_IF_ERROR(RealizeNode(target));
    TBox dst = values_.at(target).t;
    RETURN_IF_ERROR(WriteInto(&n, dst, value));
    // The result is the written tensor, in memory.
    v.kind = NodeValue::Kind::kTensor;
    v.t = dst;
    v.t.reads = {dst.buffer};
  } else {
    return absl::UnimplementedError(absl::StrCat(
        "node '", n.name(), "': ", op->target, " has no cpu lowering"));
  }
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
  int position = 0;
  for (Node* p : graph_.Placeholders()) {
    const ir::ValueMeta& m = Meta(p);
    if (m.kind == ir::ValueMeta::Kind::kTensor) {
      values_[p] = TensorValue(AddInput(m.tensor, &out));
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
  for (const auto& node : graph_.nodes()) {
    const Node& n = *node;
    if (n.kind() == Node::Kind::kPlaceholder) continue;
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
      if (t.strides != m.strides && !m.sizes.empty()) {
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

}  // namespace

absl::StatusOr<LoweredGraph> Lower(const ir::Graph& graph,
                                   symbolic::ShapeEnv& env) {
  Lowerer l(graph, env);
  return l.Run();
}

bool HasLowering(const ir::OpDef& op) {
  const auto& t = Table();
  if (t.contains(op.target) || IsViewOp(op) || !op.scattered_view.empty()) {
    return true;
  }
  // A number-valued op (sym_size, x.item()) lowers to its symbolic value,
  // or to a bind step (Lowerer::LowerNode).
  const std::vector<ir::Return>& returns = op.schema.returns;
  if (returns.size() == 1 && !returns[0].type.is_list &&
      (returns[0].type.base == ir::BaseType::kSymInt ||
       returns[0].type.base == ir::BaseType::kScalar ||
       returns[0].type.base == ir::BaseType::kInt)) {
    return true;
  }
  if (op.target == "aten.copy_.default") return true;
  const ir::KnownOps& k = ir::Known();
  if (&op == k.t_ || &op == k.transpose_ || &op == k.unsqueeze_ ||
      &op == k.as_strided_ || &op == k.set_) {
    return true;  // metadata mutators: a view (Lowerer::LowerNode)
  }
  if (op.HasTag(ir::OpTag::kInplace) || op.HasTag(ir::OpTag::kOut)) {
    const OpDef* twin = FunctionalTwin(op);
    return twin != nullptr && t.contains(twin->target);
  }
  return false;
}

}  // namespace lathe::codegen
