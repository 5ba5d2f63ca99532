#include "ir/interpreter.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/op_registry.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "symbolic/printer.h"

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

namespace {

const OpDef* OpOf(const Node& n) {
  return n.kind() == Node::Kind::kCall ? OpRegistry::Global().Find(n.target())
                                       : nullptr;
}

}  // namespace

bool IsInplace(const Node& n) {
  const OpDef* op = OpOf(n);
  return op != nullptr && !op->schema.arguments.empty() &&
         op->schema.arguments[0].is_written() && !n.args().empty() &&
         n.args()[0].kind == Arg::Kind::kNode;
}

bool IsView(const Node& n) {
  if (n.kind() != Node::Kind::kCall || n.args().empty() ||
      n.args()[0].kind != Arg::Kind::kNode) {
    return false;
  }
  if (n.target() == "getitem") return IsView(*n.args()[0].node);
  const OpDef* op = OpOf(n);
  // A return aliasing a written argument (an out= overload's `out`) is
  // that argument, not a view of the first.
  return op != nullptr && !IsInplace(n) && !op->schema.returns.empty() &&
         op->schema.returns[0].alias.has_value() &&
         !op->schema.returns[0].alias->is_write;
}

const Node* TensorObject(const Node& n) {
  const Node* at = &n;
  while (IsInplace(*at)) at = at->args()[0].node;
  return at;
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
         target == "torch.sym_min" || target == "torch.sym_sum" ||
         target == kSetGradEnabled;
}

absl::StatusOr<Value> EvalPythonOp(absl::string_view target,
                                   const std::vector<Value>& args) {
  if (target == kSetGradEnabled) {
    // Grad mode only matters to autograd metadata; here it is a no-op.
    if (args.size() != 1 || !args[0].AsBool().ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(target, " takes one bool"));
    }
    return Value::None();
  }
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

absl::StatusOr<EvaluatedCall> EvalCall(
    const Node& n, const absl::flat_hash_map<const Node*, Value>& values,
    symbolic::ShapeEnv* shape_env, Generator* generator) {
  EvaluatedCall r;
  std::vector<Value> args;
  for (const Arg& a : n.args()) {
    ASSIGN_OR_RETURN(Value v, ArgValue(a, values));
    args.push_back(std::move(v));
  }
  if (n.target() == "getitem") {
    absl::StatusOr<int64_t> index =
        args.size() == 2 ? args[1].AsInt() : absl::StatusOr<int64_t>(0);
    int64_t size = args.empty() ? 0 : static_cast<int64_t>(args[0].list.size());
    if (args.size() != 2 || !index.ok() || args[0].kind != Value::Kind::kList ||
        *index < -size || *index >= size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot index ", args.empty() ? "nothing" : args[0].DebugString(),
          " with ", args.size() < 2 ? "nothing" : args[1].DebugString()));
    }
    r.out = args[0].list[*index < 0 ? *index + size : *index];
    return r;
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
  if (shape_env == nullptr && !MutatesMetadata(n.target())) {
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
  OpCall call(*r.op, r.args, shape_env, generator);
  ASSIGN_OR_RETURN(
      r.out, shape_env == nullptr ? r.op->kernel(call) : r.op->meta(call));
  return r;
}

