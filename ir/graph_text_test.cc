#include "ir/graph_text.h"

#include <dirent.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "symbolic/evaluate.h"
#include "symbolic/printer.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr absl::string_view kGraphDir = "ir/testdata/graphs";

// A graph of the corpus, ir/testdata/graphs/`file`.
absl::StatusOr<std::string> ReadGraph(absl::string_view file) {
  return lathe::testing::ReadRunfile(absl::StrCat(kGraphDir, "/", file));
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> out;
  DIR* dir = opendir(lathe::testing::RunfilePath(kGraphDir).c_str());
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() > 4 && name.substr(name.size() - 4) == ".txt")
      out.push_back(name);
  }
  closedir(dir);
  return out;
}

TEST(GraphTextTest, CorpusRoundTripsExactly) {
  std::vector<std::string> files = CorpusFiles();
  EXPECT_GE(files.size(), 20u);
  for (const std::string& file : files) {
    ASSERT_OK_AND_ASSIGN(std::string text, ReadGraph(file));
    absl::StatusOr<ParsedGraph> p = ParseGraphWithStyle(text);
    ASSERT_OK(p) << file;
    EXPECT_OK(p->graph->CheckStructure()) << file;
    EXPECT_EQ(PrintGraph(*p->graph, p->style), text) << file;
  }
}

// The `x = None` frees of each statement line: "name: frees".
std::vector<std::string> FreesOf(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || absl::StartsWith(line, "def ") ||
        absl::StartsWith(line, "class ") || absl::StartsWith(line, "return")) {
      continue;
    }
    size_t name_end = line.find_first_of(":= ");
    size_t semi = line.rfind(";  ");
    out.push_back(absl::StrCat(
        line.substr(0, name_end), ": ",
        semi == absl::string_view::npos ? "" : line.substr(semi + 3)));
  }
  return out;
}

// Every graph PyTorch 2.15 printed (the torch corpus) prints back with the
// same `x = None` lines: the printer computes them as FX does.
TEST(GraphTextTest, TorchCorpusPrintsBackExactly) {
  std::string root = lathe::testing::RunfilePath("ir/testdata/torch_corpus");
  DIR* dir = opendir(root.c_str());
  ASSERT_NE(dir, nullptr) << root;
  int checked = 0;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    absl::StatusOr<std::string> text = lathe::testing::ReadRunfile(
        absl::StrCat("ir/testdata/torch_corpus/", name, "/graph.txt"));
    if (!text.ok() || text->empty()) continue;
    absl::StatusOr<std::unique_ptr<Graph>> g = ParseGraph(*text);
    ASSERT_OK(g) << name;
    EXPECT_EQ(FreesOf(PrintGraph(**g)), FreesOf(*text)) << name;
    ++checked;
  }
  closedir(dir);
  EXPECT_GE(checked, 500);
}

