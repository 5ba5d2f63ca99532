#include "codegen/cuda/cuda_emitter.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/scalar_code.h"
#include "codegen/scalar_ops.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"

namespace lathe::codegen {
namespace {

using symbolic::Expr;

// A kernel counting in int32 keeps this much room below 2^31 for its
// grid-stride step (at most kCudaBlock * kCudaMaxBlocks).
constexpr int64_t kInt32Work =
    (int64_t{1} << 31) - int64_t{kCudaBlock} * kCudaMaxBlocks;

// What no pointwise CUDA kernel does yet, or "" when `k` is one.
std::string Unsupported(const Kernel& k) {
  if (k.kind == Kernel::Kind::kExtern) {
    return absl::StrCat("the library call ", k.routine);
  }
  for (const Section& s : k.sections) {
    if (!s.vars.empty()) return "a reduction or a scan (inner loops)";
  }
  for (const ScalarOp& op : k.ops) {
    switch (op.kind) {
      case ScalarOp::Kind::kReduce:
        return "a reduction";
      case ScalarOp::Kind::kScan:
        return "a scan";
      case ScalarOp::Kind::kCheckIndex:
        return "indexing by loaded values";
      default:
        if (IsIndirect(op)) return "indexing by loaded values";
    }
  }
  return "";
}

// How much `e` grows as `var` steps by one, or null when that depends on
// a loop variable (e is not affine in var).
Expr Step(Expr e, Expr var, const absl::flat_hash_set<Expr>& runtime) {
  absl::StatusOr<Expr> next =
      symbolic::Substitute(e, {{var, symbolic::Add(var, symbolic::Int(1))}});
  if (!next.ok()) return Expr();
  const Expr d = symbolic::Expand(symbolic::Sub(*next, e));
  for (Expr s : symbolic::FreeSymbols(d)) {
    if (!runtime.count(s)) return Expr();
  }
  return d;
}

// Whether access `op` of `k` may move `width` elements at once: its index
// steps by one with the innermost loop variable and is a multiple of
// `width` wherever that variable is, at every point of the other loops.
// What only the runtime sizes decide (`runtime`: the program's symbols) is
// added to `checks`: expressions the kernel tests are multiples of width.
bool Contiguous(const Kernel& k, const ScalarOp& op, int width,
                const absl::flat_hash_set<Expr>& runtime,
                std::vector<Expr>* checks) {
  if (op.index.is_null() || op.masked || IsIndirect(op)) return false;
  const Expr unit = Step(op.index, k.vars.back(), runtime);
  if (unit.is_null() || unit.kind() != symbolic::ExprKind::kInteger ||
      unit.int_value() != 1) {
    return false;
  }
  // The index at the origin, and its steps along the other loops, are
  // multiples of width.
  std::vector<Expr> multiples;
  absl::flat_hash_map<Expr, Expr> origin;
  for (size_t v = 0; v < k.vars.size(); ++v) {
    origin[k.vars[v]] = symbolic::Int(0);
    if (v + 1 < k.vars.size()) {
      multiples.push_back(Step(op.index, k.vars[v], runtime));
    }
  }
  absl::StatusOr<Expr> first = symbolic::Substitute(op.index, origin);
  multiples.push_back(first.ok() ? *first : Expr());
  std::vector<Expr> deferred;
  for (Expr m : multiples) {
    if (m.is_null()) return false;
    if (m.kind() != symbolic::ExprKind::kInteger) {
      deferred.push_back(m);
    } else if (m.int_value() % width != 0) {
      return false;
    }
  }
  checks->insert(checks->end(), deferred.begin(), deferred.end());
  return true;
}

// A kernel's vector accesses: each thread takes `width` consecutive
// elements of the innermost loop per step, and the loads and stores marked
// move them as one (at most 16-byte) vector, when the expressions in
// `checks` (of runtime sizes) are multiples of width.
struct VectorPlan {
  int width = 1;
  std::vector<bool> vector;  // by op
  std::vector<Expr> checks;
};

VectorPlan PlanVectors(const Program& p, const Kernel& k) {
  VectorPlan plan;
  plan.vector.assign(k.ops.size(), false);
  if (k.kind != Kernel::Kind::kLoops || k.vars.empty()) return plan;
  const absl::flat_hash_set<Expr> runtime(p.symbols.begin(), p.symbols.end());
  // A buffer both loaded and stored keeps its accesses in order: scalar.
  std::set<int> loaded, stored;
  for (const ScalarOp& op : k.ops) {
    if (op.kind == ScalarOp::Kind::kLoad) loaded.insert(op.buffer);
    if (op.kind == ScalarOp::Kind::kStore) stored.insert(op.buffer);
  }
  auto candidate = [&](const ScalarOp& op, int width,
                       std::vector<Expr>* checks) {
    return (op.kind == ScalarOp::Kind::kLoad ||
            op.kind == ScalarOp::Kind::kStore) &&
           !(loaded.count(op.buffer) && stored.count(op.buffer)) &&
           Contiguous(k, op, width, runtime, checks);
  };
  int widest = 0;
  for (const ScalarOp& op : k.ops) {
    std::vector<Expr> ignored;
    if (candidate(op, 2, &ignored)) {
      widest = std::max(widest, ItemSize(p.buffers[op.buffer].dtype));
    }
  }
  const int width = widest == 0 ? 1 : 16 / widest;
  const Expr inner = k.ranges.back();
  if (width < 2 || (inner.kind() == symbolic::ExprKind::kInteger &&
                    inner.int_value() % width != 0)) {
    return plan;
  }
  std::vector<Expr> checks;
  if (inner.kind() != symbolic::ExprKind::kInteger) checks.push_back(inner);
  for (size_t i = 0; i < k.ops.size(); ++i) {
    if (candidate(k.ops[i], width, &checks)) {
      plan.vector[i] = true;
      plan.width = width;
    }
  }
  for (Expr c : checks) {
    if (absl::c_find(plan.checks, c) == plan.checks.end()) {
      plan.checks.push_back(c);
    }
  }
  return plan;
}

class Emitter {
 public:
  explicit Emitter(const Program& p) : p_(p) {
    int ints = 0, floats = 0;
    for (Expr s : p.symbols) {
      names_[s] = s.is_float() ? absl::StrCat("f", floats++)
                               : absl::StrCat("s", ints++);
      params_.push_back(
          absl::StrCat(s.is_float() ? "double " : "int64_t ", names_[s]));
    }
    int32_ = Int32Indexing(p);
  }

