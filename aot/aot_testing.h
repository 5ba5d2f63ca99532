// -----------------------------------------------------------------------------
// File: aot_testing.h
// -----------------------------------------------------------------------------
//
// Small helpers the aot/ tests share: known tensors and their values, and a
// graph text put through AotDispatch.
//
// Example:
//
//   Tensor a = Iota({2, 3}, 10);                  // 10, 20, ..., 60
//   Values(*a.AsStrided({3, 2}, {1, 3}, 0));      // a.t(): 10, 40, 20, ...

#ifndef LATHE_AOT_AOT_TESTING_H_
#define LATHE_AOT_AOT_TESTING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "aot/aot_dispatch.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace lathe::aot {

// A contiguous f32 tensor holding scale * 1, scale * 2, ... in row-major
// order.
inline Tensor Iota(std::vector<int64_t> sizes, double scale = 1) {
  Tensor t = *Tensor::Empty(sizes, DType::kFloat32);
  int64_t i = 0;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> j) {
    t.SetDouble(j, scale * static_cast<double>(++i));
  });
  return t;
}

// The elements of `t` in row-major order of its sizes (through its strides).
inline std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> j) {
    v.push_back(t.GetDouble(j));
  });
  return v;
}

// A graph text parsed and put through AotDispatch.
struct CompiledText {
  std::unique_ptr<ir::Graph> graph;  // the functional (dense) graph
  AotGraph aot;
};
absl::StatusOr<CompiledText> CompileText(const std::string& text,
                                         bool keep_input_mutations = true);

}  // namespace lathe::aot

#endif  // LATHE_AOT_AOT_TESTING_H_
