// Autotuning (driver/autotune.h): the choice from hand-made measurements,
// the record's format and its refusals, and the walk with --autotune: the
// tuned library computes the interpreter's results whatever was chosen, a
// warm compile reads the choices from the cache and calls nothing, a
// record the cache holds is written into the kernels (num_threads), and a
// damaged one is measured again. No test depends on which candidate is
// faster on this machine.

#include "driver/autotune.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "codegen/cpp/cpu_backend.h"
#include "driver/compile.h"
#include "driver/variant_compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "ir/value.h"
#include "runtime/compile_cache.h"
#include "runtime/loaded_graph.h"
#include "runtime/redis_cache.h"
#include "runtime/tensor.h"
#include "runtime/testing/expect_close.h"
#include "runtime/testing/redis_server.h"
#include "status_macros.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::DTypeTolerance;
using ::lathe::testing::ExpectTensorsClose;
using ::lathe::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(AutotuneTest, CandidatesAreTheTeamOneAndHalf) {
  EXPECT_THAT(ThreadCandidates(1), ElementsAre(0));
  EXPECT_THAT(ThreadCandidates(2), ElementsAre(0, 1));
  EXPECT_THAT(ThreadCandidates(3), ElementsAre(0, 1));
  EXPECT_THAT(ThreadCandidates(8), ElementsAre(0, 1, 4));
  EXPECT_THAT(ThreadCandidates(1, /*split=*/true), ElementsAre(0));
  EXPECT_THAT(ThreadCandidates(2, /*split=*/true),
              ElementsAre(0, 1, kSplitBatch));
  EXPECT_THAT(ThreadCandidates(1, /*split=*/true, /*winograd=*/true),
              ElementsAre(0, kWinograd));
  EXPECT_THAT(ThreadCandidates(8, /*split=*/false, /*winograd=*/true),
              ElementsAre(0, 1, 4, kWinograd));
}

// Winograd's algorithm is a candidate for convolutions alone, and thread
// counts are not (their times are the team's again): kernel 0, a
// convolution, takes Winograd (50 against 100), though its one-thread
// rounds read 10; kernel 1, a convolution, keeps the direct algorithm (120
// against 100); kernel 2, a loop, takes one thread (60), not Winograd's
// candidate, whose rounds ran it on the team (and read 10 here).
TEST(AutotuneTest, WinogradIsACandidateForConvolutionsAlone) {
  const std::vector<int> candidates = {0, 1, kWinograd};
  TuningTimes times = {
      {{100, 100, 100}, {100, 100, 100}, {100, 100, 100}},
      {{10, 10, 60}, {10, 10, 60}, {10, 10, 60}},
      {{50, 120, 10}, {50, 120, 10}, {50, 120, 10}},
  };
  const codegen::TunableKernels tunable = {.threads = {2}, .winograd = {0, 1}};
  EXPECT_THAT(ChooseThreads(candidates, times, tunable, 3, 0.05),
              ElementsAre(kWinograd, 0, 1));
}

// Kernel 0: one thread's median 60 against the team's 100: chosen. Kernel
// 1: 97 against 100, inside the 5% margin: the team. Kernel 2: the team
// is fastest. Kernel 3 is not tunable (its times are not read). Kernel 4:
// half the team (4) at 50, one thread at 70: half. Kernel 5, a batched
// product: the split at 30. Kernel 6 would take the split (20) were it a
// batched product; it is not, and takes one thread (60). The medians ignore
// one wild round each.
TEST(AutotuneTest, TheLeastMedianWinsWhenItBeatsTheTeamByTheMargin) {
  const std::vector<int> candidates = {0, 1, 4, kSplitBatch};
  TuningTimes times = {
      // the team
      {{100, 100, 10, 1, 100, 100, 100},
       {100, 100, 10, 1, 100, 100, 100},
       {900, 900, 10, 1, 900, 900, 900}},
      // one thread
      {{60, 97, 20, 0, 70, 70, 60},
       {60, 97, 20, 0, 70, 70, 60},
       {5, 5, 5, 0, 5, 5, 5}},
      // four
      {{80, 99, 30, 0, 50, 80, 80},
       {80, 99, 30, 0, 50, 80, 80},
       {80, 99, 1, 0, 50, 80, 80}},
      // the batch split (the team, for kernels without a batch)
      {{100, 100, 10, 1, 100, 30, 20},
       {100, 100, 10, 1, 100, 30, 20},
       {100, 100, 10, 1, 100, 30, 20}},
  };
  const codegen::TunableKernels tunable = {.threads = {0, 1, 2, 4, 5, 6},
                                           .split_batch = {5}};
  EXPECT_THAT(ChooseThreads(candidates, times, tunable, 7, 0.05),
              ElementsAre(1, 0, 0, 0, 4, kSplitBatch, 1));
  // A margin of 50%: kernel 5 (30 against 100) still splits, kernel 4
  // would need less than 50; of 45%, kernel 4 takes four threads and
  // kernel 0 (60) stays.
  EXPECT_THAT(ChooseThreads(candidates, times, tunable, 7, 0.5),
              ElementsAre(0, 0, 0, 0, 0, kSplitBatch, 0));
  EXPECT_THAT(ChooseThreads(candidates, times, tunable, 7, 0.45),
              ElementsAre(0, 0, 0, 0, 4, kSplitBatch, 0));
}

