#include "ir/op_registry.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "check.h"
#include "ir/ops_util.h"
#include "status_macros.h"

namespace lathe::ir {

const Value& OpCall::arg(absl::string_view name) const {
  int i = op_.schema.ArgumentIndex(name);
  LATHE_CHECK(i >= 0) << op_.target << " has no argument " << name;
  return args_[i];
}

absl::Status OpCall::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(op_.target, ": ", message));
}

const OpRegistry& OpRegistry::Global() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry;
    std::vector<std::string> reductions;
    for (auto fn :
         {&RegisterPointwiseOps, &RegisterReductionOps, &RegisterViewOps,
          &RegisterLinalgOps, &RegisterCreationOps, &RegisterIndexOps,
          &RegisterConvOps, &RegisterPoolOps, &RegisterNormOps, &RegisterNnOps,
          &RegisterLossOps, &RegisterGridSamplerOps, &RegisterBackwardOps,
          &RegisterAttentionOps, &RegisterExtraOps, &RegisterBuiltinOps}) {
      // The reductions' targets are those their family adds (a sorted copy
      // of every target, taken for that family alone).
      std::vector<std::string> before;
      if (fn == &RegisterReductionOps) before = r->Targets();
      absl::Status s = fn(*r);
      LATHE_CHECK(s.ok()) << "op registration failed: " << s.message();
      if (fn == &RegisterReductionOps) {
        for (const std::string& t : r->Targets()) {
          if (!std::binary_search(before.begin(), before.end(), t))
            reductions.push_back(t);
        }
      }
    }
    // After every family: the in-place twins of the pointwise ops (a twin
    // some family registered by hand is only paired).
    absl::Status s = RegisterInplaceTwins(*r);
    LATHE_CHECK(s.ok()) << "op registration failed: " << s.message();
    s = r->DeriveTags(reductions);
    LATHE_CHECK(s.ok()) << "op registration failed: " << s.message();
    return r;
  }();
  return *registry;
}

