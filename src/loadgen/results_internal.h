// What the parts of SummarizeRun (loadgen/results.h) share, private to src/loadgen: the run's
// requests counted once (RunTally), the /metrics block with its TTFT split (results_server.cc)
// and the pieces of the terminal summary (results_text.cc), rendered from the LoadFacts.
// results.cc builds the facts and calls them in the order of the output. Pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/load_facts.h"
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

// The /metrics block ("server_metrics"): from the run's /metrics snapshots (its error when
// there are none) and the client's TTFTs, with the TTFT split computed here once.
// TTFT = client queue (open loop: scheduled -> sent, measured) + queue + prefill (server,
// measured) + network and front end (client - client queue - server, inferred).
ServerFacts SummarizeServer(const BenchRun& run, const RunTally& tally);

// The terminal summary, in the shape of vllm bench serve's, part by part, rendered from the
// facts: each returns whole lines.
std::string SummaryHeaderText(const BenchRun& run, const BenchOptions& options,
                              const LoadFacts& facts,
                              const servermetrics::ServerIdentity& identity);
std::string CountsText(const LoadFacts& facts, bool slo);
std::string LatencyText(const LoadFacts& facts, const BenchOptions& options);
std::string TokenCountsText(const LoadFacts& facts);
// The /metrics figures, then the TTFT split's lines when `with_breakdown` (a merge's figures are
// one shard's: its split is not shown). `client_ttft_measured`: some request got a first token.
std::string ServerMetricsText(const ServerFacts& server, bool with_breakdown,
                              bool client_ttft_measured);

}  // namespace latdoc::loadgen::results_internal
