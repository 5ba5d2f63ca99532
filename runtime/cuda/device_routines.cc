#include "runtime/cuda/device_routines.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/convolution.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/kernel_runtime.h"
#include "runtime/sort.h"
#include "runtime/storage.h"
#include "status_macros.h"

namespace lathe {
namespace {

CuDevicePtr Address(const void* p) {
  return static_cast<CuDevicePtr>(reinterpret_cast<uintptr_t>(p));
}

// The elements an operand reaches, as offsets from its base: [lo, hi], or
// none (hi < lo) when a size is zero.
struct Reach {
  int64_t lo = 0, hi = -1;
  bool empty() const { return hi < lo; }
};
Reach ReachOf(int64_t offset, int rank, const int64_t* sizes,
              const int64_t* strides) {
  Reach r{offset, offset};
  for (int i = 0; i < rank; ++i) {
    if (sizes[i] <= 0) return Reach{};
    const int64_t e = (sizes[i] - 1) * strides[i];
    (e < 0 ? r.lo : r.hi) += e;
  }
  return r;
}

// One operand's reach copied to the host, and back when it is written.
class Staged {
 public:
  Staged(const void* base, Reach reach, int64_t item)
      : base_(static_cast<const char*>(base)), reach_(reach), item_(item) {}

  // Queues the copy to the host (the caller waits for it).
  absl::Status Queue(const CudaDriver& cu) {
    if (reach_.empty()) {
      host_.assign(item_, 0);  // a valid pointer nothing reads
      return absl::OkStatus();
    }
    host_.resize((reach_.hi - reach_.lo + 1) * item_);
    return CudaCall(cu,
                    cu.memcpy_dtoh_async(host_.data(), first(), host_.size(),
                                         /*stream=*/nullptr),
                    "cuMemcpyDtoHAsync");
  }

  // The host copy's element `offset` (an offset from the base).
  char* at(int64_t offset) {
    return host_.data() + (reach_.empty() ? 0 : (offset - reach_.lo) * item_);
  }
  // Where the host copy begins, as an offset from the base.
  int64_t lo() const { return reach_.empty() ? 0 : reach_.lo; }

  // Queues the copy back to the device.
  absl::Status Write(const CudaDriver& cu) const {
    if (reach_.empty()) return absl::OkStatus();
    return CudaCall(cu,
                    cu.memcpy_htod_async(first(), host_.data(), host_.size(),
                                         /*stream=*/nullptr),
                    "cuMemcpyHtoDAsync");
  }

 private:
  CuDevicePtr first() const { return Address(base_ + reach_.lo * item_); }

