#include "tools/bench/workspace_file.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace lathe {
namespace {

std::string& Binary() {
  static std::string* binary = new std::string();
  return *binary;
}

}  // namespace

void SetBenchmarkBinary(const char* argv0) { Binary() = argv0; }

absl::StatusOr<std::string> ReadWorkspaceFile(const std::string& path) {
  std::vector<std::string> candidates;
  for (const char* env : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* dir = std::getenv(env); dir != nullptr && *dir != '\0') {
      candidates.push_back(absl::StrCat(dir, "/lathe/", path));
    }
  }
  candidates.push_back(absl::StrCat(Binary(), ".runfiles/lathe/", path));
  candidates.push_back(path);
  for (const std::string& c : candidates) {
    std::ifstream in(c, std::ios::binary);
    if (!in.good()) continue;
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  return absl::NotFoundError(absl::StrCat("cannot find ", path));
}

}  // namespace lathe
