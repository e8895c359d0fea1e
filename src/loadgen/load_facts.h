// LoadFacts: what one load test (a bench run) measured, as values: vLLM bench's figures
// (completed, failed, duration, throughputs, goodput, the latency statistics of TTFT, TPOT, ITL
// and E2EL), latdoc's additions (failures by reason, the client's own load, TCP counters), the
// server's /metrics figures with the TTFT split computed once, and the verdicts (SLO, error
// rate, problems). loadgen/results.h builds it from a run; rules, compare, whatif and the
// renderers read it.
//
// One ToJson writes the bench JSON (schema latdoc.bench/1) with vLLM's key names, order and
// values; LoadFactsFromJson reads one back (a saved file, a diagnosis's "bench"). Reading: a key
// that is missing or null is "not measured" (std::nullopt, or the field's default where the
// field is not optional); a key of the wrong type is an error naming it ("server_metrics.
// queue_mean_ms: expected a number"); keys it does not know are ignored (a bench file carries
// additions: "runs", "merged", "stream_kinds"...). FromJson(ToJson(x)) == x.
//
// The key names live in load_facts.cc only: readers of other documents that reuse the bench
// names (a sweep step's p99_ttft_ms, a calibration point's) take them from the constants
// below. Plain values; no shared state; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace latdoc::loadgen {

// Key names of the bench JSON that other documents reuse (defined in load_facts.cc).
namespace keys {
extern const char* const kMeanTtftMs;
extern const char* const kMedianTtftMs;
extern const char* const kP99TtftMs;
extern const char* const kMeanTpotMs;
extern const char* const kMedianTpotMs;
extern const char* const kP99TpotMs;
extern const char* const kMeanItlMs;
extern const char* const kMedianItlMs;
extern const char* const kP99ItlMs;
extern const char* const kMeanE2elMs;
extern const char* const kMedianE2elMs;
extern const char* const kP99E2elMs;
extern const char* const kRequestThroughput;
extern const char* const kOutputThroughput;
extern const char* const kTotalTokenThroughput;
extern const char* const kRequestGoodput;
extern const char* const kCompleted;
extern const char* const kFailed;
extern const char* const kServerMetrics;
// server_metrics' figures, also in a sweep step's "server_metrics".
extern const char* const kMaxRunning;
extern const char* const kMaxWaiting;
extern const char* const kMaxKvCacheUsage;
extern const char* const kPreemptions;
extern const char* const kQueueMeanMs;
extern const char* const kPrefillMeanMs;
}  // namespace keys

// p99_ttft_ms from ("p99", "ttft"): vLLM's name of a latency statistic.
std::string StatKey(std::string_view stat, std::string_view metric);

// One percentile of a latency: `percent` 99 is p99, 99.9 is p99.9.
struct Percentile {
  double percent = 0;
  std::optional<double> ms;  // nullopt: no samples
  bool operator==(const Percentile&) const = default;
};

// The statistics of one latency metric, in ms, as vllm bench serve names them (mean_<m>_ms,
// median_<m>_ms, std_<m>_ms, p<P>_<m>_ms for the percentiles asked, max_<m>_ms). nullopt: no
// samples (JSON null), or the key was absent.
struct LatencyStats {
  std::optional<double> mean_ms, median_ms, std_ms;
  std::vector<Percentile> percentiles;  // in the order of the JSON (the order asked)
  std::optional<double> max_ms;

  // The percentile `percent`, or nullopt when not reported (or no samples).
  std::optional<double> At(double percent) const;
  std::optional<double> p99_ms() const { return At(99); }
  bool operator==(const LatencyStats&) const = default;
};

// Per-request samples of the ok requests (ms, to the microsecond): "per_request".
struct PerRequestSamples {
  std::vector<double> ttft_ms, tpot_ms, e2el_ms;
  bool operator==(const PerRequestSamples&) const = default;
};

// TCP counters of the run's connections ("tcp"), from TCP_INFO.
struct TcpFacts {
  uint64_t connections = 0, segs_out = 0, retrans_segs = 0;
  std::optional<double> retrans_share;
  uint64_t rcv_ooo_packets = 0;
  std::optional<double> srtt_max_ms;
  std::optional<int64_t> pmtu_min_bytes, snd_mss_min_bytes;
  std::string worst_ca_state;  // the worst congestion state seen ("open": none)
  bool operator==(const TcpFacts&) const = default;
};

// One load thread's own load ("client_load.per_thread").
struct ThreadLoadFacts {
  double cpu_s = 0, wall_s = 0, busy = 0;  // busy: share 0..1 of its measured phase
  uint64_t events = 0;
  std::optional<double> events_per_cpu_s;
  uint64_t reads = 0, late_reads = 0;
  bool saturated = false;
  bool operator==(const ThreadLoadFacts&) const = default;
};

// The client's own load over its threads ("client_load").
struct ClientLoadFacts {
  double cpu_s = 0;
  uint64_t events = 0;
  std::optional<double> events_per_cpu_s;
  uint64_t reads = 0, late_reads = 0;
  std::optional<double> late_read_share;
  double late_read_ms = 0;
  int64_t saturated_threads = 0;
  std::vector<ThreadLoadFacts> per_thread;
  bool operator==(const ClientLoadFacts&) const = default;
};

// Which server answered, and how latdoc knows ("server_kind").
struct ServerKindFacts {
  std::string id;                   // servermetrics::ServerKindId
  std::optional<std::string> name;  // null: unknown
  std::string evidence;
  bool operator==(const ServerKindFacts&) const = default;
};

// One sample of the server's gauges ("server_metrics.timeline"), t_s from the run's start.
struct TimelinePoint {
  double t_s = 0;
  std::optional<double> running, waiting, kv_cache_usage;
  bool operator==(const TimelinePoint&) const = default;
};

