// libFuzzer target for the ATen schema parser: any text gives a schema or a
// clean error; a parsed schema prints to text that parses to the same text.
//
//   bazel build --config=fuzz //ir:schema_fuzzer
//   bazel-bin/ir/schema_fuzzer -max_total_time=60 ir/testdata/schema_corpus

#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "ir/schema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<lathe::ir::OpSchema> s = lathe::ir::ParseSchema(text);
  if (!s.ok()) return 0;
  std::string printed = s->ToString();
  absl::StatusOr<lathe::ir::OpSchema> again = lathe::ir::ParseSchema(printed);
  if (!again.ok() || again->ToString() != printed) std::abort();
  return 0;
}
