#include "ir/interpreter.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/alias_info.h"
#include "ir/op_registry.h"
#include "status_macros.h"
#include "symbolic/evaluate.h"
#include "symbolic/printer.h"

namespace lathe::ir {

namespace {

// Binds size symbols of annotations to input values and checks the rest.
class InputChecker {
 public:
  // Checks `v` against the annotation `m`; errors start with `where`.
  absl::Status Check(const ValueMeta& m, const std::string& where,
                     const Value& v) {
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

std::string WhereOf(const Node& n, int position) {
  return n.kind() == Node::Kind::kGetAttr
             ? absl::StrCat("constant 'self.", n.target(), "'")
             : absl::StrCat("input ", position, " ('", n.name(), "')");
}

}  // namespace

std::vector<InputSlot> InputSlots(const Graph& graph) {
  std::vector<InputSlot> slots;
  std::vector<Node*> placeholders = graph.Placeholders();
  for (size_t i = 0; i < placeholders.size(); ++i) {
    slots.push_back({placeholders[i]->meta(),
                     WhereOf(*placeholders[i], static_cast<int>(i))});
  }
  // The constants the caller gives, then the frozen ones (the compiled
  // function's own).
  const std::set<std::string>& frozen = graph.attributes().constants;
  for (bool frozen_ones : {false, true}) {
    for (const auto& node : graph.nodes()) {
      if (node->kind() == Node::Kind::kGetAttr &&
          (frozen.count(node->target()) > 0) == frozen_ones) {
        slots.push_back({node->meta(), WhereOf(*node, -1)});
      }
    }
  }
  return slots;
}

absl::Status CheckInputs(const std::vector<InputSlot>& slots,
                         const std::vector<const Value*>& values) {
  if (values.size() != slots.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", slots.size(), " inputs and constants, got ",
                     values.size()));
  }
  InputChecker checker;
  for (size_t k = 0; k < slots.size(); ++k) {
    RETURN_IF_ERROR(checker.Check(slots[k].meta, slots[k].where, *values[k]));
  }
  return checker.Finish();
}

absl::StatusOr<Interpretation> Interpret(
    const Graph& graph, std::vector<Value> inputs,
    const absl::flat_hash_map<std::string, Value>& constants, uint64_t seed,
    const KernelOverrides* overrides) {
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
    RETURN_IF_ERROR(checker.Check(
        placeholders[i]->meta(), WhereOf(*placeholders[i], static_cast<int>(i)),
        inputs[i]));
    env[placeholders[i]] = inputs[i];
  }
  RETURN_IF_ERROR(checker.Finish());
  Interpretation result;
  result.mutated_inputs.assign(placeholders.size(), false);
  // Each value is dropped as its last user's kernel starts (as eager
  // PyTorch frees a tensor with its last reference; the call holds its
  // arguments until it returns): the peak memory is the live values', a
  // freed block serves a later allocation of its size, and a kernel may
  // write its result over an operand nothing else holds.
  std::vector<const Node*> order;
  absl::flat_hash_map<const Node*, int> position;
  for (const auto& node : graph.nodes()) {
    position[node.get()] = static_cast<int>(order.size());
    order.push_back(node.get());
  }
  std::vector<std::vector<const Node*>> dead_after(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    int last = static_cast<int>(i);
    for (const Node* u : order[i]->users()) last = std::max(last, position[u]);
    dead_after[last].push_back(order[i]);
  }
  for (size_t at = 0; at < order.size(); ++at) {
    if (at > 0) {
      for (const Node* v : dead_after[at - 1]) env.erase(v);
    }
    const Node& n = *order[at];
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
        RETURN_IF_ERROR(checker.Check(n.meta(), WhereOf(n, -1), it->second));
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
    // The values this call reads last are let go of before its kernel
    // runs: a kernel that then holds a storage alone may reuse it.
    absl::StatusOr<EvaluatedCall> call =
        EvalCall(n, env, /*shape_env=*/nullptr, &generator, overrides, [&] {
          for (const Node* v : dead_after[at]) env.erase(v);
        });
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
    if (MutatesMetadata(n) && !n.args().empty() &&
        n.args()[0].kind == Arg::Kind::kNode) {
      SetObjectValue(*n.args()[0].node, out, env);
    }
    env[&n] = std::move(out);
  }
  return result;
}

}  // namespace lathe::ir
