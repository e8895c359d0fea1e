// A sweep document (`latdoc sweep --json`, schema latdoc.sweep/1, as loadgen/sweep_report.h
// writes it) read back as values: the latency curve and its knee. The one reader of a sweep
// file: the reports draw the curve from it, and `doctor --sweep FILE` judges --max-num-seqs
// against its knee. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace latdoc::loadgen {

struct SweepCurve {
  bool rate_mode = false;  // the steps are request rates (req/s), not concurrencies
  std::optional<std::string> model_id;
  struct Step {
    double load = 0;  // the step's concurrency, or its request rate
    std::optional<double> p99_ttft_ms, p99_itl_ms, p99_e2el_ms;
    std::optional<double> output_throughput;  // tok/s
    bool operator==(const Step&) const = default;
  };
  std::vector<Step> steps;  // by ascending load
  // The load at the latency knee, and whether the sweep reached it inside its range (nullopt:
  // the document does not say).
  std::optional<double> knee;
  std::optional<bool> knee_reached;
  // The batch size the knee stands for (--max-num-seqs): the knee's concurrency, or in rate
  // mode the sweep's own advice (recommendations.max_num_seqs.value).
  std::optional<double> knee_batch;
  bool operator==(const SweepCurve&) const = default;
};

// Reads `doc`; `name` (a file name) prefixes an error. The knee is knee.concurrency or
// knee.request_rate as latdoc writes it; documents of other writers and older versions name it
// knee.max_num_seqs, recommendation.max_num_seqs or knee_concurrency, read in that order. The
// knee's batch: knee.concurrency, knee.max_num_seqs, recommendations.max_num_seqs.value,
// recommendation.max_num_seqs, knee_concurrency. A step names its load "concurrency",
// "max_concurrency" or "request_rate"; a step without one is skipped. Values of the wrong type
// read as absent. Errors (kInvalidArgument): `doc` is not an object.
StatusOr<SweepCurve> SweepCurveFromJson(const nlohmann::ordered_json& doc, std::string_view name);

// `doctor --sweep FILE`: the knee's batch of the sweep document `text`, rounded to a whole
// number of sequences. Errors (kInvalidArgument, prefixed with `name`): not a JSON object; no
// knee batch, or one below 1.
StatusOr<int64_t> SweepKneeFromJson(std::string_view text, std::string_view name);

}  // namespace latdoc::loadgen
