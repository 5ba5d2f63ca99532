#include "runtime/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "runtime/file_io.h"
#include "runtime/storage.h"
#include "status_macros.h"

namespace lathe {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int kMaxDims = 64;

absl::Status At(size_t byte, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("byte ", byte, ": ", message));
}

struct DescrInfo {
  absl::string_view descr;
  DType dtype;
};

// Little-endian (or byte-order-free) descrs lathe reads; the first per dtype
// is what it writes.
constexpr DescrInfo kDescrs[] = {
    {"<f2", DType::kFloat16},  {"|V2", DType::kBFloat16},
    {"<V2", DType::kBFloat16}, {"<f4", DType::kFloat32},
    {"<f8", DType::kFloat64},  {"|i1", DType::kInt8},
    {"<i1", DType::kInt8},     {"<i2", DType::kInt16},
    {"<i4", DType::kInt32},    {"<i8", DType::kInt64},
    {"|u1", DType::kUInt8},    {"<u1", DType::kUInt8},
    {"|b1", DType::kBool},     {"<b1", DType::kBool},
};

absl::string_view DescrOf(DType dtype) {
  for (const DescrInfo& d : kDescrs) {
    if (d.dtype == dtype) return d.descr;
  }
  return "?";
}

// A cursor over the header dict with absolute byte offsets.
class HeaderParser {
 public:
  HeaderParser(absl::string_view text, size_t base)
      : text_(text), base_(base) {}

  absl::Status Parse(std::string* descr, bool* fortran,
                     std::vector<int64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    Skip();
    RETURN_IF_ERROR(Expect('{'));
    while (true) {
      Skip();
      if (Peek() == '}') {
        ++pos_;
        break;
      }
      size_t key_at = Offset();
      ASSIGN_OR_RETURN(std::string key, String());
      Skip();
      RETURN_IF_ERROR(Expect(':'));
      Skip();
      if (key == "descr") {
        size_t at = Offset();
        ASSIGN_OR_RETURN(*descr, String());
        descr_at_ = at;
        have_descr = true;
      } else if (key == "fortran_order") {
        ASSIGN_OR_RETURN(*fortran, Bool());
        have_fortran = true;
      } else if (key == "shape") {
        RETURN_IF_ERROR(Shape(shape));
        have_shape = true;
      } else {
        return At(key_at, absl::StrCat("unexpected header key '", key, "'"));
      }
      Skip();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      Skip();
      RETURN_IF_ERROR(Expect('}'));
      break;
    }
    Skip();
    if (pos_ != text_.size()) {
      return At(Offset(), "unexpected text after the header dict");
    }
    if (!have_descr || !have_fortran || !have_shape) {
      return At(base_, absl::StrCat("header lacks ", !have_descr ? "'descr'"
                                                     : !have_fortran
                                                         ? "'fortran_order'"
                                                         : "'shape'"));
    }
    return absl::OkStatus();
  }

  size_t descr_at() const { return descr_at_; }

 private:
  size_t Offset() const { return base_ + pos_; }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void Skip() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  absl::Status Expect(char c) {
    if (Peek() == c) {
      ++pos_;
      return absl::OkStatus();
    }
    return At(Offset(),
              pos_ < text_.size()
                  ? absl::StrCat("expected '", std::string(1, c), "', got '",
                                 std::string(1, Peek()), "'")
                  : absl::StrCat("expected '", std::string(1, c),
                                 "', got the end of the header"));
  }
  absl::StatusOr<std::string> String() {
    char quote = Peek();
    if (quote != '\'' && quote != '"') {
      return At(Offset(), "expected a quoted string");
    }
    size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) ++pos_;
    if (pos_ >= text_.size())
      return At(base_ + start - 1, "unterminated string");
    std::string s(text_.substr(start, pos_ - start));
    ++pos_;
    return s;
  }
  absl::StatusOr<bool> Bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return At(Offset(), "expected True or False for 'fortran_order'");
  }
  absl::Status Shape(std::vector<int64_t>* shape) {
    RETURN_IF_ERROR(Expect('('));
    shape->clear();
    while (true) {
      Skip();
      if (Peek() == ')') {
        ++pos_;
        return absl::OkStatus();
      }
      size_t at = Offset();
      bool negative = false;
      if (Peek() == '-') {
        negative = true;
        ++pos_;
      }
      if (!absl::ascii_isdigit(Peek())) {
        return At(at, "expected a dimension (a non-negative integer)");
      }
      int64_t v = 0;
      while (absl::ascii_isdigit(Peek())) {
        if (v > (INT64_MAX - 9) / 10)
          return At(at, "shape dimension is too large");
        v = v * 10 + (text_[pos_++] - '0');
      }
      if (Peek() == 'L') ++pos_;  // Python 2 longs
      if (negative) {
        return At(at, absl::StrCat("shape dimension -", v, " is negative"));
      }
      if (shape->size() >= kMaxDims) {
        return At(at, absl::StrCat("more than ", kMaxDims, " dimensions"));
      }
      shape->push_back(v);
      Skip();
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != ')') {
        return At(Offset(), "expected ',' or ')' in the shape");
      }
    }
  }

  absl::string_view text_;
  size_t base_;
  size_t pos_ = 0;
  size_t descr_at_ = 0;
};

