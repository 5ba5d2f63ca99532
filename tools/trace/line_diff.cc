#include "tools/trace/line_diff.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"

namespace lathe::trace {
namespace {

std::vector<absl::string_view> Lines(absl::string_view text) {
  if (text.empty()) return {};
  if (text.back() == '\n') text.remove_suffix(1);
  return absl::StrSplit(text, '\n');
}

}  // namespace

std::vector<DiffLine> DiffLines(absl::string_view before,
                                absl::string_view after, int max_edits) {
  const std::vector<absl::string_view> a = Lines(before), b = Lines(after);
  // The common head and tail need no search.
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  const int n = static_cast<int>(a.size() - head - tail);
  const int m = static_cast<int>(b.size() - head - tail);
  auto A = [&](int i) { return a[head + i]; };
  auto B = [&](int j) { return b[head + j]; };

  // Myers: v[k] is the furthest x reached on diagonal k = x - y; `history`
  // keeps v after each d (diagonals -d..d, at index k + d) to walk back.
  std::vector<DiffLine> middle;  // built backwards
  std::vector<std::vector<int>> history;
  int found = -1;
  const int limit = std::min(n + m, max_edits);
  std::vector<int> v(2 * (n + m) + 3, 0);
  const int offset = n + m + 1;
  for (int d = 0; d <= limit && found < 0; ++d) {
    for (int k = -d; k <= d; k += 2) {
      int x = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                  ? v[offset + k + 1]
                  : v[offset + k - 1] + 1;
      int y = x - k;
      while (x < n && y < m && A(x) == B(y)) ++x, ++y;
      v[offset + k] = x;
      if (x >= n && y >= m) found = d;
    }
    history.emplace_back(v.begin() + offset - d, v.begin() + offset + d + 1);
  }
  if (found < 0) {
    for (int i = 0; i < n; ++i) {
      middle.push_back({DiffLine::Op::kRemoved, std::string(A(i))});
    }
    for (int j = 0; j < m; ++j) {
      middle.push_back({DiffLine::Op::kAdded, std::string(B(j))});
    }
  } else {
    int x = n, y = m;
    for (int d = found; d > 0; --d) {
      const std::vector<int>& prev = history[d - 1];  // diagonals 1-d..d-1
      auto at = [&](int k) { return prev[k + d - 1]; };
      int k = x - y;
      bool down = k == -d || (k != d && at(k - 1) < at(k + 1));
      int prev_k = down ? k + 1 : k - 1;
      int prev_x = at(prev_k), prev_y = prev_x - prev_k;
      int mid_x = down ? prev_x : prev_x + 1;
      while (x > mid_x) {
        --x, --y;
        middle.push_back({DiffLine::Op::kSame, std::string(A(x))});
      }
      if (down) {
        middle.push_back({DiffLine::Op::kAdded, std::string(B(prev_y))});
      } else {
        middle.push_back({DiffLine::Op::kRemoved, std::string(A(prev_x))});
      }
      x = prev_x, y = prev_y;
    }
    while (x > 0) {
      --x, --y;
      middle.push_back({DiffLine::Op::kSame, std::string(A(x))});
    }
    std::reverse(middle.begin(), middle.end());
  }
  std::vector<DiffLine> out;
  out.reserve(head + middle.size() + tail);
  for (size_t i = 0; i < head; ++i) {
    out.push_back({DiffLine::Op::kSame, std::string(a[i])});
  }
  for (DiffLine& d : middle) out.push_back(std::move(d));
  for (size_t i = a.size() - tail; i < a.size(); ++i) {
    out.push_back({DiffLine::Op::kSame, std::string(a[i])});
  }
  return out;
}

}  // namespace lathe::trace