TEST(GraphTextTest, StructureOfAParsedGraph) {
  ASSERT_OK_AND_ASSIGN(std::string text, ReadGraph("01_mlp.txt"));
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed, ParseGraphWithStyle(text));
  const std::unique_ptr<Graph>& g = parsed.graph;
  std::vector<Node*> ps = g->Placeholders();
  ASSERT_EQ(ps.size(), 4u);
  EXPECT_EQ(ps[0]->name(), "x");
  EXPECT_EQ(ps[0]->meta().tensor.ToAnnotation(), "f32[8, 16][16, 1]cpu");
  Node* mm = g->Find("mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->target(), "aten.mm.default");
  EXPECT_EQ(mm->args()[0].node, ps[0]);
  EXPECT_EQ(mm->users().size(), 1u);
  EXPECT_EQ(mm->users()[0]->name(), "add");
  EXPECT_EQ(g->output()->args()[0].list[0].node->name(), "mm_1");
  EXPECT_TRUE(parsed.style.wrap_in_class);

  ASSERT_OK_AND_ASSIGN(std::string kw_text,
                       ReadGraph("16_creation_kwargs.txt"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> kw, ParseGraph(kw_text));
  Node* full = kw->Find("full");
  EXPECT_EQ(full->args()[0].kind, Arg::Kind::kList);
  EXPECT_EQ(full->args()[1].f, 1.5);
  ASSERT_EQ(full->kwargs().size(), 4u);
  EXPECT_EQ(full->kwargs()[0].first, "dtype");
  EXPECT_EQ(full->kwargs()[0].second.dtype, DType::kFloat32);
  EXPECT_EQ(full->kwargs()[2].second.kind, Arg::Kind::kDevice);

  ASSERT_OK_AND_ASSIGN(std::string dyn_text,
                       ReadGraph("13_dynamic_sym_ops.txt"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> dyn, ParseGraph(dyn_text));
  Node* mul = dyn->Find("mul");
  EXPECT_EQ(mul->target(), "operator.mul");
  EXPECT_EQ(symbolic::ToString(mul->meta().sym), "s0*s1");
  ASSERT_OK_AND_ASSIGN(std::string opt_text, ReadGraph("10_adam_step.txt"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> opt, ParseGraph(opt_text));
  EXPECT_THAT(opt->attributes().hints,
              ElementsAre(Pair("zf0", symbolic::Value::Float(0.001))));
  EXPECT_TRUE(opt->Placeholders()[4]->meta().sym.is_float());
}

TEST(GraphTextTest, CommentsAndPyTorchSpellingsAreAccepted) {
  std::string text = R"(class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2][1]cpu", n):
        # File: model.py:12 in forward, code: return x.sin() * 2
        sin: "f32[2][1]cpu" = torch.ops.aten.sin.default(L_x_);  L_x_ = None

        mul: "f32[2][1]cpu" = torch.ops.aten.mul.Tensor(sin, 2);  sin = None
        return (mul,)
)";
  std::unique_ptr<Graph> g = *ParseGraph(text);
  EXPECT_EQ(g->Find("mul")->args()[1].i, 2);
  EXPECT_EQ(g->Placeholders()[1]->meta().kind, ValueMeta::Kind::kNone);
}

// The forms make_fx prints: a class named after the function, the pytree
// form (the placeholders are the flattened inputs), a returned list, None
// results and an unannotated (baked-in) parameter.
TEST(GraphTextTest, MakeFxForms) {
  ASSERT_OK_AND_ASSIGN(ParsedGraph parsed,
                       ParseGraphWithStyle(R"(class f(torch.nn.Module):
    def forward(self, x, params):
        x_1: "f32[3][1]cpu"; params_1: "f32[3][1]cpu"; params_2: "f32[3][1]cpu";

        x_1, params_1, params_2, = fx_pytree.tree_flatten_spec([x, params], self._in_spec)
        # No stacktrace found for following nodes
        add: "f32[3][1]cpu" = torch.ops.aten.add.Tensor(x_1, params_2);  x_1 = params_2 = None
        return pytree.tree_unflatten([add, None], self._out_spec)
)"));
  const std::unique_ptr<Graph>& g = parsed.graph;
  EXPECT_EQ(parsed.style.class_name, "f");
  std::vector<std::string> names;
  for (Node* p : g->Placeholders()) names.push_back(p->name());
  EXPECT_THAT(names, ::testing::ElementsAre("x_1", "params_1", "params_2"));
  EXPECT_THAT(g->pytree_params, ::testing::ElementsAre("x", "params"));
  EXPECT_EQ(g->Placeholders()[2]->meta().ToAnnotation(), "f32[3][1]cpu");
  EXPECT_EQ(g->output()->args()[0].list[1].kind, Arg::Kind::kNone);
  EXPECT_THAT(PrintGraph(*g, parsed.style),
              HasSubstr("        return pytree.tree_unflatten([add, None], "
                        "self._out_spec)\n"));
  // A Python float inside a list (an optimizer group's lr) is a leaf make_fx
  // baked into the graph and declares nowhere: an unannotated input, which
  // the printer leaves undeclared too.
  constexpr char kFloatLeaf[] = R"(class _(torch.nn.Module):
    def forward(self, group):
        group_1: "f32[5][1]cpu"; group_2: "f32[5][1]cpu";

        group_1, group_2, group_3, = fx_pytree.tree_flatten_spec([group], self._in_spec)
        mul: "f32[5][1]cpu" = torch.ops.aten.mul.Tensor(group_2, 0.5);  group_2 = None
        sub: "f32[5][1]cpu" = torch.ops.aten.sub.Tensor(group_1, mul);  group_1 = mul = None
        return pytree.tree_unflatten([sub], self._out_spec)
)";
  ASSERT_OK_AND_ASSIGN(ParsedGraph leaf, ParseGraphWithStyle(kFloatLeaf));
  ASSERT_EQ(leaf.graph->Placeholders().size(), 3u);
  EXPECT_EQ(leaf.graph->Placeholders()[2]->name(), "group_3");
  EXPECT_EQ(leaf.graph->Placeholders()[2]->meta().kind, ValueMeta::Kind::kNone);
  EXPECT_THAT(PrintGraph(*leaf.graph, leaf.style),
              HasSubstr("        group_1: \"f32[5][1]cpu\"; group_2: "
                        "\"f32[5][1]cpu\";\n\n        group_1, group_2, "
                        "group_3, = fx_pytree.tree_flatten_spec([group], "
                        "self._in_spec)\n"));
  ASSERT_OK_AND_ASSIGN(ParsedGraph lambda,
                       ParseGraphWithStyle(R"(class <lambda>(torch.nn.Module):
    def forward(self, x_1: "f32[2][1]cpu", n_1):
        neg: "f32[2][1]cpu" = torch.ops.aten.neg.default(x_1);  x_1 = None
        return [neg]
)"));
  EXPECT_EQ(lambda.style.class_name, "<lambda>");
  EXPECT_THAT(PrintGraph(*lambda.graph, lambda.style),
              HasSubstr("class <lambda>(torch.nn.Module):\n"));
  EXPECT_THAT(PrintGraph(*lambda.graph), HasSubstr("        return [neg]\n"));
}

// How a text is written (the class line, annotations without strides or
// device) is the parse's style, not the graph's: PrintGraph writes
// print_readable()'s form unless given the style.
TEST(GraphTextTest, StyleIsKeptApartFromTheGraph) {
  constexpr char kBare[] =
      R"g(def forward(self, x: "f32[3, 4]", y: "(f32[2], f32[2][1]cuda:0)"):
    neg: "f32[3, 4][4, 1]" = torch.ops.aten.neg.default(x);  x = None
    return (neg, y)
)g";
  ASSERT_OK_AND_ASSIGN(ParsedGraph p, ParseGraphWithStyle(kBare));
  EXPECT_FALSE(p.style.wrap_in_class);
  AnnotationStyle bare{.strides = false, .device = false};
  AnnotationStyle no_device{.strides = true, .device = false};
  EXPECT_THAT(p.style.annotations,
              ::testing::UnorderedElementsAre(
                  Pair("x", ElementsAre(bare)),
                  Pair("y", ElementsAre(bare, AnnotationStyle())),
                  Pair("neg", ElementsAre(no_device))));
  EXPECT_EQ(PrintGraph(*p.graph, p.style), kBare);
  // The graph alone prints as print_readable() does.
  EXPECT_EQ(PrintGraph(*p.graph),
            "class GraphModule(torch.nn.Module):\n"
            "    def forward(self, x: \"f32[3, 4][4, 1]cpu\", y: "
            "\"(f32[2][1]cpu, f32[2][1]cuda:0)\"):\n"
            "        neg: \"f32[3, 4][4, 1]cpu\" = "
            "torch.ops.aten.neg.default(x);  x = None\n"
            "        return (neg, y)\n");
  // A node the style does not name (one a pass made) prints in full.
  ASSERT_OK_AND_ASSIGN(
      Node * relu, p.graph->InsertCall(p.graph->output(), "aten.relu.default",
                                       {Arg::Of(p.graph->Find("neg"))}));
  relu->meta() = p.graph->Find("neg")->meta();
  EXPECT_THAT(PrintGraph(*p.graph, p.style),
              HasSubstr("    relu: \"f32[3, 4][4, 1]cpu\" = "));
  // The style goes by node name: a copy of the graph prints the same.
  EXPECT_EQ(PrintGraph(*p.graph->Clone(), p.style),
            PrintGraph(*p.graph, p.style));
}

TEST(GraphTextTest, ErrorsNameLineAndColumn) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"", "line 1:1: no 'def forward' found"},
      {"x = 1\n", "line 1:1: expected 'def forward(self, ...):'"},
      {"def forward(self, x):\n    y = torch.ops.aten.relu.default(z)\n    "
       "return (y,)\n",
       "line 2:37: 'z' is not defined"},
      {"def forward(self, x):\n    y = torch.ops.aten.relu.default(x\n    "
       "return (y,)\n",
       "line 2:38: expected ',' or ')' after an argument, got the end of the "
       "line"},
      {"def forward(self, x: \"f33[2]\"):\n    return (x,)\n",
       "line 1:23: in annotation: unknown dtype 'f33'"},
      {"def forward(self, x: \"f32[2, s0 +]\"):\n    return (x,)\n",
       "line 1:30: in annotation: in 's0 +'"},
      {"def forward(self, x):\n    y = x[0]\n    y = x[1]\n    return (y,)\n",
       "line 3:5: 'y' is assigned twice"},
      {"def forward(self, x):\n    y = torch.ops.aten.relu.default(x)\n",
       "forward() has no return"},
      {"def forward(self, x):\n    return (x,)\n    y = x[0]\n",
       "line 3:5: text after the graph's return"},
      {"def forward(self, x, x):\n    return (x,)\n",
       "line 1:22: parameter 'x' appears twice"},
      {"def forward(self, x):\n    y = x ^ 2\n    return (y,)\n",
       "line 2:9: expected a call, x[i], self.attr or a Python operator"},
      {"def forward(self, x):\n    y = f(1 2)\n    return (y,)\n",
       "line 2:13: expected ',' or ')' after an argument"},
      {"def forward(self, x):\n    y = f(x);  q = None\n    return (y,)\n",
       "line 2:16: 'q' is not defined"},
      {"def forward(self, x):\n    y = f(a=1, x)\n    return (y,)\n",
       "line 2:16: a positional argument after keyword arguments"},
      {"def forward(self, x):\n    y = f('abc)\n    return (y,)\n",
       "line 2:11: unterminated string"},
      {"def forward(self, x):\n    y = f(device(type='tpu'))\n    return "
       "(y,)\n",
       "unknown device 'tpu'"},
      {"def forward(self, x):\n    y = f(torch.float128)\n    return (y,)\n",
       "line 2:11: 'torch.float128' is not defined"},
      {"def forward(self, x):\nreturn (x,)\n",
       "line 2:1: expected an indented statement"},
      {"def forward(self, x):\n    return (x, q)\n",
       "line 2:16: 'q' is not defined"},
      // make_fx's pytree form, malformed.
      {"def forward(self, x):\n    x_1, x_1, = "
       "fx_pytree.tree_flatten_spec([x], "
       "self._in_spec)\n    return (x_1,)\n",
       "line 2:10: input 'x_1' appears twice"},
      {"def forward(self, x, y):\n    x_1: \"f32[2]\"; y_1: \"f32[2]\";\n    "
       "x_1, y_1, = fx_pytree.tree_flatten_spec([y, x], self._in_spec)\n    "
       "return (x_1,)\n",
       "line 3:46: expected forward's parameters, in order"},
      {"def forward(self, x):\n    x_1: \"f32[2]\"; x_1: \"f32[2]\";\n",
       "line 2:20: 'x_1' is declared twice"},
      {"def forward(self, x: \"f32[2]\"):\n    return "
       "pytree.tree_unflatten([x], self._out_spec)\n",
       "pytree.tree_unflatten without tree_flatten_spec"},
      {"def forward(self, x):\n    x_1: \"f32[2]\";\n    x_1, = "
       "fx_pytree.tree_flatten_spec([x], self._in_spec)\n    neg = "
       "torch.ops.aten.neg.default(x_1)\n    x_1, = "
       "fx_pytree.tree_flatten_spec([x], self._in_spec)\n    return (neg,)\n",
       "tree_flatten_spec must come once, before any node"},
      {"def forward(self, x):\n    return [x\n", "expected ',' or ']'"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseGraph(c.text), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr(c.message)))
        << c.text;
  }
  std::string deep = "def forward(self, x):\n    y = f(" +
                     std::string(100000, '[') + "\n    return (y,)\n";
  EXPECT_THAT(std::string(ParseGraph(deep).status().message()),
              HasSubstr("nested too deeply"));
}

