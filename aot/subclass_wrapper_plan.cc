#include "aot/subclass_wrapper_plan.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "status_macros.h"

namespace lathe::aot {
namespace {

const Operand& Follow(const Operand& o, const std::vector<int>& path) {
  const Operand* at = &o;
  for (int k : path) at = &at->composite->inner[k];
  return *at;
}

std::string PathName(int arg, const std::vector<int>& path,
                     const CompositeLayout* root) {
  std::string s = absl::StrCat("argument ", arg);
  const CompositeLayout* at = root;
  for (int k : path) {
    absl::StrAppend(&s, ".", at->type->inner_names()[k]);
    at = &at->inner[k];
  }
  return s;
}

// C++ for args[arg] followed through `path`.
std::string CppFollow(int arg, const std::vector<int>& path) {
  std::string s = absl::StrCat("args[", arg, "]");
  for (int k : path) s = absl::StrCat(s, ".composite->inner[", k, "]");
  return s;
}

std::string TypeVar(const CompositeType* t) {
  return absl::StrCat("type_", t->name());
}

// args[arg] followed through `path` in the C ABI's LatheValue tree.
std::string CFollow(int arg, const std::vector<int>& path) {
  std::string s = absl::StrCat("args[", arg, "]");
  for (int k : path) s = absl::StrCat(s, ".inner[", k, "]");
  return s;
}

}  // namespace

absl::StatusOr<SubclassWrapperPlan> SubclassWrapperPlan::Build(
    std::vector<CompositeLayout> arguments,
    std::vector<CompositeLayout> results) {
  SubclassWrapperPlan plan;
  // Validate shapes of the layouts.
  std::function<absl::Status(const CompositeLayout&)> valid =
      [&](const CompositeLayout& l) -> absl::Status {
    if (l.type == nullptr) return absl::OkStatus();
    if (l.inner.size() != l.type->inner_names().size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("layout ", l.ToString(), ": ", l.type->name(), " has ",
                       l.type->inner_names().size(), " inner values"));
    }
    for (const CompositeLayout& i : l.inner) RETURN_IF_ERROR(valid(i));
    for (const auto* dims : {&l.symbolic_sizes, &l.symbolic_strides}) {
      for (int d : *dims) {
        if (d < 0 || d >= l.rank) {
          return absl::InvalidArgumentError(
              absl::StrCat("layout ", l.ToString(), ": symbolic dim ", d,
                           " of an outer rank of ", l.rank));
        }
      }
    }
    return absl::OkStatus();
  };
  for (const auto* list : {&arguments, &results}) {
    for (const CompositeLayout& l : *list) RETURN_IF_ERROR(valid(l));
  }
  // Unwrap: checks (parents first), then takes in flatten order.
  for (int a = 0; a < static_cast<int>(arguments.size()); ++a) {
    const CompositeLayout& root = arguments[a];
    plan.num_dense_args_ += root.Slots(/*argument=*/true);
    if (root.frozen) {
      plan.takes_.push_back({Take::Kind::kEmpty, a, {}, 0});
      continue;
    }
    std::vector<int> path;
    std::function<void(const CompositeLayout&)> walk =
        [&](const CompositeLayout& l) {
          plan.checks_.push_back({a, path, l.type});
          if (l.type == nullptr) {
            plan.takes_.push_back({Take::Kind::kValue, a, path, 0});
            return;
          }
          for (int k = 0; k < static_cast<int>(l.inner.size()); ++k) {
            path.push_back(k);
            walk(l.inner[k]);
            path.pop_back();
          }
        };
    walk(root);
    for (int d : root.symbolic_sizes) {
      plan.takes_.push_back({Take::Kind::kSize, a, {}, d});
    }
    for (int d : root.symbolic_strides) {
      plan.takes_.push_back({Take::Kind::kStride, a, {}, d});
    }
  }
  // Rewrap: postorder builds per result.
  for (const CompositeLayout& r : results) {
    std::vector<Make> steps;
    std::function<void(const CompositeLayout&)> walk =
        [&](const CompositeLayout& l) {
          if (l.type == nullptr) {
            steps.push_back({nullptr, 0});
            return;
          }
          for (const CompositeLayout& i : l.inner) walk(i);
          steps.push_back({l.type, static_cast<int>(l.inner.size())});
        };
    walk(r);
    plan.builds_.push_back(std::move(steps));
    plan.num_dense_results_ += r.Slots(/*argument=*/false);
  }
  plan.arguments_ = std::move(arguments);
  plan.results_ = std::move(results);
  return plan;
}

