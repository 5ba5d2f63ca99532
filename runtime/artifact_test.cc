// Artifacts written and loaded back with the runtime alone, on a compiled
// graph written by hand (testdata/add_graph.cc: out = x + y * alpha):
// the manifest's text, every refusal (format, version, ABI, damaged or
// missing files, a truncated library whose manifest was edited to match,
// malformed lines) with its message, and calls through the loaded
// function, which runs the bytes checked even when the file changes later.

#include "runtime/artifact.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/checksum.h"
#include "runtime/file_io.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> s = ReadFileLimited(path, 1 << 26);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : "";
}

Manifest AddManifest() {
  Manifest m;
  m.graph = "add.txt";
  m.compiler = "g++ -O3 (by hand)";
  m.arguments = {{.name = "x", .rank = 1},
                 {.name = "y", .rank = 1},
                 {.name = "alpha", .kind = ArgumentSpec::Kind::kFloat}};
  m.annotations = {"f32[s0][1]cpu", "f32[s0][1]cpu", "Sym(zf0)"};
  m.signature.results = {CompositeLayout::Plain(1)};
  m.signature.checks = {"x is too long"};
  m.guards = {"y.size(0) == x.size(0)", "2 <= x.size(0)", "not isnan(alpha)"};
  return m;
}

// The arguments x = [1, 2], y = [10, 20], alpha = 0.5 (out = [6, 12]).
std::vector<Operand> AddArguments() {
  Tensor x = Tensor::Empty({2}, DType::kFloat32).value();
  Tensor y = Tensor::Empty({2}, DType::kFloat32).value();
  x.data<float>()[0] = 1;
  x.data<float>()[1] = 2;
  y.data<float>()[0] = 10;
  y.data<float>()[1] = 20;
  return {Operand::Of(x), Operand::Of(y), Operand::Float(0.5)};
}

class ArtifactTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_OK(
        WriteArtifact(dir_, AddManifest(),
                      {{"kernel.so", Read("runtime/testdata/add_graph.so")},
                       {"kernel.cc", Read("runtime/testdata/add_graph.cc")}}));
  }
  // Rewrites the manifest with `from` replaced by `to`.
  void EditManifest(const std::string& from, const std::string& to) {
    std::string text = Read(dir_ + "/manifest.txt");
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    ASSERT_OK(WriteFileAtomic(dir_ + "/manifest.txt", text));
  }
  std::string dir_;
};

TEST_F(ArtifactTest, LoadsAndCalls) {
  ASSERT_OK_AND_ASSIGN(LoadedArtifact a, LoadArtifact(dir_));
  EXPECT_EQ(a.manifest.graph, "add.txt");
  EXPECT_EQ(a.manifest.guards.size(), 3u);
  std::vector<Operand> args = AddArguments();
  Tensor x = args[0].tensor;
  Tensor y = args[1].tensor;
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                       a.function->Call(absl::MakeSpan(args)));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor.data<float>()[0], 6.0f);
  EXPECT_EQ(out[0].tensor.data<float>()[1], 12.0f);
  // A size the guards refuse, with no compiler here: the guard is named.
  args[0] = Operand::Of(x.AsStrided({1}, {1}, 0).value());
  args[1] = Operand::Of(y.AsStrided({1}, {1}, 0).value());
  EXPECT_THAT(a.function->Call(absl::MakeSpan(args)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("guard failed: 2 <= x.size(0)")));
}

