// -----------------------------------------------------------------------------
// File: device_kernels.h
// -----------------------------------------------------------------------------
//
// The device half of a compiled graph whose kernels run on a device
// (codegen/cuda): its host library (LoadedGraph) exports
// lathe_device_kernels, the names of the kernels its host function
// launches by index, and a DeviceKernels holds them loaded (a CUDA module:
// runtime/cuda/cuda_kernels.h). A call's LatheKernelRuntime gets the
// device's parts from it (launch, copy to host, device alloc and copy),
// and a caller with host tensors moves them with ToDevice and ToHost.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::shared_ptr<const DeviceKernels> d,
//                    LoadCudaKernels(cubin, library));
//   ASSIGN_OR_RETURN(auto g, LoadedGraph::OpenGraph(std::move(library),
//                                                   signature, d));

#ifndef LATHE_RUNTIME_DEVICE_KERNELS_H_
#define LATHE_RUNTIME_DEVICE_KERNELS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "runtime/device.h"
#include "runtime/kernel_abi.h"
#include "runtime/tensor.h"

namespace lathe {

// The symbol of a host library whose kernels run on a device: a
// null-terminated array of the kernels' names (const char* const[]).
inline constexpr char kDeviceKernelsSymbol[] = "lathe_device_kernels";

// A call's device work, recorded to be queued again as a whole (a CUDA
// graph): the same kernels on the same addresses, with the same
// parameters.
class DeviceRecording {
 public:
  virtual ~DeviceRecording() = default;
  // Queues the recorded work again (after the work queued before it).
  virtual absl::Status Replay() const = 0;
};

// Records the device work of the call its thread makes while it lives:
// the call runs as always, and every launch is also kept. The memory the
// thread allocates meanwhile is the recording's own (it stays reserved for
// the replays). A call that does what a replay cannot (reads the device
// from the host, draws on the host, runs a library routine staged through
// the host) spoils it.
class DeviceRecorder {
 public:
  virtual ~DeviceRecorder() = default;
  // Ends the recording: the work to replay, or FailedPrecondition saying
  // what the call did that a replay cannot.
  virtual absl::StatusOr<std::unique_ptr<DeviceRecording>> Finish() = 0;
};

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;
  // The device the kernels run on.
  virtual Device device() const = 0;
  // Sets `rt`'s device parts for one call on this thread: device, and
  // alloc and copy for device memory.
  virtual void Prepare(LatheKernelRuntime* rt) const = 0;
  // Host tensor `t` copied to the device (same sizes and strides).
  virtual absl::StatusOr<Tensor> ToDevice(const Tensor& t) const = 0;
  // Device tensor `t` copied to the host.
  virtual absl::StatusOr<Tensor> ToHost(const Tensor& t) const = 0;
  // Starts recording this thread's next call (made with a runtime Prepare
  // set up); an error where the device cannot record.
  virtual absl::StatusOr<std::unique_ptr<DeviceRecorder>> Record() const = 0;
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_DEVICE_KERNELS_H_