namespace {

// Binds size symbols of annotations to input values and checks the rest.
class InputChecker {
 public:
  // Checks input `position`, or a constant when position < 0.
  absl::Status Check(const Node& p, int position, const Value& v) {
    const ValueMeta& m = p.meta();
    std::string where =
        position < 0 ? absl::StrCat("constant 'self.", p.target(), "'")
                     : absl::StrCat("input ", position, " ('", p.name(), "')");
    if (m.kind == ValueMeta::Kind::kNone) return absl::OkStatus();
    if (m.kind == ValueMeta::Kind::kSym) {
      if (!v.is_number()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": expected a ", m.sym.is_float() ? "float" : "int",
            " scalar (", m.ToAnnotation(), "), got ", v.DebugString()));
      }
      if (m.sym.is_float() != v.number.is_float()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": expected a ", m.sym.is_float() ? "float" : "int",
            " scalar, got ", v.DebugString()));
      }
      return Bind(where, m.sym, v.number);
    }
    if (m.kind != ValueMeta::Kind::kTensor) return absl::OkStatus();
    if (!v.is_tensor()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected a tensor ", m.ToAnnotation(),
                       ", got ", v.DebugString()));
    }
    const TensorMeta& t = m.tensor;
    if (v.tensor.dtype() != t.dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected dtype ", ShortName(t.dtype), ", got ",
                       ShortName(v.tensor.dtype())));
    }
    if (v.tensor.dim() != t.dim()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": expected ", t.dim(), " dimensions (", t.ToAnnotation(),
          "), got ", v.tensor.dim(), " (", v.tensor.ToString(), ")"));
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      std::string dim_where = absl::StrCat(where, " size(", d, ")");
      RETURN_IF_ERROR(
          Bind(dim_where, t.sizes[d], symbolic::Int(v.tensor.sizes()[d])));
    }
    // The layout the graph was compiled for: a stride matters where its
    // dimension has more than one element.
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (v.tensor.sizes()[d] < 2) continue;
      std::string dim_where = absl::StrCat(where, " stride(", d, ")");
      RETURN_IF_ERROR(
          Bind(dim_where, t.strides[d], symbolic::Int(v.tensor.strides()[d])));
    }
    return absl::OkStatus();
  }

  // Checks the sizes and strides that are expressions of symbols, once every
  // input has bound its symbols.
  absl::Status Finish() const {
    symbolic::Assignment values;
    for (const auto& [symbol, e] : bound_) {
      if (e.is_number() && e.is_int()) {
        values[symbol] = symbolic::Value::Int(e.int_value());
      }
    }
    for (const Deferred& d : deferred_) {
      absl::StatusOr<symbolic::Value> want = symbolic::Evaluate(d.want, values);
      if (!want.ok() || want->type != symbolic::ExprType::kInt) continue;
      if (want->i != d.got) {
        return absl::InvalidArgumentError(
            absl::StrCat(d.where, ": expected ", symbolic::ToString(d.want),
                         " = ", want->i, ", got ", d.got));
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Bind(const std::string& where, symbolic::Expr want,
                    symbolic::Expr got) {
    if (want.is_symbol()) {
      auto [it, inserted] = bound_.emplace(want, got);
      if (!inserted && it->second != got) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": ", want.name(), " is ", symbolic::ToString(it->second),
            " from an earlier input, got ", symbolic::ToString(got)));
      }
      return absl::OkStatus();
    }
    if (want.is_number()) {
      if (want != got) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": expected ", symbolic::ToString(want),
                         ", got ", symbolic::ToString(got)));
      }
      return absl::OkStatus();
    }
    if (got.is_number() && got.is_int()) {
      deferred_.push_back({where, want, got.int_value()});
    }
    return absl::OkStatus();  // an expression of symbols: see Finish()
  }

  struct Deferred {
    std::string where;
    symbolic::Expr want;
    int64_t got;
  };
  absl::flat_hash_map<symbolic::Expr, symbolic::Expr> bound_;
  std::vector<Deferred> deferred_;
};

bool SameStorage(const Value& v, const Storage& s) {
  if (v.is_tensor()) return v.tensor.defined() && v.tensor.storage() == s;
  for (const Value& item : v.list) {
    if (SameStorage(item, s)) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<Interpretation> Interpret(
    const Graph& graph, std::vector<Value> inputs,
    const absl::flat_hash_map<std::string, Value>& constants, uint64_t seed) {
  std::vector<Node*> placeholders = graph.Placeholders();
  Generator generator(seed);
  if (inputs.size() != placeholders.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the graph takes ", placeholders.size(), " inputs, got ",
                     inputs.size()));
  }
  absl::flat_hash_map<const Node*, Value> env;
  InputChecker checker;
  for (size_t i = 0; i < placeholders.size(); ++i) {
    RETURN_IF_ERROR(
        checker.Check(*placeholders[i], static_cast<int>(i), inputs[i]));
    env[placeholders[i]] = inputs[i];
  }
  RETURN_IF_ERROR(checker.Finish());
  Interpretation result;
  result.mutated_inputs.assign(placeholders.size(), false);
  for (const auto& node : graph.nodes()) {
    const Node& n = *node;
    auto fail = [&](const absl::Status& s) {
      return absl::Status(s.code(),
                          absl::StrCat("node '", n.name(), "': ", s.message()));
    };
    switch (n.kind()) {
      case Node::Kind::kPlaceholder:
        continue;
      case Node::Kind::kGetAttr: {
        auto it = constants.find(n.target());
        if (it == constants.end()) {
          return fail(absl::InvalidArgumentError(
              absl::StrCat("constant 'self.", n.target(), "' has no value")));
        }
        RETURN_IF_ERROR(checker.Check(n, -1, it->second));
        env[&n] = it->second;
        continue;
      }
      case Node::Kind::kOutput: {
        absl::StatusOr<Value> out = ArgValue(n.args()[0], env);
        if (!out.ok()) return fail(out.status());
        result.outputs = out->list;
        continue;
      }
      case Node::Kind::kCall:
        break;
    }
    absl::StatusOr<EvaluatedCall> call =
        EvalCall(n, env, /*shape_env=*/nullptr, &generator);
    if (!call.ok()) return fail(call.status());
    Value out = std::move(call->out);
    if (const OpDef* op = call->op; op != nullptr) {
      // Which inputs did a written argument reach?
      for (size_t a = 0; a < op->schema.arguments.size(); ++a) {
        if (!op->schema.arguments[a].is_written()) continue;
        for (size_t p = 0; p < placeholders.size(); ++p) {
          if (inputs[p].is_tensor() &&
              SameStorage(call->args[a], inputs[p].tensor.storage())) {
            result.mutated_inputs[p] = true;
          }
        }
      }
    }
    if (MutatesMetadata(n.target()) && !n.args().empty() &&
        n.args()[0].kind == Arg::Kind::kNode) {
      SetObjectValue(*n.args()[0].node, out, env);
    }
    env[&n] = std::move(out);
  }
  return result;
}

}  // namespace lathe::ir
