#include "tools/testing/npy_tree.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "runtime/testing/expect_close.h"

namespace lathe::testing {
namespace {

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void Collect(const std::string& dir, const std::string& prefix,
             std::vector<std::string>* out) {
  for (const std::string& e : DirEntries(dir)) {
    std::string path = absl::StrCat(dir, "/", e);
    if (IsDir(path)) {
      Collect(path, absl::StrCat(prefix, e, "/"), out);
    } else if (absl::EndsWith(e, ".npy")) {
      out->push_back(absl::StrCat(prefix, e));
    }
  }
}

}  // namespace

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n[0] != '.') out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> NpyFilesUnder(const std::string& dir) {
  std::vector<std::string> out;
  Collect(dir, "", &out);
  std::sort(out.begin(), out.end());
  return out;
}

std::string NpyTreeDiff(const std::string& want_dir,
                        const std::string& got_dir) {
  std::vector<std::string> want = NpyFilesUnder(want_dir);
  std::vector<std::string> got = NpyFilesUnder(got_dir);
  std::string diff;
  for (const std::string& f : got) {
    if (!std::binary_search(want.begin(), want.end(), f)) {
      absl::StrAppend(&diff, f, ": not expected\n");
    }
  }
  for (const std::string& f : want) {
    if (!std::binary_search(got.begin(), got.end(), f)) {
      absl::StrAppend(&diff, f, ": missing\n");
      continue;
    }
    absl::StatusOr<Tensor> w = ReadNpy(absl::StrCat(want_dir, "/", f));
    absl::StatusOr<Tensor> g = ReadNpy(absl::StrCat(got_dir, "/", f));
    if (!w.ok() || !g.ok()) {
      absl::StrAppend(&diff, f, ": ",
                      (w.ok() ? g.status() : w.status()).message(), "\n");
      continue;
    }
    std::string d = TensorDiff(*g, *w, DTypeTolerance(w->dtype()));
    if (!d.empty()) absl::StrAppend(&diff, f, ": ", d, "\n");
  }
  return diff;
}

}  // namespace lathe::testing
