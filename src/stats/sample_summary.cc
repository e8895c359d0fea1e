#include "stats/sample_summary.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace latdoc::stats {
namespace {

// numpy's pairwise summation (numpy/core/src/umath/loops_utils.h.src, DOUBLE_pairwise_sum):
// below 8 values a plain loop; up to 128 eight accumulators; above, split in two halves
// (the first a multiple of 8 long).
double PairwiseSum(const double* a, size_t n) {
  if (n < 8) {
    double res = 0.;
    for (size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return PairwiseSum(a, n2) + PairwiseSum(a + n2, n - n2);
}

// add.reduce without `initial` starts from the first element and reduces the rest.
double NumpySum(std::span<const double> v) {
  if (v.empty()) return 0.;
  return v[0] + PairwiseSum(v.data() + 1, v.size() - 1);
}

// numpy's _lerp (function_base.py): a + (b-a)*t, computed from b's side when t >= 0.5 so
// that the result is monotonic and exact at t = 1.
double Lerp(double a, double b, double t) {
  const double diff = b - a;
  if (t >= 0.5) return b - diff * (1 - t);
  return a + diff * t;
}

}  // namespace

double NumpyMean(std::span<const double> values) {
  return NumpySum(values) / static_cast<double>(values.size());
}

double NumpyStd(std::span<const double> values) {
  const double mean = NumpyMean(values);
  std::vector<double> sq(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double d = values[i] - mean;
    sq[i] = d * d;
  }
  return std::sqrt(NumpySum(sq) / static_cast<double>(values.size()));
}

// np.percentile, method "linear": virtual index (n-1)*q with q = percent/100; interpolate
// between the values at floor and floor+1 (clipped to the last index).
double PercentileOfSorted(std::span<const double> sorted, double percent) {
  const double q = std::clamp(percent, 0.0, 100.0) / 100.0;
  const double n = static_cast<double>(sorted.size());
  const double virtual_index = (n - 1) * q;
  const double prev = std::floor(virtual_index);
  const double gamma = virtual_index - prev;
  const size_t last = sorted.size() - 1;
  const size_t lo = std::min(static_cast<size_t>(prev), last);
  const size_t hi = std::min(lo + 1, last);
  return Lerp(sorted[lo], sorted[hi], gamma);
}

double MedianOfSorted(std::span<const double> sorted) {
  const size_t n = sorted.size();
  if (n % 2 == 1) return sorted[n / 2];
  // np.median takes np.mean of the two middle values: (a + b) / 2.
  return (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
}

std::optional<SampleSummary> Summarize(std::span<const double> values) {
  if (values.empty()) return std::nullopt;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  SampleSummary s;
  s.count = values.size();
  s.mean = NumpyMean(values);  // numpy sums in the given order, not sorted
  s.std = NumpyStd(values);
  s.median = MedianOfSorted(sorted);
  s.min = sorted.front();
  s.max = sorted.back();
  s.p90 = PercentileOfSorted(sorted, 90);
  s.p95 = PercentileOfSorted(sorted, 95);
  s.p99 = PercentileOfSorted(sorted, 99);
  s.p99_9 = PercentileOfSorted(sorted, 99.9);
  return s;
}

std::string PercentileWord(double percent) {
  if (percent == std::trunc(percent) && std::fabs(percent) < 1e15) {
    return fmt::format("{}", static_cast<int64_t>(percent));
  }
  return fmt::format("{}", percent);  // shortest round-trip form, as Python's str(float)
}

std::vector<VllmStat> VllmStatKeys(std::string_view metric, std::span<const int64_t> values_ns,
                                   std::span<const double> percentiles) {
  std::vector<double> ms(values_ns.size());
  for (size_t i = 0; i < values_ns.size(); ++i) ms[i] = static_cast<double>(values_ns[i]) / 1e6;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const bool any = !ms.empty();

  std::vector<VllmStat> out;
  auto add = [&](std::string key, auto compute) {
    out.push_back(VllmStat{std::move(key), any ? std::optional<double>(compute()) : std::nullopt});
  };
  add(fmt::format("mean_{}_ms", metric), [&] { return NumpyMean(ms); });
  add(fmt::format("median_{}_ms", metric), [&] { return MedianOfSorted(sorted); });
  add(fmt::format("std_{}_ms", metric), [&] { return NumpyStd(ms); });
  for (double p : percentiles) {
    add(fmt::format("p{}_{}_ms", PercentileWord(p), metric),
        [&] { return PercentileOfSorted(sorted, p); });
  }
  add(fmt::format("max_{}_ms", metric), [&] { return sorted.back(); });
  return out;
}

}  // namespace latdoc::stats
