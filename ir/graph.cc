#include "ir/graph.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "check.h"

namespace lathe::ir {

Arg Arg::Of(Node* n) {
  Arg a;
  a.kind = Kind::kNode;
  a.node = n;
  return a;
}
Arg Arg::None() { return Arg(); }
Arg Arg::Bool(bool v) {
  Arg a;
  a.kind = Kind::kBool;
  a.b = v;
  return a;
}
Arg Arg::Int(int64_t v) {
  Arg a;
  a.kind = Kind::kInt;
  a.i = v;
  return a;
}
Arg Arg::Float(double v) {
  Arg a;
  a.kind = Kind::kFloat;
  a.f = v;
  return a;
}
Arg Arg::String(std::string v) {
  Arg a;
  a.kind = Kind::kString;
  a.s = std::move(v);
  return a;
}
Arg Arg::OfDType(DType d) {
  Arg a;
  a.kind = Kind::kDType;
  a.dtype = d;
  return a;
}
Arg Arg::OfDevice(Device d) {
  Arg a;
  a.kind = Kind::kDevice;
  a.device = d;
  return a;
}
Arg Arg::Layout(std::string name) {
  Arg a;
  a.kind = Kind::kLayout;
  a.s = std::move(name);
  return a;
}
Arg Arg::MemoryFormat(std::string name) {
  Arg a;
  a.kind = Kind::kMemoryFormat;
  a.s = std::move(name);
  return a;
}
Arg Arg::List(std::vector<Arg> items) {
  Arg a;
  a.kind = Kind::kList;
  a.list = std::move(items);
  return a;
}

bool SameArg(const Arg& a, const Arg& b) {
  using K = Arg::Kind;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::kNode:
      return a.node == b.node;
    case K::kNone:
      return true;
    case K::kBool:
      return a.b == b.b;
    case K::kInt:
      return a.i == b.i;
    case K::kFloat:
      return std::memcmp(&a.f, &b.f, sizeof a.f) == 0;
    case K::kString:
    case K::kLayout:
    case K::kMemoryFormat:
      return a.s == b.s;
    case K::kDType:
      return a.dtype == b.dtype;
    case K::kDevice:
      return a.device == b.device;
    case K::kList:
      if (a.tuple != b.tuple || a.list.size() != b.list.size()) return false;
      for (size_t i = 0; i < a.list.size(); ++i) {
        if (!SameArg(a.list[i], b.list[i])) return false;
      }
      return true;
  }
  return false;
}

namespace {

void CollectNodes(const Arg& a, std::vector<Node*>* out) {
  if (a.kind == Arg::Kind::kNode) out->push_back(a.node);
  for (const Arg& item : a.list) CollectNodes(item, out);
}

void ReplaceIn(Arg& a, Node* from, Node* to) {
  if (a.kind == Arg::Kind::kNode && a.node == from) a.node = to;
  for (Arg& item : a.list) ReplaceIn(item, from, to);
}

}  // namespace

std::vector<Node*> Node::Inputs() const {
  std::vector<Node*> out;
  for (const Arg& a : args_) CollectNodes(a, &out);
  for (const auto& [name, a] : kwargs_) CollectNodes(a, &out);
  return out;
}

void Node::set_target(std::string target) {
  target_ = std::move(target);
  op_ = kind_ == Kind::kCall ? OpRegistry::Global().Find(target_) : nullptr;
}

void Node::ReplaceInput(Node* from, Node* to) {
  std::vector<Arg> args = args_;
  std::vector<std::pair<std::string, Arg>> kwargs = kwargs_;
  for (Arg& a : args) ReplaceIn(a, from, to);
  for (auto& [name, a] : kwargs) ReplaceIn(a, from, to);
  SetArgs(std::move(args), std::move(kwargs));
}

