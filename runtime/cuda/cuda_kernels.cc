#include "runtime/cuda/cuda_kernels.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/copy.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/cuda/device_routines.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/kernel_runtime.h"
#include "runtime/storage.h"
#include "status_macros.h"

namespace lathe {
namespace {

// A kernel library names at most this many kernels (a hostile one cannot
// make the loader walk memory without end).
constexpr int kMaxKernels = 1 << 16;

CuDevicePtr Address(const void* p) {
  return static_cast<CuDevicePtr>(reinterpret_cast<uintptr_t>(p));
}

// A recorded call: a CUDA graph of its launches and copies, instantiated,
// and the private pool its memory came from.
class CudaGraphRecording final : public DeviceRecording {
 public:
  CudaGraphRecording(const CudaDriver& cu, CuGraph graph, CuGraphExec exec,
                     std::shared_ptr<CudaAllocator> pool)
      : cu_(cu), graph_(graph), exec_(exec), pool_(std::move(pool)) {}
  ~CudaGraphRecording() override {
    MakeCudaContextCurrent(cu_).IgnoreError();
    if (exec_ != nullptr) cu_.graph_exec_destroy(exec_);
    cu_.graph_destroy(graph_);
    // pool_ goes next: its memory once the last of its blocks is back.
  }

  absl::Status Replay() const override {
    if (exec_ == nullptr) return absl::OkStatus();  // nothing was launched
    RETURN_IF_ERROR(MakeCudaContextCurrent(cu_));
    return CudaCall(cu_, cu_.graph_launch(exec_, /*stream=*/nullptr),
                    "cuGraphLaunch");
  }

 private:
  const CudaDriver& cu_;
  CuGraph graph_;
  CuGraphExec exec_;
  std::shared_ptr<CudaAllocator> pool_;
};

class CudaRecorder;
// The recorder of the call this thread makes, if one is recording.
thread_local CudaRecorder* recording = nullptr;

// Records this thread's launches and device copies into a CUDA graph, one
// node after another (the stream's order); its memory comes from a pool
// of its own. What a graph cannot hold spoils it.
class CudaRecorder final : public DeviceRecorder {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceRecorder>> Start(
      const CudaDriver& cu, const void* owner) {
    if (recording != nullptr) {
      return absl::FailedPreconditionError("a recording is under way");
    }
    ASSIGN_OR_RETURN(std::shared_ptr<CudaAllocator> pool, NewCudaPool());
    RETURN_IF_ERROR(MakeCudaContextCurrent(cu));
    CuContext ctx = nullptr;
    RETURN_IF_ERROR(CudaCall(cu, cu.ctx_get_current(&ctx), "cuCtxGetCurrent"));
    CuGraph graph = nullptr;
    RETURN_IF_ERROR(CudaCall(cu, cu.graph_create(&graph, 0), "cuGraphCreate"));
    return std::unique_ptr<DeviceRecorder>(
        new CudaRecorder(cu, owner, ctx, graph, std::move(pool)));
  }

  ~CudaRecorder() override {
    recording = nullptr;
    if (graph_ != nullptr) {
      MakeCudaContextCurrent(cu_).IgnoreError();
      cu_.graph_destroy(graph_);
    }
  }

  // The kernels of `owner` only: another library's are not the call's.
  bool Records(const void* owner) const { return owner == owner_; }

  // Adds a launch of `f` (after the last node).
  void AddKernel(CuFunction f, const uint32_t* grid, const uint32_t* block,
                 uint32_t shared_bytes, void** params) {
    if (!why_.empty()) return;
    CuKernelNodeParams p;
    p.func = f;
    p.grid_x = grid[0];
    p.grid_y = grid[1];
    p.grid_z = grid[2];
    p.block_x = block[0];
    p.block_y = block[1];
    p.block_z = block[2];
    p.shared_bytes = shared_bytes;
    p.params = params;
    Added(cu_.graph_add_kernel_node(&node_, graph_, Last(), Count(), &p),
          "cuGraphAddKernelNode");
  }

