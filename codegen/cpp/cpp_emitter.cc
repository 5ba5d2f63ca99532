#include "codegen/cpp/cpp_emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check.h"
#include "codegen/scalar_ops.h"
#include "runtime/kernel_runtime.h"
#include "symbolic/printer.h"

namespace lathe::codegen {
namespace {

using symbolic::Expr;

// Work (elements) below which a kernel runs on one thread.
constexpr int64_t kParallelThreshold = 32768;

// A Welford reduction runs over blocks of this many elements of its
// innermost loop: in each block, shifted by its first value, one simd pass
// sums the values and a second the squared deviations from the block's mean
// (differences of small numbers, so float keeps its digits), and the
// block's (mean, M2, count) is merged into a double accumulator (Chan et
// al.): merging blocks whose means are large next to their spread needs
// double, as PyTorch's CPU var accumulates float in double.
constexpr int64_t kWelfordBlock = 256;

// A flat f32 kernel storing at least this many elements of a buffer no
// kernel reads afterwards (a graph output), contiguously in its innermost
// loop, writes them with non-temporal (streaming) stores, which skip
// reading each line before writing it. A buffer a later kernel reads is
// left in the cache instead.
constexpr int64_t kStreamElements = int64_t{1} << 22;

// Streaming stores of 16 floats from an aligned array to a 64-byte aligned
// address, the fence after them, and how many elements come before the
// first aligned one (GCC's builtins: <immintrin.h> would double the C++
// compiler's time).
constexpr char kStreamPrelude[] =
    R"(typedef float lathe_v16sf __attribute__((vector_size(64)));
typedef float lathe_v8sf __attribute__((vector_size(32)));
static inline void lathe_stream16(float* p, const float* t) {
#if defined(__AVX512F__)
  __builtin_ia32_movntps512(p, *reinterpret_cast<const lathe_v16sf*>(t));
#elif defined(__AVX__)
  __builtin_ia32_movntps256(p, *reinterpret_cast<const lathe_v8sf*>(t));
  __builtin_ia32_movntps256(p + 8, *reinterpret_cast<const lathe_v8sf*>(t + 8));
#else
  for (int j = 0; j < 16; ++j) p[j] = t[j];
#endif
}
static inline void lathe_stream_fence() {
#if defined(__SSE__)
  __builtin_ia32_sfence();
#endif
}
static inline int64_t lathe_stream_peel(const float* p, int64_t n) {
  const int64_t k = static_cast<int64_t>(
      ((64 - (reinterpret_cast<uintptr_t>(p) & 63)) & 63) / sizeof(float));
  return k < n ? k : n;
}
)";

// The Welford accumulator, its merge, and OpenMP reductions over it.
constexpr char kWelfordPrelude[] = R"(template <typename T>
struct lathe_welford { T mean; T m2; int64_t n; };
template <typename T>
static inline lathe_welford<T> lathe_welford_merge(lathe_welford<T> a,
                                                   lathe_welford<T> b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  const int64_t n = a.n + b.n;
  const T d = b.mean - a.mean;
  const T wb = static_cast<T>(b.n) / static_cast<T>(n);
  return {a.mean + d * wb, a.m2 + b.m2 + d * d * static_cast<T>(a.n) * wb, n};
}
#pragma omp declare reduction(lathe_welford_d : lathe_welford<double> : \
    omp_out = lathe_welford_merge(omp_out, omp_in)) \
    initializer(omp_priv = lathe_welford<double>{0, 0, 0})
)";

class Emitter {
 public:
  explicit Emitter(const Program& p) : p_(p) {
    int ints = 0, floats = 0;
    for (Expr s : p.symbols) {
      names_[s] = s.is_float() ? absl::StrCat("F[", floats++, "]")
                               : absl::StrCat("S[", ints++, "]");
    }
    index_type_ = Int32Indexing(p) ? "int32_t" : "int64_t";
  }

  // Whether every loop index and every index computation of `p` fits in
  // int32: no size is symbolic, every buffer holds fewer than 2^31
  // elements, and every index expression stays within int32 on the way to
  // its value (bounded from the loop extents). Otherwise the loops count in
  // int64.
  static bool Int32Indexing(const Program& p) {
    for (Expr s : p.symbols) {
      if (!s.is_float()) return false;
    }
    for (const Buffer& b : p.buffers) {
      if (b.numel.kind() != symbolic::ExprKind::kInteger ||
          b.numel.int_value() > std::numeric_limits<int32_t>::max()) {
        return false;
      }
    }
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    for (const Kernel& k : p.kernels) {
      // The largest value each loop variable takes.
      absl::flat_hash_map<Expr, int64_t> top;
      std::vector<Expr> vars = k.vars, ranges = k.ranges;
      for (const Section& s : k.sections) {
        vars.insert(vars.end(), s.vars.begin(), s.vars.end());
        ranges.insert(ranges.end(), s.ranges.begin(), s.ranges.end());
      }
      for (size_t v = 0; v < vars.size(); ++v) {
        if (ranges[v].kind() != symbolic::ExprKind::kInteger ||
            ranges[v].int_value() > kMax) {
          return false;
        }
        top[vars[v]] = std::max<int64_t>(ranges[v].int_value() - 1, 0);
      }
      // Every index expression, and every value inside it, stays within
      // int32 (a quotient's dividend may exceed the result).
      for (const ScalarOp& op : k.ops) {
        if (op.index.is_null() || op.kind == ScalarOp::Kind::kSymbol) continue;
        if (Magnitude(op.index, top) > kMax) return false;
      }
    }
    return true;
  }

