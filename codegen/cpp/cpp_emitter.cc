#include "codegen/cpp/cpp_emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "check.h"
#include "codegen/scalar_code.h"
#include "codegen/scalar_ops.h"
#include "runtime/kernel_runtime.h"
#include "symbolic/printer.h"

namespace lathe::codegen {
namespace {

using symbolic::Expr;

// Where a pooled loop's lambda takes the kernel's parameters, and where it
// is passed them; Run() writes them once the body has named its buffers.
constexpr char kParamsMark[] = "/*lathe:params*/";
constexpr char kArgsMark[] = "/*lathe:args*/";

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
// first aligned one (the compilers' builtins, clang's where GCC's x86 ones
// do not exist: <immintrin.h> would double the C++ compiler's time).
constexpr char kStreamPrelude[] =
    R"(typedef float lathe_v16sf __attribute__((vector_size(64)));
typedef float lathe_v8sf __attribute__((vector_size(32)));
static inline void lathe_stream16(float* p, const float* t) {
#if defined(__clang__)
  __builtin_nontemporal_store(*reinterpret_cast<const lathe_v16sf*>(t),
                              reinterpret_cast<lathe_v16sf*>(p));
#elif defined(__AVX512F__)
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

// OpenMP's reduction over the Welford accumulator (scalar_prelude.h's).
constexpr char kWelfordPrelude[] = R"(
#pragma omp declare reduction(lathe_welford_d : lathe_welford : \
    omp_out = lathe_welford_merge(omp_out, omp_in)) \
    initializer(omp_priv = lathe_welford{0, 0, 0})
)";

// The autotuner's table, its clock and the OpenMP calls a tuned kernel
// makes (declared, not included: <omp.h> is not on every compiler's path).
constexpr char kTuningPrelude[] = R"(
#include <time.h>
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);
static inline int lathe_threads(int n) {
  const int team = omp_get_max_threads();
  return n < team ? n : team;
}
static inline int64_t lathe_tune_now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}
)";

// A kernel's parallel loop as a lambda of its chunk [lathe_lo, lathe_hi)
// and the kernel's parameters `a`, run on the runtime's pool
// (runtime/thread_pool.h: it does not wait for a thread the scheduler holds
// back, as an OpenMP team's barrier does) when the loop is worth threads;
// `threads` 0 is the caller's OpenMP team. The parameters are the lambda's
// own, not captures: GCC turned a simd loop's loads through a captured
// pointer into gathers (softmax's row max ran 2x slower).
constexpr char kParallelPrelude[] = R"(extern "C" int omp_get_max_threads(void);
template <class F, class... A>
static inline void lathe_parallel(const LatheKernelRuntime* rt, int64_t n,
                                  int64_t grain, bool worth, int threads,
                                  const F& f, A... a) {
  if (n <= 0) return;  // and no chunk's first indices divide by a size 0
  const int team = threads > 0 ? threads : omp_get_max_threads();
  if (!worth || team <= 1 || n <= grain) {
    f(int64_t{0}, n, a...);
    return;
  }
  auto bound = [&f, a...](int64_t lo, int64_t hi) { f(lo, hi, a...); };
  rt->parallel_for(
      n, grain, team,
      [](void* c, int64_t lo, int64_t hi) {
        (*static_cast<decltype(bound)*>(c))(lo, hi);
      },
      &bound);
}
)";

}  // namespace

absl::string_view CppSourcePrelude() {
  static const std::string* const text = new std::string(
      absl::StrCat("// Generated by lathe (codegen/cpp/cpp_emitter.cc).\n",
                   KernelAbiSource(), "\n", symbolic::CppPrelude(), "\n",
                   ScalarPrelude(), "\n", kWelfordPrelude, "\n", kStreamPrelude,
                   "\n", kParallelPrelude, "\n"));
  return *text;
}

namespace {

class Emitter {
 public:
  Emitter(const Program& p, const CppEmitOptions& options)
      : p_(p), options_(options) {
    int ints = 0, floats = 0;
    for (Expr s : p.symbols) {
      names_[s] = s.is_float() ? absl::StrCat("F[", floats++, "]")
                               : absl::StrCat("S[", ints++, "]");
    }
    index_type_ = Int32Indexing(p) ? "int32_t" : "int64_t";
  }

