// Rules over server-log facts (logs/log_facts.h): queueing, KV-cache pressure, preemptions,
// request/access/DEBUG logging volume, stalls (missing stats lines), errors.
//
// Pure functions: facts in, findings out; no I/O, no clocks. Ids are stable:
//   logs.queueing  logs.kv_pressure  logs.preemptions  logs.stats_gap  logs.errors
//   logs.request_logging_on  logs.access_log_on  logs.debug_logging  logs.stats_missing
// and the verdicts of log_verdicts.h (logs.engine_died, logs.admission_stalled, logs.no_progress,
// logs.throughput_collapse, logs.prefill_starvation).
// and, from vLLM's startup line "non-default args: {...}", the config.* ids of host_rules.h.
// A check that ran and found nothing returns an `ok` finding; a check with nothing to look at
// (no stats lines) returns nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "logs/log_facts.h"
#include "rules/finding.h"

namespace latdoc::rules {

// Thresholds, in one place so tests and docs can name them.
inline constexpr double kQueueWarnShare = 0.10;      // of busy time with requests waiting
inline constexpr double kQueueFailShare = 0.50;
inline constexpr double kRequestLogWarnLinesPerS = 5.0;
inline constexpr double kAccessLogWarnLinesPerS = 20.0;
inline constexpr double kDebugWarnShare = 0.10;      // of all lines
inline constexpr int64_t kStallFailNs = 60LL * 1000 * 1000 * 1000;
inline constexpr int64_t kPreemptionFailCount = 50;

// A vLLM log's "non-default args" line adds the config.* checks of host_rules on that command
// line (JudgeVllmArgv), judged against `sweep_knee_concurrency` as `latdoc doctor` does.
std::vector<Finding> EvaluateLogRules(const logs::LogFacts& facts,
                                      std::optional<int64_t> sweep_knee_concurrency = std::nullopt);

}  // namespace latdoc::rules