  absl::StatusOr<std::string> Run() {
    std::string out = "// Generated by lathe (codegen/cuda/cuda_emitter.cc).\n";
    absl::StrAppend(&out, ScalarPrelude(), "\n", symbolic::CppPrelude(),
                    "\n#ifndef LATHE_CUDA_KERNEL\n"
                    "#define LATHE_CUDA_KERNEL(name, sync)\n#endif\n\n"
                    "// A vector access's elements (one 16-byte load or "
                    "store at most).\n"
                    "template <typename T, int N>\n"
                    "struct alignas(sizeof(T) * N) lathe_vec { T v[N]; };\n\n");
    for (const Kernel& k : p_.kernels) {
      if (k.kind != Kernel::Kind::kLoops && k.kind != Kernel::Kind::kExtern) {
        continue;  // binds and asserts: the host function's
      }
      if (std::string why = Unsupported(k); !why.empty()) {
        return absl::UnimplementedError(absl::StrCat(
            "no CUDA kernel yet for ", why, " (kernel ", k.name, " of ",
            k.nodes.empty() ? "the graph" : absl::StrJoin(k.nodes, ", "), ")"));
      }
      EmitKernel(k, &out);
    }
    return out;
  }

 private:
  // `e` as C++ over the kernel's names (`renamed` written as `as`).
  std::string Cpp(Expr e, Expr renamed = Expr(), absl::string_view as = "") {
    return symbolic::ToCpp(e, {.symbol_name = [&](Expr s) {
                             if (!renamed.is_null() && s == renamed) {
                               return std::string(as);
                             }
                             auto it = names_.find(s);
                             return it != names_.end() ? it->second
                                                       : std::string(s.name());
                           }});
  }

