// -----------------------------------------------------------------------------
// File: pass.h
// -----------------------------------------------------------------------------
//
// What a graph pass is: a name (one per pass everywhere — class, flag, dump
// file, test) and Run(Graph&, PassContext&), whose bool honestly says
// whether the graph changed. Passes keep no state between runs; what they
// share lives in the PassContext: the ShapeEnv the graph's metas live in
// and the log of decisions.
//
// Example:
//
//   class Dce : public Pass {
//    public:
//     absl::string_view name() const override { return "dce"; }
//     absl::StatusOr<bool> Run(ir::Graph& g, PassContext&) override {
//       return g.EraseDeadNodes() > 0;
//     }
//   };

#ifndef LATHE_PASSES_PASS_H_
#define LATHE_PASSES_PASS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "ir/value.h"
#include "symbolic/shape_env.h"

namespace lathe::passes {

// What every pass of one pipeline run shares.
class PassContext {
 public:
  explicit PassContext(symbolic::ShapeEnv& env) : env_(env) {}

  // The ShapeEnv the graph's metas and guards live in.
  symbolic::ShapeEnv& env() const { return env_; }

  // Records a decision a pass made ("cse: mul_1 -> mul"), for --dump-dir.
  template <typename... Args>
  void Log(const Args&... parts) {
    log_.push_back(absl::StrCat(parts...));
  }
  const std::vector<std::string>& log() const { return log_; }

  // Float symbols a pass found it must specialize (tensorify_scalars): the
  // caller recompiles with them as constants.
  std::vector<std::string>& specialize() { return specialize_; }

  // The values of the graph's frozen constants (driver/freeze.h), which a
  // pass may compute with and add to (listing each new one in the graph's
  // attributes().constants); null when nothing is frozen.
  ir::Constants* frozen() const { return frozen_; }
  void set_frozen(ir::Constants* frozen) { frozen_ = frozen; }

 private:
  symbolic::ShapeEnv& env_;
  ir::Constants* frozen_ = nullptr;
  std::vector<std::string> log_;
  std::vector<std::string> specialize_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // The pass's one name: "dce", "cse", "reinplace", ...
  virtual absl::string_view name() const = 0;
  // Rewrites `graph`; true when it changed anything.
  virtual absl::StatusOr<bool> Run(ir::Graph& graph, PassContext& ctx) = 0;
  // Whether the graph may hold mutation after this pass (reinplace): the
  // functional invariant is no longer checked from then on.
  virtual bool AddsMutation() const { return false; }
};

}  // namespace lathe::passes

#endif  // LATHE_PASSES_PASS_H_