  // Each kernel's body is a function of the buffers it touches, named in
  // the order the body first uses them (p0, p1, ...), so kernels that do the
  // same work on other buffers (a model's repeated layers, resnet's blocks)
  // share one function, which the C++ compiler reads once; k<N> passes it
  // its buffers.
  std::string Run() {
    std::string bodies, kernels;
    absl::flat_hash_map<std::string, std::string> shared;  // text -> name
    for (size_t ki = 0; ki < p_.kernels.size(); ++ki) {
      const Kernel& k = p_.kernels[ki];
      // Binds and asserts are the host function's (wrapper_emitter.cc).
      if (k.kind != Kernel::Kind::kLoops && k.kind != Kernel::Kind::kExtern) {
        continue;
      }
      params_.clear();
      // A fixed count never exceeds the caller's team (fewer threads than
      // at compile time: OMP_NUM_THREADS, torch.set_num_threads).
      threads_ = options_.tuning_table ? "nt"
                 : k.threads > 0
                     ? absl::StrCat("lathe_threads(", k.threads, ")")
                     : "";
      fixed_threads_ = fixed_threads_ || !threads_.empty();
      threaded_ = false;
      splittable_ = false;
      std::string body;
      EmitKernel(k, &body);
      const bool tuned = options_.tuning_table && threaded_;
      if (threaded_ && options_.tunable != nullptr) {
        options_.tunable->threads.push_back(static_cast<int>(ki));
        if (splittable_) {
          options_.tunable->split_batch.push_back(static_cast<int>(ki));
        }
      }
      std::set<int> used;
      for (const ScalarOp& op : k.ops) {
        if (op.buffer >= 0) used.insert(op.buffer);
      }
      used.insert(k.extern_buffers.begin(), k.extern_buffers.end());
      for (int b : used) Ptr(b);  // a buffer the body never names
      std::vector<int> order(params_.size());
      for (const auto& [b, j] : params_) order[j] = b;
      std::vector<std::string> formals, actuals;
      for (size_t j = 0; j < order.size(); ++j) {
        std::string t(CType(p_.buffers[order[j]].dtype));
        formals.push_back(absl::StrCat(t, "* p", j));
        actuals.push_back(
            absl::StrCat("static_cast<", t, "*>(B[", order[j], "])"));
      }
      formals.push_back(
          "const int64_t* S, const double* F, const LatheKernelRuntime* rt, "
          "int* E");
      if (tuned) formals.push_back("int nt");
      std::vector<std::string> names;
      for (size_t j = 0; j < order.size(); ++j) {
        names.push_back(absl::StrCat("p", j));
      }
      names.push_back(tuned ? "S, F, rt, E, nt" : "S, F, rt, E");
      body = absl::StrReplaceAll(body,
                                 {{kParamsMark, absl::StrJoin(formals, ", ")},
                                  {kArgsMark, absl::StrJoin(names, ", ")}});
      std::string text = absl::StrCat("(", absl::StrJoin(formals, ", "),
                                      ") {\n  (void)S; (void)F; (void)rt; "
                                      "(void)E;\n",
                                      body, "}\n\n");
      auto [it, added] =
          shared.emplace(std::move(text), absl::StrCat("lathe_", k.name));
      if (added) {
        absl::StrAppend(&bodies, "__attribute__((noinline)) static void ",
                        it->second, it->first);
      }
      actuals.push_back("S, F, rt, E");
      if (tuned) {
        actuals.push_back(absl::StrCat("lathe_tune_threads[", ki,
                                       "] != 0 ? lathe_tune_threads[", ki,
                                       "] : omp_get_max_threads()"));
      }
      absl::StrAppend(&kernels, "static void ", k.name,
                      "(void* const* B, const int64_t* S, const double* F, "
                      "const LatheKernelRuntime* rt, int* E) {\n  ",
                      tuned ? "const int64_t t0 = lathe_tune_now();\n  " : "",
                      it->second, "(", absl::StrJoin(actuals, ", "), ");\n",
                      tuned ? absl::StrCat("  lathe_tune_ns[", ki,
                                           "] += lathe_tune_now() - t0;\n")
                            : "",
                      "}\n");
    }
    std::string tuning;
    if (options_.tuning_table || fixed_threads_) tuning = kTuningPrelude;
    if (options_.tuning_table) {
      const size_t n = std::max<size_t>(p_.kernels.size(), 1);
      absl::StrAppend(
          &tuning,
          "#define LATHE_TUNE_EXPORT extern \"C\" "
          "__attribute__((visibility(\"default\")))\n"
          "LATHE_TUNE_EXPORT int32_t lathe_tune_threads[",
          n, "] = {};\nLATHE_TUNE_EXPORT int64_t lathe_tune_ns[", n,
          "] = {};\nLATHE_TUNE_EXPORT const int64_t lathe_tune_kernels = ",
          p_.kernels.size(), ";\n\n");
    }
    return absl::StrCat(CppSourcePrelude(), tuning, bodies, kernels);
  }

