// -----------------------------------------------------------------------------
// File: sort.h
// -----------------------------------------------------------------------------
//
// sort and topk as generated kernels call them through the kernel ABI
// (LatheKernelRuntime::sort): every line along `dim` of a strided input of
// any dtype, its values and their int64 indices written to two strided
// outputs. The order, ties included, is PyTorch's CPU kernels' (and the
// reference interpreter's, ir/ops_index.cc): NaN is larger than every
// number; sort is std::sort over (value, index) pairs (std::stable_sort for
// sort.stable with stable=True, and for an ascending 1-d integer sort of at
// least 32768 elements, PyTorch's radix path), and a line the caller marks (a
// dimension of stride 0 in eager PyTorch, where the kernel skips sorting) keeps
// its order; topk is std::partial_sort when k * 64 <= n, else std::nth_element,
// then std::sort of the first k - 1 when sorted.
//
// The geometry is one int64 array, so the ABI entry stays one C signature:
//
//   dtype (lathe::DType), rank, dim, descending (sort) or largest (topk),
//   k (-1: sort), sorted (topk; sort: 2 for a stable sort, else 1),
//   keep order (sort),
//   input sizes [rank],
//   x offset, x strides [rank], values offset, values strides [rank],
//   indices offset, indices strides [rank]   (elements).
//
// Example (sort each row of a contiguous f32 [2, 3] descending):
//
//   int64_t g[] = {2 /*f32*/, 2, 1, 1, -1, 0, 0, 2, 3,
//                  0, 3, 1, 0, 3, 1, 0, 3, 1};
//   lathe::SortLines(g, x, values, indices);

#ifndef LATHE_RUNTIME_SORT_H_
#define LATHE_RUNTIME_SORT_H_

#include <cmath>
#include <cstdint>
#include <utility>

namespace lathe {

// SortLess() / SortGreater()
//
// PyTorch's CPU comparators over (key, index) pairs: NaN is larger than
// every number; the index takes no part (ties keep the algorithm's order).
template <typename K>
bool SortLess(const std::pair<K, int64_t>& a, const std::pair<K, int64_t>& b) {
  return (!std::isnan(static_cast<double>(a.first)) &&
          std::isnan(static_cast<double>(b.first))) ||
         a.first < b.first;
}
template <typename K>
bool SortGreater(const std::pair<K, int64_t>& a,
                 const std::pair<K, int64_t>& b) {
  return (std::isnan(static_cast<double>(a.first)) &&
          !std::isnan(static_cast<double>(b.first))) ||
         a.first > b.first;
}

// The number of int64 entries of a geometry of rank `rank`.
constexpr int64_t SortGeometrySize(int64_t rank) { return 10 + 4 * rank; }

// Sorts (k < 0) or selects the top k of every line of `x` as the geometry
// says, into `values` (x's dtype) and `indices`.
void SortLines(const int64_t* geometry, const void* x, void* values,
               int64_t* indices);

}  // namespace lathe

#endif  // LATHE_RUNTIME_SORT_H_
