// -----------------------------------------------------------------------------
// File: graph_text.h
// -----------------------------------------------------------------------------
//
// lathe's native graph text: PyTorch's GraphModule.print_readable() output,
// so a graph copied from PyTorch's logs parses as is (DESIGN.md §3):
//
//   class GraphModule(torch.nn.Module):
//       def forward(self, x: "f32[s0, 16][16, 1]cpu", w: "f32[16, 32][32,
//       1]cpu"):
//           mm: "f32[s0, 32][32, 1]cpu" = torch.ops.aten.mm.default(x, w);  x =
//           None relu: "f32[s0, 32][32, 1]cpu" =
//           torch.ops.aten.relu.default(mm) return (relu,)
//
// Also accepted: a bare `def forward`, annotations without strides or device,
// `Sym(expr)` annotations, `y = x[0]`, Python operators on symbols
// (`add = sym_size_int + 1`), `c = self.c` constants, keyword arguments,
// literals (ints, floats incl. inf/nan, bools, None, strings, lists,
// torch.float32, device(type='cpu'), torch.strided, torch.contiguous_format),
// comments, and `# lathe: ...` lines, which become the graph's attributes
// (GraphAttributes) and print back first, one kind after another.
// PrintGraph writes the same form: PrintGraph(ParseGraph(t)) == t for text
// in that form. Errors are one line: "line 3:17: 'w2' is not defined".

#ifndef LATHE_IR_GRAPH_TEXT_H_
#define LATHE_IR_GRAPH_TEXT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "symbolic/evaluate.h"

namespace lathe::ir {

// ParseGraph()
//
// The graph in `text`.
absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(absl::string_view text);

// PrintGraph()
//
// `graph` in print_readable() form.
std::string PrintGraph(const Graph& graph);

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
