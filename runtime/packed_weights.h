// -----------------------------------------------------------------------------
// File: packed_weights.h
// -----------------------------------------------------------------------------
//
// Frozen constants (`# lathe: constant`, `lathec compile --freeze`) and the
// copies the runtime's oneDNN routines pack them into. A frozen constant is
// never written while its owner (a LoadedGraph) lives, so a routine packs
// it into the layout its primitive wants once, at its first call, and
// keeps the packed copy until the owner forgets it; a convolution knows
// its weights are frozen from its geometry's flag (convolution.h), a
// matrix product from the registration here.
//
// Example:
//
//   RegisterFrozenWeights(w.data, bytes);           // the owner, at load
//   if (IsFrozen(b, span)) {                        // a routine, per call
//     dnnl_memory_t packed = onednn::KeptPacking(b, b_md, packed_md, reorder);
//   }
//   ForgetFrozenWeights(w.data, bytes);             // the owner, at its end

#ifndef LATHE_RUNTIME_PACKED_WEIGHTS_H_
#define LATHE_RUNTIME_PACKED_WEIGHTS_H_

#include <cstdint>

#include "dnnl.h"

namespace lathe {

// Declares the `bytes` bytes from `data` a frozen constant's until
// ForgetFrozenWeights(data, bytes); registrations of one range nest.
void RegisterFrozenWeights(const void* data, int64_t bytes);

// Whether the `bytes` bytes from `data` lie inside one registered range.
bool IsFrozen(const void* data, int64_t bytes);

// Ends one registration of the range; after its last one (or for a range
// never registered: Sconv's frozen weights are known from its geometry),
// drops every packed copy kept of weights inside it (their owner is going;
// the memory may hold other values next).
void ForgetFrozenWeights(const void* data, int64_t bytes);

// How many packed copies of frozen weights are kept now (for tests).
int64_t FrozenWeightsKept();

namespace onednn {

// `w` (in layout `from`) packed into layout `to` by `reorder` (from -> to):
// packed on this thread at the first call for (w, from, to) and kept until
// ForgetFrozenWeights covers w; null when oneDNN fails. The caller
// vouches that w is frozen and its owner stays while the copy is used.
dnnl_memory_t KeptPacking(const void* w, const dnnl_memory_desc_t& from,
                          const dnnl_memory_desc_t& to,
                          dnnl_primitive_t reorder);

// Writes frozen weights `w` into `to` (a copy's memory, in its layout);
// false when it cannot.
using PackFn = bool (*)(void* ctx, const void* w, dnnl_memory_t to);

// The same for a copy any routine makes, `pack(ctx, w, to)`, not only a
// oneDNN reorder (KeptPacking is one): `from` and `to` name the layouts
// for the lookup, `to` also the copy's size; null when `pack` fails.
dnnl_memory_t KeptCopy(const void* w, const dnnl_memory_desc_t& from,
                       const dnnl_memory_desc_t& to, PackFn pack, void* ctx);

// Writes frozen weights `w` as f32 rows at `to`, `ld` elements apart;
// false when it cannot.
using FillRowsFn = bool (*)(void* ctx, const void* w, float* to, int64_t ld);

// A kept f32 copy of `w` (in layout `from`) as a [k, n] matrix with rows
// `ld` apart, written by `fill(ctx, w, to, ld)` at the first call (a
// KeptCopy); null when `fill` fails or the host memory limit refuses it.
const float* KeptRows(const void* w, const dnnl_memory_desc_t& from, int64_t k,
                      int64_t n, int64_t ld, FillRowsFn fill, void* ctx);

}  // namespace onednn
}  // namespace lathe

#endif  // LATHE_RUNTIME_PACKED_WEIGHTS_H_