  // A bound on the magnitude of `e` and of every value computed on the way
  // (loop variables at most `top`); int64 max for what it cannot bound (an
  // indirect variable: a loaded int64, a symbol).
  static int64_t Magnitude(Expr e,
                           const absl::flat_hash_map<Expr, int64_t>& top) {
    constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
    auto sat_add = [](int64_t a, int64_t b) {
      return a > kInf - b ? kInf : a + b;
    };
    auto sat_mul = [](int64_t a, int64_t b) {
      return a != 0 && b > kInf / a ? kInf : a * b;
    };
    switch (e.kind()) {
      case symbolic::ExprKind::kInteger:
        return e.int_value() == std::numeric_limits<int64_t>::min()
                   ? kInf
                   : std::abs(e.int_value());
      case symbolic::ExprKind::kSymbol: {
        auto it = top.find(e);
        return it == top.end() ? kInf : it->second;
      }
      case symbolic::ExprKind::kAdd:
      case symbolic::ExprKind::kMul: {
        int64_t m = e.kind() == symbolic::ExprKind::kAdd ? 0 : 1;
        for (Expr a : e.args()) {
          int64_t b = Magnitude(a, top);
          m = e.kind() == symbolic::ExprKind::kAdd ? sat_add(m, b)
                                                   : sat_mul(m, b);
        }
        return m;
      }
      case symbolic::ExprKind::kFloorDiv:
      case symbolic::ExprKind::kCleanDiv:
      case symbolic::ExprKind::kModularIndexing:
      case symbolic::ExprKind::kMod:
      case symbolic::ExprKind::kPythonMod:
      case symbolic::ExprKind::kMin:
      case symbolic::ExprKind::kMax: {
        int64_t m = 0;
        for (Expr a : e.args()) m = std::max(m, Magnitude(a, top));
        return m;
      }
      default:
        return kInf;
    }
  }

  std::string Run() {
    std::string out = "// Generated by lathe (codegen/cpp/cpp_emitter.cc).\n";
    absl::StrAppend(&out, KernelAbiSource(), "\n", symbolic::CppPrelude(), "\n",
                    ScalarPrelude(), "\n", kWelfordPrelude, "\n",
                    kStreamPrelude, "\n");
    for (const Kernel& k : p_.kernels) {
      // Binds and asserts are the host function's (wrapper_emitter.cc).
      if (k.kind == Kernel::Kind::kLoops || k.kind == Kernel::Kind::kExtern) {
        EmitKernel(k, &out);
      }
    }
    return out;
  }

 private:
  // `e` as C++: runtime symbols from S[] and F[]; in an indirect access's
  // index (`op`), ind<k> is the value of its k-th indirect argument.
  std::string Cpp(Expr e, const ScalarOp* op = nullptr) {
    return symbolic::ToCpp(
        e, {.symbol_name = [this, op](Expr s) {
          auto it = names_.find(s);
          if (it != names_.end()) return it->second;
          if (op != nullptr) {
            for (size_t a = IndirectArgs(*op); a < op->args.size(); ++a) {
              if (s == IndirectVar(static_cast<int>(a - IndirectArgs(*op)))) {
                return absl::StrCat("v", op->args[a]);
              }
            }
          }
          return std::string(s.name());
        }});
  }

  std::string Ptr(int b) { return absl::StrCat("b", b); }

  static std::string Constant(const ScalarOp& op) {
    std::string t(CType(op.dtype));
    if (op.dtype == DType::kBool) return op.i != 0 ? "true" : "false";
    if (!IsFloatingPoint(op.dtype)) {
      if (op.i == std::numeric_limits<int64_t>::min()) {
        return absl::StrCat("static_cast<", t, ">(-9223372036854775807LL - 1)");
      }
      return absl::StrCat("static_cast<", t, ">(", op.i, "LL)");
    }
    std::string ct(CType(ComputeDType(op.dtype)));
    if (std::isnan(op.f)) {
      return absl::StrCat("std::numeric_limits<", ct, ">::quiet_NaN()");
    }
    if (std::isinf(op.f)) {
      return absl::StrCat(op.f < 0 ? "-" : "", "std::numeric_limits<", ct,
                          ">::infinity()");
    }
    std::string lit = symbolic::FormatFloat(op.f);
    return absl::StrCat("static_cast<", ct, ">(", lit, ")");
  }

  // The C type a value of `dtype` is held in (f16/bf16 values other than
  // loads are computed in float).
  static std::string VType(DType dtype) { return std::string(CType(dtype)); }

  std::string Value(const Kernel& k, int i) { return absl::StrCat("v", i); }

