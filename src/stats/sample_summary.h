// SampleSummary: exact statistics of a small set of samples (up to millions), reproducing
// numpy's defaults as `vllm bench serve` uses them (vllm-project/vllm
// vllm/benchmarks/serve.py calculate_metrics):
//   mean    np.mean     (pairwise summation, as numpy's add.reduce)
//   median  np.median   (mean of the two middle values for an even count)
//   std     np.std      (population, ddof=0)
//   pXX     np.percentile(x, XX), method "linear" (numpy >= 1.22 default)
// This is the reference against which LatencyHistogram's approximations are judged; use it
// for per-run results, the histogram for per-worker streams.
//
// Units are whatever the caller passes; VllmStatKeys() takes nanoseconds and reports ms.
// An empty set has no statistics: nullopt, never 0 (vLLM writes 0 there; we write null).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace latdoc::stats {

struct SampleSummary {
  size_t count = 0;
  double mean = 0;
  double median = 0;
  double std = 0;  // population
  double min = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
  double p99_9 = 0;
  double max = 0;
};

// nullopt when `values` is empty. NaNs are not allowed (REQUIRES: none are NaN).
std::optional<SampleSummary> Summarize(std::span<const double> values);

// np.percentile(sorted, percent) with linear interpolation; `percent` in [0, 100] (clamped).
// REQUIRES: `sorted` is non-empty and ascending.
double PercentileOfSorted(std::span<const double> sorted, double percent);
// np.median of an ascending, non-empty set.
double MedianOfSorted(std::span<const double> sorted);
// np.mean and np.std (ddof=0), with numpy's pairwise summation. REQUIRES: non-empty.
double NumpyMean(std::span<const double> values);
double NumpyStd(std::span<const double> values);

// vLLM's percentile key word: 99 -> "99", 99.9 -> "99.9", 50.0 -> "50" (serve.py:
// `str(int(p)) if int(p) == p else str(p)`).
std::string PercentileWord(double percent);

// The percentiles latdoc reports by default: p90, p95, p99, p99.9.
inline constexpr double kDefaultPercentilesArray[] = {90, 95, 99, 99.9};
inline constexpr std::span<const double> kDefaultPercentiles(kDefaultPercentilesArray);

struct VllmStat {
  std::string key;                 // e.g. "mean_ttft_ms", "p99.9_itl_ms"
  std::optional<double> value_ms;  // nullopt when there were no samples
};

// The statistics of one metric under `vllm bench serve` JSON names, in its order:
// mean_<m>_ms, median_<m>_ms, std_<m>_ms, p<P>_<m>_ms for each of `percentiles`, then
// max_<m>_ms (latdoc's addition). `metric` is "ttft", "tpot", "itl", "e2el", ...
// `values_ns` are converted to milliseconds before any statistic is taken.
std::vector<VllmStat> VllmStatKeys(std::string_view metric, std::span<const int64_t> values_ns,
                                   std::span<const double> percentiles = kDefaultPercentiles);

}  // namespace latdoc::stats
