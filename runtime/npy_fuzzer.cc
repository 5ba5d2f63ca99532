// libFuzzer target for the .npy reader: any bytes must give a tensor or a
// clean error, never a crash, leak or unbounded allocation; a tensor read
// must survive encoding and re-reading unchanged.
//
//   bazel build --config=fuzz //runtime:npy_fuzzer
//   bazel-bin/runtime/npy_fuzzer -max_total_time=60 runtime/testdata/npy_corpus

#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<lathe::Tensor> t = lathe::ParseNpy(bytes);
  if (!t.ok()) return 0;
  absl::StatusOr<std::string> again = lathe::EncodeNpy(*t);
  if (!again.ok()) std::abort();
  absl::StatusOr<lathe::Tensor> back = lathe::ParseNpy(*again);
  if (!back.ok() || back->sizes() != t->sizes() ||
      back->dtype() != t->dtype()) {
    std::abort();
  }
  return 0;
}