  // Adds a copy of `bytes` between device addresses.
  void AddCopy(CuDevicePtr dst, CuDevicePtr src, size_t bytes) {
    if (!why_.empty()) return;
    const CuMemcpy3D c = MemcpyNodeParams(dst, src, bytes);
    Added(cu_.graph_add_memcpy_node(&node_, graph_, Last(), Count(), &c, ctx_),
          "cuGraphAddMemcpyNode");
  }

  // The call did what a replay cannot: `what`.
  void Spoil(absl::string_view what) {
    if (why_.empty()) why_ = absl::StrCat("the call ", what);
  }

  absl::StatusOr<std::unique_ptr<DeviceRecording>> Finish() override {
    recording = nullptr;
    if (scope_.zeroed_allocations() > 0) {
      Spoil("zeroes new device memory outside its kernels (a memset)");
    }
    if (!why_.empty()) return absl::FailedPreconditionError(why_);
    CuGraphExec exec = nullptr;
    if (node_ != nullptr) {
      RETURN_IF_ERROR(CudaCall(cu_, cu_.graph_instantiate(&exec, graph_, 0),
                               "cuGraphInstantiateWithFlags"));
    }
    auto r = std::make_unique<CudaGraphRecording>(cu_, graph_, exec,
                                                  std::move(pool_));
    graph_ = nullptr;
    return std::unique_ptr<DeviceRecording>(std::move(r));
  }

 private:
  CudaRecorder(const CudaDriver& cu, const void* owner, CuContext ctx,
               CuGraph graph, std::shared_ptr<CudaAllocator> pool)
      : cu_(cu),
        owner_(owner),
        ctx_(ctx),
        graph_(graph),
        pool_(pool),
        scope_(pool) {
    recording = this;
  }

  const CuGraphNode* Last() const {
    return node_ != nullptr ? &node_ : nullptr;
  }
  size_t Count() const { return node_ != nullptr ? 1 : 0; }
  void Added(CuResult r, absl::string_view call) {
    absl::Status s = CudaCall(cu_, r, call);
    if (!s.ok()) why_ = std::string(s.message());
  }

  const CudaDriver& cu_;
  const void* owner_;
  CuContext ctx_;
  CuGraph graph_;
  CuGraphNode node_ = nullptr;  // the last node added
  std::shared_ptr<CudaAllocator> pool_;
  CudaPoolScope scope_;
  std::string why_;  // what spoiled it
};

// Spoils this thread's recording, if any: the call did `what`.
void Spoil(absl::string_view what) {
  if (recording != nullptr) recording->Spoil(what);
}

class CudaKernels final : public DeviceKernels {
 public:
  static absl::StatusOr<std::shared_ptr<const DeviceKernels>> Load(
      absl::string_view image, const SharedLibrary& host) {
    ASSIGN_OR_RETURN(void* symbol, host.Symbol(kDeviceKernelsSymbol));
    const char* const* names = static_cast<const char* const*>(symbol);
    RETURN_IF_ERROR(UseCudaStorage());
    ASSIGN_OR_RETURN(const CudaDriver* cu, CudaDevice());
    RETURN_IF_ERROR(MakeCudaContextCurrent(*cu));
    std::shared_ptr<CudaKernels> k(new CudaKernels(*cu));
    if (image.empty()) {
      return absl::InvalidArgumentError("an empty CUDA module image");
    }
    // cuModuleLoadData reads a cubin's or an ELF's own length; PTX must
    // end with a NUL, which std::string keeps after its bytes.
    k->image_ = std::string(image);
    RETURN_IF_ERROR(
        CudaCall(*cu, cu->module_load_data(&k->module_, k->image_.data()),
                 "cuModuleLoadData"));
    for (int i = 0; names[i] != nullptr; ++i) {
      if (i == kMaxKernels) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the library names more than ", kMaxKernels, " kernels"));
      }
      CuFunction f = nullptr;
      RETURN_IF_ERROR(
          CudaCall(*cu, cu->module_get_function(&f, k->module_, names[i]),
                   absl::StrCat("cuModuleGetFunction ", names[i])));
      k->functions_.push_back(f);
      k->names_.emplace_back(names[i]);
    }
    return std::shared_ptr<const DeviceKernels>(std::move(k));
  }

