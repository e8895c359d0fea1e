// LogFacts: everything `latdoc logs` learned from a server log, as plain data.
//
// Produced by LogAnalyzer (log_analyzer.h), judged by rules/log_rules.h, written to JSON by
// ToJson() for the report's charts. Times are ns in the log's own time domain (see
// ParsedLine::ts_ns); `*_label` fields hold the same instants as the log printed them.
// Values the log did not report are std::nullopt (JSON null), never 0.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace latdoc::logs {

inline constexpr std::string_view kLogFactsSchema = "latdoc.logs.facts/1";

// What a line is, for volume accounting. Each line has exactly one kind.
enum class LineKind : uint8_t {
  kStats,        // periodic stats lines (vLLM "Engine 000: Avg prompt throughput ...")
  kRequestLog,   // request logging: "Received request", "Added request", "Generated response"...
  kAccess,       // uvicorn access lines, llama.cpp "request: POST ..."
  kDebug,        // DEBUG level
  kWarning,      // WARNING level
  kError,        // ERROR/CRITICAL level, Python tracebacks
  kOther,        // other recognised lines (INFO startup messages, llama.cpp slot lines, blank)
  kUnknown,      // lines of no known format, binary garbage
  kCount
};
inline constexpr size_t kLineKinds = static_cast<size_t>(LineKind::kCount);
std::string_view LineKindName(LineKind k);

struct KindVolume {
  uint64_t lines = 0;
  uint64_t bytes = 0;
  uint64_t peak_lines_per_s = 0;   // the busiest wall-clock second (timestamped lines only)
};

struct InputInfo {
  std::string path;
  std::string compression;   // "none", "gzip", "zstd"
  uint64_t raw_bytes = 0;    // bytes read from the file (compressed, for compressed input)
  uint64_t bytes = 0;        // decompressed text bytes
  uint64_t lines = 0;
};

// A run of consecutive stats points that meet a condition (waiting > 0, KV usage >= 90%).
struct Stretch {
  int64_t start_ns = 0;      // where the first point's interval began (its time less that interval)
  int64_t end_ns = 0;        // time of the last point in the run
  int64_t dur_ns = 0;        // the intervals its points cover: end - start while they run on
  std::string start_label;
  std::string end_label;
  double peak = 0;           // max waiting, or max KV usage %
  uint64_t points = 0;
};

// A stats line that was due but did not come while the engine had work (vLLM logs one every
// VLLM_LOG_STATS_INTERVAL seconds, and stops only when idle): the process stalled.
struct StatsGap {
  int engine = 0;
  int64_t start_ns = 0;      // the last stats line before the gap
  int64_t end_ns = 0;        // the first one after it
  int64_t gap_ns = 0;        // end - start
  int64_t missing_ns = 0;    // gap - the usual interval
  std::string start_label;
  std::string end_label;
  int64_t running_before = 0;
  int64_t waiting_before = 0;
  uint64_t lines_between = 0;   // lines other than stats lines in between (the API server kept logging?)
  bool open_ended = false;      // no stats line came after it: the log ends inside the gap
};

// Stats series of one engine, for charts. Bounded: past kMaxSeriesPoints, neighbouring points
// are merged (throughputs and prefix hit rate averaged; running, waiting and KV usage take the
// max; preemptions summed) and `decimation` doubles.
struct EngineSeries {
  std::vector<int64_t> t_ns;
  std::vector<double> prompt_tps;
  std::vector<double> gen_tps;
  std::vector<int64_t> running;
  std::vector<int64_t> waiting;
  std::vector<double> kv_pct;
  std::vector<std::optional<double>> prefix_hit_pct;
  std::vector<int64_t> preemptions;
  uint64_t decimation = 1;
  size_t size() const { return t_ns.size(); }
};

