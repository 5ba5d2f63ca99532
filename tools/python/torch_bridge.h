// -----------------------------------------------------------------------------
// File: torch_bridge.h
// -----------------------------------------------------------------------------
//
// PyTorch's tensors as a lathe call's arguments and lathe's results as
// PyTorch's tensors, without copying a byte either way (issue 29, item 3):
// as Operands (Argument), or, for a call a compiled variant admits already,
// as LatheValues over PyTorch's own size and stride arrays (View, for
// CompiledFunction::CallViews), their borrowed storages kept from call to
// call (BorrowCache).
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
//   CallBridge bridge(&cache);
//   LatheValue v;
//   if (bridge.View(THPVariable_Unpack(obj), &v)) ... function->CallViews ...
//   ASSIGN_OR_RETURN(Operand a, bridge.Argument(THPVariable_Unpack(obj), 0));
//   ... function->Call(args) ...
//   ASSIGN_OR_RETURN(at::Tensor t, bridge.Result(results[0].tensor));

#ifndef LATHE_TOOLS_PYTHON_TORCH_BRIDGE_H_
#define LATHE_TOOLS_PYTHON_TORCH_BRIDGE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

#include <array>
#include <cstdint>
#include <list>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "runtime/composite.h"
#include "runtime/dtype.h"
#include "runtime/kernel_abi.h"
#include "runtime/storage.h"
#include "runtime/tensor.h"

namespace lathe::python {

// ToLathe() / ToTorch()
//
// The dtype on the other side; an error naming a dtype lathe has no
// counterpart for (complex, float8, uint16...).
absl::StatusOr<DType> ToLathe(c10::ScalarType type);
c10::ScalarType ToTorch(DType dtype);

// Borrowed storages kept from one call of a function to the next, so that
// a call on the memory of an earlier one allocates nothing (a borrowed
// storage is its address and size, nothing more). Entries are made once and
// never replaced, so a call may point at them while another thread's call
// looks up its own. Used under the GIL.
class BorrowCache {
 public:
  // The borrowed storage over `nbytes` (> 0) at `data`, found or made; null
  // once the cache is full of others.
  const Storage* Get(void* data, int64_t nbytes);

 private:
  struct Entry {
    void* data = nullptr;
    int64_t nbytes = 0;
    Storage storage;
  };
  std::array<Entry, 64> entries_;
  size_t used_ = 0;
};

// The arguments and results of one call: the storages it borrowed.
class CallBridge {
 public:
  // Borrows through `cache` (none: a storage per argument and call).
  explicit CallBridge(BorrowCache* cache = nullptr) : cache_(cache) {}

  // Argument()
  //
  // `t` (argument `index`, for errors) as a lathe tensor on its own memory:
  // a strided CPU tensor of a dtype lathe has, without a pending
  // conjugation or negation; else an error naming the argument.
  absl::StatusOr<Operand> Argument(const at::Tensor& t, int index);

  // View()
  //
  // `t` as a LatheValue on its own memory and its own size and stride
  // arrays (no lathe::Tensor: CompiledFunction::CallViews), for a tensor
  // Argument takes; false for one it refuses (Argument says why). The view
  // points into `t`, this bridge and its cache: it is good while all three
  // are.
  bool View(const at::Tensor& t, LatheValue* out);

  // Result()
  //
  // A result as a PyTorch tensor: a view of the argument storage it
  // aliases, or a tensor on lathe's block, which it keeps alive.
  absl::StatusOr<at::Tensor> Result(const Tensor& t);

 private:
  // The storages the arguments borrowed, each beside its PyTorch storage
  // (which the arguments keep alive for the call); those not in the cache;
  // lathe's blocks the results handed to PyTorch (two results on one block
  // share one PyTorch storage).
  struct Borrowed {
    c10::Storage torch;  // held for the call (another thread may set_)
    const Storage* mine;
  };
  absl::InlinedVector<Borrowed, 16> borrowed_;
  std::list<Storage> owned_;  // stable addresses, nothing allocated empty
  absl::InlinedVector<std::pair<c10::Storage, Storage>, 4> made_;
  BorrowCache* cache_;

  // `t`'s dtype and the storage it borrows (found or added), for a tensor
  // Argument takes; else the error naming argument `index`.
  absl::StatusOr<std::pair<DType, const Storage*>> Borrow(const at::Tensor& t,
                                                          int index);
};

}  // namespace lathe::python

#endif  // LATHE_TOOLS_PYTHON_TORCH_BRIDGE_H_
