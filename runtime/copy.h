// -----------------------------------------------------------------------------
// File: copy.h
// -----------------------------------------------------------------------------
//
// The data copy a runtime wrapper performs: `dst.copy_(src)` for two tensors
// of the same dtype and sizes, through any strides. Contiguous (or identically
// laid-out dense) pairs are one memcpy; other layouts copy element by
// element; a source that shares dst's storage is read in full before writing.
//
// Example:
//
//   RETURN_IF_ERROR(CopyTensor(input, updated));  // input.copy_(updated)

#ifndef LATHE_RUNTIME_COPY_H_
#define LATHE_RUNTIME_COPY_H_

#include "absl/status/status.h"
#include "runtime/tensor.h"

namespace lathe {

// CopyTensor()
//
// Writes `src` into `dst`; an error when their dtypes, sizes or devices
// differ (this is not a broadcasting or converting copy).
absl::Status CopyTensor(const Tensor& dst, const Tensor& src);

}  // namespace lathe

#endif  // LATHE_RUNTIME_COPY_H_