absl::StatusOr<std::vector<Operand>> SubclassWrapperPlan::Unwrap(
    absl::Span<const Operand> args) const {
  if (args.size() < arguments_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected at least ", arguments_.size(),
                     " arguments, got ", args.size()));
  }
  for (const Check& c : checks_) {
    const Operand& v = Follow(args[c.arg], c.path);
    bool composite = v.kind == Operand::Kind::kComposite;
    if (c.type == nullptr ? composite
                          : !composite || v.composite->type != c.type) {
      return absl::InvalidArgumentError(absl::StrCat(
          PathName(c.arg, c.path, &arguments_[c.arg]), ": expected ",
          c.type == nullptr ? "a plain value" : c.type->name(), ", got ",
          v.ToString()));
    }
  }
  std::vector<Operand> out;
  out.reserve(num_dense_args_ + (args.size() - arguments_.size()));
  for (const Take& t : takes_) {
    switch (t.kind) {
      case Take::Kind::kValue:
        out.push_back(Follow(args[t.arg], t.path));
        break;
      case Take::Kind::kEmpty:
        out.emplace_back();
        break;
      case Take::Kind::kSize:
        out.push_back(Operand::Int(OuterSizes(args[t.arg])[t.dim]));
        break;
      case Take::Kind::kStride:
        out.push_back(Operand::Int(OuterStrides(args[t.arg])[t.dim]));
        break;
    }
  }
  for (size_t k = arguments_.size(); k < args.size(); ++k) {
    out.push_back(args[k]);  // trailing: forwarded as they are
  }
  return out;
}

absl::StatusOr<std::vector<Operand>> SubclassWrapperPlan::Rewrap(
    std::vector<Operand> dense) const {
  if (static_cast<int>(dense.size()) != num_dense_results_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", num_dense_results_, " dense results, got ", dense.size()));
  }
  std::vector<Operand> out;
  out.reserve(results_.size());
  std::vector<Operand> stack;
  size_t next = 0;
  for (const std::vector<Make>& steps : builds_) {
    for (const Make& b : steps) {
      if (b.type == nullptr) {
        stack.push_back(std::move(dense[next++]));
        continue;
      }
      absl::Span<Operand> inner(&stack[stack.size() - b.arity], b.arity);
      ASSIGN_OR_RETURN(Operand made,
                       b.type->Unflatten(inner, OuterSizes(inner[0]),
                                         OuterStrides(inner[0])));
      stack.resize(stack.size() - b.arity);
      stack.push_back(std::move(made));
    }
    out.push_back(std::move(stack.back()));
    stack.pop_back();
  }
  return out;
}

