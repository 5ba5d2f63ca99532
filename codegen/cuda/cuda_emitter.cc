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
#include "check.h"
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

// Whether a grid-stride loop over `count` points may count in int32.
bool Fits32(Expr count) {
  return count.kind() == symbolic::ExprKind::kInteger &&
         count.int_value() <= kInt32Work;
}

// Whether `k` has index checks (then its last parameter but one is the
// call's check record).
bool HasChecks(const Kernel& k) {
  for (const ScalarOp& op : k.ops) {
    if (op.kind == ScalarOp::Kind::kCheckIndex) return true;
  }
  return false;
}

// Whether `k` loops over rows: a section with inner loops (a reduction
// and its epilogue), one block per point of the outer loops.
bool RowKernel(const Kernel& k) {
  for (const Section& s : k.sections) {
    if (!s.vars.empty()) return true;
  }
  return false;
}

// What no CUDA kernel does yet, or "" when `k` is one it writes.
std::string Unsupported(const Kernel& k) {
  if (k.kind == Kernel::Kind::kExtern) {
    for (const char* r :
         {"sgemm", "dgemm", "bgemm", "sconv", "sort", "randperm"}) {
      if (k.routine == r) return "";
    }
    return absl::StrCat("the library call ", k.routine);
  }
  return "";
}

// Whether `k` runs on one thread (a block of one), its points in order: a
// store at loaded indices may hit an element several times (the last
// write wins, as in the interpreter), and a masked store's index is only
// valid where it stores. A row kernel's block-wide steps are then the
// thread's own values.
bool Serial(const Kernel& k) {
  for (const ScalarOp& op : k.ops) {
    if (op.kind == ScalarOp::Kind::kStore && IsIndirect(op)) return true;
  }
  return false;
}

// Whether the block's threads must meet after section `s` of `k`: a later
// section loads what it stores, or stores what it loads (a reduction's
// block-wide step already waits for every thread's loads).
bool NeedsBarrierAfter(const Kernel& k, int s) {
  std::set<int> stored, loaded;
  bool reduces = false;
  for (const ScalarOp& op : k.ops) {
    if (op.section != s) continue;
    if (op.kind == ScalarOp::Kind::kStore) stored.insert(op.buffer);
    if (op.kind == ScalarOp::Kind::kLoad) loaded.insert(op.buffer);
    reduces = reduces || op.kind == ScalarOp::Kind::kReduce;
  }
  for (const ScalarOp& op : k.ops) {
    if (op.section <= s) continue;
    if (op.kind == ScalarOp::Kind::kLoad && stored.count(op.buffer)) {
      return true;
    }
    if (op.kind == ScalarOp::Kind::kStore && loaded.count(op.buffer) &&
        !reduces) {
      return true;
    }
  }
  return false;
}

// The kernels' device helpers (kernel_prelude.h's text).
constexpr char kKernelPrelude[] =
#include "codegen/cuda/kernel_prelude_text.inc"
    ;

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

}  // namespace

absl::string_view CudaSourcePrelude() {
  static const std::string* const text = new std::string(
      absl::StrCat("// Generated by lathe (codegen/cuda/cuda_emitter.cc).\n",
                   ScalarPrelude(), "\n", symbolic::CppPrelude(),
                   "\n#ifndef LATHE_CUDA_KERNEL\n"
                   "#define LATHE_CUDA_KERNEL(name, sync)\n#endif\n\n",
                   kKernelPrelude, "\n"));
  return *text;
}

