// LineParser: the other servers' dialects: SGLang, TGI and PyTorch's c10 logging.
#include "logs/line_parser.h"

#include <charconv>
#include <cstring>

#include <fmt/core.h>

#include "logs/line_parser_internal.h"

namespace latdoc::logs {
using namespace line_parser_internal;  // the text helpers all four parser files share

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

}  // namespace latdoc::logs
