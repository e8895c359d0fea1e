// StringTable: interns names (kernel, API, op) so every event stores a 4-byte id.
//
// Ids are dense, start at 0 and stay valid for the table's lifetime; views returned by Get()
// stay valid as long as the table lives (strings are stored in a deque, never moved).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace latdoc::trace {

using NameId = uint32_t;

class StringTable {
 public:
  StringTable() = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  // Returns the id of `s`, adding it on first sight. A name that is not well-formed UTF-8 is
  // stored with U+FFFD in place of each bad byte (Get() always returns UTF-8).
  NameId Intern(std::string_view s);
  // REQUIRES: id < size().
  std::string_view Get(NameId id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;
  std::deque<std::string> raw_keys_;  // the input bytes of names stored repaired
  std::unordered_map<std::string_view, NameId> ids_;
};

}  // namespace latdoc::trace
