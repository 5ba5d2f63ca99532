#include "symbolic/sym_value.h"

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "check.h"
#include "status_macros.h"
#include "symbolic/expr.h"
#include "symbolic/printer.h"
#include "symbolic/shape_env.h"

namespace lathe::symbolic {
namespace {

ShapeEnv* EnvOf(const SymNode& a, const SymNode& b) {
  LATHE_CHECK(a.env() == nullptr || b.env() == nullptr || a.env() == b.env())
      << "symbolic values from two ShapeEnvs combined";
  return a.env() != nullptr ? a.env() : b.env();
}

}  // namespace

std::string SymNode::ToString() const { return symbolic::ToString(expr_); }

SymInt::SymInt(Expr e, ShapeEnv* env) : SymNode(e, env) {
  LATHE_CHECK(e.is_int()) << "SymInt of a non-integer expression";
}
SymFloat::SymFloat(Expr e, ShapeEnv* env) : SymNode(e, env) {
  LATHE_CHECK(e.is_float()) << "SymFloat of a non-float expression";
}
SymBool::SymBool(Expr e, ShapeEnv* env) : SymNode(e, env) {
  LATHE_CHECK(e.is_bool()) << "SymBool of a non-boolean expression";
}

std::optional<int64_t> SymInt::Hint() const {
  if (expr_.kind() == ExprKind::kInteger) return expr_.int_value();
  if (env_ == nullptr) return std::nullopt;
  std::optional<Value> v = env_->Hint(expr_);
  if (!v || v->inf != 0) return std::nullopt;
  return v->i;
}

absl::StatusOr<int64_t> SymInt::GuardInt() const {
  if (expr_.kind() == ExprKind::kInteger) return expr_.int_value();
  if (env_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no ShapeEnv to evaluate ", ToString()));
  }
  return env_->GuardInt(expr_);
}

absl::StatusOr<bool> SymInt::GuardBool() const {
  return SymBool(Ne(expr_, Int(0)), env_).GuardBool();
}

std::optional<double> SymFloat::Hint() const {
  if (expr_.kind() == ExprKind::kFloat) return expr_.float_value();
  if (env_ == nullptr) return std::nullopt;
  std::optional<Value> v = env_->Hint(expr_);
  if (!v) return std::nullopt;
  return v->f;
}

absl::StatusOr<double> SymFloat::GuardFloat() const {
  if (expr_.kind() == ExprKind::kFloat) return expr_.float_value();
  if (env_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no ShapeEnv to evaluate ", ToString()));
  }
  return env_->GuardFloat(expr_);
}

std::optional<bool> SymBool::Hint() const {
  if (expr_.kind() == ExprKind::kBoolean) return expr_.bool_value();
  if (env_ == nullptr) return std::nullopt;
  std::optional<Value> v = env_->Hint(expr_);
  if (!v) return std::nullopt;
  return v->b;
}

absl::StatusOr<bool> SymBool::GuardBool() const {
  if (expr_.kind() == ExprKind::kBoolean) return expr_.bool_value();
  if (env_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no ShapeEnv to evaluate ", ToString()));
  }
  return env_->EvaluateBool(expr_);
}

bool SymBool::StaticallyKnownTrue() const {
  if (expr_.kind() == ExprKind::kBoolean) return expr_.bool_value();
  return env_ != nullptr && env_->StaticallyKnownTrue(expr_);
}

SymInt operator+(const SymInt& a, const SymInt& b) {
  return SymInt(Add(a.expr(), b.expr()), EnvOf(a, b));
}
SymInt operator-(const SymInt& a, const SymInt& b) {
  return SymInt(Sub(a.expr(), b.expr()), EnvOf(a, b));
}
SymInt operator*(const SymInt& a, const SymInt& b) {
  return SymInt(Mul(a.expr(), b.expr()), EnvOf(a, b));
}
SymInt operator-(const SymInt& a) { return SymInt(Neg(a.expr()), a.env()); }
SymFloat operator+(const SymFloat& a, const SymFloat& b) {
  return SymFloat(Add(a.expr(), b.expr()), EnvOf(a, b));
}
SymFloat operator-(const SymFloat& a, const SymFloat& b) {
  return SymFloat(Sub(a.expr(), b.expr()), EnvOf(a, b));
}
SymFloat operator*(const SymFloat& a, const SymFloat& b) {
  return SymFloat(Mul(a.expr(), b.expr()), EnvOf(a, b));
}
SymFloat operator-(const SymFloat& a) {
  return SymFloat(Neg(a.expr()), a.env());
}

absl::StatusOr<SymInt> FloorDivide(const SymInt& a, const SymInt& b) {
  ASSIGN_OR_RETURN(Expr e, FloorDiv(a.expr(), b.expr()));
  return SymInt(e, EnvOf(a, b));
}

absl::StatusOr<SymInt> Modulo(const SymInt& a, const SymInt& b) {
  ShapeEnv* env = EnvOf(a, b);
  auto known = [&](Expr cond) {
    if (cond.is_bool() && cond.kind() == ExprKind::kBoolean)
      return cond.is_true();
    return env != nullptr && env->StaticallyKnownTrue(cond);
  };
  bool use_mod = known(Ge(a.expr(), Int(0))) && known(Ge(b.expr(), Int(1)));
  ASSIGN_OR_RETURN(Expr e, use_mod ? Mod(a.expr(), b.expr())
                                   : PythonMod(a.expr(), b.expr()));
  return SymInt(e, env);
}

absl::StatusOr<SymFloat> TrueDiv(const SymInt& a, const SymInt& b) {
  ASSIGN_OR_RETURN(Expr e, IntTrueDiv(a.expr(), b.expr()));
  return SymFloat(e, EnvOf(a, b));
}

absl::StatusOr<SymFloat> TrueDiv(const SymFloat& a, const SymFloat& b) {
  ASSIGN_OR_RETURN(Expr e, FloatTrueDiv(a.expr(), b.expr()));
  return SymFloat(e, EnvOf(a, b));
}

absl::StatusOr<SymInt> Power(const SymInt& base, const SymInt& exp) {
  ShapeEnv* env = EnvOf(base, exp);
  SymBool natural(Ge(exp.expr(), Int(0)), env);
  ASSIGN_OR_RETURN(bool ok, natural.GuardBool());
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "int ** negative int is a float: exponent ", exp.ToString()));
  }
  ASSIGN_OR_RETURN(Expr e, PowByNatural(base.expr(), exp.expr()));
  return SymInt(e, env);
}

