// -----------------------------------------------------------------------------
// File: lowering.h
// -----------------------------------------------------------------------------
//
// Lowers the functional graph the default pipeline produces (or any graph of
// registry ops) into the loop IR: one table keyed by OpDef says how each op
// lowers. As in Inductor, a pointwise op's value stays a loader — a function
// from an index to scalar ops — and is inlined into every kernel that reads
// it until something needs it in memory (a second reader, a reduction's
// epilogue, a library call, a graph output, a mutation). Views of values in
// memory are index arithmetic over the view's own metadata (sizes, strides,
// storage offset), so every view op lowers the same way. In-place and out=
// overloads lower through their functional twin plus a store; each op's
// scalar semantics come from scalar_ops.h.
//
// An op without a lowering is an error naming it and the node.
//
// The implementation lives in codegen/lower/: the machinery (kernel_builder.h,
// call.h, lowerer.h), the table (lowering_table.h) and one file of rules per
// op family (pointwise.cc, reductions.cc, views.cc, ...).
//
// Example:
//
//   ASSIGN_OR_RETURN(LoweredGraph lowered, Lower(graph, env));
//   PrintProgram(lowered.program);   // kernels k0, k1, ... before scheduling

#ifndef LATHE_CODEGEN_LOWERING_H_
#define LATHE_CODEGEN_LOWERING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/loop_ir.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "symbolic/expr.h"
#include "symbolic/shape_env.h"

namespace lathe::codegen {

// Where a runtime symbol's value comes from: an input's size, stride or
// value, or (kSeed) the call's random seed (LatheKernelRuntime::seed).
struct SymbolSource {
  symbolic::Expr symbol;
  int input = 0;  // placeholder position
  enum class Kind : uint8_t {
    kSize,
    kStride,
    kScalar,
    kSeed
  } kind = Kind::kSize;
  int dim = 0;
};

// One graph output: a tensor in a buffer (or an input's storage) at the
// given sizes, strides and storage offset; a symbolic number; or None.
struct LoweredOutput {
  enum class Kind : uint8_t { kTensor, kNumber, kNone };
  Kind kind = Kind::kNone;
  int buffer = -1;
  DType dtype = DType::kFloat32;
  std::vector<symbolic::Expr> sizes, strides;
  symbolic::Expr offset = symbolic::Int(0);  // from the buffer's start
  symbolic::Expr number;                     // kNumber
};

struct LoweredGraph {
  Program program;
  std::vector<LoweredOutput> outputs;
  // How each symbol of program.symbols is bound from the inputs.
  std::vector<SymbolSource> sources;
  // Per placeholder, then per constant: its buffer, or -1 (a number, or an
  // input nothing reads).
  std::vector<int> input_buffers;
  // The constants the graph reads (`self.NAME` attributes), by NAME; the
  // k-th is input number (placeholders + k). The last frozen_constants of
  // them are frozen (`# lathe: constant`): the compiled function's own.
  std::vector<std::string> constants;
  int frozen_constants = 0;
  // The storage offset of each input buffer's first element, by buffer (the
  // placeholder's meta offset; 0 for allocated buffers).
  std::vector<symbolic::Expr> base_offsets;
  // The target's routines it was lowered for (the scheduler's fusions
  // depend on them too).
  Routines routines;
};

// Lower()
//
// Lowers `graph` (shape-propagated into `env`, metas current) into a
// program for a target with `routines`; kernels come in graph order, one
// per realized value.
absl::StatusOr<LoweredGraph> Lower(const ir::Graph& graph,
                                   symbolic::ShapeEnv& env,
                                   Routines routines = {});

// HasLowering()
//
// Whether `op` lowers (directly, or through its functional twin).
bool HasLowering(const ir::OpDef& op);

// How one registry op fares in the lowering table: lowered, refused with a
// reason, or neither (then the decompose pass must rewrite it before
// lowering; lowering_coverage_test checks that it does).
struct LoweringStatus {
  enum class Kind : uint8_t { kNone, kLowered, kRefused };
  const ir::OpDef* op = nullptr;
  Kind kind = Kind::kNone;
  std::string reason;  // kRefused
};

// LoweringTableStatus()
//
// The status of every registry op, sorted by target.
std::vector<LoweringStatus> LoweringTableStatus();

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_LOWERING_H_
