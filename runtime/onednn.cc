#include "runtime/onednn.h"

#include <string>
#include <vector>

#include "dnnl.h"

namespace lathe::onednn {

dnnl_engine_t Engine() {
  static dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    if (!Ok(dnnl_engine_create(&e, dnnl_cpu, 0))) e = nullptr;
    return e;
  }();
  return engine;
}

dnnl_stream_t Stream() {
  thread_local dnnl_stream_t stream = [] {
    dnnl_stream_t s = nullptr;
    if (Engine() == nullptr ||
        !Ok(dnnl_stream_create(&s, Engine(), dnnl_stream_default_flags))) {
      s = nullptr;
    }
    return s;
  }();
  return stream;
}

Memory::Memory(const dnnl_memory_desc_t& md, void* data) {
  if (Engine() == nullptr || !Ok(dnnl_memory_create(&m, &md, Engine(), data))) {
    m = nullptr;
  }
}

Memory::~Memory() {
  if (m != nullptr) dnnl_memory_destroy(m);
}

std::string Version() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
         "." + std::to_string(v->patch) + " (" + v->hash + ")";
}

bool Execute(dnnl_stream_t stream, dnnl_primitive_t p,
             std::vector<dnnl_exec_arg_t> args) {
  return Ok(dnnl_primitive_execute(p, stream, static_cast<int>(args.size()),
                                   args.data()));
}

}  // namespace lathe::onednn