std::string SubclassWrapperPlan::CppSource(const std::string& name) const {
  std::string out;
  absl::flat_hash_set<const CompositeType*> types;
  for (const Check& c : checks_) {
    if (c.type != nullptr) types.insert(c.type);
  }
  auto declare_types =
      [&](const absl::flat_hash_set<const CompositeType*>& ts) {
        std::vector<std::string> names;
        for (const CompositeType* t : ts)
          names.push_back(std::string(t->name()));
        std::sort(names.begin(), names.end());
        std::string s;
        for (const std::string& n : names) {
          absl::StrAppend(&s,
                          "  static const lathe::CompositeType* const type_", n,
                          " = lathe::FindCompositeType(\"", n, "\");\n");
        }
        return s;
      };
  // Unwrap.
  absl::StrAppend(
      &out, "// Unwraps composite arguments into the compiled function's\n",
      "// dense arguments (generated by lathe from a SubclassWrapperPlan).\n",
      "absl::Status ", name, "_unwrap(absl::Span<const lathe::Operand> args,\n",
      std::string(name.size() + 21, ' '),
      "std::vector<lathe::Operand>* out) {\n", declare_types(types),
      "  if (args.size() < ", arguments_.size(), ") {\n",
      "    return absl::InvalidArgumentError(\"expected at least ",
      arguments_.size(), " arguments\");\n  }\n");
  for (const Check& c : checks_) {
    std::string v = CppFollow(c.arg, c.path);
    std::string what = PathName(c.arg, c.path, &arguments_[c.arg]);
    if (c.type == nullptr) {
      absl::StrAppend(
          &out, "  if (", v, ".kind == lathe::Operand::Kind::kComposite) {\n",
          "    return absl::InvalidArgumentError(absl::StrCat(\"", what,
          ": expected a plain value, got \", ", v, ".ToString()));\n  }\n");
    } else {
      absl::StrAppend(&out, "  if (", v,
                      ".kind != lathe::Operand::Kind::kComposite || ", v,
                      ".composite->type != ", TypeVar(c.type), ") {\n",
                      "    return absl::InvalidArgumentError(absl::StrCat(\"",
                      what, ": expected ", c.type->name(), ", got \", ", v,
                      ".ToString()));\n  }\n");
    }
  }
  // Assigning into the caller's vector reuses its tensors' buffers from the
  // previous call.
  absl::StrAppend(&out, "  out->resize(", num_dense_args_, " + args.size() - ",
                  arguments_.size(), ");\n");
  int slot = 0;
  for (const Take& t : takes_) {
    absl::StrAppend(&out, "  (*out)[", slot++, "] = ");
    switch (t.kind) {
      case Take::Kind::kValue:
        absl::StrAppend(&out, CppFollow(t.arg, t.path), ";\n");
        break;
      case Take::Kind::kEmpty:
        absl::StrAppend(&out, "lathe::Operand();  // argument ", t.arg,
                        " is frozen\n");
        break;
      case Take::Kind::kSize:
      case Take::Kind::kStride:
        absl::StrAppend(
            &out, "lathe::Operand::Int(lathe::",
            t.kind == Take::Kind::kSize ? "OuterSizes" : "OuterStrides",
            "(args[", t.arg, "])[", t.dim, "]);\n");
        break;
    }
  }
  absl::StrAppend(&out, "  for (size_t k = ", arguments_.size(),
                  "; k < args.size(); ++k) (*out)[",
                  num_dense_args_ - static_cast<int>(arguments_.size()),
                  " + k] = args[k];\n", "  return absl::OkStatus();\n}\n\n");
  // Rewrap.
  absl::flat_hash_set<const CompositeType*> built;
  for (const auto& steps : builds_) {
    for (const Make& b : steps) {
      if (b.type != nullptr) built.insert(b.type);
    }
  }
  absl::StrAppend(
      &out, "// Rebuilds the user-facing results from the dense ones.\n",
      "absl::Status ", name, "_rewrap(absl::Span<lathe::Operand> dense,\n",
      std::string(name.size() + 21, ' '),
      "std::vector<lathe::Operand>* out) {\n", declare_types(built),
      "  if (dense.size() != ", num_dense_results_, ") {\n",
      "    return absl::InvalidArgumentError(\"expected ", num_dense_results_,
      " dense results\");\n  }\n  out->resize(", results_.size(), ");\n");
  int next = 0, temp = 0;
  for (size_t r = 0; r < builds_.size(); ++r) {
    std::vector<std::string> stack;
    for (const Make& b : builds_[r]) {
      if (b.type == nullptr) {
        stack.push_back(absl::StrCat("dense[", next++, "]"));
        continue;
      }
      std::vector<std::string> inner(stack.end() - b.arity, stack.end());
      stack.resize(stack.size() - b.arity);
      int t = temp++;
      std::string v = absl::StrCat("v", t), in = absl::StrCat("in", t);
      std::vector<std::string> moved;
      for (const std::string& i : inner) {
        moved.push_back(absl::StrCat("std::move(", i, ")"));
      }
      absl::StrAppend(&out, "  lathe::Operand ", in, "[] = {",
                      absl::StrJoin(moved, ", "), "};\n",
                      "  ASSIGN_OR_RETURN(lathe::Operand ", v, ", ",
                      TypeVar(b.type), "->Unflatten(absl::MakeSpan(", in,
                      "), lathe::OuterSizes(", in, "[0]), lathe::OuterStrides(",
                      in, "[0])));\n");
      stack.push_back(v);
    }
    absl::StrAppend(&out, "  (*out)[", r, "] = std::move(", stack.back(),
                    ");\n");
  }
  absl::StrAppend(&out, "  return absl::OkStatus();\n}\n");
  return out;
}

