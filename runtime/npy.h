// -----------------------------------------------------------------------------
// File: npy.h
// -----------------------------------------------------------------------------
//
// NumPy's .npy format (versions 1.0-3.0): how lathec reads inputs and writes
// outputs. All ten lathe dtypes, C and Fortran order, 0-d arrays,
// little-endian data. bf16, which NumPy lacks, is written as the 2-byte void
// type '|V2' (the only one lathe writes) and read back from it.
//
// Example:
//
//   ASSIGN_OR_RETURN(Tensor x, ReadNpy("inputs/x.npy"));
//   RETURN_IF_ERROR(WriteNpy("out/out0.npy", y));
//
// Errors name the file (when there is one) and the byte offset:
//   "x.npy: byte 58: shape dimension -3 is negative". A malformed file never
// makes the reader allocate more than the file's own size.

#ifndef LATHE_RUNTIME_NPY_H_
#define LATHE_RUNTIME_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"

namespace lathe {

// ParseNpy()
//
// The tensor encoded by `bytes` (a whole .npy file).
absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes);

// EncodeNpy()
//
// `t` as .npy bytes: Fortran order when `t` is Fortran-contiguous and not
// C-contiguous, else C order.
absl::StatusOr<std::string> EncodeNpy(const Tensor& t);

// ReadNpy()
//
// The tensor in the .npy file at `path` (a pipe works), read header first:
// the magic, the header, then exactly the data the header describes and one
// byte more, straight into the tensor's storage. A file that is not a .npy,
// data over `max_bytes` (by default the host memory limit, see storage.h) or
// data of another size than the header says is refused after reading at
// most the header and that much; errors start with the path.
absl::StatusOr<Tensor> ReadNpy(const std::string& path,
                               int64_t max_bytes = HostMemoryLimit());

// NpyParts / EncodeNpyParts()
//
// `t` as the two parts of a .npy file: its header, then its data, which is
// a view of t's own storage when t's elements are already in the file's
// order (C- or Fortran-contiguous: nothing copied) and an encoded copy
// otherwise. The view lives as long as t's storage.
struct NpyParts {
  std::string header;
  std::string copy;         // the data, when it had to be reordered
  absl::string_view dense;  // t's own bytes, when they are in order
  bool is_dense = false;
  absl::string_view data() const { return is_dense ? dense : copy; }
};
absl::StatusOr<NpyParts> EncodeNpyParts(const Tensor& t);

// WriteNpy()
//
// Writes `t` to `path` atomically: the file appears whole or not at all.
absl::Status WriteNpy(const std::string& path, const Tensor& t);

}  // namespace lathe

#endif  // LATHE_RUNTIME_NPY_H_