namespace {

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
    std::string out(CudaSourcePrelude());
    for (const Kernel& k : p_.kernels) {
      if (k.kind != Kernel::Kind::kLoops && k.kind != Kernel::Kind::kExtern) {
        continue;  // binds and asserts: the host function's
      }
      if (std::string why = Unsupported(k); !why.empty()) {
        return absl::UnimplementedError(absl::StrCat(
            "no CUDA kernel yet for ", why, " (kernel ", k.name, " of ",
            k.nodes.empty() ? "the graph" : absl::StrJoin(k.nodes, ", "), ")"));
      }
      if (k.kind == Kernel::Kind::kExtern) {
        continue;  // the host function calls the device's routine
      }
      if (RowKernel(k)) {
        EmitRowKernel(k, &out);
      } else {
        EmitKernel(k, &out);
      }
    }
    return out;
  }

 private:
  // `e` as C++ over the kernel's names: in access `op`'s index, ind<k> is
  // the value of its k-th indirect argument; `renamed` is written `as`.
  std::string Cpp(Expr e, const ScalarOp* op = nullptr, Expr renamed = Expr(),
                  absl::string_view as = "") {
    return symbolic::ToCpp(e, {.symbol_name = [&](Expr s) {
                             if (!renamed.is_null() && s == renamed) {
                               return std::string(as);
                             }
                             return KernelSymbolName(s, names_, op);
                           }});
  }

  // Op `i` of `k` as a statement: a scalar op, or an index check that
  // records the first failure in the call's check record (ck) and reads
  // element 0 instead, so no access leaves its buffer.
  void EmitOp(const Kernel& k, int i, const std::string& in, std::string* out) {
    const ScalarOp& op = k.ops[i];
    IndexCpp cpp = [this](Expr e, const ScalarOp* a) { return Cpp(e, a); };
    if (op.kind != ScalarOp::Kind::kCheckIndex) {
      LATHE_CHECK(EmitScalarOp(k, i, cpp, in, out)) << "op " << i;
      return;
    }
    const std::string code = absl::StrCat(op.i + 1);
    EmitCheckIndex(
        k, i, cpp, in,
        [&](const std::string& given, const std::string& bound) {
          return absl::StrCat("lathe_device_check_failed(ck, ", code, ", ",
                              given, ", ", bound, ");");
        },
        out);
  }

  // A pointwise kernel: the vector path when it has one, then the
  // grid-stride loop over the flattened outer loops.
  void EmitKernel(const Kernel& k, std::string* out) {
    const bool int32 = int32_ && Fits32(Product(k.ranges));
    const std::string idx = int32 ? "int32_t" : "int64_t";
    absl::StrAppend(out, "extern \"C\" __global__ void __launch_bounds__(",
                    kCudaBlock, ") ", k.name, "(", Params(k), ") {\n");
    const VectorPlan plan = PlanVectors(p_, k);
    if (plan.width > 1 && !Serial(k)) EmitVectorLoop(k, plan, idx, out);
    absl::StrAppend(out, "  for (", GridStride(idx, "i", "n"), ") {\n");
    EmitLoopPoint(k, idx, "", out);
    if (k.vars.empty()) absl::StrAppend(out, "    (void)i;\n");
    for (size_t i = 0; i < k.ops.size(); ++i) {
      EmitOp(k, static_cast<int>(i), "    ", out);
    }
    absl::StrAppend(out, "  }\n}\nLATHE_CUDA_KERNEL(", k.name, ", false)\n\n");
  }

  // The kernel's parameters: its buffers (const where it only reads
  // them), the symbols, the count n.
  std::string Params(const Kernel& k) {
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
    if (HasChecks(k)) params.push_back("int64_t* __restrict__ ck");
    params.push_back("int64_t n");
    return absl::StrJoin(params, ", ");
  }

  // A row kernel: block o of a grid-stride loop over the n points of the
  // outer loops runs the sections in order, its threads striding over
  // each section's inner loops; a reduction accumulates per thread, then
  // across the block (lathe_block_reduce), so every thread holds its value
  // for the later sections. A straight-line section's stores are thread
  // 0's.
  void EmitRowKernel(const Kernel& k, std::string* out) {
    bool int32 = int32_ && Fits32(Product(k.ranges));
    for (const Section& s : k.sections) {
      int32 = int32 && Fits32(Product(s.ranges));
    }
    const std::string idx = int32 ? "int32_t" : "int64_t";
    absl::StrAppend(out, "extern \"C\" __global__ void __launch_bounds__(",
                    kCudaBlock, ") ", k.name, "(", Params(k), ") {\n",
                    "  __shared__ lathe_slot slots[", kCudaBlock / 32, "];\n",
                    "  for (", idx, " i = (", idx, ")blockIdx.x; i < (", idx,
                    ")n; i += (", idx, ")gridDim.x) {\n");
    EmitLoopPoint(k, idx, "", out);
    if (k.vars.empty()) absl::StrAppend(out, "    (void)i;\n");
    for (size_t s = 0; s < k.sections.size(); ++s) {
      EmitRowSection(k, static_cast<int>(s), idx, out);
      if (NeedsBarrierAfter(k, static_cast<int>(s))) {
        // Threads touch elements other threads of the block wrote or read.
        absl::StrAppend(out, "    __syncthreads();\n");
      }
    }
    absl::StrAppend(out, "  }\n}\nLATHE_CUDA_KERNEL(", k.name, ", true)\n\n");
  }

  void EmitRowSection(const Kernel& k, int s, const std::string& idx,
                      std::string* out) {
    const Section& sec = k.sections[s];
    std::vector<int> reduces;
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (op.section != s || op.kind != ScalarOp::Kind::kReduce) continue;
      reduces.push_back(static_cast<int>(i));
      if (op.reduce == ReduceKind::kWelfordM2) continue;  // the mean's
      absl::StrAppend(out, "    ", AccType(k, op), " acc", i, " = ",
                      AccInit(k, op), ";\n");
    }
    // A scan's section runs its points in order, a block-wide chunk at a
    // time, with the running value carried across chunks.
    bool scan = false;
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (op.section != s || op.kind != ScalarOp::Kind::kScan) continue;
      scan = true;
      absl::StrAppend(out, "    ", CType(op.dtype), " acc", i, " = ",
                      ReduceIdentity(op.reduce, op.dtype), ";\n");
    }
    std::string in = "    ";
    const std::string points =
        absl::StrCat("(", idx, ")(", Cpp(Product(sec.ranges)), ")");
    if (scan) {
      // Every thread runs every chunk (the scan's barriers); a thread past
      // the end computes at the last point and neither stores nor counts.
      absl::StrAppend(out, in, "for (", idx, " base = 0; base < ", points,
                      "; base += (", idx, ")blockDim.x) {\n", in, "  const ",
                      idx, " j0 = base + (", idx, ")threadIdx.x;\n", in,
                      "  const bool live = j0 < ", points, ";\n", in,
                      "  const ", idx, " j = live ? j0 : ", points, " - 1;\n");
    } else if (!sec.vars.empty()) {
      // Thread j takes points j, j + blockDim.x, ... of the section's
      // loops, flattened with the innermost fastest.
      absl::StrAppend(out, in, "for (", idx, " j = (", idx,
                      ")threadIdx.x; j < ", points, "; j += (", idx,
                      ")blockDim.x) {\n");
    }
    if (!sec.vars.empty()) {
      in += "  ";
      EmitFlattened(sec.vars, sec.ranges, idx, "j", "q", in, "", out);
    }
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (op.section != s) continue;
      if (op.kind == ScalarOp::Kind::kScan) {
        const std::string t(CType(op.dtype));
        absl::StrAppend(out, in, "const ", t, " v", i,
                        " = lathe_block_scan(live ? static_cast<", t, ">(v",
                        op.args[0], ") : ", ReduceIdentity(op.reduce, op.dtype),
                        ", ", Combiner(op), ", &acc", i, ", slots);\n");
      } else if (op.kind == ScalarOp::Kind::kReduce) {
        if (scan) absl::StrAppend(out, in, "if (live) {\n");
        EmitAccumulate(k, static_cast<int>(i), scan ? in + "  " : in, out);
        if (scan) absl::StrAppend(out, in, "}\n");
      } else if (op.kind == ScalarOp::Kind::kStore &&
                 (scan || sec.vars.empty())) {
        absl::StrAppend(out, in,
                        scan ? "if (live) " : "if (threadIdx.x == 0) ");
        EmitOp(k, static_cast<int>(i), "", out);
      } else {
        EmitOp(k, static_cast<int>(i), in, out);
      }
    }
    if (!sec.vars.empty()) absl::StrAppend(out, "    }\n");
    for (int i : reduces) EmitReduceResult(k, i, out);
  }

  // The per-thread accumulator of reduce op `op` and its starting value.
  static std::string AccType(const Kernel& k, const ScalarOp& op) {
    switch (op.reduce) {
      case ReduceKind::kArgMax:
      case ReduceKind::kArgMin:
        return absl::StrCat("lathe_argacc<", CType(k.ops[op.args[0]].dtype),
                            ">");
      case ReduceKind::kWelfordMean:
      case ReduceKind::kWelfordM2:
        return absl::StrCat("lathe_welford_run<", WelfordType(op), ">");
      default:
        return std::string(CType(op.dtype));
    }
  }

  // The type a thread's Welford chunk sums in: double for f64, float
  // otherwise (as the cpu backend's blocks).
  static const char* WelfordType(const ScalarOp& op) {
    return op.dtype == DType::kFloat64 ? "double" : "float";
  }

  static std::string AccInit(const Kernel& k, const ScalarOp& op) {
    switch (op.reduce) {
      case ReduceKind::kArgMax:
      case ReduceKind::kArgMin:
        // The extreme's identity at an index past every real one: any
        // element replaces it (a tie goes to the lower index).
        return absl::StrCat("{",
                            ReduceIdentity(op.reduce, k.ops[op.args[0]].dtype),
                            ", lathe_std::numeric_limits<int64_t>::max()}");
      case ReduceKind::kWelfordMean:
      case ReduceKind::kWelfordM2:
        return "{{0, 0, 0}, 0, 0, 0, 0}";
      default:
        return ReduceIdentity(op.reduce, op.dtype);
    }
  }

  // Functor combining two accumulators of `op`.
  static const char* Combiner(const ScalarOp& op) {
    switch (op.reduce) {
      case ReduceKind::kSum:
        return "lathe_red_sum{}";
      case ReduceKind::kProd:
        return "lathe_red_prod{}";
      case ReduceKind::kMax:
        return "lathe_red_max{}";
      case ReduceKind::kMin:
        return "lathe_red_min{}";
      case ReduceKind::kArgMax:
        return "lathe_red_arg<true>{}";
      case ReduceKind::kArgMin:
        return "lathe_red_arg<false>{}";
      case ReduceKind::kAny:
        return "lathe_red_any{}";
      case ReduceKind::kAll:
        return "lathe_red_all{}";
      case ReduceKind::kWelfordMean:
      case ReduceKind::kWelfordM2:
        return "lathe_red_welford{}";
      case ReduceKind::kLogAddExp:
        return "lathe_red_log_add_exp{}";
    }
    return "";
  }

  // One element into this thread's accumulator of reduce op `i`.
  void EmitAccumulate(const Kernel& k, int i, const std::string& in,
                      std::string* out) {
    const ScalarOp& op = k.ops[i];
    const std::string v = absl::StrCat("v", op.args[0]);
    const std::string acc = absl::StrCat("acc", i);
    switch (op.reduce) {
      case ReduceKind::kWelfordMean:
        absl::StrAppend(out, in, acc, " = lathe_welford_run_add(", acc,
                        ", static_cast<", WelfordType(op), ">(", v, "));\n");
        return;
      case ReduceKind::kWelfordM2:  // the mean op's accumulator
        return;
      case ReduceKind::kArgMax:
      case ReduceKind::kArgMin:
        absl::StrAppend(out, in, acc, " = ", Combiner(op), "(", acc, ", ",
                        AccType(k, op), "{", v, ", static_cast<int64_t>(v",
                        op.arg_index, ")});\n");
        return;
      default:
        absl::StrAppend(out, in, acc, " = ", Combiner(op), "(", acc,
                        ", static_cast<", AccType(k, op), ">(", v, "));\n");
    }
  }

  // Reduce op `i` across the block, as its value v<i>.
  void EmitReduceResult(const Kernel& k, int i, std::string* out) {
    const ScalarOp& op = k.ops[i];
    const std::string t(CType(op.dtype));
    switch (op.reduce) {
      case ReduceKind::kWelfordMean:
      case ReduceKind::kWelfordM2: {
        // An empty row is NaN (the mean's accumulator holds both).
        const int acc = op.reduce == ReduceKind::kWelfordM2 ? op.arg_index : i;
        if (op.reduce == ReduceKind::kWelfordMean) {
          absl::StrAppend(out, "    const lathe_welford w", acc,
                          " = lathe_block_reduce(lathe_welford_of(acc", acc,
                          "), lathe_red_welford{}, slots);\n");
        }
        absl::StrAppend(out, "    const ", t, " v", i, " = w", acc,
                        ".n == 0 ? lathe_std::numeric_limits<", t,
                        ">::quiet_NaN() : static_cast<", t, ">(w", acc,
                        op.reduce == ReduceKind::kWelfordM2 ? ".m2" : ".mean",
                        ");\n");
        return;
      }
      default:
        break;
    }
    absl::StrAppend(out, "    acc", i, " = lathe_block_reduce(acc", i, ", ",
                    Combiner(op), ", slots);\n");
    const bool arg =
        op.reduce == ReduceKind::kArgMax || op.reduce == ReduceKind::kArgMin;
    absl::StrAppend(out, "    const ", t, " v", i, " = ",
                    arg ? absl::StrCat("static_cast<", t, ">(acc", i, ".i)")
                        : absl::StrCat("acc", i),
                    ";\n");
  }

  // The header of a grid-stride loop of `var` over [0, `count`).
  static std::string GridStride(const std::string& idx, const char* var,
                                const std::string& count) {
    return absl::StrCat(idx, " ", var, " = (", idx, ")blockIdx.x * (", idx,
                        ")blockDim.x + (", idx, ")threadIdx.x; ", var, " < (",
                        idx, ")(", count, "); ", var, " += (", idx,
                        ")gridDim.x * (", idx, ")blockDim.x");
  }

  // The variables `vars` (extents `ranges`, the last varying fastest) of
  // the flattened point `from`, with `rest` as the scratch name; the last
  // is named `inner` instead when given.
  void EmitFlattened(const std::vector<Expr>& vars,
                     const std::vector<Expr>& ranges, const std::string& idx,
                     const char* from, const char* rest, const std::string& in,
                     const std::string& inner, std::string* out) {
    const int nv = static_cast<int>(vars.size());
    if (nv > 1) absl::StrAppend(out, in, idx, " ", rest, " = ", from, ";\n");
    for (int v = nv - 1; v >= 0; --v) {
      const std::string var =
          v == nv - 1 && !inner.empty() ? inner : std::string(vars[v].name());
      if (v == 0) {
        absl::StrAppend(out, in, "const ", idx, " ", var, " = ",
                        nv > 1 ? rest : from, ";\n");
        continue;
      }
      const std::string extent =
          absl::StrCat("(", idx, ")(", Cpp(ranges[v]), ")");
      absl::StrAppend(out, in, "const ", idx, " ", var, " = ", rest, " % ",
                      extent, "; ", rest, " /= ", extent, ";\n");
    }
  }

  // The outer loop variables of flattened point i.
  void EmitLoopPoint(const Kernel& k, const std::string& idx,
                     const std::string& inner, std::string* out) {
    EmitFlattened(k.vars, k.ranges, idx, "i", "r", "    ", inner, out);
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
      return absl::StrCat("b", op.buffer, " + (",
                          Cpp(op.index, nullptr, inner, "xv"), ")");
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
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (!plan.vector[i]) {
        EmitOp(k, static_cast<int>(i), "      ", out);
      } else if (op.kind == ScalarOp::Kind::kLoad && op.dtype == DType::kBool) {
        // Its byte, as the scalar loads (lathe_load_bool).
        absl::StrAppend(out, "      const bool v", i, " = lathe_load_bool(&w",
                        i, ".v[l]);\n");
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

DeviceLaunch DeviceKernelLaunch(const Program& program, const Kernel& k) {
  DeviceLaunch launch;
  launch.n = Product(k.ranges);
  launch.checks = HasChecks(k);
  launch.serial = Serial(k);
  if (!RowKernel(k)) {
    launch.width = launch.serial ? 1 : PlanVectors(program, k).width;
    return launch;
  }
  std::vector<Expr> rows;
  for (const Section& s : k.sections) {
    if (!s.vars.empty()) rows.push_back(Product(s.ranges));
  }
  launch.row = symbolic::Max(rows);
  return launch;
}

std::vector<int> DeviceKernelBuffers(const Kernel& k) {
  std::set<int> used;
  for (const ScalarOp& op : k.ops) {
    if (op.buffer >= 0) used.insert(op.buffer);
  }
  return std::vector<int>(used.begin(), used.end());
}

}  // namespace lathe::codegen
