// -----------------------------------------------------------------------------
// File: loop_ir.h
// -----------------------------------------------------------------------------
//
// The loop-level IR code generation works on (DESIGN.md §3 codegen): a
// Program is a list of buffers and kernels. A kernel loops over symbolic
// outer ranges (index variables x0, x1, ...) and, inside them, runs its
// sections in order; a section loops over its own inner ranges (r0_0, ...)
// — none for a straight-line section — and evaluates a list of scalar ops:
// loads and stores at symbolic::Expr indices, constants, index values,
// calls of the scalar functions scalar_ops.h defines, casts, and
// reductions. Views, broadcasting, padding and strides are index
// arithmetic, never copies. Nothing in it is CPU-specific: the CPU and CUDA
// emitters consume the same program.
//
// A reduce op accumulates over its section's inner loops; its value is
// available to the later sections (the reduction's epilogue). A scan op
// (cumsum, cumprod) is a running reduction: its value is the accumulator
// at each iteration, so its section's loops run in order. An Extern
// kernel calls a library routine (matrix products) on whole buffers.
//
// Indirect indexing (gather, embedding, index): a load's or store's index
// may use loaded values, as the symbols ind0, ind1, ... standing for the
// op's extra arguments. Such a value first goes through a check-index op,
// which wraps negative indices where PyTorch does and stops the program
// with one of Program::checks when the index is out of range, so no access
// leaves its buffer:
//
//   %3 = load in1[x0] : i64
//   %4 = check_index(%3) in [0, 10) wrap, check 0 : i64
//   %5 = load in0[x1 + 8*ind0] (ind0=%4) : f32
//
// Example (softmax of a [4, 8] input, one fused kernel):
//
//   kernel k0 pointwise_reduction ranges=[4]
//     section 0 reduction r0_0 in [8]
//       %0 = load in0[8*x0 + r0_0] : f32
//       %1 = reduce max(%0) : f32
//     section 1 reduction r1_0 in [8]
//       %2 = load in0[8*x0 + r1_0] : f32
//       %3 = sub(%2, %1) : f32
//       ...
//
// Printed with PrintProgram; lowering and scheduling tests check that text.

#ifndef LATHE_CODEGEN_LOOP_IR_H_
#define LATHE_CODEGEN_LOOP_IR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "runtime/dtype.h"
#include "symbolic/expr.h"

