// JsonValueScan: finds where one JSON value ends, in input that arrives in slices, by its
// brackets and strings alone (whoever parses the value checks the rest). Shared by the Chrome
// trace scanner (kineto/json_event_scanner.h) and the path walker (json_walker.h).
#pragma once

#include <array>
#include <cstddef>

namespace latdoc::trace {

inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

namespace json_value_scan_internal {
// Bytes that change a value scan's state; everything else is skipped in a tight loop.
constexpr std::array<bool, 256> MakeSpecial() {
  std::array<bool, 256> t{};
  t['"'] = t['\\'] = t['{'] = t['}'] = t['['] = t[']'] = true;
  return t;
}
inline constexpr std::array<bool, 256> kSpecial = MakeSpecial();
}  // namespace json_value_scan_internal

class JsonValueScan {
 public:
  // Starts a value at its first byte `c` and returns how many bytes that took: 1 for a
  // bracket or a quote, 0 for a scalar (read from `c` on).
  size_t Begin(char c) {
    depth_ = 0;
    escape_ = false;
    in_string_ = c == '"';
    scalar_ = !in_string_ && c != '{' && c != '[';
    if (scalar_) return 0;
    depth_ = in_string_ ? 0 : 1;
    return 1;
  }

  // Scans b[*pos, n). True when the value ended: *end (and *pos) is one past its last byte,
  // or for a scalar the delimiter after it. False: all of it was read, the value goes on.
  bool Scan(const char* b, size_t n, size_t* pos, size_t* end) {
    size_t p = *pos;
    if (scalar_) {
      while (p < n && b[p] != ',' && b[p] != '}' && b[p] != ']' && !IsJsonSpace(b[p])) ++p;
      *pos = p;
      if (p == n) return false;
      *end = p;
      return true;
    }
    while (p < n) {
      if (in_string_) {
        if (escape_) {
          escape_ = false;
          ++p;
          continue;
        }
        while (p < n && b[p] != '"' && b[p] != '\\') ++p;
        if (p >= n) break;
        if (b[p] == '\\') {
          escape_ = true;
        } else {
          in_string_ = false;
          if (depth_ == 0) {
            *end = *pos = p + 1;
            return true;
          }
        }
        ++p;
        continue;
      }
      while (p < n && !json_value_scan_internal::kSpecial[static_cast<unsigned char>(b[p])]) ++p;
      if (p >= n) break;
      switch (b[p]) {
        case '"': in_string_ = true; break;
        case '{':
        case '[': ++depth_; break;
        case '}':
        case ']':
          if (--depth_ == 0) {
            *end = *pos = p + 1;
            return true;
          }
          break;
        default: break;  // a backslash outside a string: left to the value's parser
      }
      ++p;
    }
    *pos = p;
    return false;
  }

  bool scalar() const { return scalar_; }

 private:
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool scalar_ = false;
};

}  // namespace latdoc::trace
