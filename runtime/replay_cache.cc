#include "runtime/replay_cache.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace lathe {
namespace {

// Adds the storages of `n` argument values (composites' inner ones too).
void ArgumentStorages(const LatheValue* values, int64_t n,
                      std::vector<const Storage*>* out) {
  for (int64_t k = 0; k < n; ++k) {
    const LatheValue& v = values[k];
    if (v.kind == LATHE_VALUE_COMPOSITE) {
      ArgumentStorages(v.inner, v.num_inner, out);
    } else if (v.kind == LATHE_VALUE_TENSOR && v.storage != nullptr) {
      out->push_back(static_cast<const Storage*>(v.storage));
    }
  }
}

}  // namespace

ReplayKey::ReplayKey(const LatheValue* values, int64_t n, uint64_t seed) {
  words_.reserve(static_cast<size_t>(8 * n + 2));
  words_.push_back(static_cast<int64_t>(seed));
  words_.push_back(n);
  for (int64_t k = 0; k < n; ++k) Add(values[k]);
}

void ReplayKey::Add(const LatheValue& v) {
  words_.push_back(v.kind);
  switch (v.kind) {
    case LATHE_VALUE_TENSOR:
    case LATHE_VALUE_COMPOSITE:
      words_.push_back(v.dtype);
      words_.push_back(v.ndim);
      for (int64_t d = 0; d < v.ndim; ++d) {
        words_.push_back(v.sizes[d]);
        words_.push_back(v.strides[d]);
      }
      if (v.kind == LATHE_VALUE_TENSOR) {
        words_.push_back(v.storage_offset);
        words_.push_back(
            static_cast<int64_t>(reinterpret_cast<uintptr_t>(v.data)));
      } else {
        // The type's name (its registry keeps the string).
        words_.push_back(
            static_cast<int64_t>(reinterpret_cast<uintptr_t>(v.type)));
        words_.push_back(v.num_inner);
        for (int64_t i = 0; i < v.num_inner; ++i) Add(v.inner[i]);
      }
      break;
    case LATHE_VALUE_FLOAT: {
      int64_t bits = 0;
      std::memcpy(&bits, &v.f, sizeof(bits));
      words_.push_back(bits);
      break;
    }
    default:
      words_.push_back(v.i);
  }
}

bool ReplayCache::Free(const Recording& r) {
  for (size_t k = 0; k < r.owned.size(); ++k) {
    if (r.owned[k].use_count() != r.handles[k] + 1) return false;
  }
  return true;
}

bool ReplayCache::Replay(const ReplayKey& key, std::vector<Operand>* results,
                         absl::Status* error) {
  *error = absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  if (recordings_.empty()) return false;
  for (Recording& r : recordings_) {
    if (!(r.key == key) || !Free(r)) continue;
    // Under the lock: another thread's replay cannot take the results
    // between the check and the copy.
    *error = r.work->Replay();
    if (!error->ok()) return false;
    *results = r.results;
    ++stats_.replayed;
    return true;
  }
  return false;
}

std::unique_ptr<DeviceRecorder> ReplayCache::Recorder(
    const DeviceKernels& device) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (refused() || static_cast<int>(recordings_.size()) + recording_now_ >=
                         kMaxRecordings) {
      CountLaunched();
      return nullptr;
    }
    ++recording_now_;
  }
  absl::StatusOr<std::unique_ptr<DeviceRecorder>> r = device.Record();
  if (r.ok()) return *std::move(r);
  std::lock_guard<std::mutex> lock(mu_);
  --recording_now_;
  CountLaunched();
  Refuse(std::string(r.status().message()));
  return nullptr;
}

void ReplayCache::Refuse(const std::string& why) {
  if (stats_.refused.empty()) stats_.refused = why;
  refused_.store(true, std::memory_order_relaxed);
}

void ReplayCache::Abandon(std::unique_ptr<DeviceRecorder> recorder) {
  if (recorder == nullptr) return;
  recorder.reset();
  std::lock_guard<std::mutex> lock(mu_);
  --recording_now_;
}

void ReplayCache::Keep(const ReplayKey& key,
                       std::unique_ptr<DeviceRecorder> recorder,
                       const LatheValue* args, int64_t n,
                       const std::vector<Operand>& results, int64_t rebound) {
  if (recorder == nullptr) return;
  std::string refused;
  Recording r{key, nullptr, results, {}, {}};
  if (rebound > 0) refused = "the call rebinds an argument (set_)";
  std::vector<const Storage*> inputs;
  ArgumentStorages(args, n, &inputs);
  for (const Operand& o : results) {
    if (o.kind == Operand::Kind::kComposite) {
      refused = "a result is a composite (a tensor subclass)";
    }
    if (o.kind != Operand::Kind::kTensor || o.tensor.storage().is_null()) {
      continue;
    }
    const Storage& s = o.tensor.storage();
    bool argument = false;
    for (const Storage* in : inputs) argument |= *in == s;
    if (argument) continue;  // the caller's own memory: a replay writes it
    size_t k = 0;
    while (k < r.owned.size() && r.owned[k] != s) ++k;
    if (k == r.owned.size()) {
      r.owned.push_back(s);
      r.handles.push_back(0);
    }
    ++r.handles[k];
  }
  if (refused.empty()) {
    absl::StatusOr<std::unique_ptr<DeviceRecording>> work = recorder->Finish();
    if (work.ok()) {
      r.work = *std::move(work);
    } else {
      refused = std::string(work.status().message());
    }
  }
  recorder.reset();  // its memory scope ends on this thread
  std::lock_guard<std::mutex> lock(mu_);
  --recording_now_;
  if (!refused.empty()) {
    Refuse(refused);
    return;
  }
  ++stats_.recorded;
  recordings_.push_back(std::move(r));
}

ReplayCache::Stats ReplayCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.launched = launched_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace lathe
