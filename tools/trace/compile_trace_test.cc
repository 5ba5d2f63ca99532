#include "tools/trace/compile_trace.h"

#include <memory>
#include <string>
#include <vector>

#include "codegen/cpp/cpu_backend.h"
#include "codegen/cpp/cpu_function.h"
#include "driver/compile.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/status_matchers.h"
#include "tools/trace/trace.h"

namespace lathe::trace {
namespace {

using ::testing::HasSubstr;

// An MLP with a gelu (tools/examples/mlp_gelu.txt, with a dynamic batch).
constexpr char kMlpGelu[] = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[s0, 8][8, 1]cpu", w: "f32[8, 16][16, 1]cpu", b: "f32[16][1]cpu"):
        addmm: "f32[s0, 16][16, 1]cpu" = torch.ops.aten.addmm.default(b, x, w);  b = x = w = None
        gelu: "f32[s0, 16][16, 1]cpu" = torch.ops.aten.gelu.default(addmm);  addmm = None
        return (gelu,)
)";

// The step named `name`, or null.
const TraceStep* Find(const std::vector<TraceStep>& steps,
                      const std::string& name) {
  for (const TraceStep& s : steps) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(RecordCompileTest, EveryStepWithWhatItMade) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CompiledGraph> c,
      CompileGraphText(kMlpGelu,
                       {.dump = true, .backend = &codegen::CpuBackend()}));
  const codegen::CpuFunction* cpu = c->function.get();
  Trace t;
  RecordCompile(*c, &t);
  // Every step of the walk, in order.
  ASSERT_EQ(t.steps().size(), c->steps.size());
  for (size_t i = 0; i < c->steps.size(); ++i) {
    EXPECT_EQ(t.steps()[i].name, c->steps[i].name);
    EXPECT_EQ(t.steps()[i].seconds, c->steps[i].seconds);
  }
  const TraceStep* aot = Find(t.steps(), "aot_dispatch");
  ASSERT_NE(aot, nullptr);
  ASSERT_EQ(aot->made.size(), 1u);
  EXPECT_EQ(aot->made[0].kind, kGraph);
  EXPECT_EQ(aot->made[0].title, "00-aot_dispatch.txt");
  const TraceStep* decompose = Find(t.steps(), "decompose");
  ASSERT_NE(decompose, nullptr);
  ASSERT_FALSE(decompose->made.empty());
  EXPECT_THAT(decompose->made[0].text, HasSubstr("aten.erf"));
  const TraceStep* guards = Find(t.steps(), "guards");
  ASSERT_NE(guards, nullptr);
  ASSERT_EQ(guards->made.size(), 1u);
  EXPECT_EQ(guards->made[0].kind, kGuards);
  EXPECT_THAT(guards->made[0].text, HasSubstr("t0.size(1) == 8"));

  const TraceStep* lower = Find(t.steps(), "lower");
  ASSERT_NE(lower, nullptr);
  ASSERT_EQ(lower->made.size(), 1u);
  EXPECT_EQ(lower->made[0].kind, kLoopIr);
  EXPECT_EQ(lower->made[0].text, cpu->unscheduled());
  const TraceStep* schedule = Find(t.steps(), "schedule");
  ASSERT_NE(schedule, nullptr);
  std::vector<std::string> kinds;
  for (const TraceItem& item : schedule->made) kinds.push_back(item.kind);
  EXPECT_THAT(kinds, ::testing::ElementsAre(kLoopIr, kFusionLog, kDot));
  EXPECT_EQ(schedule->made[0].text, cpu->scheduled());
  EXPECT_THAT(schedule->made[1].text, HasSubstr("fuse"));
  EXPECT_EQ(schedule->made[2].text, cpu->fusion_dot());
  const TraceStep* host = Find(t.steps(), "emit_host");
  ASSERT_NE(host, nullptr);
  ASSERT_EQ(host->made.size(), 1u);
  EXPECT_EQ(host->made[0].kind, kSource);
  EXPECT_EQ(host->made[0].text, cpu->source());

  const TraceStep* build = Find(t.steps(), "build");
  ASSERT_NE(build, nullptr);
  ASSERT_EQ(build->made.size(), 2u);
  EXPECT_EQ(build->made[0].kind, kCommand);
  EXPECT_EQ(build->made[0].text, cpu->library().command);
  EXPECT_EQ(build->made[1].kind, kCache);
  EXPECT_EQ(build->made[1].text, "miss (compiled)");
  EXPECT_EQ(t.steps().back().name, "load");

  // What was recorded reads back the same.
  ASSERT_OK_AND_ASSIGN(std::vector<TraceStep> back,
                       ParseTrace(t.ToJsonLines(), "t.jsonl"));
  ASSERT_EQ(back.size(), t.steps().size());
  const TraceStep* read = Find(back, "emit_host");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->made[0].text, cpu->source());
}

TEST(RecordCompileTest, WithoutABackendOnlyTheWalkToTheGuards) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(kMlpGelu));
  Trace t;
  RecordCompile(*c, &t);
  ASSERT_EQ(t.steps().size(), c->steps.size());
  EXPECT_EQ(t.steps().back().name, "guards");
  // Without dumps no step made a graph.
  for (const TraceStep& s : t.steps()) {
    for (const TraceItem& item : s.made) EXPECT_NE(item.kind, kGraph);
  }
}

}  // namespace
}  // namespace lathe::trace