void Node::SetArgs(std::vector<Arg> args,
                   std::vector<std::pair<std::string, Arg>> kwargs) {
  // Only the inputs whose use count changes are touched: an edit of one
  // argument costs nothing on a value with thousands of users (x, lr).
  absl::flat_hash_map<Node*, int> delta;
  for (Node* in : Inputs()) --delta[in];
  args_ = std::move(args);
  kwargs_ = std::move(kwargs);
  std::vector<Node*> added;
  for (Node* in : Inputs()) {
    if (++delta[in] > 0) added.push_back(in);
  }
  for (auto& [in, d] : delta) {
    for (; d < 0; ++d) {
      auto it = std::find(in->users_.rbegin(), in->users_.rend(), this);
      if (it != in->users_.rend()) in->users_.erase(std::next(it).base());
    }
  }
  for (Node* in : added) in->users_.push_back(this);
}

std::vector<Node*> Graph::Placeholders() const {
  // Inputs come first in any verified graph: stop once all are found.
  std::vector<Node*> out;
  out.reserve(placeholders_);
  for (auto it = nodes_.begin();
       it != nodes_.end() && static_cast<int>(out.size()) < placeholders_;
       ++it) {
    if ((*it)->kind() == Node::Kind::kPlaceholder) out.push_back(it->get());
  }
  return out;
}

Node* Graph::output() const {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    if ((*it)->kind() == Node::Kind::kOutput) return it->get();
  }
  return nullptr;
}

Node* Graph::Find(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Node* Graph::Insert(Node::Kind kind, std::string name, std::string target,
                    std::vector<Arg> args,
                    std::vector<std::pair<std::string, Arg>> kwargs,
                    ValueMeta meta, Node* before) {
  LATHE_CHECK(!by_name_.contains(name)) << "duplicate node name " << name;
  LATHE_CHECK(before == nullptr || before->graph_ == this);
  std::unique_ptr<Node> node(new Node());
  node->kind_ = kind;
  node->name_ = std::move(name);
  node->set_target(std::move(target));
  node->meta_ = std::move(meta);
  node->graph_ = this;
  Node* raw = node.get();
  by_name_[raw->name_] = raw;
  placeholders_ += kind == Node::Kind::kPlaceholder;
  raw->position_ = nodes_.insert(
      before == nullptr ? nodes_.end() : before->position_, std::move(node));
  Number(raw);
  raw->SetArgs(std::move(args), std::move(kwargs));
  return raw;
}

std::string DynamoName(absl::string_view target) {
  std::vector<absl::string_view> parts = absl::StrSplit(target, '.');
  if (parts.size() < 2) {
    std::string name(target);
    std::replace(name.begin(), name.end(), '.', '_');
    return name;
  }
  std::string name(parts[1]);
  if (absl::StartsWith(name, "__") && absl::EndsWith(name, "__") &&
      name.size() > 4) {
    name = name.substr(2, name.size() - 4);
  }
  if (absl::StartsWith(name, "sym_") && parts.size() == 3 &&
      parts[2] != "default") {
    absl::StrAppend(&name, "_", parts[2]);
  }
  return name;
}

absl::StatusOr<Node*> Graph::InsertCall(
    Node* before, std::string target, std::vector<Arg> args,
    std::vector<std::pair<std::string, Arg>> kwargs,
    absl::string_view name_hint) {
  std::string name =
      UniqueName(name_hint.empty() ? DynamoName(target) : name_hint);
  Node* n = Insert(Node::Kind::kCall, std::move(name), std::move(target),
                   std::move(args), std::move(kwargs), {}, before);
  if (meta_inference_ != nullptr) {
    if (absl::Status st = meta_inference_->Infer(*n); !st.ok()) {
      absl::Status erased = Erase(n);
      LATHE_CHECK(erased.ok()) << erased.message();
      return st;
    }
  }
  return n;
}

void Graph::Number(Node* node) {
  constexpr uint64_t kGap = uint64_t{1} << 20;
  auto it = node->position_;
  uint64_t prev = it == nodes_.begin() ? 0 : (*std::prev(it))->order_;
  auto next = std::next(it);
  if (next == nodes_.end()) {
    node->order_ = prev + kGap;
    return;
  }
  uint64_t after = (*next)->order_;
  if (after - prev > 1) {
    node->order_ = prev + (after - prev) / 2;
    return;
  }
  uint64_t order = 0;
  for (const auto& n : nodes_) n->order_ = order += kGap;
}

std::string Graph::UniqueName(absl::string_view base) const {
  // Suffixes count up per base from where the last search stopped, so
  // naming the 10,000th "mul" does not try mul_1 ... mul_9999 again.
  int& next = next_suffix_[base];
  std::string name =
      next == 0 ? std::string(base) : absl::StrCat(base, "_", next);
  while (by_name_.contains(name)) name = absl::StrCat(base, "_", ++next);
  return name;
}
void Graph::ReplaceAllUsesWith(Node* from, Node* to) {
  ReplaceUsesWithIf(from, to, [](const Node&) { return true; });
}

void Graph::ReplaceUsesWithIf(Node* from, Node* to,
                              const std::function<bool(const Node&)>& pred) {
  std::vector<Node*> users = from->users_;
  absl::flat_hash_set<Node*> done;
  for (Node* user : users) {
    if (!done.insert(user).second || !pred(*user)) continue;
    user->ReplaceInput(from, to);
  }
}

absl::Status Graph::Erase(Node* node) {
  if (!node->users_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot erase ", node->name_, ": it still has ", node->users_.size(),
        " user(s), first ", node->users_[0]->name_));
  }
  node->SetArgs({}, {});
  by_name_.erase(node->name_);
  placeholders_ -= node->kind_ == Node::Kind::kPlaceholder;
  nodes_.erase(node->position_);
  return absl::OkStatus();
}

