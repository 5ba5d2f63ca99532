#include "passes/remove_noop_ops.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/infer_meta.h"
#include "ir/op_registry.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::passes {
namespace {

using symbolic::Expr;

// A call's arguments by schema name, and what the pass asks of them.
class CallArgs {
 public:
  CallArgs(const ir::Node& node, symbolic::ShapeEnv& env)
      : node_(node), env_(env) {}

  // The argument called `name`, or null when left to its default.
  const ir::Arg* Get(absl::string_view name) const {
    const ir::OpSchema& s = node_.op()->schema;
    int i = s.ArgumentIndex(name);
    if (i >= 0 && i < static_cast<int>(node_.args().size())) {
      return &node_.args()[i];
    }
    for (const auto& [key, arg] : node_.kwargs()) {
      if (key == name) return &arg;
    }
    return nullptr;
  }
  // The tensor meta of the node argument called `name`, or null.
  const ir::TensorMeta* Tensor(absl::string_view name) const {
    const ir::Arg* a = Get(name);
    if (a == nullptr || a->kind != ir::Arg::Kind::kNode ||
        a->node->meta().kind != ir::ValueMeta::Kind::kTensor) {
      return nullptr;
    }
    return &a->node->meta().tensor;
  }
  // An int argument (a literal or a SymInt node) as an expression; `dflt`
  // when absent, nullopt for None or anything else.
  std::optional<Expr> Int(absl::string_view name,
                          std::optional<Expr> dflt = std::nullopt) const {
    const ir::Arg* a = Get(name);
    return a == nullptr ? dflt : IntOf(*a);
  }
  static std::optional<Expr> IntOf(const ir::Arg& a) {
    if (a.kind == ir::Arg::Kind::kInt) return symbolic::Int(a.i);
    if (a.kind == ir::Arg::Kind::kNode &&
        a.node->meta().kind == ir::ValueMeta::Kind::kSym &&
        a.node->meta().sym.is_int()) {
      return a.node->meta().sym;
    }
    return std::nullopt;
  }
  // Whether `e` is statically `v` (no guard).
  bool Is(const std::optional<Expr>& e, int64_t v) const {
    return e.has_value() && Eq(*e, symbolic::Int(v));
  }
  bool Eq(Expr a, Expr b) const {
    return a == b || env_.StaticallyKnownTrue(symbolic::Eq(a, b));
  }
  bool Ge(Expr a, Expr b) const {
    return a == b || env_.StaticallyKnownTrue(symbolic::Ge(a, b));
  }
  // Whether every element of the int list `name` is statically `v`.
  bool AllAre(absl::string_view name, int64_t v) const {
    const ir::Arg* a = Get(name);
    if (a == nullptr || a->kind != ir::Arg::Kind::kList) return false;
    for (const ir::Arg& e : a->list) {
      if (!Is(IntOf(e), v)) return false;
    }
    return true;
  }
  // Whether `name` is a dtype argument equal to self's dtype.
  bool DTypeIsSelfs(absl::string_view name, absl::string_view self) const {
    const ir::Arg* a = Get(name);
    const ir::TensorMeta* t = Tensor(self);
    return a != nullptr && t != nullptr && a->kind == ir::Arg::Kind::kDType &&
           a->dtype == t->dtype;
  }
  // Whether slicing `self` along `dim` from `start` to `end` by `step`
  // keeps every element (start 0, step 1, end at or past the size).
  bool FullRange(const ir::TensorMeta& self, std::optional<Expr> start,
                 std::optional<Expr> end) const {
    std::optional<Expr> dim = Int("dim", symbolic::Int(0));
    std::optional<Expr> step = Int("step", symbolic::Int(1));
    if (!start.has_value() || !end.has_value() || !dim.has_value() ||
        !dim->is_number() || !Is(start, 0) || !Is(step, 1)) {
      return false;
    }
    int64_t d = dim->int_value();
    if (d < 0) d += self.dim();
    if (d < 0 || d >= self.dim()) return false;
    return Ge(*end, symbolic::Int(std::numeric_limits<int64_t>::max())) ||
           Ge(*end, self.sizes[d]);
  }