const OpDef* OpRegistry::Find(absl::string_view target) const {
  auto it = ops_.find(target);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<std::string> OpRegistry::Targets() const {
  std::vector<std::string> out;
  for (const auto& [target, op] : ops_) out.push_back(target);
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status OpRegistry::Add(absl::string_view schema_text, OpFn meta,
                             OpFn kernel) {
  ASSIGN_OR_RETURN(OpSchema schema, ParseSchema(schema_text));
  auto op = std::make_unique<OpDef>();
  // "prims::iota(...)" registers prims.iota.default; no namespace is aten.
  op->target =
      absl::StrCat(schema.ns.empty() ? "aten" : schema.ns, ".", schema.name,
                   ".", schema.overload.empty() ? "default" : schema.overload);
  if (ops_.contains(op->target)) {
    return absl::AlreadyExistsError(
        absl::StrCat(op->target, " registered twice"));
  }
  op->schema = std::move(schema);
  op->meta = std::move(meta);
  op->kernel = std::move(kernel);
  std::string target = op->target;
  ops_[target] = std::move(op);
  return absl::OkStatus();
}

absl::Status OpRegistry::AddBuiltin(absl::string_view target,
                                    absl::string_view schema_text, OpFn fn) {
  ASSIGN_OR_RETURN(OpSchema schema, ParseSchema(schema_text));
  if (ops_.contains(target)) {
    return absl::AlreadyExistsError(absl::StrCat(target, " registered twice"));
  }
  auto op = std::make_unique<OpDef>();
  op->target = std::string(target);
  op->schema = std::move(schema);
  op->meta = fn;
  op->kernel = std::move(fn);
  op->tags = static_cast<uint32_t>(OpTag::kBuiltin);
  ops_[op->target] = std::move(op);
  return absl::OkStatus();
}

absl::Status OpRegistry::Pair(absl::string_view inplace,
                              absl::string_view functional) {
  auto i = ops_.find(inplace);
  auto f = ops_.find(functional);
  if (i == ops_.end() || f == ops_.end()) {
    return absl::NotFoundError(
        absl::StrCat("cannot pair ", inplace, " with ", functional));
  }
  i->second->functional = std::string(functional);
  f->second->inplace = std::string(inplace);
  return absl::OkStatus();
}

absl::Status OpRegistry::PairScatter(absl::string_view view,
                                     absl::string_view scatter) {
  auto v = ops_.find(view);
  auto s = ops_.find(scatter);
  if (v == ops_.end() || s == ops_.end()) {
    return absl::NotFoundError(
        absl::StrCat("cannot pair ", view, " with ", scatter));
  }
  v->second->scatter = std::string(scatter);
  s->second->scattered_view = std::string(view);
  return absl::OkStatus();
}

absl::Status OpRegistry::PairMutating(
    absl::string_view mutating, absl::string_view functional,
    std::vector<std::pair<int, int>> written_results) {
  auto m = ops_.find(mutating);
  auto f = ops_.find(functional);
  if (m == ops_.end() || f == ops_.end()) {
    return absl::NotFoundError(
        absl::StrCat("cannot pair ", mutating, " with ", functional));
  }
  const OpSchema& ms = m->second->schema;
  const OpSchema& fs = f->second->schema;
  for (const auto& [arg, result] : written_results) {
    if (arg < 0 || arg >= static_cast<int>(ms.arguments.size()) ||
        !ms.arguments[arg].is_written()) {
      return absl::InvalidArgumentError(absl::StrCat(
          mutating, ": argument ", arg, " is not a written argument"));
    }
    if (result < static_cast<int>(ms.returns.size()) ||
        result >= static_cast<int>(fs.returns.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(functional, ": result ", result, " is not one past ",
                       mutating, "'s own results"));
    }
  }
  m->second->functional = std::string(functional);
  m->second->written_results = std::move(written_results);
  f->second->inplace = std::string(mutating);
  return absl::OkStatus();
}

absl::Status OpRegistry::MarkPointwise(absl::string_view target) {
  auto it = ops_.find(target);
  if (it == ops_.end()) {
    return absl::NotFoundError(absl::StrCat("no op ", target));
  }
  it->second->tags |= static_cast<uint32_t>(OpTag::kPointwise);
  return absl::OkStatus();
}

absl::Status OpRegistry::Tag(absl::string_view target, OpTag tag) {
  auto it = ops_.find(target);
  if (it == ops_.end()) {
    return absl::NotFoundError(absl::StrCat("no op ", target));
  }
  it->second->tags |= static_cast<uint32_t>(tag);
  return absl::OkStatus();
}

absl::Status OpRegistry::DeriveTags(
    const std::vector<std::string>& reductions) {
  for (const std::string& t : reductions) {
    // Scans and sorts live with the reductions but keep their dimensions.
    if (absl::StrContains(t, "cum") || absl::StrContains(t, "sort") ||
        absl::StrContains(t, "topk")) {
      continue;
    }
    RETURN_IF_ERROR(Tag(t, OpTag::kReduction));
  }
  for (absl::string_view t :
       {"aten.mm.default", "aten.bmm.default", "aten.mm.dtype",
        "aten.bmm.dtype", "aten.addmm.default", "aten.baddbmm.default",
        "aten.convolution.default", "aten.convolution_backward.default",
        "aten.sort.default", "aten.sort.stable", "aten.topk.default",
        "aten._cdist_forward.default", "aten._pdist_forward.default",
        "aten._embedding_bag.default",
        "aten._embedding_bag_forward_only.default", "aten._fft_r2c.default",
        "aten._fft_c2r.default"}) {
    RETURN_IF_ERROR(Tag(t, OpTag::kExtern));
  }
  for (absl::string_view t :
       {"aten.rand.default", "aten.randn.default", "aten.randperm.default",
        "aten.native_dropout.default"}) {
    RETURN_IF_ERROR(Tag(t, OpTag::kRandom));
  }
  RETURN_IF_ERROR(Tag("aten._assert_scalar.default", OpTag::kSideEffect));
  for (absl::string_view t :
       {"aten.as_strided.default", "aten.as_strided_.default",
        "aten.as_strided_scatter.default", "aten.set_.source_Tensor",
        "aten.sym_storage_offset.default", "aten.view.dtype"}) {
    RETURN_IF_ERROR(Tag(t, OpTag::kStorageOffset));
  }
  for (auto& [target, op] : ops_) {
    const OpSchema& s = op->schema;
    if (s.overload == "out" || absl::StartsWith(s.overload, "out_")) {
      op->tags |= static_cast<uint32_t>(OpTag::kOut);
      std::string functional =
          absl::StrCat(target.substr(0, target.rfind('.')), ".",
                       s.overload == "out" ? "default" : s.overload.substr(4));
      if (auto f = ops_.find(functional); f != ops_.end()) {
        op->functional = functional;
        f->second->out = target;
      } else if (auto t = ops_.find(absl::StrCat(
                     target.substr(0, target.rfind('.')), ".Tensor"));
                 t != ops_.end()) {
        op->functional = t->first;
        t->second->out = target;
      }
      continue;
    }
    bool first_written = !s.arguments.empty() && s.arguments[0].is_written();
    if (first_written) {
      op->tags |= static_cast<uint32_t>(OpTag::kInplace);
    } else if (!s.returns.empty() && s.returns[0].alias.has_value() &&
               !s.returns[0].alias->is_write) {
      op->tags |= static_cast<uint32_t>(OpTag::kView);
    }
  }
  return absl::OkStatus();
}

namespace {

// PyTorch's canCast for an in-place result: no floating point into an
// integer, nothing but bool into bool.
bool CanCast(DType from, DType to) {
  if (IsFloatingPoint(from) && !IsFloatingPoint(to)) return false;
  if (from != DType::kBool && to == DType::kBool) return false;
  return true;
}

// The checks of an in-place op on `self` whose functional twin gives
// `result` (its metadata): self's shape, and a dtype self can take.
absl::Status CheckInplaceResult(const OpCall& c, const Value& self,
                                const Value& result) {
  std::vector<symbolic::Expr> sizes = SizesOf(self), out = SizesOf(result);
  bool same = out.size() == sizes.size();
  for (size_t d = 0; same && d < sizes.size(); ++d) {
    ASSIGN_OR_RETURN(same, Decide(c, symbolic::Eq(sizes[d], out[d])));
  }
  if (!same) {
    return c.Error(absl::StrCat("output with shape ", ShapeString(sizes),
                                " doesn't match the broadcast shape ",
                                ShapeString(out)));
  }
  if (!CanCast(DTypeOf(result), DTypeOf(self))) {
    return c.Error(
        InplaceCastMessage(c.op().schema, DTypeOf(result), DTypeOf(self)));
  }
  return absl::OkStatus();
}

// Whether the in-place op `c` refuses an overlapping self: nan_to_num_ of
// an integer self copies self onto itself, unchecked.
bool RefusesOverlap(const OpCall& c, bool refuse_overlap) {
  return refuse_overlap && !(c.op().schema.name == "nan_to_num_" &&
                             !IsFloatingPoint(DTypeOf(c.arg(0))));
}

// Runs the functional twin `def` of the in-place op `c` on c's arguments;
// its errors are reported as c's.
absl::StatusOr<Value> RunFunctional(const OpCall& c, const OpDef* def,
                                    bool running) {
  std::vector<Value> args;
  for (int i = 0; i < c.num_args(); ++i) {
    args.push_back(running ? c.arg(i) : AsMeta(c.arg(i)));
  }
  // Already bound in schema order (keyword-only ones too): no rebinding.
  OpCall call(*def, std::move(args), c.env(), c.generator());
  absl::StatusOr<Value> out = running ? def->kernel(call) : def->meta(call);
  if (out.ok()) return out;
  absl::string_view message = out.status().message();
  absl::ConsumePrefix(&message, absl::StrCat(def->target, ": "));
  return c.Error(message);
}

}  // namespace

absl::Status OpRegistry::AddInplaceTwin(absl::string_view functional,
                                        absl::string_view overload,
                                        bool refuse_overlap) {
  const OpDef* f = Find(functional);
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrCat("no op ", functional));
  }
  const OpSchema& fs = f->schema;
  if (fs.IsMutable() || fs.arguments.empty() ||
      fs.arguments[0].type.ToString() != "Tensor" || fs.returns.size() != 1 ||
      fs.returns[0].type.ToString() != "Tensor") {
    return absl::InvalidArgumentError(absl::StrCat(
        functional, " has no in-place form (Tensor self -> Tensor)"));
  }
  OpSchema schema = fs;
  // Python's dunder operators have in-place twins of their own spelling:
  // __lshift__ -> __ilshift__.
  if (absl::StartsWith(schema.name, "__") &&
      absl::EndsWith(schema.name, "__")) {
    schema.name = absl::StrCat("__i", schema.name.substr(2));
  } else {
    schema.name += "_";
  }
  schema.overload = std::string(overload == "default" ? "" : overload);
  AliasInfo written;
  written.sets = {"a"};
  written.is_write = true;
  schema.arguments[0].alias = written;
  schema.returns[0].alias = written;
  schema.returns[0].name.clear();
  std::string target =
      absl::StrCat(schema.ns.empty() ? "aten" : schema.ns, ".", schema.name,
                   ".", schema.overload.empty() ? "default" : schema.overload);
  if (!ops_.contains(target)) {
    const OpDef* def = f;  // stable: ops are owned through unique_ptrs
    // PyTorch's order: the op's own argument checks, TensorIterator's
    // overlap check, the result's shape and dtype (from the functional meta
    // function), then the kernel's dtype dispatch ("... not implemented for
    // 'Bool'") and the errors that depend on data (ZeroDivisionError).
    auto checks = [def, refuse_overlap](const OpCall& c) -> absl::Status {
      absl::StatusOr<Value> result = RunFunctional(c, def, false);
      if (!result.ok() && !absl::StrContains(result.status().message(),
                                             "not implemented for")) {
        return result.status();
      }
      // The Scalar clamp family checks the result dtype first.
      const OpSchema& s = c.op().schema;
      if (result.ok() && absl::StartsWith(s.name, "clamp") &&
          s.overload != "Tensor") {
        RETURN_IF_ERROR(CheckInplaceResult(c, c.arg(0), *result));
      }
      if (RefusesOverlap(c, refuse_overlap)) {
        RETURN_IF_ERROR(CheckInternalOverlap(c, c.arg(0)));
      }
      if (!result.ok()) {
        // The kernel's dtype dispatch failed; the operands' common dtype
        // must still cast to self's first (bitwise_and_ of an int self with
        // a float other is a cast error).
        std::vector<Value> operands;
        for (int i = 0; i < c.num_args(); ++i) {
          const Argument& a = s.arguments[i];
          if (a.type.base == BaseType::kTensor || a.name == "other") {
            operands.push_back(c.arg(i));
          }
        }
        absl::StatusOr<DType> common = ResultType(operands);
        if (common.ok() && !CanCast(*common, DTypeOf(c.arg(0)))) {
          return c.Error(InplaceCastMessage(s, *common, DTypeOf(c.arg(0))));
        }
      }
      RETURN_IF_ERROR(result.status());
      return CheckInplaceResult(c, c.arg(0), *result);
    };
    auto meta = [checks](const OpCall& c) -> absl::StatusOr<Value> {
      RETURN_IF_ERROR(checks(c));
      return c.arg(0);
    };
    auto kernel = [def, refuse_overlap,
                   checks](const OpCall& c) -> absl::StatusOr<Value> {
      RETURN_IF_ERROR(checks(c));
      ASSIGN_OR_RETURN(Value result, RunFunctional(c, def, true));
      const Tensor& self = c.arg(0).tensor;
      if (refuse_overlap) {
        RETURN_IF_ERROR(CopyInto(self, result.tensor));
        return c.arg(0);
      }
      // Ops that may write an overlapping self (tril_, masked_fill_) write
      // only the elements they change, as PyTorch's kernels do.
      std::vector<std::vector<int64_t>> changed;
      ForEachIndex(self.sizes(), [&](absl::Span<const int64_t> i) {
        bool same;
        if (IsIntegral(self.dtype(), true) &&
            IsIntegral(result.tensor.dtype(), true)) {
          same = LoadInt(self, i) == LoadInt(result.tensor, i);
        } else {
          // -0.0 over 0.0 is a change (== says otherwise); NaN over NaN not.
          double a = LoadDouble(self, i), b = LoadDouble(result.tensor, i);
          same = (a == b && std::signbit(a) == std::signbit(b)) ||
                 (std::isnan(a) && std::isnan(b));
        }
        if (!same) changed.emplace_back(i.begin(), i.end());
      });
      for (const std::vector<int64_t>& i : changed) {
        CopyElement(self, i, result.tensor, i);
      }
      return c.arg(0);
    };
    RETURN_IF_ERROR(Add(schema.ToString(), meta, kernel));
  }
  return Pair(target, functional);
}

