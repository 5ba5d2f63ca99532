// -----------------------------------------------------------------------------
// File: graph.h
// -----------------------------------------------------------------------------
//
// The graph IR: an ordered list of nodes — placeholders (inputs), calls (ATen
// ops, getitem, Python operators on symbols), constants (get_attr) and one
// output — with use lists, as in torch.fx. Each node carries a ValueMeta.
// Order is the execution order; every argument refers to an earlier node.
//
// Example:
//
//   GraphBuilder b;
//   Node* x = b.Placeholder("x", ValueMeta::Tensor(meta));
//   Node* y = b.Call("relu", "aten.relu.default", {Arg::Of(x)});
//   b.Output({y});
//   std::unique_ptr<Graph> g = b.Finish();
//
// Targets are spelled as FX prints them without the "torch.ops." prefix:
// "aten.mm.default", "aten.add.Tensor"; "getitem" for x[i]; Python operators
// on symbols as "operator.add", "operator.mul", "operator.floordiv", ...

#ifndef LATHE_IR_GRAPH_H_
#define LATHE_IR_GRAPH_H_

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/op_registry.h"
#include "ir/tensor_meta.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "symbolic/evaluate.h"

namespace lathe::ir {

class Node;

// An argument of a call: a node or a Python literal as FX prints it.
struct Arg {
  enum class Kind : uint8_t {
    kNode,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kDType,         // torch.float32
    kDevice,        // device(type='cpu')
    kLayout,        // torch.strided
    kMemoryFormat,  // torch.contiguous_format
    kList,          // [a, b], or (a, b) when `tuple`
  };
  Kind kind = Kind::kNone;
  Node* node = nullptr;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // kString; the name for kLayout / kMemoryFormat
  DType dtype = DType::kFloat32;
  Device device;
  std::vector<Arg> list;
  bool tuple = false;  // kList spelled as a Python tuple

  static Arg Of(Node* n);
  static Arg None();
  static Arg Bool(bool v);
  static Arg Int(int64_t v);
  static Arg Float(double v);
  static Arg String(std::string v);
  static Arg OfDType(DType d);
  static Arg OfDevice(Device d);
  static Arg Layout(std::string name);
  static Arg MemoryFormat(std::string name);
  static Arg List(std::vector<Arg> items);
};

// SameArg()
//
// Whether two arguments are the same: nodes by identity, floats bit for bit
// (-0.0 is not 0.0; NaN is NaN), lists (and tuples) element by element.
bool SameArg(const Arg& a, const Arg& b);

class Graph;

class Node {
 public:
  enum class Kind : uint8_t { kPlaceholder, kCall, kGetAttr, kOutput };

  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  // The op ("aten.mm.default"), "getitem", "operator.add", or for a get_attr
  // node the attribute name.
  const std::string& target() const { return target_; }
  // The registered op a call node runs (graph builtins such as getitem
  // included), or null (Python operators, unknown targets, non-call nodes).
  const OpDef* op() const { return op_; }
  // Makes the node run `target` instead (same arguments); keeps op() right.
  void set_target(std::string target);
  const std::vector<Arg>& args() const { return args_; }
  const std::vector<std::pair<std::string, Arg>>& kwargs() const {
    return kwargs_;
  }
  // The nodes that use this one, in graph order (one entry per use).
  const std::vector<Node*>& users() const { return users_; }
  ValueMeta& meta() { return meta_; }
  const ValueMeta& meta() const { return meta_; }
  // The unbacked symbols this node introduces (u0 from x.item(), a
  // data-dependent size), each with where it sits in the node's value:
  // "" (the value itself), ".size(1)", "[0].size(0)".
  std::vector<std::pair<symbolic::Expr, std::string>>& unbacked_bindings() {
    return unbacked_bindings_;
  }
  const std::vector<std::pair<symbolic::Expr, std::string>>& unbacked_bindings()
      const {
    return unbacked_bindings_;
  }
  Graph* graph() const { return graph_; }

  // The nodes this one reads, in argument order (with repeats).
  std::vector<Node*> Inputs() const;
  // Replaces the arguments, keeping use lists right.
  void SetArgs(std::vector<Arg> args,
               std::vector<std::pair<std::string, Arg>> kwargs);
  // Makes every argument that is `from` refer to `to` instead.
  void ReplaceInput(Node* from, Node* to);
  // Whether the call has an effect beyond its value: it writes an argument,
  // asserts (_assert_scalar), draws random numbers (advancing the
  // generator), or is the grad-mode switch.
  bool HasEffect() const;