 private:
  const ir::Node& node_;
  symbolic::ShapeEnv& env_;
};

// Where the value a no-op gives back sits among its arguments.
enum class Source { kSelf, kSecond, kOnlyListElement };

// Whether this call of the op gives its source back unchanged.
using Condition = bool (*)(const CallArgs&);

bool Always(const CallArgs&) { return true; }

bool SliceIsFull(const CallArgs& c) {
  const ir::TensorMeta* self = c.Tensor("self");
  return self != nullptr && c.FullRange(*self, c.Int("start"), c.Int("end"));
}

bool SliceScatterIsFull(const CallArgs& c) {
  const ir::TensorMeta* self = c.Tensor("self");
  const ir::TensorMeta* src = c.Tensor("src");
  if (self == nullptr || src == nullptr || self->dim() != src->dim()) {
    return false;
  }
  for (int64_t d = 0; d < self->dim(); ++d) {
    if (!c.Eq(self->sizes[d], src->sizes[d])) return false;
  }
  // None means the whole dimension here.
  Expr max = symbolic::Int(std::numeric_limits<int64_t>::max());
  const ir::Arg* start = c.Get("start");
  const ir::Arg* end = c.Get("end");
  return c.FullRange(*self,
                     start == nullptr || start->kind == ir::Arg::Kind::kNone
                         ? symbolic::Int(0)
                         : CallArgs::IntOf(*start),
                     end == nullptr || end->kind == ir::Arg::Kind::kNone
                         ? max
                         : CallArgs::IntOf(*end));
}

bool RepeatsAllOne(const CallArgs& c) { return c.AllAre("repeats", 1); }

bool PaddingAllZero(const CallArgs& c) { return c.AllAre("pad", 0); }

bool SameDTypeAsA(const CallArgs& c) { return c.DTypeIsSelfs("dtype", "a"); }

bool SameDTypeAsSelf(const CallArgs& c) {
  return c.DTypeIsSelfs("dtype", "self");
}

bool IntegerSelf(const CallArgs& c) {
  const ir::TensorMeta* self = c.Tensor("self");
  return self != nullptr && IsIntegral(self->dtype, /*include_bool=*/false);
}

bool ExponentIsIntOne(const CallArgs& c) {
  const ir::Arg* e = c.Get("exponent");
  return e != nullptr && e->kind == ir::Arg::Kind::kInt && e->i == 1;
}

bool OneTensor(const CallArgs& c) {
  const ir::Arg* t = c.Get("tensors");
  return t != nullptr && t->kind == ir::Arg::Kind::kList && t->list.size() == 1;
}

bool SameShape(const CallArgs& c) {
  const ir::TensorMeta* self = c.Tensor("self");
  const ir::Arg* size = c.Get("size");
  if (self == nullptr || size == nullptr ||
      size->kind != ir::Arg::Kind::kList ||
      static_cast<int64_t>(size->list.size()) != self->dim()) {
    return false;
  }
  for (int64_t d = 0; d < self->dim(); ++d) {
    std::optional<Expr> s = CallArgs::IntOf(size->list[d]);
    if (!s.has_value() || !c.Eq(*s, self->sizes[d])) return false;
  }
  return true;
}

// The registry (reference §2.1): every entry also needs SameMeta(node, src).
struct NoopRule {
  absl::string_view target;
  Source source;
  Condition condition;
};

constexpr NoopRule kRules[] = {
    {"aten.slice.Tensor", Source::kSelf, SliceIsFull},
    {"aten.slice_scatter.default", Source::kSecond, SliceScatterIsFull},
    {"aten.repeat.default", Source::kSelf, RepeatsAllOne},
    {"aten.constant_pad_nd.default", Source::kSelf, PaddingAllZero},
    {"prims.convert_element_type.default", Source::kSelf, SameDTypeAsA},
    {"aten.ceil.default", Source::kSelf, IntegerSelf},
    {"aten.floor.default", Source::kSelf, IntegerSelf},
    {"aten.round.default", Source::kSelf, IntegerSelf},
    {"aten.trunc.default", Source::kSelf, IntegerSelf},
    {"aten.pow.Tensor_Scalar", Source::kSelf, ExponentIsIntOne},
    {"aten.cat.default", Source::kOnlyListElement, OneTensor},
    {"aten.view.default", Source::kSelf, SameShape},
    {"aten.view.dtype", Source::kSelf, SameDTypeAsSelf},
    {"aten.copy.default", Source::kSecond, Always},
    {"aten.alias.default", Source::kSelf, Always},
    {"aten.clone.default", Source::kSelf, Always},
};

const NoopRule* FindRule(absl::string_view target) {
  for (const NoopRule& r : kRules) {
    if (r.target == target) return &r;
  }
  return nullptr;
}

// The node a no-op gives back, or null when that argument is no node.
ir::Node* SourceOf(const ir::Node& n, Source source) {
  const std::vector<ir::Arg>& args = n.args();
  const ir::Arg* a = nullptr;
  switch (source) {
    case Source::kSelf:
      if (!args.empty()) a = &args[0];
      break;
    case Source::kSecond:
      if (args.size() > 1) a = &args[1];
      break;
    case Source::kOnlyListElement:
      if (!args.empty() && args[0].kind == ir::Arg::Kind::kList &&
          args[0].list.size() == 1) {
        a = &args[0].list[0];
      }
      break;
  }
  return a != nullptr && a->kind == ir::Arg::Kind::kNode ? a->node : nullptr;
}

// same_meta: statically equal sizes and strides, same dtype and device.
bool SameMeta(const ir::TensorMeta& a, const ir::TensorMeta& b,
              const CallArgs& c) {
  if (a.dtype != b.dtype || a.device != b.device || a.dim() != b.dim()) {
    return false;
  }
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (!c.Eq(a.sizes[d], b.sizes[d]) || !c.Eq(a.strides[d], b.strides[d])) {
      return false;
    }
  }
  return true;
}

