// Text helpers shared by the LineParser's files (internal to src/logs: line_parser.cc reads a
// line's prefixes, line_parser_vllm.cc, line_parser_llama_cpp.cc and line_parser_servers.cc
// each server's dialect). Inline: they run on every byte of a log.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "logs/line_parser.h"

namespace latdoc::logs::line_parser_internal {

inline constexpr int64_t kNsPerSec = 1000 * 1000 * 1000;

inline bool Consume(std::string_view& s, std::string_view prefix) {
  if (s.size() < prefix.size() || std::memcmp(s.data(), prefix.data(), prefix.size()) != 0)
    return false;
  s.remove_prefix(prefix.size());
  return true;
}

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '_' || c == '.';
}

// Reads exactly `n` digits at s[pos...]; -1 if any is not a digit.
inline int Digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (!IsDigit(c)) return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Reads one or more digits at the front of `s` and removes them.
template <typename T>
inline bool TakeInt(std::string_view& s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || p == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(p - s.data()));
  return true;
}

// "HH:MM:SS" at s[pos]; ns since midnight, or -1.
inline int64_t ClockNs(std::string_view s, size_t pos) {
  int h = Digits(s, pos, 2), m = Digits(s, pos + 3, 2), sec = Digits(s, pos + 6, 2);
  if (h < 0 || m < 0 || sec < 0 || s[pos + 2] != ':' || s[pos + 5] != ':') return -1;
  if (h > 23 || m > 59 || sec > 60) return -1;
  return (int64_t{h} * 3600 + m * 60 + sec) * kNsPerSec;
}

// The level word at the front of `s`, removed on a match. Python logging level names.
inline Level TakeLevelWord(std::string_view& s) {
  if (s.empty()) return Level::kNone;
  switch (s[0]) {
    case 'I': return Consume(s, "INFO") ? Level::kInfo : Level::kNone;
    case 'W':
      if (Consume(s, "WARNING")) return Level::kWarning;
      return Consume(s, "WARN") ? Level::kWarning : Level::kNone;
    case 'E': return Consume(s, "ERROR") ? Level::kError : Level::kNone;
    case 'D': return Consume(s, "DEBUG") ? Level::kDebug : Level::kNone;
    case 'C': return Consume(s, "CRITICAL") ? Level::kCritical : Level::kNone;
    case 'T': return Consume(s, "TRACE") ? Level::kDebug : Level::kNone;
    default: return Level::kNone;
  }
}

// Python's last traceback line: "RuntimeError: CUDA error: out of memory", "torch.OutOfMemoryError"
inline bool LooksLikeException(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsIdentChar(s[i])) ++i;
  if (i == 0 || (i < s.size() && s[i] != ':')) return false;
  std::string_view name = s.substr(0, i);
  for (std::string_view suffix : {"Error", "Exception", "Interrupt", "Exit"}) {
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      return true;
  }
  return false;
}

// "X ms / N tokens" after "prompt eval time = " (llama.cpp print_timings, padded with blanks).
inline bool ParseLlamaTiming(std::string_view s, double* ms, int64_t* tokens) {
  while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *ms);
  if (ec != std::errc()) return false;
  s.remove_prefix(static_cast<size_t>(p - s.data()));
  if (!Consume(s, " ms /")) return false;
  while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
  return TakeInt(s, tokens);
}

}  // namespace latdoc::logs::line_parser_internal
