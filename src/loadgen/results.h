// The results of a load test: vLLM-bench-compatible metrics, failures by reason, goodput, and
// the split of TTFT into the server's queue and prefill time and the rest (network and front
// end), from the /metrics deltas. Pure: records in, LoadFacts (loadgen/load_facts.h), its JSON
// and the terminal text out.
//
// Field names follow `vllm bench serve` where the metric is the same (mean_ttft_ms,
// p99_itl_ms, request_throughput, output_throughput, total_token_throughput, request_goodput,
// completed, failed, duration), plus "schema": "latdoc.bench/1".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "loadgen/load_facts.h"
#include "loadgen/runner.h"

namespace latdoc::loadgen {

// --slo ttft:MS,tpot:MS,e2el:MS. A request is good when it meets every given bound (inclusive,
// as vLLM's goodput); the run meets the SLO when at least `percent` of its requests are good.
struct SloSpec {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  double percent = 99.0;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};
StatusOr<SloSpec> ParseSlo(std::string_view text);

// "SLO missed: 93.0% of requests met ttft<=100 ms, tpot<=50 ms (needed 99%)"
std::string SloMissText(const SloSpec& slo, double good_percent);

// The failed requests of a run (or a sweep step, or the canary), by reason, as the one line on
// standard error says them. Requests cancelled by a stop (Ctrl-C, SIGTERM) are the user's
// doing, not the server's: they are counted apart and left out of `requests` and `failed`.
struct FailureTally {
  uint64_t requests = 0;    // sent, less those cancelled by a stop
  uint64_t failed = 0;      // of `requests`
  uint64_t cancelled = 0;   // cut by a stop
  std::map<std::string, uint64_t> by_reason;  // OutcomeName -> count, "cancelled" left out
  std::string first_error;  // "reset: Connection reset by peer"; empty when none is known

  double rate() const { return requests ? double(failed) / double(requests) : 0; }
  // "12 of 400 requests failed (10 reset, 2 cut short)"; `noun` names what was sent.
  std::string Text(std::string_view noun = "requests") const;
  void Add(const FailureTally& other);
};
// From counts by outcome name (as the JSON's "failures") and the number of requests sent.
FailureTally TallyFailures(const std::map<std::string, uint64_t>& failures, uint64_t sent);
// From SummarizeRun's JSON ("failures", "sent", "errors_sample").
FailureTally TallyFailures(const nlohmann::ordered_json& bench_json);

// "error rate 46.0% > --max-error-rate 10%" (`rate` and `max_rate` fractions).
std::string ErrorRateMissText(double rate, double max_rate);

struct ResultOptions {
  SloSpec slo;
  // Fraction 0..1 of failed requests allowed (requests cancelled by a stop left out); nullopt:
  // not judged.
  std::optional<double> max_error_rate;
  // `latdoc merge`: the "server_metrics" block to write as it is (one shard's, from its own
  // /metrics scrapes) in place of one made from the run's snapshots; the terminal summary shows
  // its figures (not its TTFT breakdown, which is that shard's alone).
  std::optional<ServerFacts> server_metrics;
};

struct BenchSummary {
  LoadFacts facts;
  nlohmann::ordered_json json;  // ToJson(facts); callers may add keys to it (merge, bench)
  std::string text;
  bool slo_missed = false;
  bool error_rate_missed = false;
  FailureTally failures;
  // What the run missed, one line each (SloMissText, ErrorRateMissText); also the JSON's
  // "problems".
  std::vector<std::string> problems;
};

BenchSummary SummarizeRun(const BenchRun& run, const BenchOptions& options,
                          const ResultOptions& result_options);

// "http://10.0.0.5:8000 (its /metrics in vLLM's names)": the server's URL without any user:
// password part, and the server whose metric names its /metrics answered in (`server_id`, as
// servermetrics::ServerSnapshot::server; "" leaves it out). Safe to print on a terminal.
std::string ServerLabel(const std::string& url, const std::string& server_id);

// The client's own load over its threads (the JSON's "client_load").
struct ClientLoadSummary {
  double cpu_s = 0;
  uint64_t events = 0, reads = 0, late_reads = 0;
  int saturated = 0;  // threads busy at least kSaturatedBusy of their measured phase
};
ClientLoadSummary SummarizeClientLoad(const std::vector<ThreadLoad>& threads);
ClientLoadFacts ClientLoadFactsOf(const std::vector<ThreadLoad>& threads);
// "Client: 2 threads, 1.84 CPU-s, 312000 events per CPU-s, 0.1% of reads late (>1 ms)", then
// one "warning: client thread I of N saturated ..." line per saturated thread.
std::string ClientLoadText(const std::vector<ThreadLoad>& threads);
std::string ClientLoadText(const ClientLoadFacts& client_load);

// One JSON line per request (--save-requests): times in ms from the start of the run.
std::string RequestsJsonl(const BenchRun& run);

}  // namespace latdoc::loadgen
