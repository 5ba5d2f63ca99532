// The Core ATen opset (ir/testdata/core_aten_ops.txt: every overload PyTorch
// 2.15 tags torch.Tag.core) is registered, each with PyTorch's schema
// (core_aten_schemas.txt), a meta function and a reference kernel. The two
// FFT overloads are the listed exception: lathe has no complex dtypes, so
// they refuse with one clear error.

#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "ir/op_testing.h"
#include "ir/schema.h"
#include "ir/value.h"
#include "runtime/tensor.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

// The lines of ir/testdata/`name` but blank lines and # comments.
absl::StatusOr<std::vector<std::string>> Lines(const std::string& name) {
  absl::StatusOr<std::string> text =
      lathe::testing::ReadRunfile(absl::StrCat("ir/testdata/", name));
  if (!text.ok()) return text.status();
  std::vector<std::string> out;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

// The schema as text with string defaults in one spelling (PyTorch prints
// "none" where native_functions.yaml writes 'none').
std::string Canonical(OpSchema s) {
  for (Argument& a : s.arguments) {
    if (a.default_value &&
        a.default_value->kind == DefaultValue::Kind::kString) {
      a.default_value->text =
          absl::StrCat("\"", a.default_value->string_value, "\"");
    }
  }
  return s.ToString();
}

TEST(CoreAtenOpsTest, EveryOverloadIsRegisteredWithPyTorchsSchema) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> ops,
                       Lines("core_aten_ops.txt"));
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> schemas,
                       Lines("core_aten_schemas.txt"));
  ASSERT_EQ(ops.size(), 189u);
  ASSERT_EQ(schemas.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDef* op = OpRegistry::Global().Find(ops[i]);
    ASSERT_NE(op, nullptr) << ops[i] << " is not registered";
    EXPECT_TRUE(op->meta != nullptr && op->kernel != nullptr) << ops[i];
    absl::StatusOr<OpSchema> want = ParseSchema(schemas[i]);
    ASSERT_OK(want) << schemas[i];
    EXPECT_EQ(Canonical(op->schema), Canonical(*want)) << ops[i];
  }
}

TEST(CoreAtenOpsTest, FftOverloadsRefuseComplexResults) {
  Tensor x = *Tensor::Empty({4}, DType::kFloat32);
  absl::StatusOr<Value> r2c =
      RunOp("aten._fft_r2c.default",
            {Value::OfTensor(x), Value::List({Value::Int(0)}), Value::Int(0),
             Value::Bool(true)});
  EXPECT_EQ(r2c.status().message(),
            "aten._fft_r2c.default: complex dtypes are not supported");
  absl::StatusOr<Value> c2r =
      RunOp("aten._fft_c2r.default",
            {Value::OfTensor(x), Value::List({Value::Int(0)}), Value::Int(0),
             Value::Int(4)});
  EXPECT_EQ(c2r.status().message(),
            "aten._fft_c2r.default: complex dtypes are not supported");
}

}  // namespace
}  // namespace lathe::ir
