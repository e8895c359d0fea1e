// Quantiles of small in-memory samples, numpy's default linear interpolation.
#pragma once

#include <algorithm>
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

}  // namespace latdoc::trace