std::string SubclassWrapperPlan::CSource(const std::string& name) const {
  const int num_args = static_cast<int>(arguments_.size());
  std::string out = absl::StrCat(
      "// The composite wrapper over the kernel ABI's LatheValue (generated "
      "by\n// lathe from a SubclassWrapperPlan).\n",
      "static int ", name, "_same(const char* a, const char* b) {\n",
      "  if (a == 0) return 0;\n",
      "  while (*a != 0 && *a == *b) { ++a; ++b; }\n",
      "  return *a == *b;\n}\n",
      "// *to = *from, moved, into to's own sizes and strides arrays.\n",
      "static void ", name, "_move(LatheValue* to, const LatheValue* from) {\n",
      "  int64_t* sizes = to->sizes; int64_t* strides = to->strides;\n",
      "  LatheValue* inner = to->inner; int64_t n = to->num_inner;\n",
      "  *to = *from; to->sizes = sizes; to->strides = strides;\n",
      "  to->inner = inner; to->num_inner = n;\n",
      "  for (int64_t d = 0; d < from->ndim; ++d) {\n",
      "    sizes[d] = from->sizes[d]; strides[d] = from->strides[d];\n",
      "  }\n}\n\n");
  // Unwrap.
  absl::StrAppend(&out,
                  "// The dense inputs for the user's arguments: 0, or "
                  "LATHE_CALL_BAD_INPUTS\n// (the host's Unwrap says why).\n",
                  "static int ", name,
                  "_unwrap(const LatheValue* args, int64_t num_args,\n",
                  "    LatheValue* dense, int64_t num_dense) {\n",
                  "  if (num_args < ", num_args,
                  " || num_dense != ", num_dense_args_, " + num_args - ",
                  num_args, ") return LATHE_CALL_BAD_INPUTS;\n");
  // A run of plain arguments is one loop (a model's hundred weights are
  // otherwise a hundred statements for the C++ compiler to read).
  auto plain_check = [](const Check& c) {
    return c.type == nullptr && c.path.empty();
  };
  for (size_t i = 0; i < checks_.size(); ++i) {
    const Check& c = checks_[i];
    std::string v = CFollow(c.arg, c.path);
    if (plain_check(c)) {
      size_t end = i + 1;
      while (end < checks_.size() && plain_check(checks_[end]) &&
             checks_[end].arg == checks_[end - 1].arg + 1) {
        ++end;
      }
      absl::StrAppend(&out, "  for (int64_t k = ", c.arg, "; k < ",
                      checks_[end - 1].arg + 1,
                      "; ++k) if (args[k].kind == LATHE_VALUE_COMPOSITE) "
                      "return LATHE_CALL_BAD_INPUTS;\n");
      i = end - 1;
      continue;
    }
    if (c.type == nullptr) {
      absl::StrAppend(&out, "  if (", v,
                      ".kind == LATHE_VALUE_COMPOSITE) return "
                      "LATHE_CALL_BAD_INPUTS;\n");
      continue;
    }
    absl::StrAppend(&out, "  if (", v, ".kind != LATHE_VALUE_COMPOSITE || !",
                    name, "_same(", v, ".type, \"", c.type->name(), "\") || ",
                    v, ".num_inner != ", c.type->inner_names().size(), ") ",
                    "return LATHE_CALL_BAD_INPUTS;\n");
    if (c.path.empty() && arguments_[c.arg].rank >= 0) {
      absl::StrAppend(&out, "  if (", v, ".ndim != ", arguments_[c.arg].rank,
                      ") return LATHE_CALL_BAD_INPUTS;\n");
    }
  }
  int slot = 0;
  auto plain_take = [](const Take& t) {
    return t.kind == Take::Kind::kValue && t.path.empty();
  };
  for (size_t i = 0; i < takes_.size(); ++i) {
    const Take& t = takes_[i];
    if (plain_take(t)) {
      size_t end = i + 1;
      while (end < takes_.size() && plain_take(takes_[end]) &&
             takes_[end].arg == takes_[end - 1].arg + 1) {
        ++end;
      }
      const int n = static_cast<int>(end - i);
      absl::StrAppend(&out, "  for (int64_t k = 0; k < ", n, "; ++k) dense[",
                      slot, " + k] = args[", t.arg, " + k];\n");
      slot += n;
      i = end - 1;
      continue;
    }
    std::string d = absl::StrCat("dense[", slot++, "]");
    switch (t.kind) {
      case Take::Kind::kValue:
        absl::StrAppend(&out, "  ", d, " = ", CFollow(t.arg, t.path), ";\n");
        break;
      case Take::Kind::kEmpty:
        absl::StrAppend(&out, "  ", d, " = LatheValue{};  // argument ", t.arg,
                        " is frozen\n");
        break;
      case Take::Kind::kSize:
      case Take::Kind::kStride:
        absl::StrAppend(&out, "  ", d, " = LatheValue{}; ", d,
                        ".kind = LATHE_VALUE_INT; ", d, ".i = args[", t.arg,
                        "].", t.kind == Take::Kind::kSize ? "sizes" : "strides",
                        "[", t.dim, "];\n");
        break;
    }
  }
  absl::StrAppend(&out, "  for (int64_t k = ", num_args,
                  "; k < num_args; ++k) dense[", num_dense_args_ - num_args,
                  " + k] = args[k];\n  return 0;\n}\n\n");
  // The results' shape, as the caller made it.
  std::string shaped, rewrap;
  int next = 0;
  std::function<void(const CompositeLayout&, const std::string&)> walk =
      [&](const CompositeLayout& l, const std::string& to) {
        if (l.type == nullptr) {
          absl::StrAppend(&rewrap, "  ", name, "_move(&", to, ", &dense[",
                          next++, "]);\n");
          return;
        }
        absl::StrAppend(&shaped, "  if (", to, ".inner == 0 || ", to,
                        ".num_inner != ", l.inner.size(), ") return 0;\n");
        for (size_t k = 0; k < l.inner.size(); ++k) {
          walk(l.inner[k], absl::StrCat(to, ".inner[", k, "]"));
        }
        // The outer sizes and strides are the first inner value's, as
        // Rewrap's; the outer dtype is the type's rule, which the host
        // applies when it rebuilds the composite.
        std::string first = absl::StrCat(to, ".inner[0]");
        absl::StrAppend(&rewrap, "  ", to, ".kind = LATHE_VALUE_COMPOSITE; ",
                        to, ".type = \"", l.type->name(), "\"; ", to,
                        ".dtype = ", first, ".dtype; ", to, ".ndim = ", first,
                        ".ndim; ", to, ".data = 0; ", to, ".storage = 0;\n",
                        "  for (int64_t d = 0; d < ", first, ".ndim; ++d) { ",
                        to, ".sizes[d] = ", first, ".sizes[d]; ", to,
                        ".strides[d] = ", first, ".strides[d]; }\n");
      };
  for (size_t r = 0; r < results_.size(); ++r) {
    walk(results_[r], absl::StrCat("results[", r, "]"));
  }
  absl::StrAppend(
      &out,
      "// Whether the caller shaped `results` as the results' layouts say.\n",
      "static int ", name, "_shaped(const LatheValue* results, int64_t n) {\n",
      "  if (n < ", results_.size(), ") return 0;\n", shaped,
      "  return 1;\n}\n\n", "// The user's results from the first ",
      num_dense_results_, " dense ones (moved).\n", "static void ", name,
      "_rewrap(LatheValue* dense, LatheValue* results) {\n", rewrap, "}\n");
  return out;
}

}  // namespace lathe::aot
