#include "logs/line_parser.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/core.h>

#include "logs/line_parser_internal.h"

namespace latdoc::logs {
using namespace line_parser_internal;  // the text helpers all four parser files share

namespace {

constexpr int kDaysBefore[13] = {0, 0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335};
constexpr int kDaysIn[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

// Removes ANSI CSI sequences (ESC '[' parameters final-byte) from `line` into `out`.
//   "\x1b[32mINFO\x1b[0m 06-25 21:51:52 ..." -> "INFO 06-25 21:51:52 ..."
void StripAnsi(std::string_view line, std::string* out) {
  out->clear();
  size_t i = 0;
  while (i < line.size()) {
    const void* p = std::memchr(line.data() + i, '\x1b', line.size() - i);
    size_t esc = p ? static_cast<size_t>(static_cast<const char*>(p) - line.data()) : line.size();
    out->append(line.data() + i, esc - i);
    if (esc == line.size()) break;
    i = esc + 1;
    if (i < line.size() && line[i] == '[') {
      ++i;
      while (i < line.size() && (IsDigit(line[i]) || line[i] == ';' || line[i] == '?')) ++i;
      if (i < line.size() && line[i] >= 0x40 && line[i] <= 0x7e) ++i;
    }
  }
}

int MonthFromAbbrev(std::string_view s) {
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i) {
    if (s.substr(0, 3) == kMonths[i]) return i + 1;
  }
  return 0;
}

// journalctl short format: "Nov 30 00:36:54 gpu-host-1 vllm[812]: <message>"
//                          "Nov  3 00:36:54 gpu-host-1 python3: <message>"
// and short-precise:       "Nov 30 00:36:54.123456 gpu-host-1 vllm[812]: <message>"
// On a match, removes the wrapper from `s` and sets *ts_ns.
bool StripJournalPrefix(std::string_view& s, std::optional<int64_t>* ts_ns) {
  if (s.size() < 20 || s[3] != ' ') return false;
  int month = MonthFromAbbrev(s);
  if (month == 0) return false;
  int day = s[4] == ' ' ? Digits(s, 5, 1) : Digits(s, 4, 2);
  if (day < 0 || s[6] != ' ') return false;
  int64_t clock = ClockNs(s, 7);
  if (clock < 0) return false;
  size_t host = 16;
  if (s[15] == '.') {   // journalctl -o short-precise: "00:36:54.123456"
    int64_t scale = kNsPerSec / 10;
    for (host = 16; host < s.size() && IsDigit(s[host]); ++host) {
      clock += (s[host] - '0') * scale;
      scale /= 10;
    }
    if (host == 16 || host >= s.size() || s[host] != ' ') return false;
    ++host;
  } else if (s[15] != ' ') {
    return false;
  }
  size_t host_end = s.find(' ', host);
  if (host_end == std::string_view::npos || host_end == host) return false;
  size_t colon = s.find(": ", host_end + 1);
  if (colon == std::string_view::npos) return false;
  // The identifier ("vllm[812]") holds no blanks.
  if (s.substr(host_end + 1, colon - host_end - 1).find(' ') != std::string_view::npos)
    return false;
  auto day_ns = MonthDayTimeNs(month, day, 0, 0, 0);
  if (!day_ns) return false;
  *ts_ns = *day_ns + clock;
  s.remove_prefix(colon + 2);
  return true;
}

// After an RFC 3339 time (rsyslog, journalctl -o short-iso): "gpu-host-1 vllm[812]: " — a host
// name, then an identifier with an optional [pid] and a colon; removed on a match. A vLLM or
// uvicorn line never starts so ("INFO 06-25 ...", "INFO:     127.0.0.1...").
void StripSyslogSource(std::string_view& s) {
  const size_t host_end = s.find(' ');
  if (host_end == std::string_view::npos || host_end == 0 || host_end > 64) return;
  if (s.substr(0, host_end).find(':') != std::string_view::npos) return;
  size_t i = host_end + 1;
  const size_t ident = i;
  while (i < s.size() && (IsIdentChar(s[i]) || s[i] == '-' || s[i] == '/')) ++i;
  if (i == ident) return;
  if (i < s.size() && s[i] == '[') {
    const size_t close = s.find(']', i);
    if (close == std::string_view::npos) return;
    for (size_t d = i + 1; d < close; ++d) {
      if (!IsDigit(s[d])) return;
    }
    i = close + 1;
  }
  if (s.substr(i, 2) != ": ") return;
  s.remove_prefix(i + 2);
}

// RFC 3339 from `docker logs -t` / `kubectl logs --timestamps`:
//   "2026-06-25T21:51:52.123456789Z <message>"
bool StripRfc3339Prefix(std::string_view& s, std::optional<int64_t>* ts_ns) {
  if (s.size() < 21 || s[4] != '-' || s[7] != '-' || s[10] != 'T') return false;
  int year = Digits(s, 0, 4), month = Digits(s, 5, 2), day = Digits(s, 8, 2);
  int64_t clock = ClockNs(s, 11);
  if (year < 0 || month < 0 || day < 0 || clock < 0) return false;
  size_t i = 19;
  int64_t frac_ns = 0;
  if (i < s.size() && s[i] == '.') {
    int64_t scale = kNsPerSec / 10;
    for (++i; i < s.size() && IsDigit(s[i]); ++i) {
      frac_ns += (s[i] - '0') * scale;
      scale /= 10;
    }
  }
  size_t sp = s.find(' ', i);
  if (sp == std::string_view::npos || sp - i > 6) return false;  // "Z" or "+02:00"
  auto day_ns = MonthDayTimeNs(month, day, 0, 0, 0);
  if (!day_ns) return false;
  *ts_ns = *day_ns + clock + frac_ns;
  s.remove_prefix(sp + 1);
  StripSyslogSource(s);
  return true;
}

// `kubectl logs --prefix`: "[pod/NAME/CONTAINER] " in front of every line of the pod, before
// its --timestamps time. Pod and container names hold no blank or ']'.
bool StripKubectlPrefix(std::string_view& s) {
  if (s.substr(0, 5) != "[pod/") return false;
  const size_t close = s.find("] ");
  if (close == std::string_view::npos || close > 512) return false;
  const std::string_view inner = s.substr(5, close - 5);
  if (inner.find(' ') != std::string_view::npos || inner.find('/') == std::string_view::npos) return false;
  s.remove_prefix(close + 2);
  return true;
}

// vLLM V1 process prefix: "(APIServer pid=12345) " or "(EngineCore_DP0 pid=12399) ".
bool StripProcPrefix(std::string_view& s, std::string_view* proc) {
  if (s.empty() || s[0] != '(') return false;
  size_t close = s.find(") ");
  if (close == std::string_view::npos || close > 80) return false;
  std::string_view inner = s.substr(1, close - 1);
  // Ray's workers add the node: "(RayWorkerWrapper pid=4161, ip=10.0.0.2)", "(pid=4163, ip=...)".
  if (size_t ip = inner.find(", ip="); ip != std::string_view::npos) inner = inner.substr(0, ip);
  size_t pid = inner.rfind(" pid=");
  size_t digits = pid + 5;
  if (pid == std::string_view::npos) {
    if (inner.substr(0, 4) != "pid=") return false;
    pid = 0;
    digits = 4;
  }
  if (digits >= inner.size()) return false;
  for (size_t i = digits; i < inner.size(); ++i) {
    if (!IsDigit(inner[i])) return false;
  }
  *proc = inner.substr(0, pid);
  s.remove_prefix(close + 2);
  return true;
}

// vLLM's prefix after something else in front ("[node-3] INFO 08-20 10:00:10 [", set by
// VLLM_LOGGING_PREFIX; a `kubectl logs --prefix` tag): within the first 128 bytes, a blank,
// a level word, " MM-DD HH:MM:SS ". On a match `s` starts after the level word.
void SkipToVllmLevel(std::string_view& s, Level* level) {
  const size_t limit = std::min<size_t>(s.size(), 128);
  for (size_t p = 1; p < limit; ++p) {
    if (s[p - 1] != ' ') continue;
    std::string_view r = s.substr(p);
    const Level l = TakeLevelWord(r);
    if (l == Level::kNone || r.size() < 17 || r[0] != ' ' || r[3] != '-' || r[6] != ' ' ||
        r[9] != ':' || r[12] != ':' || r[15] != ' ' || Digits(r, 1, 2) < 0 || Digits(r, 4, 2) < 0) {
      continue;
    }
    s = r;
    *level = l;
    return;
  }
}

}  // namespace

std::string_view LevelName(Level l) {
  switch (l) {
    case Level::kNone: return "none";
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO";
    case Level::kWarning: return "WARNING";
    case Level::kError: return "ERROR";
    case Level::kCritical: return "CRITICAL";
  }
  return "none";
}

std::string_view SourceName(Source s) {
  switch (s) {
    case Source::kUnknown: return "unknown";
    case Source::kVllm: return "vllm";
    case Source::kUvicorn: return "uvicorn";
    case Source::kLlamaCpp: return "llama.cpp";
    case Source::kPython: return "python";
    case Source::kBinary: return "binary";
    case Source::kEmpty: return "empty";
    case Source::kSglang: return "sglang";
    case Source::kTgi: return "tgi";
    case Source::kTorch: return "torch";
    case Source::kSystem: return "system";
    case Source::kCount: break;
  }
  return "unknown";
}

std::optional<int64_t> MonthDayTimeNs(int month, int day, int hour, int minute, int second) {
  if (month < 1 || month > 12 || day < 1 || day > kDaysIn[month]) return std::nullopt;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60)
    return std::nullopt;
  int64_t days = kDaysBefore[month] + day - 1;
  return ((days * 24 + hour) * 3600 + minute * 60 + second) * kNsPerSec;
}

