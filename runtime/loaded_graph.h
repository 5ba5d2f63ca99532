// -----------------------------------------------------------------------------
// File: loaded_graph.h
// -----------------------------------------------------------------------------
//
// One compiled graph's shared library, loaded and callable with the user's
// values: its compiled guards (lathe_guards) and its whole user call
// (lathe_call_user: composites unwrapped, the graph, the runtime wrapper
// plan, composites rebuilt), through the C ABI of kernel_abi.h. What the
// runtime must know to shape the results (the signature) comes from the
// compiler, or from an artifact's manifest (artifact.h); nothing here
// depends on the compiler.
//
// Example:
//
//   ASSIGN_OR_RETURN(std::shared_ptr<const LoadedGraph> g,
//                    LoadedGraph::Open("dir/kernel.so", signature));
//   ArgViews views;
//   RETURN_IF_ERROR(views.Build(args));
//   if (g->FailedGuard(views) == LATHE_GUARDS_HOLD) {
//     std::vector<Operand> results, rebound;
//     int rc = g->Invoke(views.span(), kDefaultSeed, &results, &rebound);
//     if (rc != 0) return g->CallStatus(rc);
//   }

#ifndef LATHE_RUNTIME_LOADED_GRAPH_H_
#define LATHE_RUNTIME_LOADED_GRAPH_H_

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/composite.h"
#include "runtime/composite_layout.h"
#include "runtime/device_kernels.h"
#include "runtime/kernel_abi.h"
#include "runtime/kernel_runtime.h"
#include "runtime/replay_cache.h"
#include "runtime/shared_library.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"

namespace lathe {

// Invoke's code for a result the runtime cannot wrap (the compiled code's
// fault); lathe_call's own codes are kernel_abi.h's.
inline constexpr int kCallBadResult = -100;
// Invoke's code when the library has no lathe_call_user.
inline constexpr int kCallNoEntry = -101;
// A tensor argument on another device than the compiled kernels'.
inline constexpr int kCallWrongDevice = -102;
// InvokeGraph's code when the graph was opened without lathe_call (Open,
// not OpenGraph).
inline constexpr int kCallNoGraphEntry = -103;

// How to call a compiled graph's lathe_call_user and read what it did.
struct CallSignature {
  std::vector<CompositeLayout> results;  // the user's results, ranks known
  // The arguments a set_ or as_strided_ rebinds (plain tensors of these
  // ranks; -1 for an inner value of a composite, which is not rebound):
  // lathe_call_user returns them after the user's results.
  std::vector<int> rebound_inputs, rebound_ranks;
  // The message of lathe_call's check k (returned as k + 1): a template
  // (FillCheckMessage).
  std::vector<std::string> checks;
  // The range guards' bounds lathe_guards reads (lo, hi per range guard, in
  // guard order): as many as the library's lathe_guard_bound_count.
  std::vector<int64_t> guard_bounds;
};

// The error of a compiled call that returned `rc` (kernel_abi.h's codes,
// kCallBadResult, or k > 0 for index check k - 1, whose messages `checks`
// gives, filled with the values the check reported on this thread:
// TakeCheckValues()).
absl::Status CallStatus(int rc, absl::Span<const std::string> checks);

// FillCheckMessage()
//
// A check's message template (kernel_abi.h) with each hole "{k:TEXT}"
// replaced by values[k], or by TEXT when the check reported no value k (a
// library that reports none, a hole past the values given). Text that is
// not a hole is kept as it is.
//
//   FillCheckMessage("index {0:?} of {1:u0}", {5, 4}) == "index 5 of 4"
//   FillCheckMessage("index {0:?} of {1:u0}", {}) == "index ? of u0"
std::string FillCheckMessage(absl::string_view message,
                             absl::Span<const int64_t> values);

// `t` as the C ABI sees it: a view, nothing copied or retained.
LatheValue ViewOfTensor(const Tensor& t);

// A plain result the compiled code filled, holding `held` (its storage).
absl::StatusOr<Operand> ResultOperand(const LatheValue& o, Storage held);

// A result's storage handle (kernel_runtime.cc's alloc and retain), taken
// back: the Storage it names.
Storage TakeStorage(void* handle);

// The user's values as LatheValues (composites as trees), viewed without
// copying; inputs up to a few dozen values need no heap.
class ArgViews {
 public:
  // Views `args`; they must outlive this object's use.
  void Build(absl::Span<const Operand> args);
  const LatheValue* data() const { return top_.data(); }
  int64_t size() const { return static_cast<int64_t>(top_.size()); }
  // The views, one per argument: None, an undefined tensor (i = 1) and an
  // empty composite (i = 2) are LATHE_VALUE_NONE.
  absl::Span<const LatheValue> span() const { return top_; }

