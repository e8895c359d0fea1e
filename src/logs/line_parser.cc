#include "logs/line_parser.h"

#include <charconv>
#include <cstring>

#include <fmt/core.h>

namespace latdoc::logs {
namespace {

constexpr int64_t kNsPerSec = 1000 * 1000 * 1000;
constexpr int kDaysBefore[13] = {0, 0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335};
constexpr int kDaysIn[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

bool Consume(std::string_view& s, std::string_view prefix) {
  if (s.size() < prefix.size() || std::memcmp(s.data(), prefix.data(), prefix.size()) != 0)
    return false;
  s.remove_prefix(prefix.size());
  return true;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '_' || c == '.';
}

// Reads exactly `n` digits at s[pos...]; -1 if any is not a digit.
int Digits(std::string_view s, size_t pos, size_t n) {
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
bool TakeInt(std::string_view& s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || p == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(p - s.data()));
  return true;
}

// "HH:MM:SS" at s[pos]; ns since midnight, or -1.
int64_t ClockNs(std::string_view s, size_t pos) {
  int h = Digits(s, pos, 2), m = Digits(s, pos + 3, 2), sec = Digits(s, pos + 6, 2);
  if (h < 0 || m < 0 || sec < 0 || s[pos + 2] != ':' || s[pos + 5] != ':') return -1;
  if (h > 23 || m > 59 || sec > 60) return -1;
  return (int64_t{h} * 3600 + m * 60 + sec) * kNsPerSec;
}

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
Level TakeLevelWord(std::string_view& s);
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

// The level word at the front of `s`, removed on a match. Python logging level names.
Level TakeLevelWord(std::string_view& s) {
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
bool LooksLikeException(std::string_view s) {
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
bool ParseLlamaTiming(std::string_view s, double* ms, int64_t* tokens) {
  while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *ms);
  if (ec != std::errc()) return false;
  s.remove_prefix(static_cast<size_t>(p - s.data()));
  if (!Consume(s, " ms /")) return false;
  while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
  return TakeInt(s, tokens);
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

// vLLM messages that latdoc reads (vllm-project/vllm: vllm/v1/metrics/loggers.py ~v0.8 to
// ~v0.12, vllm/engine/metrics.py, vllm/core/scheduler.py, vllm/entrypoints/logger.py).
// Dispatch on the first byte to keep the common case (an unrelated INFO line) at one comparison.
bool LineParser::ContinuesMessage(std::string_view m) {
  OpenMessage& o = message_;
  const bool same = o.open && out_.file_line == o.line && own_ts_ == o.ts_ns &&
                    out_.file == o.file && out_.proc == o.proc;
  if (same && o.in_traceback) {
    // Inside a logged traceback: the blank line and the chaining sentence between two
    // tracebacks, and the lines an exception's message goes on with (CUDA's "For debugging
    // consider passing CUDA_LAUNCH_BLOCKING=1"). The message's own first line again is the same
    // call logging anew.
    if (m.empty() || m.substr(0, 39) == "During handling of the above exception" ||
        m.substr(0, 39) == "The above exception was the direct caus") {
      return true;
    }
    if (m.substr(0, 10) == "Traceback " || m[0] == ' ' || LooksLikeException(m)) return false;
    if (o.after_exception && m != o.first) return true;
  }
  if (!same || o.in_traceback) {
    o.open = true;
    o.proc.assign(out_.proc);
    o.file.assign(out_.file);
    o.first.assign(m);
    o.line = out_.file_line;
    o.ts_ns = own_ts_;
    o.in_traceback = o.after_exception = false;
  }
  return false;
}

void LineParser::ClassifyVllm() {
  std::string_view m = out_.msg;
  if (out_.level < Level::kWarning) {   // the common case: no multi-line message to follow
    message_.open = false;
    ClassifyVllmMessage(m);
    return;
  }
  if (ContinuesMessage(m)) {
    out_.event = Event::kTraceback;
    return;
  }
  ClassifyVllmMessage(m);
  if (out_.event == Event::kTraceback) message_.in_traceback = true;
  if (out_.event == Event::kException && message_.in_traceback) message_.after_exception = true;
}

void LineParser::ClassifyVllmMessage(std::string_view m) {
  if (m.empty()) return;
  // vLLM's formatter repeats the prefix on every line of a message, so a logged exception's
  // traceback arrives as prefixed lines: the header, then frames and their code lines (indented,
  // at the level it was logged at); its last line, the exception, as raw ones have it.
  if (m.substr(0, 10) == "Traceback ") {
    out_.event = Event::kTraceback;
    return;
  }
  if (m[0] == ' ' && out_.level >= Level::kWarning) {
    out_.event = Event::kTraceback;
    return;
  }
  if (out_.level >= Level::kWarning && LooksLikeException(m)) {
    out_.event = Event::kException;
    return;
  }
  switch (m[0]) {
    case 'E':
      if (m.substr(0, 7) == "Engine ") {
        if (auto st = ParseVllmV1Stats(m)) {
          out_.event = Event::kStats;
          out_.stats = *st;
        }
      }
      return;
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
      if (auto st = ParseVllmV1Stats(m)) {
        out_.event = Event::kStats;
        out_.stats = *st;
      }
      return;
    case 'A':
      if (m.substr(0, 15) == "Avg prompt thro") {
        if (auto st = ParseVllmV0Stats(m)) {
          out_.event = Event::kStats;
          out_.stats = *st;
        }
      } else if (m.substr(0, 14) == "Added request ") {
        out_.event = Event::kAddedRequest;
      } else if (m.substr(0, 15) == "Aborted request") {   // "Aborted request(s) %s."
        out_.event = Event::kAbortedRequest;
      } else if (m.substr(0, 35) == "AsyncLLM created with api_server_co") {
        out_.event = Event::kStatsDisabled;
      }
      return;
    case 'R':
      if (m.substr(0, 17) == "Received request ") {
        out_.event = Event::kReceivedRequest;
      } else if (m.substr(0, 8) == "Request " && m.find(" details: ") != std::string_view::npos) {
        out_.event = Event::kRequestDetails;
      }
      return;
    case 'F':
      if (m.substr(0, 17) == "Finished request ") out_.event = Event::kFinishedRequest;
      return;
    case 'G':
      if (m.substr(0, 19) == "Generated response ") out_.event = Event::kGeneratedResponse;
      return;
    case 'P':
      if (auto v = ParseVllmV0PrefixHitRate(m)) {
        out_.event = Event::kPrefixCacheV0;
        out_.value = *v;
      }
      return;
    case 'S':
      // V0 scheduler, logged on the 1st, 51st, 101st... preemption:
      // "Sequence group 12 is preempted by PreemptionMode.RECOMPUTE mode because there is not
      //  enough KV cache space. ... total_num_cumulative_preemption=51"
      if (m.substr(0, 15) == "Sequence group " && m.find(" is preempted by ") != std::string_view::npos) {
        out_.event = Event::kPreemptionV0;
        size_t p = m.rfind("total_num_cumulative_preemption=");
        if (p != std::string_view::npos) {
          std::string_view n = m.substr(p + 32);
          int64_t v = 0;
          if (TakeInt(n, &v)) out_.count = v;
        }
      } else if (m.substr(0, 13) == "SpecDecoding " || m.substr(0, 20) == "Speculative metrics:") {
        out_.event = Event::kOtherStats;
      }
      return;
    default:
      return;
  }
}

// uvicorn access log (uvicorn.logging.AccessFormatter, default format):
//   127.0.0.1:49152 - "POST /v1/completions HTTP/1.1" 200 OK
// llama.cpp server (log_server_request), after "srv  log_server_r: ":
//   request: POST /completion 127.0.0.1 200
void LineParser::ParseAccess(std::string_view m, bool llama) {
  if (!llama) {
    size_t q = m.find(" - \"");
    if (q == std::string_view::npos) return;
    std::string_view r = m.substr(q + 4);
    size_t sp1 = r.find(' ');
    if (sp1 == std::string_view::npos) return;
    size_t sp2 = r.find(' ', sp1 + 1);
    size_t endq = r.find("\" ", sp1 + 1);
    if (sp2 == std::string_view::npos || endq == std::string_view::npos || sp2 > endq) return;
    std::string_view st = r.substr(endq + 2);
    int status = 0;
    if (!TakeInt(st, &status) || status < 100 || status > 599) return;
    out_.event = Event::kAccess;
    out_.access.method = r.substr(0, sp1);
    out_.access.path = r.substr(sp1 + 1, sp2 - sp1 - 1);
    out_.access.status = status;
    return;
  }
  Consume(m, "done ");   // "done request: POST /infill 10.8.0.9 200" (2025+)
  if (!Consume(m, "request: ")) return;
  size_t sp1 = m.find(' ');
  if (sp1 == std::string_view::npos) return;
  size_t sp2 = m.find(' ', sp1 + 1);
  size_t sp3 = m.rfind(' ');
  if (sp2 == std::string_view::npos || sp3 < sp2) return;
  std::string_view st = m.substr(sp3 + 1);
  int status = 0;
  if (!TakeInt(st, &status) || !st.empty() || status < 100 || status > 599) return;
  out_.event = Event::kAccess;
  out_.access.method = m.substr(0, sp1);
  out_.access.path = m.substr(sp1 + 1, sp2 - sp1 - 1);
  out_.access.status = status;
}

// SGLang (python/sglang/srt/utils.py configure_logger: "[%(asctime)s%(prefix)s] %(message)s",
// asctime "%Y-%m-%d %H:%M:%S" since late 2024, "%H:%M:%S" before; prefix " TP0", " DP1 TP1"):
//   [2025-03-11 16:21:31 TP0] Decode batch. #running-req: 25, #token: 70112, token usage: 0.22,
//     gen throughput (token/s): 912.40, #queue-req: 0
//   [2026-04-05 20:02:51] Prefill batch, #new-seq: 1, #new-token: 204, #cached-token: 0, token
//     usage: 0.07, #running-req: 29, #queue-req: 0, cuda graph: True, input throughput (token/s): 611.08
//   [2025-03-11 16:21:30] INFO:     127.0.0.1:33010 - "POST /v1/completions HTTP/1.1" 200 OK
// ("Decode batch." until 2025, "Decode batch," after). The short form has no date: its times
// are on Jan 1 of the log's calendar unless an outer prefix gave one.
bool LineParser::ParseSglang(std::string_view s, std::optional<int64_t> outer_ts) {
  size_t close = s.find("] ");
  if (close == std::string_view::npos || close > 64) return false;
  std::string_view head = s.substr(1, close - 1);
  std::optional<int64_t> ts;
  size_t after = 0;
  if (head.size() >= 19 && head[4] == '-' && head[7] == '-' && head[10] == ' ') {
    int month = Digits(head, 5, 2), day = Digits(head, 8, 2);
    int64_t clock = ClockNs(head, 11);
    if (Digits(head, 0, 4) < 0 || clock < 0) return false;
    auto day_ns = MonthDayTimeNs(month, day, 0, 0, 0);
    if (!day_ns) return false;
    ts = *day_ns + clock;
    after = 19;
  } else if (head.size() >= 8 && head[2] == ':') {
    int64_t clock = ClockNs(head, 0);
    if (clock < 0) return false;
    ts = clock;
    after = 8;
  } else {
    return false;
  }
  // The rest of the bracket: blank-separated rank tags ("TP0", "DP1 TP1", "PP0").
  std::string_view tags = head.substr(after);
  for (char c : tags) {
    if (c != ' ' && !IsIdentChar(c) && c != '-') return false;
  }
  std::string_view m = s.substr(close + 2);
  out_.ts_ns = outer_ts ? outer_ts : ts;
  out_.source = Source::kSglang;
  out_.level = Level::kInfo;
  out_.msg = m;
  // A uvicorn access line or a Python logging line after SGLang's prefix.
  std::string_view r = m;
  if (Level l = TakeLevelWord(r); l != Level::kNone && !r.empty() && r[0] == ':') {
    out_.source = Source::kUvicorn;
    out_.level = l;
    size_t b = r.find_first_not_of(' ', 1);
    out_.msg = b == std::string_view::npos ? std::string_view() : r.substr(b);
    ParseAccess(out_.msg, /*llama=*/false);
    return true;
  }
  const bool decode = m.substr(0, 12) == "Decode batch";
  const bool prefill = m.substr(0, 13) == "Prefill batch";
  if (!decode && !prefill) {
    if (LooksLikeException(m)) {
      out_.level = Level::kError;
      out_.event = Event::kException;
    }
    return true;
  }
  std::string_view parts = m.substr(decode ? 12 : 13);
  if (!parts.empty() && (parts[0] == '.' || parts[0] == ',')) parts.remove_prefix(1);
  SglangBatch& b = out_.sglang;
  while (!parts.empty()) {
    while (!parts.empty() && parts[0] == ' ') parts.remove_prefix(1);
    size_t comma = parts.find(", ");
    std::string_view part = parts.substr(0, comma);
    parts = comma == std::string_view::npos ? std::string_view() : parts.substr(comma + 2);
    double v = 0;
    auto num = [&](std::string_view key) {
      if (part.substr(0, key.size()) != key) return false;
      std::string_view n = part.substr(key.size());
      auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), v);
      return ec == std::errc() && p != n.data();
    };
    if (num("#running-req: ")) b.running = static_cast<int64_t>(v);
    else if (num("#queue-req: ")) b.queued = static_cast<int64_t>(v);
    else if (num("token usage: ")) b.token_usage = v;
    else if (num("gen throughput (token/s): ")) b.gen_tps = v;
    else if (num("input throughput (token/s): ")) b.input_tps = v;
    else if (num("#new-token: ")) b.new_tokens = static_cast<int64_t>(v);
  }
  if (b.running < 0) return true;   // some other "Decode batch" text: recognised, no stats
  out_.event = decode ? Event::kSglangDecode : Event::kSglangPrefill;
  return true;
}

// TGI's router and launcher (Rust tracing_subscriber's fmt layer, router/src/main.rs), after the
// RFC 3339 time: level right-aligned in 5 columns, span fields in braces, the target, the source
// file and line, the message:
//    INFO text_generation_router::server: router/src/server.rs:2266: Connected
//    INFO generate{... total_time="812.4ms" validation_time="1.2ms" queue_time="98.5µs" ...}:
//      text_generation_router::server: router/src/server.rs:422: Success
//    INFO text_generation_launcher: Shard ready in 21.4s rank=0
bool LineParser::ParseTgi(std::string_view s) {
  std::string_view r = s;
  while (!r.empty() && r[0] == ' ') r.remove_prefix(1);
  Level level = TakeLevelWord(r);
  if (level == Level::kNone || r.empty() || r[0] != ' ') return false;
  r.remove_prefix(1);
  size_t target = r.find("text_generation_");
  if (target == std::string_view::npos) return false;
  // The target follows the span (if any) and ends at ": ".
  size_t target_end = r.find(": ", target);
  if (target_end == std::string_view::npos) return false;
  std::string_view spans = r.substr(0, target);
  std::string_view m = r.substr(target_end + 2);
  // "router/src/server.rs:422: Success": the message after the file and line.
  if (size_t rs = m.find(".rs:"); rs != std::string_view::npos && rs < m.find(' ')) {
    size_t colon = m.find(": ", rs + 4);
    if (colon != std::string_view::npos) m = m.substr(colon + 2);
  }
  out_.source = Source::kTgi;
  out_.level = level;
  out_.msg = m;
  if (m == "Success") {
    out_.event = Event::kTgiSuccess;
    out_.value = -1;
    // queue_time="98.511µs" / "1.2ms" / "2.01s" (Rust's Duration Debug format).
    size_t q = spans.find("queue_time=\"");
    if (q != std::string_view::npos) {
      std::string_view v = spans.substr(q + 12);
      double x = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec == std::errc()) {
        std::string_view unit = v.substr(static_cast<size_t>(p - v.data()));
        if (unit.substr(0, 3) == "ns\"") out_.value = x / 1e6;
        else if (unit.substr(0, 3) == "\xc2\xb5s") out_.value = x / 1e3;   // "µs"
        else if (unit.substr(0, 3) == "ms\"") out_.value = x;
        else if (unit.substr(0, 2) == "s\"") out_.value = x * 1e3;
      }
    }
  }
  return true;
}

// llama.cpp server's JSON log (before the 2024 logging rework, --log-format json default):
//   {"tid":"22104","timestamp":1717067392,"level":"INFO","function":"print_timings","line":321,
//    "msg":"prompt eval time     =    1920.55 ms /    44 tokens (...)", ...}
//   {"tid":"23390",...,"function":"log_server_request",...,"msg":"request",...,"status":200,
//    "method":"POST","path":"/completion",...}
// Read by key without a JSON parser: the values read hold no escaped quotes.
bool LineParser::ParseLlamaJson(std::string_view s) {
  auto str = [&](std::string_view key) -> std::string_view {
    std::string k = "\"" + std::string(key) + "\":\"";
    size_t p = s.find(k);
    if (p == std::string_view::npos) return {};
    size_t b = p + k.size();
    size_t e = s.find('"', b);
    return e == std::string_view::npos ? std::string_view() : s.substr(b, e - b);
  };
  auto num = [&](std::string_view key) -> std::optional<int64_t> {
    std::string k = "\"" + std::string(key) + "\":";
    size_t p = s.find(k);
    if (p == std::string_view::npos) return std::nullopt;
    std::string_view v = s.substr(p + k.size());
    int64_t x = 0;
    if (!TakeInt(v, &x)) return std::nullopt;
    return x;
  };
  std::string_view level = str("level");
  if (level.empty()) return false;
  out_.source = Source::kLlamaCpp;
  out_.level = level == "ERROR" ? Level::kError
               : level == "WARN" || level == "WARNING" ? Level::kWarning
               : level == "DEBUG" ? Level::kDebug : Level::kInfo;
  if (auto unix_s = num("timestamp"); unix_s && *unix_s > 0) {
    // Unix seconds -> the calendar's day of the year and time of day (UTC).
    int64_t days = *unix_s / 86400, secs = *unix_s % 86400;
    // civil_from_days (H. Hinnant): the month and day of `days` since 1970-01-01.
    int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
    int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    if (auto d = MonthDayTimeNs(month, day, 0, 0, 0)) out_.ts_ns = *d + secs * kNsPerSec;
  }
  std::string_view msg = str("msg");
  out_.msg = msg;
  std::string_view u = msg;
  if (Consume(u, "prompt eval time")) {
    u = u.substr(std::min(u.find('=') + 1, u.size()));
    if (ParseLlamaTiming(u, &out_.value, &out_.count)) out_.event = Event::kLlamaPromptTiming;
  } else if (Consume(u, "generation eval time")) {
    u = u.substr(std::min(u.find('=') + 1, u.size()));
    // "4211.08 ms /    32 runs   (...)": runs are generated tokens.
    std::string_view w = u;
    while (!w.empty() && w[0] == ' ') w.remove_prefix(1);
    auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), out_.value);
    if (ec == std::errc()) {
      w.remove_prefix(static_cast<size_t>(p - w.data()));
      if (Consume(w, " ms /")) {
        while (!w.empty() && w[0] == ' ') w.remove_prefix(1);
        if (TakeInt(w, &out_.count)) out_.event = Event::kLlamaEvalTiming;
      }
    }
  } else if (str("function") == "log_server_request") {
    if (auto st = num("status")) {
      out_.event = Event::kAccess;
      out_.access.method = str("method");
      out_.access.path = str("path");
      out_.access.status = static_cast<int>(*st);
    }
  }
  return true;
}

