// LineParser: llama.cpp's server logs (JSON and text) and the lines of no known server.
#include "logs/line_parser.h"

#include <charconv>
#include <cstring>

#include <fmt/core.h>

#include "logs/line_parser_internal.h"

namespace latdoc::logs {
using namespace line_parser_internal;  // the text helpers all four parser files share

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

// Lines of neither vLLM nor uvicorn form: llama.cpp server, Python tracebacks, the rest.
//
// llama.cpp (common/log.cpp; prefix and timestamps only with --log-prefix / --log-timestamps):
//   0.01.234.567 I srv  log_server_r: request: POST /completion 127.0.0.1 200
//   slot launch_slot_: id  0 | task 12 | processing task
//   slot print_timing: id  0 | task 12 |
//   prompt eval time =      32.14 ms /    10 tokens (    3.21 ms per token,   311.14 tokens per second)
//          eval time =    2214.56 ms /   128 tokens (   17.30 ms per token,    57.80 tokens per second)
//   print_timings: prompt eval time = ...   (before late 2024)
// Long on purpose: one pass over the prefixes a line may carry, in the order they appear, each
// step narrowing the line for the next; split, the steps would pass the half-read line around.
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
