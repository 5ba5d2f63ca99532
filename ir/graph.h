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
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/tensor_meta.h"
#include "runtime/device.h"
#include "runtime/dtype.h"

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

class Graph;

class Node {
 public:
  enum class Kind : uint8_t { kPlaceholder, kCall, kGetAttr, kOutput };

  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  // The op ("aten.mm.default"), "getitem", "operator.add", or for a get_attr
  // node the attribute name.
  const std::string& target() const { return target_; }
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
  // Values whose last use is this node, as the text form's `x = None`.
  std::vector<std::string>& frees() { return frees_; }
  const std::vector<std::string>& frees() const { return frees_; }

 private:
  friend class Graph;
  Node() = default;

  Kind kind_ = Kind::kCall;
  std::string name_;
  std::string target_;
  std::vector<Arg> args_;
  std::vector<std::pair<std::string, Arg>> kwargs_;
  std::vector<Node*> users_;
  ValueMeta meta_;
  std::vector<std::pair<symbolic::Expr, std::string>> unbacked_bindings_;
  std::vector<std::string> frees_;
  Graph* graph_ = nullptr;
};

// A graph-level note from a `# lathe:` comment line, kept verbatim.
struct Directive {
  std::string text;  // after "# lathe: "
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

  // Creates a node before `before` (at the end when null). The name must be
  // unused; args must refer to nodes of this graph that come earlier.
  Node* Insert(Node::Kind kind, std::string name, std::string target,
               std::vector<Arg> args,
               std::vector<std::pair<std::string, Arg>> kwargs, ValueMeta meta,
               Node* before = nullptr);

  // A name not used yet, from `base` ("relu", "relu_1", ...).
  std::string UniqueName(absl::string_view base) const;

  // Makes every user of `from` use `to` instead.
  void ReplaceAllUsesWith(Node* from, Node* to);

  // Removes a node that has no users.
  absl::Status Erase(Node* node);

  // TopologicalSort()
  //
  // Reorders nodes so each comes after the nodes it uses, keeping the
  // current order wherever that already holds (stable); the output stays
  // last. Error (naming a node on it) when the uses form a cycle.
  absl::Status TopologicalSort();

  // Whether arguments refer only to earlier nodes, use lists match the
  // arguments, names are unique and there is exactly one output, last.
  absl::Status CheckStructure() const;

  std::vector<Directive>& directives() { return directives_; }
  const std::vector<Directive>& directives() const { return directives_; }
  // Whether the text had the `class GraphModule(torch.nn.Module):` wrapper,
  // and the class's name (make_fx names it after the function: `class
  // mlp(...)`, `class <lambda>(...)`).
  bool wrapped_in_class = true;
  std::string class_name = "GraphModule";
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
  std::list<std::unique_ptr<Node>> nodes_;
  absl::flat_hash_map<std::string, Node*> by_name_;
  std::vector<Directive> directives_;
};

// GraphBuilder
//
// Appends nodes in order and computes `x = None` frees when finished.
class GraphBuilder {
 public:
  GraphBuilder() : graph_(std::make_unique<Graph>()) {}

  Node* Placeholder(absl::string_view name, ValueMeta meta);
  Node* Call(absl::string_view name, absl::string_view target,
             std::vector<Arg> args,
             std::vector<std::pair<std::string, Arg>> kwargs = {},
             ValueMeta meta = {});
  Node* Output(std::vector<Node*> results);
  // The graph, with frees: each value is freed after its last use.
  std::unique_ptr<Graph> Finish();

 private:
  std::unique_ptr<Graph> graph_;
};

// ComputeFrees()
//
// Sets every node's frees to the values whose last use it is (as FX prints
// them), except values the output returns.
void ComputeFrees(Graph& graph);

}  // namespace lathe::ir

#endif  // LATHE_IR_GRAPH_H_