// An artifact that holds argument y (an exported model's weight): a call
// passes x and alpha alone; the value comes from the checked file.
TEST_F(ArtifactTest, BoundArgumentsComeFromTheArtifact) {
  Manifest m = AddManifest();
  m.bound[1] = "bound_1.npy";
  std::vector<Operand> all = AddArguments();
  ASSERT_OK_AND_ASSIGN(std::string y, EncodeNpy(all[1].tensor));
  const std::string dir = dir_ + "-bound";
  ASSERT_OK(WriteArtifact(dir, m,
                          {{"kernel.so", Read("runtime/testdata/add_graph.so")},
                           {"bound_1.npy", y}}));
  EXPECT_THAT(Read(dir + "/manifest.txt"),
              HasSubstr("\nbound 1 bound_1.npy\n"));
  ASSERT_OK_AND_ASSIGN(LoadedArtifact a, LoadArtifact(dir));
  ASSERT_EQ(a.bound.size(), 1u);
  std::vector<Operand> args = {all[0], all[2]};
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out, a.Call(absl::MakeSpan(args)));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tensor.data<float>()[0], 6.0f);
  EXPECT_EQ(out[0].tensor.data<float>()[1], 12.0f);
  EXPECT_THAT(a.Call(absl::MakeSpan(all)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "expected 2 arguments (the artifact holds 1 of its 3), "
                       "got 3"));
  // A weight of another dtype, with a manifest edited to match its bytes.
  Tensor wrong = Tensor::Empty({2}, DType::kFloat64).value();
  ASSERT_OK_AND_ASSIGN(std::string npy, EncodeNpy(wrong));
  ASSERT_OK(WriteArtifact(dir, m,
                          {{"kernel.so", Read("runtime/testdata/add_graph.so")},
                           {"bound_1.npy", npy}}));
  EXPECT_THAT(LoadArtifact(dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bound_1.npy: holds f64[2][1]cpu; argument 1 "
                                 "is y: f32 tensor of rank 1 on cpu")));
  // A bound argument whose file is not among the checked ones, or that is
  // not a tensor.
  Manifest unlisted = m;
  unlisted.bound[1] = "elsewhere.npy";
  ASSERT_OK(WriteArtifact(dir, unlisted,
                          {{"kernel.so", Read("runtime/testdata/add_graph.so")},
                           {"bound_1.npy", y}}));
  EXPECT_THAT(LoadArtifact(dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bound argument 1's file elsewhere.npy is "
                                 "not listed")));
  Manifest scalar = AddManifest();
  scalar.bound[2] = "bound_1.npy";
  ASSERT_OK(WriteArtifact(dir, scalar,
                          {{"kernel.so", Read("runtime/testdata/add_graph.so")},
                           {"bound_1.npy", y}}));
  EXPECT_THAT(LoadArtifact(dir),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bound argument 2 is not a tensor argument")));
}

TEST_F(ArtifactTest, TheManifestSaysWhatTheArtifactHolds) {
  std::string text = Read(dir_ + "/manifest.txt");
  EXPECT_THAT(text, HasSubstr(absl::StrCat(
                        "lathe-artifact 1\nlathe-version 0.12.0\nkernel-abi ",
                        LATHE_KERNEL_ABI_VERSION, "\ngraph add.txt\n")));
  EXPECT_THAT(text, HasSubstr("argument x placeholder tensor f32 cpu 1 "
                              "f32[s0][1]cpu\n"));
  EXPECT_THAT(text,
              HasSubstr("argument alpha placeholder float - - 0 Sym(zf0)\n"));
  EXPECT_THAT(text, HasSubstr("result 1\ncheck x is too long\n"
                              "guard y.size(0) == x.size(0)\n"));
  EXPECT_THAT(text, HasSubstr("file kernel.so "));
  ASSERT_OK_AND_ASSIGN(Manifest m, Manifest::Parse(text, "manifest.txt"));
  EXPECT_EQ(m.ToString(), text);
}

TEST_F(ArtifactTest, ADamagedFileIsNamed) {
  std::string so = Read(dir_ + "/kernel.so");
  so[so.size() / 2] ^= 1;
  ASSERT_OK(WriteFileAtomic(dir_ + "/kernel.so", so));
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kDataLoss,
                       dir_ + "/kernel.so: damaged: its SHA-256 is not the "
                              "manifest's"));
  ASSERT_OK(WriteFileAtomic(dir_ + "/kernel.so", so.substr(0, 100)));
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("kernel.so: damaged: 100 bytes, the manifest "
                                 "says")));
  ASSERT_OK(RemoveTree(dir_ + "/kernel.cc"));
  ASSERT_OK(WriteFileAtomic(dir_ + "/kernel.so",
                            Read("runtime/testdata/add_graph.so")));
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("kernel.cc")));
}

