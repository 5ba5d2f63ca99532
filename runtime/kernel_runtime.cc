#include "runtime/kernel_runtime.h"

#include <cstdint>

#include "Eigen/Core"

namespace lathe {
namespace {

template <typename T>
void Gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const T* a,
          int64_t a_bs, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_bs,
          int64_t b_rs, int64_t b_cs, T* c, int64_t c_bs, int64_t c_rs,
          int64_t c_cs) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Strides = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
  for (int64_t i = 0; i < batch; ++i) {
    Eigen::Map<Mat, 0, Strides> out(c + i * c_bs, m, n, Strides(c_rs, c_cs));
    if (k == 0) {
      out.setZero();
      continue;
    }
    Eigen::Map<const Mat, 0, Strides> x(a + i * a_bs, m, k,
                                        Strides(a_rs, a_cs));
    Eigen::Map<const Mat, 0, Strides> y(b + i * b_bs, k, n,
                                        Strides(b_rs, b_cs));
    out.noalias() = x * y;
  }
}

const char kAbiText[] =
#include "runtime/kernel_abi_text.inc"
    ;

}  // namespace

const LatheKernelRuntime* KernelRuntime() {
  static const LatheKernelRuntime rt = {LATHE_KERNEL_ABI_VERSION, &Gemm<float>,
                                        &Gemm<double>};
  return &rt;
}

absl::string_view KernelAbiSource() { return kAbiText; }

}  // namespace lathe