namespace {

// A dtype from its c10::ScalarType code (schema defaults such as randperm's
// `dtype=4`); int64 for codes lathe has no dtype for.
DType ScalarTypeOfCode(int64_t code) {
  switch (code) {
    case 0:
      return DType::kUInt8;
    case 1:
      return DType::kInt8;
    case 2:
      return DType::kInt16;
    case 3:
      return DType::kInt32;
    case 5:
      return DType::kFloat16;
    case 6:
      return DType::kFloat32;
    case 7:
      return DType::kFloat64;
    case 11:
      return DType::kBool;
    case 15:
      return DType::kBFloat16;
    default:
      return DType::kInt64;
  }
}

Value DefaultOf(const Argument& a) {
  const DefaultValue& d = *a.default_value;
  switch (d.kind) {
    case DefaultValue::Kind::kNone:
      return Value::None();
    case DefaultValue::Kind::kBool:
      return Value::Bool(d.bool_value);
    case DefaultValue::Kind::kInt:
      // `ScalarType? dtype=4`: c10's ScalarType code.
      if (a.type.base == BaseType::kScalarType) {
        DType dtype = ScalarTypeOfCode(d.int_value);
        return Value::OfDType(dtype);
      }
      return Value::Int(d.int_value);
    case DefaultValue::Kind::kFloat:
      return Value::Float(d.float_value);
    case DefaultValue::Kind::kString:
    case DefaultValue::Kind::kName:
      return Value::String(d.string_value);
    case DefaultValue::Kind::kList: {
      std::vector<Value> items;
      bool ints =
          a.type.base == BaseType::kInt || a.type.base == BaseType::kSymInt;
      for (double v : d.list_values) {
        items.push_back(ints ? Value::Int(static_cast<int64_t>(v))
                             : Value::Float(v));
      }
      // `int[2] padding=0` style: a scalar default for a list.
      return Value::List(std::move(items));
    }
  }
  return Value::None();
}

bool IsNumberType(BaseType t) {
  switch (t) {
    case BaseType::kInt:
    case BaseType::kSymInt:
    case BaseType::kFloat:
    case BaseType::kSymFloat:
    case BaseType::kBool:
    case BaseType::kSymBool:
    case BaseType::kScalar:
      return true;
    default:
      return false;
  }
}

// Whether `v` fits one element of `type` (no list or optional wrapping).
bool FitsElement(BaseType t, const Value& v) {
  // A Python number where a Tensor is expected is a wrapped number (0-d).
  if (t == BaseType::kTensor) {
    return v.kind == Value::Kind::kTensor || v.kind == Value::Kind::kNumber;
  }
  if (IsNumberType(t)) {
    if (v.kind != Value::Kind::kNumber) return false;
    symbolic::Expr e = v.number;
    switch (t) {
      case BaseType::kInt:
      case BaseType::kSymInt:
        return e.is_int() || e.is_bool();
      case BaseType::kBool:
      case BaseType::kSymBool:
        return e.is_bool();
      default:
        return true;  // float accepts ints; Scalar anything
    }
  }
  switch (t) {
    case BaseType::kStr:
    case BaseType::kLayout:
    case BaseType::kMemoryFormat:
      return v.kind == Value::Kind::kString;
    case BaseType::kScalarType:
      return v.kind == Value::Kind::kDType;
    case BaseType::kDevice:
      return v.kind == Value::Kind::kDevice;
    default:
      return true;  // Generator, Storage, ...: not checked
  }
}

// Whether `target` takes a Python number where its schema says Tensor (a
// wrapped number), as PyTorch's torch.ops binding allows: every prims op,
// and the aten ops of should_allow_numbers_as_tensors (add, sub, mul, div
// and their aliases, true_divide, floor_divide, to, _to_copy, copy_,
// _conj); any other op rejects it.
bool NumbersAsTensors(absl::string_view target) {
  if (absl::StartsWith(target, "prims.")) return true;
  if (!absl::StartsWith(target, "aten.")) return true;  // lathe's own ops
  absl::string_view name = target.substr(5);
  name = name.substr(0, name.find('.'));
  for (absl::string_view base :
       {"add", "div", "divide", "mul", "multiply", "sub", "subtract",
        "true_divide", "floor_divide"}) {
    if (name == base || name == absl::StrCat(base, "_") ||
        name == absl::StrCat(base, "_out")) {
      return true;
    }
  }
  return name == "to" || name == "_to_copy" || name == "copy_" ||
         name == "_conj";
}

bool Fits(const SchemaType& type, const Value& v) {
  if (v.is_none()) return type.optional;
  if (type.is_list) {
    // A single int for int[N] (PyTorch broadcasts it).
    if (v.kind == Value::Kind::kNumber)
      return type.list_size > 0 && FitsElement(type.base, v);
    if (v.kind != Value::Kind::kList) return false;
    // An empty list fits int[N] too: `int[2] stride=[]` is PyTorch's own
    // default (the op reads it as "like kernel_size").
    if (type.list_size > 0 && !v.list.empty() &&
        static_cast<int64_t>(v.list.size()) != type.list_size &&
        type.list_size != 1) {
      return false;
    }
    for (const Value& item : v.list) {
      if (item.is_none() ? !type.element_optional
                         : !FitsElement(type.base, item)) {
        return false;
      }
    }
    return true;
  }
  return FitsElement(type.base, v);
}

}  // namespace

