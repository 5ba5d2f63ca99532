// consumer: prints the element count of each shape given on the command line.
//   bazel run //:consumer -- 2x3x4 5x0
#include "absl/strings/str_format.h"
#include "parse_dims.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::StatusOr<int64_t> numel = consumer::Numel(argv[i]);
    if (!numel.ok()) {
      absl::FPrintF(stderr, "consumer: %s: %s\n", argv[i],
                    numel.status().message());
      return 1;
    }
    absl::PrintF("%s: %d elements\n", argv[i], *numel);
  }
  return 0;
}