void Flatten(const ir::Arg& a, std::vector<ir::Node*>& out) {
  if (a.kind == ir::Arg::Kind::kNode) out.push_back(a.node);
  for (const ir::Arg& e : a.list) Flatten(e, out);
}

// The graph's boundary: inputs and (flattened) outputs, and their storages.
struct Boundary {
  absl::flat_hash_set<const ir::Node*> inputs, outputs;
  absl::flat_hash_set<ir::StorageId> input_storages, output_storages;
};

Boundary BoundaryOf(const ir::Graph& graph) {
  Boundary b;
  for (ir::Node* p : graph.Placeholders()) {
    b.inputs.insert(p);
    for (ir::StorageId s : p->meta().Storages()) b.input_storages.insert(s);
  }
  if (const ir::Node* out = graph.output(); out != nullptr) {
    std::vector<ir::Node*> results;
    for (const ir::Arg& a : out->args()) Flatten(a, results);
    for (ir::Node* r : results) {
      b.outputs.insert(r);
      for (ir::StorageId s : r->meta().Storages()) b.output_storages.insert(s);
    }
  }
  return b;
}

// The nodes that write an argument in place (the copy_ epilogue), with the
// written arguments.
struct Write {
  const ir::Node* writer;
  std::vector<const ir::Node*> written;
};

std::vector<Write> WritesOf(const ir::Graph& graph) {
  std::vector<Write> writes;
  for (const auto& n : graph.nodes()) {
    const ir::OpDef* op =
        n->kind() == ir::Node::Kind::kCall ? n->op() : nullptr;
    if (op == nullptr) continue;
    Write w{n.get(), {}};
    for (size_t i = 0; i < op->schema.arguments.size(); ++i) {
      if (op->schema.arguments[i].is_written() && i < n->args().size()) {
        std::vector<ir::Node*> nodes;
        Flatten(n->args()[i], nodes);
        w.written.insert(w.written.end(), nodes.begin(), nodes.end());
      }
    }
    if (!w.written.empty()) writes.push_back(std::move(w));
  }
  return writes;
}

