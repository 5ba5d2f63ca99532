// CUDA graphs end to end on the emulated device: graphs compiled with the
// cuda backend, called through their loaded library with replays on
// (LoadedGraph::Invoke, runtime/replay_cache.h). A replay computes what the
// interpreter computes on the values the inputs hold then; a result the
// caller still holds is never overwritten; an input written in place is
// written again by each replay; other addresses and sizes record again;
// a graph that reads the device from the host or runs a library routine
// is refused once, naming why, and keeps giving the right results; a
// CompiledFunction with cuda_graphs set replays its variants' calls.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aot/aot_dispatch.h"
#include "codegen/cuda/cuda_backend.h"
#include "driver/compile.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/op_testing.h"
#include "runtime/compiled_function.h"
#include "runtime/composite.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_storage.h"
#include "runtime/loaded_graph.h"
#include "runtime/storage.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using codegen::CudaBackend;
using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

class CudaGraphsTest : public ::testing::Test {
 protected:
  // The emulated device unless the environment chose (tools/gpu/check.sh:
  // the GPU).
  static void SetUpTestSuite() { setenv("LATHE_CUDA_DEVICE", "emulated", 0); }

  void Compile(const std::string& text) {
    ASSERT_OK_AND_ASSIGN(compiled_,
                         CompileGraphText(text, {.backend = &CudaBackend()}));
    graph_ = compiled_->function->user_call();
    ASSERT_NE(graph_, nullptr) << compiled_->function->user_entry_error();
  }

  // One call with replays on, on device tensors: its results.
  std::vector<Operand> Call(const std::vector<Tensor>& device_inputs) {
    std::vector<Operand> args;
    for (const Tensor& t : device_inputs) args.push_back(Operand::Of(t));
    ArgViews views;
    views.Build(args);
    std::vector<Operand> results, rebound;
    const int rc = graph_->Invoke(views.span(), /*seed=*/7, &results, &rebound,
                                  /*replay=*/true);
    EXPECT_EQ(rc, 0) << graph_->CallStatus(rc);
    return results;
  }

  // What the interpreter computes on host copies of `inputs` (which it
  // writes where the graph writes its inputs).
  std::vector<Tensor> Expected(std::vector<Tensor>* inputs) {
    std::vector<ir::Value> values;
    for (Tensor& t : *inputs) values.push_back(ir::Value::OfTensor(t));
    absl::StatusOr<ir::Interpretation> want =
        aot::InterpretWithPlan(*compiled_->graph, compiled_->aot.plan, values);
    EXPECT_OK(want.status());
    std::vector<Tensor> out;
    if (!want.ok()) return out;
    for (const ir::Value& v : want->outputs) out.push_back(v.tensor);
    return out;
  }

  std::unique_ptr<CompiledGraph> compiled_;
  std::shared_ptr<const LoadedGraph> graph_;
};

Tensor Values(std::vector<int64_t> sizes, double scale, double shift) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back((i % 13) * scale + shift);
  return ir::T(sizes, v);
}

Tensor OnDevice(const Tensor& t) {
  absl::StatusOr<Tensor> d = ToDevice(t, Device::Cuda(0));
  EXPECT_OK(d.status());
  return *d;
}

// Writes host tensor `from` over device tensor `to` (same layout, both
// contiguous): new values at the same address.
void Overwrite(const Tensor& to, const Tensor& from) {
  ASSERT_OK_AND_ASSIGN(const CudaDriver* cu, CudaDevice());
  ASSERT_OK(MakeCudaContextCurrent(*cu));
  const auto address = static_cast<CuDevicePtr>(
      reinterpret_cast<uintptr_t>(static_cast<char*>(to.storage().data()) +
                                  to.storage_offset() * to.itemsize()));
  ASSERT_OK(CudaCall(
      *cu,
      cu->memcpy_htod_async(address, from.storage().data(),
                            static_cast<size_t>(from.numel() * from.itemsize()),
                            nullptr),
      "cuMemcpyHtoDAsync"));
  ASSERT_OK(CudaCall(*cu, cu->stream_synchronize(nullptr), "sync"));
}

void ExpectNear(const Operand& got, const Tensor& want) {
  ASSERT_EQ(got.kind, Operand::Kind::kTensor);
  ASSERT_OK_AND_ASSIGN(Tensor host, ToHost(got.tensor));
  std::vector<double> a = ir::Elements(host), b = ir::Elements(want);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], 1e-5 * (std::abs(b[i]) + 1)) << "element " << i;
  }
}