// PyTorch's c10 logging and crash dumps, printed raw by a worker (c10/util/Logging.cpp, glog
// style "[LMMDD HH:MM:SS.micros file:line] "; torch.distributed adds "[rankN]:" in front):
//   [rank2]:[E219 08:58:31.402211871 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught ...
//   [E ProcessGroupNCCL.cpp:474] [Rank 0] Watchdog caught collective operation timeout ...
//   frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3a... in libc10.so)
//   Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:565
//   *** SIGABRT received at time=1739955511 on cpu 17 ***   /   PC: @ 0x7f3b2b0969fc (unknown) ...
// and systemd's own lines in a journal: "vllm.service: Main process exited, code=exited, ...".
bool LineParser::ParseTorch(std::string_view s) {
  std::string_view r = s;
  if (r.substr(0, 5) == "[rank") {
    size_t e = r.find("]:");
    if (e == std::string_view::npos || e > 12) return false;
    r.remove_prefix(e + 2);
  }
  if (r.size() > 4 && r[0] == '[' && (r[1] == 'E' || r[1] == 'W' || r[1] == 'I' || r[1] == 'F') &&
      (r[2] == ' ' || IsDigit(r[2]))) {
    size_t close = r.find("] ");
    if (close == std::string_view::npos) return false;
    std::string_view head = r.substr(2, close - 2);
    size_t colon = head.rfind(':');
    if (colon == std::string_view::npos || colon + 1 >= head.size() || !IsDigit(head[colon + 1]))
      return false;
    out_.source = Source::kTorch;
    out_.level = r[1] == 'E' ? Level::kError : r[1] == 'W' ? Level::kWarning
                 : r[1] == 'F' ? Level::kCritical : Level::kInfo;
    out_.msg = r.substr(close + 2);
    // "E219 08:58:31.402211871": month and day (the month unpadded, 3 or 4 digits), the clock
    // and its fraction; the line's time when nothing outside it gave one.
    size_t sp = head.find(' ');
    if (!out_.ts_ns && (sp == 3 || sp == 4) && head.size() >= sp + 9) {
      int md = 0;
      for (size_t i = 0; i < sp && md >= 0; ++i) md = IsDigit(head[i]) ? md * 10 + (head[i] - '0') : -1;
      int64_t clock = md > 0 ? ClockNs(head, sp + 1) : -1;
      auto day_ns = clock >= 0 ? MonthDayTimeNs(md / 100, md % 100, 0, 0, 0) : std::nullopt;
      if (day_ns) {
        int64_t frac_ns = 0, scale = kNsPerSec / 10;
        for (size_t i = sp + 10; head.size() > sp + 9 && head[sp + 9] == '.' && i < head.size() &&
                                 IsDigit(head[i]);
             ++i) {
          frac_ns += (head[i] - '0') * scale;
          scale /= 10;
        }
        out_.ts_ns = *day_ns + clock + frac_ns;
      }
    }
    return true;
  }
  if (s.substr(0, 7) == "frame #" || s.substr(0, 22) == "Exception raised from " ||
      s.substr(0, 4) == "PC: " || s.substr(0, 7) == "    @  ") {
    out_.source = Source::kTorch;
    out_.event = Event::kTraceback;
    out_.msg = s;
    return true;
  }
  if (s.substr(0, 4) == "*** " && s.find(" received at time=") != std::string_view::npos) {
    out_.source = Source::kTorch;
    out_.level = Level::kCritical;
    out_.msg = s;
    return true;
  }
  size_t unit = s.find(".service: ");
  if (unit != std::string_view::npos && unit > 0 && unit < 128 &&
      s.substr(0, unit).find(' ') == std::string_view::npos) {
    out_.source = Source::kSystem;
    out_.msg = s.substr(unit + 10);
    const bool failed = out_.msg.find("status=") != std::string_view::npos &&
                        out_.msg.find("status=0/") == std::string_view::npos;
    out_.level = failed || out_.msg.substr(0, 7) == "Failed " ? Level::kError : Level::kInfo;
    return true;
  }
  return false;
}

