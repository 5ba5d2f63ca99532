// The runtime checks and host steps of lowering: check ids, index checks,
// bind and assert steps, views outside their buffer, element counts.

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check.h"
#include "codegen/lower/lowerer.h"
#include "codegen/scalar_ops.h"
#include "ir/alias_info.h"
#include "ir/infer_meta.h"
#include "ir/ops_util.h"
#include "runtime/kernel_abi.h"
#include "status_macros.h"
#include "symbolic/printer.h"

namespace lathe::codegen::lower {

int Lowerer::CheckId(const std::string& message) {
  auto [it, added] = check_ids_.emplace(message, program_.checks.size());
  if (added) program_.checks.push_back(message);
  return static_cast<int>(it->second);
}

int Lowerer::CheckIndex(KernelBuilder& kb, const Node& n, int value, Expr size,
                        bool wrap, int64_t dim) {
  UseSymbols({size});
  // The kernel reports the index (before wrapping) as value 0 and the size
  // as value 1; the words are the interpreter's for the op.
  std::string index = "{0:?}";
  std::string extent = size.kind() == symbolic::ExprKind::kInteger
                           ? symbolic::ToString(size)
                           : absl::StrCat("{1:", symbolic::ToString(size), "}");
  const std::string target(n.target());
  std::string words;
  if (target == "aten.index_select.default" ||
      target == "aten.embedding.default") {
    words = ir::IndexOutOfRangeInSelf(index, extent);
  } else if (target == "aten.nll_loss_forward.default") {
    words = ir::TargetOutOfBounds(index);
  } else if (target == "aten.masked_scatter.default") {
    words = ir::MaskedScatterSourceTooSmall();
  } else {
    words = ir::IndexOutOfBounds(index, dim, extent);
  }
  std::string message =
      absl::StrCat("node '", n.name(), "': ", target, ": ", words);
  ScalarOp op;
  op.kind = ScalarOp::Kind::kCheckIndex;
  op.dtype = DType::kInt64;
  op.args = {kb.Cast(value, DType::kInt64)};
  op.index = size;
  op.i = CheckId(message);
  op.wrap = wrap;
  return kb.Add(std::move(op));
}

bool Lowerer::IsBound(Expr s) {
  if (bound_.contains(s)) return true;
  for (Node* p : graph_.Placeholders()) {
    for (Expr q : Meta(p).Symbols()) {
      if (q == s) return true;
    }
  }
  return false;
}

void Lowerer::EmitBind(Expr s, int b, Expr value) {
  Kernel k;
  k.name = absl::StrCat("k", kernel_count_++);
  k.kind = Kernel::Kind::kBind;
  if (b >= 0) k.extern_buffers = {b};
  if (b >= 0 && s.is_int()) {
    // An int read from data may size buffers: outside int32's range it
    // stops the program (no size expression over it can overflow then).
    std::string message = absl::StrCat(
        "node '", current_ != nullptr ? current_->name() : "", "': the ",
        "data-dependent ", symbolic::ToString(s),
        " is outside [-2^31, 2^31), the values the compiled program admits");
    k.check = CheckId(message);
  }
  k.extern_outputs = 0;
  k.symbol = s;
  k.value = value;
  UseSymbols({value});
  UseSymbol(s);
  bound_.insert(s);
  if (b >= 0) read_from_data_.insert(s);
  if (b < 0) bound_values_[s] = value;
  Emit(std::move(k));
}

void Lowerer::EmitAssert(Expr cond, const std::string& message,
                         std::vector<Expr> values) {
  Kernel k;
  k.name = absl::StrCat("k", kernel_count_++);
  k.kind = Kernel::Kind::kAssert;
  k.value = cond;
  k.check = CheckId(message);
  UseSymbols({cond});
  UseSymbols(values);
  k.check_values = std::move(values);
  Emit(std::move(k));
}

std::string Lowerer::CheckHole(Expr e, std::vector<Expr>* values) {
  std::string text = symbolic::ToString(e);
  if (e.kind() == symbolic::ExprKind::kInteger ||
      values->size() >= LATHE_CHECK_VALUES) {
    return text;
  }
  values->push_back(e);
  return absl::StrCat("{", values->size() - 1, ":", text, "}");
}

absl::Status Lowerer::CheckViewInBuffer(const Node& n, int b,
                                        const std::vector<Expr>& sizes,
                                        const std::vector<Expr>& strides,
                                        Expr offset) {
  auto fail = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", n.name(), "': ", what));
  };
  std::vector<Expr> conds, empty;
  for (size_t d = 0; d < strides.size(); ++d) {
    Expr nonneg = symbolic::Ge(strides[d], symbolic::Int(0));
    if (env_.MaybeEvaluateStatic(nonneg) == symbolic::Bool(false)) {
      return fail(absl::StrCat("negative stride ",
                               symbolic::ToString(strides[d]), " in dimension ",
                               d));
    }
    conds.push_back(nonneg);
  }
  Expr nonneg = symbolic::Ge(offset, symbolic::Int(0));
  if (env_.MaybeEvaluateStatic(nonneg) == symbolic::Bool(false)) {
    return fail(
        absl::StrCat("negative storage offset ", symbolic::ToString(offset)));
  }
  conds.push_back(nonneg);
  Expr end = symbolic::Add(offset, symbolic::Int(1));
  for (size_t d = 0; d < sizes.size(); ++d) {
    end = symbolic::Add(
        end,
        symbolic::Mul(symbolic::Sub(sizes[d], symbolic::Int(1)), strides[d]));
    empty.push_back(symbolic::Eq(sizes[d], symbolic::Int(0)));
  }
  const Buffer& buffer = program_.buffers[b];
  empty.push_back(symbolic::Le(end, buffer.numel));
  conds.push_back(symbolic::Or(empty));
  Expr cond = symbolic::And(conds);
  std::optional<Expr> known = env_.MaybeEvaluateStatic(cond);
  if (!known.has_value() && !bound_values_.empty()) {
    // A symbol bound to an expression (a clamped slice length) may prove
    // the view in bounds through that expression.
    absl::StatusOr<Expr> through = symbolic::Substitute(cond, bound_values_);
    if (through.ok() &&
        env_.MaybeEvaluateStatic(*through) == symbolic::Bool(true)) {
      return absl::OkStatus();
    }
  }
  if (known == symbolic::Bool(true)) return absl::OkStatus();
  Expr item = symbolic::Int(ItemSize(buffer.dtype));
  // At compile time the message spells what is symbolic; the host check's
  // holes take the values.
  std::vector<Expr> values;
  auto spell = [&](Expr e) {
    return known.has_value() ? symbolic::ToString(e) : CheckHole(e, &values);
  };
  auto list = [&](const std::vector<Expr>& es) {
    std::vector<std::string> parts;
    for (Expr e : es) parts.push_back(spell(e));
    return absl::StrJoin(parts, ", ");
  };
  std::string message = absl::StrCat(
      "view of ", spell(symbolic::Mul(end, item)), " bytes (sizes [",
      list(sizes), "], strides [", list(strides), "], offset ", spell(offset),
      ") exceeds its storage of ", spell(symbolic::Mul(buffer.numel, item)),
      " bytes");
  if (known.has_value()) return fail(message);
  // Not known for every size: the host function checks it, for every view
  // (as the interpreter checks every view it makes).
  EmitAssert(cond, absl::StrCat("node '", n.name(), "': ", message),
             std::move(values));
  return absl::OkStatus();
}