constexpr char kSoftmaxAndNorm[] = R"IR(
def forward(self, x: "f32[6, 40]", w: "f32[40]"):
    softmax = torch.ops.aten._softmax.default(x, 1, False)
    mul = torch.ops.aten.mul.Tensor(softmax, w)
    sum_1 = torch.ops.aten.sum.dim_IntList(mul, [1])
    return (mul, sum_1)
)IR";

TEST_F(CudaGraphsTest, AReplayComputesOnTheInputsValuesThen) {
  Compile(kSoftmaxAndNorm);
  Tensor a = Values({6, 40}, 0.25, -1.5), b = Values({6, 40}, -0.5, 2.0);
  Tensor w = Values({40}, 0.1, 0.3);
  Tensor x = OnDevice(a), wd = OnDevice(w);
  std::vector<Tensor> host_a = {a, w}, host_b = {b, w};
  std::vector<Tensor> want_a = Expected(&host_a), want_b = Expected(&host_b);

  std::vector<Operand> r1 = Call({x, wd});  // records
  ExpectNear(r1[0], want_a[0]);
  ExpectNear(r1[1], want_a[1]);
  // r1 is held: this call records again instead of overwriting it.
  std::vector<Operand> r2 = Call({x, wd});
  EXPECT_NE(r2[0].tensor.storage(), r1[0].tensor.storage());
  EXPECT_EQ(graph_->replay_stats().recorded, 2);
  EXPECT_EQ(graph_->replay_stats().replayed, 0);
  r1.clear();
  // New values at the same address: the replay reads them.
  Overwrite(x, b);
  std::vector<Operand> r3 = Call({x, wd});
  EXPECT_EQ(graph_->replay_stats().replayed, 1);
  ExpectNear(r3[0], want_b[0]);
  ExpectNear(r3[1], want_b[1]);
  // The result still held from before is as it was.
  ExpectNear(r2[0], want_a[0]);
  ExpectNear(r2[1], want_a[1]);
  r2.clear();
  r3.clear();
  for (int k = 0; k < 3; ++k) {
    std::vector<Operand> again = Call({x, wd});
    ExpectNear(again[1], want_b[1]);
  }
  EXPECT_EQ(graph_->replay_stats().replayed, 4);
  EXPECT_EQ(graph_->replay_stats().recorded, 2);
  EXPECT_EQ(graph_->replay_stats().refused, "");
  // Another input address records again.
  Tensor x2 = OnDevice(a);
  std::vector<Operand> r4 = Call({x2, wd});
  ExpectNear(r4[1], want_a[1]);
  EXPECT_EQ(graph_->replay_stats().recorded, 3);
}

TEST_F(CudaGraphsTest, AnInputWrittenInPlaceIsWrittenByEachReplay) {
  Compile(R"IR(
def forward(self, x: "f32[32]", y: "f32[32]"):
    add_ = torch.ops.aten.add_.Tensor(x, y)
    mul = torch.ops.aten.mul.Tensor(x, 2.0)
    return (mul,)
)IR");
  Tensor a = Values({32}, 0.5, -2.0), y = Values({32}, 0.25, 1.0);
  Tensor x = OnDevice(a), yd = OnDevice(y);
  std::vector<Tensor> host = {a, y};
  ASSERT_OK_AND_ASSIGN(host[0], a.Clone());
  for (int k = 0; k < 4; ++k) {
    std::vector<Tensor> want = Expected(&host);  // writes host[0]
    std::vector<Operand> got = Call({x, yd});
    ExpectNear(got[0], want[0]);
  }
  ASSERT_OK_AND_ASSIGN(Tensor back, ToHost(x));
  std::vector<double> xs = ir::Elements(back), ws = ir::Elements(host[0]);
  ASSERT_EQ(xs.size(), ws.size());
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(xs[i], ws[i], 1e-5) << i;
  EXPECT_GE(graph_->replay_stats().replayed, 3);
}

TEST_F(CudaGraphsTest, SymbolicSizesRecordPerShape) {
  Compile(R"IR(
def forward(self, x: "f32[s0, 8]"):
    exp = torch.ops.aten.exp.default(x)
    sum_1 = torch.ops.aten.sum.dim_IntList(exp, [1])
    return (sum_1,)
)IR");
  std::map<int64_t, Tensor> kept;  // one device tensor per shape
  for (int64_t rows : {3, 5, 3, 5}) {
    Tensor a = Values({rows, 8}, 0.1, -0.4);
    std::vector<Tensor> host = {a};
    std::vector<Tensor> want = Expected(&host);
    if (kept.count(rows) == 0) kept[rows] = OnDevice(a);
    ExpectNear(Call({kept[rows]})[0], want[0]);
  }
  EXPECT_EQ(graph_->replay_stats().recorded, 2);
  EXPECT_EQ(graph_->replay_stats().replayed, 2);
}