TEST_F(ArtifactTest, ATruncatedLibraryWithAMatchingManifestIsNeverLoaded) {
  // Cut short, and the manifest's line edited to match: the checksums pass,
  // and dlopen of such a file touches memory past its end (SIGBUS).
  const std::string so = Read(dir_ + "/kernel.so");
  const std::string cut = so.substr(0, so.size() / 2);
  ASSERT_OK(WriteFileAtomic(dir_ + "/kernel.so", cut));
  EditManifest(
      absl::StrCat("file kernel.so ", so.size(), " ", Sha256Hex(so)),
      absl::StrCat("file kernel.so ", cut.size(), " ", Sha256Hex(cut)));
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(dir_ + "/kernel.so is not a loadable "
                                              "shared library: segment "),
                             HasSubstr("lies past its end (truncated?)"))));
}

// A manifest whose results are not the library's: the arrays the runtime
// would give lathe_call for the result's sizes and strides are of another
// rank than the one it writes (a rank too small let it write past them).
TEST_F(ArtifactTest, AManifestWhoseResultsAreNotTheLibrarysIsRefused) {
  EditManifest("result 1\n", "result 0\n");
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("/kernel.so: its results have ranks "
                                       "[1], the signature says [0] (a "
                                       "manifest that is not the library's?)"),
                             HasSubstr(dir_))));
  EditManifest("result 0\n", "result 1\nresult 1\n");
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("ranks [1], the signature says [1, 1]")));
  EditManifest("result 1\nresult 1\n", "result 1\n");
  EXPECT_OK(LoadArtifact(dir_).status());
}

TEST_F(ArtifactTest, WhatRunsIsTheBytesVerifiedNotTheFileLater) {
  ASSERT_OK_AND_ASSIGN(LoadedArtifact a, LoadArtifact(dir_));
  // The file changed in place after the load (the same inode: a mapping of
  // it would now fault past the end, or run other code).
  {
    std::FILE* f = std::fopen((dir_ + "/kernel.so").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a library", f);
    std::fclose(f);
  }
  std::vector<Operand> args = AddArguments();
  ASSERT_OK_AND_ASSIGN(std::vector<Operand> out,
                       a.function->Call(absl::MakeSpan(args)));
  EXPECT_EQ(out[0].tensor.data<float>()[1], 12.0f);
  // And it is loaded again from its checked bytes, never from a path.
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("damaged")));
}

TEST_F(ArtifactTest, AnotherVersionIsRefused) {
  EditManifest("lathe-version 0.12.0", "lathe-version 0.11.0");
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       dir_ + "/manifest.txt: written by lathe 0.11.0; this "
                              "is lathe 0.12.0 (compile the graph again)"));
  EditManifest(absl::StrCat("lathe-version 0.11.0\nkernel-abi ",
                            LATHE_KERNEL_ABI_VERSION),
               "lathe-version 0.12.0\nkernel-abi 5");
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(absl::StrCat(
                           "compiled for kernel ABI 5; this runtime has "
                           "kernel ABI ",
                           LATHE_KERNEL_ABI_VERSION))));
  EditManifest("lathe-artifact 1", "lathe-artifact 2");
  EXPECT_THAT(LoadArtifact(dir_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("manifest.txt: artifact format 2; this lathe "
                                 "reads format 1")));
}

