#include "aot/aot_testing.h"

#include <string>
#include <utility>

#include "ir/graph_text.h"
#include "ir/shape_prop.h"
#include "status_macros.h"
#include "symbolic/shape_env.h"

namespace lathe::aot {

absl::StatusOr<CompiledText> CompileText(const std::string& text,
                                         bool keep_input_mutations) {
  CompiledText c;
  ASSIGN_OR_RETURN(c.graph, ir::ParseGraph(text));
  symbolic::ShapeEnv env;
  RETURN_IF_ERROR(ir::PropagateShapes(*c.graph, env));
  AotOptions options;
  options.mutations.keep_input_mutations = keep_input_mutations;
  ASSIGN_OR_RETURN(c.aot, AotDispatch(*c.graph, env, options));
  return c;
}

}  // namespace lathe::aot
