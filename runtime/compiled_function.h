// -----------------------------------------------------------------------------
// File: compiled_function.h
// -----------------------------------------------------------------------------
//
// A compiled function a C++ program calls: the user's arguments in, the
// results out, in a few hundred nanoseconds of host time. Call() takes, in
// order (as Helion's prepared call and torch.compile's guard cache do):
//
//   1. the last call's key, compared whole: the same dtypes, devices, sizes,
//      strides, offsets and int values as the call before run its variant;
//   2. the specialization key (those values as one flat array, hashed: no
//      per-dimension normalization) to the variant chosen for it before;
//   3. a new key: the arguments are checked (count, kind, dtype, device,
//      rank: a Status naming the argument), then each variant's guards,
//      compiled into its .so as native code, in the order compiled;
//   4. no variant admits them: the compile callback the compiler side
//      injected compiles a new one (counted, with the failing guards as the
//      reason); past the limit, the fallback (the interpreter) runs them,
//      with one warning.
//
// A variant may be a first tier that a better one replaces later (a
// tiered compile: the interpreter runs the first calls while the
// optimized library builds on another thread); the replacement, whose
// guards must be the first's, takes over every key the first admitted (one
// atomic store per key), and the hit path stays lock-free.
//
// Float scalars are never part of the key (only whether they are NaN, which
// the guards check): they are runtime arguments (seed 000). A function that
// writes some of its arguments refuses, on every call, a written tensor that
// shares its storage with another argument. Calls from many threads at once
// are safe; the hit path takes no lock.
//
// Example:
//
//   CompiledFunction f(arguments, {.compile = callback});
//   std::vector<Operand> args = {Operand::Of(x), Operand::Float(0.1)};
//   ASSIGN_OR_RETURN(std::vector<Operand> out, f.Call(absl::MakeSpan(args)));
//   f.compiles();        // 1
//   f.recompiles();      // the reason of each compile after the first

#ifndef LATHE_RUNTIME_COMPILED_FUNCTION_H_
#define LATHE_RUNTIME_COMPILED_FUNCTION_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/composite.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/kernel_runtime.h"
#include "runtime/loaded_graph.h"

namespace lathe {

// One argument of a compiled function, as Call checks it before any key.
struct ArgumentSpec {
  // kNone: a parameter make_fx baked in (unannotated), passed as None.
  enum class Kind : uint8_t { kTensor, kComposite, kInt, kFloat, kBool, kNone };
  std::string name;       // the placeholder's ("x"; "self.w" for a constant)
  bool constant = false;  // after the placeholders; the guards skip it
  Kind kind = Kind::kTensor;
  DType dtype = DType::kFloat32;  // tensors; composites: the outer dtype
  Device device = Device::Cpu();
  int rank = 0;
  std::string type;  // composites: the registered type's name