TEST(AutotuneTest, RecordsRoundTripAndAnythingElseIsRefused) {
  EXPECT_EQ(EncodeTuning({0, 1, 0}), "lathe-tuning 2 3\n0 1 0\n");
  ASSERT_OK_AND_ASSIGN(std::vector<int> threads,
                       DecodeTuning("lathe-tuning 2 3\n0 -2 -1\n", 3, 2));
  EXPECT_THAT(threads, ElementsAre(0, kWinograd, kSplitBatch));
  for (const std::string bad : {
           "",
           "lathe-tuning 2 3\n0 1 0",          // truncated
           "lathe-tuning 2 2\n0 1\n",          // another program's
           "lathe-tuning 1 3\n0 1 0\n",        // another format
           "lathe-tuning 2 3\n0 1\n",          // too few
           "lathe-tuning 2 3\n0 1 0 2\n",      // too many
           "lathe-tuning 2 3\n0 -3 0\n",       // below Winograd's -2
           "lathe-tuning 2 3\n0 3 0\n",        // past the team of 2
           "lathe-tuning 2 3\n0 x 0\n",        // not a number
           "lathe-tuning 2 3\n0 1 0\nmore\n",  // trailing lines
           "\x7f"
           "ELF\x02\x01\x01",  // a library
       }) {
    EXPECT_THAT(DecodeTuning(bad, 3, 2),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("tuning")))
        << bad;
  }
}

// An MLP layer big enough that its loops run on threads: an sgemm, then the
// bias and GELU; and a softmax (a row reduction and its epilogue).
constexpr char kGraph[] = R"IR(
def forward(self, x: "f32[64, 256]", w: "f32[256, 512]", b: "f32[512]"):
    mm = torch.ops.aten.mm.default(x, w)
    add = torch.ops.aten.add.Tensor(mm, b)
    gelu = torch.ops.aten.gelu.default(add)
    softmax = torch.ops.aten._softmax.default(gelu, 1, False)
    return (softmax,)
)IR";

// f32 tensors of `sizes`, element k of each `value(k)`.
std::vector<ir::Value> Made(std::vector<std::vector<int64_t>> sizes,
                            float (*value)(int64_t)) {
  std::vector<ir::Value> in;
  for (const std::vector<int64_t>& s : sizes) {
    Tensor t = *Tensor::Empty(s, DType::kFloat32);
    for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = value(k);
    in.push_back(ir::Value::OfTensor(t));
  }
  return in;
}

std::vector<ir::Value> Inputs() {
  return Made({{64, 256}, {256, 512}, {512}}, [](int64_t k) {
    return static_cast<float>((k * 37 % 101) - 50) / 200;
  });
}

// Whether a line of the compile's log says `what`.
bool Logged(const CompiledGraph& c, absl::string_view what) {
  for (const std::string& line : c.log) {
    if (absl::StrContains(line, what)) return true;
  }
  return false;
}