 private:
  // `e` as C++: runtime symbols from S[] and F[]; in an indirect access's
  // index (`op`), ind<k> is the value of its k-th indirect argument.
  std::string Cpp(Expr e, const ScalarOp* op = nullptr) {
    return symbolic::ToCpp(e, {.symbol_name = [this, op](Expr s) {
                             return KernelSymbolName(s, names_, op);
                           }});
  }

  // The pragma that runs the next `collapse` loops on the thread team (with
  // `simd` when they are also the vector loop), when their `work` is worth
  // it.
  std::string ParallelFor(int collapse, bool simd, absl::string_view clauses,
                          Expr work) {
    threaded_ = true;
    return absl::StrCat(
        "#pragma omp parallel for", simd ? " simd" : "",
        collapse > 1 ? absl::StrCat(" collapse(", collapse, ")") : "", clauses,
        " if(", Cpp(work), " > ", kParallelThreshold, ")",
        threads_.empty() ? "" : absl::StrCat(" num_threads(", threads_, ")"),
        "\n");
  }

  // Opens a kernel's parallel loop on the runtime's pool: a lambda over a
  // chunk of the flattened iterations of its first `outer` loops (the
  // simd loop when `simd`), binding their variables; returns the text that
  // closes it, to follow the loops inside.
  std::string OpenPooledLoops(const Kernel& k, int outer, bool simd, Expr work,
                              std::string* indent, std::string* out) {
    threaded_ = true;
    std::vector<Expr> ranges(k.ranges.begin(), k.ranges.begin() + outer);
    absl::StrAppend(out, *indent, "lathe_parallel(rt, ", Cpp(Product(ranges)),
                    ", ", simd ? 64 : 1, ", ", Cpp(work), " > ",
                    kParallelThreshold, ", ", threads_.empty() ? "0" : threads_,
                    ", [](int64_t lathe_lo, int64_t lathe_hi, ", kParamsMark,
                    ") {\n");
    const std::string in = *indent + "  ";
    const std::string close_lambda =
        absl::StrCat(*indent, "}, ", kArgsMark, ");\n");
    if (outer == 1) {
      const std::string var(k.vars[0].name());
      if (simd) absl::StrAppend(out, in, "#pragma omp simd\n");
      absl::StrAppend(out, in, "for (", index_type_, " ", var,
                      " = static_cast<", index_type_, ">(lathe_lo); ", var,
                      " < static_cast<", index_type_, ">(lathe_hi); ++", var,
                      ") {\n");
      *indent = in + "  ";
      return absl::StrCat(in, "}\n", close_lambda);
    }
    // The chunk's first indices, then a step with carries per iteration.
    for (int v = 0; v < outer; ++v) {
      const std::string var(k.vars[v].name());
      std::vector<Expr> inner(k.ranges.begin() + v + 1,
                              k.ranges.begin() + outer);
      const Expr step = Product(inner);
      std::string at = step == symbolic::Int(1)
                           ? std::string("lathe_lo")
                           : absl::StrCat("lathe_lo / (", Cpp(step), ")");
      if (v > 0) absl::StrAppend(&at, " % (", Cpp(k.ranges[v]), ")");
      absl::StrAppend(out, in, index_type_, " ", var, " = static_cast<",
                      index_type_, ">(", at, ");\n");
    }
    std::string carry = absl::StrCat("++", k.vars[0].name(), ";");
    for (int v = 1; v < outer; ++v) {
      const std::string var(k.vars[v].name());
      carry = absl::StrCat("if (++", var, " == ", Cpp(k.ranges[v]), ") { ", var,
                           " = 0; ", carry, " }");
    }
    absl::StrAppend(out, in,
                    "for (int64_t lathe_f = lathe_lo; lathe_f < lathe_hi; "
                    "++lathe_f) {\n");
    *indent = in + "  ";
    return absl::StrCat(*indent, carry, "\n", in, "}\n", close_lambda);
  }