  // "x: f32 tensor of rank 2 on cpu", "lr: float".
  std::string ToString() const;
};

// CheckArgument()
//
// Whether `got` fits argument `k`, `want` (kind, dtype, device, rank, a
// composite's type): OK, or the error Call gives, naming the argument
// ("argument 0 (x): expected f32 tensor of rank 2 on cpu, got ...").
absl::Status CheckArgument(int k, const ArgumentSpec& want, const Operand& got);

// One compiled variant: its loaded .so and its guards as text (the reason
// a recompile gives when guard k fails).
struct Variant {
  // A compiled variant's library; null for an interpreted one.
  std::shared_ptr<const LoadedGraph> graph;
  std::vector<std::string> guards;
  // The inputs checked against the annotations on the host, the slow way
  // (the compiler side's; null in an artifact): it explains inputs the .so
  // refused, and runs before every call when `check_every_call` (an
  // annotation with a division, which the .so cannot check).
  std::function<absl::Status(absl::Span<const Operand> args)> check;
  bool check_every_call = false;
  // The arguments a call writes: none of them may share a storage with
  // another argument (the compiled code assumes they do not).
  std::vector<int> mutated;
  // An interpreted variant (the compiler side's, for its interpreter
  // backend): its guards over the arguments (LATHE_GUARDS_HOLD, or the index
  // of the first that fails) and its call, both on the host.
  std::function<int(const ArgViews& views)> failed_guard;
  std::function<absl::StatusOr<std::vector<Operand>>(absl::Span<Operand> args,
                                                     uint64_t seed)>
      run;
  // A first tier: called once, after the function stored this variant and
  // outside its lock, with `replace`, which the compiler side calls at most
  // once, from any thread, with the variant that replaces this one, or
  // with the error that ended its build (then this one stays, with one
  // warning). `replace` may outlive the function: it does nothing then.
  using Replace = std::function<void(absl::StatusOr<Variant> better)>;
  std::function<void(Replace replace)> upgrade;
};

// Why one recompile happened: for each earlier variant, the first guard
// that failed ("x.size(0) == 1").
struct Recompile {
  int compile = 0;  // this compile's number (2 for the first recompile)
  std::string reason;
};

class CompiledFunction {
 public:
  // Compiles a variant for arguments no variant admits (the compiler side
  // injects it: the runtime never depends on the compiler).
  using CompileFn =
      std::function<absl::StatusOr<Variant>(absl::Span<const Operand> args)>;
  // Runs arguments without compiling (the interpreter): the results, and
  // the arguments a set_ or as_strided_ rebinds, rebound in place.
  using FallbackFn = std::function<absl::StatusOr<std::vector<Operand>>(
      absl::Span<Operand> args, uint64_t seed)>;

  // The compiler side's check of arguments against the graph's
  // annotations, on the host: OK, or the error naming what does not fit.
  using ExplainFn = std::function<absl::Status(absl::Span<const Operand> args)>;

  struct Options {
    CompileFn compile;    // none: a miss is an error
    FallbackFn fallback;  // none: a miss past the limit is an error
    // Explains arguments step 3 refuses in its own words (the
    // interpreter's); none, or OK: step 3's message.
    ExplainFn explain;
    int max_compiles = 8;
    // Each variant's calls on a device are recorded once and replayed as
    // one launch (CUDA graphs: torch.compile's mode="reduce-overhead"),
    // for arguments that keep their addresses; runtime/replay_cache.h.
    bool cuda_graphs = false;
  };

  // A function of `arguments` (user placeholders, then constants) that
  // starts with `variants` (those of an artifact; none to compile on the
  // first call).
  CompiledFunction(std::vector<ArgumentSpec> arguments, Options options,
                   std::vector<Variant> variants = {});
  ~CompiledFunction();
  CompiledFunction(const CompiledFunction&) = delete;
  CompiledFunction& operator=(const CompiledFunction&) = delete;

  // Call()
  //
  // Runs the function on `args` (one per argument): the user's results.
  // Inputs the function mutates are written in place; an argument a set_
  // or as_strided_ rebinds is replaced in `args`. Random ops draw from
  // `seed` as the interpreter's do.
  absl::StatusOr<std::vector<Operand>> Call(absl::Span<Operand> args,
                                            uint64_t seed = kDefaultSeed);

  // CallViews()
  //
  // Call on `views` the caller made of its own tensors (ArgViews' form,
  // each tensor's `storage` a Storage*), without a lathe::Tensor per
  // argument (the Python package's zero-copy calls), for arguments a
  // compiled variant already admits: the results. std::nullopt where only
  // Call can go on (a key not seen before, an interpreted variant, a bad
  // argument to name, an argument a set_ rebinds): call Call then.
  std::optional<absl::StatusOr<std::vector<Operand>>> CallViews(
      absl::Span<const LatheValue> views, uint64_t seed = kDefaultSeed);

  // The variants compiled by this function's callback.
  int compiles() const;
  // One entry per compile made while other variants existed.
  std::vector<Recompile> recompiles() const;
  // The calls the fallback ran.
  int64_t fallback_calls() const;
  // The variants replaced by a better tier (Variant::upgrade) so far.
  int upgrades() const;
  // Warnings given (the fallback's, once; a failed upgrade's, each).
  std::vector<std::string> warnings() const;
  const std::vector<ArgumentSpec>& arguments() const { return arguments_; }

