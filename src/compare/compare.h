// `latdoc compare A.json B.json`: before/after of two results latdoc wrote — bench, sweep, trace
// or diagnose, told apart by their "schema" field — saying what moved, by how much, and
// whether the move is beyond run-to-run noise.
//
// How noise is judged, per metric (the result names the method it used for each):
//   - bootstrap: where both files carry per-request samples (bench's and diagnose's
//     "per_request" arrays), the samples of A and of B are resampled with replacement
//     kBootstrapResamples times (seeded: the same files always give the same answer) and the
//     statistic (mean, median, p99) recomputed; the move is beyond noise when the 95%
//     percentile interval of B - A excludes 0.
//   - threshold: otherwise a documented relative threshold (kThreshold*) with an absolute floor
//     (kLatencyFloorMs for latencies), because summary numbers alone carry no spread. Tails
//     (p90 and up) move more from run to run than centres, so their threshold is wider.
//   - exact: counts that only change for a reason (the knee's concurrency on the sweep's
//     ladder, a recommended flag value, a finding's severity) are reported whenever they differ.
//
// Pure: two parsed documents in, a CompareResult out; loading a file is the only I/O
// (LoadResult). Not thread-safe per call; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace latdoc::compare {

inline constexpr int kBootstrapResamples = 1000;
inline constexpr double kThresholdCentre = 0.05;     // mean, median latency; throughput
inline constexpr double kThresholdTail = 0.10;       // p90, p95, p99, p99.9 latency
// Stall attribution (diagnose's): a change of fewer stalls than this, or of less than this many
// points of decode time, is within a run's noise however large relative to a small count.
inline constexpr double kStallCountFloor = 2;
inline constexpr double kStallShareFloorPct = 1;
inline constexpr double kThresholdKernel = 0.10;     // one kernel's time per call in a trace
inline constexpr double kLatencyFloorMs = 0.5;       // a latency move smaller than this is noise
// Per-request samples a side the bootstrap needs (else thresholds judge): for means and medians,
// and for p99 (a handful of samples above it).
inline constexpr size_t kMinBootstrapSamples = 30;
inline constexpr size_t kMinTailBootstrapSamples = 300;
inline constexpr double kErrorRateFloor = 0.01;      // error rate: 1 percentage point

enum class Kind { kBench, kSweep, kTrace, kDiagnose };
std::string_view KindName(Kind k);  // "bench", "sweep", "trace", "diagnose"

// Which kind `doc` is, from its "schema" ("latdoc.<kind>/<version>"). Errors name `path`: no
// schema, a schema compare does not read, or a version newer than this latdoc reads.
StatusOr<Kind> DetectKind(const nlohmann::json& doc, const std::string& path);

// Reads and parses `path` (plain, gzip or zstd JSON) and detects its kind.
struct LoadedResult {
  std::string path;
  Kind kind = Kind::kBench;
  nlohmann::json doc;
};
StatusOr<LoadedResult> LoadResult(const std::string& path);

enum class Direction { kLowerIsBetter, kHigherIsBetter, kNeither };
enum class NoiseMethod { kBootstrap, kThreshold, kExact, kNone };
std::string_view NoiseMethodName(NoiseMethod m);

// One number compared. `verdict`: "better", "worse", "changed" (no better direction),
// "within noise", "same", or "n/a" (missing on one side).
struct MetricDelta {
  std::string group;                  // "bench", "step conc=64", "kernel", "waterfall", ...
  std::string name;                   // a bench key (p99_ttft_ms), "error_rate", a kernel
  std::string unit;                   // "ms", "tok/s", "%", ""
  Direction direction = Direction::kNeither;
  std::optional<double> a, b;
  std::optional<double> diff;         // b - a
  std::optional<double> rel;          // (b - a) / |a|, when a != 0
  NoiseMethod method = NoiseMethod::kNone;
  std::optional<double> threshold;    // relative, for kThreshold
  std::optional<double> floor;        // and the least absolute change, in `unit`, when it has one
  std::optional<double> ci_lo, ci_hi; // 95% interval of b - a, for kBootstrap
  bool beyond_noise = false;
  std::string verdict;
};

// A finding present in one of two diagnoses, or in both with another severity.
struct FindingChange {
  std::string id;
  std::string layer;
  std::string change;                 // "new", "resolved", "severity"
  std::string severity_a, severity_b; // "" when absent on that side
  std::string title;                  // B's title (A's when resolved)
};

struct CompareResult {
  Kind kind = Kind::kBench;
  std::string path_a, path_b;
  std::vector<MetricDelta> metrics;
  std::vector<FindingChange> findings;
  std::vector<std::string> notes;     // what could not be compared, and why
  int better = 0, worse = 0;          // metrics beyond noise in each direction
  int findings_worse = 0;             // findings new at warn or fail, or more severe than in A
  bool loads_differ = false;          // the runs offered different loads (a note says how)
  // Runs compared although their validation failed (--allow-invalid): "A.json: concurrency".
  std::vector<std::string> invalid;
};

// The failed checks of a result's "validation" blocks (bench's; each sweep step's; a diagnose's
// load run), one "check: message" each ("step conc=8: check: message" for a sweep step); empty
// when every block passed or the result has none (written by a latdoc before validation).
std::vector<std::string> FailedValidation(const nlohmann::json& doc);

struct CompareOptions {
  uint64_t seed = 1;
  int resamples = kBootstrapResamples;
  bool show_all = false;              // text: list metrics within noise too
};

// REQUIRES: a.kind == b.kind (Compare returns InvalidArgument otherwise, naming both files).
StatusOr<CompareResult> Compare(const LoadedResult& a, const LoadedResult& b,
                                const CompareOptions& options = {});

std::string RenderCompareText(const CompareResult& r, const CompareOptions& options = {});
nlohmann::ordered_json CompareToJson(const CompareResult& r);

// The 95% percentile interval of stat(B*) - stat(A*) over `resamples` bootstrap resamples.
// `quantile` in [0, 1] picks the statistic; nullopt means the mean. REQUIRES: a, b non-empty.
struct Interval { double lo = 0, hi = 0; };
Interval BootstrapDiff(const std::vector<double>& a, const std::vector<double>& b,
                       std::optional<double> quantile, int resamples, uint64_t seed);

}  // namespace latdoc::compare
