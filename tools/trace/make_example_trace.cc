// make_example_trace: compiles a graph for the CPU and writes its trace
// (compile_trace.h), as the driver's `--trace FILE` will:
//
//   make_example_trace tools/examples/mlp_gelu.txt
//   tools/trace/testdata/mlp_gelu.trace.jsonl

#include <cstdio>
#include <memory>
#include <string>

#include "codegen/cpp/cpu_function.h"
#include "runtime/file_io.h"
#include "tools/compile.h"
#include "tools/trace/compile_trace.h"
#include "tools/trace/trace.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_example_trace GRAPH OUT.jsonl\n");
    return 2;
  }
  absl::StatusOr<std::string> text = lathe::ReadFileLimited(argv[1], 64 << 20);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
    return 1;
  }
  lathe::CompileOptions options;
  options.source = argv[1];
  options.dump = true;
  absl::StatusOr<std::unique_ptr<lathe::CompiledGraph>> c =
      lathe::CompileGraphText(*text, options);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
    return 1;
  }
  lathe::codegen::CpuCompileOptions cpu_options;
  cpu_options.guards = (*c)->guards.has_value() ? &*(*c)->guards : nullptr;
  cpu_options.guard_inputs = (*c)->guard_inputs;
  absl::StatusOr<std::unique_ptr<lathe::codegen::CpuFunction>> cpu =
      lathe::codegen::CpuFunction::Compile(*(*c)->graph, *(*c)->env,
                                           cpu_options);
  if (!cpu.ok()) {
    std::fprintf(stderr, "%s\n", cpu.status().ToString().c_str());
    return 1;
  }
  lathe::trace::Trace trace;
  lathe::trace::RecordCompile(**c, cpu->get(), &trace);
  absl::Status s = trace.WriteTo(argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("wrote %s (%zu steps)\n", argv[2], trace.steps().size());
  return 0;
}
