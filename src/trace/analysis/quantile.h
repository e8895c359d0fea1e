// Quantiles of small in-memory samples, numpy's default linear interpolation.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace latdoc::trace {

// REQUIRES: `sorted` ascending and non-empty; 0 <= q <= 1.
inline double QuantileSorted(const std::vector<int64_t>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) +
         frac * static_cast<double>(sorted[hi] - sorted[lo]);
}

// The same value as QuantileSorted over `v` sorted, by selection in O(n) instead of a sort.
// Reorders `v`. REQUIRES: `v` non-empty; 0 <= q <= 1.
inline double QuantileSelect(std::vector<int64_t>& v, double q) {
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  const int64_t at_lo = v[lo];
  // After nth_element everything past `lo` is >= v[lo]: the next order statistic is their min.
  const int64_t at_hi =
      hi == lo ? at_lo : *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(hi), v.end());
  const double frac = pos - static_cast<double>(lo);
  return static_cast<double>(at_lo) + frac * static_cast<double>(at_hi - at_lo);
}

}  // namespace latdoc::trace
