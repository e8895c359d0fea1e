// What the parts of SummarizeRun (loadgen/results.h) share, private to src/loadgen: the run's
// requests counted once (RunTally), the /metrics block with its TTFT split (results_server.cc)
// and the pieces of the terminal summary (results_text.cc). results.cc builds the JSON and
// calls them in the order of the output. Pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/results.h"
#include "loadgen/runner.h"
#include "servermetrics/server_dialect.h"

namespace latdoc::loadgen::results_internal {

// The requests of a run, counted and timed: latencies of the ok requests (and the TTFT and
// inter-token latencies of streams cut by a stop after their first token), in ns.
struct RunTally {
  std::vector<int64_t> ttfts, tpots, itls, e2els, queue_ns;
  std::map<std::string, uint64_t> failures;  // OutcomeName -> count
  std::map<std::string, uint64_t> methods;   // TokenMethodName -> count, of the ok requests
  uint64_t completed = 0, failed = 0, mismatches = 0, good = 0;
  // Requests still queued on this side when the run was stopped never reached the server: not
  // failures (they would trip --max-error-rate on every Ctrl-C), not sent.
  uint64_t not_sent = 0;
  int64_t in_tokens = 0, out_tokens = 0;
  std::vector<std::string> first_errors;  // the first 5
};

// A value, or JSON null.
inline nlohmann::ordered_json Opt(std::optional<double> v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// The /metrics block of the JSON ("server_metrics") and the TTFT breakdown's terminal lines.
struct ServerSection {
  nlohmann::ordered_json json;
  std::string breakdown_text;
};

// From the run's /metrics snapshots (its error when there are none) and the client's TTFTs.
// TTFT = client queue (open loop: scheduled -> sent, measured) + queue + prefill (server,
// measured) + network and front end (client - client queue - server, inferred).
ServerSection SummarizeServer(const BenchRun& run, const RunTally& tally);

// The terminal summary, in the shape of vllm bench serve's, part by part: each returns whole
// lines. The latency and /metrics parts read their figures back from the JSON (`bench_json`,
// `server_json`: a merge passes its shards' "server_metrics" in as it is), so text and JSON agree.
std::string SummaryHeaderText(const BenchRun& run, const BenchOptions& options, uint64_t cancelled,
                              const nlohmann::ordered_json& server_json,
                              const servermetrics::ServerIdentity& identity);
std::string CountsText(const RunTally& tally, double dur_s, bool slo);
std::string LatencyText(const nlohmann::ordered_json& bench_json, const BenchOptions& options);
std::string TokenCountsText(const RunTally& tally);
std::string ServerMetricsText(const nlohmann::ordered_json& server_json, const std::string& breakdown_text);

}  // namespace latdoc::loadgen::results_internal
