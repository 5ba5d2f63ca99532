// -----------------------------------------------------------------------------
// File: buffer_layouts.h
// -----------------------------------------------------------------------------
//
// The layout of each buffer lowering allocates for a value no one else sees
// (internal to //codegen:lowering). As Inductor's layout optimization does,
// a value between convolutions is stored channels-last (N, spatial..., C
// innermost), the layout oneDNN's and cuDNN's convolutions compute in, so
// the library reorders neither its result nor the next one's input: the
// convolutions' results, and what pointwise ops, pools and normalizations
// compute from them, propagated forward through ops of the same rank.
//
// Only values whose strides nothing can observe take it: a 4-d or 5-d
// value the meta lays out contiguously, that is not a graph output, that no
// view, alias or mutation shares the storage of (a view reads its storage
// through its own meta, which assumes the meta's layout). Everything else
// is stored as its meta says, as before. Kernels read every buffer through
// its own strides, so the choice changes no value.
//
// Example (in Lowerer::Run, then when realizing node n's value):
//
//   BufferLayouts layouts(graph, [&](const Node* n) -> const ir::ValueMeta& {
//     return Meta(n);
//   });
//   std::vector<Expr> strides = layouts.Strides(n, -1, TMeta(n));

#ifndef LATHE_CODEGEN_LOWER_BUFFER_LAYOUTS_H_
#define LATHE_CODEGEN_LOWER_BUFFER_LAYOUTS_H_

#include <functional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "ir/graph.h"
#include "ir/tensor_meta.h"
#include "symbolic/expr.h"

namespace lathe::codegen::lower {

// TransposedOnLibrary()
//
// Whether a transposed convolution node runs as the library's convolution
// over its input spread out with zeros (lower/nn.cc): where the spread
// input stays within 4x the input and output together, about C_in * S
// against C_in + C_out * S elements per input position (S: the strides'
// product); not for one that turns many channels into few at a large
// stride (768 into 3 at 16x16 would spread 175 MB for a 0.6 MB result), or
// whose channel counts the graph does not fix.
bool TransposedOnLibrary(const ir::Node& n);

class BufferLayouts {
 public:
  using MetaFn = std::function<const ir::ValueMeta&(const ir::Node*)>;

  BufferLayouts() = default;
  // Decides for every node of `graph`, whose metas `meta` gives.
  BufferLayouts(const ir::Graph& graph, const MetaFn& meta);

  // Whether node n's value (element `element` of a tuple value; -1 for a
  // tensor value; a getitem asks for its tuple's element) is stored
  // channels-last.
  bool ChannelsLast(const ir::Node* n, int element = -1) const;

  // The strides a new buffer for node n's value takes: `m`'s own, or
  // channels-last (ChannelsLast()).
  std::vector<symbolic::Expr> Strides(const ir::Node* n, int element,
                                      const ir::TensorMeta& m) const;

  // `m` with Strides() (its storage offset 0 where they changed).
  ir::TensorMeta Layout(const ir::Node* n, int element,
                        const ir::TensorMeta& m) const;

 private:
  absl::flat_hash_set<std::pair<const ir::Node*, int>> channels_last_;
};

}  // namespace lathe::codegen::lower

#endif  // LATHE_CODEGEN_LOWER_BUFFER_LAYOUTS_H_
