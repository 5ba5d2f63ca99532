// A program that links lathe's runtime library alone (no compiler) and calls
// an artifact: the example MLP (tools/examples/mlp.txt, relu(x @ w)) that the
// test job compiles with `lathec compile` just before this workspace's tests
// run, its directory given as $LATHE_CONSUMER_ARTIFACT. Results are checked
// against the product computed here by hand. ArrangeArguments lays out, as
// the manifest's annotations say, tensors given by name in any layout.

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/arrange_arguments.h"
#include "runtime/artifact.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"

namespace {

using ::testing::HasSubstr;

std::string ArtifactDir() {
  const char* dir = std::getenv("LATHE_CONSUMER_ARTIFACT");
  return dir == nullptr ? "" : dir;
}

lathe::Tensor Matrix(int64_t rows, int64_t cols, float scale) {
  lathe::Tensor t =
      lathe::Tensor::Empty({rows, cols}, lathe::DType::kFloat32).value();
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] = scale * static_cast<float>((i * 5) % 11 - 5);
  }
  return t;
}

TEST(RunArtifactTest, LoadsAndCallsTheCompiledMlp) {
  const std::string dir = ArtifactDir();
  ASSERT_FALSE(dir.empty())
      << "set LATHE_CONSUMER_ARTIFACT to a `lathec compile "
         "tools/examples/mlp.txt` output (bash tools/dev.sh test does)";
  absl::StatusOr<lathe::LoadedArtifact> a = lathe::LoadArtifact(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  lathe::Tensor w = Matrix(16, 32, 0.25f);
  for (int64_t rows : {3, 5, 64}) {
    lathe::Tensor x = Matrix(rows, 16, 0.5f);
    std::vector<lathe::Operand> args = {lathe::Operand::Of(x),
                                        lathe::Operand::Of(w)};
    absl::StatusOr<std::vector<lathe::Operand>> out =
        a->function->Call(absl::MakeSpan(args));
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    const lathe::Tensor& y = (*out)[0].tensor;
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{rows, 32}));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < 32; ++j) {
        float sum = 0;  // multiples of 1/8 below 2^10: exact in f32
        for (int64_t k = 0; k < 16; ++k) {
          sum += x.data<float>()[i * 16 + k] * w.data<float>()[k * 32 + j];
        }
        ASSERT_EQ(y.data<float>()[i * 32 + j], sum > 0 ? sum : 0.0f)
            << rows << " " << i << " " << j;
      }
    }
  }
  // A batch of 1 is specialized: this program has no compiler, so the guard
  // that failed is the error.
  std::vector<lathe::Operand> one = {lathe::Operand::Of(Matrix(1, 16, 0.5f)),
                                     lathe::Operand::Of(w)};
  absl::StatusOr<std::vector<lathe::Operand>> refused =
      a->function->Call(absl::MakeSpan(one));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("guard failed: 2 <= x.size(0)"));
}

// w given column-major (strides [1, 16]) is copied into the annotated
// row-major strides [32, 1]; the product is the same as above.
TEST(RunArtifactTest, ArrangesArgumentsAsTheManifestSays) {
  const std::string dir = ArtifactDir();
  ASSERT_FALSE(dir.empty()) << "set LATHE_CONSUMER_ARTIFACT";
  absl::StatusOr<lathe::LoadedArtifact> a = lathe::LoadArtifact(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  lathe::Tensor w = Matrix(16, 32, 0.25f);
  lathe::Tensor w_cols = lathe::Tensor::Empty({32, 16}, lathe::DType::kFloat32)
                             .value()
                             .AsStrided({16, 32}, {1, 16}, 0)
                             .value();
  for (int64_t k = 0; k < 16; ++k) {
    for (int64_t j = 0; j < 32; ++j) {
      w_cols.SetDouble({k, j}, w.GetDouble({k, j}));
    }
  }
  lathe::Tensor x = Matrix(3, 16, 0.5f);
  absl::flat_hash_map<std::string, lathe::Tensor> named = {{"x", x},
                                                           {"w", w_cols}};
  absl::StatusOr<std::vector<lathe::Operand>> args =
      lathe::ArrangeArguments(a->manifest, named);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ((*args)[1].tensor.strides(), (std::vector<int64_t>{32, 1}));
  absl::StatusOr<std::vector<lathe::Operand>> out =
      a->function->Call(absl::MakeSpan(*args));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<lathe::Operand> plain = {lathe::Operand::Of(x),
                                       lathe::Operand::Of(w)};
  absl::StatusOr<std::vector<lathe::Operand>> want =
      a->function->Call(absl::MakeSpan(plain));
  ASSERT_TRUE(want.ok()) << want.status();
  const lathe::Tensor& y = (*out)[0].tensor;
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_EQ(y.data<float>()[i], (*want)[0].tensor.data<float>()[i]) << i;
  }
  named.erase("w");
  args = lathe::ArrangeArguments(a->manifest, named);
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().message(), "missing input 'w'");
}

// An exported PyTorch model (tools/python/examples/export_mlp.py: an MLP
// exported with a dynamic batch, compiled by lathe.aot_compile, its weights
// in the artifact), called with its input alone; PyTorch's own result for
// that input is the expectation. The test job writes it where torch is
// installed ($LATHE_CONSUMER_EXPORTED); elsewhere this skips.
TEST(RunArtifactTest, CallsAnExportedModelWithItsWeightsInside) {
  const char* env = std::getenv("LATHE_CONSUMER_EXPORTED");
  if (env == nullptr || *env == '\0') {
    GTEST_SKIP() << "no exported model: LATHE_CONSUMER_EXPORTED is unset "
                    "(PyTorch was not available to the test job)";
  }
  const std::string dir = env;
  absl::StatusOr<lathe::LoadedArtifact> a = lathe::LoadArtifact(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->bound.size(), 4u);  // two weights and two biases
  absl::StatusOr<lathe::Tensor> x = lathe::ReadNpy(dir + "-io/x.npy");
  absl::StatusOr<lathe::Tensor> want = lathe::ReadNpy(dir + "-io/expected.npy");
  ASSERT_TRUE(x.ok()) << x.status();
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<lathe::Operand> args = {lathe::Operand::Of(*x)};
  absl::StatusOr<std::vector<lathe::Operand>> out =
      a->Call(absl::MakeSpan(args));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  const lathe::Tensor& y = (*out)[0].tensor;
  ASSERT_EQ(y.sizes(), want->sizes());
  for (int64_t i = 0; i < y.numel(); ++i) {
    EXPECT_NEAR(y.data<float>()[i], want->data<float>()[i], 1e-5) << i;
  }
}

}  // namespace