  const char* base_;
  Reach reach_;
  int64_t item_;
  std::vector<char> host_;
};

// Copies every operand to the host, waiting for the work before.
absl::Status StageIn(const CudaDriver& cu, std::vector<Staged*> operands) {
  for (Staged* s : operands) RETURN_IF_ERROR(s->Queue(cu));
  return CudaCall(cu, cu.stream_synchronize(nullptr), "cuStreamSynchronize");
}

// Row-major operand x [r, c] (strides rs, cs) seen column-major as x^T:
// as it is when its rows are of unit stride, else transposed when its
// columns are; a dimension of size 1 takes any stride.
std::optional<CublasLtOperand> AsTransposed(int64_t r, int64_t c, int64_t rs,
                                            int64_t cs, int64_t bs) {
  if (cs == 1 || c == 1) {
    const int64_t ld = r == 1 ? std::max<int64_t>(c, 1) : rs;
    if (ld >= std::max<int64_t>(c, 1)) {
      return CublasLtOperand{kCublasOpN, static_cast<uint64_t>(c),
                             static_cast<uint64_t>(r), ld, bs};
    }
  }
  if (rs == 1 || r == 1) {
    const int64_t ld = c == 1 ? std::max<int64_t>(r, 1) : cs;
    if (ld >= std::max<int64_t>(r, 1)) {
      return CublasLtOperand{kCublasOpT, static_cast<uint64_t>(r),
                             static_cast<uint64_t>(c), ld, bs};
    }
  }
  return std::nullopt;
}

// The largest power of two (at most 256) every batch's address of an
// operand is a multiple of: cuBLASLt's alignment preference.
uint32_t Alignment(const void* p, int64_t batch, int64_t batch_stride,
                   int64_t item) {
  uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)) | 256;
  if (batch > 1) bits |= static_cast<uint64_t>(batch_stride * item);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// cuBLASLt's workspace per call (from the caching allocator).
constexpr int64_t kCublasLtWorkspace = 32 << 20;

// The matmul of `g` as `plan` says, on the null stream.
absl::Status CublasLtGemm(const CublasLt& lt, DType dtype, const GemmCall& g,
                          const CublasLtGemmPlan& plan) {
  static const absl::StatusOr<CublasLtHandle> handle =
      [&lt]() -> absl::StatusOr<CublasLtHandle> {
    CublasLtHandle h = nullptr;
    RETURN_IF_ERROR(CublasCall(lt, lt.create(&h), "cublasLtCreate"));
    return h;
  }();
  RETURN_IF_ERROR(handle.status());
  const bool f32 = dtype == DType::kFloat32;
  const int type = f32 ? kCudaR32F : kCudaR64F;
  const int64_t item = ItemSize(dtype);
  // Every descriptor made is destroyed when this returns.
  struct Held {
    const CublasLt& lt;
    CublasLtMatmulDesc desc = nullptr;
    CublasLtMatrixLayout layouts[3] = {nullptr, nullptr, nullptr};
    CublasLtPreference pref = nullptr;
    ~Held() {
      for (CublasLtMatrixLayout l : layouts) {
        if (l != nullptr) lt.matrix_layout_destroy(l);
      }
      if (desc != nullptr) lt.matmul_desc_destroy(desc);
      if (pref != nullptr) lt.preference_destroy(pref);
    }
  } held{lt};
  RETURN_IF_ERROR(CublasCall(
      lt,
      lt.matmul_desc_create(&held.desc,
                            f32 ? kCublasCompute32F : kCublasCompute64F, type),
      "cublasLtMatmulDescCreate"));
  const int32_t ops[2] = {plan.first.op, plan.second.op};
  for (int i = 0; i < 2; ++i) {
    RETURN_IF_ERROR(CublasCall(
        lt,
        lt.matmul_desc_set_attribute(
            held.desc,
            i == 0 ? kCublasLtMatmulDescTransA : kCublasLtMatmulDescTransB,
            &ops[i], sizeof(ops[i])),
        "cublasLtMatmulDescSetAttribute"));
  }
  const CublasLtOperand* operands[3] = {&plan.first, &plan.second,
                                        &plan.result};
  for (int i = 0; i < 3; ++i) {
    const CublasLtOperand& o = *operands[i];
    RETURN_IF_ERROR(CublasCall(
        lt,
        lt.matrix_layout_create(&held.layouts[i], type, o.rows, o.cols, o.ld),
        "cublasLtMatrixLayoutCreate"));
    if (g.batch == 1) continue;
    const int32_t count = static_cast<int32_t>(g.batch);
    const int64_t stride = o.batch_stride;
    RETURN_IF_ERROR(CublasCall(
        lt,
        lt.matrix_layout_set_attribute(held.layouts[i],
                                       kCublasLtMatrixLayoutBatchCount, &count,
                                       sizeof(count)),
        "cublasLtMatrixLayoutSetAttribute"));
    RETURN_IF_ERROR(CublasCall(
        lt,
        lt.matrix_layout_set_attribute(held.layouts[i],
                                       kCublasLtMatrixLayoutStridedBatchOffset,
                                       &stride, sizeof(stride)),
        "cublasLtMatrixLayoutSetAttribute"));
  }
  ASSIGN_OR_RETURN(Storage workspace, Storage::AllocateUninitialized(
                                          kCublasLtWorkspace, Device::Cuda(0)));
  RETURN_IF_ERROR(CublasCall(lt, lt.preference_create(&held.pref),
                             "cublasLtMatmulPreferenceCreate"));
  const uint64_t workspace_bytes = kCublasLtWorkspace;
  const uint32_t align[4] = {Alignment(g.b, g.batch, g.b_bs, item),
                             Alignment(g.a, g.batch, g.a_bs, item),
                             Alignment(g.c, g.batch, g.c_bs, item),
                             Alignment(g.c, g.batch, g.c_bs, item)};
  RETURN_IF_ERROR(CublasCall(
      lt,
      lt.preference_set_attribute(held.pref, kCublasLtPrefMaxWorkspaceBytes,
                                  &workspace_bytes, sizeof(workspace_bytes)),
      "cublasLtMatmulPreferenceSetAttribute"));
  const int align_attrs[4] = {
      kCublasLtPrefMinAlignmentABytes, kCublasLtPrefMinAlignmentBBytes,
      kCublasLtPrefMinAlignmentCBytes, kCublasLtPrefMinAlignmentDBytes};
  for (int i = 0; i < 4; ++i) {
    RETURN_IF_ERROR(
        CublasCall(lt,
                   lt.preference_set_attribute(held.pref, align_attrs[i],
                                               &align[i], sizeof(align[i])),
                   "cublasLtMatmulPreferenceSetAttribute"));
  }
  CublasLtHeuristicResult result{};
  int returned = 0;
  RETURN_IF_ERROR(CublasCall(
      lt,
      lt.algo_get_heuristic(*handle, held.desc, held.layouts[0],
                            held.layouts[1], held.layouts[2], held.layouts[2],
                            held.pref, 1, &result, &returned),
      "cublasLtMatmulAlgoGetHeuristic"));
  if (returned == 0) {
    return absl::NotFoundError("cuBLASLt has no algorithm for the layouts");
  }
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = f32 ? static_cast<const void*>(&one_f) : &one_d;
  const void* beta = f32 ? static_cast<const void*>(&zero_f) : &zero_d;
  return CublasCall(
      lt,
      lt.matmul(*handle, held.desc, alpha, g.b, held.layouts[0], g.a,
                held.layouts[1], beta, g.c, held.layouts[2], g.c,
                held.layouts[2], &result.algo, workspace.data(),
                static_cast<size_t>(kCublasLtWorkspace), /*stream=*/nullptr),
      "cublasLtMatmul");
}

}  // namespace