 private:
  using Key = std::vector<int64_t>;
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(absl::Span<const int64_t> k) const;
  };
  struct KeyEq {
    using is_transparent = void;
    bool operator()(absl::Span<const int64_t> a,
                    absl::Span<const int64_t> b) const {
      return a == b;
    }
  };
  // A key and what runs it; alive with the function. Its key never
  // changes; its variant only to the one that replaces it (an upgrade).
  struct Entry {
    Key key;
    std::atomic<const Variant*> variant{nullptr};  // null: the fallback
  };
  // What a variant's `replace` reaches: the function while it lives.
  struct UpgradeLink {
    std::mutex mu;
    CompiledFunction* function = nullptr;  // null once destroyed
  };

  // Steps 1 and 2: the entry of a key seen before, else null.
  const Entry* Find(absl::Span<const int64_t> key) const;
  // The checks of step 3: a Status naming a bad argument.
  absl::Status CheckArguments(absl::Span<const Operand> args) const;
  // Steps 3 and 4 for a key seen for the first time.
  absl::StatusOr<const Entry*> Admit(absl::Span<const int64_t> key,
                                     absl::Span<Operand> args,
                                     const ArgViews& views);
  // The index of the first of `variant`'s guards `views` fail, or
  // LATHE_GUARDS_HOLD.
  int FailedGuard(const Variant& variant, const ArgViews& views) const;
  // `old` (a stored variant) replaced by `better` in every entry that runs
  // it, or the warning that it stays.
  void Replace(const Variant* old, absl::StatusOr<Variant> better);
  // The error when a written argument shares its storage with another.
  absl::Status CheckNoAliasing(const Variant& variant,
                               absl::Span<const LatheValue> views) const;
  absl::StatusOr<std::vector<Operand>> Run(const Entry& entry,
                                           absl::Span<Operand> args,
                                           const ArgViews& views,
                                           uint64_t seed);

  const std::vector<ArgumentSpec> arguments_;
  const int64_t placeholders_;  // the arguments the guards read
  const Options options_;
  std::atomic<const Entry*> last_{nullptr};
  // Guards what follows (std::shared_mutex: ThreadSanitizer sees it through
  // pthreads, where the system Abseil is not instrumented).
  mutable std::shared_mutex mu_;
  std::deque<Variant> variants_;
  absl::flat_hash_map<Key, std::unique_ptr<Entry>, KeyHash, KeyEq> entries_;
  // Written under mu_, read without it (a caller's per-call check).
  std::atomic<int> compiles_{0};
  std::vector<Recompile> recompiles_;
  std::vector<std::string> warnings_;
  bool fallback_warned_ = false;  // the fallback's warning given
  std::atomic<int64_t> fallback_calls_{0};
  // Variants replaced by a better tier (under mu_).
  absl::flat_hash_set<const Variant*> replaced_;
  std::atomic<int> upgrades_{0};
  std::shared_ptr<UpgradeLink> link_ = std::make_shared<UpgradeLink>();
};

// A specialization key; keys of up to 16 tensors of rank 6 need no heap.
using KeyBuffer = absl::InlinedVector<int64_t, 256>;

// SpecializationKey()
//
// The key of the arguments `views` (ArgViews') as Call computes it,
// appended to `key`: the count, per argument a tag, then a tensor's dtype,
// device, rank, sizes, strides and offset (composites: the type's name, the
// outer ones, then their inner values), an int's or bool's value, a float's
// NaN-ness; last, whether every tensor's elements are reachable with 32-bit
// offsets (the index width).
void SpecializationKey(absl::Span<const LatheValue> views, KeyBuffer* key);

}  // namespace lathe

#endif  // LATHE_RUNTIME_COMPILED_FUNCTION_H_
