// -----------------------------------------------------------------------------
// File: lowerer.h
// -----------------------------------------------------------------------------
//
// The lowering machinery (internal to //codegen:lowering): a Lowerer walks
// the graph in order, asks the lowering table (lowering_table.h) for each
// call's rule, and keeps each node's value (NodeValue: a tensor loader, a
// number, a tuple). Rules build kernels through it: operands, pointwise
// loaders, reductions, extern calls, buffers, writes into memory and the
// runtime checks and host steps the interpreter's semantics need.
//
// Example (a rule):
//
//   absl::StatusOr<NodeValue> LowerNeg(Lowerer& L, const Call& c) {
//     const TensorMeta& m = L.TMeta(&c.node());
//     ASSIGN_OR_RETURN(TBox x, L.Operand(c, 0, m.dtype));
//     return TensorValue(L.Pointwise("neg", {x}, m.dtype, m.dtype, m.sizes));
//   }

#ifndef LATHE_CODEGEN_LOWER_LOWERER_H_
#define LATHE_CODEGEN_LOWER_LOWERER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codegen/loop_ir.h"
#include "codegen/lower/buffer_layouts.h"
#include "codegen/lower/call.h"
#include "codegen/lower/kernel_builder.h"
#include "codegen/lowering.h"
#include "ir/graph.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::codegen::lower {

// The value of a node during lowering.
struct NodeValue {
  enum class Kind : uint8_t { kNone, kTensor, kNumber, kTuple };
  Kind kind = Kind::kNone;
  TBox t;
  Expr number;
  std::vector<NodeValue> elements;
};

// An offset of `offset` elements of `from` counted in elements of `to` (a
// view.dtype of another element size); an error where `to`'s size does not
// divide its bytes.
absl::StatusOr<Expr> InUnitsOf(Expr offset, DType from, DType to);

// Lowers one graph (codegen::Lower): Run walks it once; the rules of the
// lowering table call the methods below for the node being lowered.
class Lowerer {
 public:
  Lowerer(const ir::Graph& graph, symbolic::ShapeEnv& env,
          Routines routines = {})
      : graph_(graph), env_(env), routines_(routines) {}

  // Lowers every node in graph order (LowerNode), then places the outputs.
  absl::StatusOr<LoweredGraph> Run();

  // The meta of `n` with what the env learned applied.
  const ir::ValueMeta& Meta(const Node* n);
  // Meta(n)'s tensor meta.
  const TensorMeta& TMeta(const Node* n) { return Meta(n).tensor; }
  // The ShapeEnv the graph was shape-propagated into.
  symbolic::ShapeEnv& env() { return env_; }
  // The target's library routines beyond every backend's.
  const Routines& routines() const { return routines_; }

  // The tensor value of node `n` (an argument of the call being lowered).
  absl::StatusOr<TBox> Tensor(const Call& c, int i);

  // An operand of a pointwise op: a tensor, or a number (a literal or a
  // symbolic value) broadcast as a 0-d tensor of `dtype`.
  absl::StatusOr<TBox> Operand(const Call& c, int i, DType dtype);

  // A number as a 0-d tensor of `dtype`.
  TBox NumberBox(Expr number, DType dtype);

  // The seed of the random ops, a symbol bound from the call's seed
  // (SymbolSource::Kind::kSeed).
  Expr Seed();
  // Whether some random op read the seed.
  bool seeded() const { return seeded_; }
  // Reserves `n` draws of the call's stream for one random op, in graph
  // order as the interpreter's Generator does; the counter of the first.
  Expr ReserveDraws(Expr n);

  // Registers a symbol the program reads at run time.
  void UseSymbol(Expr s);
  // UseSymbol() for each free symbol of `exprs` but the index variables.
  void UseSymbols(const std::vector<Expr>& exprs);
  // Whether `s` is a kernel's index variable (x0, r0, ...).
  static bool IsIndexVar(Expr s);

  // A loader reading buffer `b` at the layout.
  TBox FromBuffer(int b, DType dtype, std::vector<Expr> sizes,
                  std::vector<Expr> strides, Expr offset);

  // The box of a value whose meta says where it is in storage `b`.
  absl::StatusOr<TBox> FromStorage(int b, const TensorMeta& m);

  // A new allocated buffer of `numel` elements; its id.
  int NewBuffer(DType dtype, Expr numel);

  // A new pointwise kernel over `ranges` (not yet in the program).
  Kernel NewKernel(const std::vector<Expr>& ranges);

  // Appends `k` to the program, as the current node's.
  void Emit(Kernel k);

  // Stores `value` into buffer b at the layout (one kernel over the sizes).
  absl::Status Store(int b, const std::vector<Expr>& strides, Expr offset,
                     const TBox& value);

