// Quantiles of in-memory samples with numpy's default method ("linear": the value at virtual
// index q*(n-1), interpolated between its two neighbours as a + frac*(b - a)). One
// implementation for every module: the trace's kernel and step statistics, compare's bootstrap,
// the what-if predictions. stats::PercentileOfSorted (sample_summary.h) is the same method with
// numpy's own rounding of the interpolation (its _lerp), kept for results that must match
// `vllm bench serve` to the last bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace latdoc::stats {

// The q-quantile of `sorted`. REQUIRES: `sorted` ascending and non-empty; 0 <= q <= 1.
template <typename T>
double QuantileOfSorted(const std::vector<T>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) + frac * (static_cast<double>(sorted[hi]) - static_cast<double>(sorted[lo]));
}

// The same value as QuantileOfSorted over `v` sorted, by selection in O(n) instead of a sort.
// Reorders `v`. REQUIRES: `v` non-empty; 0 <= q <= 1.
template <typename T>
double QuantileBySelection(std::vector<T>& v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const T at_lo = v[lo];
  // After nth_element everything past `lo` is >= v[lo]: the next order statistic is their min.
  const T at_hi = hi == lo ? at_lo : *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(hi), v.end());
  const double frac = pos - static_cast<double>(lo);
  return static_cast<double>(at_lo) + frac * (static_cast<double>(at_hi) - static_cast<double>(at_lo));
}

}  // namespace latdoc::stats
