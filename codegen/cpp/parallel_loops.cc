#include "codegen/cpp/parallel_loops.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "check.h"
#include "codegen/loop_ir.h"

namespace lathe::codegen {
namespace {

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
#include <sched.h>
static inline void lathe_lock(int* held) {
  for (int spins = 0; __atomic_exchange_n(held, 1, __ATOMIC_ACQUIRE);
       ++spins) {
    if (spins >= 64) {
      sched_yield();  // the holder may be descheduled
    } else {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
}
static inline void lathe_unlock(int* held) {
  __atomic_store_n(held, 0, __ATOMIC_RELEASE);
}
)";

}  // namespace

absl::string_view ParallelPrelude() { return kParallelPrelude; }

std::string OpenPooledLambda(const PooledLambda& l, absl::string_view indent,
                             std::string* out) {
  absl::StrAppend(out, indent, "lathe_parallel(rt, ", l.n, ", ", l.grain, ", ",
                  l.worth, ", ", l.threads, ", [", l.captures,
                  "](int64_t lathe_lo, int64_t lathe_hi, ", kParamsMark,
                  l.params, ") {\n");
  return absl::StrCat(indent, "}, ", kArgsMark, l.args, ");\n");
}

std::string OpenFlatLoop(const std::vector<std::string>& vars,
                         const std::vector<symbolic::Expr>& ranges,
                         const std::function<std::string(symbolic::Expr)>& cpp,
                         absl::string_view index_type, bool simd,
                         absl::string_view simd_clauses, std::string* indent,
                         std::string* out) {
  LATHE_CHECK(!vars.empty() && vars.size() == ranges.size());
  const std::string in = *indent;
  if (vars.size() == 1) {
    if (simd) absl::StrAppend(out, in, "#pragma omp simd", simd_clauses, "\n");
    absl::StrAppend(out, in, "for (", index_type, " ", vars[0],
                    " = static_cast<", index_type, ">(lathe_lo); ", vars[0],
                    " < static_cast<", index_type, ">(lathe_hi); ++", vars[0],
                    ") {\n");
    *indent = in + "  ";
    return absl::StrCat(in, "}\n");
  }
  // The chunk's first indices, then a step with carries per iteration.
  for (size_t v = 0; v < vars.size(); ++v) {
    std::vector<symbolic::Expr> inner(ranges.begin() + v + 1, ranges.end());
    const symbolic::Expr step = Product(inner);
    std::string at = step == symbolic::Int(1)
                         ? std::string("lathe_lo")
                         : absl::StrCat("lathe_lo / (", cpp(step), ")");
    if (v > 0) absl::StrAppend(&at, " % (", cpp(ranges[v]), ")");
    absl::StrAppend(out, in, index_type, " ", vars[v], " = static_cast<",
                    index_type, ">(", at, ");\n");
  }
  std::string carry = absl::StrCat("++", vars[0], ";");
  for (size_t v = 1; v < vars.size(); ++v) {
    carry = absl::StrCat("if (++", vars[v], " == ", cpp(ranges[v]), ") { ",
                         vars[v], " = 0; ", carry, " }");
  }
  absl::StrAppend(out, in,
                  "for (int64_t lathe_f = lathe_lo; lathe_f < lathe_hi; "
                  "++lathe_f) {\n");
  *indent = in + "  ";
  return absl::StrCat(*indent, carry, "\n", in, "}\n");
}

std::string CombineInto(absl::string_view op, absl::string_view target,
                        absl::string_view part) {
  if (op == "max" || op == "min") {
    return absl::StrCat(target, " = ", part, op == "max" ? " > " : " < ",
                        target, " ? ", part, " : ", target, ";");
  }
  LATHE_CHECK(op == "+" || op == "*" || op == "|" || op == "&") << op;
  return absl::StrCat(target, " ", op, "= ", part, ";");
}

std::string FoldPartials(const std::vector<Partial>& partials,
                         absl::string_view indent, PooledLambda* l) {
  if (partials.empty()) return "";
  absl::StrAppend(&l->params, ", int* lathe_held");
  absl::StrAppend(&l->args, ", &lathe_held");
  std::string fold = absl::StrCat(indent, "lathe_lock(lathe_held);\n");
  for (const Partial& p : partials) {
    absl::StrAppend(&l->params, ", ", p.type, "* lathe_", p.name);
    absl::StrAppend(&l->args, ", &", p.name);
    const std::string to = absl::StrCat("*lathe_", p.name);
    absl::StrAppend(&fold, indent,
                    p.op == "welford"
                        ? absl::StrCat(to, " = lathe_welford_merge(", to, ", ",
                                       p.name, ");")
                        : CombineInto(p.op, to, p.name),
                    "\n");
  }
  return absl::StrCat(fold, indent, "lathe_unlock(lathe_held);\n");
}

}  // namespace lathe::codegen
