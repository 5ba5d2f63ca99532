// The replay cache's rules on a device of its own (a recorder that counts
// replays): what the key tells apart, that a recording replays only when
// nobody else holds its results, its limit, the calls it refuses and why,
// and replays from many threads at once.

#include "runtime/replay_cache.h"

#include <atomic>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/loaded_graph.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;

// A device whose recordings count their replays, fail them when told, and
// whose recorders refuse when told.
class CountingDevice final : public DeviceKernels {
 public:
  struct Counts {
    std::atomic<int> recorders{0}, replays{0};
    bool spoil = false;        // Finish fails
    bool fail_replay = false;  // Replay fails
  };

  Device device() const override { return Device::Cuda(0); }
  void Prepare(LatheKernelRuntime*) const override {}
  absl::StatusOr<Tensor> ToDevice(const Tensor& t) const override { return t; }
  absl::StatusOr<Tensor> ToHost(const Tensor& t) const override { return t; }
  absl::StatusOr<std::unique_ptr<DeviceRecorder>> Record() const override {
    ++counts.recorders;
    return std::unique_ptr<DeviceRecorder>(new Recorder(&counts));
  }

  mutable Counts counts;

 private:
  class Recording final : public DeviceRecording {
   public:
    explicit Recording(Counts* c) : c_(c) {}
    absl::Status Replay() const override {
      if (c_->fail_replay) return absl::InternalError("cuGraphLaunch: broken");
      ++c_->replays;
      return absl::OkStatus();
    }

   private:
    Counts* c_;
  };
  class Recorder final : public DeviceRecorder {
   public:
    explicit Recorder(Counts* c) : c_(c) {}
    absl::StatusOr<std::unique_ptr<DeviceRecording>> Finish() override {
      if (c_->spoil) {
        return absl::FailedPreconditionError(
            "the call reads the device from the host");
      }
      return std::unique_ptr<DeviceRecording>(new Recording(c_));
    }

   private:
    Counts* c_;
  };
};

Tensor Floats(int64_t n) {
  absl::StatusOr<Tensor> t = Tensor::Empty({n}, DType::kFloat32);
  EXPECT_TRUE(t.ok());
  return *t;
}

// A "call" of `args`: records (if the cache lets it) and returns one new
// tensor, or replays.
struct Call {
  bool replayed = false;
  std::vector<Operand> results;
};
Call CallOnce(ReplayCache& cache, const CountingDevice& device,
              const std::vector<Operand>& args, uint64_t seed = 7,
              std::vector<Operand> made = {}) {
  ArgViews views;
  views.Build(args);
  const ReplayKey key(views.data(), views.size(), seed);
  Call c;
  absl::Status error;
  c.replayed = cache.Replay(key, &c.results, &error);
  EXPECT_OK(error);
  if (c.replayed) return c;
  std::unique_ptr<DeviceRecorder> r = cache.Recorder(device);
  c.results = made.empty() ? std::vector<Operand>{Operand::Of(Floats(4))}
                           : std::move(made);
  cache.Keep(key, std::move(r), views.data(), views.size(), c.results, 0);
  return c;
}

TEST(ReplayKeyTest, TellsApartWhatTheLaunchesDependOn) {
  Tensor x = Floats(4), y = Floats(4);
  auto key = [](std::vector<Operand> args, uint64_t seed = 1) {
    ArgViews v;
    v.Build(args);
    return ReplayKey(v.data(), v.size(), seed);
  };
  EXPECT_TRUE(key({Operand::Of(x)}) == key({Operand::Of(x)}));
  // Another address with the same layout, another seed, another layout.
  EXPECT_FALSE(key({Operand::Of(x)}) == key({Operand::Of(y)}));
  EXPECT_FALSE(key({Operand::Of(x)}, 1) == key({Operand::Of(x)}, 2));
  ASSERT_OK_AND_ASSIGN(Tensor x2, x.AsStrided({2, 2}, {2, 1}, 0));
  EXPECT_FALSE(key({Operand::Of(x)}) == key({Operand::Of(x2)}));
  // Scalars by value; floats by their bits (0.0 and -0.0 differ).
  EXPECT_TRUE(key({Operand::Int(3)}) == key({Operand::Int(3)}));
  EXPECT_FALSE(key({Operand::Int(3)}) == key({Operand::Int(4)}));
  EXPECT_FALSE(key({Operand::Float(0.0)}) == key({Operand::Float(-0.0)}));
  EXPECT_FALSE(key({Operand::Int(1)}) == key({Operand::Float(1.0)}));
}

TEST(ReplayCacheTest, ReplaysOnlyWhenNobodyElseHoldsTheResults) {
  ReplayCache cache;
  CountingDevice device;
  const std::vector<Operand> args = {Operand::Of(Floats(4))};
  Call first = CallOnce(cache, device, args);
  EXPECT_FALSE(first.replayed);
  const void* memory = first.results[0].tensor.storage().data();
  {
    // The first call's result is still held: a replay would overwrite it,
    // so the call records again, into memory of its own.
    Call second = CallOnce(cache, device, args);
    EXPECT_FALSE(second.replayed);
    EXPECT_NE(second.results[0].tensor.storage().data(), memory);
  }
  first = Call();  // both released
  Call third = CallOnce(cache, device, args);
  EXPECT_TRUE(third.replayed);
  EXPECT_EQ(device.counts.replays.load(), 1);
  EXPECT_EQ(cache.stats().recorded, 2);
  EXPECT_EQ(cache.stats().replayed, 1);
  // Held again: the other recording replays.
  Call fourth = CallOnce(cache, device, args);
  EXPECT_TRUE(fourth.replayed);
  EXPECT_NE(fourth.results[0].tensor.storage(),
            third.results[0].tensor.storage());
  // Other arguments are another key.
  Call other = CallOnce(cache, device, {Operand::Of(Floats(4))});
  EXPECT_FALSE(other.replayed);
}

