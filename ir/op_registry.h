// -----------------------------------------------------------------------------
// File: op_registry.h
// -----------------------------------------------------------------------------
//
// The op registry: for each ATen overload ("aten.add.Tensor") and graph
// builtin ("getitem", "torch._C._set_grad_enabled") its parsed schema, a
// meta function (output metadata from input metadata, symbolic),
// a reference CPU kernel (the interpreter's semantics, PyTorch's eager
// semantics), and the in-place <-> functional pairing.
//
// Example:
//
//   const OpDef* add = OpRegistry::Global().Find("aten.add.Tensor");
//   ASSIGN_OR_RETURN(std::vector<Value> bound,
//                    BindArguments(add->schema, {a, b}, {}));   // alpha=1
//   OpCall call(*add, std::move(bound), /*env=*/nullptr);
//   ASSIGN_OR_RETURN(Value out, add->kernel(call));
//
// Ops are registered by explicit functions (RegisterPointwiseOps, ...)
// called once when the registry is first used; there are no static
// registrars.

#ifndef LATHE_IR_OP_REGISTRY_H_
#define LATHE_IR_OP_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/random.h"
#include "ir/schema.h"
#include "ir/value.h"
#include "symbolic/shape_env.h"

namespace lathe::ir {

struct OpDef;

// One call of an op: its definition and its arguments bound in schema order
// (defaults filled in).
class OpCall {
 public:
  OpCall(const OpDef& op, std::vector<Value> args, symbolic::ShapeEnv* env,
         Generator* generator = nullptr)
      : op_(op), args_(std::move(args)), env_(env), generator_(generator) {}

  const OpDef& op() const { return op_; }
  // Argument `i` in schema order.
  const Value& arg(int i) const { return args_[i]; }
  // The argument called `name` (which must exist in the schema).
  const Value& arg(absl::string_view name) const;
  int num_args() const { return static_cast<int>(args_.size()); }
  // Every argument, in schema order.
  const std::vector<Value>& args() const { return args_; }
  // The ShapeEnv during shape propagation (for guards); null when running.
  symbolic::ShapeEnv* env() const { return env_; }
  // The interpreter's random number generator (random.h); null outside an
  // interpreter run, where random ops use a fresh default-seeded one.
  Generator* generator() const { return generator_; }
  // An error that names the op: "aten.mm.default: <message>".
  absl::Status Error(absl::string_view message) const;

 private:
  const OpDef& op_;
  std::vector<Value> args_;
  symbolic::ShapeEnv* env_;
  Generator* generator_;
};

using OpFn = std::function<absl::StatusOr<Value>(const OpCall&)>;

// What passes and code generation ask of an op, as bits of OpDef::tags.
enum class OpTag : uint32_t {
  kPointwise = 1 << 0,   // elementwise with broadcasting
  kReduction = 1 << 1,   // reduces dimensions (sum, amax, var, ...)
  kView = 1 << 2,        // returns a view of its first argument
  kInplace = 1 << 3,     // writes its first argument and returns it
  kOut = 1 << 4,         // an out= overload (writes `out`, returns it)
  kExtern = 1 << 5,      // a library routine: matmul, convolution, sort
  kRandom = 1 << 6,      // draws from the generator
  kSideEffect = 1 << 7,  // an effect beyond its value (_assert_scalar)
  kBuiltin = 1 << 8,     // a graph builtin, not an ATen op (getitem)
  // Its value depends on where an argument begins in its storage
  // (as_strided and its scatter, set_, sym_storage_offset; view.dtype,
  // which refuses an offset its new element size does not divide).
  kStorageOffset = 1 << 9,
};

struct OpDef {
  std::string target;  // "aten.add.Tensor"
  OpSchema schema;
  OpFn meta;
  OpFn kernel;
  std::string functional;  // for an in-place or out= op: its functional twin
  std::string inplace;     // for a functional op: its in-place twin
  std::string out;         // for a functional op: its out= overload
  // For a view op whose elements a functional scatter writes back (slice:
  // slice_scatter): that scatter; for the scatter, the view. scatter(self,
  // src, *args) writes src where view(self, *args) sees.
  std::string scatter;
  std::string scattered_view;
  // For an op that writes arguments other than (or besides) its first
  // (_native_batch_norm_legit writes running_mean and running_var):
  // {written argument index, index of the functional twin's result that is
  // that argument's new value}. The twin's first results are the op's own.
  std::vector<std::pair<int, int>> written_results;
  // OpTag bits. A functional pointwise op gets its in-place twin from
  // RegisterInplaceTwins.
  uint32_t tags = 0;

  bool HasTag(OpTag tag) const {
    return (tags & static_cast<uint32_t>(tag)) != 0;
  }
};

class OpRegistry {
 public:
  // The registry with every lathe op.
  static const OpRegistry& Global();

  // The op for a target as FX prints it ("aten.mm.default"), or null.
  const OpDef* Find(absl::string_view target) const;
  // Every registered target, sorted.
  std::vector<std::string> Targets() const;