// Lines of neither vLLM nor uvicorn form: llama.cpp server, Python tracebacks, the rest.
//
// llama.cpp (common/log.cpp; prefix and timestamps only with --log-prefix / --log-timestamps):
//   0.01.234.567 I srv  log_server_r: request: POST /completion 127.0.0.1 200
//   slot launch_slot_: id  0 | task 12 | processing task
//   slot print_timing: id  0 | task 12 |
//   prompt eval time =      32.14 ms /    10 tokens (    3.21 ms per token,   311.14 tokens per second)
//          eval time =    2214.56 ms /   128 tokens (   17.30 ms per token,    57.80 tokens per second)
//   print_timings: prompt eval time = ...   (before late 2024)
void LineParser::ParseOther(std::string_view s) {
  // A supervisor's "[PID] " in front of every line of the child (llama-swap and the like).
  if (s.size() > 3 && s[0] == '[' && IsDigit(s[1])) {
    size_t close = s.find("] ");
    if (close != std::string_view::npos && close <= 11) {
      bool digits = true;
      for (size_t i = 1; i < close; ++i) digits = digits && IsDigit(s[i]);
      if (digits) s.remove_prefix(close + 2);
    }
  }
  if (ParseTorch(s)) return;
  // llama.cpp "[M.SS.mmm.uuu ]" (minutes, seconds, ms, us since start).
  if (s.size() > 13 && IsDigit(s[0])) {
    size_t d1 = s.find('.');
    if (d1 != std::string_view::npos && d1 <= 6 && s.size() > d1 + 12 && s[d1 + 3] == '.' &&
        s[d1 + 7] == '.' && s[d1 + 11] == ' ') {
      int64_t min = 0;
      std::string_view mm = s.substr(0, d1);
      int sec = Digits(s, d1 + 1, 2), ms = Digits(s, d1 + 4, 3), us = Digits(s, d1 + 8, 3);
      if (TakeInt(mm, &min) && mm.empty() && sec >= 0 && ms >= 0 && us >= 0) {
        out_.ts_ns = ((min * 60 + sec) * 1000000 + ms * 1000 + us) * 1000;
        out_.ts_is_relative = true;
        out_.source = Source::kLlamaCpp;
        s.remove_prefix(d1 + 12);
      }
    }
  }
  if (s.size() >= 2 && s[1] == ' ') {
    Level l = Level::kNone;
    switch (s[0]) {
      case 'I': l = Level::kInfo; break;
      case 'W': l = Level::kWarning; break;
      case 'E': l = Level::kError; break;
      case 'D': l = Level::kDebug; break;
      default: break;
    }
    if (l != Level::kNone && (out_.source == Source::kLlamaCpp || s.substr(2, 5) == "srv  " ||
                              s.substr(2, 5) == "slot " || s.substr(2, 5) == "que  ")) {
      out_.level = l;
      out_.source = Source::kLlamaCpp;
      s.remove_prefix(2);
    }
  }
  std::string_view t = s;
  if (t.substr(0, 5) == "srv  " || t.substr(0, 5) == "slot " || t.substr(0, 5) == "que  ") {
    out_.source = Source::kLlamaCpp;
    if (out_.level == Level::kNone) out_.level = Level::kInfo;
    size_t colon = t.find(": ", 5);
    out_.msg = colon == std::string_view::npos ? t : t.substr(colon + 2);
    if (t[0] == 's' && t[1] == 'r') ParseAccess(out_.msg, /*llama=*/true);
    return;
  }
  Consume(t, "print_timings: ");
  size_t b = t.find_first_not_of(' ');
  if (b != std::string_view::npos && (t[b] == 'p' || t[b] == 'e' || t[b] == 't' || t[b] == 'g' ||
                                      t[b] == 'd')) {
    std::string_view u = t.substr(b);
    if (Consume(u, "total time =") || Consume(u, "graphs reused =") ||
        Consume(u, "draft acceptance =")) {
      out_.source = Source::kLlamaCpp;
      if (out_.level == Level::kNone) out_.level = Level::kInfo;
      out_.msg = t.substr(b);
      return;
    }
    bool prompt = Consume(u, "prompt eval time =");
    if (prompt || Consume(u, "eval time =")) {
      if (ParseLlamaTiming(u, &out_.value, &out_.count)) {
        out_.source = Source::kLlamaCpp;
        if (out_.level == Level::kNone) out_.level = Level::kInfo;
        out_.event = prompt ? Event::kLlamaPromptTiming : Event::kLlamaEvalTiming;
        out_.msg = t.substr(b);
        return;
      }
    }
  }
  // Python tracebacks, printed raw to stderr by the interpreter.
  if (t.substr(0, 10) == "Traceback ") {
    out_.source = Source::kPython;
    out_.level = Level::kError;
    out_.event = Event::kTraceback;
    out_.msg = t;
    return;
  }
  if (!t.empty() && t[0] == ' ' && t.substr(0, 8) == "  File \"") {
    out_.source = Source::kPython;
    out_.event = Event::kTraceback;
    out_.msg = t;
    return;
  }
  if (LooksLikeException(t)) {
    out_.source = Source::kPython;
    out_.level = Level::kError;
    out_.event = Event::kException;
    out_.msg = t;
    return;
  }
  out_.msg = t;
  if (out_.source == Source::kLlamaCpp) {
    if (out_.level == Level::kNone) out_.level = Level::kInfo;
    return;
  }
  // Unknown. A line of mostly control or high bytes is binary garbage, not text.
  size_t odd = 0;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) ++odd;
  }
  out_.source = odd * 10 > s.size() ? Source::kBinary : Source::kUnknown;
}

}  // namespace latdoc::logs