namespace lathe::codegen {

// One buffer: a graph input's storage, or memory the program allocates.
struct Buffer {
  enum class Kind : uint8_t {
    kInput,     // the storage of graph input `input` (its data pointer)
    kAllocated  // allocated before the first kernel that writes it
  };
  std::string name;  // "in0", "buf3"
  Kind kind = Kind::kAllocated;
  DType dtype = DType::kFloat32;
  // Elements the storage holds (kAllocated: how many to allocate).
  symbolic::Expr numel = symbolic::Int(0);
  int input = -1;  // kInput: the placeholder's position
  // Whether every access is in one kernel at one index, so the emitter may
  // keep it in a register instead (the scheduler decides; memory plan).
  bool local = false;
  // The kernel (index into Program::kernels) before which this buffer is
  // allocated, or taken over from `reuses` (memory plan): the first that
  // touches it; -1 for one no kernel touches (allocated first of all).
  int allocate_before = -1;
  // The buffer whose memory this one takes over (memory plan), or -1.
  int reuses = -1;
  // The kernel (index into Program::kernels) after which this buffer's
  // memory is given back (memory plan); -1 while it stays: an input, an
  // output, memory a later buffer takes over, or a buffer never planned.
  int free_after = -1;
};

// The reductions a reduce op performs.
enum class ReduceKind : uint8_t {
  kSum,
  kProd,
  kMax,     // NaN propagates
  kMin,     // NaN propagates
  kArgMax,  // first index of the maximum (NaN counts as the maximum)
  kArgMin,
  kAny,
  kAll,
  // Welford's mean and M2 (the sum of squared deviations from the mean),
  // accumulated in one pass: the M2 op's arg_index is the mean op over the
  // same value, whose accumulator it shares. An empty reduction is NaN.
  kWelfordMean,
  kWelfordM2,
  // log(exp(acc) + exp(v)), as PyTorch's _log_add_exp_helper (scans only:
  // logcumsumexp).
  kLogAddExp,
};

// The reduction's name as the IR prints it ("sum", "argmax", ...).
const char* ReduceName(ReduceKind kind);

// One scalar op of a section.
struct ScalarOp {
  enum class Kind : uint8_t {
    kLoad,      // buffer[index]
    kStore,     // buffer[index] = args[0] (no value)
    kConstant,  // number (as a double, or an int64 for integer dtypes)
    kIndex,     // the integer value of `index` (an index expression)
    kSymbol,    // the runtime value of a float/int symbol (`index`)
    kCall,      // fn(args...) of scalar_ops.h, computed in `dtype`
    kCast,      // args[0] converted to `dtype`
    kReduce,    // reduce over the section's inner loops
    kScan,      // the running `reduce` (sum, prod) of args[0] up to and
                // including this iteration of the section's loops
    // args[0] as an index into [0, `index`): negative values first wrap by
    // `index` when `wrap`; out of range, the program stops with check `i`
    // (Program::checks) and the value is 0.
    kCheckIndex,
  };
  Kind kind = Kind::kCall;
  DType dtype = DType::kFloat32;
  std::string fn;  // kCall
  // Operands. A load's args, and a store's after its value, are the values
  // of the indirect variables IndirectVar(0), IndirectVar(1), ... in `index`.
  std::vector<int> args;
  int buffer = -1;       // kLoad, kStore
  symbolic::Expr index;  // kLoad, kStore, kIndex, kSymbol
  double f = 0;          // kConstant of a floating dtype (or bool)
  int64_t i = 0;         // kConstant of an integer dtype; kCheckIndex
  bool wrap = false;     // kCheckIndex
  // kStore: args[1] is a bool value and the store happens only where it is
  // true (nonzero's compaction); its indirect values come after it.
  bool masked = false;
  ReduceKind reduce = ReduceKind::kSum;
  // kReduce of kArgMax/kArgMin: the op giving the index being reduced over;
  // of kWelfordM2: the kWelfordMean op it shares an accumulator with.
  int arg_index = -1;
  int section = 0;
};

// A loop nest inside the kernel's outer loops.
struct Section {
  // Index variables (symbols r<section>_<k>) and their extents; empty for a
  // straight-line section.
  std::vector<symbolic::Expr> vars;
  std::vector<symbolic::Expr> ranges;
  bool reduction = false;  // has kReduce ops
};

struct Kernel {
  // kBind and kAssert are host steps between kernels, for data-dependent
  // values: the emitted host function runs them inline.
  enum class Kind : uint8_t { kLoops, kExtern, kBind, kAssert };
  std::string name;  // "k0"
  Kind kind = Kind::kLoops;
  // kLoops: outer index variables (symbols x0, x1, ...) and their extents,
  // outermost first (the scheduler may reorder them: x1 before x0).
  std::vector<symbolic::Expr> vars;
  std::vector<symbolic::Expr> ranges;
  std::vector<Section> sections;
  std::vector<ScalarOp>
      ops;  // in evaluation order; ScalarOp::section says where
  // kExtern: a LatheKernelRuntime routine ("sgemm", "dgemm", "bgemm":
  // sizes, strides and offsets as its arguments; "sconv", "sort": one geometry
  // array) or "randperm" (n, seed, first draw: a serial loop the emitter
  // writes out), its buffers and the integer arguments it is called with.
  std::string routine;
  std::vector<int> extern_buffers;  // outputs first
  int extern_outputs = 1;           // how many of them it writes
  std::vector<symbolic::Expr> extern_args;
  // kBind: runtime symbol `symbol` (a data-dependent u0) takes `value` — the
  // element at index `value` of buffer extern_buffers[0] when there is one
  // (x.item()), else an expression of symbols bound before it (the length
  // of x[:u0]); an int read from a buffer outside int32's range stops the
  // program with check `check`. kAssert: `value` is a condition over bound
  // symbols; when it is false the program stops with check `check`
  // (Program::checks).
  symbolic::Expr symbol;
  symbolic::Expr value;
  int check = -1;
  // kAssert: the values the failing check reports (kernel_abi.h), which
  // fill the holes of its message: expressions of bound symbols, a float
  // one (an element count) saturated to int64.
  std::vector<symbolic::Expr> check_values;
  // kLoops, and kExtern's sgemm and dgemm: the threads its parallel loops
  // (or the library call) use, autotuning's choice (driver/autotune.h); 0:
  // the whole OpenMP team.
  int threads = 0;
  // kExtern's batched sgemm and dgemm, autotuning's other choice: the
  // batch's matrices split over the threads, each product on one thread
  // (instead of each product split over all of them, one after another).
  bool split_batch = false;
  // kExtern's sconv, autotuning's choice: oneDNN's Winograd algorithm
  // (runtime/convolution.h's kSconvWinograd flag in its geometry).
  bool winograd = false;
  // kExtern's sconv with ops: the loop kernel fused into it as its
  // epilogue (Routines::sconv_epilogue), run over each image of its output
  // once that image is written (kernel_abi.h: where it can, on the thread
  // that wrote it; possibly twice, so it reads nothing it writes). Its
  // vars, ranges, sections and ops are that kernel's over one image (the
  // batch variable dropped); each buffer it touches moves by
  // `image_strides` elements from one image to the next (buffer, stride).
  std::vector<std::pair<int, symbolic::Expr>> image_strides;
  // The kernels fused into this one (for the log), and the graph nodes whose
  // values they compute (for the fusion picture).
  std::vector<std::string> fused_from;
  std::vector<std::string> nodes;
};

// The kernels autotuning may set Kernel::threads of (those with a parallel
// loop, and sgemm and dgemm calls), among them Kernel::split_batch of
// (batched products), and Kernel::winograd of (3x3 convolutions of stride
// 1), by index in Program::kernels.
struct TunableKernels {
  std::vector<int> threads;
  std::vector<int> split_batch;
  std::vector<int> winograd;
};

// The tuning build's table entries that are not thread counts (driver/
// autotune.h's choices): a batched product's batch split over the team, a
// convolution by Winograd's algorithm.
inline constexpr int kTuneSplitBatch = -1;
inline constexpr int kTuneWinograd = -2;

// The library routines a target's runtime has beyond those every one has
// (sgemm, dgemm, sconv, sort; randperm is written out): what the lowering
// may call there (Backend::routines()).
struct Routines {
  // bgemm: bf16 operands, an f32 product (runtime/bf16_gemm.h); without it
  // bf16 products convert their operands to f32 for sgemm.
  bool bgemm = false;
  // sconv runs an epilogue over each image it writes (kernel_abi.h), so the
  // scheduler may fuse the loop kernel after a convolution into it
  // (Kernel::image_strides).
  bool sconv_epilogue = false;
};

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  // The runtime values the kernels read: size symbols and float symbols,
  // in the order the entry point receives them.
  std::vector<symbolic::Expr> symbols;
  // The message of each check (a check-index op's, a bind's or an
  // assert's): a template whose holes "{k:TEXT}" the failing check's
  // reported values fill (kernel_abi.h; runtime FillCheckMessage).
  std::vector<std::string> checks;
};