// One call, with the runtime wrapper when it was compiled in.
absl::StatusOr<ir::Interpretation> Call(const codegen::CpuFunction& f,
                                        std::vector<ir::Value>& in) {
  return f.plan_applied() ? f.RunWithPlan(in) : f.Run(in);
}

std::vector<std::string> StepNames(const CompiledGraph& c) {
  std::vector<std::string> names;
  for (const StepTime& s : c.steps) names.push_back(s.name);
  return names;
}

void ExpectInterpretersResults(const CompiledGraph& c) {
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                       ir::Interpret(*c.graph, Inputs()));
  std::vector<ir::Value> in = Inputs();
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c.function, in));
  ASSERT_EQ(got.outputs.size(), 1u);
  ExpectTensorsClose(got.outputs[0].tensor, want.outputs[0].tensor,
                     DTypeTolerance(DType::kFloat32), "the softmax");
}

TEST(AutotuneTest, ATunedCompileComputesTheSameAndAWarmOneMeasuresNothing) {
  MemoryCache cache;
  CompileOptions options{.backend = &codegen::CpuBackend(),
                         .cache = &cache,
                         .autotune = true,
                         .tuning = {.rounds = 2, .budget_seconds = 1e9}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> cold,
                       CompileGraphText(kGraph, options));
  ExpectInterpretersResults(*cold);
  // One call outside the timing, then a call per candidate per round.
  ASSERT_OK_AND_ASSIGN(int team, OpenMpTeam());
  const int calls = 1 + 2 * static_cast<int>(ThreadCandidates(team).size());
  std::vector<std::string> names = StepNames(*cold);
  EXPECT_TRUE(Logged(*cold, "autotune: 3 tunable kernels"))
      << ::testing::PrintToString(cold->log);
  // The sgemm and two loops are tunable; each has its line.
  int kernel_lines = 0;
  for (const std::string& line : cold->log) {
    kernel_lines += absl::StrContains(line, " threads=");
  }
  EXPECT_EQ(kernel_lines, 3) << ::testing::PrintToString(cold->log);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> warm,
                       CompileGraphText(kGraph, options));
  EXPECT_THAT(StepNames(*warm), Contains("autotune (memory cache hit)"));
  EXPECT_EQ(warm->function->source(), cold->function->source());
  ExpectInterpretersResults(*warm);
  // A tiered compile's probe: the choices and the library from the cache;
  // with an empty cache, neither is built nor measured.
  CompileOptions probe = options;
  probe.cached_only = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> probed,
                       CompileGraphText(kGraph, probe));
  ASSERT_NE(probed->function, nullptr);
  EXPECT_THAT(StepNames(*probed), Contains("autotune (memory cache hit)"));
  MemoryCache empty;
  probe.cache = &empty;
  ASSERT_OK_AND_ASSIGN(probed, CompileGraphText(kGraph, probe));
  EXPECT_EQ(probed->function, nullptr);
  EXPECT_THAT(StepNames(*probed), Contains("autotune (not in the cache)"));
  // The cold compile measured with the number of calls said (and two per
  // round more when it compared whole calls with its choices).
  EXPECT_THAT(names, Contains(::testing::AnyOf(
                         absl::StrCat("autotune (", calls, " calls)"),
                         absl::StrCat("autotune (", calls + 2 * 2, " calls)"))))
      << ::testing::PrintToString(names);
}

// A cache whose first lookup answers `planted` (the tuning record's: it is
// the compile's first), whatever the key; the rest go to a memory cache.
class PlantedCache : public CacheBackend {
 public:
  explicit PlantedCache(std::string planted) : planted_(std::move(planted)) {}
  absl::StatusOr<std::optional<CacheHit>> Get(absl::string_view key) override {
    if (!answered_) {
      answered_ = true;
      return CacheHit{planted_, "planted"};
    }
    return rest_.Get(key);
  }
  absl::Status Put(absl::string_view key, absl::string_view bytes) override {
    puts_.push_back(std::string(bytes));
    return rest_.Put(key, bytes);
  }
  std::string name() const override { return "planted"; }
  const std::vector<std::string>& puts() const { return puts_; }

 private:
  std::string planted_;
  bool answered_ = false;
  MemoryCache rest_;
  std::vector<std::string> puts_;
};