bool IsFortranContiguous(const Tensor& t) {
  int64_t expected = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] == 0) return true;
    if (t.sizes()[d] != 1 && t.strides()[d] != expected) return false;
    expected *= t.sizes()[d];
  }
  return true;
}

}  // namespace

namespace {

// What a .npy header says: the dtype, the layout and where the data starts.
struct NpyHeader {
  DType dtype;
  bool fortran = false;
  std::vector<int64_t> shape;
  std::string descr;
  size_t data_start = 0;
  // numel * itemsize; `overflow` when that exceeds 2^64 - 1.
  uint64_t data_bytes = 0;
  bool overflow = false;
};

// The longest header lathe reads (NumPy writes 128 bytes or a little more;
// its own reader refuses headers over 10000 bytes by default).
constexpr size_t kMaxHeaderBytes = 1 << 16;

// The fixed prefix before the header dict (magic, version, header length):
// 10 bytes in version 1, 12 in 2 and 3; `bytes` holds a checked prefix.
size_t PrefixSize(absl::string_view bytes) {
  return static_cast<uint8_t>(bytes[6]) == 1 ? 10 : 12;
}

// The bytes of the fixed prefix and header: 10 for version 1, 12 for 2 and
// 3, then the header length. `prefix` holds at least the first 12 bytes or
// the whole file if shorter.
absl::StatusOr<size_t> HeaderEnd(absl::string_view prefix) {
  if (prefix.size() >= 6 &&
      prefix.substr(0, 6) != absl::string_view(kMagic, 6)) {
    return At(0, "not a .npy file (missing the \\x93NUMPY magic)");
  }
  if (prefix.size() < 10) {
    return At(0, absl::StrCat("file of ", prefix.size(),
                              " bytes is too short for a .npy header"));
  }
  uint8_t major = static_cast<uint8_t>(prefix[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<uint8_t>(prefix[8]) |
                 (static_cast<size_t>(static_cast<uint8_t>(prefix[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (prefix.size() < 12) return At(8, "truncated header length");
    header_len = 0;
    for (int k = 0; k < 4; ++k) {
      header_len |= static_cast<size_t>(static_cast<uint8_t>(prefix[8 + k]))
                    << (8 * k);
    }
    header_start = 12;
  } else {
    return At(6,
              absl::StrCat("unsupported .npy version ", major, ".",
                           static_cast<int>(static_cast<uint8_t>(prefix[7]))));
  }
  if (header_len > kMaxHeaderBytes) {
    return At(
        8, absl::StrCat("header length ", header_len, " is over the limit of ",
                        kMaxHeaderBytes, " bytes"));
  }
  return header_start + header_len;
}

// Parses the header of `bytes`, which holds at least HeaderEnd() bytes.
absl::StatusOr<NpyHeader> ParseHeader(absl::string_view bytes,
                                      size_t header_end) {
  size_t header_start = PrefixSize(bytes);
  absl::string_view header =
      bytes.substr(header_start, header_end - header_start);
  NpyHeader h;
  HeaderParser parser(header, header_start);
  RETURN_IF_ERROR(parser.Parse(&h.descr, &h.fortran, &h.shape));
  std::optional<DType> dtype;
  for (const DescrInfo& d : kDescrs) {
    if (h.descr == d.descr) dtype = d.dtype;
  }
  if (!dtype) {
    const std::string& descr = h.descr;
    if (!descr.empty() && descr[0] == '>' && descr.size() > 2 &&
        descr.substr(2) != "1") {
      return At(parser.descr_at(), absl::StrCat("big-endian data ('", descr,
                                                "') is not supported; save it "
                                                "little-endian"));
    }
    return At(parser.descr_at(),
              absl::StrCat("unsupported dtype '", descr,
                           "' (expected one of <f2, |V2 (bf16), <f4, <f8, |i1, "
                           "<i2, <i4, <i8, |u1, |b1)"));
  }
  h.dtype = *dtype;
  h.data_start = header_end;
  // numel * itemsize, checked against the bytes present before allocating.
  uint64_t needed = ItemSize(h.dtype);
  bool overflow = false;
  for (int64_t d : h.shape) {
    overflow |=
        __builtin_mul_overflow(needed, static_cast<uint64_t>(d), &needed);
  }
  bool empty = false;
  for (int64_t d : h.shape) empty |= d == 0;
  if (empty) {
    needed = 0;
    overflow = false;
  }
  h.data_bytes = needed;
  h.overflow = overflow;
  return h;
}

// The error for `available` data bytes where `h` needs another count.
absl::Status DataSizeMismatch(const NpyHeader& h, absl::string_view available) {
  return At(
      h.data_start,
      absl::StrCat("data has ", available, " bytes but shape (",
                   absl::StrJoin(h.shape, ", "), ") of ", h.descr, " needs ",
                   h.overflow ? "more than 18446744073709551615"
                              : absl::StrCat(h.data_bytes),
                   " bytes"));
}

// The tensor `h` describes over `storage` (its data, already in place);
// checks bool values.
absl::StatusOr<Tensor> Finish(const NpyHeader& h, Storage storage) {
  std::vector<int64_t> strides;
  if (h.fortran) {
    int64_t acc = 1;
    for (int64_t d : h.shape) {
      strides.push_back(acc);
      acc *= std::max<int64_t>(d, 1);
    }
  } else {
    strides = ContiguousStrides(h.shape);
  }
  if (h.dtype == DType::kBool) {
    const uint8_t* p = static_cast<const uint8_t*>(storage.data());
    for (uint64_t k = 0; k < h.data_bytes; ++k) {
      if (p[k] > 1) {
        return At(h.data_start + k,
                  absl::StrCat("bool value ", static_cast<int>(p[k]),
                               " is not 0 or 1"));
      }
    }
  }
  return Tensor::Wrap(std::move(storage), h.dtype, h.shape, strides, 0);
}

}  // namespace

absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes) {
  ASSIGN_OR_RETURN(size_t header_end, HeaderEnd(bytes.substr(0, 12)));
  if (header_end > bytes.size()) {
    return At(8, absl::StrCat("header length ", header_end - PrefixSize(bytes),
                              " runs past the end of the ", bytes.size(),
                              "-byte file"));
  }
  ASSIGN_OR_RETURN(NpyHeader h, ParseHeader(bytes, header_end));
  uint64_t available = bytes.size() - h.data_start;
  if (h.overflow || h.data_bytes != available) {
    return DataSizeMismatch(h, absl::StrCat(available));
  }
  ASSIGN_OR_RETURN(Storage storage, Storage::Allocate(available));
  std::memcpy(storage.data(), bytes.data() + h.data_start, available);
  return Finish(h, std::move(storage));
}

namespace {

// The header of `t`'s .npy (magic, version, dict, padding), and whether its
// data is in Fortran order.
absl::StatusOr<std::string> EncodeHeader(const Tensor& t, bool* fortran_out) {
  if (!t.defined())
    return absl::InvalidArgumentError("cannot save an undefined tensor");
  if (!t.device().is_cpu()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot save a tensor on ",
                                                   t.device().ToString(),
                                                   " (copy it to cpu)"));
  }
  bool fortran = !t.is_contiguous() && IsFortranContiguous(t);
  std::string shape = absl::StrJoin(t.sizes(), ", ");
  if (t.dim() == 1) shape += ",";
  std::string dict =
      absl::StrCat("{'descr': '", DescrOf(t.dtype()),
                   "', 'fortran_order': ", fortran ? "True" : "False",
                   ", 'shape': (", shape, "), }");
  // Pad so the data starts on a 64-byte boundary; the header ends in '\n'.
  size_t unpadded = 10 + dict.size() + 1;
  size_t total = (unpadded + 63) / 64 * 64;
  bool v2 = total - 10 > 65535;
  if (v2) total = (12 + dict.size() + 1 + 63) / 64 * 64;
  size_t header_len = total - (v2 ? 12 : 10);
  std::string out(kMagic, 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (int k = 0; k < (v2 ? 4 : 2); ++k) {
    out += static_cast<char>((header_len >> (8 * k)) & 0xff);
  }
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';
  *fortran_out = fortran;
  return out;
}

// t's bytes as one block when its elements are already in the order the
// .npy holds them (C- or Fortran-contiguous, from the storage offset).
std::optional<absl::string_view> DenseBytes(const Tensor& t, bool fortran) {
  if (!t.is_contiguous() && !fortran) return std::nullopt;
  const char* base = static_cast<const char*>(t.storage().data());
  return absl::string_view(base + t.storage_offset() * t.itemsize(),
                           static_cast<size_t>(t.numel() * t.itemsize()));
}

}  // namespace

absl::StatusOr<NpyParts> EncodeNpyParts(const Tensor& t) {
  NpyParts parts;
  bool fortran = false;
  ASSIGN_OR_RETURN(parts.header, EncodeHeader(t, &fortran));
  if (std::optional<absl::string_view> dense = DenseBytes(t, fortran)) {
    parts.dense = *dense;
    parts.is_dense = true;
    return parts;
  }
  // Neither order in memory: the elements in C order.
  const int64_t item = t.itemsize();
  const char* base = static_cast<const char*>(t.storage().data());
  parts.copy.resize(t.numel() * item);
  char* dst = parts.copy.data();
  ForEachIndex(t.sizes(), [&](absl::Span<const int64_t> index) {
    std::memcpy(dst, base + t.ElementOffset(index) * item, item);
    dst += item;
  });
  return parts;
}

absl::StatusOr<std::string> EncodeNpy(const Tensor& t) {
  ASSIGN_OR_RETURN(NpyParts parts, EncodeNpyParts(t));
  absl::string_view data = parts.data();
  return absl::StrCat(parts.header, data);
}

namespace {

// Reads up to `n` bytes of `fd` into `dst`; the count read (less at the end
// of the file).
absl::StatusOr<uint64_t> ReadUpTo(int fd, const std::string& path, char* dst,
                                  uint64_t n) {
  uint64_t got = 0;
  while (got < n) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n - got, 1 << 20));
    ssize_t r = ::read(fd, dst + got, chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      return absl::InternalError(
          absl::StrCat(path, ": read failed: ", std::strerror(errno)));
    }
    if (r == 0) break;
    got += static_cast<uint64_t>(r);
  }
  return got;
}

// Reads the .npy file open at `fd`: the prefix, then the header, then
// exactly the data the header describes; nothing past what a valid file of
// that header holds is read, and the data goes straight into the tensor.
absl::StatusOr<Tensor> ReadNpyFd(int fd, const std::string& path,
                                 int64_t max_bytes) {
  std::string head(12, '\0');
  ASSIGN_OR_RETURN(uint64_t got, ReadUpTo(fd, path, head.data(), 12));
  head.resize(got);
  ASSIGN_OR_RETURN(size_t header_end, HeaderEnd(head));
  if (header_end > head.size()) {
    size_t had = head.size();
    head.resize(header_end);
    ASSIGN_OR_RETURN(got,
                     ReadUpTo(fd, path, head.data() + had, header_end - had));
    if (had + got < header_end) {
      return At(8, absl::StrCat("header length ", header_end - PrefixSize(head),
                                " runs past the end of the ", had + got,
                                "-byte file"));
    }
  }
  ASSIGN_OR_RETURN(NpyHeader h, ParseHeader(head, header_end));
  if (h.overflow || h.data_bytes > static_cast<uint64_t>(max_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "shape (", absl::StrJoin(h.shape, ", "), ") of ", h.descr, " needs ",
        h.overflow ? "more than 18446744073709551615"
                   : absl::StrCat(h.data_bytes),
        " bytes, over the limit of ", max_bytes, " bytes"));
  }
  ASSIGN_OR_RETURN(Storage storage, Storage::AllocateUninitialized(
                                        static_cast<int64_t>(h.data_bytes)));
  ASSIGN_OR_RETURN(got, ReadUpTo(fd, path, static_cast<char*>(storage.data()),
                                 h.data_bytes));
  if (got < h.data_bytes) return DataSizeMismatch(h, absl::StrCat(got));
  char extra;
  ASSIGN_OR_RETURN(got, ReadUpTo(fd, path, &extra, 1));
  if (got != 0) {
    return DataSizeMismatch(h, absl::StrCat("more than ", h.data_bytes));
  }
  return Finish(h, std::move(storage));
}

}  // namespace

absl::StatusOr<Tensor> ReadNpy(const std::string& path, int64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  absl::StatusOr<Tensor> t;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    t = absl::InvalidArgumentError("is a directory, not a file");
  } else {
    t = ReadNpyFd(fd, path, max_bytes);
  }
  ::close(fd);
  if (!t.ok() && !absl::StartsWith(t.status().message(), path + ": ")) {
    return absl::Status(t.status().code(),
                        absl::StrCat(path, ": ", t.status().message()));
  }
  return t;
}

absl::Status WriteNpy(const std::string& path, const Tensor& t) {
  // A dense tensor's bytes go to the file as they are, not copied first.
  ASSIGN_OR_RETURN(NpyParts parts, EncodeNpyParts(t));
  absl::string_view pieces[] = {parts.header, parts.data()};
  return WriteFileAtomic(path, pieces);
}

}  // namespace lathe
