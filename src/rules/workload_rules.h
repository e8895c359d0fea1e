// Verdicts on what a workload does to the server (docs/workloads.md, "Diagnosis"): TTFT that
// grows across the turns of multi-turn sessions, split into prefix-cache misses (history the
// server prefilled again), queueing and prefill compute. Pure: facts in, findings out.
#pragma once

#include <optional>
#include <vector>

#include "rules/finding.h"

namespace latdoc::rules {

struct TurnFacts {
  int turn = 0;                     // from 1
  double mean_ttft_ms = 0;
  double mean_prompt_tokens = 0;
  double mean_reused_tokens = 0;    // resent from the session's earlier request (the workload's)
  unsigned long long completed = 0;
};

struct MultiTurnFacts {
  std::vector<TurnFacts> turns;
  // The server's prefix cache over the run, in tokens (vLLM's vllm:prefix_cache_queries and
  // vllm:prefix_cache_hits deltas); nullopt: /metrics did not say.
  std::optional<double> cache_queries, cache_hits;
  // Server means over the run (its queue and prefill histograms), when known.
  std::optional<double> queue_mean_ms, prefill_mean_ms;
};

// The share of prompt tokens below which a cache that could have served `reusable_share`
// (resent tokens over prompt tokens) is said to miss: less than half of what was resendable.
inline constexpr double kMissFactor = 0.5;
// TTFT "grows" across turns when the last turn's mean is at least this many times the first's.
inline constexpr double kGrowthFactor = 1.5;

// "load.prefix_cache_misses" (warn): the sessions resent at least 20% of their prompt tokens
// and the server's cache hit less than kMissFactor of that share. "load.ttft_grows_across_turns"
// (info, or warn when no cache figure is known): TTFT grew by kGrowthFactor or more from the
// first turn to the last while the cache hit what it could: queueing and prefill of the new
// tokens. Nothing when there are fewer than 2 turns with completed requests.
std::vector<Finding> MultiTurnFindings(const MultiTurnFacts& f);

}  // namespace latdoc::rules
