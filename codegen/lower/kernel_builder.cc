#include "codegen/lower/kernel_builder.h"

#include <vector>

#include "ir/ops_util.h"
#include "symbolic/expr.h"

namespace lathe::codegen::lower {

Expr Linear(const std::vector<Expr>& idx, const std::vector<Expr>& strides,
            Expr offset) {
  std::vector<Expr> terms = {offset};
  for (size_t d = 0; d < idx.size(); ++d) {
    terms.push_back(symbolic::Mul(idx[d], strides[d]));
  }
  return symbolic::Add(terms);
}

std::vector<Expr> Contiguous(const std::vector<Expr>& sizes) {
  return ir::ContiguousStrides(sizes);
}

// Elements a storage needs so that every index of the layout is inside.
Expr StorageNumel(const std::vector<Expr>& sizes,
                  const std::vector<Expr>& strides, Expr offset) {
  std::vector<Expr> terms = {offset, symbolic::Int(1)};
  std::vector<Expr> numel = {symbolic::Int(1)};
  for (size_t d = 0; d < sizes.size(); ++d) {
    terms.push_back(
        symbolic::Mul(symbolic::Sub(sizes[d], symbolic::Int(1)), strides[d]));
    numel.push_back(sizes[d]);
  }
  // An empty tensor needs nothing: max(0, ...) keeps the formula valid.
  return symbolic::Max(
      symbolic::Int(0),
      symbolic::Mul(symbolic::Min(symbolic::Int(1), symbolic::Mul(numel)),
                    symbolic::Add(terms)));
}

bool IsOne(Expr e) { return e == symbolic::Int(1); }

}  // namespace lathe::codegen::lower
