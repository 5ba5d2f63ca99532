// -----------------------------------------------------------------------------
// File: conv_epilogues.h
// -----------------------------------------------------------------------------
//
// Fuses a convolution's pointwise epilogue into the library call (as
// Inductor's mkldnn fusions and oneDNN's post-ops): where a scheduled
// program calls sconv and the kernel right after it only finishes that
// result — adds a per-channel bias, then a residual tensor, then applies
// relu, each optional (the forms oneDNN runs as post-ops of the plain
// convolution's own implementation; runtime/convolution.h) — the call
// writes the finished values itself, into the kernel's output with the
// kernel's strides, and the kernel goes. The convolution's own buffer is then
// read by nothing and is neither stored nor allocated, so each fusion saves a
// pass over the activation.
//
// A kernel is fused only when it is exactly such an epilogue: one flat loop
// over the convolution's output elements (its ranges are the output's
// sizes), f32 throughout, every load either the convolution's result at the
// element the loop is at, the bias at its channel, or one residual at the
// same element in any strides; each value used once, one store. A residual
// that is the store's own buffer at the store's element (what reinplace
// leaves of `add` into a dead residual) becomes the accumulate post-op.
// Anything else keeps its kernel.
//
// Example (relu(conv + bias), from the scheduler's log):
//
//   FuseConvEpilogues(lowered, &log);
//   // log: "fuse k1 into k0: the convolution's epilogue as its post-ops
//   //       (bias, relu)"

#ifndef LATHE_CODEGEN_CONV_EPILOGUES_H_
#define LATHE_CODEGEN_CONV_EPILOGUES_H_

#include <string>
#include <vector>

#include "codegen/lowering.h"

namespace lathe::codegen {

// FuseConvEpilogues()
//
// Fuses each sconv call's epilogue kernel into the call, in place, logging
// one line per fusion; run by Schedule before memory planning where the
// target's runtime takes epilogues (Routines::sconv_epilogues).
void FuseConvEpilogues(LoweredGraph& lowered, std::vector<std::string>* log);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_CONV_EPILOGUES_H_
