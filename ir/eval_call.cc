#include "ir/eval_call.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/alias_info.h"
#include "ir/op_registry.h"
#include "ir/ops_util.h"
#include "runtime/tensor.h"
#include "status_macros.h"

namespace lathe::ir {

absl::StatusOr<Value> ArgValue(
    const Arg& arg, const absl::flat_hash_map<const Node*, Value>& env) {
  switch (arg.kind) {
    case Arg::Kind::kNode: {
      auto it = env.find(arg.node);
      if (it == env.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("'", arg.node->name(), "' has no value yet"));
      }
      return it->second;
    }
    case Arg::Kind::kNone:
      return Value::None();
    case Arg::Kind::kBool:
      return Value::Bool(arg.b);
    case Arg::Kind::kInt:
      return Value::Int(arg.i);
    case Arg::Kind::kFloat:
      return Value::Float(arg.f);
    case Arg::Kind::kString:
    case Arg::Kind::kLayout:
    case Arg::Kind::kMemoryFormat:
      return Value::String(arg.s);
    case Arg::Kind::kDType:
      return Value::OfDType(arg.dtype);
    case Arg::Kind::kDevice:
      return Value::OfDevice(arg.device);
    case Arg::Kind::kList: {
      std::vector<Value> items;
      for (const Arg& a : arg.list) {
        ASSIGN_OR_RETURN(Value v, ArgValue(a, env));
        items.push_back(std::move(v));
      }
      return Value::List(std::move(items));
    }
  }
  return Value::None();
}

void SetObjectValue(const Node& node, const Value& value,
                    absl::flat_hash_map<const Node*, Value>& values) {
  const Node* object = TensorObject(node);
  for (auto& [n, v] : values) {
    if (TensorObject(*n) == object) v = value;
  }
}

bool IsPythonOp(absl::string_view target) {
  return absl::StartsWith(target, "operator.") || target == "torch.sym_float" ||
         target == "torch.sym_int" || target == "torch.sym_max" ||
         target == "torch.sym_min" || target == "torch.sym_sum";
}

absl::StatusOr<Value> EvalPythonOp(absl::string_view target,
                                   const std::vector<Value>& args) {
  if (target == "torch.sym_sum") {  // sym_sum((a, b, ...))
    if (args.size() != 1 || args[0].kind != Value::Kind::kList) {
      return absl::InvalidArgumentError(
          absl::StrCat(target, " takes one tuple of numbers"));
    }
    symbolic::Expr sum = symbolic::Int(0);
    for (const Value& a : args[0].list) {
      if (!a.is_number() || a.number.is_bool()) {
        return absl::InvalidArgumentError(
            absl::StrCat(target, " takes numbers, got ", a.DebugString()));
      }
      absl::StatusOr<symbolic::Expr> r = symbolic::Add(sum, a.number);
      if (!r.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(target, ": ", r.status().message()));
      }
      sum = *r;
    }
    return Value::Number(sum);
  }
  for (const Value& a : args) {
    if (!a.is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat(target, " takes numbers, got ", a.DebugString()));
    }
  }
  if (args.empty())
    return absl::InvalidArgumentError(absl::StrCat(target, " takes operands"));
  // Booleans only compare for (in)equality with booleans.
  bool equality = target == "operator.eq" || target == "operator.ne";
  for (const Value& a : args) {
    if (!a.number.is_bool()) continue;
    if (equality && args.size() == 2 && args[0].number.is_bool() &&
        args[1].number.is_bool()) {
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        target, ": ", a.DebugString(), " is a boolean; expected a number"));
  }
  using symbolic::Expr;
  Expr a = args[0].number;
  if (target == "operator.neg") return Value::Number(symbolic::Neg(a));
  if (target == "torch.sym_float") return Value::Number(symbolic::ToFloat(a));
  if (target == "torch.sym_int") {
    if (a.is_int()) return Value::Number(a);
    absl::StatusOr<Expr> t = symbolic::TruncToInt(a);
    if (!t.ok())
      return absl::InvalidArgumentError(
          absl::StrCat(target, ": ", t.status().message()));
    return Value::Number(*t);
  }
  if (args.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(target, " takes two operands"));
  }
  Expr b = args[1].number;
  absl::StatusOr<Expr> r;
  if (target == "operator.add")
    r = symbolic::Add(a, b);
  else if (target == "operator.sub")
    r = symbolic::Sub(a, b);
  else if (target == "operator.mul")
    r = symbolic::Mul(a, b);
  else if (target == "operator.floordiv")
    r = symbolic::FloorDiv(a, b);
  else if (target == "operator.mod") {
    r = a.is_nonnegative() && b.is_positive() ? symbolic::Mod(a, b)
                                              : symbolic::PythonMod(a, b);
  } else if (target == "operator.truediv") {
    r = a.is_int() && b.is_int() ? symbolic::IntTrueDiv(a, b)
                                 : symbolic::FloatTrueDiv(a, b);
  } else if (target == "operator.pow") {
    r = a.is_int() && b.is_int() ? symbolic::PowByNatural(a, b)
                                 : symbolic::FloatPow(a, b);
  } else if (target == "operator.eq")
    r = symbolic::Eq(a, b);
  else if (target == "operator.ne")
    r = symbolic::Ne(a, b);
  else if (target == "operator.lt")
    r = symbolic::Lt(a, b);
  else if (target == "operator.le")
    r = symbolic::Le(a, b);
  else if (target == "operator.gt")
    r = symbolic::Gt(a, b);
  else if (target == "operator.ge")
    r = symbolic::Ge(a, b);
  else if (target == "torch.sym_max" || target == "torch.sym_min") {
    // Python's max/min of an int and a float is the float type.
    if (a.is_int() != b.is_int()) {
      a = symbolic::ToFloat(a);
      b = symbolic::ToFloat(b);
    }
    r = target == "torch.sym_max" ? symbolic::Max(a, b) : symbolic::Min(a, b);
  } else
    return absl::UnimplementedError(
        absl::StrCat("unsupported operator ", target));
  if (!r.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(target, ": ", r.status().message()));
  return Value::Number(*r);
}

