// -----------------------------------------------------------------------------
// File: replay_cache.h
// -----------------------------------------------------------------------------
//
// One compiled graph's device calls, recorded once and replayed (CUDA
// graphs: torch.compile's mode="reduce-overhead"). A call records its
// device work (DeviceRecorder) while it runs as always; a later call with
// the same key replays it, one launch of the whole call instead of one per
// kernel, and gets the recorded results back.
//
//   - The key is everything the recorded launches depend on: each
//     argument's kind, dtype, sizes, strides, offset and address (a
//     tensor), its value (a scalar; a float by its bits), composites'
//     inner values, and the call's seed. Other addresses record again.
//   - A replay writes the recorded results' memory again, so a recording
//     replays only when none of its results is held outside it: a result
//     the caller kept is never overwritten behind its back. Such a call
//     records again (up to kMaxRecordings per graph, each with memory of
//     its own), then launches as always.
//   - A call that does what a replay cannot (an index check reading the
//     device, a host step, a library routine, composite or rebound
//     results) is refused once; the graph's calls launch as always from
//     then on, and stats() says why.
//
// Thread-safe: replays and recordings of one graph take one lock.
//
// Example (LoadedGraph::Invoke):
//
//   if (cache.refused()) ... the call, as always ...
//   ReplayKey key(args.data(), args.size(), seed);
//   absl::Status error;
//   if (cache.Replay(key, results, &error)) return 0;
//   std::unique_ptr<DeviceRecorder> recorder = cache.Recorder(*device);
//   ... the call, as always ...
//   cache.Keep(key, std::move(recorder), args.data(), args.size(), *results,
//              rebound);

#ifndef LATHE_RUNTIME_REPLAY_CACHE_H_
#define LATHE_RUNTIME_REPLAY_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/composite.h"
#include "runtime/device_kernels.h"
#include "runtime/kernel_abi.h"
#include "runtime/storage.h"

namespace lathe {

// A call's replay key: its `n` argument values (views) and its seed.
class ReplayKey {
 public:
  ReplayKey(const LatheValue* values, int64_t n, uint64_t seed);
  friend bool operator==(const ReplayKey& a, const ReplayKey& b) {
    return a.words_ == b.words_;
  }

 private:
  void Add(const LatheValue& v);
  absl::InlinedVector<int64_t, 32> words_;
};

class ReplayCache {
 public:
  // The most recordings one graph keeps.
  static constexpr int kMaxRecordings = 4;

  struct Stats {
    int64_t recorded = 0;  // calls recorded
    int64_t replayed = 0;  // calls replayed
    // Calls launched as always: the graph cannot be recorded, or every
    // recording of the key was busy and no room was left for another.
    int64_t launched = 0;
    std::string refused;  // why the graph cannot be recorded ("" if it can)
  };

  // Replay()
  //
  // Replays a recording of `key` whose results nobody else holds: true,
  // with its results in `results` (or, if the device refused, false and
  // the error in `*error`). False, with `*error` OK, when there is none.
  bool Replay(const ReplayKey& key, std::vector<Operand>* results,
              absl::Status* error);

  // Recorder()
  //
  // A recorder for a call of `key` that did not replay, from `device`;
  // null (the call launches as always, counted) when the graph cannot be
  // recorded or holds kMaxRecordings already.
  std::unique_ptr<DeviceRecorder> Recorder(const DeviceKernels& device);

  // Keep()
  //
  // Ends `recorder`'s recording of a call of `key` on `args` (n values)
  // that returned `results` and rebound `rebound` arguments, and keeps it;
  // a call a replay cannot repeat is refused, and with it the graph.
  void Keep(const ReplayKey& key, std::unique_ptr<DeviceRecorder> recorder,
            const LatheValue* args, int64_t n,
            const std::vector<Operand>& results, int64_t rebound);

  // Abandon()
  //
  // Ends `recorder`'s recording of a call that failed, keeping nothing.
  void Abandon(std::unique_ptr<DeviceRecorder> recorder);

  Stats stats() const;

  // Whether the graph was refused (its calls launch as always): checked
  // before a call builds its key.
  bool refused() const { return refused_.load(std::memory_order_relaxed); }
  // Counts a call launched as always (Stats::launched).
  void CountLaunched() { launched_.fetch_add(1, std::memory_order_relaxed); }

 private:
  // Refuses the graph for `why` (the first reason given stays).
  void Refuse(const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct Recording {
    ReplayKey key;
    std::unique_ptr<DeviceRecording> work;
    std::vector<Operand> results;  // the recording's own handles
    // The results' storages that are not the arguments', and how many
    // handles `results` holds on each: more means someone else holds it.
    std::vector<Storage> owned;
    std::vector<int64_t> handles;
  };
  // Whether nobody but `r` holds its results.
  static bool Free(const Recording& r);

  mutable std::mutex mu_;  // ThreadSanitizer sees it through pthreads
  std::vector<Recording> recordings_ ABSL_GUARDED_BY(mu_);
  int recording_now_ ABSL_GUARDED_BY(mu_) = 0;  // recorders handed out
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> refused_{false};
  std::atomic<int64_t> launched_{0};  // Stats::launched, without the lock
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_REPLAY_CACHE_H_