constexpr char kForwardXY[] =
    "def forward(self, x: \"f32[s0]\", y: \"f32[s0]\"):\n"
    "    return (x,)\n";

// Each `# lathe:` kind lands in its own field of the graph's attributes,
// parsed once.
TEST(GraphTextTest, DirectivesBecomeTypedAttributes) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Graph> g,
      ParseGraph(absl::StrCat("# lathe: hint s0 32\n"
                              "# lathe: hint zf0 0.5\n"
                              "# lathe: range u0 -2 16\n"
                              "# lathe: alias x y\n"
                              "# lathe: composite x pair(pair, "
                              "scaled_int8)\n"
                              "# lathe: requires_grad x\n"
                              "# lathe: non_leaf y\n"
                              "# lathe: frobnicate 1 2\n",
                              kForwardXY)));
  const GraphAttributes& a = g->attributes();
  EXPECT_THAT(a.hints, ElementsAre(Pair("s0", symbolic::Value::Int(32)),
                                   Pair("zf0", symbolic::Value::Float(0.5))));
  ASSERT_EQ(a.ranges.size(), 1u);
  EXPECT_EQ(a.ranges.at("u0").lo, -2);
  EXPECT_EQ(a.ranges.at("u0").hi, 16);
  EXPECT_THAT(a.alias_of, ElementsAre(Pair("y", "x")));
  EXPECT_THAT(a.composites, ElementsAre(Pair("x", "pair(pair, scaled_int8)")));
  EXPECT_THAT(a.requires_grad, ElementsAre("x"));
  EXPECT_THAT(a.non_leaf, ElementsAre("y"));
  // Another kind is kept as written (shape propagation rejects it).
  EXPECT_THAT(a.unknown, ElementsAre("frobnicate 1 2"));
  // A copy has them too.
  EXPECT_THAT(g->Clone()->attributes().requires_grad, ElementsAre("x"));
}