  // A matrix product's statements with the kernel's threads: sgemm's
  // (which reads the caller's OpenMP thread count) with that count set
  // around the call, or, with the batch split, a loop on the pool over its
  // matrices, each product on the thread that takes it (a loop inside the
  // pool's runs on its thread). dgemm (Eigen, one thread) only splits. The
  // tuning build chooses at run time (nt < 0: split).
  std::string ProductWithThreads(const Kernel& k, const std::string& call,
                                 const std::string& one) {
    const bool batched = k.extern_args[0] != symbolic::Int(1);
    const bool counted = k.routine == "sgemm";
    if (!batched && !counted) return absl::StrCat("  ", call, ";\n");
    threaded_ = true;
    splittable_ = batched;
    const std::string split = absl::StrCat(
        "lathe_parallel(rt, ", Cpp(k.extern_args[0]), ", 1, true, ",
        options_.tuning_table || threads_.empty() ? "0" : threads_,
        ", [](int64_t lathe_lo, int64_t lathe_hi, ", kParamsMark,
        ") {\n      for (int64_t lathe_b = lathe_lo; lathe_b < lathe_hi; "
        "++lathe_b) ",
        one, ";\n    }, ", kArgsMark, ");\n");
    if (!options_.tuning_table && k.split_batch && batched) {
      return absl::StrCat("  {\n    ", split, "  }\n");
    }
    if (threads_.empty() || !counted) {
      if (options_.tuning_table) {
        return absl::StrCat("  if (nt < 0) {\n    ", split, "  } else {\n    ",
                            call, ";\n  }\n");
      }
      return absl::StrCat("  ", call, ";\n");
    }
    const std::string with_threads = absl::StrCat(
        "{\n    const int lathe_team = omp_get_max_threads();\n"
        "    omp_set_num_threads(",
        threads_, ");\n    ", call,
        ";\n    omp_set_num_threads(lathe_team);\n  }\n");
    if (options_.tuning_table && batched) {
      return absl::StrCat("  if (nt < 0) {\n    ", split, "  } else ",
                          with_threads);
    }
    return absl::StrCat("  ", with_threads);
  }

  // Buffer b as the kernel being emitted names it: its parameter p<j>, j
  // in the order of first use.
  std::string Ptr(int b) {
    auto it = params_.emplace(b, static_cast<int>(params_.size())).first;
    return absl::StrCat("p", it->second);
  }

  std::string Value(const Kernel& k, int i) { return absl::StrCat("v", i); }

  void EmitOp(const Kernel& k, int i, const std::string& indent,
              std::string* out) {
    const ScalarOp& op = k.ops[i];
    std::string t(CType(op.dtype));
    auto arg = [&](int a) { return Value(k, op.args[a]); };
    if (op.kind == ScalarOp::Kind::kStore && i == stream_store_ &&
        !stream_target_.empty()) {
      absl::StrAppend(out, indent, stream_target_, " = ", arg(0), ";\n");
      return;
    }
    if (EmitScalarOp(
            k, i, [this](Expr e, const ScalarOp* op) { return Cpp(e, op); },
            indent, out, [this](int b) { return Ptr(b); })) {
      return;
    }
    switch (op.kind) {
      case ScalarOp::Kind::kCheckIndex: {
        // The index as given (before wrapping) and the size are the
        // check's values; the first failing thread's win (kernel_abi.h).
        const std::string code = absl::StrCat(op.i + 1);
        EmitCheckIndex(
            k, i, [this](Expr e, const ScalarOp* op) { return Cpp(e, op); },
            indent,
            [&](const std::string& given, const std::string& bound) {
              return absl::StrCat("const int64_t cv[] = {", given, ", ", bound,
                                  "}; lathe_kernel_check_failed(E, rt, ", code,
                                  ", cv, 2);");
            },
            out);
        return;
      }
      case ScalarOp::Kind::kReduce:
        EmitCombine(k, i, indent, out);
        return;
      case ScalarOp::Kind::kScan:
        if (op.reduce == ReduceKind::kLogAddExp) {
          absl::StrAppend(out, indent, "acc", i, " = lathe_log_add_exp(",
                          arg(0), ", acc", i, ");\n");
        } else {
          absl::StrAppend(
              out, indent, "acc", i,
              op.reduce == ReduceKind::kProd ? " *= " : " += ", arg(0), ";\n");
        }
        absl::StrAppend(out, indent, "const ", t, " v", i, " = acc", i, ";\n");
        return;
      default:
        LATHE_CHECK(false) << "EmitScalarOp emits op " << i;
    }
  }

