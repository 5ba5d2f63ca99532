#include "tools/python/torch_bridge.h"

#include <c10/core/TensorImpl.h>

#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "status_macros.h"

namespace lathe::python {

namespace {

// PyTorch's dtypes lathe has, each beside lathe's.
constexpr std::pair<c10::ScalarType, DType> kDTypes[] = {
    {c10::ScalarType::Half, DType::kFloat16},
    {c10::ScalarType::BFloat16, DType::kBFloat16},
    {c10::ScalarType::Float, DType::kFloat32},
    {c10::ScalarType::Double, DType::kFloat64},
    {c10::ScalarType::Char, DType::kInt8},
    {c10::ScalarType::Short, DType::kInt16},
    {c10::ScalarType::Int, DType::kInt32},
    {c10::ScalarType::Long, DType::kInt64},
    {c10::ScalarType::Byte, DType::kUInt8},
    {c10::ScalarType::Bool, DType::kBool},
};

}  // namespace

absl::StatusOr<DType> ToLathe(c10::ScalarType type) {
  for (const auto& [torch, mine] : kDTypes) {
    if (torch == type) return mine;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("lathe has no dtype for torch.", c10::toString(type),
                   " (it has float16, bfloat16, float32, float64, int8, "
                   "int16, int32, int64, uint8 and bool)"));
}

c10::ScalarType ToTorch(DType dtype) {
  for (const auto& [torch, mine] : kDTypes) {
    if (mine == dtype) return torch;
  }
  return c10::ScalarType::Undefined;
}

namespace {

absl::Span<const int64_t> Span(c10::IntArrayRef a) {
  return absl::MakeConstSpan(a.data(), a.size());
}

// A PyTorch tensor of `dtype` laid out as `t` over `storage`.
at::Tensor OnStorage(c10::Storage storage, const Tensor& t) {
  at::Tensor out = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
      caffe2::TypeMeta::fromScalarType(ToTorch(t.dtype())));
  out.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(),
                                                   t.storage_offset());
  return out;
}

void DropStorage(void* context) { delete static_cast<Storage*>(context); }

}  // namespace

const Storage* BorrowCache::Get(void* data, int64_t nbytes) {
  for (size_t k = 0; k < used_; ++k) {
    const Entry& e = entries_[k];
    if (e.data == data && e.nbytes == nbytes) return &e.storage;
  }
  if (used_ == entries_.size()) return nullptr;
  Entry& e = entries_[used_++];
  e = {data, nbytes, Storage::Borrow(data, nbytes, Device::Cpu())};
  return &e.storage;
}

absl::StatusOr<std::pair<DType, const Storage*>> CallBridge::Borrow(
    const at::Tensor& t, int index) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument ", index, ": ", what));
  };
  if (!t.defined()) return bad("an undefined tensor");
  if (t.layout() != c10::kStrided) {
    std::ostringstream layout;
    layout << t.layout();
    return bad(absl::StrCat("a ", layout.str(),
                            " tensor; lathe takes strided tensors"));
  }
  if (!t.device().is_cpu()) {
    return bad(absl::StrCat("a tensor on ", t.device().str(),
                            "; lathe's Python calls take cpu tensors"));
  }
  if (t.is_conj() || t.is_neg()) {
    return bad("a tensor with a pending conjugation or negation bit");
  }
  absl::StatusOr<DType> dtype = ToLathe(t.scalar_type());
  if (!dtype.ok()) return bad(dtype.status().message());
  const c10::Storage& ts = t.storage();
  for (const Borrowed& b : borrowed_) {
    if (b.torch.unsafeGetStorageImpl() == ts.unsafeGetStorageImpl()) {
      return std::make_pair(*dtype, b.mine);
    }
  }
  // A fake or meta tensor says "cpu" but has no memory there.
  if (ts.device_type() != c10::DeviceType::CPU) {
    return bad(absl::StrCat("a tensor whose storage is on ", ts.device().str(),
                            ", not in memory"));
  }
  // mutable_data(): a copy-on-write storage is materialized before the
  // compiled code may write it.
  void* data = ts.nbytes() == 0 ? nullptr : ts.mutable_data();
  if (data == nullptr && ts.nbytes() != 0) {
    return bad("a tensor whose storage has no memory");
  }
  // The cache's, except for empty storages (several may be at null).
  const int64_t nbytes = static_cast<int64_t>(ts.nbytes());
  const Storage* mine =
      cache_ != nullptr && nbytes > 0 ? cache_->Get(data, nbytes) : nullptr;
  if (mine == nullptr) {
    owned_.push_back(Storage::Borrow(data, nbytes, Device::Cpu()));
    mine = &owned_.back();
  }
  borrowed_.push_back({ts, mine});
  return std::make_pair(*dtype, mine);
}

absl::StatusOr<Operand> CallBridge::Argument(const at::Tensor& t, int index) {
  ASSIGN_OR_RETURN(auto borrowed, Borrow(t, index));
  absl::StatusOr<Tensor> wrapped =
      Tensor::Wrap(*borrowed.second, borrowed.first, Span(t.sizes()),
                   Span(t.strides()), t.storage_offset());
  if (!wrapped.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("argument ", index, ": ", wrapped.status().message()));
  }
  return Operand::Of(*std::move(wrapped));
}

bool CallBridge::View(const at::Tensor& t, LatheValue* out) {
  absl::StatusOr<std::pair<DType, const Storage*>> borrowed = Borrow(t, 0);
  if (!borrowed.ok()) return false;
  const Storage& s = *borrowed->second;
  const c10::IntArrayRef sizes = t.sizes(), strides = t.strides();
  if (!Tensor::CheckView(s, borrowed->first, Span(sizes), Span(strides),
                         t.storage_offset())
           .ok()) {
    return false;
  }
  *out = LatheValue{};
  out->kind = LATHE_VALUE_TENSOR;
  out->dtype = static_cast<int32_t>(borrowed->first);
  out->ndim = static_cast<int64_t>(sizes.size());
  out->sizes = const_cast<int64_t*>(sizes.data());
  out->strides = const_cast<int64_t*>(strides.data());
  out->storage_offset = t.storage_offset();
  out->data = s.data();
  out->storage = const_cast<Storage*>(&s);
  return true;
}

absl::StatusOr<at::Tensor> CallBridge::Result(const Tensor& t) {
  if (!t.defined()) {
    return absl::InternalError("a result tensor without storage");
  }
  if (t.device().type != Device::Type::kCpu) {
    return absl::UnimplementedError(
        absl::StrCat("a result on ", t.device().ToString(),
                     "; lathe's Python calls return cpu tensors"));
  }
  for (const Borrowed& b : borrowed_) {
    if (*b.mine == t.storage()) return OnStorage(b.torch, t);
  }
  for (const auto& [torch, mine] : made_) {
    if (mine == t.storage()) return OnStorage(torch, t);
  }
  if (t.storage().is_borrowed()) {
    return absl::InternalError(
        "a result on memory lathe borrowed from something other than this "
        "call's arguments");
  }
  const Storage& s = t.storage();
  auto* keep = new Storage(s);
  c10::Storage torch(c10::Storage::use_byte_size_t(),
                     static_cast<size_t>(s.nbytes()),
                     c10::DataPtr(s.data(), keep, &DropStorage,
                                  c10::Device(c10::DeviceType::CPU)),
                     /*allocator=*/nullptr, /*resizable=*/false);
  made_.emplace_back(torch, s);
  return OnStorage(std::move(torch), t);
}

}  // namespace lathe::python