struct EngineFacts {
  int engine = 0;                       // -1: "N Engines Aggregated"
  bool v0 = false;
  uint64_t stats_lines = 0;
  std::optional<double> interval_s;     // the usual spacing of stats lines (mode)
  bool interval_assumed = false;        // too few lines: assumed vLLM's default of 10 s
  int64_t busy_ns = 0;                  // time covered by points with running or waiting > 0
  int64_t queued_ns = 0;                // ... with waiting > 0
  uint64_t queued_points = 0;
  uint64_t queue_stretches = 0;
  std::optional<Stretch> longest_queue;
  int64_t kv_high_ns = 0;               // time with GPU KV cache usage >= kKvHighPct
  uint64_t kv_high_points = 0;
  uint64_t kv_high_stretches = 0;
  std::optional<Stretch> longest_kv_high;
  uint64_t saturation_points = 0;       // waiting grew while generation throughput fell
  std::string first_saturation_label;
  int64_t preemptions = 0;              // sum of "Preemptions: N" (V1 v0.12+)
  uint64_t preemption_points = 0;
  std::string first_preemption_label;
  int64_t max_running = 0;
  int64_t max_waiting = 0;
  double peak_kv_pct = 0;
  double peak_gen_tps = 0;
  double peak_prompt_tps = 0;
  std::optional<double> mean_gen_tps_busy;   // over points with work
  std::optional<double> last_prefix_hit_pct;
  std::optional<int64_t> max_swapped;        // V0
  // Points with requests running and no token made (prompt and generation throughput 0): the
  // longest run of them, and the lines logged just before it began ("path:line: text").
  std::optional<Stretch> longest_no_progress;
  std::vector<std::string> lines_before_no_progress;
  std::vector<StatsGap> gaps;                // longest first, at most kMaxGapsKept
  uint64_t gaps_total = 0;
  int64_t gaps_missing_ns = 0;
  EngineSeries series;
};

// Warnings and errors grouped by message template (message_template.h).
struct MessageGroup {
  std::string level;          // "WARNING", "ERROR", "CRITICAL"
  std::string tmpl;
  std::string example;        // the first message, cut at 300 bytes
  std::string where;          // "serving_chat.py:123" of the first, when the log says
  uint64_t count = 0;
  std::optional<int64_t> first_ns, last_ns;
  std::string first_label, last_label;
};

struct EndpointCount {
  std::string endpoint;       // "POST /v1/completions"
  uint64_t count = 0;
  uint64_t errors = 0;        // status >= 500
};

struct LlamaFacts {
  uint64_t prompt_timings = 0;
  uint64_t eval_timings = 0;
  int64_t prompt_tokens = 0;
  double prompt_ms = 0;
  int64_t gen_tokens = 0;
  double gen_ms = 0;
  std::optional<double> min_gen_tps;   // slowest request's generation tokens/s
  std::optional<double> max_gen_tps;
};

// SGLang's scheduler batch lines ("Decode batch" / "Prefill batch").
struct SglangFacts {
  uint64_t decode_batches = 0;
  uint64_t prefill_batches = 0;
  uint64_t queued_batches = 0;               // decode lines with #queue-req > 0
  int64_t max_running = 0;
  int64_t max_queued = 0;
  double peak_token_usage_pct = 0;           // "token usage" x 100
  std::optional<double> mean_gen_tps;        // over decode lines with requests running
  std::optional<double> peak_input_tps;      // prefill lines (2025+)
};

// TGI router "Success" lines, one per finished request.
struct TgiFacts {
  uint64_t requests = 0;
  std::optional<double> mean_queue_ms, max_queue_ms;
};

// A line that says the engine or a worker died, and what of: the first of each kind is kept.
struct FatalLine {
  std::string kind;     // "oom", "collective_timeout", "hip_error", "cuda_error", "engine_dead",
                        // "fatal_signal", "process_exited"
  std::string text;     // the message, cut at 300 bytes
  std::string where;    // "path:line" in the input
  std::optional<int64_t> t_ns;
  std::string label;    // its time as the log printed it, or "" without one
  bool cause = false;   // a root cause (OOM, collective timeout, HIP/CUDA error), not a consequence
};

// vLLM's startup line "non-default args: {...}" as a command line (logs/vllm_startup.h).
struct VllmLoggedArgs {
  std::vector<std::string> argv;   // {"vllm", "serve", flags...}; secrets left out
  std::string where;               // "path:line"
};

