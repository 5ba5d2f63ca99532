// An artifact's arguments arranged from tensors by name with the runtime
// alone (arrange_arguments.h): tensors laid out as their annotations say
// (transposed, channels-last, padded rows; strides and storage worked out
// by hand), numbers from 0-d tensors, None, constants, flat and nested
// composites, a manifest from before composite trees, and every error.

#include "runtime/arrange_arguments.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/artifact.h"
#include "runtime/composite.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

using Inputs = absl::flat_hash_map<std::string, Tensor>;

// A row-major tensor holding 1, 2, 3, ...
Tensor Counting(std::vector<int64_t> sizes, DType dtype = DType::kFloat32) {
  Tensor t = *Tensor::Empty(sizes, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    Tensor flat = *t.AsStrided({t.numel()}, {1}, 0);
    flat.SetDouble({i}, static_cast<double>(i + 1));
  }
  return t;
}

Tensor Scalar(DType dtype, double v) {
  Tensor t = *Tensor::Empty({}, dtype);
  t.SetDouble({}, v);
  return t;
}

// The first `n` floats of `t`'s storage, in storage order.
std::vector<float> Storage(const Tensor& t, int64_t n) {
  const float* p = static_cast<const float*>(t.storage().data());
  return std::vector<float>(p, p + n);
}

ArgumentSpec TensorArg(const std::string& name, int rank) {
  return {.name = name, .rank = rank};
}

// A manifest whose only argument, x, is annotated `annotation`.
Manifest OneTensor(int rank, const std::string& annotation) {
  Manifest m;
  m.arguments = {TensorArg("x", rank)};
  m.annotations = {annotation};
  return m;
}

// A transposed annotation: x (2 x 3, row-major 1..6) is copied so element
// (i, j) sits at i + 2 j: storage 1, 4, 2, 5, 3, 6.
TEST(ArrangeArgumentsTest, ATransposedAnnotationCopiesIntoItsStrides) {
  Manifest m = OneTensor(2, "f32[s0, s1][1, s0]cpu");
  Inputs in = {{"x", Counting({2, 3})}};
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> args, ArrangeArguments(m, in));
  ASSERT_EQ(args.size(), 1u);
  const Tensor& x = args[0].tensor;
  EXPECT_EQ(x.ToString(), "f32[2, 3][1, 2]cpu");
  EXPECT_THAT(Storage(x, 6), ElementsAre(1, 4, 2, 5, 3, 6));
  EXPECT_EQ(x.GetDouble({1, 2}), 6);
  // The input itself is not changed.
  EXPECT_THAT(in.at("x").strides(), ElementsAre(3, 1));
}

// Channels-last (1 x 2 x 2 x 2): strides [8, 1, 4, 2]; element (0, c, h, w)
// (value 1 + 4c + 2h + w) sits at c + 4h + 2w.
TEST(ArrangeArgumentsTest, AChannelsLastAnnotationCopiesIntoItsStrides) {
  Manifest m = OneTensor(4, "f32[s0, s1, s2, s3][s1*s2*s3, 1, s1*s3, s1]cpu");
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> args,
                       ArrangeArguments(m, {{"x", Counting({1, 2, 2, 2})}}));
  EXPECT_THAT(args[0].tensor.strides(), ElementsAre(8, 1, 4, 2));
  EXPECT_THAT(Storage(args[0].tensor, 8), ElementsAre(1, 5, 2, 6, 3, 7, 4, 8));
}

// Padded rows (s1 + 1): sizes [2, 3] get strides [4, 1], the rows at 0
// and 4 of seven elements.
TEST(ArrangeArgumentsTest, SumsAndConstantsInStridesAreEvaluated) {
  Manifest m = OneTensor(2, "f32[s0, s1][s1 + 1, 1]cpu");
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> args,
                       ArrangeArguments(m, {{"x", Counting({2, 3})}}));
  const Tensor& x = args[0].tensor;
  EXPECT_THAT(x.strides(), ElementsAre(4, 1));
  EXPECT_EQ(x.storage().nbytes(), 7 * sizeof(float));
  std::vector<float> s = Storage(x, 7);
  EXPECT_THAT(std::vector<float>(s.begin(), s.begin() + 3),
              ElementsAre(1, 2, 3));
  EXPECT_THAT(std::vector<float>(s.begin() + 4, s.end()), ElementsAre(4, 5, 6));
  // A constant stride: 1, 2, 3, 4 at 0, 2, 4, 6.
  ASSERT_OK_AND_ASSIGN(args, ArrangeArguments(OneTensor(1, "f32[s0][2]cpu"),
                                              {{"x", Counting({4})}}));
  EXPECT_THAT(args[0].tensor.strides(), ElementsAre(2));
  EXPECT_THAT(Storage(args[0].tensor, 7), ElementsAre(1, 0, 2, 0, 3, 0, 4));
}

