// -----------------------------------------------------------------------------
// File: torch_bridge.h
// -----------------------------------------------------------------------------
//
// PyTorch's tensors as a lathe call's arguments and lathe's results as
// PyTorch's tensors, without copying a byte either way (issue 29, item 3).
// An argument's memory is borrowed for the call (runtime/storage.h's
// Storage::Borrow): the compiled code reads it in place and writes a mutated
// input in place; two arguments that share a PyTorch storage share one lathe
// storage, so lathe's aliasing checks see what PyTorch sees. A result that
// aliases an argument comes back as a tensor on that argument's PyTorch
// storage; any other result is a tensor on lathe's own block, which the
// PyTorch storage keeps alive (its deleter drops lathe's handle).
//
// Example:
//
//   CallBridge bridge;
//   ASSIGN_OR_RETURN(Operand a, bridge.Argument(THPVariable_Unpack(obj), 0));
//   ... function->Call(args) ...
//   ASSIGN_OR_RETURN(at::Tensor t, bridge.Result(results[0].tensor));

#ifndef LATHE_TOOLS_PYTHON_TORCH_BRIDGE_H_
#define LATHE_TOOLS_PYTHON_TORCH_BRIDGE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "runtime/composite.h"
#include "runtime/dtype.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"

namespace lathe::python {

// ToLathe() / ToTorch()
//
// The dtype on the other side; an error naming a dtype lathe has no
// counterpart for (complex, float8, uint16...).
absl::StatusOr<DType> ToLathe(c10::ScalarType type);
c10::ScalarType ToTorch(DType dtype);

// The arguments and results of one call: the storages it borrowed.
class CallBridge {
 public:
  // Argument()
  //
  // `t` (argument `index`, for errors) as a lathe tensor on its own memory:
  // a strided CPU tensor of a dtype lathe has, without a pending
  // conjugation or negation; else an error naming the argument.
  absl::StatusOr<Operand> Argument(const at::Tensor& t, int index);

  // Result()
  //
  // A result as a PyTorch tensor: a view of the argument storage it
  // aliases, or a tensor on lathe's block, which it keeps alive.
  absl::StatusOr<at::Tensor> Result(const Tensor& t);

 private:
  // Each storage on both sides so far: those the arguments borrowed, then
  // lathe's blocks the results handed to PyTorch (two results on one block
  // share one PyTorch storage).
  absl::InlinedVector<std::pair<c10::Storage, Storage>, 16> storages_;
};

}  // namespace lathe::python

#endif  // LATHE_TOOLS_PYTHON_TORCH_BRIDGE_H_