  void EmitOp(const Kernel& k, int i, const std::string& indent,
              std::string* out) {
    const ScalarOp& op = k.ops[i];
    std::string t = VType(op.dtype);
    auto arg = [&](int a) { return Value(k, op.args[a]); };
    switch (op.kind) {
      case ScalarOp::Kind::kLoad:
        absl::StrAppend(out, indent, "const ", t, " v", i, " = ",
                        Ptr(op.buffer), "[", Cpp(op.index, &op), "];\n");
        return;
      case ScalarOp::Kind::kStore:
        if (i == stream_store_ && !stream_target_.empty()) {
          absl::StrAppend(out, indent, stream_target_, " = ", arg(0), ";\n");
          return;
        }
        absl::StrAppend(
            out, indent, op.masked ? absl::StrCat("if (", arg(1), ") ") : "",
            Ptr(op.buffer), "[", Cpp(op.index, &op), "] = ", arg(0), ";\n");
        return;
      case ScalarOp::Kind::kCheckIndex: {
        std::string v = absl::StrCat("v", i), n = Cpp(op.index);
        absl::StrAppend(out, indent, "int64_t ", v, " = static_cast<int64_t>(",
                        arg(0), ");\n");
        if (op.wrap) {
          absl::StrAppend(out, indent, "if (", v, " < 0) ", v, " += ", n,
                          ";\n");
        }
        // The index as given (before wrapping) and the size are the
        // check's values; the first failing thread's win (kernel_abi.h).
        absl::StrAppend(out, indent, "if (__builtin_expect(", v, " < 0 || ", v,
                        " >= ", n, ", 0)) { const int64_t cv", i,
                        "[] = {static_cast<int64_t>(", arg(0), "), ", n,
                        "}; lathe_kernel_check_failed(E, rt, ", op.i + 1,
                        ", cv", i, ", 2); ", v, " = 0; }\n");
        return;
      }
      case ScalarOp::Kind::kConstant:
        absl::StrAppend(out, indent, "const ",
                        VType(IsFloatingPoint(op.dtype) ? ComputeDType(op.dtype)
                                                        : op.dtype),
                        " v", i, " = ", Constant(op), ";\n");
        return;
      case ScalarOp::Kind::kIndex:
        absl::StrAppend(out, indent, "const int64_t v", i,
                        " = static_cast<int64_t>(", Cpp(op.index), ");\n");
        return;
      case ScalarOp::Kind::kSymbol:
        absl::StrAppend(out, indent, "const double v", i,
                        " = static_cast<double>(", Cpp(op.index), ");\n");
        return;
      case ScalarOp::Kind::kCall: {
        std::vector<std::string> args;
        for (size_t a = 0; a < op.args.size(); ++a) args.push_back(arg(a));
        absl::StrAppend(out, indent, "const ", t, " v", i, " = lathe_op_",
                        op.fn, "(", absl::StrJoin(args, ", "), ");\n");
        return;
      }
      case ScalarOp::Kind::kCast:
        absl::StrAppend(out, indent, "const ", t, " v", i, " = lathe_cast<", t,
                        ">(", arg(0), ");\n");
        return;
      case ScalarOp::Kind::kReduce:
        EmitCombine(k, i, indent, out);
        return;
      case ScalarOp::Kind::kScan:
        absl::StrAppend(
            out, indent, "acc", i,
            op.reduce == ReduceKind::kProd ? " *= " : " += ", arg(0), ";\n",
            indent, "const ", t, " v", i, " = acc", i, ";\n");
        return;
    }
  }

  static std::string Init(const ScalarOp& op) {
    std::string t(CType(op.dtype));
    bool fp = IsFloatingPoint(op.dtype);
    switch (op.reduce) {
      case ReduceKind::kSum:
        return absl::StrCat(t, "(0)");
      case ReduceKind::kProd:
        return absl::StrCat(t, "(1)");
      case ReduceKind::kMax:
      case ReduceKind::kArgMax:
        return fp ? absl::StrCat("-std::numeric_limits<", t, ">::infinity()")
                  : absl::StrCat("std::numeric_limits<", t, ">::lowest()");
      case ReduceKind::kMin:
      case ReduceKind::kArgMin:
        return fp ? absl::StrCat("std::numeric_limits<", t, ">::infinity()")
                  : absl::StrCat("std::numeric_limits<", t, ">::max()");
      case ReduceKind::kAny:
        return "false";
      case ReduceKind::kAll:
        return "true";
      case ReduceKind::kWelfordMean:  // EmitWelfordSection's accumulators
      case ReduceKind::kWelfordM2:
        break;
    }
    return "0";
  }