// The expressions PyTorch prints in annotations: a channels-last input
// (strides s1**2*s0, 1, s1*s0, s0) from a contiguous NCHW tensor, and a
// row stride with a floor division and a Max.
TEST(ArrangeArgumentsTest, PowersDivisionsAndMaxAreEvaluated) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<Operand> args,
      ArrangeArguments(
          OneTensor(4, "f32[1, s0, s1, s1][s1**2*s0, 1, s1*s0, s0]cpu"),
          {{"x", Counting({1, 2, 2, 2})}}));
  // By hand: x = 1..8 as [1, 2, 2, 2]; channels-last stores (h, w, c)
  // innermost c: 1, 5, 2, 6, 3, 7, 4, 8.
  EXPECT_THAT(args[0].tensor.strides(), ElementsAre(8, 1, 4, 2));
  EXPECT_THAT(Storage(args[0].tensor, 8), ElementsAre(1, 5, 2, 6, 3, 7, 4, 8));
  // Max(4, 3) + 3//2 = 5: rows 5 apart.
  ASSERT_OK_AND_ASSIGN(
      args,
      ArrangeArguments(OneTensor(2, "f32[s0, s1][Max(4, s1) + (s1//2), 1]cpu"),
                       {{"x", Counting({2, 3})}}));
  EXPECT_THAT(args[0].tensor.strides(), ElementsAre(5, 1));
  EXPECT_EQ(args[0].tensor.GetDouble({1, 2}), 6);
}

// A symbol bound by one argument's size sets another's stride.
TEST(ArrangeArgumentsTest, SymbolsAreSharedAcrossArguments) {
  Manifest m;
  m.arguments = {TensorArg("n", 1), TensorArg("x", 2)};
  m.annotations = {"f32[s0][1]cpu", "f32[3, 2][1, s0]cpu"};
  ASSERT_OK_AND_ASSIGN(
      std::vector<Operand> args,
      ArrangeArguments(m, {{"n", Counting({5})}, {"x", Counting({3, 2})}}));
  EXPECT_THAT(args[1].tensor.strides(), ElementsAre(1, 5));
  EXPECT_EQ(args[1].tensor.GetDouble({2, 1}), 6);
}

// Already laid out, other sizes than annotated, or a stride the runtime
// cannot evaluate: the tensor as given, its storage shared.
TEST(ArrangeArgumentsTest, WhatItCannotOrNeedNotLayOutIsPassedAsGiven) {
  Tensor x = Counting({2, 3});
  for (const char* annotation :
       {"f32[s0, s1][s1, 1]cpu", "f32[4, 3][1, 4]cpu",
        "f32[s0, s1][Foo(s1), 1]cpu", "f32[s0, s1][(s1//0), 1]cpu",
        "f32[s0, s1][s1**99, 1]cpu", "f32[s0, s1][2*s9, 1]cpu",
        "f32[s0, s1]"}) {
    ASSERT_OK_AND_ASSIGN(
        std::vector<Operand> args,
        ArrangeArguments(OneTensor(2, annotation), {{"x", x}}));
    EXPECT_EQ(args[0].tensor.data_ptr(), x.data_ptr()) << annotation;
  }
}

