#include "ir/verifier.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph_corpus.h"
#include "ir/graph_text.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

absl::Status VerifyText(const std::string& text) {
  absl::StatusOr<ParsedGraph> p = ParseGraphWithStyle(text);
  if (!p.ok()) return p.status();
  ShapePropOptions options;
  for (const char* s : {"s0", "s1", "s2"})
    options.hints[s] = symbolic::Value::Int(8);
  return Verify(*p->graph, options, p->style);
}

// The corpus graphs were printed by PyTorch (or by hand following it): the
// meta functions must reproduce every annotation, and verifying must leave
// the graph as it was.
class CorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusTest, AnnotationsMatchTheMetaFunctions) {
  std::string text = ReadCorpusGraph(GetParam());
  ASSERT_FALSE(text.empty());
  ASSERT_OK_AND_ASSIGN(ParsedGraph p, ParseGraphWithStyle(text));
  ShapePropOptions options;
  options.hints["s0"] = symbolic::Value::Int(8);
  options.hints["s1"] = symbolic::Value::Int(6);
  EXPECT_OK(Verify(*p.graph, options, p.style)) << GetParam();
  EXPECT_EQ(PrintGraph(*p.graph, p.style), text);
  for (const auto& n : p.graph->nodes()) {
    EXPECT_TRUE(n->unbacked_bindings().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Graphs, CorpusTest,
    ::testing::Values("01_mlp.txt", "02_mlp_dynamic.txt", "03_addmm_gelu.txt",
                      "04_softmax.txt", "05_softmax_op.txt", "06_layernorm.txt",
                      "07_layernorm_decomposed.txt", "08_attention.txt",
                      "09_sgd_step.txt", "10_adam_step.txt",
                      "11_views_of_inputs.txt", "12_inplace_through_view.txt",
                      "13_dynamic_sym_ops.txt", "14_dynamic_floordiv.txt",
                      "15_scalar_inputs.txt", "16_creation_kwargs.txt",
                      "17_no_strides_no_device.txt", "18_cuda_and_bf16.txt",
                      "19_where_clamp_inf.txt", "20_cat_split_index.txt",
                      "21_constant_and_bare_return.txt",
                      "22_unbacked_item.txt"),
    [](const auto& info) {
      std::string n = info.param.substr(0, info.param.size() - 4);
      for (char& c : n) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return n;
    });

TEST(VerifierTest, WrongAnnotationIsReported) {
  std::string text = absl::StrReplaceAll(
      ReadCorpusGraph("01_mlp.txt"),
      {{"relu: \"f32[8, 32][32, 1]cpu\"", "relu: \"f32[8, 33][33, 1]cpu\""}});
  ASSERT_THAT(text, HasSubstr("[8, 33]"));
  EXPECT_EQ(VerifyText(text).message(),
            "node 'relu': annotation f32[8, 33][33, 1]cpu does not match the "
            "op's meta "
            "f32[8, 32][32, 1]cpu");
  std::string dtype = absl::StrReplaceAll(
      ReadCorpusGraph("01_mlp.txt"),
      {{"relu: \"f32[8, 32][32, 1]cpu\"", "relu: \"f16[8, 32][32, 1]cpu\""}});
  EXPECT_THAT(std::string(VerifyText(dtype).message()),
              HasSubstr("node 'relu': annotation f16"));
}

TEST(VerifierTest, Errors) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"def forward(self, x: \"f32[2]\"):\n    y = "
       "torch.ops.aten.nope.default(x)\n    return (y,)\n",
       "node 'y': unknown op aten.nope.default"},
      {"def forward(self, x: \"f32[2]\"):\n    y = "
       "torch.ops.aten.neg.default(x, x)\n    return (y,)\n",
       "node 'y': "},
      {"def forward(self, x: \"f32[2]\"):\n    y = "
       "torch.ops.aten.neg.default(\"a\")\n    return (y,)\n",
       "node 'y': "},
      {"def forward(self, x: \"f32[2, 3]\", w: \"f32[4, 5]\"):\n"
       "    mm = torch.ops.aten.mm.default(x, w)\n    return (mm,)\n",
       "node 'mm': aten.mm.default:"},
      {"def forward(self, x):\n    neg = torch.ops.aten.neg.default(x)\n    "
       "return (neg,)\n",
       "reads input 'x', which has no annotation"},
  };
  for (const Case& c : cases) {
    absl::Status st = VerifyText(c.text);
    EXPECT_FALSE(st.ok()) << c.text;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.message)) << c.text;
  }
}

// An annotation without strides or device states neither: a transposed
// view written "f32[3, 2]" is consistent, though its strides are not the
// contiguous ones the annotation implies.
TEST(VerifierTest, WhatAnAnnotationLeavesOutIsNotCompared) {
  constexpr char kShort[] = R"g(def forward(self, x: "f32[2, 3]"):
    t: "f32[3, 2]" = torch.ops.aten.t.default(x)
    return (t,)
)g";
  EXPECT_OK(VerifyText(kShort));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> g, ParseGraph(kShort));
  EXPECT_THAT(Verify(*g),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 't': annotation f32[3, 2][2, 1]cpu "
                                 "does not match the op's meta f32[3, 2][1, "
                                 "3]cpu")));
}

TEST(VerifierTest, InPlaceViewOpsUpdateTheirInputsMeta) {
  EXPECT_TRUE(VerifyText(R"g(def forward(self, x: "f32[2, 3][3, 1]cpu"):
    t_: "f32[3, 2][1, 3]cpu" = torch.ops.aten.t_.default(x)
    unsqueeze_: "f32[1, 3, 2][3, 1, 3]cpu" = torch.ops.aten.unsqueeze_.default(x, 0)
    clone: "f32[1, 3, 2][6, 2, 1]cpu" = torch.ops.aten.clone.default(x, memory_format = torch.contiguous_format)
    return (clone,)
)g")
                  .ok());
}

}  // namespace
}  // namespace lathe::ir
