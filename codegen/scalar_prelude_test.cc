// The scalar prelude compiled as a header, each function checked against
// the interpreter's op (ir/interpreter.h: the reference kernels, which
// follow PyTorch's) on edge values: NaN, ±0, ±inf, halves for rounding,
// negative operands for integer division and remainder signs, the integer
// extremes for wrapping arithmetic; and the f16/bf16 conversions against
// runtime/half.h on every 16-bit pattern and on floats around each rounding
// boundary.

#include "codegen/scalar_prelude.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/graph_text.h"
#include "ir/interpreter.h"
#include "runtime/half.h"
#include "runtime/tensor.h"
#include "testing/status_matchers.h"

namespace lathe {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<double> kFloats = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0,
                                     -1.0, 0.5,  -0.5,  1.5, 2.5,  -2.5,
                                     3.0,  -7.0, 1e-8,  0.1, 100,  -1e30};

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
const std::vector<int64_t> kInts = {0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -128};

// The operands of one dtype: as doubles (the interpreter's inputs) and how
// the graph annotates them.
struct Typed {
  const char* annotation;  // "f32", "f64", "i32", "i64"
  DType dtype;
};

// The interpreter's result of `call` (over inputs a, b, c of `type`, or a
// bool c for where) on the given columns: one double per element.
// (long double: an int64 result exactly.)
std::vector<long double> Oracle(
    const std::string& call, const Typed& type,
    const std::vector<std::vector<long double>>& columns,
    bool bool_first = false) {
  const size_t n = columns[0].size();
  std::string params, names = "abc";
  for (size_t k = 0; k < columns.size(); ++k) {
    const char* a = bool_first && k == 0 ? "b8" : type.annotation;
    absl::StrAppend(&params, k ? ", " : "", std::string(1, names[k]), ": \"", a,
                    "[", n, "][1]cpu\"");
  }
  std::string text =
      absl::StrCat("def forward(self, ", params, "):\n    r = torch.ops.aten.",
                   call, "\n    return (r,)\n");
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(text);
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
  if (!g.ok()) return {};
  std::vector<ir::Value> inputs;
  for (size_t k = 0; k < columns.size(); ++k) {
    DType d = bool_first && k == 0 ? DType::kBool : type.dtype;
    Tensor t = Tensor::Empty({static_cast<int64_t>(n)}, d).value();
    for (size_t i = 0; i < n; ++i) {
      // Integers exactly (a double cannot hold every int64).
      if (d == DType::kInt64) {
        t.data<int64_t>()[i] = static_cast<int64_t>(columns[k][i]);
      } else if (d == DType::kInt32) {
        t.data<int32_t>()[i] = static_cast<int32_t>(columns[k][i]);
      } else {
        t.SetDouble({static_cast<int64_t>(i)}, columns[k][i]);
      }
    }
    inputs.push_back(ir::Value::OfTensor(t));
  }
  absl::StatusOr<ir::Interpretation> r = ir::Interpret(**g, inputs);
  EXPECT_TRUE(r.ok()) << r.status() << "\n" << text;
  if (!r.ok()) return {};
  std::vector<long double> out;
  const Tensor& t = r->outputs[0].tensor;
  for (size_t i = 0; i < n; ++i) {
    if (t.dtype() == DType::kInt64) {
      out.push_back(t.data<int64_t>()[i]);
    } else if (t.dtype() == DType::kInt32) {
      out.push_back(t.data<int32_t>()[i]);
    } else {
      out.push_back(t.GetDouble({static_cast<int64_t>(i)}));
    }
  }
  return out;
}

// Whether `got` is `want`: the same value (NaN matches NaN; zeros' signs
// must agree), or within `ulps` units in the last place of `eps`.
bool Same(long double got, long double want, double eps, int ulps,
          bool zero_sign = true) {
  if (std::isnan(want)) return std::isnan(got);
  if (got == want) {
    return got != 0 || !zero_sign || std::signbit(got) == std::signbit(want) ||
           ulps > 0;
  }
  if (ulps == 0 || std::isinf(want) || std::isnan(got)) return false;
  return std::fabs(got - want) <=
         ulps * eps * std::max<long double>(1.0, std::fabs(want));
}