  void EmitKernel(const Kernel& k, std::string* out) {
    const bool int32 =
        int32_ && Product(k.ranges).kind() == symbolic::ExprKind::kInteger &&
        Product(k.ranges).int_value() <= kInt32Work;
    const std::string idx = int32 ? "int32_t" : "int64_t";
    // A buffer the kernel only reads is const (the read-only data path).
    std::set<int> stored;
    for (const ScalarOp& op : k.ops) {
      if (op.kind == ScalarOp::Kind::kStore) stored.insert(op.buffer);
    }
    std::vector<std::string> params;
    for (int b : DeviceKernelBuffers(k)) {
      params.push_back(absl::StrCat(stored.count(b) ? "" : "const ",
                                    CType(p_.buffers[b].dtype),
                                    "* __restrict__ b", b));
    }
    params.insert(params.end(), params_.begin(), params_.end());
    params.push_back("int64_t n");
    absl::StrAppend(out, "extern \"C\" __global__ void __launch_bounds__(",
                    kCudaBlock, ") ", k.name, "(", absl::StrJoin(params, ", "),
                    ") {\n");
    const VectorPlan plan = PlanVectors(p_, k);
    if (plan.width > 1) EmitVectorLoop(k, plan, idx, out);
    // The grid-stride loop over the flattened outer loops.
    absl::StrAppend(out, "  for (", GridStride(idx, "i", "n"), ") {\n");
    EmitLoopPoint(k, idx, "", out);
    if (k.vars.empty()) absl::StrAppend(out, "    (void)i;\n");
    IndexCpp cpp = [this](Expr e, const ScalarOp*) { return Cpp(e); };
    for (size_t i = 0; i < k.ops.size(); ++i) {
      EmitScalarOp(k, static_cast<int>(i), cpp, "    ", out);
    }
    absl::StrAppend(out, "  }\n}\nLATHE_CUDA_KERNEL(", k.name, ", false)\n\n");
  }

  // The header of a grid-stride loop of `var` over [0, `count`).
  static std::string GridStride(const std::string& idx, const char* var,
                                const std::string& count) {
    return absl::StrCat(idx, " ", var, " = (", idx, ")blockIdx.x * (", idx,
                        ")blockDim.x + (", idx, ")threadIdx.x; ", var, " < (",
                        idx, ")(", count, "); ", var, " += (", idx,
                        ")gridDim.x * (", idx, ")blockDim.x");
  }

  // The loop variables of flattened point i (the innermost varies fastest;
  // named `inner` instead when given).
  void EmitLoopPoint(const Kernel& k, const std::string& idx,
                     const std::string& inner, std::string* out) {
    const int nv = static_cast<int>(k.vars.size());
    if (nv > 1) absl::StrAppend(out, "    ", idx, " r = i;\n");
    for (int v = nv - 1; v >= 0; --v) {
      const std::string var =
          v == nv - 1 && !inner.empty() ? inner : std::string(k.vars[v].name());
      if (v == 0) {
        absl::StrAppend(out, "    const ", idx, " ", var, " = ",
                        nv > 1 ? "r" : "i", ";\n");
        continue;
      }
      const std::string extent =
          absl::StrCat("(", idx, ")(", Cpp(k.ranges[v]), ")");
      absl::StrAppend(out, "    const ", idx, " ", var, " = r % ", extent,
                      "; r /= ", extent, ";\n");
    }
  }

