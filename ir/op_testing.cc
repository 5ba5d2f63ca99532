#include "ir/op_testing.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {

TensorMeta MetaOf(const Tensor& t) {
  TensorMeta m;
  m.dtype = t.dtype();
  m.device = t.device();
  for (int64_t s : t.sizes()) m.sizes.push_back(symbolic::Int(s));
  for (int64_t s : t.strides()) m.strides.push_back(symbolic::Int(s));
  m.storage_offset = symbolic::Int(t.storage_offset());
  return m;
}

Value ToMetaValue(const Value& v) {
  if (v.is_tensor()) return Value::OfMeta(MetaOf(v.tensor));
  if (v.kind == Value::Kind::kList) {
    std::vector<Value> items;
    for (const Value& e : v.list) items.push_back(ToMetaValue(e));
    return Value::List(std::move(items));
  }
  return v;
}

std::string Describe(const Value& v) {
  if (v.is_tensor()) {
    if (v.tensor.defined()) {
      return absl::StrCat(v.tensor.ToString(), "+", v.tensor.storage_offset());
    }
    return absl::StrCat(v.meta.ToAnnotation(), "+",
                        symbolic::ToString(v.meta.storage_offset));
  }
  if (v.kind == Value::Kind::kList) {
    std::vector<std::string> parts;
    for (const Value& e : v.list) parts.push_back(Describe(e));
    return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
  }
  if (v.is_number()) {  // data-dependent values cannot be predicted, their kind
                        // can
    return v.number.is_bool() ? "bool" : v.number.is_float() ? "float" : "int";
  }
  return v.DebugString();
}

absl::StatusOr<Value> RunOp(const std::string& target, std::vector<Value> args,
                            std::vector<std::pair<std::string, Value>> kwargs) {
  const OpDef* op = OpRegistry::Global().Find(target);
  if (op == nullptr) return absl::NotFoundError(absl::StrCat("no op ", target));
  std::vector<Value> meta_args;
  for (const Value& a : args) meta_args.push_back(ToMetaValue(a));
  std::vector<std::pair<std::string, Value>> meta_kwargs;
  for (const auto& [k, v] : kwargs) meta_kwargs.push_back({k, ToMetaValue(v)});
  absl::StatusOr<std::vector<Value>> bound =
      BindArguments(op->schema, std::move(args), std::move(kwargs), target);
  if (!bound.ok()) return bound.status();
  absl::StatusOr<Value> out = op->kernel(OpCall(*op, *bound, nullptr));
  if (!out.ok()) return out;
  symbolic::ShapeEnv env;
  absl::StatusOr<std::vector<Value>> meta_bound = BindArguments(
      op->schema, std::move(meta_args), std::move(meta_kwargs), target);
  EXPECT_TRUE(meta_bound.ok()) << meta_bound.status();
  absl::StatusOr<Value> meta = op->meta(OpCall(*op, *meta_bound, &env));
  EXPECT_TRUE(meta.ok()) << target << ": meta failed where the kernel ran: "
                         << meta.status();
  if (meta.ok()) {
    Value want = *meta;
    // A data-dependent size (a fresh unbacked symbol, as masked_select's)
    // is the kernel's: bound to it before comparing.
    if (want.is_tensor() && out->is_tensor() && out->tensor.defined() &&
        want.meta.sizes.size() == out->tensor.sizes().size()) {
      absl::flat_hash_map<symbolic::Expr, symbolic::Expr> bound_sizes;
      for (size_t d = 0; d < want.meta.sizes.size(); ++d) {
        symbolic::Expr e = want.meta.sizes[d];
        if (e.is_symbol() && env.IsUnbacked(e)) {
          bound_sizes[e] = symbolic::Int(out->tensor.sizes()[d]);
        }
      }
      for (auto* list : {&want.meta.sizes, &want.meta.strides}) {
        for (symbolic::Expr& e : *list) {
          e = symbolic::Substitute(e, bound_sizes).value_or(e);
        }
      }
    }
    EXPECT_EQ(Describe(want), Describe(ToMetaValue(*out))) << target;
  }
  return out;
}

Tensor T(std::vector<int64_t> sizes, std::vector<double> values, DType dtype) {
  Tensor t = *Tensor::Empty(sizes, dtype);
  size_t k = 0;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    t.SetDouble(i, values.at(k++));
  });
  EXPECT_EQ(k, values.size());
  return t;
}

std::vector<double> Elements(const Tensor& t) {
  std::vector<double> out;
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> i) {
    out.push_back(t.GetDouble(i));
  });
  return out;
}

Value V(const Tensor& t) { return Value::OfTensor(t); }

Value Ints(const std::vector<int64_t>& v) {
  std::vector<Value> items;
  for (int64_t x : v) items.push_back(Value::Int(x));
  return Value::List(std::move(items));
}

Tensor RunT(const std::string& target, std::vector<Value> args,
            std::vector<std::pair<std::string, Value>> kwargs) {
  absl::StatusOr<Value> v = RunOp(target, std::move(args), std::move(kwargs));
  EXPECT_TRUE(v.ok()) << target << ": " << v.status();
  return v.ok() ? v->tensor : Tensor();
}

std::string RunError(const std::string& target, std::vector<Value> args,
                     std::vector<std::pair<std::string, Value>> kwargs) {
  absl::StatusOr<Value> v = RunOp(target, std::move(args), std::move(kwargs));
  EXPECT_FALSE(v.ok()) << target << " unexpectedly succeeded";
  return v.ok() ? "" : std::string(v.status().message());
}

}  // namespace lathe::ir