  ~CudaKernels() override {
    if (module_ != nullptr) {
      MakeCudaContextCurrent(cu_).IgnoreError();
      cu_.module_unload(module_);
    }
  }

  Device device() const override { return Device::Cuda(0); }

  void Prepare(LatheKernelRuntime* rt) const override {
    // CUDA's current context is per thread; a failure shows at the launch.
    MakeCudaContextCurrent(cu_).IgnoreError();
    rt->device = &runtime_;
    rt->alloc = &Alloc;
    rt->copy = &Copy;
  }

  absl::StatusOr<Tensor> ToDevice(const Tensor& t) const override {
    return lathe::ToDevice(t, Device::Cuda(0));
  }
  absl::StatusOr<Tensor> ToHost(const Tensor& t) const override {
    return lathe::ToHost(t);
  }

  absl::StatusOr<std::unique_ptr<DeviceRecorder>> Record() const override {
    return CudaRecorder::Start(cu_, this);
  }

 private:
  explicit CudaKernels(const CudaDriver& cu) : cu_(cu) {
    runtime_.self = this;
    runtime_.launch = &Launch;
    runtime_.to_host = &ToHostBytes;
    runtime_.to_device = &ToDeviceBytes;
    runtime_.sgemm = &Gemm<float, float, DType::kFloat32>;
    runtime_.dgemm = &Gemm<double, double, DType::kFloat64>;
    runtime_.sconv = &Conv;
    runtime_.sort = &Sort;
    runtime_.bgemm = &Gemm<void, float, DType::kBFloat16>;
  }

  // The library routines (device_routines.h); a failure is kept for the
  // caller, as a launch's.
  static int Kept(absl::Status s) {
    if (s.ok()) return 0;
    SetDeviceError(std::move(s));
    return 1;
  }

  // T: the operands' element type (void: bf16's 16-bit patterns), R the
  // result's.
  template <typename T, typename R, DType kDType>
  static int Gemm(void* self, int64_t batch, int64_t m, int64_t n, int64_t k,
                  const T* a, int64_t a_bs, int64_t a_rs, int64_t a_cs,
                  const T* b, int64_t b_bs, int64_t b_rs, int64_t b_cs, R* c,
                  int64_t c_bs, int64_t c_rs, int64_t c_cs) {
    const GemmCall g = {batch, m,    n,    k,    a, a_bs, a_rs, a_cs,
                        b,     b_bs, b_rs, b_cs, c, c_bs, c_rs, c_cs};
    Spoil("runs a matrix product (a library routine outside the graph)");
    return Kept(
        DeviceGemm(static_cast<const CudaKernels*>(self)->cu_, kDType, g));
  }

  static int Conv(void* self, const int64_t* geometry, const float* x,
                  const float* w, float* out) {
    Spoil("runs a convolution (a library routine outside the graph)");
    return Kept(DeviceConv(static_cast<const CudaKernels*>(self)->cu_, geometry,
                           x, w, out));
  }

  static int Sort(void* self, const int64_t* geometry, const void* x,
                  void* values, int64_t* indices) {
    Spoil("sorts (a library routine outside the graph)");
    return Kept(DeviceSort(static_cast<const CudaKernels*>(self)->cu_, geometry,
                           x, values, indices));
  }

