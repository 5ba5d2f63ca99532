// -----------------------------------------------------------------------------
// File: schema.h
// -----------------------------------------------------------------------------
//
// ATen operator schemas, as written in PyTorch's native_functions.yaml:
//
//   add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
//
// ParseSchema() reads one into an OpSchema — name and overload, arguments
// (type, alias annotation, default, keyword-only), returns — and ToString()
// writes it back exactly. The registry derives mutability and view-ness from
// the alias annotations: `(a!)` is written, `(a)` aliases, `(a -> *)` aliases
// into a list.
//
// Example:
//
//   ASSIGN_OR_RETURN(OpSchema s, ParseSchema(
//       "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0)"
//       " -> Tensor(a)[]"));
//   s.FullName();          // "split.Tensor"
//   s.IsView();            // true
//
// Errors name the column: "column 12: expected ')' or ',' after an argument".

#ifndef LATHE_IR_SCHEMA_H_
#define LATHE_IR_SCHEMA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe::ir {

// The element types schemas use.
enum class BaseType : uint8_t {
  kTensor,
  kInt,
  kSymInt,
  kFloat,
  kSymFloat,
  kBool,
  kSymBool,
  kStr,
  kScalar,
  kScalarType,
  kLayout,
  kDevice,
  kMemoryFormat,
  kGenerator,
  kStorage,
  kStream,
  kDimname,
  kQScheme,
  kComplex,
  kAny,  // a graph builtin's argument of any kind (getitem's tuple)
};

// A type such as `Tensor`, `Tensor?`, `Tensor?[]`, `int[2]` or `SymInt[]?`.
struct SchemaType {
  BaseType base = BaseType::kTensor;
  bool element_optional = false;  // the `?` of `Tensor?[]`
  bool is_list = false;
  int64_t list_size = -1;  // `int[2]`: 2; -1 when unsized
  bool optional = false;   // the trailing `?` (of the value or the list)

  bool is_tensor_like() const { return base == BaseType::kTensor; }
  // "Tensor", "int[2]?", ... (without an alias annotation).
  std::string ToString() const;
};

// An alias annotation: `(a)`, `(a!)`, `(a -> *)`, `(a|b)`.
struct AliasInfo {
  std::vector<std::string> sets;        // before the arrow
  std::vector<std::string> after_sets;  // after `->`, e.g. {"*"}
  bool is_write = false;

  std::string ToString() const;  // "(a!)"
};

// A default value, kept as written plus its meaning.
struct DefaultValue {
  enum class Kind : uint8_t {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kName
  };
  Kind kind = Kind::kNone;
  std::string text;  // as written: "1e-05", "[0, 1]", "'none'", "Mean"
  bool bool_value = false;
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;         // kString, kName
  std::vector<double> list_values;  // kList (numbers)
};

struct Argument {
  std::string name;
  SchemaType type;
  std::optional<AliasInfo> alias;
  std::optional<DefaultValue> default_value;
  bool kwarg_only = false;

  bool is_written() const { return alias.has_value() && alias->is_write; }
};

struct Return {
  std::string name;  // may be empty
  SchemaType type;
  std::optional<AliasInfo> alias;
};

struct OpSchema {
  std::string ns;        // "aten" for "aten::add", else empty
  std::string name;      // "add_"
  std::string overload;  // "Tensor"; empty for the default overload
  std::vector<Argument> arguments;
  std::vector<Return> returns;
  bool returns_parenthesized = false;  // "-> (Tensor)" / "-> ()"

  // "add_.Tensor" ("add_" for the default overload).
  std::string FullName() const;
  // The schema as text; ParseSchema(s.ToString()) gives s back.
  std::string ToString() const;
  // Whether any argument is written (`(a!)`).
  bool IsMutable() const;
  // In-place: the name ends in '_' and the first argument is written.
  bool IsInplace() const;
  // Whether some return aliases an argument without writing it (a view).
  bool IsView() const;
  // The index of the argument called `name`, or -1.
  int ArgumentIndex(absl::string_view name) const;
};

// ParseSchema()
//
// Parses one schema string; errors name the column (1-based).
absl::StatusOr<OpSchema> ParseSchema(absl::string_view text);

}  // namespace lathe::ir

#endif  // LATHE_IR_SCHEMA_H_
