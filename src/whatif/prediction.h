// Prediction: runs a calibration's model (calibration.h) with changed flags and load, in
// virtual time, and reports what bench would measure, with an interval.
//
// The interval covers the fit's parameter uncertainty and its error on the measured points:
// the model runs at the fitted parameters and at kDraws draws from the fit's covariance (each
// with its own prompts), and the lowest and highest of those runs are widened by the fit's RMS
// relative error for that kind of metric (TTFT, ITL/TPOT, throughput; E2EL the largest).
// Not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "whatif/calibration.h"

namespace latdoc::whatif {

inline constexpr int kDraws = 8;

struct WhatifRequest {
  std::vector<std::pair<std::string, std::string>> sets;  // ("max-num-seqs", "64")
  bool rate_mode = false;
  double load = 0;                 // concurrency or req/s; 0: not given (an error)
  std::optional<int> input_len, output_len;
  int requests = 0;                // 0: max(400, 8 x concurrency) (closed) or 400 (rate)
  double duration_s = 0;           // > 0: run this long instead (virtual time)
  uint64_t seed = 0;
};

// The flag names --set takes, in the order help lists them.
const std::vector<std::string>& SetKeys();

// Applies `sets` to the calibration's engine config. Errors: kInvalidArgument for an unknown
// key or a bad value ("--set max-num-seqs=abc: expected an integer >= 1"); kUnimplemented when
// the change is not predictable from this calibration, with the reason (gpu-memory-utilization
// without the GPU's memory and what the weights take).
StatusOr<sim::EngineConfig> ApplySets(const Calibration& c,
                                      const std::vector<std::pair<std::string, std::string>>& sets);

struct Interval {
  double value = 0, lo = 0, hi = 0;
};

struct Prediction {
  sim::EngineConfig engine;
  Workload workload;
  std::vector<std::pair<std::string, Interval>> metrics;  // bench's keys, in bench's order
  std::optional<MeasuredPoint> measured;   // the measured step this prediction matches
  int max_running = 0;
  double max_kv_cache_usage = 0;
  uint64_t preemptions = 0;
  double wall_s = 0;                        // how long the prediction took
  std::vector<std::string> notes;

  const Interval* Get(std::string_view key) const;
};

// Errors: kInvalidArgument for bad --set values or a load the model cannot run; kUnimplemented
// for a change that is not predictable (ApplySets); kUnavailable for an unusable calibration
// (its refusal).
StatusOr<Prediction> Predict(const Calibration& c, const WhatifRequest& r);

nlohmann::ordered_json PredictionJson(const Calibration& c, const WhatifRequest& r, const Prediction& p);
std::string PredictionText(const Calibration& c, const WhatifRequest& r, const Prediction& p);

}  // namespace latdoc::whatif