absl::StatusOr<std::vector<Value>> BindArguments(
    const OpSchema& schema, std::vector<Value> positional,
    std::vector<std::pair<std::string, Value>> kwargs,
    absl::string_view target) {
  const std::vector<Argument>& params = schema.arguments;
  std::vector<Value> out(params.size());
  std::vector<bool> set(params.size(), false);
  size_t max_positional = 0;
  while (max_positional < params.size() && !params[max_positional].kwarg_only) {
    ++max_positional;
  }
  if (positional.size() > max_positional) {
    return absl::InvalidArgumentError(
        absl::StrCat(target, ": takes ", max_positional, " positional argument",
                     max_positional == 1 ? "" : "s", " but ", positional.size(),
                     " were given"));
  }
  for (size_t i = 0; i < positional.size(); ++i) {
    out[i] = std::move(positional[i]);
    set[i] = true;
  }
  for (auto& [name, value] : kwargs) {
    int i = schema.ArgumentIndex(name);
    if (i < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(target, ": no argument named '", name, "'"));
    }
    if (set[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat(target, ": argument '", name, "' given twice"));
    }
    out[i] = std::move(value);
    set[i] = true;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!set[i]) {
      if (!params[i].default_value) {
        return absl::InvalidArgumentError(
            absl::StrCat(target, ": missing argument '", params[i].name, "'"));
      }
      out[i] = DefaultOf(params[i]);
      // `int[2] stride=[]` / `int[1] padding=0`: PyTorch's list defaults.
      if (params[i].type.is_list && out[i].kind == Value::Kind::kNumber) {
        out[i] = Value::List(std::vector<Value>(
            std::max<int64_t>(params[i].type.list_size, 1), out[i]));
      }
    }
    bool number_for_tensor = params[i].type.base == BaseType::kTensor &&
                             !params[i].type.is_list &&
                             out[i].kind == Value::Kind::kNumber;
    if (!Fits(params[i].type, out[i]) ||
        (number_for_tensor && !NumbersAsTensors(target))) {
      return absl::InvalidArgumentError(absl::StrCat(
          target, ": argument '", params[i].name, "' expects ",
          params[i].type.ToString(), ", got ", out[i].DebugString()));
    }
  }
  return out;
}

}  // namespace lathe::ir
