#include "runtime/cuda/device_routines.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/convolution.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/cudnn.h"
#include "runtime/kernel_runtime.h"
#include "runtime/sort.h"
#include "runtime/storage.h"
#include "status_macros.h"

namespace lathe {
namespace {

CuDevicePtr Address(const void* p) {
  return static_cast<CuDevicePtr>(reinterpret_cast<uintptr_t>(p));
}

std::atomic<int64_t> cublaslt_gemms{0}, cudnn_convolutions{0}, through_host{0};

// The dtype a gemm of `dtype` operands writes: bf16 operands make an f32
// result, their products summed in f32 (as the host's bgemm); f32 and f64
// their own.
DType GemmResultDType(DType dtype) {
  return dtype == DType::kBFloat16 ? DType::kFloat32 : dtype;
}

// A library's choice for each shape (an algorithm, or none), made once and
// kept; at most kMaxShapes shapes, then it starts again.
template <typename Choice>
class ChoiceCache {
 public:
  std::optional<Choice> Find(const std::vector<int64_t>& shape) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = choices_.find(shape);
    if (it == choices_.end()) return std::nullopt;
    return it->second;
  }
  void Keep(std::vector<int64_t> shape, Choice choice) {
    std::lock_guard<std::mutex> lock(mu_);
    if (choices_.size() >= kMaxShapes) choices_.clear();
    choices_.insert_or_assign(std::move(shape), choice);
  }

