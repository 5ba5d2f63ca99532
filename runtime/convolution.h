// -----------------------------------------------------------------------------
// File: convolution.h
// -----------------------------------------------------------------------------
//
// The f32 convolution generated kernels call through the kernel ABI
// (LatheKernelRuntime::sconv): PyTorch's aten.convolution without bias or
// transposition, 1 to 3 spatial dims, groups, stride, padding and dilation,
// on operands of any strides. It runs as a oneDNN convolution primitive
// (created once per geometry and cached; operands reordered into the
// layouts oneDNN picks), and falls back to a direct loop nest for what
// oneDNN refuses (an empty or overlapping operand).
//
// The geometry is one int64 array, so the ABI entry stays one C signature:
//
//   s (spatial dims), groups, N, C, O,
//   input sizes [s], kernel sizes [s], output sizes [s],
//   strides [s], paddings [s], dilations [s]  (PyTorch's: 1 is dense),
//   x offset, x strides [2 + s], w offset, w strides [2 + s],
//   out offset, out strides [2 + s],
//   flags (kSconvFrozenWeights: w is a frozen constant; kSconvWinograd:
//          Winograd's algorithm where oneDNN has it).
//
// Example (a 3x3 convolution of a [1, 2, 5, 5] input, 4 output channels):
//
//   std::vector<int64_t> g = ConvGeometry(...);  // see the test
//   lathe::Sconv(g.data(), x, w, out);

#ifndef LATHE_RUNTIME_CONVOLUTION_H_
#define LATHE_RUNTIME_CONVOLUTION_H_

#include <cstdint>

namespace lathe {

// The number of int64 entries of a geometry with `s` spatial dims.
constexpr int64_t SconvGeometrySize(int64_t s) { return 15 + 9 * s; }

// Where a geometry with `s` spatial dims keeps an entry (the layout
// above), for code that reads one without unpacking it (the scheduler's
// epilogue fusion, the emitter's Winograd candidates).
struct SconvAt {
  int64_t s;
  static constexpr int64_t kGroups = 1, kBatch = 2;
  // Spatial dim d's kernel size, stride and dilation.
  constexpr int64_t Kernel(int64_t d) const { return 5 + s + d; }
  constexpr int64_t Stride(int64_t d) const { return 5 + 3 * s + d; }
  constexpr int64_t Dilation(int64_t d) const { return 5 + 5 * s + d; }
  // out's offset, then its 2 + s strides (the batch's first).
  constexpr int64_t OutOffset() const { return 11 + 8 * s; }
  constexpr int64_t Flags() const { return SconvGeometrySize(s) - 1; }
};
static_assert(SconvAt{2}.OutOffset() + 2 + 2 + 1 == SconvAt{2}.Flags());

// The geometry's flag for weights that are a frozen constant (`# lathe:
// constant`): no one writes them while their owner (a LoadedGraph) lives,
// so they are packed into the library's layout once, at their first call,
// and kept until ForgetFrozenWeights (packed_weights.h).
constexpr int64_t kSconvFrozenWeights = 1;

// The geometry's flag for oneDNN's Winograd algorithm (F(4x4, 3x3): about
// a quarter of the multiplies, errors two to three times the direct
// algorithm's), autotuning's choice (driver/autotune.h) for a convolution
// it measured faster so. Where oneDNN has no Winograd kernel for the
// geometry (not 3x3, strided, dilated, grouped...), the direct one runs.
constexpr int64_t kSconvWinograd = 2;

// A convolution's epilogue (a loop kernel the scheduler fused into it):
// run for one image of the output, after that image is written.
using SconvEpilogue = void (*)(void* ctx, int64_t image);

// out = convolution(x, w) as the geometry says (s in [1, 3]; lowering
// calls it for nothing else), through oneDNN where it
// takes the geometry and the reference loops otherwise. A non-null
// `epilogue` runs for each image n of out, epilogue(ctx, n), after that
// image is written and before Sconv returns: once, or again over every
// image after oneDNN fails and the reference loops write the output (so an
// epilogue must give the same results run twice). A batch of at least one
// image per thread then runs in pieces of whole images (as many as fit
// kEpiloguePieceBytes), each piece's images handed to the epilogue on the
// thread that wrote them, while they are in its cache; a convolution cut
// otherwise (slices of output channels, or fewer images than threads:
// slices of rows) runs the epilogues after it, an image per thread (on the
// calling thread one after the other for fewer images than threads).
void Sconv(const int64_t* geometry, const float* x, const float* w, float* out,
           SconvEpilogue epilogue = nullptr, void* ctx = nullptr);

// The output bytes a piece of images with an epilogue writes at most (at
// least one image): half of a core's L2 here, so the epilogue reads them
// from it.
constexpr int64_t kEpiloguePieceBytes = int64_t{512} << 10;

// Whether Sconv runs this geometry through oneDNN (else the reference).
bool SconvUsesOneDnn(const int64_t* geometry);

// Whether Sconv runs this geometry by oneDNN's Winograd kernel (asked by
// its kSconvWinograd flag, and taken for every piece).
bool SconvUsesWinograd(const int64_t* geometry);

// The same convolution by the reference loops alone (f32 products summed
// in double, rounded once): the fallback, and the tests' second opinion.
void SconvReference(const int64_t* geometry, const float* x, const float* w,
                    float* out);

}  // namespace lathe

#endif  // LATHE_RUNTIME_CONVOLUTION_H_
