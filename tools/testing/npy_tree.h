// -----------------------------------------------------------------------------
// File: npy_tree.h
// -----------------------------------------------------------------------------
//
// Test helper (testonly): compares two directories of .npy files the way
// lathec writes them (out0.npy, mutated/NAME.npy, <k>/...): the same files,
// each tensor within the tolerance its dtype needs (DTypeTolerance),
// integers and bools exactly.
//
// Example:
//
//   EXPECT_EQ(NpyTreeDiff(expected_dir, out_dir), "");

#ifndef LATHE_TOOLS_TESTING_NPY_TREE_H_
#define LATHE_TOOLS_TESTING_NPY_TREE_H_

#include <string>
#include <vector>

namespace lathe::testing {

// The names in `dir` (no dot files), sorted; empty when it cannot be read.
std::vector<std::string> DirEntries(const std::string& dir);

// The .npy files under `dir`, as sorted paths relative to it.
std::vector<std::string> NpyFilesUnder(const std::string& dir);

// Empty when `got_dir` holds the files of `want_dir` with matching values;
// else one line per difference (a file missing or extra, unreadable, or
// its first differing element).
std::string NpyTreeDiff(const std::string& want_dir,
                        const std::string& got_dir);

}  // namespace lathe::testing

#endif  // LATHE_TOOLS_TESTING_NPY_TREE_H_