std::optional<CublasLtGemmPlan> PlanCublasLtGemm(const GemmCall& g) {
  if (g.k <= 0 || g.m <= 0 || g.n <= 0 || g.batch <= 0 ||
      g.batch > (int64_t{1} << 31) - 1) {
    return std::nullopt;
  }
  // b [k, n] seen as b^T [n, k], a [m, k] as a^T [k, m], c [m, n] as c^T.
  std::optional<CublasLtOperand> first =
      AsTransposed(g.k, g.n, g.b_rs, g.b_cs, g.b_bs);
  std::optional<CublasLtOperand> second =
      AsTransposed(g.m, g.k, g.a_rs, g.a_cs, g.a_bs);
  std::optional<CublasLtOperand> result =
      AsTransposed(g.m, g.n, g.c_rs, g.c_cs, g.c_bs);
  if (!first || !second || !result || result->op != kCublasOpN) {
    return std::nullopt;
  }
  return CublasLtGemmPlan{*first, *second, *result};
}

absl::Status DeviceGemm(const CudaDriver& cu, DType dtype, const GemmCall& g) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    return absl::InvalidArgumentError(
        absl::StrCat("a device gemm of ", ShortName(dtype),
                     " (it takes float32 and float64)"));
  }
  if (cu.source != "emulated") {
    const std::optional<CublasLtGemmPlan> plan = PlanCublasLtGemm(g);
    absl::StatusOr<const CublasLt*> lt = LoadCublasLt();
    if (plan && lt.ok()) {
      absl::Status s = CublasLtGemm(**lt, dtype, g, *plan);
      if (!absl::IsNotFound(s)) return s;  // else through the host
    }
  }
  const int64_t item = ItemSize(dtype);
  const int64_t a_sizes[] = {g.batch, g.m, g.k},
                a_strides[] = {g.a_bs, g.a_rs, g.a_cs};
  const int64_t b_sizes[] = {g.batch, g.k, g.n},
                b_strides[] = {g.b_bs, g.b_rs, g.b_cs};
  const int64_t c_sizes[] = {g.batch, g.m, g.n},
                c_strides[] = {g.c_bs, g.c_rs, g.c_cs};
  const Reach c_reach = ReachOf(0, 3, c_sizes, c_strides);
  if (c_reach.empty()) return absl::OkStatus();
  Staged a(g.a, ReachOf(0, 3, a_sizes, a_strides), item);
  Staged b(g.b, ReachOf(0, 3, b_sizes, b_strides), item);
  Staged c(g.c, c_reach, item);
  RETURN_IF_ERROR(StageIn(cu, {&a, &b, &c}));
  const LatheKernelRuntime* rt = KernelRuntime();
  if (dtype == DType::kFloat32) {
    rt->sgemm(g.batch, g.m, g.n, g.k, reinterpret_cast<float*>(a.at(0)), g.a_bs,
              g.a_rs, g.a_cs, reinterpret_cast<float*>(b.at(0)), g.b_bs, g.b_rs,
              g.b_cs, reinterpret_cast<float*>(c.at(0)), g.c_bs, g.c_rs,
              g.c_cs);
  } else {
    rt->dgemm(g.batch, g.m, g.n, g.k, reinterpret_cast<double*>(a.at(0)),
              g.a_bs, g.a_rs, g.a_cs, reinterpret_cast<double*>(b.at(0)),
              g.b_bs, g.b_rs, g.b_cs, reinterpret_cast<double*>(c.at(0)),
              g.c_bs, g.c_rs, g.c_cs);
  }
  return c.Write(cu);
}

