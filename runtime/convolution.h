// -----------------------------------------------------------------------------
// File: convolution.h
// -----------------------------------------------------------------------------
//
// The f32 convolution generated kernels call through the kernel ABI
// (LatheKernelRuntime::sconv): PyTorch's aten.convolution without
// transposition, 1 to 3 spatial dims, groups, stride, padding and dilation,
// on operands of any strides, and the pointwise epilogue the scheduler fused
// into it (codegen/conv_epilogues.h): a per-channel bias, then in order up to
// kSconvMaxPostOps of: add a residual tensor, add the output's own previous
// values, relu. It runs as a oneDNN convolution primitive with the epilogue
// as its bias and post-ops (created once per geometry and cached; operands
// reordered into the layouts oneDNN picks). An epilogue oneDNN does not
// take, or would take only with a slower implementation than the plain
// convolution's, runs the plain primitive and the epilogue as a loop (one
// thread: a fallback); what oneDNN refuses altogether (an empty or
// overlapping operand) a direct loop nest.
//
// The geometry is one int64 array, so the ABI entry stays one C signature:
//
//   s (spatial dims), groups, N, C, O,
//   input sizes [s], kernel sizes [s], output sizes [s],
//   strides [s], paddings [s], dilations [s]  (PyTorch's: 1 is dense),
//   x offset, x strides [2 + s], w offset, w strides [2 + s],
//   out offset, out strides [2 + s],
//   flags (kSconvFrozenWeights: w is a frozen constant),
//   the epilogue: bias (1: epilogue operand 0 is an f32 [O] vector added
//   per output channel), post-op count, kSconvMaxPostOps post-op codes
//   (kSconvPost*; unused ones 0), residual offset and strides [2 + s]
//   (for kSconvPostAdd: the next epilogue operand, read at the output's
//   sizes with these strides).
//
// Example (a 3x3 convolution of a [1, 2, 5, 5] input, 4 output channels,
// then relu(out + bias)):
//
//   std::vector<int64_t> g = ConvGeometry(...);  // see the test
//   const float* epilogue[] = {bias};
//   lathe::Sconv(g.data(), x, w, epilogue, out);

#ifndef LATHE_RUNTIME_CONVOLUTION_H_
#define LATHE_RUNTIME_CONVOLUTION_H_

#include <cstdint>

namespace lathe {

// The number of int64 entries of a geometry with `s` spatial dims.
constexpr int64_t SconvGeometrySize(int64_t s) { return 24 + 10 * s; }

// The geometry's flag for weights that are a frozen constant (`# lathe:
// constant`): no one writes them while their owner (a LoadedGraph) lives,
// so they are packed into the library's layout once, at their first call,
// and kept until ForgetFrozenWeights.
constexpr int64_t kSconvFrozenWeights = 1;

// The epilogue's post-ops, applied in order to each output element after
// the bias: add the residual operand's element, add the element the output
// held before the call (a residual the result is written over), relu (NaN
// stays NaN). Both adds are oneDNN's sum post-op (the residual copied into
// the output first).
constexpr int64_t kSconvMaxPostOps = 4;
constexpr int64_t kSconvPostAdd = 1;
constexpr int64_t kSconvPostAccumulate = 2;
constexpr int64_t kSconvPostRelu = 3;

// Where the epilogue block begins in a geometry with `s` spatial dims.
constexpr int64_t SconvEpilogueAt(int64_t s) { return 15 + 9 * s; }

// out = epilogue(convolution(x, w)) as the geometry says (s in [1, 3];
// lowering calls it for nothing else), through oneDNN where it takes the
// geometry and the reference loops otherwise. `epilogue` holds the bias
// and the residual the geometry names, in that order (null for none).
void Sconv(const int64_t* geometry, const float* x, const float* w,
           const float* const* epilogue, float* out);

// The convolution without its epilogue (through oneDNN where it takes it)
// into a temporary buffer, then the epilogue as a loop: what Sconv runs
// when oneDNN refuses the epilogue but not the convolution.
void SconvThenEpilogue(const int64_t* geometry, const float* x, const float* w,
                       const float* const* epilogue, float* out);

// Drops what Sconv keeps for frozen weights inside the `bytes` bytes from
// `data` (their owner is going; the memory may hold other values next).
void ForgetFrozenWeights(const void* data, int64_t bytes);

// How many packed frozen weights Sconv keeps now (for tests).
int64_t FrozenWeightsKept();

// Whether Sconv runs this geometry through oneDNN (else the reference).
bool SconvUsesOneDnn(const int64_t* geometry);

// The same convolution by the reference loops alone (f32 products summed
// in double, rounded once, then the epilogue in f32): the fallback, and the
// tests' second opinion.
void SconvReference(const int64_t* geometry, const float* x, const float* w,
                    const float* const* epilogue, float* out);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CONVOLUTION_H_
