// -----------------------------------------------------------------------------
// File: ops_util.h
// -----------------------------------------------------------------------------
//
// What op meta functions and kernels share: PyTorch's type promotion
// (including wrapped Python numbers), broadcasting of symbolic shapes,
// dimension wrapping, contiguous metadata, and element access.
//
// Example:
//
//   ASSIGN_OR_RETURN(DType out, ResultType({self, other}));
//   ASSIGN_OR_RETURN(std::vector<Expr> shape, BroadcastShapes(call, {a, b}));

#ifndef LATHE_IR_OPS_UTIL_H_
#define LATHE_IR_OPS_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/op_registry.h"
#include "ir/tensor_meta.h"
#include "ir/value.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"
#include "symbolic/expr.h"

namespace lathe::ir {

// PromoteTypes()
//
// PyTorch's promote_types for two dtypes.
DType PromoteTypes(DType a, DType b);

// ResultType()
//
// PyTorch's result_type over tensors and numbers: dimensioned tensors win
// over 0-d tensors, which win over Python numbers, unless a lower priority
// operand is of a higher category (bool < int < float); a float number with
// integer tensors gives the default dtype (float32). None values are skipped.
absl::StatusOr<DType> ResultType(absl::Span<const Value> operands);

// ScalarTypeName()
//
// The C++ name PyTorch's kernel errors use: "Float", "Long", "BFloat16", ...
absl::string_view ScalarTypeName(DType dtype);

// TypeMetaName()
//
// The C++ type name PyTorch's caffe2::TypeMeta gives a dtype in some
// messages: "float", "long int", "c10::Half", "bool", ...
absl::string_view TypeMetaName(DType dtype);

// InplaceCastMessage()
//
// PyTorch's refusal of an in-place result of dtype `result` into `self`:
// "result type Float can't be cast to the desired output type Long" (the
// Scalar clamp family names the output type as TypeMeta does: "long int").
std::string InplaceCastMessage(const OpSchema& schema, DType result,
                               DType self);

// The dtype, rank and (symbolic) sizes of a tensor value, concrete or meta.
DType DTypeOf(const Value& v);
Device DeviceOf(const Value& v);
int64_t RankOf(const Value& v);
std::vector<symbolic::Expr> SizesOf(const Value& v);
std::vector<symbolic::Expr> StridesOf(const Value& v);

// BroadcastShapes()
//
// The broadcast of `shapes` (right-aligned; 1 stretches); equal symbolic
// sizes are checked with a guard through the call's ShapeEnv.
absl::StatusOr<std::vector<symbolic::Expr>> BroadcastShapes(
    const OpCall& call, absl::Span<const std::vector<symbolic::Expr>> shapes);

// Decide()
//
// The truth of `cond`: concrete, or decided by guarding through the call's
// ShapeEnv (an error when running without one).
absl::StatusOr<bool> Decide(const OpCall& call, symbolic::Expr cond);

// WrapDim()
//
// A dimension in [-rank, rank) as [0, rank), with PyTorch's message
// otherwise. A 0-d tensor accepts 0 and -1.
absl::StatusOr<int64_t> WrapDim(const OpCall& call, int64_t dim, int64_t rank);

// Contiguous()
//
// Row-major strides for symbolic sizes.
std::vector<symbolic::Expr> ContiguousStrides(
    absl::Span<const symbolic::Expr> sizes);

// CheckInternalOverlap()
//
// TensorIterator's refusal of a written-to `self` whose elements overlap (a
// stride-0 dim of size > 1; an empty self has none), with PyTorch's
// message.
absl::Status CheckInternalOverlap(const OpCall& call, const Value& self);

// MetaResult()
//
// A contiguous TensorMeta result.
Value MetaResult(DType dtype, Device device, std::vector<symbolic::Expr> sizes);

// ResultOrEmpty()
//
// A result with `strides` (contiguous when empty): a new uninitialized
// tensor when `running` (the interpreter), its metadata otherwise.
absl::StatusOr<Value> ResultOrEmpty(const OpCall& call, bool running,
                                    DType dtype, Device device,
                                    std::vector<symbolic::Expr> sizes,
                                    std::vector<symbolic::Expr> strides = {});

// "[s0, 3]".
std::string ShapeString(absl::Span<const symbolic::Expr> sizes);

// SetMaxOpElements() / MaxOpElements()
//
// The most elements a tensor an op takes or makes may have (default 2^40;
// lathec --max-elements): past it one kernel would run for hours, or a fused
// one escape --max-memory. A view op takes and makes none (it only
// describes); both backends refuse the rest, the interpreter before the op
// runs and the cpu backend at compile time or in the host function.
void SetMaxOpElements(int64_t n);
int64_t MaxOpElements();

// TooManyElements()
//
// The error op `target` gets for an input (or, when `result`, a result) of
// `numel` elements, `dtype` and `sizes`, past MaxOpElements().
std::string TooManyElements(absl::string_view target, bool result,
                            symbolic::Expr numel, DType dtype,
                            absl::Span<const symbolic::Expr> sizes);
// The same with `numel` and `sizes` already spelled (a compiled check's
// message template spells them as holes for their values).
std::string TooManyElements(absl::string_view target, bool result,
                            absl::string_view numel, DType dtype,
                            absl::Span<const std::string> sizes);

// NegativeDimension()
//
// PyTorch's error for a tensor of `sizes` with the negative size `size`
// ("... negative dimension -1: [2, -1]").
std::string NegativeDimension(symbolic::Expr size,
                              absl::Span<const symbolic::Expr> sizes);
// The same with `size` and `sizes` already spelled (a compiled check's
// message template spells them as holes for their values).
std::string NegativeDimension(absl::string_view size,
                              absl::Span<const std::string> sizes);

// IndexOutOfBounds()
//
// The error of gather, scatter, index.Tensor and their kin for an index
// outside dimension `dim` of `size` (`index` and `size` spelled).
std::string IndexOutOfBounds(absl::string_view index, int64_t dim,
                             absl::string_view size);

// TargetOutOfBounds()
//
// nll_loss's error for a class `index` outside the input's classes.
std::string TargetOutOfBounds(absl::string_view index);

// MaskedScatterSourceTooSmall()
//
// masked_scatter's error when the mask selects more elements than the
// source has.
std::string MaskedScatterSourceTooSmall();

// IndexOutOfRangeInSelf()
//
// index_select's and embedding's error for an index outside `size`.
std::string IndexOutOfRangeInSelf(absl::string_view index,
                                  absl::string_view size);

// RowMajorValues() / WriteRowMajor()
//
// A tensor's elements in row-major order as doubles, whatever its strides;
// and `values` (row-major) written into `t` through its strides, each
// rounded to t's dtype.
std::vector<double> RowMajorValues(const Tensor& t);
void WriteRowMajor(const Tensor& t, const std::vector<double>& values);

// IntElements()
//
// An integer (or bool) tensor's elements in row-major order, exactly.
std::vector<int64_t> IntElements(const Tensor& t);

// CheckSpatialTarget()
//
// nll_loss2d's size check: a target [N, H, W] for an input [N, C, H, W];
// otherwise PyTorch's error naming both sizes.
absl::Status CheckSpatialTarget(const OpCall& call,
                                const std::vector<symbolic::Expr>& input,
                                const std::vector<symbolic::Expr>& target);

// CheckResultElements()
//
// TooManyElements() for `call`'s result of `sizes`, before it is allocated
// (a count past int64 is reported as int64's largest value, as the cpu
// backend's host function reports it).
absl::Status CheckResultElements(const OpCall& call, DType dtype,
                                 absl::Span<const int64_t> sizes);

// OutputMask()
//
// A backward op's bool[n] output_mask argument.
absl::StatusOr<std::vector<bool>> OutputMask(const OpCall& call, size_t n);

// SameShape()
//
// Whether two shapes are the same, each dim decided with Decide().
absl::StatusOr<bool> SameShape(const OpCall& call,
                               const std::vector<symbolic::Expr>& a,
                               const std::vector<symbolic::Expr>& b);

// ConcreteSizes()
//
// Sizes as integers: the interpreter's are concrete; during shape
// propagation a symbolic one is specialized to its hint with a guard (as
// PyTorch does where a meta function needs a number, e.g. split's chunk
// count).
absl::StatusOr<std::vector<int64_t>> ConcreteSizes(
    const OpCall& call, absl::Span<const symbolic::Expr> sizes);

// BroadcastView()
//
// `t` viewed with `sizes` (stride 0 on stretched dimensions).
absl::StatusOr<Tensor> BroadcastView(const Tensor& t,
                                     absl::Span<const int64_t> sizes);

// Load()/Store()
//
// Element `index` of a tensor as a double or an int64 (exact for ints), and
// stored with PyTorch's conversion.
double LoadDouble(const Tensor& t, absl::Span<const int64_t> index);
int64_t LoadInt(const Tensor& t, absl::Span<const int64_t> index);
void StoreDouble(const Tensor& t, absl::Span<const int64_t> index, double v);
void StoreInt(const Tensor& t, absl::Span<const int64_t> index, int64_t v);

// ElementAccess
//
// Loads and stores of one tensor's elements by element offset (from its
// storage's start), with the conversions of LoadDouble, LoadInt,
// StoreDouble and StoreInt, for loops that step through a tensor's memory
// themselves (ForEachRow) instead of indexing it element by element.
class ElementAccess {
 public:
  explicit ElementAccess(const Tensor& t);
  double LoadDouble(int64_t offset) const { return load_double_(At(offset)); }
  int64_t LoadInt(int64_t offset) const { return load_int_(At(offset)); }
  void StoreDouble(int64_t offset, double v) const {
    store_double_(At(offset), v);
  }
  void StoreInt(int64_t offset, int64_t v) const { store_int_(At(offset), v); }
  // LoadDouble of the n elements from `offset`, `step` elements apart, into
  // `out`.
  void LoadDoubles(int64_t offset, int64_t step, int64_t n, double* out) const {
    load_doubles_(At(offset), step * item_, n, out);
  }
  // StoreDouble of `in`'s n values into the elements from `offset`, `step`
  // elements apart.
  void StoreDoubles(int64_t offset, int64_t step, int64_t n,
                    const double* in) const {
    store_doubles_(At(offset), step * item_, n, in);
  }