  // `value` in memory: a new buffer laid out as `meta` says (its strides and
  // offset; contiguous without one).
  absl::StatusOr<TBox> Realize(const TBox& value, const TensorMeta* meta);

  // Realizes node n's value in place of its loader (laid out as its meta
  // says when it owns its storage, which then maps to the buffer).
  absl::Status RealizeNode(const Node* n);
  // RealizeNode() without making `n` the current node.
  absl::Status RealizeNodeInMemory(const Node* n);

  // Pointwise: fn over operands broadcast to `sizes`, computed in
  // `compute`, the result in `out`.
  TBox Pointwise(const std::string& fn, std::vector<TBox> operands,
                 DType compute, DType out, std::vector<Expr> sizes);

  // A reduction kernel's frame: outer loops over the dims of `in` not in
  // `dims`, a reduction section over those in it, and `in` loaded there
  // (value `loaded`, at `idx`); section 1 (the epilogue) is current.
  struct ReductionFrame {
    Kernel k;
    std::vector<bool> reduced;
    std::vector<Expr> idx;
    Expr count;  // elements per reduction
  };
  ReductionFrame NewReduction(const TBox& in, const std::vector<int64_t>& dims);
  // Stores `value` (an epilogue op of f's kernel) into a new buffer laid
  // out as `meta` (keepdim or not) and returns it.
  TBox StoreReduced(ReductionFrame& f, KernelBuilder& kb,
                    const TensorMeta& meta, int value);

  // A reduction of `in` over `dims` into a new buffer laid out as `meta`
  // (keepdim or not); `post` maps the reduced value (acc dtype) to the
  // stored one.
  absl::StatusOr<TBox> Reduce(
      const TBox& in, std::vector<int64_t> dims, ReduceKind kind, DType acc,
      const TensorMeta& meta,
      std::function<int(KernelBuilder&, int, Expr)> post,
      std::function<Expr(const std::vector<Expr>&)> arg_of = nullptr);

  // var and mean of `in` over `dims` in one Welford reduction (computed in
  // `acc`): var = M2 / max(count - correction, 0), each stored as its meta
  // says.
  absl::StatusOr<std::pair<TBox, TBox>> VarMean(
      const TBox& in, const std::vector<int64_t>& dims, DType acc,
      double correction, const TensorMeta& var_meta,
      const TensorMeta& mean_meta);

  // An extern kernel.
  void EmitExtern(const std::string& routine, std::vector<int> buffers,
                  std::vector<Expr> args, int outputs = 1);

  // Writes `value` (broadcast to the target's sizes) into the memory of
  // `target`; lazily computed values that still read that memory and will
  // be read later are realized first.
  absl::Status WriteInto(const Node* current, const TBox& target, TBox value);

  // `t` broadcast to `sizes` (no computation).
  TBox Broadcast(const TBox& t, std::vector<Expr> sizes);

  // The id of check `message` (Program::checks), added once.
  int CheckId(const std::string& message);

  // A check-index op over `value` (an integer): wrapped by `size` when
  // negative (when `wrap`); out of range, the run fails naming the node.
  int CheckIndex(KernelBuilder& kb, const Node& n, int value, Expr size,
                 bool wrap, int64_t dim);

  // Whether runtime symbol `s` has a value where the program is now: an
  // input's, or one a bind step gave it.
  bool IsBound(Expr s);

  // A host step binding data-dependent symbol `s` here: to the element at
  // index `value` of buffer `b` (x.item()), or, with b < 0, to `value`, an
  // expression of bound symbols.
  void EmitBind(Expr s, int b, Expr value);

  // A host step stopping the program with `message` when `cond` (over bound
  // symbols) is false; the step reports `values` for the message's holes
  // (CheckHole).
  void EmitAssert(Expr cond, const std::string& message,
                  std::vector<Expr> values = {});

  // `e` in a host check's message: its number when constant, else a hole
  // (kernel_abi.h's "{k:TEXT}") that the value of `e`, added to `values`,
  // fills when the check fails (past LATHE_CHECK_VALUES values, the text).
  static std::string CheckHole(Expr e, std::vector<Expr>* values);

  // Refuses a view of buffer `b` at the layout (offset from the buffer's
  // start) that reaches outside it, with the interpreter's message
  // (Tensor::Wrap's): at compile time when that is decided, else (for the
  // ops that take unclamped positions) with a host step before the kernels
  // that read the view.
  absl::Status CheckViewInBuffer(const Node& n, int b,
                                 const std::vector<Expr>& sizes,
                                 const std::vector<Expr>& strides, Expr offset);