 private:
  static constexpr size_t kMaxShapes = 4096;
  std::mutex mu_;
  absl::flat_hash_map<std::vector<int64_t>, Choice> choices_;
};

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

// cuBLASLt's first algorithm for the layouts (a, b, c = d) with operands
// aligned to `align` bytes and kCublasLtWorkspace of workspace, or none.
absl::StatusOr<std::optional<CublasLtAlgo>> CublasLtHeuristic(
    const CublasLt& lt, CublasLtHandle handle, CublasLtMatmulDesc desc,
    const CublasLtMatrixLayout* layouts, const uint32_t* align) {
  CublasLtPreference pref = nullptr;
  RETURN_IF_ERROR(CublasCall(lt, lt.preference_create(&pref),
                             "cublasLtMatmulPreferenceCreate"));
  struct Destroy {
    const CublasLt& lt;
    CublasLtPreference pref;
    ~Destroy() { lt.preference_destroy(pref); }
  } destroy{lt, pref};
  const uint64_t workspace_bytes = kCublasLtWorkspace;
  RETURN_IF_ERROR(CublasCall(
      lt,
      lt.preference_set_attribute(pref, kCublasLtPrefMaxWorkspaceBytes,
                                  &workspace_bytes, sizeof(workspace_bytes)),
      "cublasLtMatmulPreferenceSetAttribute"));
  const int align_attrs[4] = {
      kCublasLtPrefMinAlignmentABytes, kCublasLtPrefMinAlignmentBBytes,
      kCublasLtPrefMinAlignmentCBytes, kCublasLtPrefMinAlignmentDBytes};
  for (int i = 0; i < 4; ++i) {
    RETURN_IF_ERROR(
        CublasCall(lt,
                   lt.preference_set_attribute(pref, align_attrs[i], &align[i],
                                               sizeof(align[i])),
                   "cublasLtMatmulPreferenceSetAttribute"));
  }
  CublasLtHeuristicResult result{};
  int returned = 0;
  RETURN_IF_ERROR(CublasCall(
      lt,
      lt.algo_get_heuristic(handle, desc, layouts[0], layouts[1], layouts[2],
                            layouts[2], pref, 1, &result, &returned),
      "cublasLtMatmulAlgoGetHeuristic"));
  if (returned == 0) return std::nullopt;
  return result.algo;
}

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
  const bool f64 = dtype == DType::kFloat64;
  const int type = dtype == DType::kFloat32 ? kCudaR32F
                   : f64                    ? kCudaR64F
                                            : kCudaR16BF;
  const int result_type = f64 ? kCudaR64F : kCudaR32F;
  const int64_t item = ItemSize(dtype),
                result_item = ItemSize(GemmResultDType(dtype));
  // Every descriptor made is destroyed when this returns.
  struct Held {
    const CublasLt& lt;
    CublasLtMatmulDesc desc = nullptr;
    CublasLtMatrixLayout layouts[3] = {nullptr, nullptr, nullptr};
    ~Held() {
      for (CublasLtMatrixLayout l : layouts) {
        if (l != nullptr) lt.matrix_layout_destroy(l);
      }
      if (desc != nullptr) lt.matmul_desc_destroy(desc);
    }
  } held{lt};
  RETURN_IF_ERROR(CublasCall(
      lt,
      lt.matmul_desc_create(
          &held.desc, f64 ? kCublasCompute64F : kCublasCompute32F, result_type),
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
        lt.matrix_layout_create(&held.layouts[i], i < 2 ? type : result_type,
                                o.rows, o.cols, o.ld),
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
  const uint32_t align[4] = {Alignment(g.b, g.batch, g.b_bs, item),
                             Alignment(g.a, g.batch, g.a_bs, item),
                             Alignment(g.c, g.batch, g.c_bs, result_item),
                             Alignment(g.c, g.batch, g.c_bs, result_item)};
  // The heuristic's choice for this shape, asked once.
  static auto* choices = new ChoiceCache<std::optional<CublasLtAlgo>>();
  std::vector<int64_t> shape = {static_cast<int64_t>(dtype), g.batch};
  for (const CublasLtOperand* o : operands) {
    shape.insert(shape.end(),
                 {o->op, static_cast<int64_t>(o->rows),
                  static_cast<int64_t>(o->cols), o->ld, o->batch_stride});
  }
  shape.insert(shape.end(), align, align + 4);
  std::optional<std::optional<CublasLtAlgo>> algo = choices->Find(shape);
  if (!algo.has_value()) {
    ASSIGN_OR_RETURN(
        std::optional<CublasLtAlgo> found,
        CublasLtHeuristic(lt, *handle, held.desc, held.layouts, align));
    choices->Keep(std::move(shape), found);
    algo = found;
  }
  if (!algo->has_value()) {
    return absl::NotFoundError("cuBLASLt has no algorithm for the layouts");
  }
  ASSIGN_OR_RETURN(Storage workspace, Storage::AllocateUninitialized(
                                          kCublasLtWorkspace, Device::Cuda(0)));
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  return CublasCall(
      lt,
      lt.matmul(*handle, held.desc, alpha, g.b, held.layouts[0], g.a,
                held.layouts[1], beta, g.c, held.layouts[2], g.c,
                held.layouts[2], &**algo, workspace.data(),
                static_cast<size_t>(kCublasLtWorkspace), /*stream=*/nullptr),
      "cublasLtMatmul");
}

// One operand of an sconv geometry: its sizes (N or O, channels,
// spatial), element offset and strides.
struct ConvOperand {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  int64_t at = 0;  // where the offset is in the geometry
};
struct ConvGeometry {
  int64_t s = 0, groups = 1;
  ConvOperand x, w, out;
  std::vector<int64_t> stride, padding, dilation;
};

absl::StatusOr<ConvGeometry> ReadConvGeometry(const int64_t* geometry) {
  ConvGeometry c;
  c.s = geometry[0];
  if (c.s < 1 || c.s > 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a device convolution of ", c.s, " spatial dims (it takes 1 to 3)"));
  }
  const int64_t* g = geometry;
  const int64_t s = c.s;
  c.groups = g[1];
  if (c.groups <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a device convolution of ", c.groups, " groups"));
  }
  c.x.sizes = {g[2], g[3]};
  c.w.sizes = {g[4], g[3] / c.groups};
  c.out.sizes = {g[2], g[4]};
  for (int64_t i = 0; i < s; ++i) {
    c.x.sizes.push_back(g[5 + i]);
    c.w.sizes.push_back(g[5 + s + i]);
    c.out.sizes.push_back(g[5 + 2 * s + i]);
    c.stride.push_back(g[5 + 3 * s + i]);
    c.padding.push_back(g[5 + 4 * s + i]);
    c.dilation.push_back(g[5 + 5 * s + i]);
  }
  const int64_t rank = 2 + s;
  int64_t at = 5 + 6 * s;
  for (ConvOperand* o : {&c.x, &c.w, &c.out}) {
    o->at = at;
    o->offset = g[at];
    o->strides.assign(g + at + 1, g + at + 1 + rank);
    at += 1 + rank;
  }
  return c;
}

// Whether every size and stride fits cuDNN's int, and the farthest
// element the operand reaches does too (strides positive).
bool FitsInt(const std::vector<int64_t>& sizes,
             const std::vector<int64_t>& strides) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  int64_t reach = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > kMax || strides[d] > kMax) return false;
    reach += (sizes[d] - 1) * strides[d];  // each term below 2^62
    if (reach > kMax) return false;
  }
  return true;
}

