#include "ir/graph_corpus.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace lathe::ir {

std::string ReadCorpusGraph(absl::string_view name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  std::ifstream in(absl::StrCat(srcdir ? srcdir : ".", "/", ws ? ws : "lathe",
                                "/ir/testdata/graphs/", name));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace lathe::ir