// The attributes print back first, a kind at a time, each by name; the
// printed text parses to the same attributes and prints identically.
TEST(GraphTextTest, AttributesPrintBackAndRoundTrip) {
  std::string text = absl::StrCat(
      "# lathe: non_leaf y\n"
      "# lathe:   requires_grad   y\n"
      "# lathe: hint zf0 1e-3\n"
      "# lathe: requires_grad x\n"
      "# lathe: composite y pair\n"
      "# lathe: hint s0 8\n"
      "# lathe: range s0 2 64\n"
      "# lathe: alias x y\n"
      "# lathe: what\n",
      kForwardXY);
  ASSERT_OK_AND_ASSIGN(ParsedGraph p, ParseGraphWithStyle(text));
  const std::unique_ptr<Graph>& g = p.graph;
  std::string printed = PrintGraph(*g, p.style);
  EXPECT_EQ(printed, absl::StrCat("# lathe: hint s0 8\n"
                                  "# lathe: hint zf0 0.001\n"
                                  "# lathe: range s0 2 64\n"
                                  "# lathe: alias x y\n"
                                  "# lathe: composite y pair\n"
                                  "# lathe: requires_grad x\n"
                                  "# lathe: requires_grad y\n"
                                  "# lathe: non_leaf y\n"
                                  "# lathe: what\n",
                                  kForwardXY));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> again, ParseGraph(printed));
  EXPECT_EQ(PrintGraph(*again, p.style), printed);
  EXPECT_EQ(again->attributes().hints, g->attributes().hints);
  EXPECT_EQ(again->attributes().alias_of, g->attributes().alias_of);
}