void Graph::MoveBefore(Node* node, Node* before) {
  LATHE_CHECK(node->graph_ == this && before->graph_ == this);
  if (node == before) return;
  nodes_.splice(before->position_, nodes_, node->position_);
  Number(node);
}

void Graph::MoveAfter(Node* node, Node* after) {
  LATHE_CHECK(node->graph_ == this && after->graph_ == this);
  if (node == after) return;
  nodes_.splice(std::next(after->position_), nodes_, node->position_);
  Number(node);
}

bool Graph::IsBefore(const Node* a, const Node* b) const {
  LATHE_CHECK(a->graph_ == this && b->graph_ == this);
  return a->order_ < b->order_;
}

bool Node::HasEffect() const {
  // Python operators are pure; so is getitem. The grad-mode switch is
  // tagged kSideEffect.
  const OpDef* op = op_;
  if (op == nullptr) return false;
  if (op->HasTag(OpTag::kSideEffect) || op->HasTag(OpTag::kRandom)) {
    return true;
  }
  for (const Argument& a : op->schema.arguments) {
    if (a.is_written()) return true;
  }
  return false;
}

int Graph::EraseDeadNodes() {
  int erased = 0;
  // Backwards, so a chain of dead nodes goes in one walk.
  std::vector<Node*> backwards;
  backwards.reserve(nodes_.size());
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    backwards.push_back(it->get());
  }
  for (Node* n : backwards) {
    if (n->kind() != Node::Kind::kCall || !n->users().empty() || n->HasEffect())
      continue;
    absl::Status st = Erase(n);
    LATHE_CHECK(st.ok()) << st.message();
    ++erased;
  }
  return erased;
}

std::unique_ptr<Graph> Graph::Clone() const {
  auto g = std::make_unique<Graph>();
  absl::flat_hash_map<const Node*, Node*> copy;
  std::function<Arg(const Arg&)> map = [&](const Arg& a) {
    Arg b = a;
    if (a.kind == Arg::Kind::kNode) b.node = copy.at(a.node);
    for (Arg& item : b.list) item = map(item);
    return b;
  };
  for (const auto& n : nodes_) {
    std::vector<Arg> args;
    for (const Arg& a : n->args_) args.push_back(map(a));
    std::vector<std::pair<std::string, Arg>> kwargs;
    for (const auto& [k, a] : n->kwargs_) kwargs.push_back({k, map(a)});
    Node* c = g->Insert(n->kind_, n->name_, n->target_, std::move(args),
                        std::move(kwargs), n->meta_);
    c->unbacked_bindings_ = n->unbacked_bindings_;
    copy[n.get()] = c;
  }
  g->attributes_ = attributes_;
  g->pytree_params = pytree_params;
  g->output_template = output_template;
  g->meta_inference_ = meta_inference_;
  g->next_storage_ = next_storage_;
  return g;
}