// The number of kernels kGraph schedules into.
int Kernels() {
  auto c = CompileGraphText(kGraph, {.backend = &codegen::CpuBackend()});
  return c.ok() ? static_cast<int>(
                      (*c)->function->lowered().program.kernels.size())
                : -1;
}

// A record that puts every kernel on one thread: the kernels are written
// so (the sgemm's thread count set around it, the loops' num_threads), and
// they still compute the interpreter's results.
TEST(AutotuneTest, TheCachedChoicesAreWrittenIntoTheKernels) {
  const int kernels = Kernels();
  ASSERT_GT(kernels, 1);
  PlantedCache cache(EncodeTuning(std::vector<int>(kernels, 1)));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(kGraph, {.backend = &codegen::CpuBackend(),
                                .cache = &cache,
                                .autotune = true}));
  EXPECT_THAT(StepNames(*c), Contains("autotune (planted cache hit)"));
  const std::string& source = c->function->source();
  EXPECT_TRUE(
      absl::StrContains(source, "omp_set_num_threads(lathe_threads(1));"))
      << source;
  EXPECT_TRUE(absl::StrContains(source, ", lathe_threads(1), [](int64_t"))
      << source;
  EXPECT_FALSE(absl::StrContains(source, "lathe_tune_threads")) << source;
  EXPECT_TRUE(absl::StrContains(c->function->scheduled(), " threads=1"));
  ExpectInterpretersResults(*c);
}

// `text` compiled with a cached record that splits every kernel's batch.
absl::StatusOr<std::unique_ptr<CompiledGraph>> SplitEverywhere(
    absl::string_view text) {
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledGraph> plain,
                   CompileGraphText(text, {.backend = &codegen::CpuBackend()}));
  const size_t kernels = plain->function->lowered().program.kernels.size();
  PlantedCache cache(EncodeTuning(std::vector<int>(kernels, kSplitBatch)));
  return CompileGraphText(
      text,
      {.backend = &codegen::CpuBackend(), .cache = &cache, .autotune = true});
}

// A batched product (attention's scores) whose record splits its batch:
// the matrices are split over the threads, one product each, with the
// interpreter's results.
TEST(AutotuneTest, ASplitBatchRunsEachProductOnOneThread) {
  constexpr char kBmm[] = R"IR(
def forward(self, q: "f32[16, 32, 8]", k: "f32[16, 8, 32]"):
    bmm = torch.ops.aten.bmm.default(q, k)
    return (bmm,)
)IR";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c, SplitEverywhere(kBmm));
  EXPECT_THAT(c->function->source(),
              HasSubstr("for (int64_t lathe_b = lathe_lo; lathe_b < lathe_hi; "
                        "++lathe_b) rt->sgemm(1, 32, 32, 8, p0 + 0 + "
                        "lathe_b * (256)"));
  EXPECT_THAT(c->function->scheduled(), HasSubstr(" split_batch"));
  std::vector<ir::Value> in = Made({{16, 32, 8}, {16, 8, 32}}, [](int64_t k) {
    return static_cast<float>(k % 11) - 5;
  });
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c->graph, in));
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c->function, in));
  ExpectTensorsClose(got.outputs[0].tensor, want.outputs[0].tensor, 0,
                     "the products (small integers: exact)");
}

// A fleet: one machine's choices, stored in Redis, are another's (the same
// CPU, compiler and team): its compile measures nothing.
TEST(AutotuneTest, ChoicesGoThroughRedis) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<::lathe::testing::RedisServer> redis,
                       ::lathe::testing::RedisServer::Start());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> first,
                       RedisCache::Create(redis->url()));
  CompileOptions options{.backend = &codegen::CpuBackend(),
                         .cache = first.get(),
                         .autotune = true,
                         .tuning = {.rounds = 1}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> measured,
                       CompileGraphText(kGraph, options));
  EXPECT_TRUE(Logged(*measured, "calls"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCache> second,
                       RedisCache::Create(redis->url()));
  options.cache = second.get();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> read,
                       CompileGraphText(kGraph, options));
  EXPECT_THAT(StepNames(*read), Contains("autotune (redis cache hit)"));
  EXPECT_TRUE(Logged(*read, "from the redis cache (nothing measured)"));
  EXPECT_EQ(read->function->source(), measured->function->source());
}