 private:
  friend class Graph;
  Node() = default;

  Kind kind_ = Kind::kCall;
  std::string name_;
  std::string target_;
  const OpDef* op_ = nullptr;
  // Where the node sits in its graph's list, and its order number there
  // (increasing along the list, with gaps): O(1) erase and IsBefore.
  std::list<std::unique_ptr<Node>>::iterator position_;
  uint64_t order_ = 0;
  std::vector<Arg> args_;
  std::vector<std::pair<std::string, Arg>> kwargs_;
  std::vector<Node*> users_;
  ValueMeta meta_;
  std::vector<std::pair<symbolic::Expr, std::string>> unbacked_bindings_;
  Graph* graph_ = nullptr;
};

// The bounds of a symbol, both inclusive (lo <= hi).
struct SymbolRange {
  int64_t lo = 0;
  int64_t hi = 0;
};

// GraphAttributes
//
// What the graph text's `# lathe:` lines say about the graph, parsed once by
// ParseGraph and written back by PrintGraph. Only the syntax is checked
// there; the steps that read an attribute check its names against the graph
// (shape propagation: inputs and symbols; AOT dispatch: composite types).
//
//   # lathe: hint s0 32               hints["s0"] = Int(32)
//   # lathe: hint zf0 0.5             hints["zf0"] = Float(0.5)
//   # lathe: range u0 0 16            ranges["u0"] = {0, 16}
//   # lathe: alias a b                alias_of["b"] = "a"
//   # lathe: composite x pair(pair, pair)
//                                     composites["x"] = "pair(pair, pair)"
//   # lathe: requires_grad x          requires_grad = {"x"}
//   # lathe: non_leaf x               non_leaf = {"x"}
//   # lathe: constant w               constants = {"w"}
struct GraphAttributes {
  // The example value of a symbol of the inputs (an int or a float), by
  // symbol name.
  std::map<std::string, symbolic::Value> hints;
  // The bounds of a symbol of the inputs or of one the graph makes (u0 from
  // x.item()), by symbol name.
  std::map<std::string, SymbolRange> ranges;
  // For an input that shares another input's storage, that other input
  // (`alias OTHER INPUT`), by input name.
  std::map<std::string, std::string> alias_of;
  // The composite type of a composite input, as written ("pair",
  // "pair(scaled_int8, plain)"; aot::DeclaredComposites reads it), by input
  // name.
  std::map<std::string, std::string> composites;
  // The inputs that require grad, and those that are not leaves.
  std::set<std::string> requires_grad;
  std::set<std::string> non_leaf;
  // The inputs frozen into the compiled code (Inductor's freezing): their
  // values are given at compile time (driver/freeze.h), and the graph reads
  // them as constants (get_attr nodes whose target is the name).
  std::set<std::string> constants;
  // Lines of no known kind (or empty), after "# lathe: ", as written: kept so
  // the text prints back; shape propagation rejects them.
  std::vector<std::string> unknown;
};

// MetaInference
//
// How a graph fills the meta of a node a pass creates (InsertCall): shape
// propagation installs one bound to its ShapeEnv (infer_meta.h). A graph
// without one leaves new nodes' metas empty.
class MetaInference {
 public:
  virtual ~MetaInference() = default;
  // Sets `node`'s meta and unbacked bindings from its inputs' metas.
  virtual absl::Status Infer(Node& node) = 0;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Nodes in order.
  const std::list<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<Node*> Placeholders() const;
  // The output node, or null before one is added.
  Node* output() const;
  // The node called `name`, or null.
  Node* Find(absl::string_view name) const;

  // Creates a node before `before` (at the end when null), in O(1). The
  // name must be unused; args must refer to nodes of this graph that come
  // earlier.
  Node* Insert(Node::Kind kind, std::string name, std::string target,
               std::vector<Arg> args,
               std::vector<std::pair<std::string, Arg>> kwargs, ValueMeta meta,
               Node* before = nullptr);

  // InsertCall()
  //
  // Creates a call of `target` before `before` (at the end when null),
  // named as Dynamo names it (`name_hint`, or the op's name when empty:
  // "aten.add.Tensor" -> add, add_1, ...), with its meta and unbacked
  // bindings from the graph's MetaInference. On an inference error the graph
  // is left as it was.
  absl::StatusOr<Node*> InsertCall(
      Node* before, std::string target, std::vector<Arg> args,
      std::vector<std::pair<std::string, Arg>> kwargs = {},
      absl::string_view name_hint = "");