// Gives each dim of one element a positive stride (cuDNN takes no other;
// the stride of such a dim is never stepped) and says whether every other
// dim's stride is positive.
bool PositiveStrides(const std::vector<int64_t>& sizes,
                     std::vector<int64_t>& strides) {
  int64_t outer = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1) {
      if (strides[d] <= 0) return false;
      outer = std::max(outer, sizes[d] * strides[d]);
    }
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1 && strides[d] <= 0) strides[d] = outer;
  }
  return true;
}

// Whether no two elements of an operand with positive strides share an
// address: in order of stride, each steps past all the dims before it.
bool Distinct(const std::vector<int64_t>& sizes,
              const std::vector<int64_t>& strides) {
  std::vector<size_t> order;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1) order.push_back(d);
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t span = 0;  // the farthest element the dims so far reach
  for (size_t d : order) {
    if (strides[d] <= span) return false;
    span += (sizes[d] - 1) * strides[d];
  }
  return true;
}

// The weight's packed order: NCHW (O, C, spatial... outermost first) or
// NHWC (O, spatial..., C), or none.
std::optional<int> PackedFilterFormat(const std::vector<int64_t>& sizes,
                                      const std::vector<int64_t>& strides) {
  const size_t rank = sizes.size();
  auto packed = [&](const std::vector<size_t>& outer_first) {
    int64_t step = 1;
    for (size_t i = outer_first.size(); i-- > 0;) {
      const size_t d = outer_first[i];
      if (sizes[d] > 1 && strides[d] != step) return false;
      step *= sizes[d];
    }
    return true;
  };
  std::vector<size_t> nchw(rank), nhwc = {0};
  for (size_t d = 0; d < rank; ++d) nchw[d] = d;
  for (size_t d = 2; d < rank; ++d) nhwc.push_back(d);
  nhwc.push_back(1);
  if (packed(nchw)) return kCudnnTensorNchw;
  if (packed(nhwc)) return kCudnnTensorNhwc;
  return std::nullopt;
}

// Copies v's entries into a (the plan's int arrays; FitsInt checked them).
template <size_t N>
void Ints(const std::vector<int64_t>& v, std::array<int, N>& a) {
  for (size_t i = 0; i < v.size() && i < N; ++i) a[i] = static_cast<int>(v[i]);
}

// cuDNN's algorithm for one plan's shape (by the library's heuristic: the
// first deterministic FMA one within kCudnnWorkspace) and its workspace.
struct CudnnChoice {
  int algo = -1;  // -1: none
  size_t workspace = 0;
};
constexpr size_t kCudnnWorkspace = size_t{256} << 20;

// Every descriptor of one convolution, destroyed with it.
struct CudnnDescriptors {
  explicit CudnnDescriptors(const Cudnn& dnn) : dnn(dnn) {}
  ~CudnnDescriptors() {
    if (x != nullptr) dnn.destroy_tensor(x);
    if (y != nullptr) dnn.destroy_tensor(y);
    if (w != nullptr) dnn.destroy_filter(w);
    if (conv != nullptr) dnn.destroy_conv(conv);
  }
  const Cudnn& dnn;
  CudnnTensorDesc x = nullptr, y = nullptr;
  CudnnFilterDesc w = nullptr;
  CudnnConvDesc conv = nullptr;
};