// Numbers from 0-d tensors (an int64 past double's precision exactly),
// None without a tensor, a constant self.c by "c".
TEST(ArrangeArgumentsTest, NumbersNoneAndConstants) {
  Manifest m;
  m.arguments = {{.name = "n", .kind = ArgumentSpec::Kind::kInt},
                 {.name = "lr", .kind = ArgumentSpec::Kind::kFloat},
                 {.name = "flag", .kind = ArgumentSpec::Kind::kBool},
                 {.name = "unused", .kind = ArgumentSpec::Kind::kNone},
                 {.name = "self.c", .constant = true, .rank = 1}};
  m.annotations = {"Sym(s0)", "Sym(zf0)", "Sym(zb0)", "-", "f32[3][1]cpu"};
  Tensor big = *Tensor::Empty({}, DType::kInt64);
  big.data<int64_t>()[0] = (int64_t{1} << 60) + 1;
  Inputs in = {{"n", big},
               {"lr", Scalar(DType::kFloat64, 0.5)},
               {"flag", Scalar(DType::kBool, 1)},
               {"c", Counting({3})}};
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> args, ArrangeArguments(m, in));
  ASSERT_EQ(args.size(), 5u);
  EXPECT_EQ(args[0].kind, Operand::Kind::kInt);
  EXPECT_EQ(args[0].i, (int64_t{1} << 60) + 1);
  EXPECT_EQ(args[1].kind, Operand::Kind::kFloat);
  EXPECT_EQ(args[1].f, 0.5);
  EXPECT_EQ(args[2].kind, Operand::Kind::kBool);
  EXPECT_TRUE(args[2].b);
  EXPECT_EQ(args[3].kind, Operand::Kind::kNone);
  EXPECT_EQ(args[4].tensor.ToString(), "f32[3][1]cpu");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, InputNames(m));
  EXPECT_THAT(names, ElementsAre("n", "lr", "flag", "c"));
  // Floats for the int and the bool: truncated (a NaN as x86 converts it,
  // not an undefined conversion), and true for 0.5 as Python's bool(0.5).
  in["n"] = Scalar(DType::kFloat64, NAN);
  in["flag"] = Scalar(DType::kFloat32, 0.5);
  ASSERT_OK_AND_ASSIGN(args, ArrangeArguments(m, in));
  EXPECT_EQ(args[0].i, std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(args[2].b);
  in["n"] = Scalar(DType::kFloat32, -7.9);
  ASSERT_OK_AND_ASSIGN(args, ArrangeArguments(m, in));
  EXPECT_EQ(args[0].i, -7);
}

// A pair of pairs and a scaled_int8, built from their leaves as the
// manifest's trees say.
Manifest CompositeManifest() {
  Manifest m;
  m.arguments = {{.name = "p",
                  .kind = ArgumentSpec::Kind::kComposite,
                  .rank = 1,
                  .type = "pair"},
                 {.name = "q",
                  .kind = ArgumentSpec::Kind::kComposite,
                  .rank = 1,
                  .type = "scaled_int8"}};
  m.annotations = {"f32[4][1]cpu", "f32[4][1]cpu"};
  m.composites[0] = *CompositeLayout::Parse("pair(pair(1,1),pair(1,1))");
  m.composites[1] = *CompositeLayout::Parse("scaled_int8(1,0)");
  return m;
}

Inputs CompositeInputs() {
  return {{"p_a_a", Counting({4})},
          {"p_a_b", Counting({4})},
          {"p_b_a", Counting({4})},
          {"p_b_b", Counting({4})},
          {"q_data", Counting({4}, DType::kInt8)},
          {"q_scale", Scalar(DType::kFloat32, 0.25)}};
}

TEST(ArrangeArgumentsTest, NestedCompositesAreBuiltFromTheirLeaves) {
  Manifest m = CompositeManifest();
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, InputNames(m));
  EXPECT_THAT(names, ElementsAre("p_a_a", "p_a_b", "p_b_a", "p_b_b", "q_data",
                                 "q_scale"));
  Inputs in = CompositeInputs();
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> args, ArrangeArguments(m, in));
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0].ToString(),
            "pair(pair(f32[4][1]cpu, f32[4][1]cpu), pair(f32[4][1]cpu, "
            "f32[4][1]cpu))");
  const CompositeTensor& p = *args[0].composite;
  EXPECT_THAT(p.sizes, ElementsAre(4));
  EXPECT_EQ(p.inner[1].composite->inner[0].tensor.data_ptr(),
            in.at("p_b_a").data_ptr());
  EXPECT_EQ(args[1].composite->type->name(), "scaled_int8");
  EXPECT_EQ(args[1].composite->dtype, DType::kFloat32);
  EXPECT_EQ(args[1].composite->inner[1].tensor.GetDouble({}), 0.25);
}

// A manifest from before composite trees: its type over plain tensors.
TEST(ArrangeArgumentsTest, AnOldManifestsCompositeIsFlat) {
  Manifest m = CompositeManifest();
  m.composites.clear();
  ASSERT_OK_AND_ASSIGN(CompositeLayout tree, ArgumentTree(m, 0));
  EXPECT_EQ(tree.ToString(), "pair(?,?)");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, InputNames(m));
  EXPECT_THAT(names, ElementsAre("p_a", "p_b", "q_data", "q_scale"));
  Inputs in = CompositeInputs();
  in["p_a"] = Counting({4});
  in["p_b"] = Counting({4});
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> args, ArrangeArguments(m, in));
  EXPECT_EQ(args[0].ToString(), "pair(f32[4][1]cpu, f32[4][1]cpu)");
}

