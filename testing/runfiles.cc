#include "testing/runfiles.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace lathe::testing {

namespace {

const char* EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

}  // namespace

std::string RunfilePath(absl::string_view path) {
  return ExternalRunfilePath(EnvOr("TEST_WORKSPACE", "lathe"), path);
}

std::string ExternalRunfilePath(absl::string_view repo,
                                absl::string_view path) {
  return absl::StrCat(EnvOr("TEST_SRCDIR", "."), "/", repo, "/", path);
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
  return absl::StrCat(EnvOr("TEST_TMPDIR", "/tmp"), "/", name);
}

void UseTestCompileCache() {
  setenv("LATHE_CACHE_DIR", TestTmpPath("lathe-cache").c_str(),
         /*overwrite=*/0);
}

}  // namespace lathe::testing