// The split with every kind of operand: a transposed one, one broadcast
// over the batch (batch stride 0), in f32 (oneDNN's sgemm) and f64
// (Eigen's dgemm); exact on small integers.
TEST(AutotuneTest, ASplitBatchTakesTransposedAndBroadcastOperands) {
  for (const char* dtype : {"f32", "f64"}) {
    const std::string text =
        absl::StrReplaceAll(R"IR(
def forward(self, q: "T[12, 20, 8]", k: "T[12, 20, 8]", w: "T[8, 20]"):
    t = torch.ops.aten.transpose.int(k, 1, 2)
    bmm = torch.ops.aten.bmm.default(q, t)
    e = torch.ops.aten.expand.default(w, [12, 8, 20])
    bmm_1 = torch.ops.aten.bmm.default(q, e)
    add = torch.ops.aten.add.Tensor(bmm, bmm_1)
    return (add,)
)IR",
                            {{"T[", std::string(dtype) + "["}});
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                         SplitEverywhere(text));
    const std::string& source = c->function->source();
    EXPECT_TRUE(absl::StrContains(source, "lathe_parallel(rt, 12, 1, true,"))
        << dtype << "\n"
        << c->function->scheduled();
    std::vector<ir::Value> in;
    const DType d =
        std::string(dtype) == "f32" ? DType::kFloat32 : DType::kFloat64;
    for (std::vector<int64_t> sizes :
         {std::vector<int64_t>{12, 20, 8}, {12, 20, 8}, {8, 20}}) {
      Tensor t = *Tensor::Empty(sizes, d);
      int64_t i = 0;
      ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> at) {
        t.SetDouble(at, static_cast<double>(i++ % 7) - 3);
      });
      in.push_back(ir::Value::OfTensor(t));
    }
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want, ir::Interpret(*c->graph, in));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c->function, in));
    ExpectTensorsClose(got.outputs[0].tensor, want.outputs[0].tensor, 0, dtype);
  }
}

// Two 3x3 convolutions with a ReLU between: one of stride 1 (Winograd's
// algorithm may run it), one of stride 2 (not).
constexpr char kConvGraph[] = R"IR(
def forward(self, x: "f32[4, 16, 20, 20]", w: "f32[32, 16, 3, 3]", v: "f32[32, 32, 3, 3]"):
    convolution = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    relu = torch.ops.aten.relu.default(convolution)
    convolution_1 = torch.ops.aten.convolution.default(relu, v, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    return (convolution_1,)
)IR";

std::vector<ir::Value> ConvInputs() {
  return Made({{4, 16, 20, 20}, {32, 16, 3, 3}, {32, 32, 3, 3}}, [](int64_t k) {
    return static_cast<float>((k * 37 % 101) - 50) / 200;
  });
}

void ExpectConvResults(const CompiledGraph& c) {
  ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                       ir::Interpret(*c.graph, ConvInputs()));
  std::vector<ir::Value> in = ConvInputs();
  ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c.function, in));
  ExpectTensorsClose(got.outputs[0].tensor, want.outputs[0].tensor,
                     DTypeTolerance(DType::kFloat32), "the convolutions");
}

// The stride-1 convolution is measured with Winograd's algorithm as well
// as the team's thread counts; whatever is chosen computes the
// interpreter's results. A record choosing Winograd everywhere reaches the
// stride-1 convolution alone (its geometry's flag, runtime/convolution.h),
// still with the interpreter's results.
TEST(AutotuneTest, ConvolutionsAreMeasuredWithWinogradsAlgorithm) {
  MemoryCache cache;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> measured,
      CompileGraphText(kConvGraph, {.backend = &codegen::CpuBackend(),
                                    .cache = &cache,
                                    .autotune = true,
                                    .tuning = {.rounds = 1}}));
  int winograd_lines = 0;
  for (const std::string& line : measured->log) {
    winograd_lines += absl::StrContains(line, ", winograd: ");
  }
  EXPECT_EQ(winograd_lines, 1) << ::testing::PrintToString(measured->log);
  ExpectConvResults(*measured);

  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> plain,
      CompileGraphText(kConvGraph, {.backend = &codegen::CpuBackend()}));
  const size_t kernels = plain->function->lowered().program.kernels.size();
  PlantedCache planted(EncodeTuning(std::vector<int>(kernels, kWinograd)));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(kConvGraph, {.backend = &codegen::CpuBackend(),
                                    .cache = &planted,
                                    .autotune = true}));
  EXPECT_THAT(StepNames(*c), Contains("autotune (planted cache hit)"));
  int chosen = 0;
  for (const codegen::Kernel& k : c->function->lowered().program.kernels) {
    chosen += k.winograd;
    EXPECT_EQ(k.threads, 0) << k.name;
  }
  EXPECT_EQ(chosen, 1) << c->function->scheduled();
  const std::string& source = c->function->source();
  EXPECT_EQ(source.find("| 2)"), source.rfind("| 2)")) << source;
  EXPECT_NE(source.find("| 2)"), std::string::npos) << source;
  ExpectConvResults(*c);
}

