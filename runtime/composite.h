// -----------------------------------------------------------------------------
// File: composite.h
// -----------------------------------------------------------------------------
//
// Composite tensors (PyTorch's traceable wrapper subclasses, seed 003): a
// value of a registered type that flattens into ordered inner values — plain
// tensors or nested composites — plus the type's metadata, and unflattens
// back. A compiled function only ever sees the plain inner tensors; its
// wrapper unwraps composite arguments and rebuilds composite results (see
// aot/subclass_wrapper_plan.h). Built in:
//   pair          inner (a, b), both of the outer shape: every op applies to
//                 both halves (PyTorch's TwoTensor);
//   scaled_int8   inner (data: int8 of the outer shape, scale: f32 0-d); the
//                 value is data * scale.
// Either may nest (a pair of pairs).
//
// Example:
//
//   ASSIGN_OR_RETURN(Operand p, MakePair(a, b));     // a, b: f32[4]
//   p.composite->type->name();                       // "pair"
//   p.composite->inner[1].tensor;                    // b
//   Operand halves[] = {Operand::Of(a), Operand::Of(b)};
//   ASSIGN_OR_RETURN(Operand again, p.composite->type->Unflatten(
//       absl::MakeSpan(halves), p.composite->sizes, p.composite->strides));

#ifndef LATHE_RUNTIME_COMPOSITE_H_
#define LATHE_RUNTIME_COMPOSITE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/tensor.h"

namespace lathe {

class CompositeType;
struct CompositeTensor;

// One argument or result at a compiled function's boundary.
struct Operand {
  enum class Kind { kNone, kTensor, kComposite, kInt, kFloat, kBool };
  Kind kind = Kind::kNone;
  Tensor tensor;
  std::shared_ptr<const CompositeTensor> composite;
  int64_t i = 0;
  double f = 0;
  bool b = false;

  static Operand Of(Tensor t) {
    Operand o;
    o.kind = Kind::kTensor;
    o.tensor = std::move(t);
    return o;
  }
  static Operand Of(std::shared_ptr<const CompositeTensor> c) {
    Operand o;
    o.kind = Kind::kComposite;
    o.composite = std::move(c);
    return o;
  }
  static Operand Int(int64_t v) {
    Operand o;
    o.kind = Kind::kInt;
    o.i = v;
    return o;
  }
  static Operand Float(double v) {
    Operand o;
    o.kind = Kind::kFloat;
    o.f = v;
    return o;
  }
  static Operand Bool(bool v) {
    Operand o;
    o.kind = Kind::kBool;
    o.b = v;
    return o;
  }
  // "f32[4][1]cpu", "pair(f32[4][1]cpu, f32[4][1]cpu)", "3", "True",
  // "None".
  std::string ToString() const;
};

// A value of a composite type: its inner values in flatten order and the
// outer (logical) dtype, sizes and strides (held inline: building one
// allocates only the object).
struct CompositeTensor {
  const CompositeType* type = nullptr;
  absl::InlinedVector<Operand, 2> inner;
  DType dtype = DType::kFloat32;
  absl::InlinedVector<int64_t, 6> sizes, strides;
};

class CompositeType {
 public:
  virtual ~CompositeType() = default;
  // The registered name ("pair").
  virtual absl::string_view name() const = 0;
  // The inner attributes in flatten order ("a", "b").
  virtual const std::vector<std::string>& inner_names() const = 0;
  // The outer dtype for inner values of these dtypes.
  virtual DType OuterDType(absl::Span<const DType> inner) const = 0;
  // Unflatten: the composite of `inner` (moved from) with the given outer
  // sizes and strides; an error naming the type when they do not fit
  // together.
  absl::StatusOr<Operand> Unflatten(absl::Span<Operand> inner,
                                    absl::Span<const int64_t> sizes,
                                    absl::Span<const int64_t> strides) const;

 protected:
  // Whether `inner` fits `sizes` (the type's own rule); "" when it does.
  virtual std::string Mismatch(absl::Span<const Operand> inner,
                               absl::Span<const int64_t> sizes) const = 0;
};

// FindCompositeType()
//
// The registered type called `name` ("pair", "scaled_int8"), or null.
const CompositeType* FindCompositeType(absl::string_view name);

// RegisterCompositeType()
//
// Adds `type` to the registry (kept for the process's life); an error when
// its name is taken.
absl::Status RegisterCompositeType(const CompositeType* type);

// MakePair() / MakeScaledInt8()
//
// The built-in composites, with the outer geometry of their first inner
// value (contiguous strides for a composite inner value).
absl::StatusOr<Operand> MakePair(Operand a, Operand b);
absl::StatusOr<Operand> MakeScaledInt8(Tensor data, Tensor scale);

// OuterSizes()/OuterStrides() of an operand: a tensor's or a composite's.
absl::Span<const int64_t> OuterSizes(const Operand& o);
absl::Span<const int64_t> OuterStrides(const Operand& o);

}  // namespace lathe

#endif  // LATHE_RUNTIME_COMPOSITE_H_
