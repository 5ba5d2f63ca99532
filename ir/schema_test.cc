#include "ir/schema.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/runfiles.h"
#include "testing/status_matchers.h"

namespace lathe::ir {
namespace {

using ::lathe::testing::StatusIs;
using ::testing::HasSubstr;

OpSchema Parse(absl::string_view text) {
  absl::StatusOr<OpSchema> s = ParseSchema(text);
  EXPECT_OK(s) << text;
  return s.ok() ? *s : OpSchema();
}

// Every schema in native_functions_schemas.txt (copied verbatim from
// PyTorch) parses and prints back exactly.
TEST(SchemaTest, NativeFunctionsCorpusRoundTrips) {
  ASSERT_OK_AND_ASSIGN(
      std::string corpus,
      lathe::testing::ReadRunfile("ir/testdata/native_functions_schemas.txt"));
  std::istringstream in(corpus);
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++count;
    absl::StatusOr<OpSchema> s = ParseSchema(line);
    ASSERT_OK(s) << line;
    EXPECT_EQ(s->ToString(), line);
  }
  EXPECT_GE(count, 100);
}

TEST(SchemaTest, ArgumentsAliasesAndDefaults) {
  OpSchema s = Parse(
      "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
      "Tensor(a!)");
  EXPECT_EQ(s.name, "add_");
  EXPECT_EQ(s.overload, "Tensor");
  EXPECT_EQ(s.FullName(), "add_.Tensor");
  ASSERT_EQ(s.arguments.size(), 3u);
  EXPECT_TRUE(s.arguments[0].is_written());
  EXPECT_FALSE(s.arguments[1].kwarg_only);
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_EQ(s.arguments[2].type.base, BaseType::kScalar);
  EXPECT_EQ(s.arguments[2].default_value->kind, DefaultValue::Kind::kInt);
  EXPECT_EQ(s.arguments[2].default_value->int_value, 1);
  EXPECT_TRUE(s.IsMutable());
  EXPECT_TRUE(s.IsInplace());
  EXPECT_FALSE(s.IsView());
  EXPECT_EQ(s.ArgumentIndex("alpha"), 2);

  OpSchema v = Parse(
      "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> "
      "Tensor(a)[]");
  EXPECT_TRUE(v.IsView());
  EXPECT_FALSE(v.IsMutable());
  EXPECT_EQ(v.arguments[0].alias->after_sets, std::vector<std::string>{"*"});
  EXPECT_TRUE(v.returns[0].type.is_list);
  EXPECT_EQ(v.arguments[1].type.base, BaseType::kSymInt);

  OpSchema t = Parse(
      "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
      "accumulate=False) -> Tensor(a!)");
  EXPECT_TRUE(t.arguments[1].type.is_list);
  EXPECT_TRUE(t.arguments[1].type.element_optional);
  EXPECT_FALSE(t.arguments[1].type.optional);
  EXPECT_EQ(t.arguments[3].default_value->kind, DefaultValue::Kind::kBool);

  OpSchema m = Parse(
      "var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? "
      "correction=None, bool keepdim=False) -> (Tensor, Tensor)");
  EXPECT_EQ(m.arguments[1].type.list_size, 1);
  EXPECT_TRUE(m.arguments[1].type.optional);
  EXPECT_EQ(m.returns.size(), 2u);

  OpSchema g = Parse("gelu(Tensor self, *, str approximate='none') -> Tensor");
  EXPECT_EQ(g.arguments[1].default_value->string_value, "none");
  OpSchema r = Parse(
      "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
      "Tensor indices)");
  EXPECT_EQ(r.returns[1].name, "indices");
  OpSchema l = Parse(
      "mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor");
  EXPECT_EQ(l.arguments[2].default_value->kind, DefaultValue::Kind::kName);
  OpSchema e = Parse(
      "empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? "
      "dtype=None, Layout? layout=None, Device? device=None, bool? "
      "pin_memory=None) -> Tensor");
  EXPECT_EQ(e.arguments.size(), 6u);
  OpSchema f =
      Parse("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor");
  EXPECT_EQ(f.arguments[1].default_value->float_value, 0.01);
  OpSchema ns = Parse(
      "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, "
      "Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)");
  EXPECT_EQ(ns.ns, "aten");
  EXPECT_EQ(
      ns.ToString(),
      "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, "
      "Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)");
  OpSchema list =
      Parse("permute(Tensor(a) self, int[] dims=[0, -1]) -> Tensor(a)");
  EXPECT_EQ(list.arguments[1].default_value->list_values,
            (std::vector<double>{0, -1}));
}

TEST(SchemaTest, ErrorsNameTheColumn) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"", "column 1: expected an operator name, got the end of the schema"},
      {"add(Tensor self", "column 16: expected ')' or ',' after an argument"},
      {"add(Tensr self) -> Tensor", "column 5: unknown type 'Tensr'"},
      {"add(Tensor self) Tensor",
       "column 18: expected '->' before the returns"},
      {"add(Tensor(a self) -> Tensor",
       "column 14: expected ')' closing the alias"},
      {"add(Tensor self, *, *, int x) -> Tensor", "column 21: a second '*'"},
      {"add(Tensor self, Tensor self) -> Tensor",
       "argument 'self' appears twice"},
      {"add(int[2 x) -> Tensor",
       "column 10: expected ']' closing the list type"},
      {"add(str x='abc) -> Tensor", "column 11: unterminated string default"},
      {"add(int x=) -> Tensor", "column 11: expected a default value"},
      {"add(int[] x=[1, a]) -> Tensor",
       "list default element 'a' is not a number"},
      {"add(int x=1$2) -> Tensor", "column 11: bad default value '1$2'"},
      {"add(Tensor self) -> Tensor junk junk",
       "column 33: unexpected text after"},
      {"add(Tensor self) -> (Tensor, ",
       "column 30: expected a type, got the end"},
      {"add.(Tensor self) -> Tensor", "column 5: expected an overload name"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(
        ParseSchema(c.text),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.text;
  }
}

}  // namespace
}  // namespace lathe::ir