// Makes d describe p, and checks cuDNN's output sizes are p's.
absl::Status Describe(const Cudnn& dnn, const CudnnConvPlan& p,
                      CudnnDescriptors& d) {
  RETURN_IF_ERROR(
      CudnnCall(dnn, dnn.create_tensor(&d.x), "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(
      CudnnCall(dnn, dnn.create_tensor(&d.y), "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(
      CudnnCall(dnn, dnn.create_filter(&d.w), "cudnnCreateFilterDescriptor"));
  RETURN_IF_ERROR(CudnnCall(dnn, dnn.create_conv(&d.conv),
                            "cudnnCreateConvolutionDescriptor"));
  RETURN_IF_ERROR(
      CudnnCall(dnn,
                dnn.set_tensor_nd(d.x, kCudnnDataFloat, p.rank,
                                  p.x_sizes.data(), p.x_strides.data()),
                "cudnnSetTensorNdDescriptor"));
  RETURN_IF_ERROR(
      CudnnCall(dnn,
                dnn.set_tensor_nd(d.y, kCudnnDataFloat, p.rank,
                                  p.y_sizes.data(), p.y_strides.data()),
                "cudnnSetTensorNdDescriptor"));
  RETURN_IF_ERROR(CudnnCall(dnn,
                            dnn.set_filter_nd(d.w, kCudnnDataFloat, p.w_format,
                                              p.rank, p.w_sizes.data()),
                            "cudnnSetFilterNdDescriptor"));
  RETURN_IF_ERROR(
      CudnnCall(dnn,
                dnn.set_conv_nd(d.conv, p.rank - 2, p.padding.data(),
                                p.stride.data(), p.dilation.data(),
                                kCudnnCrossCorrelation, kCudnnDataFloat),
                "cudnnSetConvolutionNdDescriptor"));
  RETURN_IF_ERROR(CudnnCall(dnn, dnn.set_conv_groups(d.conv, p.groups),
                            "cudnnSetConvolutionGroupCount"));
  RETURN_IF_ERROR(CudnnCall(dnn, dnn.set_conv_math(d.conv, kCudnnFmaMath),
                            "cudnnSetConvolutionMathType"));
  // cuDNN's output sizes must be the geometry's (lowering computed those).
  std::array<int, 5> y{};
  RETURN_IF_ERROR(CudnnCall(dnn,
                            dnn.output_dims(d.conv, d.x, d.w, p.rank, y.data()),
                            "cudnnGetConvolutionNdForwardOutputDim"));
  if (!std::equal(y.begin(), y.begin() + p.rank, p.y_sizes.begin())) {
    return absl::InternalError(absl::StrCat(
        "cuDNN's output sizes [",
        absl::StrJoin(y.begin(), y.begin() + p.rank, ", "),
        "] are not the convolution's [",
        absl::StrJoin(p.y_sizes.begin(), p.y_sizes.begin() + p.rank, ", "),
        "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CudnnChoice> CudnnChoose(const Cudnn& dnn, CudnnHandle handle,
                                        const CudnnDescriptors& d) {
  CudnnFwdAlgoPerf perf[16];
  int returned = 0;
  RETURN_IF_ERROR(CudnnCall(dnn,
                            dnn.forward_algorithms(handle, d.x, d.w, d.conv,
                                                   d.y, 16, &returned, perf),
                            "cudnnGetConvolutionForwardAlgorithm_v7"));
  for (int i = 0; i < std::min(returned, 16); ++i) {
    const CudnnFwdAlgoPerf& r = perf[i];
    if (r.status != kCudnnSuccess || r.math_type != kCudnnFmaMath ||
        r.determinism != kCudnnDeterministic || r.memory > kCudnnWorkspace) {
      continue;
    }
    CudnnChoice c{r.algo, 0};
    RETURN_IF_ERROR(CudnnCall(dnn,
                              dnn.forward_workspace(handle, d.x, d.w, d.conv,
                                                    d.y, c.algo, &c.workspace),
                              "cudnnGetConvolutionForwardWorkspaceSize"));
    if (c.workspace <= kCudnnWorkspace) return c;
  }
  return CudnnChoice{};
}

// The convolution as `p` says on the null stream (operands at their
// offsets from x, w, y); NotFound where cuDNN has no algorithm for it.
absl::Status CudnnConv(const Cudnn& dnn, const CudnnConvPlan& p, const float* x,
                       const float* w, float* y) {
  // One handle; cuDNN's calls on it are serialized.
  static std::mutex mu;
  static const absl::StatusOr<CudnnHandle> handle =
      [&dnn]() -> absl::StatusOr<CudnnHandle> {
    CudnnHandle h = nullptr;
    RETURN_IF_ERROR(CudnnCall(dnn, dnn.create(&h), "cudnnCreate"));
    return h;
  }();
  RETURN_IF_ERROR(handle.status());
  std::lock_guard<std::mutex> lock(mu);
  CudnnDescriptors d(dnn);
  RETURN_IF_ERROR(Describe(dnn, p, d));
  static auto* choices = new ChoiceCache<CudnnChoice>();
  std::vector<int64_t> shape = {p.rank, p.w_format, p.groups};
  for (const auto* a :
       {&p.x_sizes, &p.x_strides, &p.y_sizes, &p.y_strides, &p.w_sizes}) {
    shape.insert(shape.end(), a->begin(), a->end());
  }
  for (const auto* a : {&p.padding, &p.stride, &p.dilation}) {
    shape.insert(shape.end(), a->begin(), a->end());
  }
  std::optional<CudnnChoice> choice = choices->Find(shape);
  if (!choice.has_value()) {
    ASSIGN_OR_RETURN(choice, CudnnChoose(dnn, *handle, d));
    choices->Keep(std::move(shape), *choice);
  }
  if (choice->algo < 0) {
    return absl::NotFoundError("cuDNN has no algorithm for the convolution");
  }
  std::optional<Storage> workspace;
  if (choice->workspace > 0) {
    ASSIGN_OR_RETURN(workspace, Storage::AllocateUninitialized(
                                    static_cast<int64_t>(choice->workspace),
                                    Device::Cuda(0)));
  }
  const float one = 1, zero = 0;
  return CudnnCall(
      dnn,
      dnn.forward(*handle, &one, d.x, x + p.x_offset, d.w, w + p.w_offset,
                  d.conv, choice->algo, workspace ? workspace->data() : nullptr,
                  choice->workspace, &zero, d.y, y + p.y_offset),
      "cudnnConvolutionForward");
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
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 &&
      dtype != DType::kBFloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat("a device gemm of ", ShortName(dtype),
                     " (it takes float32, float64 and bfloat16)"));
  }
  if (cu.source != "emulated") {
    const std::optional<CublasLtGemmPlan> plan = PlanCublasLtGemm(g);
    absl::StatusOr<const CublasLt*> lt = LoadCublasLt();
    if (plan && lt.ok()) {
      absl::Status s = CublasLtGemm(**lt, dtype, g, *plan);
      if (s.ok()) ++cublaslt_gemms;
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
  Staged c(g.c, c_reach, ItemSize(GemmResultDType(dtype)));
  RETURN_IF_ERROR(StageIn(cu, {&a, &b, &c}));
  const LatheKernelRuntime* rt = KernelRuntime();
  if (dtype == DType::kFloat32) {
    rt->sgemm(g.batch, g.m, g.n, g.k, reinterpret_cast<float*>(a.at(0)), g.a_bs,
              g.a_rs, g.a_cs, reinterpret_cast<float*>(b.at(0)), g.b_bs, g.b_rs,
              g.b_cs, reinterpret_cast<float*>(c.at(0)), g.c_bs, g.c_rs,
              g.c_cs);
  } else if (dtype == DType::kBFloat16) {
    rt->bgemm(g.batch, g.m, g.n, g.k, a.at(0), g.a_bs, g.a_rs, g.a_cs, b.at(0),
              g.b_bs, g.b_rs, g.b_cs, reinterpret_cast<float*>(c.at(0)), g.c_bs,
              g.c_rs, g.c_cs);
  } else {
    rt->dgemm(g.batch, g.m, g.n, g.k, reinterpret_cast<double*>(a.at(0)),
              g.a_bs, g.a_rs, g.a_cs, reinterpret_cast<double*>(b.at(0)),
              g.b_bs, g.b_rs, g.b_cs, reinterpret_cast<double*>(c.at(0)),
              g.c_bs, g.c_rs, g.c_cs);
  }
  ++through_host;
  return c.Write(cu);
}

std::optional<CudnnConvPlan> PlanCudnnConv(const int64_t* geometry) {
  absl::StatusOr<ConvGeometry> read = ReadConvGeometry(geometry);
  if (!read.ok()) return std::nullopt;
  ConvGeometry& c = *read;
  const int64_t channels = c.x.sizes[1], outputs = c.out.sizes[1];
  if (channels % c.groups != 0 || outputs % c.groups != 0) return std::nullopt;
  for (const ConvOperand* o : {&c.x, &c.w, &c.out}) {
    for (int64_t n : o->sizes) {
      if (n <= 0) return std::nullopt;  // empty: the host's
    }
  }
  if (c.s == 1) {  // [N, C, L] as [N, C, 1, L]
    for (ConvOperand* o : {&c.x, &c.w, &c.out}) {
      const int64_t span = o->sizes[2] * o->strides[2];  // L's
      o->sizes.insert(o->sizes.begin() + 2, 1);
      o->strides.insert(o->strides.begin() + 2, span);
    }
    c.stride.insert(c.stride.begin(), 1);
    c.padding.insert(c.padding.begin(), 0);
    c.dilation.insert(c.dilation.begin(), 1);
  }
  for (ConvOperand* o : {&c.x, &c.out}) {
    if (!PositiveStrides(o->sizes, o->strides) ||
        !FitsInt(o->sizes, o->strides)) {
      return std::nullopt;
    }
  }
  if (!Distinct(c.out.sizes, c.out.strides)) return std::nullopt;
  std::optional<int> format = PackedFilterFormat(c.w.sizes, c.w.strides);
  int64_t w_elements = 1;
  for (int64_t n : c.w.sizes) w_elements *= n;
  if (!format || w_elements > std::numeric_limits<int>::max()) {
    return std::nullopt;
  }
  for (const auto* v : {&c.stride, &c.padding, &c.dilation}) {
    for (int64_t n : *v) {
      if (n < 0 || n > std::numeric_limits<int>::max()) return std::nullopt;
    }
  }
  CudnnConvPlan p;
  p.rank = static_cast<int>(c.x.sizes.size());
  Ints(c.x.sizes, p.x_sizes);
  Ints(c.x.strides, p.x_strides);
  Ints(c.out.sizes, p.y_sizes);
  Ints(c.out.strides, p.y_strides);
  Ints(c.w.sizes, p.w_sizes);
  p.w_format = *format;
  Ints(c.padding, p.padding);
  Ints(c.stride, p.stride);
  Ints(c.dilation, p.dilation);
  p.groups = static_cast<int>(c.groups);
  p.x_offset = c.x.offset;
  p.w_offset = c.w.offset;
  p.y_offset = c.out.offset;
  return p;
}

absl::Status DeviceConv(const CudaDriver& cu, const int64_t* geometry,
                        const float* x, const float* w, float* out) {
  ASSIGN_OR_RETURN(ConvGeometry c, ReadConvGeometry(geometry));
  if (cu.source != "emulated") {
    const std::optional<CudnnConvPlan> plan = PlanCudnnConv(geometry);
    absl::StatusOr<const Cudnn*> dnn = LoadCudnn();
    if (plan && dnn.ok()) {
      absl::Status s = CudnnConv(**dnn, *plan, x, w, out);
      if (s.ok()) ++cudnn_convolutions;
      if (!absl::IsNotFound(s)) return s;  // else through the host
    }
  }
  const int rank = static_cast<int>(2 + c.s);
  auto reach = [&](const ConvOperand& o) {
    return ReachOf(o.offset, rank, o.sizes.data(), o.strides.data());
  };
  const Reach out_reach = reach(c.out);
  if (out_reach.empty()) return absl::OkStatus();
  Staged sx(x, reach(c.x), 4), sw(w, reach(c.w), 4), so(out, out_reach, 4);
  RETURN_IF_ERROR(StageIn(cu, {&sx, &sw, &so}));
  // The host copies begin at each reach's first element.
  std::vector<int64_t> g(geometry, geometry + SconvGeometrySize(c.s));
  g[c.x.at] -= sx.lo();
  g[c.w.at] -= sw.lo();
  g[c.out.at] -= so.lo();
  KernelRuntime()->sconv(g.data(), reinterpret_cast<float*>(sx.at(sx.lo())),
                         reinterpret_cast<float*>(sw.at(sw.lo())),
                         reinterpret_cast<float*>(so.at(so.lo())), nullptr,
                         nullptr);
  ++through_host;
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
  ++through_host;
  KernelRuntime()->sort(g.data(), sx.at(sx.lo()), sv.at(sv.lo()),
                        reinterpret_cast<int64_t*>(si.at(si.lo())));
  RETURN_IF_ERROR(sv.Write(cu));
  return si.Write(cu);
}

absl::Status CheckCudnnConvPlan(const Cudnn& dnn, const CudnnConvPlan& plan) {
  CudnnDescriptors d(dnn);
  return Describe(dnn, plan, d);
}

DeviceRoutineCounts DeviceRoutinesRun() {
  return {cublaslt_gemms.load(), cudnn_convolutions.load(),
          through_host.load()};
}

}  // namespace lathe
