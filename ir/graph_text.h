// -----------------------------------------------------------------------------
// File: graph_text.h
// -----------------------------------------------------------------------------
//
// lathe's native graph text: PyTorch's GraphModule.print_readable() output,
// so a graph copied from PyTorch's logs parses as is (DESIGN.md §3):
//
//   class GraphModule(torch.nn.Module):
//       def forward(self, x: "f32[s0, 16]", w: "f32[16, 32]"):
//           mm: "f32[s0, 32]" = torch.ops.aten.mm.default(x, w);  x = None
//           relu: "f32[s0, 32]" = torch.ops.aten.relu.default(mm)
//           return (relu,)
//
// Also accepted: a bare `def forward`, annotations without strides or device,
// `Sym(expr)` annotations, `y = x[0]`, Python operators on symbols
// (`add = sym_size_int + 1`), `c = self.c` constants, keyword arguments,
// literals (ints, floats incl. inf/nan, bools, None, strings, lists,
// torch.float32, device(type='cpu'), torch.strided, torch.contiguous_format),
// comments, and `# lathe: ...` lines, which become the graph's attributes
// (GraphAttributes) and print back first, one kind after another.
// PrintGraph writes the same form; how a text chose to write it (the class
// line, annotations without strides or device) is not part of the graph but
// PrintOptions, which ParseGraphWithStyle returns with the graph. Errors are
// one line: "line 3:17: 'w2' is not defined".

#ifndef LATHE_IR_GRAPH_TEXT_H_
#define LATHE_IR_GRAPH_TEXT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "ir/tensor_meta.h"
#include "symbolic/evaluate.h"

namespace lathe::ir {

// PrintOptions
//
// How PrintGraph writes a graph where print_readable()'s form allows a
// choice. The defaults write what print_readable() does; ParseGraphWithStyle
// gives the options that write a text back as it was. Not part of the graph:
// passes neither see nor keep them.
struct PrintOptions {
  // The `class NAME(torch.nn.Module):` line around forward, and NAME (make_fx
  // names it after the function: `class mlp(...)`, `class <lambda>(...)`).
  bool wrap_in_class = true;
  std::string class_name = "GraphModule";
  // The annotations written without strides or device ("f32[3, 4]"), by node
  // name: how each tensor of the annotation is written, in order (see
  // ValueMeta::ToAnnotation). A node not listed (one a pass made, say) is
  // written in full.
  absl::flat_hash_map<std::string, std::vector<AnnotationStyle>> annotations;
};

// ParseGraph()
//
// The graph in `text`.
absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(absl::string_view text);

// ParseGraphWithStyle()
//
// The graph in `text`, and the options that print it back as `text` wrote
// it: PrintGraph(*p.graph, p.style) == text for text in PrintGraph's form.
struct ParsedGraph {
  std::unique_ptr<Graph> graph;
  PrintOptions style;
};
absl::StatusOr<ParsedGraph> ParseGraphWithStyle(absl::string_view text);

// PrintGraph()
//
// `graph` in print_readable() form, written as `options` say.
std::string PrintGraph(const Graph& graph, const PrintOptions& options = {});

// PyFloat()
//
// A float as Python's repr() writes it ("0.5", "1e-05", "inf", "nan").
std::string PyFloat(double v);

// PyNumber()
//
// An int or float (a `# lathe: hint`'s value) as Python's repr() writes it
// ("32", "0.5").
std::string PyNumber(const symbolic::Value& v);

}  // namespace lathe::ir

#endif  // LATHE_IR_GRAPH_TEXT_H_