bool WritesStorage(const Write& w, ir::StorageId storage) {
  for (const ir::Node* n : w.written) {
    if (n->meta().kind == ir::ValueMeta::Kind::kTensor &&
        n->meta().tensor.storage == storage) {
      return true;
    }
  }
  return false;
}

// Why removing copy-like `node` (a storage of its own) for `src` would
// change what a mutation does, or null: its own storage is written, or
// `src`'s is written after `node` but not after all of `node`'s uses
// (they would read the new value; PyTorch #174187).
const char* MutationConflict(const ir::Graph& graph, const ir::Node& node,
                             ir::StorageId node_storage,
                             ir::StorageId src_storage,
                             const std::vector<Write>& writes) {
  for (const Write& w : writes) {
    if (WritesStorage(w, node_storage)) return "it is written in place";
    if (!WritesStorage(w, src_storage) || graph.IsBefore(w.writer, &node)) {
      continue;
    }
    for (const ir::Node* user : node.users()) {
      if (!graph.IsBefore(user, w.writer)) {
        return "its source is written in place before a use of it";
      }
    }
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<bool> RemoveNoopOps::Run(ir::Graph& graph, PassContext& ctx) {
  Boundary boundary = BoundaryOf(graph);
  const std::vector<Write> writes = WritesOf(graph);
  std::vector<ir::Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  bool changed = false;
  // Only the node being visited is ever erased, so `order` stays valid.
  for (ir::Node* n : order) {
    if (n->kind() != ir::Node::Kind::kCall || n->op() == nullptr) continue;
    const NoopRule* rule = FindRule(n->target());
    if (rule == nullptr) continue;
    ir::Node* src = SourceOf(*n, rule->source);
    if (src == nullptr || src->meta().kind != ir::ValueMeta::Kind::kTensor ||
        n->meta().kind != ir::ValueMeta::Kind::kTensor) {
      continue;
    }
    const ir::StorageId node_storage = n->meta().tensor.storage;
    const ir::StorageId src_storage = src->meta().tensor.storage;
    const bool is_view = node_storage == src_storage;
    auto keep = [&](absl::string_view why) {
      ctx.Log("remove_noop_ops: keeps ", n->name(), ": ", why);
    };
    // Rule A: a copy returned by the graph stays a storage of its own.
    if (!is_view && boundary.output_storages.contains(node_storage) &&
        (boundary.input_storages.contains(src_storage) ||
         boundary.output_storages.contains(src_storage))) {
      keep(
          "its storage is an output's and its source's an input's or output's");
      continue;
    }
    // Rule B: an output never becomes the very input or other output.
    if (is_view && boundary.outputs.contains(n) &&
        (boundary.inputs.contains(src) || boundary.outputs.contains(src))) {
      keep("it is an output and its source an input or output");
      continue;
    }
    if (!is_view) {
      if (const char* why =
              MutationConflict(graph, *n, node_storage, src_storage, writes)) {
        keep(why);
        continue;
      }
    }
    CallArgs call(*n, ctx.env());
    if (!SameMeta(n->meta().tensor, src->meta().tensor, call) ||
        !rule->condition(call)) {
      continue;
    }
    std::vector<ir::Node*> users;
    for (ir::Node* u : n->users()) {
      if (u->kind() == ir::Node::Kind::kCall) users.push_back(u);
    }
    // What the outputs now hold: `src` in place of `n`, `src`'s storage
    // where a view of `n` is returned.
    if (boundary.outputs.erase(n) > 0) boundary.outputs.insert(src);
    if (boundary.output_storages.contains(node_storage)) {
      boundary.output_storages.insert(src_storage);
    }
    ctx.Log("remove_noop_ops: ", n->name(), " -> ", src->name());
    graph.ReplaceAllUsesWith(n, src);
    RETURN_IF_ERROR(graph.Erase(n));
    // The users now read `src`: a view of it lives in its storage.
    RETURN_IF_ERROR(RefreshMetas(graph, ctx.env(), users).status());
    changed = true;
  }
  return changed;
}

}  // namespace lathe::passes
