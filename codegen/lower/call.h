// -----------------------------------------------------------------------------
// File: call.h
// -----------------------------------------------------------------------------
//
// A call node's arguments as its op's schema binds them (internal to
// //codegen:lowering): each argument given, or its schema default, read as
// an int, an int list, a bool or a string by position or by name.
//
// Example:
//
//   Call c(node);
//   ASSIGN_OR_RETURN(int64_t dim, c.Int("dim"));
//   if (!c.Has("weight")) ...
//   return c.Error("dim out of range");  // "node 'x' (aten.sum.dim_IntList):
//   ..."

#ifndef LATHE_CODEGEN_LOWER_CALL_H_
#define LATHE_CODEGEN_LOWER_CALL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codegen/lower/kernel_builder.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "status_macros.h"

namespace lathe::codegen::lower {

// One argument of a call as the schema binds it: given, or its default.
struct Bound {
  const Arg* arg = nullptr;  // null: the schema default (or absent)
  const ir::DefaultValue* def = nullptr;
  bool is_none() const {
    if (arg != nullptr) return arg->kind == Arg::Kind::kNone;
    return def == nullptr || def->kind == ir::DefaultValue::Kind::kNone;
  }
};

// A call node bound to its op's schema.
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
  // The schema position of argument `name`, or -1.
  int Index(absl::string_view name) const {
    return op_.schema.ArgumentIndex(name);
  }
  // Argument `i` as bound.
  const Bound& at(int i) const { return bound_[i]; }
  // Whether argument `name` exists and is not None.
  bool Has(absl::string_view name) const {
    int i = Index(name);
    return i >= 0 && !bound_[i].is_none();
  }
  // Argument `i`'s node, or null when it is not a node.
  Node* NodeAt(int i) const {
    const Arg* a = bound_[i].arg;
    return a != nullptr && a->kind == Arg::Kind::kNode ? a->node : nullptr;
  }
  // Argument `i` as a known int (a bool is 0 or 1).
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
  // Int() by name.
  absl::StatusOr<int64_t> Int(absl::string_view name) const {
    return Int(Index(name));
  }
  // Argument `name` as a bool.
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
  // Argument `name` as a string ("" when absent).
  absl::StatusOr<std::string> String(absl::string_view name) const {
    const Bound& b = bound_[Index(name)];
    if (b.arg != nullptr && b.arg->kind == Arg::Kind::kString) return b.arg->s;
    if (b.def != nullptr) return b.def->string_value;
    return std::string();
  }
  // An Unimplemented error naming the node and its op.
  absl::Status Error(absl::string_view message) const {
    return absl::UnimplementedError(
        absl::StrCat("node '", n_.name(), "' (", op_.target, "): ", message));
  }

 private:
  const Node& n_;
  const OpDef& op_;
  std::vector<Bound> bound_;
};

}  // namespace lathe::codegen::lower

#endif  // LATHE_CODEGEN_LOWER_CALL_H_