// A malformed directive of a known kind is a parse error naming the line,
// the column and what was expected.
TEST(GraphTextTest, MalformedDirectivesAreParseErrors) {
  struct Case {
    std::string directive;
    std::string message;
  } cases[] = {
      {"# lathe: hint s0 many",
       "line 1:18: expected an int or a float (# lathe: hint SYMBOL NUMBER), "
       "got 'many'"},
      {"# lathe: hint s0",
       "line 1:17: expected an int or a float (# lathe: hint SYMBOL NUMBER), "
       "got the end of the line"},
      {"# lathe: hint 0s 4",
       "line 1:15: expected a symbol (# lathe: hint SYMBOL NUMBER), got '0s'"},
      {"# lathe: hint s0 4 5",
       "line 1:20: expected the end of the line (# lathe: hint SYMBOL "
       "NUMBER), got '5'"},
      {"# lathe: range s0 9 2",
       "line 1:21: expected HI >= LO (# lathe: range SYMBOL LO HI), got 9 > 2"},
      {"# lathe: range s0 1.5 2",
       "line 1:19: expected an int LO (# lathe: range SYMBOL LO HI), got "
       "'1.5'"},
      {"# lathe: alias x",
       "line 1:17: expected a second input name (# lathe: alias INPUT INPUT)"},
      {"# lathe: composite x",
       "line 1:21: expected a composite type (# lathe: composite INPUT TYPE)"},
      {"  # lathe: requires_grad x y",
       "line 1:28: expected the end of the line (# lathe: requires_grad "
       "INPUT), got 'y'"},
      {"# lathe: non_leaf",
       "line 1:18: expected an input name (# lathe: non_leaf INPUT), got the "
       "end of the line"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(
        ParseGraph(absl::StrCat(c.directive, "\n", kForwardXY)),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.directive;
  }
  // On a later line, the line is named.
  EXPECT_THAT(ParseGraph(absl::StrCat("# lathe: hint s0 4\n",
                                      "# lathe: range s0 a 4\n", kForwardXY)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2:19: expected an int LO")));
}

TEST(GraphTextTest, PyFloatMatchesPythonRepr) {
  EXPECT_EQ(PyFloat(0.5), "0.5");
  EXPECT_EQ(PyFloat(1e-05), "1e-05");
  EXPECT_EQ(PyFloat(1e16), "1e+16");
  EXPECT_EQ(PyFloat(1e15), "1000000000000000.0");
  EXPECT_EQ(PyFloat(0.0001), "0.0001");
  EXPECT_EQ(PyFloat(-2.0), "-2.0");
  EXPECT_EQ(PyFloat(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(PyFloat(1.0 / 0.0), "inf");
}

}  // namespace
}  // namespace lathe::ir
