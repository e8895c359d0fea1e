#include "stats/knee.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace latdoc::stats {

StatusOr<KneeResult> FindKnee(std::span<const SweepPoint> points, KneeOptions options) {
  if (points.empty()) return InvalidArgument("knee: no sweep steps");
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].p99_latency_ns <= 0) {
      return InvalidArgument("knee: step " + std::to_string(i) + ": p99 latency must be > 0");
    }
    if (i > 0 && !(points[i].concurrency > points[i - 1].concurrency)) {
      return InvalidArgument("knee: step " + std::to_string(i) +
                             ": concurrency must be strictly increasing");
    }
  }
  // "each 1% of added p99 buys e % more tokens/s", from step i to step j.
  auto elasticity = [&](size_t i, size_t j) {
    const SweepPoint& a = points[i];
    const SweepPoint& b = points[j];
    if (!(b.tokens_per_s > a.tokens_per_s)) return 0.0;  // more load, no more throughput
    if (b.p99_latency_ns <= a.p99_latency_ns || a.tokens_per_s <= 0) {
      return std::numeric_limits<double>::infinity();  // free throughput, or from nothing
    }
    return std::log(b.tokens_per_s / a.tokens_per_s) /
           std::log(static_cast<double>(b.p99_latency_ns) / static_cast<double>(a.p99_latency_ns));
  };
  KneeResult r;
  r.knee_index = points.size() - 1;
  for (size_t i = 0; i + 1 < points.size(); ++i) r.elasticity.push_back(elasticity(i, i + 1));
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    if (!(r.elasticity[i] < options.min_elasticity)) continue;
    if (i + 2 < points.size()) {
      if (!(elasticity(i, i + 2) < options.min_elasticity)) continue;  // step i+1 was the odd one
      r.confirmed_by = i + 2;
    }
    r.reached = true;
    r.knee_index = i;
    break;
  }
  return r;
}

Bracket RefineBracket(std::span<const SweepPoint> points, const KneeResult& knee) {
  if (points.empty()) return {};
  const size_t k = std::min(knee.knee_index, points.size() - 1);
  const size_t lo = k > 0 ? k - 1 : 0;
  const size_t hi = std::min(k + 1, points.size() - 1);
  return Bracket{points[lo].concurrency, points[hi].concurrency};
}

std::vector<double> RefineProbes(std::span<const SweepPoint> points, const KneeResult& knee,
                                 double min_ratio) {
  std::vector<double> out;
  if (points.empty()) return out;
  const size_t k = std::min(knee.knee_index, points.size() - 1);
  const double c = points[k].concurrency;
  if (k > 0 && c / points[k - 1].concurrency > min_ratio) {
    out.push_back(std::sqrt(points[k - 1].concurrency * c));
  }
  if (k + 1 < points.size() && points[k + 1].concurrency / c > min_ratio) {
    out.push_back(std::sqrt(c * points[k + 1].concurrency));
  }
  return out;
}

std::optional<size_t> HighestMeetingSlo(std::span<const SweepPoint> points, int64_t slo_p99_ns) {
  std::optional<size_t> best;
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].p99_latency_ns <= slo_p99_ns &&
        (!best || points[i].concurrency > points[*best].concurrency)) {
      best = i;
    }
  }
  return best;
}

std::optional<size_t> MaxGoodput(std::span<const SweepPoint> points) {
  std::optional<size_t> best;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].goodput_per_s) continue;
    if (!best || *points[i].goodput_per_s > *points[*best].goodput_per_s ||
        (*points[i].goodput_per_s == *points[*best].goodput_per_s &&
         points[i].concurrency < points[*best].concurrency)) {
      best = i;
    }
  }
  return best;
}

}  // namespace latdoc::stats
