#include "runtime/composite.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

namespace lathe {
namespace {

DType DTypeOf(const Operand& o) {
  return o.kind == Operand::Kind::kComposite ? o.composite->dtype
                                             : o.tensor.dtype();
}

bool IsTensorLike(const Operand& o) {
  return o.kind == Operand::Kind::kTensor ||
         o.kind == Operand::Kind::kComposite;
}

// pair: (a, b), each of the outer shape and dtype.
class PairType : public CompositeType {
 public:
  absl::string_view name() const override { return "pair"; }
  const std::vector<std::string>& inner_names() const override {
    static const auto* names = new std::vector<std::string>{"a", "b"};
    return *names;
  }
  DType OuterDType(absl::Span<const DType> inner) const override {
    return inner.empty() ? DType::kFloat32 : inner[0];
  }

 protected:
  std::string Mismatch(absl::Span<const Operand> inner,
                       absl::Span<const int64_t> sizes) const override {
    for (size_t k = 0; k < inner.size(); ++k) {
      if (OuterSizes(inner[k]) != sizes) {
        return absl::StrCat("inner '", inner_names()[k], "' is ",
                            inner[k].ToString(), ", not of the outer sizes [",
                            absl::StrJoin(sizes, ", "), "]");
      }
    }
    if (DTypeOf(inner[0]) != DTypeOf(inner[1])) {
      return "the halves have different dtypes";
    }
    return "";
  }
};

// scaled_int8: (data: int8 of the outer shape, scale: f32 0-d).
class ScaledInt8Type : public CompositeType {
 public:
  absl::string_view name() const override { return "scaled_int8"; }
  const std::vector<std::string>& inner_names() const override {
    static const auto* names = new std::vector<std::string>{"data", "scale"};
    return *names;
  }
  DType OuterDType(absl::Span<const DType>) const override {
    return DType::kFloat32;
  }

 protected:
  std::string Mismatch(absl::Span<const Operand> inner,
                       absl::Span<const int64_t> sizes) const override {
    if (inner[0].kind != Operand::Kind::kTensor ||
        inner[0].tensor.dtype() != DType::kInt8 ||
        absl::Span<const int64_t>(inner[0].tensor.sizes()) != sizes) {
      return absl::StrCat("'data' must be i8[", absl::StrJoin(sizes, ", "),
                          "], got ", inner[0].ToString());
    }
    if (inner[1].kind != Operand::Kind::kTensor ||
        inner[1].tensor.dtype() != DType::kFloat32 ||
        inner[1].tensor.dim() != 0) {
      return absl::StrCat("'scale' must be a 0-d f32 tensor, got ",
                          inner[1].ToString());
    }
    return "";
  }
};

struct Registry {
  absl::Mutex mu;
  absl::flat_hash_map<std::string, const CompositeType*> types
      ABSL_GUARDED_BY(mu);
};

Registry& GlobalRegistry() {
  static Registry* r = [] {
    auto* r = new Registry;
    absl::MutexLock lock(&r->mu);
    static const PairType pair;
    static const ScaledInt8Type scaled;
    r->types["pair"] = &pair;
    r->types["scaled_int8"] = &scaled;
    return r;
  }();
  return *r;
}

}  // namespace

std::string Operand::ToString() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kTensor:
      return tensor.ToString();
    case Kind::kComposite: {
      std::vector<std::string> parts;
      for (const Operand& o : composite->inner) parts.push_back(o.ToString());
      return absl::StrCat(composite->type->name(), "(",
                          absl::StrJoin(parts, ", "), ")");
    }
    case Kind::kInt:
      return absl::StrCat(i);
    case Kind::kFloat:
      return absl::StrCat(f);
    case Kind::kBool:
      return b ? "True" : "False";
  }
  return "?";
}

absl::Span<const int64_t> OuterSizes(const Operand& o) {
  if (o.kind == Operand::Kind::kComposite) return o.composite->sizes;
  return o.tensor.sizes();
}

absl::Span<const int64_t> OuterStrides(const Operand& o) {
  if (o.kind == Operand::Kind::kComposite) return o.composite->strides;
  return o.tensor.strides();
}

absl::StatusOr<Operand> CompositeType::Unflatten(
    absl::Span<Operand> inner, absl::Span<const int64_t> sizes,
    absl::Span<const int64_t> strides) const {
  if (inner.size() != inner_names().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": expected ", inner_names().size(),
                     " inner values, got ", inner.size()));
  }
  absl::InlinedVector<DType, 4> dtypes;
  for (size_t k = 0; k < inner.size(); ++k) {
    if (!IsTensorLike(inner[k])) {
      return absl::InvalidArgumentError(
          absl::StrCat(name(), ": inner '", inner_names()[k],
                       "' is not a tensor (", inner[k].ToString(), ")"));
    }
    dtypes.push_back(DTypeOf(inner[k]));
  }
  if (sizes.size() != strides.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": ", sizes.size(), " sizes but ", strides.size(), " strides"));
  }
  if (std::string why = Mismatch(inner, sizes); !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": ", why));
  }
  auto c = std::make_shared<CompositeTensor>();
  c->type = this;
  c->dtype = OuterDType(dtypes);
  // sizes/strides may view inner[0]: copy them before moving it.
  c->sizes.assign(sizes.begin(), sizes.end());
  c->strides.assign(strides.begin(), strides.end());
  c->inner.assign(std::make_move_iterator(inner.begin()),
                  std::make_move_iterator(inner.end()));
  return Operand::Of(std::shared_ptr<const CompositeTensor>(std::move(c)));
}

const CompositeType* FindCompositeType(absl::string_view name) {
  Registry& r = GlobalRegistry();
  absl::MutexLock lock(&r.mu);
  auto it = r.types.find(name);
  return it == r.types.end() ? nullptr : it->second;
}

absl::Status RegisterCompositeType(const CompositeType* type) {
  Registry& r = GlobalRegistry();
  absl::MutexLock lock(&r.mu);
  if (!r.types.emplace(std::string(type->name()), type).second) {
    return absl::AlreadyExistsError(absl::StrCat(
        "composite type '", type->name(), "' is already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Operand> MakePair(Operand a, Operand b) {
  std::vector<int64_t> sizes(OuterSizes(a).begin(), OuterSizes(a).end()),
      strides(OuterStrides(a).begin(), OuterStrides(a).end());
  Operand inner[] = {std::move(a), std::move(b)};
  return FindCompositeType("pair")->Unflatten(absl::MakeSpan(inner), sizes,
                                              strides);
}

absl::StatusOr<Operand> MakeScaledInt8(Tensor data, Tensor scale) {
  std::vector<int64_t> sizes = data.sizes(), strides = data.strides();
  Operand inner[] = {Operand::Of(std::move(data)),
                     Operand::Of(std::move(scale))};
  return FindCompositeType("scaled_int8")
      ->Unflatten(absl::MakeSpan(inner), sizes, strides);
}

}  // namespace lathe