namespace {

// Refuses an op given (or, when `result`, making) a tensor of more elements
// than MaxOpElements(): its kernel would run for hours (a result this large
// was only allocated, its memory being bounded on its own).
absl::Status CheckElements(const OpDef& op, const std::vector<Value>& args,
                           bool result) {
  for (const Value& v : args) {
    std::vector<const Value*> tensors = {&v};
    for (const Value& e : v.list) tensors.push_back(&e);
    for (const Value* t : tensors) {
      if (!t->tensor.defined() || t->tensor.numel() <= MaxOpElements()) {
        continue;
      }
      std::vector<symbolic::Expr> sizes;
      for (int64_t s : t->tensor.sizes()) sizes.push_back(symbolic::Int(s));
      return absl::InvalidArgumentError(
          TooManyElements(op.target, result, symbolic::Int(t->tensor.numel()),
                          t->tensor.dtype(), sizes));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EvaluatedCall> EvalCall(
    const Node& n, const absl::flat_hash_map<const Node*, Value>& values,
    symbolic::ShapeEnv* shape_env, Generator* generator,
    const KernelOverrides* overrides, const std::function<void()>& bound) {
  EvaluatedCall r;
  std::vector<Value> args;
  for (const Arg& a : n.args()) {
    ASSIGN_OR_RETURN(Value v, ArgValue(a, values));
    args.push_back(std::move(v));
  }
  if (IsPythonOp(n.target())) {
    ASSIGN_OR_RETURN(r.out, EvalPythonOp(n.target(), args));
    return r;
  }
  r.op = OpRegistry::Global().Find(n.target());
  if (r.op == nullptr)
    return absl::UnimplementedError(absl::StrCat("unknown op ", n.target()));
  std::vector<std::pair<std::string, Value>> kwargs;
  for (const auto& [key, a] : n.kwargs()) {
    ASSIGN_OR_RETURN(Value v, ArgValue(a, values));
    kwargs.push_back({key, std::move(v)});
  }
  ASSIGN_OR_RETURN(r.args, BindArguments(r.op->schema, std::move(args),
                                         std::move(kwargs), r.op->target));
  if (shape_env == nullptr && !MutatesMetadata(n)) {
    // As PyTorch: no in-place write into a tensor with a broadcast (stride
    // 0) dimension.
    for (size_t a = 0; a < r.op->schema.arguments.size() && a < r.args.size();
         ++a) {
      const Tensor& t = r.args[a].tensor;
      if (!r.op->schema.arguments[a].is_written() || !t.defined()) continue;
      for (int64_t d = 0; d < t.dim(); ++d) {
        if (t.sizes()[d] > 1 && t.strides()[d] == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(r.op->target,
                           ": unsupported operation: more than one element of "
                           "the written-to tensor "
                           "refers to a single memory location. Please clone() "
                           "the tensor before "
                           "performing the operation."));
        }
      }
    }
  }
  // Views and builtins (getitem's element) allocate nothing and read
  // tensors their producers already counted.
  bool count = shape_env == nullptr && !r.op->HasTag(OpTag::kView) &&
               !r.op->HasTag(OpTag::kBuiltin);
  if (count) RETURN_IF_ERROR(CheckElements(*r.op, r.args, /*result=*/false));
  // The call owns the arguments while its function runs (r.args has them
  // back after): a storage that one argument alone holds is held once.
  OpCall call(*r.op, std::move(r.args), shape_env, generator);
  if (shape_env != nullptr) {
    ASSIGN_OR_RETURN(r.out, r.op->meta(call));
    r.args = call.args();
    return r;
  }
  // Every tensor the kernel allocates is bounded before it is allocated
  // (a view allocates none).
  std::optional<ScopedElementLimit> limit;
  if (count) limit.emplace(MaxOpElements());
  if (bound) bound();
  std::optional<absl::StatusOr<Value>> overridden;
  if (overrides != nullptr) {
    auto it = overrides->find(r.op->target);
    if (it != overrides->end()) overridden = it->second(call);
  }
  absl::StatusOr<Value> out =
      overridden.has_value() ? *std::move(overridden) : r.op->kernel(call);
  r.args = call.args();
  if (!out.ok() && limit && limit->refused()) {
    const ScopedElementLimit::Refusal& big = *limit->refused();
    std::vector<symbolic::Expr> sizes;
    for (int64_t s : big.sizes) sizes.push_back(symbolic::Int(s));
    return absl::InvalidArgumentError(
        TooManyElements(r.op->target, /*result=*/true,
                        symbolic::Int(Numel(big.sizes)), big.dtype, sizes));
  }
  if (!out.ok()) return out.status();
  r.out = *std::move(out);
  if (count) RETURN_IF_ERROR(CheckElements(*r.op, {r.out}, /*result=*/true));
  return r;
}

}  // namespace lathe::ir
