// LineParser: recognises one line of an inference server's log and pulls out what latdoc uses.
//
// Formats (samples above each parser in line_parser.cc):
//   vLLM       [(APIServer pid=N) ]LEVEL MM-DD HH:MM:SS [file.py:NN] message
//              (ANSI colours stripped first; older "LEVEL MM-DD HH:MM:SS file.py:NN] message")
//   uvicorn    INFO:     127.0.0.1:PORT - "POST /v1/completions HTTP/1.1" 200 OK
//   llama.cpp  [M.SS.mmm.uuu ][I |W |E |D ]srv  log_server_r: request: POST /completion 127.0.0.1 200
//              slot print_timing: ...   then "prompt eval time = ..." / "eval time = ..." lines
//   Python     Traceback (most recent call last):   /   RuntimeError: CUDA error: out of memory
//   SGLang     [2025-03-11 16:21:31 TP0] Decode batch. #running-req: 25, ... #queue-req: 0
//              ([HH:MM:SS TP0] before 2025; "Decode batch," from 2026; a uvicorn line after it)
//   TGI        2025-05-01T01:31:02.842858Z  INFO text_generation_router::server: router/src/server.rs:2266: Connected
//   torch      [rank2]:[E219 08:58:31.402211871 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog ...
//              (c10 logging; "frame #0: ...", "*** SIGABRT received ..." crash dumps after it)
//   systemd    "vllm.service: Main process exited, code=exited, status=1/FAILURE" (journald)
// A line may be wrapped by journalctl ("Nov 30 00:36:54 host vllm[812]: ...") or carry an
// RFC 3339 timestamp first (docker logs -t, kubectl logs --timestamps); both are stripped. Such an
// outer time is the line's time even when the server printed its own: the outer one is complete
// (date, sub-second) and on one clock for every line, where vLLM's "MM-DD HH:MM:SS" is the
// container's local time and access lines have none.
//
// Hand-written matching, no std::regex: this runs once per line of multi-GB logs.
// The views in ParsedLine point into the line or into the parser's scratch buffer and are
// valid until the next Parse(). Not thread-safe; use one parser per thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "logs/vllm_stats.h"

