#include "tools/trace/compile_trace.h"

#include <memory>
#include <string>
#include <vector>

#include "codegen/cpp/cpu_function.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/compile.h"
#include "tools/testing/status_matchers.h"
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
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(kMlpGelu, {.dump = true}));
  codegen::CpuCompileOptions options;
  options.guards = c->guards.has_value() ? &*c->guards : nullptr;
  options.guard_inputs = c->guard_inputs;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<codegen::CpuFunction> cpu,
      codegen::CpuFunction::Compile(*c->graph, *c->env, options));
  Trace t;
  RecordCompile(*c, cpu.get(), &t);
  // Every step of the walk, in order, then lowering and the build.
  ASSERT_EQ(t.steps().size(), c->steps.size() + 2);
  for (size_t i = 0; i < c->steps.size(); ++i) {
    EXPECT_EQ(t.steps()[i].name, c->steps[i].name);
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

  const TraceStep& lower = t.steps()[t.steps().size() - 2];
  EXPECT_EQ(lower.name, "lower");
  std::vector<std::string> kinds;
  for (const TraceItem& item : lower.made) kinds.push_back(item.kind);
  EXPECT_THAT(kinds, ::testing::ElementsAre(kLoopIr, kLoopIr, kFusionLog,
                                            kSource, kDot));
  EXPECT_EQ(lower.made[0].text, cpu->unscheduled());
  EXPECT_EQ(lower.made[1].text, cpu->scheduled());
  EXPECT_THAT(lower.made[2].text, HasSubstr("fuse"));
  EXPECT_EQ(lower.made[3].text, cpu->source());
  EXPECT_EQ(lower.made[4].text, cpu->fusion_dot());

  const TraceStep& build = t.steps().back();
  EXPECT_EQ(build.name, "build");
  ASSERT_EQ(build.made.size(), 2u);
  EXPECT_EQ(build.made[0].kind, kCommand);
  EXPECT_EQ(build.made[0].text, cpu->library().command);
  EXPECT_EQ(build.made[1].kind, kCache);
  EXPECT_EQ(build.made[1].text, "miss (compiled)");

  // What was recorded reads back the same.
  ASSERT_OK_AND_ASSIGN(std::vector<TraceStep> back,
                       ParseTrace(t.ToJsonLines(), "t.jsonl"));
  ASSERT_EQ(back.size(), t.steps().size());
  EXPECT_EQ(back.back().made[0].text, cpu->library().command);
  EXPECT_EQ(back[back.size() - 2].made[3].text, cpu->source());
}

TEST(RecordCompileTest, WithoutTheCpuOnlyTheWalk) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CompiledGraph> c,
                       CompileGraphText(kMlpGelu));
  Trace t;
  RecordCompile(*c, nullptr, &t);
  ASSERT_EQ(t.steps().size(), c->steps.size());
  // Without dumps no step made a graph.
  for (const TraceStep& s : t.steps()) {
    for (const TraceItem& item : s.made) EXPECT_NE(item.kind, kGraph);
  }
}

}  // namespace
}  // namespace lathe::trace