// The range guards' bounds file (kGuardBoundsFile): "LO HI" per line, any
// int64s with LO <= HI; anything else names the file and the line.
TEST(ManifestTest, GuardBoundsRoundTripAndMalformedLinesAreNamed) {
  const std::vector<int64_t> bounds = {std::numeric_limits<int64_t>::min(), 15,
                                       2, std::numeric_limits<int64_t>::max()};
  const std::string text = GuardBoundsText(bounds);
  EXPECT_EQ(text, "-9223372036854775808 15\n2 9223372036854775807\n");
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> parsed,
                       ParseGuardBounds(text, "g.txt"));
  EXPECT_EQ(parsed, bounds);
  ASSERT_OK_AND_ASSIGN(parsed, ParseGuardBounds("", "g.txt"));
  EXPECT_TRUE(parsed.empty());
  const std::string expected =
      "g.txt: line 2: expected a range guard's bounds 'LO HI' (LO <= HI, "
      "int64; at most 4096 lines)";
  EXPECT_THAT(ParseGuardBounds("2 15\n2\n", "g.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument, expected));
  EXPECT_THAT(ParseGuardBounds("2 15\n2 99999999999999999999\n", "g.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument, expected));
  EXPECT_THAT(ParseGuardBounds("2 15\n16 15\n", "g.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument, expected));
  std::string many;
  for (int k = 0; k <= 4096; ++k) many += "2 15\n";
  EXPECT_THAT(ParseGuardBounds(many, "g.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("g.txt: line 4097: expected")));
}

TEST(ManifestTest, MalformedLinesAreNamed) {
  auto parse = [](const std::string& text) {
    return Manifest::Parse(text, "m.txt");
  };
  EXPECT_THAT(parse(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                  "m.txt: empty (not a lathe artifact?)"));
  EXPECT_THAT(parse("hello\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("m.txt: line 1: expected 'lathe-artifact "
                                 "FORMAT'")));
  const std::string head = "lathe-artifact 1\n";
  EXPECT_THAT(parse(head + "argument x placeholder tensor f99 cpu 1 [4]\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 2: expected a dtype (f32, i64, ...)"));
  EXPECT_THAT(parse(head + "argument x placeholder blob - - 0 -\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2: expected tensor, composite:TYPE")));
  EXPECT_THAT(
      parse(head + "result 1\nresult pair(1\n"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("line 3: layout 'pair(1': expected ',' or ')'")));
  EXPECT_THAT(parse(head + "file ../etc/passwd 10 " + std::string(64, 'a')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 2: expected a file name without '/'"));
  EXPECT_THAT(parse(head + "file k.so 10 abc\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 2: expected a SHA-256 digest"));
  EXPECT_THAT(parse(head + "mutated 3\nfile k.so 1 " + std::string(64, 'a')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: mutated argument 3 does not exist"));
  EXPECT_THAT(parse(head + "colour blue\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 2: expected a manifest key (not "
                       "'colour')"));
  EXPECT_THAT(parse(head + "kernel-abi 6 7\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 2: expected the end of the line"));
  EXPECT_THAT(parse(head + "kernel-abi 9\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("expected the shared library as its first "
                                 "file")));
}

// A frozen constant's line names its file and strides (the file holds it
// in C order) and reads back as written; a bad line or an unlisted file is
// named.
TEST(ManifestTest, FrozenConstantsRoundTripAndAreChecked) {
  Manifest m;
  m.frozen = {{"frozen_0.npy", {1, 5}}, {"frozen_1.npy", {}}};
  m.files = {{"kernel.so", 1, std::string(64, 'a')},
             {"frozen_0.npy", 1, std::string(64, 'b')},
             {"frozen_1.npy", 1, std::string(64, 'c')}};
  const std::string text = m.ToString();
  EXPECT_THAT(text, HasSubstr("\nfrozen frozen_0.npy 1,5\nfrozen "
                              "frozen_1.npy -\n"));
  ASSERT_OK_AND_ASSIGN(Manifest back, Manifest::Parse(text, "m.txt"));
  ASSERT_EQ(back.frozen.size(), 2u);
  EXPECT_EQ(back.frozen[0].file, "frozen_0.npy");
  EXPECT_EQ(back.frozen[0].strides, (std::vector<int64_t>{1, 5}));
  EXPECT_TRUE(back.frozen[1].strides.empty());
  const std::string head = "lathe-artifact 1\n";
  const std::string so = "file k.so 1 " + std::string(64, 'a') + "\n";
  EXPECT_THAT(Manifest::Parse(head + "frozen f.npy 1,-2\n" + so, "m.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 2: expected strides: up to 64 "
                       "non-negative ints"));
  EXPECT_THAT(Manifest::Parse(head + "frozen ../f.npy -\n" + so, "m.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 2: expected a file name without '/'"));
  EXPECT_THAT(Manifest::Parse(head + "frozen f.npy 4,1\n" + so, "m.txt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: frozen constant file f.npy is not listed"));
}

// A composite argument's whole tree is a line of its own, after the
// argument's, and reads back as written.
TEST(ManifestTest, ACompositesTreeRoundTrips) {
  Manifest m;
  m.arguments = {{.name = "x", .rank = 1},
                 {.name = "p",
                  .kind = ArgumentSpec::Kind::kComposite,
                  .rank = 1,
                  .type = "pair"}};
  m.annotations = {"f32[4][1]cpu", "f32[4][1]cpu"};
  ASSERT_OK_AND_ASSIGN(
      m.composites[1],
      CompositeLayout::Parse("pair(pair(1,1),scaled_int8(1,0))"));
  m.files = {{"k.so", 1, std::string(64, 'a')}};
  std::string text = m.ToString();
  EXPECT_THAT(text, HasSubstr("argument p placeholder composite:pair f32 cpu "
                              "1 f32[4][1]cpu\ncomposite 1 "
                              "pair(pair(1,1),scaled_int8(1,0))\n"));
  ASSERT_OK_AND_ASSIGN(Manifest back, Manifest::Parse(text, "m.txt"));
  ASSERT_EQ(back.composites.size(), 1u);
  EXPECT_EQ(back.composites.at(1).ToString(),
            "pair(pair(1,1),scaled_int8(1,0))");
  EXPECT_EQ(back.ToString(), text);
}

TEST(ManifestTest, ACompositesTreeMustFitItsArgument) {
  const std::string head =
      "lathe-artifact 1\nargument x placeholder tensor f32 cpu 1 f32[4][1]cpu\n"
      "argument p placeholder composite:pair f32 cpu 1 f32[4][1]cpu\n";
  auto parse = [&](const std::string& line) {
    return Manifest::Parse(head + line, "m.txt");
  };
  EXPECT_THAT(parse("composite 0 pair(1,1)\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 4: expected a composite argument of type "
                       "'pair' as argument 0 (its line first)"));
  EXPECT_THAT(parse("composite 2 pair(1,1)\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("as argument 2 (its line first)")));
  EXPECT_THAT(parse("composite 1 scaled_int8(1,0)\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("of type 'scaled_int8' as argument 1")));
  EXPECT_THAT(parse("composite 1 pair(1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 4: layout 'pair(1': expected")));
  EXPECT_THAT(parse("composite 1 1\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 4: expected a composite's tree, "
                       "TYPE(...)"));
  EXPECT_THAT(parse("composite 1 pair(1,1,1)\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "m.txt: line 4: layout 'pair(1,1,1)': expected 2 "
                       "inner values of pair before ')' at character 11"));
}

// A composite type this program does not register is named at its line;
// in a manifest another lathe wrote, the version is named instead (the
// type may be that lathe's).
TEST(ManifestTest, ATypeThisProgramLacksIsNamed) {
  const std::string head =
      "lathe-artifact 1\nargument p placeholder composite:pair f32 cpu 1 "
      "f32[4][1]cpu\n";
  EXPECT_THAT(
      Manifest::Parse(head + "composite 0 pair(blob(1,1),1)\n", "m.txt"),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               "m.txt: line 3: layout 'pair(blob(1,1),1)': composite type "
               "'blob' is not registered in this program"));
  EXPECT_THAT(Manifest::Parse(head + "result blob(1,1)\n", "m.txt"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("m.txt: line 3: layout 'blob(1,1)'")));
  const std::string older =
      "lathe-artifact 1\nlathe-version 0.1.0\nresult blob(1,1)\n";
  EXPECT_THAT(
      Manifest::Parse(older, "m.txt"),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               absl::StrCat("m.txt: written by lathe 0.1.0; this is "
                            "lathe ",
                            kLatheVersion, " (compile the graph again)")));
}

TEST(WriteArtifactTest, RefusesNamesOutsideTheDirectory) {
  std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/bad";
  EXPECT_THAT(WriteArtifact(dir, AddManifest(), {{"../x.so", "x"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "an artifact cannot hold a file named '../x.so'"));
  Manifest m = AddManifest();
  m.arguments[0].name = "a b";
  EXPECT_THAT(WriteArtifact(dir, m, {{"k.so", "x"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "an argument name cannot be 'a b'"));
  // A layout the manifest could not read back.
  m = AddManifest();
  m.signature.results = {CompositeLayout::Of(
      FindCompositeType("pair"),
      {CompositeLayout::Plain(1), CompositeLayout::Plain()})};
  EXPECT_THAT(WriteArtifact(dir, m, {{"k.so", "x"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "an artifact cannot record the layout pair(1,?) (a "
                       "rank it does not know)"));
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace lathe
