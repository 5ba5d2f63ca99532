// -----------------------------------------------------------------------------
// File: freeze.h
// -----------------------------------------------------------------------------
//
// Freezing (Inductor's freezing=True): inputs whose values are known when
// the graph is compiled, as a model's weights are for inference. The user
// marks them in the graph text (`# lathe: constant NAME`) or gives their
// values to the compile (lathec --freeze NAME=FILE.npy, CompileOptions::
// frozen); each becomes a constant the compiled function holds, so calls
// no longer pass it, the passes may compute with it (fold_frozen: batch
// norm folded into the convolution before it, constant subexpressions) and
// the library packs it once (a convolution's weights).
//
// Example:
//
//   ir::Constants owned;
//   ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> frozen,
//                    FreezeInputs(*parsed.written, {{"w", w}}, &owned));
//   // frozen: `w = self.w`, attributes().constants == {"w"}; owned["w"]
//   // a copy of w, laid out as w's annotation says.

#ifndef LATHE_DRIVER_FREEZE_H_
#define LATHE_DRIVER_FREEZE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/value.h"

namespace lathe {

// FreezeInputs()
//
// A copy of `written` in which each input `values` names, and each one a
// `# lathe: constant` line names (which must then be among them), is read as
// a constant: its placeholder becomes a get_attr of its name, listed in
// attributes().constants. Each value is checked against its input's
// annotation (dtype, sizes and strides, all concrete) and copied into
// `owned`, so the compiled function owns its constants and nothing the
// caller does later changes them (with `owned` null the values are checked
// and not copied: a graph every compile freezes again). An error names the
// input and what was expected: a name that is not a tensor input, a value
// that does not fit, an input the graph writes (in place or through a
// view).
absl::StatusOr<std::unique_ptr<ir::Graph>> FreezeInputs(
    const ir::Graph& written, const ir::Constants& values,
    ir::Constants* owned);

// FrozenValuesOf()
//
// The values of `graph`'s frozen constants from `frozen`, one per get_attr
// node of a frozen constant, in ir::InputSlots order (after the constants
// the caller gives).
std::vector<ir::Value> FrozenValuesOf(const ir::Graph& graph,
                                      const ir::Constants& frozen);

}  // namespace lathe

#endif  // LATHE_DRIVER_FREEZE_H_
