// Fleet: what Prometheus holds about every replica of an inference service, read back with
// PromQL and turned into the typed facts the fleet rules judge (rules/fleet_rules.h).
//
// A replica is one value of the replica label (`instance` by default) on the vLLM, SGLang or TGI
// series that the selector matches. Per replica, over the window W ending at the evaluation
// time (vLLM's names below; each query joins the dialects' names with `or`, see kDialects in
// fleet.cc):
//   request rate     sum by (R) (rate(vllm:e2e_request_latency_seconds_count{S}[W]))
//   TTFT p50, p99    histogram_quantile(q, sum by (R, le) (rate(vllm:time_to_first_token_seconds_bucket{S}[W])))
//   ITL p50, p99     the same over vllm:inter_token_latency_seconds (vllm:time_per_output_token_seconds,
//                    older vLLM, where the newer is absent)
//   queue share      mean vllm:request_queue_time_seconds / mean TTFT
//   running, waiting avg_over_time of vllm:num_requests_running / _waiting
//   KV usage         avg_over_time of vllm:kv_cache_usage_perc (vllm:gpu_cache_usage_perc, older)
//   preemptions      increase(vllm:num_preemptions_total[W])
//   up               up{S} (targets down), and a range query of vllm:num_requests_running over
//                    the window (replicas whose series stopped)
//   exporter         latdoc_exporter_info{target} maps a `latdoc exporter` to the replica whose
//                    host:port its --target names (or, with a replica label other than
//                    `instance` that the exporter's series carry too, e.g. `pod`, by that label); max_over_time(latdoc_finding{severity=~
//                    "warn|fail"}[W]) gives its findings.
//   heat map         (over_time only) the p99s again as range queries over the window, a point every window/60
//                    (at least 1 s), each over a rate window of max(3 steps, window/10).
// kQSeen runs first, and tells which dialects the fleet speaks; then the other queries, for
// those dialects only, all at once (prometheus_client.h). No recording rule is needed.
// Thread safety: none needed (one call, blocking).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fleet/prometheus_client.h"
#include "rules/fleet_rules.h"

namespace latdoc::fleet {

struct FleetOptions {
  std::string prometheus_url;
  std::string bearer_token;        // for Prometheus; never printed
  std::string selector;            // "{job=\"vllm\"}", or "" / "{}" for every vLLM series
  std::string exporter_selector;   // the same for latdoc exporters' series
  std::string replica_label = "instance";
  int64_t window_ns = 15LL * 60 * 1'000'000'000;
  int64_t timeout_ns = 30'000'000'000;
  std::optional<double> at_unix_s;  // evaluation time; nullopt: now
  // Also the p99s over time (the heat map): two range queries that cost most of the query
  // time on a large fleet (0.8 s of 1.2 s for 200 replicas over 15 min).
  bool over_time = false;
};

struct FleetFacts {
  std::string prometheus;          // the base URL asked
  std::string selector;            // as given, braces included ("{}" when none)
  std::string replica_label;
  int64_t window_ns = 0;
  double at_unix_s = 0;
  std::vector<rules::ReplicaFacts> replicas;   // sorted by replica
  // The heat map (over_time only; else empty): each replica's p99 TTFT and ITL (seconds) at
  // each of `times_unix_s` (the range query's steps), over a rate window of
  // heat_rate_window_s ending there; nullopt where it had no traffic.
  std::vector<double> times_unix_s;
  double heat_rate_window_s = 0;
  std::map<std::string, std::vector<std::optional<double>>> ttft_p99_over_time_s;
  std::map<std::string, std::vector<std::optional<double>>> itl_p99_over_time_s;
  size_t queries = 0;
  int64_t query_ns = 0;            // wall time of the queries
};

// The matchers inside a selector's braces: "{job=\"vllm\"}" -> "job=\"vllm\"", "" or "{}" -> "".
// Errors (kInvalidArgument): no braces, unbalanced quotes or braces.
StatusOr<std::string> SelectorMatchers(std::string_view flag, std::string_view selector);

// "vllm:x" with matchers `m`: "vllm:x{m}".
std::string WithMatchers(std::string_view metric, std::string_view m);

// The queries CollectFleet asks, in a fixed order (FleetQueryIndex below).
enum FleetQueryIndex {
  kQSeen, kQUp, kQRate, kQTtft50, kQTtft99, kQItl50, kQItl99, kQQueueShare, kQRunning,
  kQWaiting, kQKv, kQPreemptions, kQExporterInfo, kQExporterFindings, kQTtft99Range,
  kQItl99Range, kQCount
};
// `dialects`: a bit per server dialect (vLLM, SGLang, TGI, in that order) whose queries to
// build; the others' are left out, and a query no dialect asked for is "" (not run).
constexpr uint32_t kAllDialects = 0x7;
StatusOr<std::vector<PromQuery>> FleetQueries(const FleetOptions& o, double at_unix_s,
                                              uint32_t dialects = kAllDialects);
// The dialects whose series kQSeen's answer names (its `__name__` label).
uint32_t DialectsSeen(const std::vector<PromSeries>& seen);

// Joins the answers (in FleetQueryIndex order) into per-replica facts. Errors: no replica at
// all (kInvalidArgument: the selector matched no series of a known server in the window).
StatusOr<FleetFacts> AssembleFleet(const FleetOptions& o, double at_unix_s,
                                   const std::vector<PromQuery>& queries,
                                   const std::vector<std::vector<PromSeries>>& answers);

// Queries Prometheus and assembles the facts.
StatusOr<FleetFacts> CollectFleet(const FleetOptions& o);

// A window for people: "15m", "1h", "20s" (whole seconds).
std::string WindowText(int64_t window_ns);

// "http://10.0.0.7:8000/v1" -> "10.0.0.7:8000" (the `instance` Prometheus gives that target).
std::string HostPortOf(std::string_view url);

}  // namespace latdoc::fleet
