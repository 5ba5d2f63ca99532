#include "runtime/device.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace lathe {

std::string Device::ToString() const {
  if (is_cpu()) return "cpu";
  return absl::StrCat("cuda:", index);
}

absl::StatusOr<Device> Device::Parse(absl::string_view text) {
  if (text == "cpu") return Cpu();
  if (text == "cuda") return Cuda(0);
  if (absl::StartsWith(text, "cuda:")) {
    int index;
    absl::string_view number = text.substr(5);
    if (absl::SimpleAtoi(number, &index) && index >= 0 && index < 1024 &&
        !number.empty() && number[0] != '+' && number[0] != '-') {
      return Cuda(index);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown device '", text, "' (expected cpu, cuda or cuda:N)"));
}

}  // namespace lathe