absl::Status Graph::TopologicalSort() {
  // Kahn's algorithm, always taking the earliest ready node.
  absl::flat_hash_map<const Node*, int> position, waiting;
  std::vector<std::list<std::unique_ptr<Node>>::iterator> at;
  for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
    position[it->get()] = static_cast<int>(at.size());
    at.push_back(it);
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (const auto& n : nodes_) {
    absl::flat_hash_set<const Node*> inputs;
    for (Node* in : n->Inputs()) inputs.insert(in);
    waiting[n.get()] = static_cast<int>(inputs.size());
    if (inputs.empty()) ready.push(position[n.get()]);
  }
  std::list<std::unique_ptr<Node>> sorted;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    Node* n = at[i]->get();
    sorted.splice(sorted.end(), nodes_, at[i]);
    absl::flat_hash_set<const Node*> done;
    for (Node* user : n->users()) {
      if (done.insert(user).second && --waiting[user] == 0)
        ready.push(position[user]);
    }
  }
  if (!nodes_.empty()) {
    std::string name = nodes_.front()->name();
    sorted.splice(sorted.end(), nodes_);  // keep every node owned
    nodes_.splice(nodes_.end(), sorted);  // splicing keeps positions valid
    return absl::FailedPreconditionError(
        absl::StrCat("the graph has a cycle through '", name, "'"));
  }
  nodes_.splice(nodes_.end(), sorted);
  uint64_t order = 0;
  for (const auto& n : nodes_) n->order_ = order += uint64_t{1} << 20;
  return absl::OkStatus();
}

absl::Status Graph::CheckStructure() const {
  absl::flat_hash_set<const Node*> seen;
  absl::flat_hash_map<const Node*, int> uses;
  int outputs = 0;
  for (const auto& n : nodes_) {
    for (Node* in : n->Inputs()) {
      if (!seen.contains(in)) {
        return absl::FailedPreconditionError(absl::StrCat(
            n->name(), " uses ", in->name(), " before it is defined"));
      }
      ++uses[in];
    }
    if (n->kind() == Node::Kind::kOutput) {
      ++outputs;
      if (n.get() != nodes_.back().get()) {
        return absl::FailedPreconditionError("the output is not the last node");
      }
    }
    seen.insert(n.get());
  }
  for (const auto& n : nodes_) {
    if (static_cast<int>(n->users().size()) != uses[n.get()]) {
      return absl::InternalError(
          absl::StrCat("use list of ", n->name(), " is out of date"));
    }
  }
  if (outputs != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("a graph needs exactly one output, has ", outputs));
  }
  return absl::OkStatus();
}

Node* GraphBuilder::Placeholder(absl::string_view name, ValueMeta meta) {
  return graph_->Insert(Node::Kind::kPlaceholder, std::string(name),
                        std::string(name), {}, {}, std::move(meta));
}

Node* GraphBuilder::Call(absl::string_view name, absl::string_view target,
                         std::vector<Arg> args,
                         std::vector<std::pair<std::string, Arg>> kwargs,
                         ValueMeta meta) {
  return graph_->Insert(Node::Kind::kCall, graph_->UniqueName(name),
                        std::string(target), std::move(args), std::move(kwargs),
                        std::move(meta));
}

Node* GraphBuilder::Output(std::vector<Node*> results) {
  std::vector<Arg> items;
  for (Node* r : results) items.push_back(Arg::Of(r));
  return graph_->Insert(Node::Kind::kOutput, "output", "output",
                        {Arg::List(std::move(items))}, {}, {});
}

std::unique_ptr<Graph> GraphBuilder::Finish() { return std::move(graph_); }

}  // namespace lathe::ir