  static int Launch(void* self, int64_t kernel, const uint32_t* grid,
                    const uint32_t* block, uint32_t shared_bytes,
                    void** params) {
    const CudaKernels& k = *static_cast<const CudaKernels*>(self);
    if (kernel < 0 || kernel >= static_cast<int64_t>(k.functions_.size())) {
      SetDeviceError(absl::InternalError(
          absl::StrCat("no device kernel ", kernel, " (the library has ",
                       k.functions_.size(), ")")));
      return 1;
    }
    absl::Status s = CudaCall(
        k.cu_,
        k.cu_.launch_kernel(k.functions_[kernel], grid[0], grid[1], grid[2],
                            block[0], block[1], block[2], shared_bytes,
                            /*stream=*/nullptr, params, nullptr),
        absl::StrCat("cuLaunchKernel ", k.names_[kernel]));
    if (!s.ok()) {
      SetDeviceError(std::move(s));
      return 1;
    }
    if (recording != nullptr) {
      if (recording->Records(self)) {
        recording->AddKernel(k.functions_[kernel], grid, block, shared_bytes,
                             params);
      } else {
        recording->Spoil("launches another library's kernels");
      }
    }
    return 0;
  }

  static int ToHostBytes(void* self, void* dst, const void* src,
                         int64_t bytes) {
    const CudaDriver& cu = static_cast<const CudaKernels*>(self)->cu_;
    Spoil(
        "reads the device from the host (an index check, or a size known only "
        "at run time)");
    absl::Status s =
        CudaCall(cu,
                 cu.memcpy_dtoh_async(dst, Address(src),
                                      static_cast<size_t>(bytes), nullptr),
                 "cuMemcpyDtoHAsync");
    if (s.ok()) {
      s = CudaCall(cu, cu.stream_synchronize(nullptr), "cuStreamSynchronize");
    }
    if (!s.ok()) {
      SetDeviceError(std::move(s));
      return 1;
    }
    return 0;
  }

  static int ToDeviceBytes(void* self, void* dst, const void* src,
                           int64_t bytes) {
    const CudaDriver& cu = static_cast<const CudaKernels*>(self)->cu_;
    // From pageable memory: the source is read before the call returns.
    Spoil(
        "copies host values to the device (an index check's flag, or a draw "
        "made on the host)");
    absl::Status s =
        CudaCall(cu,
                 cu.memcpy_htod_async(Address(dst), src,
                                      static_cast<size_t>(bytes), nullptr),
                 "cuMemcpyHtoDAsync");
    if (!s.ok()) {
      SetDeviceError(std::move(s));
      return 1;
    }
    return 0;
  }

  // Device storage handles, as kernel_runtime.cc's host ones.
  static void* Alloc(int64_t bytes, void** data) {
    absl::StatusOr<Storage> s =
        Storage::AllocateUninitialized(bytes, Device::Cuda(0));
    if (!s.ok()) {
      SetAllocError(s.status());
      return nullptr;
    }
    *data = s->data();
    return new Storage(*std::move(s));
  }

  // dst.copy_(src) on the device: through the host (the mutation epilogue
  // of a pointwise program; a device copy kernel is the next issue's).
  static int Copy(const LatheValue* dst, const LatheValue* src) {
    absl::Status s = CopyOnDevice(*dst, *src);
    if (s.ok()) return 0;
    SetDeviceError(absl::Status(
        s.code(), absl::StrCat("the mutation epilogue's copy: ", s.message())));
    return 1;
  }