  // The vector path: when every vector access's buffer is aligned to its
  // vector and the innermost extent is a multiple of the width, each step
  // takes `width` consecutive points: vector loads, the scalar ops once per
  // lane (a vector load's value is its lane; other accesses stay scalar),
  // vector stores. Otherwise the scalar loop after it runs.
  void EmitVectorLoop(const Kernel& k, const VectorPlan& plan,
                      const std::string& idx, std::string* out) {
    const int w = plan.width;
    const Expr inner = k.vars.back();
    std::vector<std::string> conds;
    if (k.ranges.back().kind() != symbolic::ExprKind::kInteger) {
      conds.push_back(
          absl::StrCat("(", Cpp(k.ranges.back()), ") % ", w, " == 0"));
    }
    std::set<int> aligned;
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const int b = k.ops[i].buffer;
      if (plan.vector[i] && aligned.insert(b).second) {
        conds.push_back(absl::StrCat("(uint64_t)(const void*)b", b, " % ",
                                     w * ItemSize(p_.buffers[b].dtype),
                                     " == 0"));
      }
    }
    auto vec = [&](int b) {
      return absl::StrCat("lathe_vec<", CType(p_.buffers[b].dtype), ", ", w,
                          ">");
    };
    auto at = [&](const ScalarOp& op) {
      return absl::StrCat("b", op.buffer, " + (", Cpp(op.index, inner, "xv"),
                          ")");
    };
    absl::StrAppend(out, "  if (", absl::StrJoin(conds, " && "), ") {\n",
                    "  for (", GridStride(idx, "t", absl::StrCat("n / ", w)),
                    ") {\n    const ", idx, " i = t * ", w, ";\n");
    EmitLoopPoint(k, idx, "xv", out);
    std::string stores;
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (!plan.vector[i]) continue;
      if (op.kind == ScalarOp::Kind::kLoad) {
        absl::StrAppend(out, "    const ", vec(op.buffer), " w", i,
                        " = *reinterpret_cast<const ", vec(op.buffer), "*>(",
                        at(op), ");\n");
      } else {
        absl::StrAppend(out, "    ", vec(op.buffer), " w", i, ";\n");
        absl::StrAppend(&stores, "    *reinterpret_cast<", vec(op.buffer),
                        "*>(", at(op), ") = w", i, ";\n");
      }
    }
    absl::StrAppend(out, "    for (int l = 0; l < ", w, "; ++l) {\n",
                    "      const ", idx, " ", inner.name(), " = xv + l;\n",
                    "      (void)", inner.name(), ";\n");
    IndexCpp cpp = [this](Expr e, const ScalarOp*) { return Cpp(e); };
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (!plan.vector[i]) {
        EmitScalarOp(k, static_cast<int>(i), cpp, "      ", out);
      } else if (op.kind == ScalarOp::Kind::kLoad) {
        absl::StrAppend(out, "      const ", CType(op.dtype), " v", i, " = w",
                        i, ".v[l];\n");
      } else {
        absl::StrAppend(out, "      w", i, ".v[l] = v", op.args[0], ";\n");
      }
    }
    absl::StrAppend(out, "    }\n", stores, "  }\n  return;\n  }\n");
  }

  const Program& p_;
  absl::flat_hash_map<Expr, std::string> names_;
  std::vector<std::string> params_;  // the symbols' parameters
  bool int32_ = false;
};

}  // namespace

absl::StatusOr<std::string> EmitCuda(const Program& program) {
  return Emitter(program).Run();
}

std::vector<std::string> DeviceKernelNames(const Program& program) {
  std::vector<std::string> names;
  for (const Kernel& k : program.kernels) {
    if (k.kind == Kernel::Kind::kLoops) names.push_back(k.name);
  }
  return names;  // kernel k's name at DeviceKernelIndex(program, k)
}

int DeviceKernelIndex(const Program& program, int k) {
  int index = 0;
  for (int j = 0; j < k; ++j) {
    index += program.kernels[j].kind == Kernel::Kind::kLoops ? 1 : 0;
  }
  return index;
}

int DeviceKernelWidth(const Program& program, const Kernel& k) {
  return PlanVectors(program, k).width;
}

std::vector<int> DeviceKernelBuffers(const Kernel& k) {
  std::set<int> used;
  for (const ScalarOp& op : k.ops) {
    if (op.buffer >= 0) used.insert(op.buffer);
  }
  return std::vector<int>(used.begin(), used.end());
}

}  // namespace lathe::codegen