  // A name not used yet, from `base` ("relu", "relu_1", ...).
  std::string UniqueName(absl::string_view base) const;

  // Makes every user of `from` use `to` instead.
  void ReplaceAllUsesWith(Node* from, Node* to);
  // Makes each user of `from` for which `pred(user)` holds use `to` instead.
  void ReplaceUsesWithIf(Node* from, Node* to,
                         const std::function<bool(const Node&)>& pred);

  // Removes a node that has no users, in O(its arguments).
  absl::Status Erase(Node* node);

  // Moves `node` to just before `before` / just after `after`. The caller
  // keeps the order valid (arguments first); Verify checks it.
  void MoveBefore(Node* node, Node* before);
  void MoveAfter(Node* node, Node* after);

  // Whether `a` comes before `b` (both of this graph), in O(1).
  bool IsBefore(const Node* a, const Node* b) const;

  // EraseDeadNodes()
  //
  // Erases call nodes whose values nothing uses and that have no effect:
  // not an op that writes an argument, an assert (_assert_scalar, ...), a
  // random op (it advances the generator) or the grad-mode switch. The
  // number erased.
  int EraseDeadNodes();

  // A deep copy: nodes, metas, bindings, the `# lathe:` attributes and the
  // fields below; it shares this graph's MetaInference.
  std::unique_ptr<Graph> Clone() const;

  // The meta inference for nodes passes create (null: none).
  MetaInference* meta_inference() const { return meta_inference_.get(); }
  void set_meta_inference(std::shared_ptr<MetaInference> m) {
    meta_inference_ = std::move(m);
  }
  // A storage identity no value of the graph has yet.
  StorageId NewStorageId() { return next_storage_++; }
  // Makes NewStorageId count from `next` (shape propagation restarts it).
  void ResetStorageIds(StorageId next) { next_storage_ = next; }

  // TopologicalSort()
  //
  // Reorders nodes so each comes after the nodes it uses, keeping the
  // current order wherever that already holds (stable); the output stays
  // last. Error (naming a node on it) when the uses form a cycle.
  absl::Status TopologicalSort();

  // Whether arguments refer only to earlier nodes, use lists match the
  // arguments, names are unique and there is exactly one output, last.
  absl::Status CheckStructure() const;

  // The `# lathe:` attributes (above).
  GraphAttributes& attributes() { return attributes_; }
  const GraphAttributes& attributes() const { return attributes_; }
  // make_fx's pytree form: forward's own parameters (`def forward(self, x,
  // params)`), which fx_pytree.tree_flatten_spec flattens into the
  // placeholders (x_1, params_1, params_2); the result is then rebuilt by
  // pytree.tree_unflatten. Empty for the plain form.
  std::vector<std::string> pytree_params;
  // A returned value nested in tuples (`return (a, (b, c))`, as make_fx
  // prints a tuple-returning op's result): the output node holds the flat
  // values (a, b, c) and this holds the shape they print in, '%' standing
  // for each ("(%, (%, %))"). Empty for a flat return.
  std::string output_template;

 private:
  // Gives `node` (just placed in the list) an order number between its
  // neighbours', renumbering the whole list when they have no gap left.
  void Number(Node* node);

  std::list<std::unique_ptr<Node>> nodes_;
  absl::flat_hash_map<std::string, Node*> by_name_;
  GraphAttributes attributes_;
  std::shared_ptr<MetaInference> meta_inference_;
  StorageId next_storage_ = 0;
  int placeholders_ = 0;  // how many of nodes_ are placeholders
  // UniqueName's next suffix to try, per base.
  mutable absl::flat_hash_map<std::string, int> next_suffix_;
};

// DynamoName()
//
// The name Dynamo gives a call of `target` (before uniquing): the op's name
// without namespace and overload ("aten.add.Tensor": add;
// "aten.__lshift__.Scalar": lshift), but sym_size_int and sym_stride_int as
// make_fx prints them.
std::string DynamoName(absl::string_view target);

// GraphBuilder
//
// Appends nodes in order.
class GraphBuilder {
 public:
  GraphBuilder() : graph_(std::make_unique<Graph>()) {}

  Node* Placeholder(absl::string_view name, ValueMeta meta);
  Node* Call(absl::string_view name, absl::string_view target,
             std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {},
             ValueMeta meta = {});
  Node* Output(std::vector<Node*> results);
  // The graph.
  std::unique_ptr<Graph> Finish();

 private:
  std::unique_ptr<Graph> graph_;
};

}  // namespace lathe::ir

#endif  // LATHE_IR_GRAPH_H_
