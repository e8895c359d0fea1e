// The results of a load test: vLLM-bench-compatible metrics, failures by reason, goodput, and
// the split of TTFT into the server's queue and prefill time and the rest (network and front
// end), from the /metrics deltas. Pure: records in, JSON and text out.
//
// Field names follow `vllm bench serve` where the metric is the same (mean_ttft_ms,
// p99_itl_ms, request_throughput, output_throughput, total_token_throughput, request_goodput,
// completed, failed, duration), plus "schema": "latdoc.bench/1".
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
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

struct ResultOptions {
  SloSpec slo;
  std::optional<double> max_error_rate;  // fraction 0..1 of failed requests allowed
};

struct BenchSummary {
  nlohmann::ordered_json json;
  std::string text;
  bool slo_missed = false;
  bool error_rate_missed = false;
};

BenchSummary SummarizeRun(const BenchRun& run, const BenchOptions& options,
                          const ResultOptions& result_options);

// "http://10.0.0.5:8000 (its /metrics in vLLM's names)": the server's URL without any user:
// password part, and the server whose metric names its /metrics answered in (`server_id`, as
// servermetrics::ServerSnapshot::server; "" leaves it out). Safe to print on a terminal.
std::string ServerLabel(const std::string& url, const std::string& server_id);

// One JSON line per request (--save-requests): times in ms from the start of the run.
std::string RequestsJsonl(const BenchRun& run);

}  // namespace latdoc::loadgen