  // A host step per size of `meta` over symbols read from data (x.item()):
  // a negative one stops the program, as the interpreter's meta functions
  // refuse it (the ranges the ShapeEnv gives such a size assume it is one).
  void CheckDataDependentSizes(const Node& n, const ir::ValueMeta& meta);

  // Refuses node `n` taking (or making, when `result`) a tensor of more
  // elements than ir::MaxOpElements(), with the interpreter's message: at
  // compile time when that is decided, else, where the count is a product
  // of sizes (which no one input's size bounds), in the host function, which
  // multiplies in double so that it cannot overflow.
  absl::Status CheckElements(const Node& n, const TensorMeta& m, bool result);

  // An int argument that is a literal or a symbolic number.
  absl::StatusOr<Expr> IntExpr(const Call& c, int i);

  // The layout each value's buffer takes (channels-last between
  // convolutions).
  const BufferLayouts& layouts() const { return layouts_; }
  // Whether `buffer` holds a frozen constant (`# lathe: constant`): read
  // only, and the same for every call while the compiled function lives.
  bool IsFrozen(int buffer) const { return frozen_buffers_.contains(buffer); }

  // Whether some op writes storage `s`.
  bool Mutated(ir::StorageId s) const { return mutated_.contains(s); }
  // The buffer of each storage in memory, by storage id.
  absl::flat_hash_map<ir::StorageId, int>& storage_buffer();
  // The value of node `n`, lowered before the current node.
  NodeValue& value(const Node* n) { return values_.at(n); }

  // A number-valued node (sym_size, operator.mul, x.item()): its symbolic
  // value over bound symbols, or for x.item() a bind step.
  absl::StatusOr<NodeValue> LowerNumber(const Node& n);
  // After node `n` changed the metadata of tensor `self` (t_, set_, ...):
  // the tensor object (self and the in-place results that returned it)
  // takes value `v` and n's meta for the nodes after this one.
  void RebindTensorObject(const Node& self, const Node& n, const NodeValue& v);

 private:
  // Lowers node `n`: an input or a number here, a call of a registry op
  // (getitem and the grad-mode switch included) by its rule in the lowering
  // table; an op without one is an error naming it.
  absl::Status LowerNode(const Node& n);
  // Realizes n's value when it is a loader read more than once (at some
  // cost) or grown large.
  absl::Status RealizeIfShared(const Node& n);
  // x.item(): a bind step (LowerNumber).
  absl::StatusOr<NodeValue> LowerItem(const Node& n);
  // Binds the fresh length a data-dependent slice makes.
  absl::Status BindSliceLength(const Call& c);

  // A buffer for the next input (a placeholder, or a constant when `out`
  // is null), and its value; an error for an input of another element size
  // that shares an earlier input's storage where that size cannot begin.
  absl::StatusOr<TBox> AddInput(const TensorMeta& m, LoweredGraph* out);

  const ir::Graph& graph_;
  symbolic::ShapeEnv& env_;
  Routines routines_;
  Program program_;
  const Node* current_ = nullptr;  // the node whose kernels are being emitted
  absl::flat_hash_map<std::string, int64_t> check_ids_;
  // The data-dependent sizes and the element counts host steps check
  // (CheckDataDependentSizes, CheckElements).
  absl::flat_hash_set<Expr> checked_sizes_, checked_numels_;
  // Node-based: lowering functions hold references to metas while asking
  // for others.
  absl::node_hash_map<const Node*, ir::ValueMeta> metas_;
  absl::flat_hash_map<const Node*, NodeValue> values_;
  absl::flat_hash_map<const Node*, int> remaining_;
  absl::flat_hash_map<ir::StorageId, int> storage_buffer_;
  absl::flat_hash_set<ir::StorageId> mutated_;
  BufferLayouts layouts_;
  absl::flat_hash_set<Expr> symbol_set_;
  absl::flat_hash_set<Expr> bound_;  // data-dependent symbols bound so far
  // The values of those of bound_ computed from other symbols (a slice's
  // clamped length): what a check may substitute to prove itself.
  absl::flat_hash_map<Expr, Expr> bound_values_;
  absl::flat_hash_set<Expr> read_from_data_;  // those of bound_ read from a
                                              // buffer (x.item())
  bool seeded_ = false;                       // a random op read the seed
  Expr draws_ = symbolic::Int(0);             // the next draw's counter
  std::vector<Expr> base_offsets_;
  int kernel_count_ = 0;
  int num_inputs_ = 0;                  // placeholders, then constants
  std::vector<std::string> constants_;  // by input number - placeholders
  std::vector<int> constant_buffers_;
  absl::flat_hash_set<int> frozen_buffers_;
};

}  // namespace lathe::codegen::lower

#endif  // LATHE_CODEGEN_LOWER_LOWERER_H_