  // Registers an op from its schema string; the target is
  // "<namespace>.<name>.<overload or default>", the namespace being the
  // schema's own ("prims::iota(...)": prims.iota.default) or aten when it
  // has none. Errors for a bad or duplicate schema.
  absl::Status Add(absl::string_view schema, OpFn meta, OpFn kernel);
  // Registers an op whose one function is both its meta function and its
  // kernel (it works on metadata and on tensors alike, as views do).
  absl::Status Add(absl::string_view schema, OpFn fn) {
    return Add(schema, fn, fn);
  }
  // Registers a graph builtin (OpTag::kBuiltin) under its FX target as
  // given ("getitem", "torch._C._set_grad_enabled"), its schema in the
  // registry's form ("getitem(Any self, int index) -> Any"); `fn` is both
  // its meta function and its kernel. Errors for a bad or duplicate schema.
  absl::Status AddBuiltin(absl::string_view target, absl::string_view schema,
                          OpFn fn);
  // Records that `inplace` is the in-place variant of `functional`.
  absl::Status Pair(absl::string_view inplace, absl::string_view functional);
  // Records that `scatter` writes back the elements view op `view` sees.
  absl::Status PairScatter(absl::string_view view, absl::string_view scatter);
  // Records that `mutating` (which writes the arguments in
  // `written_results`, see OpDef) has `functional` as its functional twin:
  // the same arguments, its own results first, then for each written
  // argument the result that is its new value. Errors unless each listed
  // argument is written (Tensor(a!)) and each result index is past the
  // op's own results and within the twin's.
  absl::Status PairMutating(absl::string_view mutating,
                            absl::string_view functional,
                            std::vector<std::pair<int, int>> written_results);
  // Registers the in-place twin of the functional op `functional`
  // ("aten.abs.default") and pairs them: its schema is the functional one
  // named `<name>_` (`__i<name>__` for a dunder operator such as
  // __lshift__), overload `overload`, with self written and returned
  // (`Tensor(a!) self ... -> Tensor(a!)`); it computes the functional result
  // and writes it into self, refusing as PyTorch does a result of another
  // shape ("output with shape [3] doesn't match the broadcast shape [2,
  // 3]"), a result dtype self cannot take ("result type Float can't be cast
  // to the desired output type Long") and, when `refuse_overlap` (ops
  // PyTorch runs through TensorIterator), a self whose elements overlap.
  // When the twin is already registered it only pairs them.
  absl::Status AddInplaceTwin(absl::string_view functional,
                              absl::string_view overload, bool refuse_overlap);
  // Marks `target` pointwise (OpTag::kPointwise).
  absl::Status MarkPointwise(absl::string_view target);
  // Adds `tag` to `target`'s tags.
  absl::Status Tag(absl::string_view target, OpTag tag);
  // After every family: tags each op by its schema (view, in-place, out=)
  // and by the families' lists (reductions, externs, random and
  // side-effecting ops), and pairs out= overloads with their functional op.
  absl::Status DeriveTags(const std::vector<std::string>& reductions);

 private:
  absl::flat_hash_map<std::string, std::unique_ptr<OpDef>> ops_;
};

// BindArguments()
//
// Matches positional and keyword arguments to `schema`, fills defaults and
// checks each value against its declared type.
absl::StatusOr<std::vector<Value>> BindArguments(
    const OpSchema& schema, std::vector<Value> positional,
    std::vector<std::pair<std::string, Value>> kwargs,
    absl::string_view target);

// Registration functions, one per op family (ops_*.cc).
absl::Status RegisterPointwiseOps(OpRegistry& registry);
absl::Status RegisterReductionOps(OpRegistry& registry);
absl::Status RegisterViewOps(OpRegistry& registry);
absl::Status RegisterLinalgOps(OpRegistry& registry);
absl::Status RegisterCreationOps(OpRegistry& registry);
absl::Status RegisterIndexOps(OpRegistry& registry);
// Convolution and col2im (ops_conv.cc), pooling (ops_pool.cc), batch,
// group and layer norm (ops_norm.cc), upsampling, padding, embeddings,
// distances and attention (ops_nn.cc), the losses (ops_loss.cc).
absl::Status RegisterConvOps(OpRegistry& registry);
absl::Status RegisterPoolOps(OpRegistry& registry);
absl::Status RegisterNormOps(OpRegistry& registry);
absl::Status RegisterNnOps(OpRegistry& registry);
absl::Status RegisterLossOps(OpRegistry& registry);
// grid_sampler_2d and its backward (ops_grid_sampler.cc).
absl::Status RegisterGridSamplerOps(OpRegistry& registry);
// The backward ops of AOTAutograd's backward graphs (ops_backward.cc): the
// activations', softmax's, the losses'.
absl::Status RegisterBackwardOps(OpRegistry& registry);
// The attention ops of PyTorch's CUDA kernels (memory-efficient and cuDNN),
// forward and backward, on the CPU flash kernel's math (ops_attention.cc).
absl::Status RegisterAttentionOps(OpRegistry& registry);
// The later ops (ops_extra.cc): prims, new_*, masked_fill, tril/triu, ...
absl::Status RegisterExtraOps(OpRegistry& registry);
// The graph builtins (ops_builtin.cc): getitem (x[i] of a tuple or list)
// and Dynamo's grad-mode switch torch._C._set_grad_enabled.
absl::Status RegisterBuiltinOps(OpRegistry& registry);
// After every family (Global() calls it last): the in-place twin of every
// functional pointwise op (ops_extra.cc).
absl::Status RegisterInplaceTwins(OpRegistry& registry);

}  // namespace lathe::ir

#endif  // LATHE_IR_OP_REGISTRY_H_
