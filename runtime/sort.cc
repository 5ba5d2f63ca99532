#include "runtime/sort.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/half.h"

namespace lathe {
namespace {

// Element `i` of `p` (of `dtype`) as a key: double for floating dtypes,
// int64 for the others.
template <typename K>
K Load(DType dtype, const void* p, int64_t i) {
  switch (dtype) {
    case DType::kFloat16:
      return static_cast<K>(static_cast<const Half*>(p)[i].ToFloat());
    case DType::kBFloat16:
      return static_cast<K>(static_cast<const BFloat16*>(p)[i].ToFloat());
    case DType::kFloat32:
      return static_cast<K>(static_cast<const float*>(p)[i]);
    case DType::kFloat64:
      return static_cast<K>(static_cast<const double*>(p)[i]);
    case DType::kInt8:
      return static_cast<K>(static_cast<const int8_t*>(p)[i]);
    case DType::kInt16:
      return static_cast<K>(static_cast<const int16_t*>(p)[i]);
    case DType::kInt32:
      return static_cast<K>(static_cast<const int32_t*>(p)[i]);
    case DType::kInt64:
      return static_cast<K>(static_cast<const int64_t*>(p)[i]);
    case DType::kUInt8:
      return static_cast<K>(static_cast<const uint8_t*>(p)[i]);
    case DType::kBool:
      return static_cast<K>(static_cast<const bool*>(p)[i]);
  }
  return K{};
}

// Stores key `v` as element `i` of `p` (a value `Load` gave, so exact).
template <typename K>
void Store(DType dtype, void* p, int64_t i, K v) {
  switch (dtype) {
    case DType::kFloat16:
      static_cast<Half*>(p)[i] = Half::FromFloat(static_cast<float>(v));
      return;
    case DType::kBFloat16:
      static_cast<BFloat16*>(p)[i] = BFloat16::FromFloat(static_cast<float>(v));
      return;
    case DType::kFloat32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      return;
    case DType::kFloat64:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      return;
    case DType::kInt8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      return;
    case DType::kInt16:
      static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v);
      return;
    case DType::kInt32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      return;
    case DType::kInt64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      return;
    case DType::kUInt8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      return;
    case DType::kBool:
      static_cast<bool*>(p)[i] = v != 0;
      return;
  }
}

struct Geometry {
  DType dtype;
  int64_t rank, dim;
  bool descending;  // sort; topk: largest
  int64_t k;        // -1: sort
  bool sorted;      // topk
  bool stable;      // sort: std::stable_sort
  bool keep_order;
  const int64_t* sizes;
  int64_t x_offset;
  const int64_t* x_strides;
  int64_t v_offset;
  const int64_t* v_strides;
  int64_t i_offset;
  const int64_t* i_strides;
};

Geometry Parse(const int64_t* g) {
  Geometry r;
  r.dtype = static_cast<DType>(g[0]);
  r.rank = g[1];
  r.dim = g[2];
  r.descending = g[3] != 0;
  r.k = g[4];
  r.sorted = g[5] != 0;
  r.stable = g[5] == 2;
  r.keep_order = g[6] != 0;
  const int64_t* p = g + 7;
  r.sizes = p;
  p += r.rank;
  r.x_offset = *p++;
  r.x_strides = p;
  p += r.rank;
  r.v_offset = *p++;
  r.v_strides = p;
  p += r.rank;
  r.i_offset = *p++;
  r.i_strides = p;
  return r;
}

template <typename K>
void Lines(const Geometry& g, const void* x, void* values, int64_t* indices) {
  const int64_t len = g.rank == 0 ? 1 : g.sizes[g.dim];
  if (len == 0) return;
  int64_t lines = 1;
  for (int64_t d = 0; d < g.rank; ++d) {
    if (d != g.dim) lines *= g.sizes[d];
  }
  if (lines == 0) return;
  const int64_t xs = g.rank == 0 ? 0 : g.x_strides[g.dim];
  const int64_t vs = g.rank == 0 ? 0 : g.v_strides[g.dim];
  const int64_t is = g.rank == 0 ? 0 : g.i_strides[g.dim];
  const bool topk = g.k >= 0;
  const bool radix = !topk && g.rank == 1 && !g.descending &&
                     IsIntegral(g.dtype, /*include_bool=*/false) &&
                     len >= 32768;
  auto comp = g.descending ? SortGreater<K> : SortLess<K>;
  std::vector<std::pair<K, int64_t>> line(len);
  std::vector<int64_t> at(g.rank, 0);  // the line's index, dim at 0
  for (int64_t l = 0; l < lines; ++l) {
    int64_t xo = g.x_offset, vo = g.v_offset, io = g.i_offset;
    for (int64_t d = 0; d < g.rank; ++d) {
      xo += at[d] * g.x_strides[d];
      vo += at[d] * g.v_strides[d];
      io += at[d] * g.i_strides[d];
    }
    line.resize(len);
    for (int64_t j = 0; j < len; ++j)
      line[j] = {Load<K>(g.dtype, x, xo + j * xs), j};
    int64_t keep = len;
    if (topk) {
      keep = g.k;
      if (keep > 0) {
        if (keep * 64 <= len) {
          std::partial_sort(line.begin(), line.begin() + keep, line.end(),
                            comp);
        } else {
          std::nth_element(line.begin(), line.begin() + keep - 1, line.end(),
                           comp);
          if (g.sorted) std::sort(line.begin(), line.begin() + keep - 1, comp);
        }
      }
    } else if (radix) {
      std::stable_sort(line.begin(), line.end(), SortLess<K>);
    } else if (g.keep_order) {
    } else if (g.stable) {
      std::stable_sort(line.begin(), line.end(), comp);
    } else {
      std::sort(line.begin(), line.end(), comp);
    }
    for (int64_t j = 0; j < keep; ++j) {
      Store<K>(g.dtype, values, vo + j * vs, line[j].first);
      indices[io + j * is] = line[j].second;
    }
    // The next line: the last dimension other than dim moves fastest.
    for (int64_t d = g.rank; d-- > 0;) {
      if (d == g.dim) continue;
      if (++at[d] < g.sizes[d]) break;
      at[d] = 0;
    }
  }
}

}  // namespace

void SortLines(const int64_t* geometry, const void* x, void* values,
               int64_t* indices) {
  Geometry g = Parse(geometry);
  if (IsFloatingPoint(g.dtype)) {
    Lines<double>(g, x, values, indices);
  } else {
    Lines<int64_t>(g, x, values, indices);
  }
}

}  // namespace lathe
