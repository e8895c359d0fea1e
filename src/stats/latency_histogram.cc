#include "stats/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace latdoc::stats {

LatencyHistogram::LatencyHistogram() : counts_(kNumBuckets, 0) {}

// Inverse of BucketIndex: index = shift * 128 + (v >> shift), where v >> shift is in
// [128, 256) for shift > 0 and in [0, 256) for shift 0.
int64_t LatencyHistogram::BucketLowestNs(int index) {
  const int sub_count = 1 << kSubBucketBits;
  if (index < 2 * sub_count) return index;
  const int shift = index / sub_count - 1;
  const int64_t sub = index - shift * sub_count;
  return sub << shift;
}

int64_t LatencyHistogram::BucketWidthNs(int index) {
  const int sub_count = 1 << kSubBucketBits;
  if (index < 2 * sub_count) return 1;
  return int64_t{1} << (index / sub_count - 1);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kNumBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  negative_count_ += other.negative_count_;
  saturated_count_ += other.saturated_count_;
  sum_ += other.sum_;
  sum_sq_ += other.sum_sq_;
  min_ns_ = std::min(min_ns_, other.min_ns_);
  max_ns_ = std::max(max_ns_, other.max_ns_);
}

void LatencyHistogram::Reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = negative_count_ = saturated_count_ = 0;
  sum_ = sum_sq_ = 0;
  min_ns_ = INT64_MAX;
  max_ns_ = -1;
}

std::optional<int64_t> LatencyHistogram::min_ns() const {
  if (count_ == 0) return std::nullopt;
  return min_ns_;
}

std::optional<int64_t> LatencyHistogram::max_ns() const {
  if (count_ == 0) return std::nullopt;
  return max_ns_;
}

std::optional<double> LatencyHistogram::mean_ns() const {
  if (count_ == 0) return std::nullopt;
  return static_cast<double>(static_cast<long double>(sum_) / count_);
}

std::optional<double> LatencyHistogram::stddev_ns() const {
  if (count_ == 0) return std::nullopt;
  // Exact integer sums; one rounding in long double at the end. n*sum_sq - sum^2 could
  // overflow 128 bits, so divide first.
  const long double n = static_cast<long double>(count_);
  const long double mean = static_cast<long double>(sum_) / n;
  long double var = static_cast<long double>(sum_sq_) / n - mean * mean;
  if (var < 0) var = 0;
  return static_cast<double>(std::sqrt(var));
}

std::optional<int64_t> LatencyHistogram::ValueAtQuantile(double q) const {
  if (count_ == 0) return std::nullopt;
  if (!(q > 0)) return min_ns_;  // also NaN
  if (q >= 1) return max_ns_;
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (int i = 0; i < kNumBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const int64_t mid = BucketLowestNs(i) + (BucketWidthNs(i) - 1) / 2;
      return std::clamp(mid, min_ns_, max_ns_);
    }
  }
  return max_ns_;  // not reached: the counts add up to count_
}

void LatencyHistogram::ForEachBucket(
    const std::function<void(int64_t, int64_t, uint64_t)>& f) const {
  for (int i = 0; i < kNumBuckets; ++i) {
    if (counts_[i] == 0) continue;
    f(BucketLowestNs(i), BucketLowestNs(i) + BucketWidthNs(i) - 1, counts_[i]);
  }
}

}  // namespace latdoc::stats