void Lowerer::CheckDataDependentSizes(const Node& n,
                                      const ir::ValueMeta& meta) {
  if (meta.kind == ir::ValueMeta::Kind::kTuple) {
    for (const ir::ValueMeta& e : meta.elements) {
      CheckDataDependentSizes(n, e);
    }
    return;
  }
  if (meta.kind != ir::ValueMeta::Kind::kTensor) return;
  for (Expr size : meta.tensor.sizes) {
    bool data_dependent = false;
    for (Expr s : symbolic::FreeSymbols(size)) {
      data_dependent |= read_from_data_.contains(s);
    }
    if (!data_dependent || !checked_sizes_.insert(size).second) continue;
    std::vector<Expr> values;
    std::string hole = CheckHole(size, &values);
    std::vector<std::string> spelled;
    for (Expr s : meta.tensor.sizes) {
      spelled.push_back(s == size ? hole : CheckHole(s, &values));
    }
    std::string message =
        absl::StrCat("node '", n.name(), "': ", n.target(), ": ",
                     ir::NegativeDimension(hole, spelled));
    EmitAssert(symbolic::Ge(size, symbolic::Int(0)), message,
               std::move(values));
  }
}

absl::Status Lowerer::CheckElements(const Node& n, const TensorMeta& m,
                                    bool result) {
  const int64_t limit = ir::MaxOpElements();
  Expr numel = symbolic::Int(1);
  std::vector<Expr> factors;
  int symbolic_sizes = 0;
  bool from_data = false;
  int64_t constant = 1;  // the product of the constant sizes, up to 2^40
  for (Expr size : m.sizes) {
    numel = symbolic::Mul(numel, size);
    factors.push_back(symbolic::ToFloat(size));
    if (size.kind() == symbolic::ExprKind::kInteger) {
      constant = std::min<int64_t>(
          int64_t{1} << 40,
          constant * std::min<int64_t>(size.int_value(), int64_t{1} << 40));
      continue;
    }
    ++symbolic_sizes;
    for (Expr s : symbolic::FreeSymbols(size)) {
      from_data |= read_from_data_.contains(s);
    }
  }
  std::optional<Expr> over =
      env_.MaybeEvaluateStatic(symbolic::Gt(numel, symbolic::Int(limit)));
  if (over == symbolic::Bool(true)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", n.name(), "': ",
        ir::TooManyElements(n.target(), result, numel, m.dtype, m.sizes)));
  }
  // One symbolic size is an input's (which holds that many elements
  // already) or an int read from data (int32's range, which only a large
  // constant factor takes past the limit).
  bool may_exceed =
      symbolic_sizes >= 2 || (from_data && constant > (limit >> 31));
  // A count the ranges keep under the limit is checked all the same: a
  // range's bounds are the guards' data (CallSignature::guard_bounds), so a
  // graph that differs only in a range (Dynamo's second graph of a model
  // once a batch passes its fake convolution's bound) compiles to the same
  // source, whose library the compile cache already holds. The check is a
  // few multiplies per call.
  if (!may_exceed || !checked_numels_.insert(numel).second) {
    return absl::OkStatus();
  }
  // The count is reported as the float product the check compares
  // (saturated to int64), not as an int64 product that could overflow.
  Expr product = symbolic::Mul(factors);
  std::vector<Expr> values = {product};
  std::string count = absl::StrCat("{0:", symbolic::ToString(numel), "}");
  std::vector<std::string> spelled;
  for (Expr size : m.sizes) spelled.push_back(CheckHole(size, &values));
  std::string message = absl::StrCat(
      "node '", n.name(),
      "': ", ir::TooManyElements(n.target(), result, count, m.dtype, spelled));
  EmitAssert(symbolic::Le(product, symbolic::Float(static_cast<double>(limit))),
             message, std::move(values));
  return absl::OkStatus();
}

}  // namespace lathe::codegen::lower