absl::Status DeviceConv(const CudaDriver& cu, const int64_t* geometry,
                        const float* x, const float* w, float* out) {
  const int64_t s = geometry[0];
  if (s < 1 || s > 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a device convolution of ", s, " spatial dims (it takes 1 to 3)"));
  }
  std::vector<int64_t> g(geometry, geometry + SconvGeometrySize(s));
  const int64_t groups = g[1], n = g[2], c = g[3], o = g[4];
  if (groups <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a device convolution of ", groups, " groups"));
  }
  // Each operand's sizes (N or O, channels, spatial) and where its offset
  // and strides are in the geometry.
  const int rank = static_cast<int>(2 + s);
  std::vector<int64_t> x_sizes = {n, c}, w_sizes = {o, c / groups},
                       out_sizes = {n, o};
  for (int64_t i = 0; i < s; ++i) {
    x_sizes.push_back(g[5 + i]);
    w_sizes.push_back(g[5 + s + i]);
    out_sizes.push_back(g[5 + 2 * s + i]);
  }
  const int64_t x_at = 5 + 6 * s, w_at = x_at + 1 + rank,
                out_at = w_at + 1 + rank;
  auto reach = [&](int64_t at, const std::vector<int64_t>& sizes) {
    return ReachOf(g[at], rank, sizes.data(), &g[at + 1]);
  };
  const Reach out_reach = reach(out_at, out_sizes);
  if (out_reach.empty()) return absl::OkStatus();
  Staged sx(x, reach(x_at, x_sizes), 4), sw(w, reach(w_at, w_sizes), 4),
      so(out, out_reach, 4);
  RETURN_IF_ERROR(StageIn(cu, {&sx, &sw, &so}));
  // The host copies begin at each reach's first element.
  g[x_at] -= sx.lo();
  g[w_at] -= sw.lo();
  g[out_at] -= so.lo();
  KernelRuntime()->sconv(g.data(), reinterpret_cast<float*>(sx.at(sx.lo())),
                         reinterpret_cast<float*>(sw.at(sw.lo())),
                         reinterpret_cast<float*>(so.at(so.lo())));
  return so.Write(cu);
}

absl::Status DeviceSort(const CudaDriver& cu, const int64_t* geometry,
                        const void* x, void* values, int64_t* indices) {
  const int64_t rank = geometry[1], dim = geometry[2], k = geometry[4];
  if (rank < 0 || rank > 64 || (rank > 0 && (dim < 0 || dim >= rank))) {
    return absl::InvalidArgumentError(
        absl::StrCat("a device sort of rank ", rank, " along dim ", dim));
  }
  if (geometry[0] < 0 ||
      geometry[0] >= static_cast<int64_t>(AllDTypes().size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("a device sort of dtype ", geometry[0]));
  }
  std::vector<int64_t> g(geometry, geometry + SortGeometrySize(rank));
  const int64_t item = ItemSize(static_cast<DType>(g[0]));
  std::vector<int64_t> in_sizes(&g[7], &g[7 + rank]), out_sizes = in_sizes;
  if (k >= 0 && rank > 0) out_sizes[dim] = k;
  const int64_t x_at = 7 + rank, v_at = x_at + 1 + rank, i_at = v_at + 1 + rank;
  auto reach = [&](int64_t at, const std::vector<int64_t>& sizes) {
    return ReachOf(g[at], static_cast<int>(rank), sizes.data(), &g[at + 1]);
  };
  const Reach v_reach = reach(v_at, out_sizes);
  if (v_reach.empty()) return absl::OkStatus();
  Staged sx(x, reach(x_at, in_sizes), item), sv(values, v_reach, item),
      si(indices, reach(i_at, out_sizes), 8);
  RETURN_IF_ERROR(StageIn(cu, {&sx, &sv, &si}));
  g[x_at] -= sx.lo();
  g[v_at] -= sv.lo();
  g[i_at] -= si.lo();
  KernelRuntime()->sort(g.data(), sx.at(sx.lo()), sv.at(sv.lo()),
                        reinterpret_cast<int64_t*>(si.at(si.lo())));
  RETURN_IF_ERROR(sv.Write(cu));
  return si.Write(cu);
}

}  // namespace lathe
