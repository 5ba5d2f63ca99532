#include "tools/testing/runfiles.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lathe::testing {

std::string RunfilePath(absl::string_view path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", ws ? ws : "lathe", "/", path);
}

absl::StatusOr<std::string> ReadRunfile(absl::string_view path) {
  std::ifstream in(RunfilePath(path), std::ios::binary);
  if (!in.good()) {
    return absl::NotFoundError(absl::StrCat("cannot read runfile ", path, " (",
                                            RunfilePath(path), ")"));
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TestTmpPath(absl::string_view name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp ? tmp : "/tmp", "/", name);
}

}  // namespace lathe::testing