 private:
  char* At(int64_t offset) const { return base_ + offset * item_; }

  char* base_;
  int64_t item_;
  void (*load_doubles_)(const char*, int64_t, int64_t, double*);
  void (*store_doubles_)(char*, int64_t, int64_t, const double*);
  double (*load_double_)(const char*);
  int64_t (*load_int_)(const char*);
  void (*store_double_)(char*, double);
  void (*store_int_)(char*, int64_t);
};

// ForEachRow()
//
// The indices of `sizes` in row-major order, a row (the last dimension) at
// a time: calls `f(starts, n)` with each of `tensors`' element offset at the
// row's first index (every tensor has `sizes`: broadcast views of the
// operands, the result) and the row's length n; along the row a tensor's
// elements are its strides().back() apart. Each row's first index is
// bounds-checked as Tensor::ElementOffset checks.
template <typename F>
void ForEachRow(absl::Span<const int64_t> sizes,
                absl::Span<const Tensor* const> tensors, F&& f) {
  if (Numel(sizes) == 0) return;
  const size_t rank = sizes.size();
  const int64_t n = rank == 0 ? 1 : sizes[rank - 1];
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> starts(tensors.size());
  ForEachIndex(sizes.subspan(0, rank == 0 ? 0 : rank - 1),
               [&](absl::Span<const int64_t> outer) {
                 std::copy(outer.begin(), outer.end(), index.begin());
                 for (size_t k = 0; k < tensors.size(); ++k) {
                   starts[k] = tensors[k]->ElementOffset(index);
                 }
                 f(absl::Span<const int64_t>(starts), n);
               });
}

// CopyElement()
//
// dst[dst_index] = src[src_index], converted to dst's dtype.
void CopyElement(const Tensor& dst, absl::Span<const int64_t> dst_index,
                 const Tensor& src, absl::Span<const int64_t> src_index);

// CopyInto()
//
// Writes `src` (broadcast to `dst`'s shape, converted to its dtype) into
// `dst` through its strides.
absl::Status CopyInto(const Tensor& dst, const Tensor& src);

// A number value as a 0-d tensor of `dtype` (for kernels).
absl::StatusOr<Tensor> ScalarTensor(const Value& number, DType dtype);

// AsMeta()
//
// A tensor value as its metadata (other values as they are).
Value AsMeta(const Value& v);

// ResultMetaOf()
//
// The op's meta function on the call's arguments as metadata (AsMeta): the
// dtype, sizes and strides of the result its kernel gives, and the errors it
// reports before computing (for a kernel that stands in for it).
absl::StatusOr<Value> ResultMetaOf(const OpCall& c);

// CallOp()
//
// Another op's kernel (`running`) or meta function on `args` and `kwargs`
// (bound to its schema, defaults filled), within the call `c` (its ShapeEnv
// and generator); the callee's errors are reported as c's.
absl::StatusOr<Value> CallOp(
    const OpCall& c, bool running, absl::string_view target,
    std::vector<Value> args,
    std::vector<std::pair<std::string, Value>> kwargs = {});

}  // namespace lathe::ir

#endif  // LATHE_IR_OPS_UTIL_H_