// What a replay cannot repeat: the graph is refused once, says why, and its
// calls keep giving the interpreter's results.
TEST_F(CudaGraphsTest, GraphsAReplayCannotRepeatAreRefusedNamingWhy) {
  struct Case {
    const char* text;
    std::vector<Tensor> inputs;
    const char* why;
  };
  const std::vector<Case> cases = {
      {R"IR(
def forward(self, x: "f32[10, 12]", i: "i64[5]"):
    index = torch.ops.aten.index.Tensor(x, [i])
    return (index,)
)IR",
       {Values({10, 12}, 0.5, 0), ir::T({5}, {0, 9, 2, 3, 1}, DType::kInt64)},
       "the call copies host values to the device (an index check"},
      {R"IR(
def forward(self, a: "f32[4, 8]", b: "f32[8, 3]"):
    mm = torch.ops.aten.mm.default(a, b)
    return (mm,)
)IR",
       {Values({4, 8}, 0.5, -1), Values({8, 3}, 0.25, 0.5)},
       "the call runs a matrix product"},
  };
  for (const Case& c : cases) {
    Compile(c.text);
    std::vector<Tensor> device;
    for (const Tensor& t : c.inputs) device.push_back(OnDevice(t));
    std::vector<Tensor> host = c.inputs;
    std::vector<Tensor> want = Expected(&host);
    for (int k = 0; k < 3; ++k) ExpectNear(Call(device)[0], want[0]);
    EXPECT_THAT(graph_->replay_stats().refused, HasSubstr(c.why));
    EXPECT_EQ(graph_->replay_stats().replayed, 0);
    EXPECT_EQ(graph_->replay_stats().launched, 2);
  }
}

// Memory zeroed outside the kernels while recording (a memset the graph
// does not hold) spoils the recording: a replay would not zero it again.
TEST_F(CudaGraphsTest, AZeroedAllocationSpoilsARecording) {
  Compile(kSoftmaxAndNorm);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DeviceRecorder> recorder,
                       graph_->device()->Record());
  ASSERT_OK_AND_ASSIGN(Storage zeroed, Storage::Allocate(64, Device::Cuda(0)));
  EXPECT_THAT(recorder->Finish().status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "the call zeroes new device memory outside its kernels "
                       "(a memset)"));
  // Without one, a recording of nothing finishes (and replays nothing).
  recorder.reset();
  ASSERT_OK_AND_ASSIGN(recorder, graph_->device()->Record());
  ASSERT_OK_AND_ASSIGN(Storage plain,
                       Storage::AllocateUninitialized(64, Device::Cuda(0)));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DeviceRecording> work,
                       recorder->Finish());
  EXPECT_OK(work->Replay());
}

// CompiledFunction's option: each variant's calls replay.
TEST_F(CudaGraphsTest, ACompiledFunctionReplaysWithTheOption) {
  Compile(kSoftmaxAndNorm);
  Variant v;
  v.graph = graph_;
  std::vector<ArgumentSpec> specs(2);
  specs[0].name = "x";
  specs[0].rank = 2;
  specs[1].name = "w";
  specs[1].rank = 1;
  for (ArgumentSpec& a : specs) a.device = Device::Cuda(0);
  std::vector<Variant> variants;
  variants.push_back(std::move(v));
  CompiledFunction f(specs, {.cuda_graphs = true}, std::move(variants));
  Tensor a = Values({6, 40}, 0.25, -1.5), w = Values({40}, 0.1, 0.3);
  std::vector<Tensor> host = {a, w};
  std::vector<Tensor> want = Expected(&host);
  std::vector<Operand> args = {Operand::Of(OnDevice(a)),
                               Operand::Of(OnDevice(w))};
  std::vector<Operand> out;
  for (int k = 0; k < 4; ++k) {
    // The last call's results are held during the next: two recordings,
    // replayed in turn.
    ASSERT_OK_AND_ASSIGN(out, f.Call(absl::MakeSpan(args)));
    ExpectNear(out[1], want[1]);
  }
  EXPECT_EQ(graph_->replay_stats().recorded, 2);
  EXPECT_EQ(graph_->replay_stats().replayed, 2);
}

}  // namespace
}  // namespace lathe
