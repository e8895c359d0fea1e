// Verdicts on what a workload does to the server (docs/workloads.md, "Diagnosis"): TTFT that
// grows across the turns of multi-turn sessions, split into prefix-cache misses (history the
// server prefilled again), queueing and prefill compute. Pure: facts in, findings out.
#pragma once

#include <optional>
#include <vector>

#include "loadgen/sessions.h"
#include "rules/finding.h"

namespace latdoc::rules {

using loadgen::MultiTurnFacts;
using loadgen::TurnFacts;

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