// Tiered compiles would time the kernels on the build thread beside the
// first tier's calls: refused, in one line.
TEST(AutotuneTest, TieredCompilesRefuseIt) {
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, Parse(kGraph, "g.txt"));
  MemoryCache cache;
  VariantCompiler compiler(
      parsed,
      {.source = "g.txt", .backend = &codegen::CpuBackend(), .autotune = true},
      &cache);
  EXPECT_THAT(compiler.Function({.tiered = true}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("g.txt: tiered compiles do not autotune")));
}

// A damaged record is not used: the tuner measures again and stores a
// good one.
TEST(AutotuneTest, ADamagedRecordIsMeasuredAgain) {
  PlantedCache cache("lathe-tuning 2 2\n9999 -3\n");
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(kGraph, {.backend = &codegen::CpuBackend(),
                                .cache = &cache,
                                .autotune = true,
                                .tuning = {.rounds = 1}}));
  EXPECT_TRUE(Logged(*c, "the planted cache's record is not used"))
      << ::testing::PrintToString(c->log);
  bool stored = false;
  for (const std::string& put : cache.puts()) {
    stored = stored || DecodeTuning(put, Kernels(), 4096).ok();
  }
  EXPECT_TRUE(stored) << ::testing::PrintToString(c->log);
  ExpectInterpretersResults(*c);
}

// A graph that writes its input (an in-place update) is measured on fresh
// inputs each call, and a symbolic batch at its hint; the library then
// runs at other sizes.
TEST(AutotuneTest, GraphsThatWriteInputsAndSymbolicSizesAreTuned) {
  constexpr char kInPlace[] = R"IR(
def forward(self, x: "f32[s0, 4096]", y: "f32[s0, 4096]"):
    # lathe: hint s0 16
    mul = torch.ops.aten.mul.Tensor(y, 2)
    add = torch.ops.aten.add.Tensor(x, mul)
    copy_ = torch.ops.aten.copy_.default(x, add)
    sum_1 = torch.ops.aten.sum.default(add)
    return (sum_1,)
)IR";
  MemoryCache cache;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(kInPlace, {.backend = &codegen::CpuBackend(),
                                  .cache = &cache,
                                  .autotune = true,
                                  .tuning = {.rounds = 1}}));
  EXPECT_TRUE(Logged(*c, "tunable kernels"))
      << ::testing::PrintToString(c->log);
  for (int64_t rows : {3, 16}) {
    std::vector<ir::Value> in =
        Made({{rows, 4096}, {rows, 4096}},
             [](int64_t k) { return static_cast<float>(k % 5); });
    std::vector<ir::Value> again = {ir::Value::OfTensor(*in[0].tensor.Clone()),
                                    ir::Value::OfTensor(*in[1].tensor.Clone())};
    ASSERT_OK_AND_ASSIGN(ir::Interpretation want,
                         ir::Interpret(*c->graph, again));
    ASSERT_OK_AND_ASSIGN(ir::Interpretation got, Call(*c->function, in));
    ExpectTensorsClose(got.outputs[0].tensor, want.outputs[0].tensor,
                       DTypeTolerance(DType::kFloat32), "the sum");
    ExpectTensorsClose(in[0].tensor, again[0].tensor, 0, "x, written");
  }
}

}  // namespace
}  // namespace lathe