struct LogFacts {
  std::vector<InputInfo> inputs;
  uint64_t lines = 0;
  uint64_t bytes = 0;
  std::array<KindVolume, kLineKinds> volume{};
  // Lines per source format: vllm, uvicorn, llama.cpp, python, unknown, binary, empty.
  std::vector<std::pair<std::string, uint64_t>> sources;
  bool relative_time = false;             // llama.cpp time since start
  // Times from which a Feb 29 was left out of the log's calendar (LogFacts::Label adds it back).
  std::vector<int64_t> day_skips;
  // The label of a time of this log, on the calendar of its lines ("03-01", not "02-29", in a
  // log of a year without one). Every label of the facts is made so.
  std::string Label(int64_t t_ns) const;
  std::optional<int64_t> first_ns, last_ns;
  std::string first_label, last_label;
  std::optional<int64_t> duration_ns;
  // Volume over time: lines per kind per bucket of bucket_ns, from first_ns.
  int64_t volume_bucket_ns = 0;
  std::vector<std::array<uint64_t, kLineKinds>> volume_series;

  // Request logging (--enable-log-requests) and access logging.
  uint64_t received_request_lines = 0;
  uint64_t added_request_lines = 0;
  uint64_t finished_request_lines = 0;
  uint64_t aborted_request_lines = 0;
  uint64_t generated_response_lines = 0;
  uint64_t request_detail_lines = 0;
  uint64_t access_lines = 0;
  uint64_t uvicorn_access_lines = 0;   // of access_lines: vLLM's uvicorn (the rest: llama.cpp)
  std::array<uint64_t, 6> access_status_classes{};   // [1]=1xx ... [5]=5xx
  std::vector<EndpointCount> endpoints;              // busiest first, at most 32
  uint64_t debug_lines = 0;
  uint64_t debug_bytes = 0;   // of those lines (a DEBUG stats line is also in volume's stats row)
  bool debug_file_paths = false;    // "[v1/metrics/loggers.py:NN]": VLLM_LOGGING_LEVEL=DEBUG
  uint64_t stats_disabled_warnings = 0;

  std::vector<EngineFacts> engines;
  uint64_t v0_preemption_warnings = 0;
  std::optional<int64_t> v0_cumulative_preemptions;   // the highest count a warning printed

  std::vector<MessageGroup> messages;   // most frequent first, at most kMaxMessageGroups
  uint64_t message_groups_dropped = 0;  // lines whose template did not fit the table
  uint64_t error_lines = 0;             // ERROR/CRITICAL lines and exceptions (not frames)
  uint64_t warning_lines = 0;
  uint64_t tracebacks = 0;

  LlamaFacts llama;
  SglangFacts sglang;
  TgiFacts tgi;
  std::vector<FatalLine> fatal;          // in log order, first of each kind
  std::vector<std::string> last_lines;   // the log's last kLastLinesKept lines, "path:line: text"

  // vLLM's startup lines, the last of each.
  std::optional<std::string> vllm_version;   // "vLLM API server version 0.11.0"
  std::optional<VllmLoggedArgs> vllm_args;   // "non-default args: {...}"

  // Bad input, counted, not fatal.
  uint64_t unknown_lines = 0;
  uint64_t binary_lines = 0;
  uint64_t overlong_lines = 0;          // cut at the line limit
  uint64_t unterminated_last_lines = 0; // an input ending without '\n'
  std::vector<std::string> unknown_examples;   // "path:line: text", at most 5
};

inline constexpr double kKvHighPct = 90.0;
inline constexpr size_t kMaxSeriesPoints = 2000;
inline constexpr size_t kMaxGapsKept = 50;
inline constexpr size_t kMaxMessageGroups = 1000;
inline constexpr size_t kLastLinesKept = 5;

// The label of a time in the log's domain ("06-25 21:51:52" or "+1:02.345").
std::string TimeLabel(int64_t ts_ns, bool relative);

nlohmann::json ToJson(const LogFacts& facts);

// Why nothing can be said from `facts` when not one line of them was recognised (every input
// empty, or every line of no known format), as one line for standard error:
//   "empty.log: empty (no lines)"
//   "app.log (120 lines): no line of a known format (vLLM, uvicorn access, llama.cpp, Python
//    logging); first: app.log:1: <the line>"
// Empty when some line was recognised.
std::string NothingRecognised(const LogFacts& facts);

}  // namespace latdoc::logs
