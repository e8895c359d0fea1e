// Results that check themselves: the "validation" block of a bench (or sweep step) result.
//
// Each check says whether the run measured what it was asked to measure, with its numbers:
//   rate              open loop: sends per second achieved vs --request-rate
//   concurrency       closed loop: the most requests in flight vs --concurrency
//   schedule_lag      open loop: p99 of (sent - scheduled), the client's own lateness; a
//                     --max-concurrency cap makes waiting for a slot intended (client queue), so
//                     the lag is then judged on the sends that found a free slot at once only
//   client_saturation the load threads' saturation and late reads (runner.h ThreadLoad)
//   token_counts      requests whose final usage disagreed with the counted chunks
//   warmup            warm-up requests excluded; with none, whether the first request was cold
//   steady_state      the span in which the offered concurrency was actually held
//   impossible        ok requests with a negative or zero TTFT, an E2EL below the TTFT, chunks
//                     out of order: a clock or accounting bug, never a server property
// A check's status is "ok", "warn" or "fail"; the block's status is the worst of them. Pure:
// records in, JSON out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/load_facts.h"
#include "loadgen/runner.h"

namespace latdoc::loadgen {

enum class CheckStatus { kOk, kWarn, kFail };
std::string_view CheckStatusName(CheckStatus s);  // "ok", "warn", "fail"

struct ValidationCheck {
  std::string name;       // "rate", "concurrency", ...
  CheckStatus status = CheckStatus::kOk;
  std::string message;    // one line, with the numbers
  nlohmann::ordered_json numbers = nlohmann::ordered_json::object();
};

struct Validation {
  CheckStatus status = CheckStatus::kOk;
  std::vector<ValidationCheck> checks;
  // {"status": "fail", "failed": ["concurrency"], "warned": [...], "checks": [{"name", "status",
  // "message", ...numbers}]}
  nlohmann::ordered_json Json() const;
  // "Validation: FAIL concurrency: ...; WARN ..." for the checks not ok; "" when all are ok.
  std::string Text() const;
};

// Thresholds (documented in docs/validation.md).
inline constexpr double kRateWarnShortfall = 0.10;   // achieved below requested by 10%...
inline constexpr double kRateFailShortfall = 0.50;   // ...or by half
inline constexpr double kLagWarnMs = 5.0;             // schedule lag p99
inline constexpr double kLagFailMs = 25.0;
inline constexpr double kLateReadWarnShare = 0.01;
inline constexpr double kLateReadFailShare = 0.10;
inline constexpr uint64_t kMinReadsToFail = 500;     // below it, late reads only warn
inline constexpr double kMismatchFailShare = 0.05;
inline constexpr double kSteadyWarnShare = 0.5;      // held for less than half the run

Validation ValidateRun(const BenchRun& run, const BenchOptions& options);

// A sweep step's block over the rounds of its measured window: the worst status, and each
// round's checks that are not ok (with "round": its index in the window, from 0).
nlohmann::ordered_json MergeValidations(const std::vector<Validation>& rounds);

// --num-runs N: the run-to-run variation of the headline metrics over N results of the same
// load (SummarizeRun's JSON, in run order). Writes into `last` (the last run's JSON, the one
// written out): "runs" = {"num_runs", "metrics": {name: {"values", "mean", "stdev", "cv"}},
// "per_run": [{"validation": status}]}, where cv is the sample standard deviation over the mean
// (null when the mean is 0 or a run lacks the metric); and the worst validation of all runs as
// "validation" (a check that failed in an earlier run is added as "run I: name"). Returns the
// terminal table.
inline const char* const kHeadlineMetrics[] = {
    keys::kMeanTtftMs,        keys::kP99TtftMs,        keys::kMeanTpotMs,          keys::kP99TpotMs,
    keys::kMeanItlMs,         keys::kP99ItlMs,         keys::kMeanE2elMs,          keys::kP99E2elMs,
    keys::kRequestThroughput, keys::kOutputThroughput, keys::kTotalTokenThroughput};
std::string AddRunVariation(const std::vector<nlohmann::ordered_json>& runs,
                            nlohmann::ordered_json* last);

}  // namespace latdoc::loadgen