// The split of the client's mean TTFT ("server_metrics.ttft_breakdown"), ms, means over the run:
// client TTFT = client queue + server queue + prefill + other server + network and front end.
// vLLM (and an unknown server read in vLLM's names) measures every part but the network and
// front end, which is inferred; SGLang, TGI and llama.cpp measure some parts, and
// `not_measurable` says which they do not (set only for them).
struct TtftSplit {
  double client_ttft_ms = 0;
  std::optional<double> client_queue_ms;  // absent in files of an older latdoc
  std::optional<double> server_ttft_ms, queue_ms, prefill_ms;
  std::optional<double> network_and_front_end_ms, server_other_ms;
  // No server TTFT to subtract: what the metrics do not time, as one inferred rest.
  std::optional<double> unsplit_ms;
  std::optional<std::string> not_measurable;
  std::string note;
  bool operator==(const TtftSplit&) const = default;
};

// The server's figures over the run, from the deltas of its /metrics ("server_metrics").
// When `metrics_available` is false only `error` may be set.
struct ServerFacts {
  bool metrics_available = false;
  std::optional<std::string> error;        // why not available
  std::optional<std::string> server;       // the dialect its /metrics answered in
  std::optional<std::string> server_kind;  // servermetrics::ServerKindId
  std::optional<double> ttft_mean_ms, ttft_p50_ms, ttft_p99_ms, queue_mean_ms, prefill_mean_ms,
      decode_mean_ms, itl_mean_ms, e2e_mean_ms;
  // A counter went down between the first and the last scrape: figures cover only the time since.
  std::optional<bool> server_restarted;
  std::optional<double> preemptions, requests_finished;
  std::optional<double> max_running, max_waiting, max_kv_cache_usage;
  std::optional<std::vector<TimelinePoint>> timeline;
  std::optional<TtftSplit> ttft_breakdown;
  bool operator==(const ServerFacts&) const = default;
};

// The --slo verdict ("slo").
struct SloResult {
  double good_percent = 0, target_percent = 99;
  bool met = true;
  bool operator==(const SloResult&) const = default;
};

struct LoadFacts {
  // What was asked (vLLM's keys).
  std::string schema = "latdoc.bench/1";
  std::string date;  // "20261130-021640", local time
  std::optional<std::string> endpoint_type, backend, model_id;
  uint64_t num_prompts = 0;
  // Requests per second; +infinity is "inf" (every request at once, or a closed loop).
  std::optional<double> request_rate;
  std::optional<double> burstiness;
  std::optional<int64_t> max_concurrency;  // null: an open loop without a cap

  // Counts and rates.
  std::optional<double> duration_s;
  uint64_t completed = 0, failed = 0;
  int64_t total_input_tokens = 0, total_output_tokens = 0;
  std::optional<double> request_throughput;      // req/s
  std::optional<double> request_goodput;         // req/s; null without --slo
  std::optional<double> output_throughput;       // tok/s
  std::optional<double> total_token_throughput;  // tok/s
  std::optional<int64_t> max_concurrent_requests;

  // Latency statistics; nullopt: not in --percentile-metrics (the keys are absent).
  std::optional<LatencyStats> ttft, tpot, itl, e2el;
  std::optional<PerRequestSamples> per_request;

  // latdoc's accounting.
  bool partial = false;
  std::optional<std::string> partial_reason;
  std::optional<uint64_t> sent, not_sent, cancelled;
  std::map<std::string, uint64_t> failures;            // outcome name -> count
  std::vector<std::string> errors_sample;              // the first 5
  std::map<std::string, uint64_t> token_count_method;  // method name -> count
  uint64_t token_count_mismatches = 0;
  std::optional<LatencyStats> client_queue;  // open loop: sent - scheduled
  uint64_t warmup_requests = 0;
  std::optional<uint64_t> connections_opened;
  std::optional<TcpFacts> tcp;
  std::optional<double> client_cpu_s;
  std::optional<uint64_t> client_threads;
  std::optional<ClientLoadFacts> client_load;
  std::optional<int64_t> start_mono_ns;  // CLOCK_MONOTONIC at the start
  std::optional<ServerKindFacts> server_kind;
  ServerFacts server;  // "server_metrics"

  // Verdicts.
  std::optional<SloResult> slo;          // set with --slo
  std::optional<double> error_rate;      // fraction 0..1
  std::optional<double> max_error_rate;  // fraction; null: not judged
  std::vector<std::string> problems;
  // loadgen/validation.h's block, as Validation::Json() writes it.
  nlohmann::ordered_json validation;

  bool operator==(const LoadFacts&) const = default;
};

// The bench JSON of `f`: every field in vLLM's key order, then latdoc's.
nlohmann::ordered_json ToJson(const LoadFacts& f);
nlohmann::ordered_json ToJson(const ServerFacts& s);
nlohmann::ordered_json ToJson(const LatencyStats& s, std::string_view metric);

// Errors: kInvalidArgument "KEY: expected ..." (KEY a dotted path inside the document).
StatusOr<LoadFacts> LoadFactsFromJson(const nlohmann::ordered_json& j);
StatusOr<ServerFacts> ServerFactsFromJson(const nlohmann::ordered_json& j);
// The statistics of `metric` in `j` ("mean_<metric>_ms", ...); nullopt when `j` has none of
// them. `where` prefixes the key in an error.
StatusOr<std::optional<LatencyStats>> LatencyStatsFromJson(const nlohmann::ordered_json& j,
                                                           std::string_view metric,
                                                           std::string_view where = "");

}  // namespace latdoc::loadgen
