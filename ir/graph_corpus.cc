#include "ir/graph_corpus.h"

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "testing/runfiles.h"

namespace lathe::ir {

std::string ReadCorpusGraph(absl::string_view name) {
  absl::StatusOr<std::string> text =
      lathe::testing::ReadRunfile(absl::StrCat("ir/testdata/graphs/", name));
  return text.ok() ? *std::move(text) : std::string();
}

}  // namespace lathe::ir