absl::StatusOr<SymFloat> Power(const SymFloat& base, const SymFloat& exp) {
  ASSIGN_OR_RETURN(Expr e, FloatPow(base.expr(), exp.expr()));
  return SymFloat(e, EnvOf(base, exp));
}

SymBool operator==(const SymInt& a, const SymInt& b) {
  return SymBool(Eq(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator!=(const SymInt& a, const SymInt& b) {
  return SymBool(Ne(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator<(const SymInt& a, const SymInt& b) {
  return SymBool(Lt(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator<=(const SymInt& a, const SymInt& b) {
  return SymBool(Le(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator>(const SymInt& a, const SymInt& b) {
  return SymBool(Gt(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator>=(const SymInt& a, const SymInt& b) {
  return SymBool(Ge(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator==(const SymFloat& a, const SymFloat& b) {
  return SymBool(Eq(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator<(const SymFloat& a, const SymFloat& b) {
  return SymBool(Lt(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator<=(const SymFloat& a, const SymFloat& b) {
  return SymBool(Le(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator&(const SymBool& a, const SymBool& b) {
  return SymBool(And(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator|(const SymBool& a, const SymBool& b) {
  return SymBool(Or(a.expr(), b.expr()), EnvOf(a, b));
}
SymBool operator!(const SymBool& a) { return SymBool(Not(a.expr()), a.env()); }

SymInt SymMin(const SymInt& a, const SymInt& b) {
  return SymInt(Min(a.expr(), b.expr()), EnvOf(a, b));
}
SymInt SymMax(const SymInt& a, const SymInt& b) {
  return SymInt(Max(a.expr(), b.expr()), EnvOf(a, b));
}
SymFloat SymMin(const SymFloat& a, const SymFloat& b) {
  return SymFloat(Min(a.expr(), b.expr()), EnvOf(a, b));
}
SymFloat SymMax(const SymFloat& a, const SymFloat& b) {
  return SymFloat(Max(a.expr(), b.expr()), EnvOf(a, b));
}
SymInt SymIte(const SymBool& c, const SymInt& t, const SymInt& f) {
  return SymInt(Ite(c.expr(), t.expr(), f.expr()),
                EnvOf(c, SymInt(Int(0), EnvOf(t, f))));
}
SymFloat SymIte(const SymBool& c, const SymFloat& t, const SymFloat& f) {
  return SymFloat(Ite(c.expr(), t.expr(), f.expr()),
                  EnvOf(c, SymFloat(Float(0), EnvOf(t, f))));
}

SymFloat SymFloatOf(const SymInt& a) {
  return SymFloat(ToFloat(a.expr()), a.env());
}
absl::StatusOr<SymInt> SymIntOf(const SymFloat& a) {
  ASSIGN_OR_RETURN(Expr e, TruncToInt(a.expr()));
  return SymInt(e, a.env());
}
SymInt SymIntOf(const SymBool& b) {
  return SymInt(Ite(b.expr(), Int(1), Int(0)), b.env());
}
SymFloat SymSqrt(const SymFloat& a) {
  return SymFloat(OpaqueUnary(UnaryFn::kSqrt, a.expr()), a.env());
}

}  // namespace lathe::symbolic