  static absl::Status CopyOnDevice(const LatheValue& dst,
                                   const LatheValue& src) {
    ASSIGN_OR_RETURN(Tensor d, TensorOfValue(dst));
    ASSIGN_OR_RETURN(Tensor s, TensorOfValue(src));
    ASSIGN_OR_RETURN(const CudaDriver* cu, CudaDevice());
    auto first = [](const Tensor& t) {
      return Address(static_cast<char*>(t.storage().data()) +
                     t.storage_offset() * t.itemsize());
    };
    if (d.dtype() == s.dtype() && d.sizes() == s.sizes() && d.is_contiguous() &&
        s.is_contiguous()) {
      // The common case (an input written in place from a new buffer):
      // one copy on the device, ordered before the work queued after it.
      const int64_t bytes = d.numel() * d.itemsize();
      if (bytes == 0) return absl::OkStatus();
      RETURN_IF_ERROR(
          CudaCall(*cu,
                   cu->memcpy_dtod_async(first(d), first(s),
                                         static_cast<size_t>(bytes), nullptr),
                   "cuMemcpyDtoDAsync"));
      if (recording != nullptr) {
        recording->AddCopy(first(d), first(s), static_cast<size_t>(bytes));
      }
      return absl::OkStatus();
    }
    // Any other layouts: through the host.
    Spoil("writes an input in place through the host (a strided copy)");
    ASSIGN_OR_RETURN(Tensor hd, lathe::ToHost(d));
    ASSIGN_OR_RETURN(Tensor hs, lathe::ToHost(s));
    RETURN_IF_ERROR(CopyTensor(hd, hs));
    // ToDevice keeps hd's layout over the bytes it spans from its first
    // element; those bytes go over d's.
    ASSIGN_OR_RETURN(Tensor back, lathe::ToDevice(hd, Device::Cuda(0)));
    const int64_t bytes = back.storage().nbytes();
    if (bytes == 0) return absl::OkStatus();
    RETURN_IF_ERROR(
        CudaCall(*cu,
                 cu->memcpy_dtod_async(first(d), Address(back.storage().data()),
                                       static_cast<size_t>(bytes), nullptr),
                 "cuMemcpyDtoDAsync"));
    return CudaCall(*cu, cu->stream_synchronize(nullptr),
                    "cuStreamSynchronize");
  }

  const CudaDriver& cu_;
  std::string image_;
  CuModule module_ = nullptr;
  std::vector<CuFunction> functions_;
  std::vector<std::string> names_;
  LatheDeviceRuntime runtime_{};
};

}  // namespace

std::string CubinFile(int arch) {
  return absl::StrCat(kKernelsFilePrefix, "sm_", arch, ".cubin");
}

absl::StatusOr<std::string> DeviceImageFor(
    const std::vector<std::pair<std::string, std::string>>& files) {
  ASSIGN_OR_RETURN(const CudaDriver* cu, CudaDevice());
  if (cu->source == "emulated") return ImageForArchitecture(files, 0);
  ASSIGN_OR_RETURN(int arch, CudaArchitecture(*cu));
  return ImageForArchitecture(files, arch);
}

absl::StatusOr<std::string> ImageForArchitecture(
    const std::vector<std::pair<std::string, std::string>>& files, int arch) {
  std::vector<std::string> wanted;
  if (arch == 0) {
    wanted = {kEmulatedModuleFile};
  } else {
    // A cubin runs on its architecture's later minor versions (sm_80's on
    // an sm_86): the nearest at or below the device's, then the PTX.
    for (int a = arch; a >= arch / 10 * 10; --a) wanted.push_back(CubinFile(a));
    wanted.push_back(kPtxFile);
  }
  for (const std::string& name : wanted) {
    for (const auto& [file, bytes] : files) {
      if (file == name) return bytes;
    }
  }
  std::vector<std::string> held;
  for (const auto& f : files) held.push_back(f.first);
  return absl::FailedPreconditionError(
      absl::StrCat("no kernels for this device (",
                   arch == 0 ? "the emulated one" : absl::StrCat("sm_", arch),
                   "): the artifact holds ",
                   held.empty() ? "none" : absl::StrJoin(held, ", ")));
}

absl::StatusOr<std::shared_ptr<const DeviceKernels>> LoadCudaKernels(
    absl::string_view image, const SharedLibrary& host) {
  return CudaKernels::Load(image, host);
}

}  // namespace lathe