TEST(ArrangeArgumentsTest, EachErrorNamesTheArgument) {
  auto fails = [](const Manifest& m, const Inputs& in, const std::string& msg) {
    EXPECT_THAT(ArrangeArguments(m, in),
                StatusIs(absl::StatusCode::kInvalidArgument, msg));
  };
  // A missing tensor, plain or a composite's leaf.
  fails(OneTensor(1, "f32[s0][1]cpu"), {}, "missing input 'x'");
  Inputs in = CompositeInputs();
  in.erase("p_b_a");
  fails(CompositeManifest(), in, "missing input 'p_b_a'");
  // A wrong rank: a plain tensor's as Call words it, a leaf's own.
  fails(OneTensor(2, "f32[s0, s1][s1, 1]cpu"), {{"x", Counting({3})}},
        "argument 0 (x): expected f32 tensor of rank 2 on cpu, got "
        "f32[3][1]cpu");
  in = CompositeInputs();
  in["p_a_b"] = Counting({2, 2});
  fails(CompositeManifest(), in,
        "input 'p_a_b': inner 'b' of the pair 'p_a' has rank 1, got "
        "f32[2, 2][2, 1]cpu");
  // A wrong dtype.
  fails(OneTensor(1, "f32[s0][1]cpu"), {{"x", Counting({3}, DType::kFloat64)}},
        "argument 0 (x): expected f32 tensor of rank 1 on cpu, got "
        "f64[3][1]cpu");
  // Leaves that do not fit their type.
  in = CompositeInputs();
  in["p_a_b"] = Counting({3});
  fails(CompositeManifest(), in,
        "input 'p_a': pair: inner 'b' is f32[3][1]cpu, not of the outer "
        "sizes [4]");
  // A scalar given with dims.
  Manifest lr;
  lr.arguments = {{.name = "lr", .kind = ArgumentSpec::Kind::kFloat}};
  fails(lr, {{"lr", Counting({1})}},
        "input 'lr' is a scalar and needs a 0-d tensor, got f32[1][1]cpu");
  // Overlapping and oversized layouts.
  fails(OneTensor(2, "f32[2, 3][1, 1]cpu"), {{"x", Counting({2, 3})}},
        "input 'x': the graph was compiled for the layout f32[2, 3][1, 1]cpu, "
        "whose elements overlap; no tensor can be laid out that way");
  fails(OneTensor(2, "f32[3, 2][4611686018427387904, 1]cpu"),
        {{"x", Counting({3, 2})}}, "input 'x': layout too large");
}

// A manifest's tree names a registered type (Manifest::Parse checks it);
// an older manifest's composite argument has only its type's name.
TEST(ArrangeArgumentsTest, ATypeTheProgramCannotBuildIsNamed) {
  Manifest m = CompositeManifest();
  m.arguments[0].type = "blob";
  m.composites.clear();
  EXPECT_THAT(ArrangeArguments(m, CompositeInputs()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "argument 'p': composite type 'blob' is not "
                       "registered in this program"));
  EXPECT_THAT(InputNames(m).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("'blob' is not registered")));
}

TEST(ComposeTest, BuildsACompositeByItsTypesRule) {
  const CompositeType& pair = *FindCompositeType("pair");
  std::vector<Operand> halves = {Operand::Of(Counting({2})),
                                 Operand::Of(Counting({2}))};
  ASSERT_OK_AND_ASSIGN(Operand made, Compose(pair, "x", halves));
  ASSERT_EQ(made.kind, Operand::Kind::kComposite);
  EXPECT_THAT(made.composite->sizes, ElementsAre(2));
  EXPECT_THAT(Compose(pair, "x",
                      {Operand::Of(Counting({2})), Operand::Of(Counting({3}))}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "input 'x': pair: inner 'b' is f32[3][1]cpu, not of "
                       "the outer sizes [2]"));
}

// LaidOut keeps a tensor that has the strides asked for, and copies one
// that does not.
TEST(LaidOutTest, CopiesOnlyWhenTheLayoutDiffers) {
  Tensor x = Counting({2, 2});
  ASSERT_OK_AND_ASSIGN(Tensor same, LaidOut(x, {2, 1}, 0, "x", "-"));
  EXPECT_EQ(same.data_ptr(), x.data_ptr());
  ASSERT_OK_AND_ASSIGN(Tensor t, LaidOut(x, {1, 2}, 0, "x", "-"));
  EXPECT_THAT(Storage(t, 4), ElementsAreArray({1, 3, 2, 4}));
}

}  // namespace
}  // namespace lathe
