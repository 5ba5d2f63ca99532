// -----------------------------------------------------------------------------
// File: device.h
// -----------------------------------------------------------------------------
//
// Where a tensor's storage lives: the host ("cpu") or a CUDA device
// ("cuda:N"), spelled as PyTorch spells them.
//
// Example:
//
//   ASSIGN_OR_RETURN(Device d, Device::Parse("cuda:1"));
//   d.ToString();  // "cuda:1"

#ifndef LATHE_RUNTIME_DEVICE_H_
#define LATHE_RUNTIME_DEVICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace lathe {

struct Device {
  enum class Type : uint8_t { kCpu, kCuda };
  Type type = Type::kCpu;
  int index = 0;  // the CUDA ordinal; 0 for cpu

  static Device Cpu() { return Device{}; }
  static Device Cuda(int index) { return Device{Type::kCuda, index}; }

  bool is_cpu() const { return type == Type::kCpu; }
  bool is_cuda() const { return type == Type::kCuda; }

  // "cpu" or "cuda:N".
  std::string ToString() const;

  // Parse()
  //
  // "cpu", "cuda" (cuda:0) or "cuda:N".
  static absl::StatusOr<Device> Parse(absl::string_view text);

  friend bool operator==(const Device& a, const Device& b) {
    return a.type == b.type && a.index == b.index;
  }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};

}  // namespace lathe

#endif  // LATHE_RUNTIME_DEVICE_H_
