// What the parts of the calibration (whatif/calibration.h) share, private to src/whatif:
// reading numbers from a document with errors that name the key, the metrics the fit matches,
// and the reading of the measured points (calibration_read.cc). calibration.cc fits;
// calibration_json.cc writes and reads the calibration document and its text. Pure functions.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "whatif/calibration.h"

namespace latdoc::whatif::internal {

// j[key]: missing or null is nullopt; another type is kInvalidArgument "WHERE.KEY: expected a
// number".
StatusOr<std::optional<double>> OptNum(const nlohmann::json& j, const char* key,
                                       const std::string& where);
// As OptNum, and missing is kInvalidArgument "WHERE.KEY: missing".
StatusOr<double> Num(const nlohmann::json& j, const char* key, const std::string& where);

// The metrics of a point the fit matches, in the order of kWeights; a point's value of each.
inline constexpr int kFitMetrics = 4;
extern const char* const kMetrics[kFitMetrics];  // median ITL, median and p99 TTFT, output tokens/s
inline constexpr double kWeights[kFitMetrics] = {1.0, 1.0, 0.5,
                                                 1.0};  // p99 of a few dozen counts half
std::optional<double> MeasuredMetric(const MeasuredPoint& p, int k);
double PredictedMetric(const RunMetrics& m, int k);

// The sweep document inside `input` (a sweep, or a diagnosis's "sweep"), checked.
struct SweepSource {
  const nlohmann::json* doc = nullptr;  // the latdoc.sweep/1 document
  std::string where;                    // its name in messages ("sweep.json: sweep")
  bool diagnosis = false;               // `input` is a latdoc.diagnose/1 document
};
StatusOr<SweepSource> FindSweep(const nlohmann::json& input, const std::string& src);

// Reading the measured document into `cal` (its server, mode and workload set first):
// llama.cpp or vLLM, from the options or the document.
std::string DetectServer(const nlohmann::json& input, const SweepSource& sweep,
                         const CalibrateOptions& opt);
Status ReadWorkload(const SweepSource& sweep, Calibration& cal);
// The sweep's steps, then (a diagnosis, closed loop) its baseline and load runs, ascending load.
Status ReadPoints(const nlohmann::json& input, const SweepSource& sweep, const std::string& src,
                  Calibration& cal);

}  // namespace latdoc::whatif::internal