  void EmitCombine(const Kernel& k, int i, const std::string& indent,
                   std::string* out) {
    const ScalarOp& op = k.ops[i];
    std::string v = Value(k, op.args[0]);
    std::string acc = absl::StrCat("acc", i);
    bool fp = IsFloatingPoint(k.ops[op.args[0]].dtype);
    switch (op.reduce) {
      case ReduceKind::kSum:
        absl::StrAppend(out, indent, acc, " += ", v, ";\n");
        return;
      case ReduceKind::kProd:
        absl::StrAppend(out, indent, acc, " *= ", v, ";\n");
        return;
      case ReduceKind::kMax:
      case ReduceKind::kMin: {
        const char* cmp = op.reduce == ReduceKind::kMax ? ">" : "<";
        absl::StrAppend(out, indent, acc, " = ", v, " ", cmp, " ", acc, " ? ",
                        v, " : ", acc, ";\n");
        if (fp)
          absl::StrAppend(out, indent, "nan", i, " |= ", v, " != ", v, ";\n");
        return;
      }
      case ReduceKind::kArgMax:
      case ReduceKind::kArgMin: {
        const char* cmp = op.reduce == ReduceKind::kArgMax ? ">" : "<";
        std::string cond = absl::StrCat(v, " ", cmp, " ", acc);
        if (fp) {
          cond = absl::StrCat("!(", acc, " != ", acc, ") && (", cond, " || ", v,
                              " != ", v, ")");
        }
        absl::StrAppend(out, indent, "if (", cond, ") { ", acc, " = ", v,
                        "; idx", i, " = ", Value(k, op.arg_index), "; }\n");
        return;
      }
      case ReduceKind::kAny:
        absl::StrAppend(out, indent, acc, " |= ", v, ";\n");
        return;
      case ReduceKind::kAll:
        absl::StrAppend(out, indent, acc, " &= ", v, ";\n");
        return;
      case ReduceKind::kWelfordMean:  // the block's shifted sum
        absl::StrAppend(out, indent, "bs", i, " += ", v, " - bk", i, ";\n");
        return;
      case ReduceKind::kWelfordM2:  // from the mean op's accumulator
        return;
    }
  }

  static const char* Clause(ReduceKind r) {
    switch (r) {
      case ReduceKind::kSum:
        return "+";
      case ReduceKind::kProd:
        return "*";
      case ReduceKind::kMax:
        return "max";
      case ReduceKind::kMin:
        return "min";
      case ReduceKind::kAny:
        return "|";
      case ReduceKind::kAll:
        return "&";
      default:
        return nullptr;
    }
  }

