// -----------------------------------------------------------------------------
// File: onednn.h
// -----------------------------------------------------------------------------
//
// What the runtime's oneDNN routines (convolution.h, bf16_gemm.h) share: the
// process's CPU engine, each thread's stream, and a memory object that
// destroys itself. Each routine builds its own primitives on them.
//
// Example:
//
//   dnnl_stream_t stream = onednn::Stream();   // null: oneDNN is unusable
//   onednn::Memory x(x_md, data);              // over the caller's buffer
//   if (stream == nullptr || x.m == nullptr) return false;

#ifndef LATHE_RUNTIME_ONEDNN_H_
#define LATHE_RUNTIME_ONEDNN_H_

#include <string>
#include <vector>

#include "dnnl.h"

namespace lathe::onednn {

// Whether a oneDNN call succeeded.
inline bool Ok(dnnl_status_t s) { return s == dnnl_success; }

// The process's CPU engine, or null when oneDNN cannot make one.
dnnl_engine_t Engine();

// This thread's stream on Engine(), or null.
dnnl_stream_t Stream();

// A memory object of `md` over `data` (DNNL_MEMORY_ALLOCATE: oneDNN's own
// buffer); m is null when oneDNN refused it.
struct Memory {
  dnnl_memory_t m = nullptr;
  Memory(const dnnl_memory_desc_t& md, void* data);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
};

// The library's version, "oneDNN 2.7.3 (<commit>)": what a measurement of
// its routines depends on (driver/autotune.h's key).
std::string Version();

// Runs primitive `p` with `args` on `stream`; false when oneDNN fails.
bool Execute(dnnl_stream_t stream, dnnl_primitive_t p,
             std::vector<dnnl_exec_arg_t> args);

}  // namespace lathe::onednn

#endif  // LATHE_RUNTIME_ONEDNN_H_
