// -----------------------------------------------------------------------------
// File: graph_corpus.h
// -----------------------------------------------------------------------------
//
// Test helper (testonly): the text of a graph in ir/testdata/graphs, read
// from the test's runfiles. Targets using it list "//ir:graph_corpus" in
// their data.
//
// Example:
//
//   std::string text = ReadCorpusGraph("01_mlp.txt");

#ifndef LATHE_IR_GRAPH_CORPUS_H_
#define LATHE_IR_GRAPH_CORPUS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace lathe::ir {

// The file's text; empty when it cannot be read.
std::string ReadCorpusGraph(absl::string_view name);

}  // namespace lathe::ir

#endif  // LATHE_IR_GRAPH_CORPUS_H_
