#include "codegen/lower/lowerer.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check.h"
#include "codegen/scalar_ops.h"
#include "ir/alias_info.h"
#include "ir/infer_meta.h"
#include "ir/ops_util.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::codegen::lower {

const ir::ValueMeta& Lowerer::Meta(const Node* n) {
  auto it = metas_.find(n);
  if (it == metas_.end()) {
    it = metas_.emplace(n, ir::ApplyReplacements(n->meta(), env_)).first;
  }
  return it->second;
}

absl::StatusOr<TBox> Lowerer::Tensor(const Call& c, int i) {
  Node* n = c.NodeAt(i);
  if (n == nullptr)
    return c.Error(absl::StrCat("argument ", i, " is not a tensor"));
  const NodeValue& v = values_.at(n);
  if (v.kind != NodeValue::Kind::kTensor) {
    return c.Error(absl::StrCat("argument ", i, " is not a tensor"));
  }
  return v.t;
}

absl::StatusOr<TBox> Lowerer::Operand(const Call& c, int i, DType dtype) {
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

TBox Lowerer::NumberBox(Expr number, DType dtype) {
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
    int64_t iv = is_int ? number.int_value() : 0;  // (only ints read it)
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

Expr Lowerer::Seed() {
  Expr s = symbolic::Symbol("rng_seed");
  UseSymbol(s);
  seeded_ = true;
  return s;
}

Expr Lowerer::ReserveDraws(Expr n) {
  Expr first = draws_;
  draws_ = symbolic::Add(draws_, n);
  UseSymbols({first});
  return first;
}

void Lowerer::UseSymbol(Expr s) {
  if (symbol_set_.insert(s).second) program_.symbols.push_back(s);
}

void Lowerer::UseSymbols(const std::vector<Expr>& exprs) {
  for (Expr e : exprs) {
    for (Expr s : symbolic::FreeSymbols(e)) {
      if (s.is_symbol() && !IsIndexVar(s)) UseSymbol(s);
    }
  }
}

bool Lowerer::IsIndexVar(Expr s) {
  std::string n = symbolic::ToString(s);
  return (n[0] == 'x' || n[0] == 'r') && n.size() > 1 &&
         std::isdigit(static_cast<unsigned char>(n[1]));
}

TBox Lowerer::FromBuffer(int b, DType dtype, std::vector<Expr> sizes,
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

absl::StatusOr<TBox> Lowerer::FromStorage(int b, const TensorMeta& m) {
  ASSIGN_OR_RETURN(Expr base, InUnitsOf(base_offsets_[b],
                                        program_.buffers[b].dtype, m.dtype));
  return FromBuffer(b, m.dtype, m.sizes, m.strides,
                    symbolic::Sub(m.storage_offset, base));
}

absl::StatusOr<Expr> InUnitsOf(Expr offset, DType from, DType to) {
  const int a = ItemSize(from), b = ItemSize(to);
  if (a == b) return offset;
  const Expr bytes = symbolic::Mul(offset, symbolic::Int(a));
  if (bytes.kind() != symbolic::ExprKind::kInteger ||
      bytes.int_value() % b != 0) {
    // Compiled code addresses a buffer from its first element: a view of
    // a wider dtype must begin a whole number of its elements from there.
    return absl::UnimplementedError(absl::StrCat(
        "a view as ", ShortName(to), " ", symbolic::ToString(bytes),
        " bytes from the first element of a buffer of ", ShortName(from),
        ", which ", ShortName(to), "'s element size does not divide"));
  }
  return symbolic::Int(bytes.int_value() / b);
}

int Lowerer::NewBuffer(DType dtype, Expr numel) {
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

Kernel Lowerer::NewKernel(const std::vector<Expr>& ranges) {
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

void Lowerer::Emit(Kernel k) {
  k.fused_from = {k.name};
  if (current_ != nullptr) k.nodes = {current_->name()};
  program_.kernels.push_back(std::move(k));
}

absl::Status Lowerer::Store(int b, const std::vector<Expr>& strides,
                            Expr offset, const TBox& value) {
  Kernel k = NewKernel(value.sizes);
  KernelBuilder kb(&k);
  ASSIGN_OR_RETURN(int v, value.load(kb, k.vars));
  kb.Store(b, program_.buffers[b].dtype, Linear(k.vars, strides, offset), v);
  Emit(std::move(k));
  return absl::OkStatus();
}

absl::StatusOr<TBox> Lowerer::Realize(const TBox& value,
                                      const TensorMeta* meta) {
  if (value.buffer >= 0) return value;
  std::vector<Expr> strides =
      meta != nullptr ? meta->strides : Contiguous(value.sizes);
  Expr offset = meta != nullptr ? meta->storage_offset : symbolic::Int(0);
  int b = NewBuffer(value.dtype, StorageNumel(value.sizes, strides, offset));
  RETURN_IF_ERROR(Store(b, strides, offset, value));
  return FromBuffer(b, value.dtype, value.sizes, strides, offset);
}

absl::Status Lowerer::RealizeNode(const Node* n) {
  // The kernel is n's, whichever node's lowering needed it in memory.
  const Node* was = current_;
  current_ = n;
  absl::Status status = RealizeNodeInMemory(n);
  current_ = was;
  return status;
}

absl::Status Lowerer::RealizeNodeInMemory(const Node* n) {
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
           !root->args().empty() && root->args()[0].kind == Arg::Kind::kNode) {
      root = root->args()[0].node;
    }
    if (values_.contains(root)) RETURN_IF_ERROR(RealizeNode(root));
    auto it = storage_buffer_.find(m.storage);
    if (it != storage_buffer_.end()) {
      ASSIGN_OR_RETURN(v.t, FromStorage(it->second, m));
      return CheckViewInBuffer(*n, v.t.buffer, v.t.sizes, v.t.strides,
                               v.t.offset);
    }
  }
  // A builtin's value (getitem's element) belongs to the node that made it.
  bool owner = n->op() != nullptr && !n->op()->HasTag(ir::OpTag::kView) &&
               !n->op()->HasTag(ir::OpTag::kBuiltin) &&
               m.storage != ir::kUnknownStorage &&
               !storage_buffer_.contains(m.storage);
  // A getitem's element takes the layout chosen for it too.
  TensorMeta layout = layouts_.Layout(n, -1, m);
  bool chosen = layouts_.ChannelsLast(n);
  ASSIGN_OR_RETURN(TBox t, Realize(v.t, owner || chosen ? &layout : nullptr));
  if (owner) storage_buffer_[m.storage] = t.buffer;
  v.t = t;
  return absl::OkStatus();
}

TBox Lowerer::Pointwise(const std::string& fn, std::vector<TBox> operands,
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

Lowerer::ReductionFrame Lowerer::NewReduction(
    const TBox& in, const std::vector<int64_t>& dims) {
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

TBox Lowerer::StoreReduced(ReductionFrame& f, KernelBuilder& kb,
                           const TensorMeta& meta, int value) {
  int b = NewBuffer(
      meta.dtype, StorageNumel(meta.sizes, meta.strides, meta.storage_offset));
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

absl::StatusOr<TBox> Lowerer::Reduce(
    const TBox& in, std::vector<int64_t> dims, ReduceKind kind, DType acc,
    const TensorMeta& meta, std::function<int(KernelBuilder&, int, Expr)> post,
    std::function<Expr(const std::vector<Expr>&)> arg_of) {
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

absl::StatusOr<std::pair<TBox, TBox>> Lowerer::VarMean(
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
  // M2 and its division in double for f32, as PyTorch's CPU var: the M2
  // of values whose variance fits f32 may not (600 values of +-2e18).
  const DType wide = acc == DType::kFloat32 ? DType::kFloat64 : acc;
  ScalarOp m2;
  m2.kind = ScalarOp::Kind::kReduce;
  m2.reduce = ReduceKind::kWelfordM2;
  m2.dtype = wide;
  m2.args = {v};
  m2.arg_index = mean_op;
  int m2_op = kb.Add(std::move(m2));
  kb.set_section(1);
  int count = kb.Cast(kb.Index(f.count), wide);
  int divisor =
      kb.Call("maximum",
              {kb.Call("sub", {count, kb.Constant(correction, wide)}, wide),
               kb.Constant(0, wide)},
              wide);
  int var = kb.Cast(kb.Call("truediv", {m2_op, divisor}, wide), acc);
  TBox var_box = StoreReduced(f, kb, var_meta, var);
  TBox mean_box = StoreReduced(f, kb, mean_meta, mean_op);
  Emit(std::move(f.k));
  return std::make_pair(var_box, mean_box);
}

void Lowerer::EmitExtern(const std::string& routine, std::vector<int> buffers,
                         std::vector<Expr> args, int outputs) {
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

absl::Status Lowerer::WriteInto(const Node* current, const TBox& target,
                                TBox value) {
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
    if (op.kind == ScalarOp::Kind::kLoad && op.buffer == b && op.index != at) {
      clash = true;
    }
  }
  if (clash) {
    ASSIGN_OR_RETURN(value, Realize(value, nullptr));
  }
  return Store(b, target.strides, target.offset, value);
}

TBox Lowerer::Broadcast(const TBox& t, std::vector<Expr> sizes) {
  TBox out = t;
  out.buffer = -1;
  out.sizes = sizes;
  TBox in = t;
  out.load = [in, sizes](KernelBuilder& kb,
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

absl::StatusOr<Expr> Lowerer::IntExpr(const Call& c, int i) {
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

absl::flat_hash_map<ir::StorageId, int>& Lowerer::storage_buffer() {
  return storage_buffer_;
}

absl::StatusOr<TBox> Lowerer::AddInput(const TensorMeta& m, LoweredGraph* out) {
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

}  // namespace lathe::codegen::lower