namespace latdoc::logs {

enum class Level : uint8_t { kNone, kDebug, kInfo, kWarning, kError, kCritical };
std::string_view LevelName(Level l);

enum class Source : uint8_t {
  kUnknown, kVllm, kUvicorn, kLlamaCpp, kPython, kBinary, kEmpty, kSglang, kTgi, kTorch, kSystem,
  kCount
};
std::string_view SourceName(Source s);

enum class Event : uint8_t {
  kNone,
  kStats,               // vLLM V1/V0 stats line: stats is set
  kPrefixCacheV0,       // V0 "Prefix cache hit rate: GPU: ..": value is set
  kReceivedRequest,     // request logging (--enable-log-requests)
  kAddedRequest,
  kFinishedRequest,
  kAbortedRequest,
  kGeneratedResponse,   // --enable-log-outputs
  kRequestDetails,      // DEBUG "Request %s details: prompt: ..."
  kAccess,              // uvicorn access line or llama.cpp "request: POST /x addr 200"
  kPreemptionV0,        // V0 "Sequence group ... is preempted ...": value = cumulative count
  kStatsDisabled,       // "AsyncLLM created with api_server_count more than 1; disabling stats"
  kOtherStats,          // spec-decode / KV-connector metrics lines: stats volume, not parsed
  kLlamaPromptTiming,   // "prompt eval time = X ms / N tokens": value = ms, count = tokens
  kLlamaEvalTiming,     // "       eval time = X ms / N tokens"
  kTraceback,           // "Traceback (most recent call last):" or an indented frame line
  kException,           // "RuntimeError: ..." (the last line of a traceback)
  kSglangDecode,        // SGLang "Decode batch": sglang is set
  kSglangPrefill,       // SGLang "Prefill batch": sglang is set
  kTgiSuccess,          // TGI router "Success" of one request: value = queue_time in ms (or -1)
};

// SGLang's scheduler batch line (python/sglang/srt/managers/scheduler.py, log_decode_stats and
// log_prefill_stats). Values the line did not carry are -1.
struct SglangBatch {
  int64_t running = -1;        // #running-req
  int64_t queued = -1;         // #queue-req
  double token_usage = -1;     // token usage, fraction of the KV pool
  double gen_tps = -1;         // gen throughput (token/s), decode lines
  double input_tps = -1;       // input throughput (token/s), prefill lines (2025+)
  int64_t new_tokens = -1;     // #new-token, prefill lines
};

struct AccessLine {
  std::string_view method;   // "POST"
  std::string_view path;     // "/v1/completions"
  int status = 0;            // 200
};

struct ParsedLine {
  Source source = Source::kUnknown;
  Level level = Level::kNone;
  Event event = Event::kNone;
  // Time of the line in ns, in one of two domains: wall time from the start of the year
  // (vLLM "MM-DD HH:MM:SS", journald, RFC 3339) or llama.cpp's time since process start.
  std::optional<int64_t> ts_ns;
  bool ts_is_relative = false;      // llama.cpp "M.SS.mmm.uuu" timestamps
  std::string_view proc;            // "APIServer", "EngineCore_DP0" (vLLM process prefix)
  std::string_view file;            // "loggers.py" or "v1/metrics/loggers.py" (DEBUG level)
  int file_line = 0;
  std::string_view msg;             // the message after the prefix
  // Event payloads.
  VllmStats stats;
  SglangBatch sglang;
  AccessLine access;
  double value = 0;
  int64_t count = 0;
};

class LineParser {
 public:
  // Parses `line` (no '\n'). Never fails: an unrecognised line has source kUnknown, and a line
  // with NUL or many control bytes has source kBinary.
  const ParsedLine& Parse(std::string_view line);

 private:
  void ClassifyVllm();
  void ClassifyVllmMessage(std::string_view msg);
  void ParseAccess(std::string_view msg, bool llama);
  void ParseOther(std::string_view s);
  bool ParseSglang(std::string_view s, std::optional<int64_t> outer_ts);
  bool ParseTgi(std::string_view s);
  bool ParseLlamaJson(std::string_view s);
  bool ParseTorch(std::string_view s);

  // Whether a vLLM line at WARNING or above continues the message logged before it: vLLM's
  // formatter repeats the prefix on every line of a message, so a logged exception arrives as
  // many prefixed lines of one call (process, file:line and second alike). Updates the state.
  // REQUIRES: out_.level >= Level::kWarning.
  bool ContinuesMessage(std::string_view msg);

  ParsedLine out_;
  std::string scratch_;   // the line with ANSI escape sequences removed
  std::optional<int64_t> own_ts_;   // the vLLM line's own "MM-DD HH:MM:SS", for ContinuesMessage
  // The multi-line message being read (WARNING and above only).
  struct OpenMessage {
    bool open = false;
    std::string proc, file, first;   // `first`: the message's first line
    int line = 0;
    std::optional<int64_t> ts_ns;
    bool in_traceback = false;       // a "Traceback" header or frame came in it
    bool after_exception = false;    // and an exception line ("RuntimeError: ...")
  } message_;
};

// Day-of-year time for "MM-DD HH:MM:SS": ns since Jan 1 00:00 of a leap year (so 02-29 parses).
// nullopt if the fields are out of range.
std::optional<int64_t> MonthDayTimeNs(int month, int day, int hour, int minute, int second);

// "MM-DD HH:MM:SS" of a wall time from MonthDayTimeNs (labels only). Wraps past one year.
std::string WallLabel(int64_t ts_ns);
// "+M:SS.mmm" for llama.cpp relative times.
std::string RelativeLabel(int64_t ts_ns);

}  // namespace latdoc::logs