// One scalar function under test: the interpreter's op, and the prelude's
// function at f32, f64, i64 and i32 (null where it is not defined).
struct Fn {
  std::string name;  // the prelude's, without lathe_op_
  std::string call;  // "neg.default(a)"
  int arity;
  int ulps = 0;  // transcendental: libm's results may differ by this much
  std::function<double(double, double)> f32, f64;
  std::function<long double(int64_t, int64_t)> i64, i32;
};

// Functions the lowering uses that no registry op computes alone: checked
// against the C library's (PyTorch's kernels call the same), by name.
double Reference(const std::string& fn, double a, double b) {
  if (fn == "signbit") return std::signbit(a);
  if (fn == "erfc") return std::erfc(a);
  if (fn == "lgamma") return std::lgamma(a);
  if (fn == "frac") return a - std::trunc(a);
  if (fn == "copysign") return std::copysign(a, b);
  return kNaN;
}
bool HasReference(const std::string& fn) {
  return fn == "signbit" || fn == "erfc" || fn == "lgamma" || fn == "frac" ||
         fn == "copysign";
}

#define LATHE_FLOATS(n)                                                       \
  [](double a, double b) {                                                    \
    return static_cast<double>(                                               \
        ::lathe_op_##n<float>(static_cast<float>(a), static_cast<float>(b))); \
  },                                                                          \
      [](double a, double b) {                                                \
        return static_cast<double>(::lathe_op_##n<double>(a, b));             \
      }
#define LATHE_INTS(n)                                               \
  [](int64_t a, int64_t b) {                                        \
    return static_cast<long double>(::lathe_op_##n<int64_t>(a, b)); \
  },                                                                \
      [](int64_t a, int64_t b) {                                    \
        return static_cast<double>(::lathe_op_##n<int32_t>(         \
            static_cast<int32_t>(a), static_cast<int32_t>(b)));     \
      }
#define LATHE_FLOATS1(n)                                                      \
  [](double a, double) {                                                      \
    return static_cast<double>(::lathe_op_##n<float>(static_cast<float>(a))); \
  },                                                                          \
      [](double a, double) {                                                  \
        return static_cast<double>(::lathe_op_##n<double>(a));                \
      }
#define LATHE_INTS1(n)                                           \
  [](int64_t a, int64_t) {                                       \
    return static_cast<long double>(::lathe_op_##n<int64_t>(a)); \
  },                                                             \
      [](int64_t a, int64_t) {                                   \
        return static_cast<double>(                              \
            ::lathe_op_##n<int32_t>(static_cast<int32_t>(a)));   \
      }

std::vector<Fn> Unary() {
  return {
      {"neg", "neg.default(a)", 1, 0, LATHE_FLOATS1(neg), LATHE_INTS1(neg)},
      {"abs", "abs.default(a)", 1, 0, LATHE_FLOATS1(abs), LATHE_INTS1(abs)},
      {"relu", "relu.default(a)", 1, 0, LATHE_FLOATS1(relu), LATHE_INTS1(relu)},
      {"floor", "floor.default(a)", 1, 0, LATHE_FLOATS1(floor),
       LATHE_INTS1(floor)},
      {"ceil", "ceil.default(a)", 1, 0, LATHE_FLOATS1(ceil), LATHE_INTS1(ceil)},
      {"trunc", "trunc.default(a)", 1, 0, LATHE_FLOATS1(trunc),
       LATHE_INTS1(trunc)},
      {"round", "round.default(a)", 1, 0, LATHE_FLOATS1(round),
       LATHE_INTS1(round)},
      {"sign", "sign.default(a)", 1, 0, LATHE_FLOATS1(sign), LATHE_INTS1(sign)},
      {"square", "square.default(a)", 1, 0, LATHE_FLOATS1(square),
       LATHE_INTS1(square)},
      {"bitwise_not", "bitwise_not.default(a)", 1, 0, nullptr, nullptr,
       LATHE_INTS1(bitwise_not)},
      {"logical_not", "logical_not.default(a)", 1, 0,
       LATHE_FLOATS1(logical_not), LATHE_INTS1(logical_not)},
      {"isnan", "isnan.default(a)", 1, 0, LATHE_FLOATS1(isnan), nullptr,
       nullptr},
      {"isinf", "isinf.default(a)", 1, 0, LATHE_FLOATS1(isinf), nullptr,
       nullptr},
      {"isfinite", "isfinite.default(a)", 1, 0, LATHE_FLOATS1(isfinite),
       nullptr, nullptr},
      {"signbit", "signbit.default(a)", 1, 0, LATHE_FLOATS1(signbit),
       LATHE_INTS1(signbit)},
      {"exp", "exp.default(a)", 1, 4, LATHE_FLOATS1(exp), nullptr, nullptr},
      {"exp2", "exp2.default(a)", 1, 4, LATHE_FLOATS1(exp2), nullptr, nullptr},
      {"expm1", "expm1.default(a)", 1, 4, LATHE_FLOATS1(expm1), nullptr,
       nullptr},
      {"log", "log.default(a)", 1, 4, LATHE_FLOATS1(log), nullptr, nullptr},
      {"log2", "log2.default(a)", 1, 4, LATHE_FLOATS1(log2), nullptr, nullptr},
      {"log10", "log10.default(a)", 1, 4, LATHE_FLOATS1(log10), nullptr,
       nullptr},
      {"log1p", "log1p.default(a)", 1, 4, LATHE_FLOATS1(log1p), nullptr,
       nullptr},
      {"sqrt", "sqrt.default(a)", 1, 0, LATHE_FLOATS1(sqrt), nullptr, nullptr},
      {"rsqrt", "rsqrt.default(a)", 1, 4, LATHE_FLOATS1(rsqrt), nullptr,
       nullptr},
      {"reciprocal", "reciprocal.default(a)", 1, 0, LATHE_FLOATS1(reciprocal),
       nullptr, nullptr},
      {"sin", "sin.default(a)", 1, 4, LATHE_FLOATS1(sin), nullptr, nullptr},
      {"cos", "cos.default(a)", 1, 4, LATHE_FLOATS1(cos), nullptr, nullptr},
      {"tan", "tan.default(a)", 1, 4, LATHE_FLOATS1(tan), nullptr, nullptr},
      {"asin", "asin.default(a)", 1, 4, LATHE_FLOATS1(asin), nullptr, nullptr},
      {"acos", "acos.default(a)", 1, 4, LATHE_FLOATS1(acos), nullptr, nullptr},
      {"atan", "atan.default(a)", 1, 4, LATHE_FLOATS1(atan), nullptr, nullptr},
      {"sinh", "sinh.default(a)", 1, 4, LATHE_FLOATS1(sinh), nullptr, nullptr},
      {"cosh", "cosh.default(a)", 1, 4, LATHE_FLOATS1(cosh), nullptr, nullptr},
      {"tanh", "tanh.default(a)", 1, 4, LATHE_FLOATS1(tanh), nullptr, nullptr},
      {"asinh", "asinh.default(a)", 1, 4, LATHE_FLOATS1(asinh), nullptr,
       nullptr},
      {"acosh", "acosh.default(a)", 1, 4, LATHE_FLOATS1(acosh), nullptr,
       nullptr},
      {"atanh", "atanh.default(a)", 1, 4, LATHE_FLOATS1(atanh), nullptr,
       nullptr},
      {"erf", "erf.default(a)", 1, 4, LATHE_FLOATS1(erf), nullptr, nullptr},
      {"erfc", "erfc.default(a)", 1, 4, LATHE_FLOATS1(erfc), nullptr, nullptr},
      {"sigmoid", "sigmoid.default(a)", 1, 4, LATHE_FLOATS1(sigmoid), nullptr,
       nullptr},
      {"silu", "silu.default(a)", 1, 4, LATHE_FLOATS1(silu), nullptr, nullptr},
      {"frac", "frac.default(a)", 1, 0, LATHE_FLOATS1(frac), nullptr, nullptr},
      {"lgamma", "lgamma.default(a)", 1, 4, LATHE_FLOATS1(lgamma), nullptr,
       nullptr},
  };
}

std::vector<Fn> Binary() {
  return {
      {"add", "add.Tensor(a, b)", 2, 0, LATHE_FLOATS(add), LATHE_INTS(add)},
      {"sub", "sub.Tensor(a, b)", 2, 0, LATHE_FLOATS(sub), LATHE_INTS(sub)},
      {"mul", "mul.Tensor(a, b)", 2, 0, LATHE_FLOATS(mul), LATHE_INTS(mul)},
      {"truediv", "div.Tensor(a, b)", 2, 0, LATHE_FLOATS(truediv), nullptr,
       nullptr},
      {"floordiv", "div.Tensor_mode(a, b, rounding_mode = 'floor')", 2, 0,
       LATHE_FLOATS(floordiv), LATHE_INTS(floordiv)},
      {"truncdiv", "div.Tensor_mode(a, b, rounding_mode = 'trunc')", 2, 0,
       LATHE_FLOATS(truncdiv), LATHE_INTS(truncdiv)},
      {"remainder", "remainder.Tensor(a, b)", 2, 0, LATHE_FLOATS(remainder),
       LATHE_INTS(remainder)},
      {"fmod", "fmod.Tensor(a, b)", 2, 0, LATHE_FLOATS(fmod), LATHE_INTS(fmod)},
      {"pow", "pow.Tensor_Tensor(a, b)", 2, 4, LATHE_FLOATS(pow),
       LATHE_INTS(pow)},
      {"maximum", "maximum.default(a, b)", 2, 0, LATHE_FLOATS(maximum),
       LATHE_INTS(maximum)},
      {"minimum", "minimum.default(a, b)", 2, 0, LATHE_FLOATS(minimum),
       LATHE_INTS(minimum)},
      {"fmax", "fmax.default(a, b)", 2, 0, LATHE_FLOATS(fmax),
       LATHE_INTS(fmax)},
      {"fmin", "fmin.default(a, b)", 2, 0, LATHE_FLOATS(fmin),
       LATHE_INTS(fmin)},
      {"atan2", "atan2.default(a, b)", 2, 4, LATHE_FLOATS(atan2), nullptr,
       nullptr},
      {"hypot", "hypot.default(a, b)", 2, 4, LATHE_FLOATS(hypot), nullptr,
       nullptr},
      {"copysign", "copysign.Tensor(a, b)", 2, 0, LATHE_FLOATS(copysign),
       nullptr, nullptr},
      {"eq", "eq.Tensor(a, b)", 2, 0, LATHE_FLOATS(eq), LATHE_INTS(eq)},
      {"ne", "ne.Tensor(a, b)", 2, 0, LATHE_FLOATS(ne), LATHE_INTS(ne)},
      {"lt", "lt.Tensor(a, b)", 2, 0, LATHE_FLOATS(lt), LATHE_INTS(lt)},
      {"le", "le.Tensor(a, b)", 2, 0, LATHE_FLOATS(le), LATHE_INTS(le)},
      {"gt", "gt.Tensor(a, b)", 2, 0, LATHE_FLOATS(gt), LATHE_INTS(gt)},
      {"ge", "ge.Tensor(a, b)", 2, 0, LATHE_FLOATS(ge), LATHE_INTS(ge)},
      {"logical_and", "logical_and.default(a, b)", 2, 0,
       LATHE_FLOATS(logical_and), LATHE_INTS(logical_and)},
      {"logical_or", "logical_or.default(a, b)", 2, 0, LATHE_FLOATS(logical_or),
       LATHE_INTS(logical_or)},
      {"logical_xor", "logical_xor.default(a, b)", 2, 0,
       LATHE_FLOATS(logical_xor), LATHE_INTS(logical_xor)},
      {"bitwise_and", "bitwise_and.Tensor(a, b)", 2, 0, nullptr, nullptr,
       LATHE_INTS(bitwise_and)},
      {"bitwise_or", "bitwise_or.Tensor(a, b)", 2, 0, nullptr, nullptr,
       LATHE_INTS(bitwise_or)},
      {"bitwise_xor", "bitwise_xor.Tensor(a, b)", 2, 0, nullptr, nullptr,
       LATHE_INTS(bitwise_xor)},
      {"lshift", "__lshift__.Tensor(a, b)", 2, 0, nullptr, nullptr,
       LATHE_INTS(lshift)},
      {"rshift", "__rshift__.Tensor(a, b)", 2, 0, nullptr, nullptr,
       LATHE_INTS(rshift)},
  };
}

// Whether integer operands (a, b) are ones `fn` is defined on: no division
// by zero (the host function raises before any kernel runs), no shift by a
// negative count or by the width or more.
bool IntOperandsDefined(const std::string& fn, int64_t a, int64_t b, int bits) {
  if (fn == "floordiv" || fn == "truncdiv" || fn == "remainder" ||
      fn == "fmod") {
    return b != 0 && !(b == -1 && a == (bits == 64 ? kMin : INT32_MIN));
  }
  if (fn == "lshift" || fn == "rshift") return b >= 0 && b < bits;
  if (fn == "pow") return b >= 0 && b < 8;
  return true;
}

// Checks `fn` at `type` on every pair of `values` (every value when
// unary) against the interpreter.
template <typename V, typename F>
void Check(const Fn& fn, const Typed& type, const std::vector<V>& values,
           const F& mine, double eps, int bits = 64) {
  std::vector<std::vector<long double>> columns(fn.arity);
  std::vector<std::pair<V, V>> operands;
  for (V a : values) {
    for (V b : fn.arity == 1 ? std::vector<V>{V(0)} : values) {
      if constexpr (std::is_integral_v<V>) {
        if (fn.arity == 2 && !IntOperandsDefined(fn.name, a, b, bits)) {
          continue;
        }
      }
      operands.push_back({a, b});
      columns[0].push_back(static_cast<long double>(a));
      if (fn.arity == 2) columns[1].push_back(static_cast<long double>(b));
    }
  }
  std::vector<long double> want;
  if (HasReference(fn.name)) {
    for (auto [a, b] : operands) {
      double r =
          Reference(fn.name, static_cast<double>(a), static_cast<double>(b));
      // At f32 the C library's float overload.
      if (type.dtype == DType::kFloat32) {
        r = fn.name == "erfc"     ? std::erfc(static_cast<float>(a))
            : fn.name == "lgamma" ? std::lgamma(static_cast<float>(a))
                                  : static_cast<float>(r);
      }
      want.push_back(r);
    }
  } else {
    want = Oracle(fn.call, type, columns);
  }
  ASSERT_EQ(want.size(), operands.size()) << fn.name;
  for (size_t i = 0; i < operands.size(); ++i) {
    auto [a, b] = operands[i];
    long double got = mine(a, b);
    // Which zero maximum(0, -0) gives is not specified (PyTorch's scalar
    // and vector kernels differ).
    bool zero_sign = fn.name != "maximum" && fn.name != "minimum" &&
                     fn.name != "fmax" && fn.name != "fmin";
    EXPECT_TRUE(Same(got, want[i], eps, fn.ulps, zero_sign))
        << "lathe_op_" << fn.name << "<" << type.annotation << ">(" << a
        << (fn.arity == 2 ? absl::StrCat(", ", b) : "") << ") = " << got
        << ", the interpreter's " << fn.call << " gives " << want[i];
  }
}

void CheckAll(const std::vector<Fn>& fns) {
  std::vector<int64_t> ints64 = kInts, ints32 = kInts;
  for (const Fn& fn : fns) {
    SCOPED_TRACE(fn.name);
    if (fn.f32) {
      Check(fn, {"f32", DType::kFloat32}, kFloats, fn.f32,
            std::numeric_limits<float>::epsilon());
    }
    if (fn.f64) {
      Check(fn, {"f64", DType::kFloat64}, kFloats, fn.f64,
            std::numeric_limits<double>::epsilon());
    }
    // Wrapping at the extremes, where the op is not a division.
    std::vector<int64_t> wide = ints64;
    if (fn.name == "add" || fn.name == "sub" || fn.name == "mul" ||
        fn.name == "neg" || fn.name == "abs" || fn.name == "eq" ||
        fn.name == "lt" || fn.name == "bitwise_xor") {
      wide.push_back(kMin);
      wide.push_back(kMax);
    }
    if (fn.i64) Check(fn, {"i64", DType::kInt64}, wide, fn.i64, 0, 64);
    if (fn.i32) Check(fn, {"i32", DType::kInt32}, ints32, fn.i32, 0, 32);
  }
}

TEST(ScalarPreludeTest, UnaryFunctionsMatchTheInterpreter) {
  CheckAll(Unary());
}

TEST(ScalarPreludeTest, BinaryFunctionsMatchTheInterpreter) {
  CheckAll(Binary());
}

TEST(ScalarPreludeTest, WhereMatchesTheInterpreter) {
  std::vector<std::vector<long double>> columns(3);
  for (int c : {0, 1}) {
    for (double a : kFloats) {
      columns[0].push_back(c);
      columns[1].push_back(a);
      columns[2].push_back(-a);
    }
  }
  std::vector<long double> want =
      Oracle("where.self(a, b, c)", {"f32", DType::kFloat32}, columns,
             /*bool_first=*/true);
  ASSERT_EQ(want.size(), columns[0].size());
  for (size_t i = 0; i < want.size(); ++i) {
    float got = ::lathe_op_where<float>(columns[0][i] != 0,
                                        static_cast<float>(columns[1][i]),
                                        static_cast<float>(columns[2][i]));
    EXPECT_TRUE(Same(got, want[i], 0, 0)) << i;
  }
}

// lathe_log_add_exp(x, acc), logcumsumexp's scan step, against the
// interpreter's logcumsumexp over rows [acc, x] (its second element is
// that step, the first being acc itself) for every pair of edge values, at
// f64 and f32 (the f32 row computed in double and rounded once, as both
// the interpreter and the lowering do).
TEST(ScalarPreludeTest, LogAddExpMatchesTheInterpretersLogcumsumexp) {
  std::vector<std::pair<double, double>> pairs;
  for (double acc : kFloats) {
    for (double x : kFloats) pairs.push_back({acc, x});
  }
  const int64_t n = static_cast<int64_t>(pairs.size());
  for (const Typed& type :
       {Typed{"f64", DType::kFloat64}, Typed{"f32", DType::kFloat32}}) {
    SCOPED_TRACE(type.annotation);
    const std::string text =
        absl::StrCat("def forward(self, a: \"", type.annotation, "[", n,
                     ", 2][2, 1]cpu\"):\n"
                     "    r = torch.ops.aten.logcumsumexp.default(a, 1)\n"
                     "    return (r,)\n");
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Graph> g, ir::ParseGraph(text));
    Tensor t = Tensor::Empty({n, 2}, type.dtype).value();
    for (int64_t i = 0; i < n; ++i) {
      t.SetDouble({i, 0}, pairs[i].first);
      t.SetDouble({i, 1}, pairs[i].second);
    }
    ASSERT_OK_AND_ASSIGN(ir::Interpretation r,
                         ir::Interpret(*g, {ir::Value::OfTensor(t)}));
    for (int64_t i = 0; i < n; ++i) {
      // The row's first element, as stored: the scan's accumulator.
      const double acc = t.GetDouble({i, 0}), x = t.GetDouble({i, 1});
      double got = ::lathe_log_add_exp<double>(x, acc);
      if (type.dtype == DType::kFloat32) got = static_cast<float>(got);
      EXPECT_TRUE(Same(got, r.outputs[0].tensor.GetDouble({i, 1}), 0x1p-52, 1))
          << "acc " << acc << ", x " << x;
    }
  }
}

// Every f16 and bf16 bit pattern to float and back, as runtime/half.h
// (the interpreter's storage types) converts them.
// Floating point to integer as PyTorch 2.15 converts on this CPU (from
// torch: torch.tensor(from, dtype=float64).to(dtype), the same from
// float32 and in its vector loops): the prelude's lathe_cast from double
// and from float, and the runtime's FromDouble (the interpreter's stores).
TEST(ScalarPreludeTest, FloatToIntegerConvertsAsPyTorch) {
  const std::vector<double> from = {kNaN,   kInf, -kInf,  3e9,   -3e9,
                                    1e20,   -3.7, 255.9,  256.0, 300.0,
                                    -129.0, -1.0, 0x1p31, 0x1p63};
  constexpr int64_t m32 = std::numeric_limits<int32_t>::min();
  const std::vector<int64_t> i8 = {0,  0, 0,  0,   0,  0, -3,
                                   -1, 0, 44, 127, -1, 0, 0};
  const std::vector<int64_t> u8 = {0,   0, 0,  0,   0,   0, 253,
                                   255, 0, 44, 127, 255, 0, 0};
  const std::vector<int64_t> i16 = {0,   0,   0,   0,    0,  0, -3,
                                    255, 256, 300, -129, -1, 0, 0};
  const std::vector<int64_t> i32 = {m32, m32, m32, m32,  m32, m32, -3,
                                    255, 256, 300, -129, -1,  m32, m32};
  const std::vector<int64_t> i64 = {
      kMin, kMin, kMin, 3000000000, -3000000000, kMin,       -3,
      255,  256,  300,  -129,       -1,          2147483648, kMin};
  auto check = [&](auto tag, const std::vector<int64_t>& want) {
    using T = decltype(tag);
    for (size_t i = 0; i < from.size(); ++i) {
      SCOPED_TRACE(absl::StrCat(from[i], " to a ", sizeof(T), "-byte ",
                                std::is_signed_v<T> ? "int" : "uint"));
      EXPECT_EQ(int64_t{lathe_cast<T>(from[i])}, want[i]);
      EXPECT_EQ(int64_t{lathe_cast<T>(static_cast<float>(from[i]))}, want[i]);
      EXPECT_EQ(int64_t{FromDouble<T>(from[i])}, want[i]);
    }
  };
  check(int8_t{}, i8);
  check(uint8_t{}, u8);
  check(int16_t{}, i16);
  check(int32_t{}, i32);
  check(int64_t{}, i64);
}

TEST(ScalarPreludeTest, HalfAndBFloat16ToFloatAgreeOnEveryPattern) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    Half h;
    h.bits = static_cast<uint16_t>(bits);
    BFloat16 b;
    b.bits = static_cast<uint16_t>(bits);
    float hf = ::lathe_to_float(::lathe_half{static_cast<uint16_t>(bits)});
    float bf = ::lathe_to_float(::lathe_bfloat16{static_cast<uint16_t>(bits)});
    ASSERT_TRUE(Same(hf, h.ToFloat(), 0, 0)) << std::hex << bits;
    ASSERT_TRUE(Same(bf, b.ToFloat(), 0, 0)) << std::hex << bits;
    if (!std::isnan(hf)) {
      ASSERT_EQ(::lathe_to_half(hf).bits, bits) << std::hex << bits;
    }
    if (!std::isnan(bf)) {
      ASSERT_EQ(::lathe_to_bfloat16(bf).bits, bits) << std::hex << bits;
    }
  }
}

// Rounding float to f16/bf16: each float just below, at and just above the
// midpoint between consecutive 16-bit values (ties to even), overflow, the
// subnormals and NaN, as runtime/half.h rounds.
TEST(ScalarPreludeTest, FloatToHalfAndBFloat16RoundAsTheRuntime) {
  std::vector<float> floats = {0.0f,
                               -0.0f,
                               65504.0f,
                               65520.0f,
                               65519.99f,
                               1e-8f,
                               -1e-8f,
                               3e38f,
                               -3e38f,
                               std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::denorm_min()};
  for (uint32_t bits = 0; bits < 65536; bits += 7) {
    float lo = Half{static_cast<uint16_t>(bits)}.ToFloat();
    float hi = Half{static_cast<uint16_t>(bits + 1)}.ToFloat();
    float mid = lo + (hi - lo) / 2;
    floats.insert(floats.end(),
                  {mid, std::nextafter(mid, lo), std::nextafter(mid, hi)});
    uint32_t u = bits << 16 | 0x8000;  // a bf16 midpoint
    float b;
    std::memcpy(&b, &u, 4);
    floats.insert(floats.end(), {b, std::nextafter(b, 0.0f)});
  }
  int nans = 0;
  for (float f : floats) {
    if (std::isnan(f)) {
      ++nans;
      EXPECT_TRUE(std::isnan(::lathe_to_float(::lathe_to_half(f))));
      EXPECT_TRUE(std::isnan(::lathe_to_float(::lathe_to_bfloat16(f))));
      continue;
    }
    EXPECT_EQ(::lathe_to_half(f).bits, Half::FromFloat(f).bits) << f;
    EXPECT_EQ(::lathe_to_bfloat16(f).bits, BFloat16::FromFloat(f).bits) << f;
  }
  EXPECT_GT(floats.size() - nans, 10000u);
}

}  // namespace
}  // namespace lathe