// PrintProgram()
//
// The program as text (the form lowering and scheduling tests check).
std::string PrintProgram(const Program& program);

// PrintExprs()
//
// Expressions as the program's text writes a list of them ("8, s0 + 1").
std::string PrintExprs(const std::vector<symbolic::Expr>& list);

// IndexVar() / SectionVar()
//
// The outer index variable x<k> and the inner variable r<s>_<k> of section
// s (nonnegative integer symbols).
symbolic::Expr IndexVar(int k);
symbolic::Expr SectionVar(int section, int k);

// IndirectVar()
//
// The symbol ind<k>: in a load's or store's index, the value of its k-th
// indirect argument.
symbolic::Expr IndirectVar(int k);

// IndirectArgs()
//
// The first of `op`'s args that are indirect variables' values (0 for a
// load, 1 for a store); args from there on are indirect.
int IndirectArgs(const ScalarOp& op);

// IndirectArg()
//
// The op (an index into the kernel's ops) whose value symbol `s` stands
// for in access `op`'s index — its arg for IndirectVar(k) — or -1 when `s`
// is not one of its indirect variables.
int IndirectArg(const ScalarOp& op, symbolic::Expr s);

// IsIndirect()
//
// Whether `op` is a load or store whose index uses loaded values, or a
// masked store: an access whose element the index alone does not say.
bool IsIndirect(const ScalarOp& op);

// Product()
//
// The product of `factors` (1 for none).
symbolic::Expr Product(const std::vector<symbolic::Expr>& factors);

// Users()
//
// For each op of `kernel`, how many later ops use its value.
std::vector<int> Users(const Kernel& kernel);

// FlatPointwise()
//
// Whether `k` is a loop kernel of one section without loops of its own
// (pointwise over its outer loops alone).
bool FlatPointwise(const Kernel& k);

// RenameLoops()
//
// Gives k the outer loops `vars` over `ranges`, its indices rewritten by
// `rename` (each old loop variable to an expression of the new ones);
// false, and k unchanged, when an index cannot be rewritten.
bool RenameLoops(
    Kernel& k,
    const absl::flat_hash_map<symbolic::Expr, symbolic::Expr>& rename,
    std::vector<symbolic::Expr> vars, std::vector<symbolic::Expr> ranges);

// IntOf()
//
// An integer constant's value (a constant range), or nullopt for any other
// expression.
std::optional<int64_t> IntOf(symbolic::Expr e);

}  // namespace lathe::codegen

#endif  // LATHE_CODEGEN_LOOP_IR_H_
