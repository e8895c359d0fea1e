// Expert verdicts over server-log facts (logs/log_facts.h), split from log_rules.cc:
//   logs.engine_died          a traceback's root cause: OOM, NCCL/RCCL timeout, HIP/CUDA error,
//                             EngineDeadError, a fatal signal, the unit exiting (fail)
//   logs.admission_stalled    many wait, one or two run, KV has room, no prefill, for minutes
//   logs.no_progress          requests running and 0 tokens/s for N intervals, or stats lines
//                             stop with requests running until the log ends (fail)
//   logs.throughput_collapse  generation tok/s falls while the batch stays: preemption storm,
//                             prefix-cache hit rate collapsing
//   logs.prefill_starvation   prompt tok/s spikes are the intervals generation drops in
// A verdict appears only when it fires (no `ok` finding): each is a pattern, not a check every
// log passes. Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "logs/log_facts.h"
#include "rules/finding.h"

namespace latdoc::rules {

inline constexpr int64_t kAdmissionStallMinWaiting = 8;
inline constexpr int64_t kAdmissionStallMaxRunning = 2;
inline constexpr double kAdmissionStallMaxKvPct = 80.0;
inline constexpr int64_t kAdmissionStallMinNs = 60LL * 1000 * 1000 * 1000;
inline constexpr int64_t kAdmissionStallFailNs = 300LL * 1000 * 1000 * 1000;
inline constexpr uint64_t kNoProgressMinIntervals = 3;
inline constexpr size_t kCollapseMinIntervals = 3;
inline constexpr double kCollapseGenShare = 0.65;      // of the median rate before
inline constexpr double kStarvationPromptOverGen = 2.0; // a prompt spike: prompt tok/s >= 2x decode rate
inline constexpr double kStarvationGenShare = 0.7;     // generation below 70% of the decode-only rate
inline constexpr size_t kStarvationMinIntervals = 2;

// Appends the verdicts that fire to `out`.
void EvaluateLogVerdicts(const logs::LogFacts& facts, std::vector<Finding>& out);

}  // namespace latdoc::rules