TEST(ReplayCacheTest, AResultThatIsAnArgumentDoesNotMakeItBusy) {
  ReplayCache cache;
  CountingDevice device;
  Tensor x = Floats(4);
  const std::vector<Operand> args = {Operand::Of(x)};
  // The call returns its argument (written in place) and a new tensor.
  Call first = CallOnce(cache, device, args, 7,
                        {Operand::Of(x), Operand::Of(Floats(2))});
  first = Call();
  Call second = CallOnce(cache, device, args);
  EXPECT_TRUE(second.replayed);
  ASSERT_EQ(second.results.size(), 2u);
  EXPECT_EQ(second.results[0].tensor.storage(), x.storage());
}

TEST(ReplayCacheTest, RecordsAtMostTheLimitThenLaunches) {
  ReplayCache cache;
  CountingDevice device;
  const std::vector<Operand> args = {Operand::Of(Floats(4))};
  std::vector<Call> held;
  for (int k = 0; k < ReplayCache::kMaxRecordings + 2; ++k) {
    held.push_back(CallOnce(cache, device, args));
    EXPECT_FALSE(held.back().replayed);
  }
  EXPECT_EQ(device.counts.recorders.load(), ReplayCache::kMaxRecordings);
  EXPECT_EQ(cache.stats().recorded, ReplayCache::kMaxRecordings);
  EXPECT_EQ(cache.stats().launched, 2);
}

TEST(ReplayCacheTest, ACallAReplayCannotRepeatRefusesTheGraph) {
  ReplayCache cache;
  CountingDevice device;
  device.counts.spoil = true;
  const std::vector<Operand> args = {Operand::Of(Floats(4))};
  EXPECT_FALSE(cache.refused());
  CallOnce(cache, device, args);
  EXPECT_EQ(cache.stats().refused, "the call reads the device from the host");
  EXPECT_TRUE(cache.refused());  // the caller skips the key from now on
  // From then on, the graph's calls launch as always, and record nothing.
  device.counts.spoil = false;
  EXPECT_FALSE(CallOnce(cache, device, args).replayed);
  EXPECT_FALSE(CallOnce(cache, device, args).replayed);
  EXPECT_EQ(device.counts.recorders.load(), 1);
  EXPECT_EQ(cache.stats().launched, 2);
}

TEST(ReplayCacheTest, CompositeAndReboundResultsAreRefused) {
  CountingDevice device;
  const std::vector<Operand> args = {Operand::Of(Floats(4))};
  {
    ReplayCache cache;
    ArgViews views;
    views.Build(args);
    const ReplayKey key(views.data(), views.size(), 1);
    cache.Keep(key, cache.Recorder(device), views.data(), views.size(),
               {Operand::Of(Floats(4))}, /*rebound=*/1);
    EXPECT_EQ(cache.stats().refused, "the call rebinds an argument (set_)");
  }
  {
    ReplayCache cache;
    ArgViews views;
    views.Build(args);
    const ReplayKey key(views.data(), views.size(), 1);
    auto c = std::make_shared<CompositeTensor>();
    cache.Keep(key, cache.Recorder(device), views.data(), views.size(),
               {Operand::Of(std::shared_ptr<const CompositeTensor>(c))}, 0);
    EXPECT_EQ(cache.stats().refused,
              "a result is a composite (a tensor subclass)");
  }
}

TEST(ReplayCacheTest, AFailedReplayIsTheDevicesError) {
  ReplayCache cache;
  CountingDevice device;
  const std::vector<Operand> args = {Operand::Of(Floats(4))};
  CallOnce(cache, device, args);
  device.counts.fail_replay = true;
  ArgViews views;
  views.Build(args);
  std::vector<Operand> results;
  absl::Status error;
  EXPECT_FALSE(
      cache.Replay(ReplayKey(views.data(), views.size(), 7), &results, &error));
  EXPECT_THAT(error,
              StatusIs(absl::StatusCode::kInternal, "cuGraphLaunch: broken"));
  EXPECT_TRUE(results.empty());
}

TEST(ReplayCacheTest, AbandonedRecordingsFreeTheirPlace) {
  ReplayCache cache;
  CountingDevice device;
  for (int k = 0; k < 2 * ReplayCache::kMaxRecordings; ++k) {
    cache.Abandon(cache.Recorder(device));  // failed calls
  }
  EXPECT_EQ(device.counts.recorders.load(), 2 * ReplayCache::kMaxRecordings);
  EXPECT_EQ(cache.stats().recorded, 0);
  EXPECT_EQ(cache.stats().launched, 0);
}

// Threads replay one recording: never two at once holding its results.
TEST(ReplayCacheTest, ConcurrentCallsNeverShareAReplaysResults) {
  ReplayCache cache;
  CountingDevice device;
  const std::vector<Operand> args = {Operand::Of(Floats(4))};
  CallOnce(cache, device, args);
  ArgViews views;
  views.Build(args);
  const ReplayKey key(views.data(), views.size(), 7);
  std::atomic<int> holders{0}, overlaps{0}, replays{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        std::vector<Operand> results;
        absl::Status error;
        if (!cache.Replay(key, &results, &error)) continue;
        if (holders.fetch_add(1) != 0) ++overlaps;
        // The recording's two handles and this thread's: nobody else's.
        if (results[0].tensor.storage().use_count() != 3) ++overlaps;
        ++replays;
        holders.fetch_sub(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(replays.load(), 0);
  EXPECT_EQ(cache.stats().replayed, replays.load());
}

}  // namespace
}  // namespace lathe