  // One section: its accumulators, its loop nest (simd on the innermost,
  // optionally parallel over the whole nest), its reductions' results.
  void EmitSection(const Kernel& k, int s, const std::string& indent,
                   bool parallel, std::string* out) {
    const Section& sec = k.sections[s];
    std::vector<int> reduces;
    for (size_t i = 0; i < k.ops.size(); ++i) {
      if (k.ops[i].section == s && k.ops[i].kind == ScalarOp::Kind::kReduce) {
        reduces.push_back(static_cast<int>(i));
      }
    }
    for (int i : reduces) {
      if (k.ops[i].reduce == ReduceKind::kWelfordMean) {
        EmitWelfordSection(k, s, indent, parallel, out);
        return;
      }
    }
    std::string clauses;
    bool simd = true;
    // A scan's iterations run in order, on one thread.
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (op.section != s || op.kind != ScalarOp::Kind::kScan) continue;
      absl::StrAppend(out, indent, CType(op.dtype), " acc", i, " = ", Init(op),
                      ";\n");
      simd = false;
      parallel = false;
    }
    EmitAccumulators(k, reduces, indent, &clauses, &simd, &parallel, out);
    std::string in = indent;
    if (!sec.vars.empty()) {
      Expr work = Product(sec.ranges);
      int n = static_cast<int>(sec.vars.size());
      if (parallel) {
        absl::StrAppend(
            out, indent, "#pragma omp parallel for", simd ? " simd" : "",
            n > 1 ? absl::StrCat(" collapse(", n, ")") : "", clauses, " if(",
            Cpp(work), " > ", kParallelThreshold, ")\n");
      }
      for (int v = 0; v < n; ++v) {
        if (!parallel && simd && v == n - 1) {
          absl::StrAppend(out, in, "#pragma omp simd", clauses, "\n");
        }
        std::string var(sec.vars[v].name());
        absl::StrAppend(out, in, "for (", index_type_, " ", var, " = 0; ", var,
                        " < ", Cpp(sec.ranges[v]), "; ++", var, ") {\n");
        in += "  ";
      }
    }
    for (size_t i = 0; i < k.ops.size(); ++i) {
      if (k.ops[i].section == s) EmitOp(k, static_cast<int>(i), in, out);
    }
    for (size_t v = 0; v < sec.vars.size(); ++v) {
      in.resize(in.size() - 2);
      absl::StrAppend(out, in, "}\n");
    }
    EmitReduceResults(k, reduces, indent, out);
  }

  // Declares the accumulators of reduce ops `reduces`, adding their OpenMP
  // reduction clauses; argmax/argmin (which run in order) clear simd and
  // parallel.
  void EmitAccumulators(const Kernel& k, const std::vector<int>& reduces,
                        const std::string& indent, std::string* clauses,
                        bool* simd, bool* parallel, std::string* out) {
    for (int i : reduces) {
      const ScalarOp& op = k.ops[i];
      DType in = k.ops[op.args[0]].dtype;
      absl::StrAppend(out, indent,
                      CType(op.reduce == ReduceKind::kArgMax ||
                                    op.reduce == ReduceKind::kArgMin
                                ? in
                                : op.dtype),
                      " acc", i, " = ",
                      Init(op.reduce == ReduceKind::kArgMax ||
                                   op.reduce == ReduceKind::kArgMin
                               ? ScalarOp{.dtype = in, .reduce = op.reduce}
                               : op),
                      ";\n");
      if ((op.reduce == ReduceKind::kMax || op.reduce == ReduceKind::kMin) &&
          IsFloatingPoint(in)) {
        // An int, not a bool: GCC vectorizes an or-reduction of bools
        // poorly (softmax's row max ran 3x slower).
        absl::StrAppend(out, indent, "int nan", i, " = 0;\n");
        absl::StrAppend(clauses, " reduction(|:nan", i, ")");
      }
      if (op.reduce == ReduceKind::kArgMax ||
          op.reduce == ReduceKind::kArgMin) {
        absl::StrAppend(out, indent, "int64_t idx", i, " = 0;\n");
        *simd = false;
        *parallel = false;
        continue;
      }
      absl::StrAppend(clauses, " reduction(", Clause(op.reduce), ":acc", i,
                      ")");
    }
  }

  // The values of reduce ops `reduces` once their loops are done.
  void EmitReduceResults(const Kernel& k, const std::vector<int>& reduces,
                         const std::string& indent, std::string* out) {
    for (int i : reduces) {
      const ScalarOp& op = k.ops[i];
      std::string t(CType(op.dtype));
      if (op.reduce == ReduceKind::kArgMax ||
          op.reduce == ReduceKind::kArgMin) {
        absl::StrAppend(out, indent, "const int64_t v", i, " = idx", i, ";\n");
      } else if ((op.reduce == ReduceKind::kMax ||
                  op.reduce == ReduceKind::kMin) &&
                 IsFloatingPoint(k.ops[op.args[0]].dtype)) {
        absl::StrAppend(out, indent, "const ", t, " v", i, " = nan", i,
                        " ? std::numeric_limits<", t, ">::quiet_NaN() : acc", i,
                        ";\n");
      } else {
        absl::StrAppend(out, indent, "const ", t, " v", i, " = acc", i, ";\n");
      }
    }
  }

  // A section with Welford reductions: its innermost loop runs in blocks of
  // kWelfordBlock. Each block takes its first value as a shift; one simd
  // pass sums the shifted Welford values (and accumulates the section's
  // other reductions), a second recomputes them (only the ops they need)
  // and sums the squared deviations from the block's mean, and the block's
  // (mean, M2, count) is merged into the double accumulator: one read of
  // memory, every loop vectorized in the values' own type, one division per
  // block. Threads split the blocks as any reduction's.
  void EmitWelfordSection(const Kernel& k, int s, const std::string& indent,
                          bool parallel, std::string* out) {
    const Section& sec = k.sections[s];
    std::vector<int> means, others;
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (op.section != s || op.kind != ScalarOp::Kind::kReduce) continue;
      if (op.reduce == ReduceKind::kWelfordMean) {
        means.push_back(static_cast<int>(i));
      } else if (op.reduce != ReduceKind::kWelfordM2) {
        others.push_back(static_cast<int>(i));
      }
    }
    // The ops the Welford values need, recomputed in the second pass.
    std::vector<bool> needed(k.ops.size(), false);
    std::vector<int> stack;
    for (int i : means) stack.push_back(k.ops[i].args[0]);
    while (!stack.empty()) {
      int i = stack.back();
      stack.pop_back();
      const ScalarOp& op = k.ops[i];
      if (needed[i] || op.section != s) continue;
      needed[i] = true;
      for (int a : op.args) stack.push_back(a);
    }
    std::string simd_clauses, block_clauses, deviation_clauses;
    bool simd = true;
    EmitAccumulators(k, others, indent, &simd_clauses, &simd, &parallel, out);
    std::string block_reductions = simd_clauses;
    for (int i : means) {
      absl::StrAppend(out, indent, "lathe_welford<double> wf", i,
                      "{0, 0, 0};\n");
      absl::StrAppend(&block_reductions, " reduction(lathe_welford_d:wf", i,
                      ")");
      absl::StrAppend(&block_clauses, " reduction(+:bs", i, ")");
      absl::StrAppend(&deviation_clauses, " reduction(+:bq", i, ")");
    }
    const int n = static_cast<int>(sec.vars.size());
    std::string in = indent;
    if (n > 0 && parallel) {
      absl::StrAppend(out, indent, "#pragma omp parallel for",
                      n > 1 ? absl::StrCat(" collapse(", n, ")") : "",
                      block_reductions, " if(", Cpp(Product(sec.ranges)), " > ",
                      kParallelThreshold, ")\n");
    }
    for (int v = 0; v + 1 < n; ++v) {
      std::string var(sec.vars[v].name());
      absl::StrAppend(out, in, "for (", index_type_, " ", var, " = 0; ", var,
                      " < ", Cpp(sec.ranges[v]), "; ++", var, ") {\n");
      in += "  ";
    }
    std::string last, range;
    if (n > 0) {
      last = std::string(sec.vars[n - 1].name());
      range = Cpp(sec.ranges[n - 1]);
      absl::StrAppend(out, in, "for (", index_type_, " blk = 0; blk < ", range,
                      "; blk += ", kWelfordBlock, ") {\n");
      in += "  ";
      absl::StrAppend(out, in, "const ", index_type_, " end = static_cast<",
                      index_type_, ">(std::min<int64_t>(int64_t{blk} + ",
                      kWelfordBlock, ", ", range, "));\n");
    }
    auto value = [&](int i) { return Value(k, k.ops[i].args[0]); };
    auto type = [&](int i) { return std::string(CType(k.ops[i].dtype)); };
    if (n == 0) {  // one element: its value, M2 0
      for (size_t i = 0; i < k.ops.size(); ++i) {
        const ScalarOp& op = k.ops[i];
        bool welford = op.kind == ScalarOp::Kind::kReduce &&
                       (op.reduce == ReduceKind::kWelfordMean ||
                        op.reduce == ReduceKind::kWelfordM2);
        if (op.section == s && !welford) {
          EmitOp(k, static_cast<int>(i), in, out);
        }
      }
      for (int i : means) {
        absl::StrAppend(out, in, "wf", i, " = lathe_welford_merge(wf", i,
                        ", {static_cast<double>(", value(i), "), 0.0, 1});\n");
      }
      EmitWelfordResults(k, s, others, indent, out);
      return;
    }
    // The shift: the block's first value (what the Welford values need,
    // at the block's first index).
    for (int i : means) absl::StrAppend(out, in, type(i), " bk", i, ";\n");
    absl::StrAppend(out, in, "{\n", in, "  const ", index_type_, " ", last,
                    " = blk;\n");
    for (size_t i = 0; i < k.ops.size(); ++i) {
      if (needed[i]) EmitOp(k, static_cast<int>(i), in + "  ", out);
    }
    for (int i : means) {
      absl::StrAppend(out, in, "  bk", i, " = ", value(i), ";\n");
    }
    absl::StrAppend(out, in, "}\n");
    for (int i : means) {
      absl::StrAppend(out, in, type(i), " bs", i, " = 0;\n");
    }
    // The block's pass: every op of the section, the shifted Welford values
    // summed.
    auto open_block_loop = [&](const std::string& clauses) {
      if (simd) absl::StrAppend(out, in, "#pragma omp simd", clauses, "\n");
      absl::StrAppend(out, in, "for (", index_type_, " ", last, " = blk; ",
                      last, " < end; ++", last, ") {\n");
      return in + "  ";
    };
    std::string body = open_block_loop(simd_clauses + block_clauses);
    for (size_t i = 0; i < k.ops.size(); ++i) {
      if (k.ops[i].section == s) EmitOp(k, static_cast<int>(i), body, out);
    }
    absl::StrAppend(out, in, "}\n");
    for (int i : means) {
      absl::StrAppend(out, in, "const ", type(i), " bc", i, " = bs", i,
                      " / static_cast<", type(i), ">(end - blk);\n", in,
                      type(i), " bq", i, " = 0;\n");
    }
    // The deviations' pass: only what the Welford values need; each
    // deviation from the block's mean is (value - shift) - (mean - shift),
    // a difference of small numbers.
    body = open_block_loop(deviation_clauses);
    for (size_t i = 0; i < k.ops.size(); ++i) {
      if (needed[i]) EmitOp(k, static_cast<int>(i), body, out);
    }
    for (int i : means) {
      absl::StrAppend(out, body, "{ const ", type(i), " d = (", value(i),
                      " - bk", i, ") - bc", i, "; bq", i, " += d * d; }\n");
    }
    absl::StrAppend(out, in, "}\n");
    for (int i : means) {
      absl::StrAppend(out, in, "wf", i, " = lathe_welford_merge(wf", i,
                      ", {static_cast<double>(bk", i,
                      ") + static_cast<double>(bc", i,
                      "), static_cast<double>(bq", i,
                      "), static_cast<int64_t>(end - blk)});\n");
    }
    for (int v = 0; v < n; ++v) {
      in.resize(in.size() - 2);
      absl::StrAppend(out, in, "}\n");
    }
    EmitWelfordResults(k, s, others, indent, out);
  }

  // The other reductions' values, then the Welford ones (NaN when empty).
  void EmitWelfordResults(const Kernel& k, int s,
                          const std::vector<int>& others,
                          const std::string& indent, std::string* out) {
    EmitReduceResults(k, others, indent, out);
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (op.section != s || op.kind != ScalarOp::Kind::kReduce) continue;
      int acc = op.reduce == ReduceKind::kWelfordMean ? static_cast<int>(i)
                : op.reduce == ReduceKind::kWelfordM2 ? op.arg_index
                                                      : -1;
      if (acc < 0) continue;
      std::string t(CType(op.dtype));
      absl::StrAppend(out, indent, "const ", t, " v", i, " = wf", acc,
                      ".n > 0 ? static_cast<", t, ">(wf", acc,
                      op.reduce == ReduceKind::kWelfordMean ? ".mean" : ".m2",
                      ") : std::numeric_limits<", t, ">::quiet_NaN();\n");
    }
  }

  // The loops of a kernel whose store streams (after its parallel pragma):
  // the outer loops, then the innermost in three parts: up to the first
  // 64-byte aligned element, blocks of 16 computed into an aligned array
  // and streamed, the rest; a fence after each row.
  void EmitStreamedLoops(const Kernel& k, std::string indent,
                         std::string* out) {
    const int n = static_cast<int>(k.vars.size());
    for (int v = 0; v + 1 < n; ++v) {
      std::string var(k.vars[v].name());
      absl::StrAppend(out, indent, "for (", index_type_, " ", var, " = 0; ",
                      var, " < ", Cpp(k.ranges[v]), "; ++", var, ") {\n");
      indent += "  ";
    }
    const ScalarOp& st = k.ops[stream_store_];
    const std::string x(k.vars[n - 1].name()), range = Cpp(k.ranges[n - 1]);
    absl::flat_hash_map<Expr, Expr> at0 = {{k.vars[n - 1], symbolic::Int(0)}};
    absl::flat_hash_map<Expr, Expr> at_block = {
        {k.vars[n - 1],
         symbolic::Symbol("xb", symbolic::SymbolType::kInt,
                          {.positive = false, .nonnegative = true})}};
    std::string row = Cpp(*symbolic::Substitute(st.index, at0));
    std::string block = Cpp(*symbolic::Substitute(st.index, at_block));
    auto plain_loop = [&](const std::string& from, const std::string& to) {
      absl::StrAppend(out, indent, "#pragma omp simd\n", indent, "for (",
                      index_type_, " ", x, " = ", from, "; ", x, " < ", to,
                      "; ++", x, ") {\n");
      EmitSection(k, 0, indent + "  ", /*parallel=*/false, out);
      absl::StrAppend(out, indent, "}\n");
    };
    absl::StrAppend(out, indent, "const ", index_type_, " lo = static_cast<",
                    index_type_, ">(lathe_stream_peel(", Ptr(st.buffer), " + ",
                    row, ", ", range, "));\n");
    plain_loop("0", "lo");
    absl::StrAppend(out, indent, index_type_, " xb = lo;\n", indent,
                    "for (; xb + 16 <= ", range, "; xb += 16) {\n", indent,
                    "  alignas(64) float lathe_t[16];\n", indent,
                    "  #pragma omp simd\n", indent, "  for (", index_type_,
                    " j = 0; j < 16; ++j) {\n", indent, "    const ",
                    index_type_, " ", x, " = xb + j;\n");
    stream_target_ = "lathe_t[j]";
    EmitSection(k, 0, indent + "    ", /*parallel=*/false, out);
    stream_target_.clear();
    absl::StrAppend(out, indent, "  }\n", indent, "  lathe_stream16(",
                    Ptr(st.buffer), " + ", block, ", lathe_t);\n", indent,
                    "}\n");
    plain_loop("xb", range);
    absl::StrAppend(out, indent, "lathe_stream_fence();\n");
    for (int v = 0; v + 1 < n; ++v) {
      indent.resize(indent.size() - 2);
      absl::StrAppend(out, indent, "}\n");
    }
  }

  // The store a flat kernel writes with streaming stores, or -1: the only
  // store, of an f32 buffer no kernel reads, direct and unmasked,
  // one element further at each step of the innermost loop, and at least
  // kStreamElements of them (with an innermost loop of 64 or more).
  int StreamedStore(const Kernel& k) const {
    const int n = static_cast<int>(k.vars.size());
    if (k.kind != Kernel::Kind::kLoops || n < 2 || k.sections.size() != 1 ||
        !k.sections[0].vars.empty()) {
      return -1;
    }
    Expr total = Product(k.ranges), inner = k.ranges[n - 1];
    if (total.kind() != symbolic::ExprKind::kInteger ||
        total.int_value() < kStreamElements ||
        inner.kind() != symbolic::ExprKind::kInteger ||
        inner.int_value() < 64) {
      return -1;
    }
    int store = -1;
    for (size_t i = 0; i < k.ops.size(); ++i) {
      const ScalarOp& op = k.ops[i];
      if (op.kind != ScalarOp::Kind::kStore) continue;
      if (store >= 0 || IsIndirect(op) ||
          p_.buffers[op.buffer].dtype != DType::kFloat32) {
        return -1;
      }
      store = static_cast<int>(i);
    }
    if (store < 0) return -1;
    const ScalarOp& st = k.ops[store];
    for (const Kernel& other : p_.kernels) {
      for (const ScalarOp& op : other.ops) {
        if (op.kind == ScalarOp::Kind::kLoad && op.buffer == st.buffer) {
          return -1;
        }
      }
      for (int b : other.extern_buffers) {
        if (b == st.buffer) return -1;
      }
    }
    Expr x = k.vars[n - 1];
    absl::flat_hash_map<Expr, Expr> next = {
        {x, symbolic::Add(x, symbolic::Int(1))}};
    absl::StatusOr<Expr> moved = symbolic::Substitute(st.index, next);
    if (!moved.ok() || symbolic::Sub(*moved, st.index) != symbolic::Int(1)) {
      return -1;
    }
    return store;
  }

  void EmitKernel(const Kernel& k, std::string* out) {
    absl::StrAppend(&*out, "static void ", k.name,
                    "(void* const* B, const int64_t* S, const double* F, "
                    "const LatheKernelRuntime* rt, int* E) {\n"
                    "  (void)S; (void)F; (void)rt; (void)E;\n");
    std::set<int> used;
    for (const ScalarOp& op : k.ops) {
      if (op.buffer >= 0) used.insert(op.buffer);
    }
    for (int b : k.extern_buffers) used.insert(b);
    for (int b : used) {
      std::string t(CType(p_.buffers[b].dtype));
      absl::StrAppend(out, "  ", t, "* ", Ptr(b), " = static_cast<", t, "*>(B[",
                      b, "]);\n");
    }
    if (k.kind == Kernel::Kind::kExtern &&
        (k.routine == "sconv" || k.routine == "sort")) {
      // rt->routine(geometry, inputs..., outputs...): the geometry array
      // (runtime/convolution.h, runtime/sort.h), then the buffers after
      // the outputs, then the outputs.
      std::string g;
      for (const Expr& e : k.extern_args) {
        absl::StrAppend(&g, g.empty() ? "" : ", ", Cpp(e));
      }
      const std::vector<int>& bs = k.extern_buffers;
      absl::StrAppend(out, "  const int64_t g[] = {", g, "};\n  rt->",
                      k.routine, "(g");
      for (size_t b = k.extern_outputs; b < bs.size(); ++b) {
        absl::StrAppend(out, ", ", Ptr(bs[b]));
      }
      for (int b = 0; b < k.extern_outputs; ++b) {
        absl::StrAppend(out, ", ", Ptr(bs[b]));
      }
      absl::StrAppend(out, ");\n}\n\n");
      return;
    }
    if (k.kind == Kernel::Kind::kExtern && k.routine == "randperm") {
      // Fisher-Yates as the interpreter's randperm: args n, seed, first.
      std::string t(CType(p_.buffers[k.extern_buffers[0]].dtype));
      std::string o = Ptr(k.extern_buffers[0]);
      absl::StrAppend(
          out, "  const int64_t n = ", Cpp(k.extern_args[0]),
          ", seed = ", Cpp(k.extern_args[1]), ", at = ", Cpp(k.extern_args[2]),
          ";\n  for (int64_t i = 0; i < n; ++i) ", o, "[i] = lathe_cast<", t,
          ">(i);\n  for (int64_t i = n - 1; i > 0; --i) {\n    const int64_t j "
          "= "
          "static_cast<int64_t>(lathe_rng_bits(seed, at + i) % "
          "static_cast<uint64_t>(i + 1));\n    const ",
          t, " v = ", o, "[i]; ", o, "[i] = ", o, "[j]; ", o,
          "[j] = v;\n  }\n}\n\n");
      return;
    }
    if (k.kind == Kernel::Kind::kExtern) {
      const std::vector<Expr>& a = k.extern_args;
      auto x = [&](int i) { return Cpp(a[i]); };
      const std::vector<int>& bs = k.extern_buffers;
      absl::StrAppend(out, "  rt->", k.routine, "(", x(0), ", ", x(1), ", ",
                      x(2), ", ", x(3), ",\n      ", Ptr(bs[1]), " + ", x(4),
                      ", ", x(5), ", ", x(6), ", ", x(7), ",\n      ",
                      Ptr(bs[2]), " + ", x(8), ", ", x(9), ", ", x(10), ", ",
                      x(11), ",\n      ", Ptr(bs[0]), " + ", x(12), ", ", x(13),
                      ", ", x(14), ", ", x(15), ");\n}\n\n");
      return;
    }
    int n = static_cast<int>(k.vars.size());
    bool one_section = k.sections.size() == 1 && k.sections[0].vars.empty();
    // Stores at loaded indices may hit one element several times: they run
    // in order, on one thread (the last write wins, as in the interpreter).
    bool serial = false;
    for (const ScalarOp& op : k.ops) {
      serial = serial || (op.kind == ScalarOp::Kind::kStore && IsIndirect(op));
    }
    std::string indent = "  ";
    Expr work = Product(k.ranges);
    for (const Section& s : k.sections) {
      if (!s.vars.empty()) work = symbolic::Mul(work, Product(s.ranges));
    }
    // Parallel over the outer loops; the innermost is the simd loop when
    // the body is one straight-line section.
    int collapse = one_section ? n - 1 : n;
    if (n > 0 && !serial) {
      absl::StrAppend(
          out, indent, "#pragma omp parallel for",
          collapse > 1 ? absl::StrCat(" collapse(", collapse, ")") : "",
          collapse == 0 ? " simd" : "", " if(", Cpp(work), " > ",
          kParallelThreshold, ")\n");
    }
    stream_store_ = serial ? -1 : StreamedStore(k);
    if (stream_store_ >= 0) {
      EmitStreamedLoops(k, indent, out);
      stream_store_ = -1;
      absl::StrAppend(out, "}\n\n");
      return;
    }
    for (int v = 0; v < n; ++v) {
      if (!serial && one_section && v == n - 1 && collapse > 0) {
        absl::StrAppend(out, indent, "#pragma omp simd\n");
      }
      std::string var(k.vars[v].name());
      absl::StrAppend(out, indent, "for (", index_type_, " ", var, " = 0; ",
                      var, " < ", Cpp(k.ranges[v]), "; ++", var, ") {\n");
      indent += "  ";
    }
    for (size_t s = 0; s < k.sections.size(); ++s) {
      EmitSection(k, static_cast<int>(s), indent,
                  /*parallel=*/n == 0 && !serial, out);
    }
    for (int v = 0; v < n; ++v) {
      indent.resize(indent.size() - 2);
      absl::StrAppend(out, indent, "}\n");
    }
    absl::StrAppend(out, "}\n\n");
  }

  // The store a kernel streams (StreamedStore), and while its block loop is
  // emitted, where that store's value goes instead.
  int stream_store_ = -1;
  std::string stream_target_;

  const Program& p_;
  absl::flat_hash_map<Expr, std::string> names_;
  const char* index_type_ = "int64_t";  // of every loop variable
};

}  // namespace

std::string EmitCpp(const Program& program) { return Emitter(program).Run(); }

}  // namespace lathe::codegen
