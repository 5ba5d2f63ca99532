#include "codegen/conv_epilogues.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/loop_ir.h"
#include "runtime/convolution.h"
#include "runtime/dtype.h"
#include "symbolic/expr.h"

namespace lathe::codegen {
namespace {

using symbolic::Expr;

// An index that is offset + sum of coef[p] * vars[p].
struct Linear {
  Expr offset;
  std::vector<Expr> coef;
};

// `index` as a linear function of `vars` (coefficients free of them), or
// nullopt when it is not one.
std::optional<Linear> LinearIn(Expr index, const std::vector<Expr>& vars) {
  absl::flat_hash_map<Expr, Expr> zero;
  for (Expr v : vars) zero[v] = symbolic::Int(0);
  absl::StatusOr<Expr> offset = symbolic::Substitute(index, zero);
  if (!offset.ok()) return std::nullopt;
  Linear l{*offset, {}};
  std::vector<Expr> terms = {l.offset};
  for (Expr v : vars) {
    absl::flat_hash_map<Expr, Expr> one = zero;
    one[v] = symbolic::Int(1);
    absl::StatusOr<Expr> at = symbolic::Substitute(index, one);
    if (!at.ok()) return std::nullopt;
    l.coef.push_back(symbolic::Sub(*at, l.offset));
    terms.push_back(symbolic::Mul(l.coef.back(), v));
  }
  if (symbolic::Add(terms) != index) return std::nullopt;
  return l;
}

// An sconv call without an epilogue, read from its geometry
// (runtime/convolution.h).
struct ConvCall {
  int64_t s = 0;
  std::vector<Expr> sizes;  // the output's: N, O, spatial...
  size_t out_at = 0;        // the output's offset, then its strides
  size_t epilogue_at = 0;
};

std::optional<ConvCall> ReadConvCall(const Kernel& k) {
  if (k.kind != Kernel::Kind::kExtern || k.routine != "sconv" ||
      k.extern_buffers.size() != 3 || k.extern_args.empty() ||
      k.extern_args[0].kind() != symbolic::ExprKind::kInteger) {
    return std::nullopt;
  }
  ConvCall c;
  c.s = k.extern_args[0].int_value();
  const std::vector<Expr>& a = k.extern_args;
  if (c.s < 1 || c.s > 3 ||
      static_cast<int64_t>(a.size()) != SconvGeometrySize(c.s)) {
    return std::nullopt;
  }
  c.epilogue_at = static_cast<size_t>(SconvEpilogueAt(c.s));
  if (a[c.epilogue_at] != symbolic::Int(0) ||
      a[c.epilogue_at + 1] != symbolic::Int(0)) {
    return std::nullopt;
  }
  c.sizes = {a[2], a[4]};
  for (int64_t d = 0; d < c.s; ++d) c.sizes.push_back(a[5 + 2 * c.s + d]);
  c.out_at = static_cast<size_t>(5 + 6 * c.s + 2 * (3 + c.s));
  return c;
}

// What an epilogue kernel does to the convolution's result.
struct Epilogue {
  int bias = -1;      // the bias's buffer
  int residual = -1;  // the residual's buffer (kSconvPostAdd)
  Expr residual_index;
  std::vector<int64_t> post;      // kSconvPost*, in order
  std::vector<std::string> what;  // for the log
  int out = -1;                   // the store's buffer
  Expr out_index;
};

// The epilogue kernel `k` applies to sconv call `c`'s output buffer `conv`,
// where `at` is the element each output dim's loop is at; nullopt when `k`
// is anything more (or less) than one.
std::optional<Epilogue> MatchEpilogue(const Kernel& k, const Program& p,
                                      int conv, const std::vector<Expr>& at,
                                      Expr conv_index) {
  const std::vector<int> users = Users(k);
  const Expr channel = at[1];
  Epilogue e;
  int value = -1;  // the op holding the epilogue's value so far
  int consumed = 0, loads = 0;
  auto f32 = [&](int buffer) {
    return p.buffers[buffer].dtype == DType::kFloat32;
  };
  for (int i = 0; i < static_cast<int>(k.ops.size()); ++i) {
    const ScalarOp& op = k.ops[i];
    if (op.kind == ScalarOp::Kind::kLoad) {
      if (op.dtype != DType::kFloat32 || IsIndirect(op) || !f32(op.buffer) ||
          users[i] != 1) {
        return std::nullopt;
      }
      if (op.buffer != conv) {
        ++loads;
        continue;
      }
      if (value >= 0 || op.index != conv_index) return std::nullopt;
      value = i;
      continue;
    }
    if (value < 0 || users[value] != 1) return std::nullopt;
    if (op.kind == ScalarOp::Kind::kStore) {
      if (e.out >= 0 || op.masked || IsIndirect(op) || op.args[0] != value ||
          !f32(op.buffer)) {
        return std::nullopt;
      }
      e.out = op.buffer;
      e.out_index = op.index;
      continue;
    }
    // Relu ends the forms oneDNN runs as post-ops of the convolution's own
    // implementation: (bias), (residual), (relu).
    if (op.kind != ScalarOp::Kind::kCall || op.dtype != DType::kFloat32 ||
        e.out >= 0 || (!e.post.empty() && e.post.back() == kSconvPostRelu)) {
      return std::nullopt;
    }
    if (op.fn == "relu" && op.args.size() == 1 && op.args[0] == value) {
      e.post.push_back(kSconvPostRelu);
      e.what.push_back("relu");
    } else if (op.fn == "add" && op.args.size() == 2 &&
               (op.args[0] == value) != (op.args[1] == value)) {
      const ScalarOp& t = k.ops[op.args[op.args[0] == value ? 1 : 0]];
      if (t.kind != ScalarOp::Kind::kLoad || t.buffer == conv) {
        return std::nullopt;
      }
      ++consumed;
      if (e.bias < 0 && e.post.empty() && t.index == channel) {
        e.bias = t.buffer;
        e.what.push_back("bias");
      } else if (e.residual < 0) {
        e.residual = t.buffer;
        e.residual_index = t.index;
        e.post.push_back(kSconvPostAdd);
        e.what.push_back("residual");
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    value = i;
  }
  if (e.out < 0 || consumed != loads) return std::nullopt;
  return e;
}

// The strides of a linear index along each output dim, where loop p runs
// over dim_of[p] (1 for a unit dim the loops dropped, which any stride
// serves).
std::vector<Expr> StridesOf(const Linear& l, const std::vector<int>& dim_of,
                            size_t rank) {
  std::vector<Expr> strides(rank, symbolic::Int(1));
  for (size_t p = 0; p < dim_of.size(); ++p) strides[dim_of[p]] = l.coef[p];
  return strides;
}

// Fuses kernel i + 1 into sconv call i when it is its epilogue; the log
// line, or nullopt.
std::optional<std::string> TryFuse(LoweredGraph& g, size_t i) {
  Program& p = g.program;
  if (i + 1 >= p.kernels.size()) return std::nullopt;
  Kernel& call = p.kernels[i];
  const Kernel& k = p.kernels[i + 1];
  std::optional<ConvCall> c = ReadConvCall(call);
  if (!c.has_value() || k.kind != Kernel::Kind::kLoops ||
      k.sections.size() != 1 || !k.sections[0].vars.empty()) {
    return std::nullopt;
  }
  const int conv = call.extern_buffers[0];
  const int x = call.extern_buffers[1], w = call.extern_buffers[2];
  if (p.buffers[conv].kind != Buffer::Kind::kAllocated) return std::nullopt;
  for (const LoweredOutput& o : g.outputs) {
    if (o.buffer == conv) return std::nullopt;
  }
  // Nothing but the epilogue reads the convolution's result.
  for (size_t j = 0; j < p.kernels.size(); ++j) {
    if (j == i || j == i + 1) continue;
    for (const ScalarOp& op : p.kernels[j].ops) {
      if (op.buffer == conv) return std::nullopt;
    }
    for (int b : p.kernels[j].extern_buffers) {
      if (b == conv) return std::nullopt;
    }
  }
  // The loops are the output's dims in order (those of extent 1 maybe
  // dropped), each loop variable x<p> at its own place.
  const size_t rank = c->sizes.size();
  std::vector<int> dims;
  for (bool all : {true, false}) {
    dims.clear();
    for (size_t d = 0; d < rank; ++d) {
      if (all || c->sizes[d] != symbolic::Int(1)) {
        dims.push_back(static_cast<int>(d));
      }
    }
    if (dims.size() == k.vars.size()) break;
  }
  if (dims.size() != k.vars.size()) return std::nullopt;
  // Loop variable x<j> runs over dims[j]; the scheduler may have moved it
  // (k.vars[p] is x<j> at some p), so dim_of[p] is the loop's dim.
  std::vector<Expr> at(rank, symbolic::Int(0));
  std::vector<int> dim_of(k.vars.size(), -1);
  for (size_t p = 0; p < k.vars.size(); ++p) {
    for (size_t j = 0; j < dims.size(); ++j) {
      if (k.vars[p] == IndexVar(static_cast<int>(j))) dim_of[p] = dims[j];
    }
    if (dim_of[p] < 0 || at[dim_of[p]] != symbolic::Int(0) ||
        k.ranges[p] != c->sizes[dim_of[p]]) {
      return std::nullopt;
    }
    at[dim_of[p]] = k.vars[p];
  }
  std::vector<Expr> conv_terms = {call.extern_args[c->out_at]};
  for (size_t d = 0; d < rank; ++d) {
    conv_terms.push_back(
        symbolic::Mul(call.extern_args[c->out_at + 1 + d], at[d]));
  }
  std::optional<Epilogue> e =
      MatchEpilogue(k, p, conv, at, symbolic::Add(conv_terms));
  if (!e.has_value()) return std::nullopt;
  // The output is none of the call's operands; a residual that is the
  // output itself, at the same element, is the accumulate post-op.
  if (e->out == x || e->out == w || e->out == e->bias) return std::nullopt;
  if (e->residual == e->out) {
    if (e->residual_index != e->out_index) return std::nullopt;
    for (int64_t& op : e->post) {
      if (op == kSconvPostAdd) op = kSconvPostAccumulate;
    }
    e->residual = -1;
  }
  std::optional<Linear> out = LinearIn(e->out_index, k.vars);
  std::optional<Linear> residual;
  if (e->residual >= 0) {
    residual = LinearIn(e->residual_index, k.vars);
    if (!residual.has_value()) return std::nullopt;
  }
  if (!out.has_value()) return std::nullopt;

  // The call writes the finished values where the kernel stored them.
  std::vector<Expr>& a = call.extern_args;
  a[c->out_at] = out->offset;
  const std::vector<Expr> out_strides = StridesOf(*out, dim_of, rank);
  for (size_t d = 0; d < rank; ++d) a[c->out_at + 1 + d] = out_strides[d];
  a[c->epilogue_at] = symbolic::Int(e->bias >= 0 ? 1 : 0);
  a[c->epilogue_at + 1] = symbolic::Int(static_cast<int64_t>(e->post.size()));
  for (size_t n = 0; n < e->post.size(); ++n) {
    a[c->epilogue_at + 2 + n] = symbolic::Int(e->post[n]);
  }
  const size_t r_at = c->epilogue_at + 2 + kSconvMaxPostOps;
  if (residual.has_value()) {
    a[r_at] = residual->offset;
    const std::vector<Expr> rs = StridesOf(*residual, dim_of, rank);
    for (size_t d = 0; d < rank; ++d) a[r_at + 1 + d] = rs[d];
  }
  call.extern_buffers = {e->out, x, w};
  if (e->bias >= 0) call.extern_buffers.push_back(e->bias);
  if (e->residual >= 0) call.extern_buffers.push_back(e->residual);
  call.fused_from.push_back(k.name);
  call.fused_from.insert(call.fused_from.end(), k.fused_from.begin(),
                         k.fused_from.end());
  call.nodes.insert(call.nodes.end(), k.nodes.begin(), k.nodes.end());
  std::string line =
      absl::StrCat("fuse ", k.name, " into ", call.name,
                   ": the convolution's epilogue as its post-ops (",
                   absl::StrJoin(e->what, ", "),
                   std::find(e->post.begin(), e->post.end(),
                             kSconvPostAccumulate) != e->post.end()
                       ? ", into the residual's buffer"
                       : "",
                   ")");
  p.kernels.erase(p.kernels.begin() + static_cast<std::ptrdiff_t>(i + 1));
  return line;
}

}  // namespace

void FuseConvEpilogues(LoweredGraph& lowered, std::vector<std::string>* log) {
  for (size_t i = 0; i < lowered.program.kernels.size(); ++i) {
    if (std::optional<std::string> line = TryFuse(lowered, i)) {
      log->push_back(*std::move(line));
    }
  }
}

}  // namespace lathe::codegen