 private:
  LatheValue View(const Operand& o);
  absl::InlinedVector<LatheValue, 16> top_;
  std::vector<std::unique_ptr<LatheValue[]>> inner_;  // composites only
  // Composites only: their type names (stable c_str()). A list, which
  // allocates nothing until a composite comes (a deque allocates when made:
  // on every call).
  std::list<std::string> names_;
};

// Loads the OpenMP runtime generated kernels link, for the whole process;
// call it before loading a kernel library.
absl::Status KeepOpenMpLoaded();

// The thread team a kernel library's parallel loops run on when called
// from this thread: OpenMP's omp_get_max_threads().
absl::StatusOr<int> OpenMpTeam();

class LoadedGraph {
 public:
  // Loads `path` and finds lathe_call_user (and lathe_guards, if present).
  static absl::StatusOr<std::shared_ptr<const LoadedGraph>> Open(
      const std::string& path, CallSignature signature);
  // The same for a library already loaded (SharedLibrary::OpenImage: the
  // bytes that were checked).
  // A library whose kernels run on a device (it exports
  // lathe_device_kernels) needs them loaded: `device`.
  static absl::StatusOr<std::shared_ptr<const LoadedGraph>> Open(
      SharedLibrary library, CallSignature signature,
      std::shared_ptr<const DeviceKernels> device = nullptr,
      std::vector<Tensor> frozen = {});
  // A library the compiler just built, whose user entry (lathe_call_user)
  // may be absent (a graph compiled without its composite wrapper): its
  // graph entry (lathe_call) must be there.
  // `frozen`: the graph's frozen constants (`# lathe: constant`), which
  // every call passes after the caller's arguments; the library may keep
  // what it derives from them (packed weights) until this object goes.
  static absl::StatusOr<std::shared_ptr<const LoadedGraph>> OpenGraph(
      SharedLibrary library, CallSignature signature,
      std::shared_ptr<const DeviceKernels> device = nullptr,
      std::vector<Tensor> frozen = {});
  ~LoadedGraph();

  // The compiled guards on the views of the user's placeholders (the
  // constants after them are not read): LATHE_GUARDS_HOLD, the index of
  // the first failing guard, or LATHE_GUARDS_OTHER_INPUTS.
  int FailedGuard(const ArgViews& args, int64_t placeholders) const;
  // The same on `n` values already viewed.
  int FailedGuard(const LatheValue* values, int64_t n) const;
  bool has_guards() const { return guards_ != nullptr; }
  // Whether Invoke can run (lathe_call_user is defined).
  bool has_user_entry() const { return call_ != nullptr; }

  // Calls lathe_call_user: 0 and the user's results, and the rebound
  // arguments in signature().rebound_inputs order; or lathe_call's error
  // code (nothing is returned, no storage is held). With `replay`, a call
  // on a device is recorded and replayed (replay_cache.h: CUDA graphs).
  int Invoke(absl::Span<const LatheValue> args, uint64_t seed,
             std::vector<Operand>* results, std::vector<Operand>* rebound,
             bool replay = false) const;

  // What Invoke's `replay` did so far.
  ReplayCache::Stats replay_stats() const { return replays_.stats(); }

  // InvokeGraph()
  //
  // Calls lathe_call, the graph's own entry (dense inputs, then the
  // constants, as `n` values): 0 and one plain result per output (at the
  // ranks the library exports), or lathe_call's error code (nothing is
  // returned, no storage is held).
  int InvokeGraph(const LatheValue* inputs, int64_t n, uint64_t seed,
                  std::vector<Operand>* results) const;

  // The error of a failed Invoke or InvokeGraph returning `rc`.
  absl::Status CallStatus(int rc) const;

  const CallSignature& signature() const { return signature_; }
  const std::string& path() const { return library_.path(); }
  // The loaded library (its other symbols: driver/autotune.h's table).
  const SharedLibrary& library() const { return library_; }
  // The device the kernels run on, if not the host (null).
  const DeviceKernels* device() const { return device_.get(); }

 private:
  LoadedGraph() = default;
  SharedLibrary library_;
  // Finds the entries (lathe_call_user required when `user_entry`).
  static absl::StatusOr<std::shared_ptr<const LoadedGraph>> Load(
      SharedLibrary library, CallSignature signature, bool user_entry,
      std::shared_ptr<const DeviceKernels> device,
      std::vector<Tensor> frozen = {});
  // `args`, then the frozen constants' views, in `storage` (args alone
  // without frozen constants).
  absl::Span<const LatheValue> WithFrozen(
      absl::Span<const LatheValue> args,
      absl::InlinedVector<LatheValue, 32>* storage) const;
  // Whether every tensor of the `n` values (composites' inner ones too)
  // lives where the kernels run.
  bool OnItsDevice(const LatheValue* values, int64_t n) const;
  // A call's runtime: `seed`, and the device's parts.
  LatheKernelRuntime CallRuntime(uint64_t seed) const;
  std::shared_ptr<const DeviceKernels> device_;
  LatheCallUserFn call_ = nullptr;    // lathe_call_user
  LatheCallFn graph_call_ = nullptr;  // lathe_call
  LatheGuardFn guards_ = nullptr;
  CallSignature signature_;
  mutable ReplayCache replays_;
  size_t values_ = 0;  // LatheValues of the results' trees, all together
  size_t dims_ = 0;    // their sizes and strides
  std::vector<int> graph_ranks_;  // lathe_result_ranks: lathe_call's outputs
  std::vector<Tensor> frozen_;
  std::vector<LatheValue> frozen_views_;
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_LOADED_GRAPH_H_