  static std::string Init(const ScalarOp& op) {
    return ReduceIdentity(op.reduce, op.dtype);
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
      case ReduceKind::kLogAddExp:  // a scan's (EmitScalarOp)
        LATHE_CHECK(false) << "logaddexp is a scan, not a reduction";
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
        absl::StrAppend(out, indent, ParallelFor(n, simd, clauses, work));
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
      absl::StrAppend(out, indent, "lathe_welford wf", i, "{0, 0, 0};\n");
      absl::StrAppend(&block_reductions, " reduction(lathe_welford_d:wf", i,
                      ")");
      absl::StrAppend(&block_clauses, " reduction(+:bs", i, ")");
      absl::StrAppend(&deviation_clauses, " reduction(+:bq", i, ")");
    }
    const int n = static_cast<int>(sec.vars.size());
    std::string in = indent;
    if (n > 0 && parallel) {
      absl::StrAppend(out, indent,
                      ParallelFor(n, /*simd=*/false, block_reductions,
                                  Product(sec.ranges)));
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
    // (0 when that is not finite: an infinity's block keeps an infinite
    // mean, as sum / n does.)
    for (int i : means) {
      absl::StrAppend(out, in, "  bk", i, " = lathe_op_isfinite(", value(i),
                      ") ? ", value(i), " : ", type(i), "(0);\n");
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
    EmitWelfordBlockInDouble(k, means, needed, in, last, out);
    for (int i : means) {
      absl::StrAppend(out, in, "wf", i, " = lathe_welford_merge(wf", i,
                      ", {static_cast<double>(bk", i, ") + dc", i, ", dq", i,
                      ", static_cast<int64_t>(end - blk)});\n");
    }
    for (int v = 0; v < n; ++v) {
      in.resize(in.size() - 2);
      absl::StrAppend(out, in, "}\n");
    }
    EmitWelfordResults(k, s, others, indent, out);
  }

  // The block's mean and M2 (less the shift) in double, dc<i> and dq<i>:
  // its sums in the values' type, or, when one of those is not finite, the
  // same two passes again in double. So values whose squared deviations
  // overflow f32 (beyond about 1e18) have their variance, as PyTorch's CPU
  // var accumulates float in double; an infinity or NaN among the values
  // gives what it gives in the values' type.
  void EmitWelfordBlockInDouble(const Kernel& k, const std::vector<int>& means,
                                const std::vector<bool>& needed,
                                const std::string& in, const std::string& last,
                                std::string* out) {
    std::vector<std::string> overflowed;
    for (int i : means) {
      absl::StrAppend(out, in, "double dc", i, " = bc", i, ", dq", i, " = bq",
                      i, ";\n");
      if (k.ops[i].dtype != DType::kFloat64) {  // double gains nothing
        overflowed.push_back(absl::StrCat("!lathe_op_isfinite(bq", i, ")"));
      }
    }
    if (overflowed.empty()) return;
    absl::StrAppend(out, in, "if (", absl::StrJoin(overflowed, " || "),
                    ") {\n");
    const std::string slow = in + "  ";
    auto shifted = [&](int i) {
      return absl::StrCat("(static_cast<double>(", Value(k, k.ops[i].args[0]),
                          ") - static_cast<double>(bk", i, "))");
    };
    auto pass = [&](const std::function<std::string(int)>& step) {
      absl::StrAppend(out, slow, "for (", index_type_, " ", last, " = blk; ",
                      last, " < end; ++", last, ") {\n");
      for (size_t i = 0; i < k.ops.size(); ++i) {
        if (needed[i]) EmitOp(k, static_cast<int>(i), slow + "  ", out);
      }
      for (int i : means) absl::StrAppend(out, slow, "  ", step(i), "\n");
      absl::StrAppend(out, slow, "}\n");
    };
    for (int i : means) {
      absl::StrAppend(out, slow, "dc", i, " = 0; dq", i, " = 0;\n");
    }
    pass([&](int i) { return absl::StrCat("dc", i, " += ", shifted(i), ";"); });
    for (int i : means) {
      absl::StrAppend(out, slow, "dc", i,
                      " /= static_cast<double>(end - blk);\n");
    }
    pass([&](int i) {
      return absl::StrCat("{ const double d = ", shifted(i), " - dc", i, "; dq",
                          i, " += d * d; }");
    });
    absl::StrAppend(out, in, "}\n");
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

  // The loops of a kernel whose store streams, inside its pooled loop: the
  // outer loops from `first` on (those before it are the pool's), then the
  // innermost in three parts: up to the first
  // 64-byte aligned element, blocks of 16 computed into an aligned array
  // and streamed, the rest; a fence after each row.
  void EmitStreamedLoops(const Kernel& k, int first, std::string indent,
                         std::string* out) {
    const int n = static_cast<int>(k.vars.size());
    for (int v = first; v + 1 < n; ++v) {
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
    for (int v = first; v + 1 < n; ++v) {
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

  // The body of kernel `k` (without its braces), its buffers named by Ptr.
  void EmitKernel(const Kernel& k, std::string* out) {
    if (k.kind == Kernel::Kind::kExtern) {
      auto cpp = [this](Expr e) { return Cpp(e); };
      if (k.routine == "randperm") {
        absl::StrAppend(
            out,
            RandpermLoop(k, cpp, Ptr(k.extern_buffers[0]),
                         CType(p_.buffers[k.extern_buffers[0]].dtype), "  "));
        return;
      }
      auto ptr = [this](int b) { return Ptr(b); };
      const std::string fn = absl::StrCat("rt->", k.routine);
      const ExternCallText call = ExternCall(k, cpp, ptr, fn, "", "  ");
      absl::StrAppend(out, call.setup);
      // sgemm takes the caller's thread count, and products split over
      // their batch; the other routines split their work over the whole
      // team (runtime/onednn.h).
      if (k.routine == "sgemm" || k.routine == "dgemm") {
        const ExternCallText one =
            ExternCall(k, cpp, ptr, fn, "", "  ", "lathe_b");
        absl::StrAppend(out, ProductWithThreads(k, call.call, one.call));
      } else {
        absl::StrAppend(out, "  ", call.call, ";\n");
      }
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
    // the body is one straight-line section (then a single loop is both).
    const int collapse = one_section ? n - 1 : n;
    int outer = n > 0 && !serial ? std::max(collapse, 1) : 0;
    std::string close;
    if (outer > 0) {
      close =
          OpenPooledLoops(k, outer, /*simd=*/collapse == 0, work, &indent, out);
    }
    stream_store_ = serial ? -1 : StreamedStore(k);
    if (stream_store_ >= 0) {
      EmitStreamedLoops(k, outer, indent, out);
      stream_store_ = -1;
      absl::StrAppend(out, close);
      return;
    }
    for (int v = outer; v < n; ++v) {
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
    for (int v = outer; v < n; ++v) {
      indent.resize(indent.size() - 2);
      absl::StrAppend(out, indent, "}\n");
    }
    absl::StrAppend(out, close);
  }

  // The store a kernel streams (StreamedStore), and while its block loop is
  // emitted, where that store's value goes instead.
  int stream_store_ = -1;
  std::string stream_target_;

  const Program& p_;
  const CppEmitOptions& options_;
  // The kernel's num_threads argument ("": the whole team), whether its
  // body runs on threads (a parallel loop or a tunable library call), and
  // whether some kernel's count is fixed (which needs lathe_threads).
  std::string threads_;
  bool threaded_ = false;
  bool splittable_ = false;               // a batched product (TunableKernels)
  bool fixed_threads_ = false;            // some kernel's threads are fixed
  absl::flat_hash_map<int, int> params_;  // buffer -> p<j> of this kernel
  absl::flat_hash_map<Expr, std::string> names_;
  const char* index_type_ = "int64_t";  // of every loop variable
};

}  // namespace

std::string EmitCpp(const Program& program, const CppEmitOptions& options) {
  return Emitter(program, options).Run();
}

}  // namespace lathe::codegen