std::string WallLabel(int64_t ts_ns) {
  int64_t secs = ts_ns / kNsPerSec;
  int64_t days = (secs / 86400) % 366;
  int64_t rem = secs % 86400;
  int month = 12;
  while (month > 1 && kDaysBefore[month] > days) --month;
  int64_t day = days - kDaysBefore[month] + 1;
  return fmt::format("{:02d}-{:02d} {:02d}:{:02d}:{:02d}", month, day, rem / 3600, rem / 60 % 60,
                     rem % 60);
}

std::string RelativeLabel(int64_t ts_ns) {
  int64_t ms = ts_ns / 1000000;
  return fmt::format("+{}:{:02d}.{:03d}", ms / 60000, ms / 1000 % 60, ms % 1000);
}

// Long on purpose: the prefixes of one line peeled in order (ANSI; kubectl; journal or RFC 3339;
// vLLM's process, level and time), each dialect tried where its prefix says it may be one.
const ParsedLine& LineParser::Parse(std::string_view line) {
  out_ = ParsedLine();
  if (line.empty()) {
    out_.source = Source::kEmpty;
    return out_;
  }
  if (std::memchr(line.data(), '\0', line.size()) != nullptr) {
    out_.source = Source::kBinary;
    return out_;
  }
  if (std::memchr(line.data(), '\x1b', line.size()) != nullptr) {
    StripAnsi(line, &scratch_);
    line = scratch_;
  }
  std::string_view s = line;
  std::optional<int64_t> outer_ts;
  StripKubectlPrefix(s);
  if (!StripJournalPrefix(s, &outer_ts)) StripRfc3339Prefix(s, &outer_ts);
  out_.ts_ns = outer_ts;
  if (!s.empty() && s[0] == '[' && ParseSglang(s, outer_ts)) return out_;
  if (outer_ts && ParseTgi(s)) return out_;
  if (s.substr(0, 8) == "{\"tid\":\"" && ParseLlamaJson(s)) return out_;

  // vLLM: "(APIServer pid=1) INFO 06-25 21:51:52 [loggers.py:123] Engine 000: ..."
  //       "INFO 06-25 21:51:52 llm_engine.py:123] Avg prompt ..." (2024 format, no '[')
  // uvicorn: "INFO:     127.0.0.1:49152 - \"POST /v1/completions HTTP/1.1\" 200 OK"
  std::string_view rest = s;
  std::string_view proc;
  StripProcPrefix(rest, &proc);
  Level level = TakeLevelWord(rest);
  if (level == Level::kNone) SkipToVllmLevel(rest, &level);
  if (level != Level::kNone && rest.size() >= 16 && rest[0] == ' ' && rest[3] == '-' &&
      rest[6] == ' ') {
    int month = Digits(rest, 1, 2), day = Digits(rest, 4, 2);
    int64_t clock = ClockNs(rest, 7);
    std::optional<int64_t> day_ns;
    if (month >= 0 && day >= 0 && clock >= 0) day_ns = MonthDayTimeNs(month, day, 0, 0, 0);
    if (day_ns && rest[15] == ' ') {
      std::string_view r = rest.substr(16);
      Consume(r, "[");
      size_t colon = r.find(':');
      size_t close = r.find("] ");
      if (colon != std::string_view::npos && close != std::string_view::npos && colon < close) {
        std::string_view num = r.substr(colon + 1, close - colon - 1);
        int file_line = 0;
        auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), file_line);
        if (ec == std::errc() && p == num.data() + num.size()) {
          out_.source = Source::kVllm;
          out_.level = level;
          out_.proc = proc;
          own_ts_ = *day_ns + clock;
          out_.ts_ns = outer_ts ? outer_ts : own_ts_;
          out_.file = r.substr(0, colon);
          out_.file_line = file_line;
          out_.msg = r.substr(close + 2);
          ClassifyVllm();
          return out_;
        }
      }
    }
  }
  if (level != Level::kNone && !rest.empty() && rest[0] == ':') {
    // uvicorn's default formatter: levelname + ':' padded to 9 columns, then the message.
    rest.remove_prefix(1);
    size_t b = rest.find_first_not_of(' ');
    if (b != std::string_view::npos && b >= 1) {
      out_.source = Source::kUvicorn;
      out_.level = level;
      out_.proc = proc;
      out_.msg = rest.substr(b);
      ParseAccess(out_.msg, /*llama=*/false);
      return out_;
    }
  }

  // Raw output of a vLLM child process is prefixed too ("(EngineCore_DP0 pid=188) Traceback").
  std::string_view other = s;
  if (StripProcPrefix(other, &proc)) out_.proc = proc;
  ParseOther(other);
  return out_;
}

}  // namespace latdoc::logs
