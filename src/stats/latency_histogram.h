// LatencyHistogram: a fixed-size, mergeable log-linear histogram of int64 nanoseconds, in the
// manner of HdrHistogram, for latencies recorded on the load generator's hot path.
//
// Layout: values below 256 ns have a bucket each (exact). Above, every power-of-two range
// [2^m, 2^(m+1)) is cut into 128 equal buckets, so a bucket is at most 1/128 of its lower
// bound wide and the value reported for it (its midpoint) is within 1/256 (0.39%) of every
// value it holds. Values from 0 to kMaxTrackableNs (2^44-1 ns, about 4.9 hours) are tracked;
// larger ones are recorded as kMaxTrackableNs and counted in saturated_count(), negative ones
// as 0 and counted in negative_count(). 4,864 buckets: 38 KiB per histogram.
//
// count, min, max, sum and sum of squares are kept exactly, so mean() and stddev() are exact
// (up to the final floating-point division); quantiles carry the bucket error above.
//
// Record() does not allocate, lock or branch on anything but the clamps. Thread safety: none;
// keep one histogram per worker and Merge() them at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace latdoc::stats {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr int kMaxExponent = 44;
  static constexpr int64_t kMaxTrackableNs = (int64_t{1} << kMaxExponent) - 1;
  static constexpr int kNumBuckets = (kMaxExponent - kSubBucketBits + 1) << kSubBucketBits;

  LatencyHistogram();

  // Records `value_ns` `n` times (a chunk of n tokens after one gap records the per-token
  // gap n times).
  void Record(int64_t value_ns, uint64_t n = 1) {
    if (value_ns < 0) [[unlikely]] {
      negative_count_ += n;
      value_ns = 0;
    } else if (value_ns > kMaxTrackableNs) [[unlikely]] {
      saturated_count_ += n;
      value_ns = kMaxTrackableNs;
    }
    counts_[BucketIndex(value_ns)] += n;
    count_ += n;
    const unsigned __int128 v = static_cast<uint64_t>(value_ns);
    sum_ += v * n;
    sum_sq_ += v * v * n;
    if (value_ns < min_ns_) min_ns_ = value_ns;
    if (value_ns > max_ns_) max_ns_ = value_ns;
  }

  // Adds every value of `other` to this histogram.
  void Merge(const LatencyHistogram& other);
  void Reset();

  uint64_t count() const { return count_; }
  uint64_t negative_count() const { return negative_count_; }
  uint64_t saturated_count() const { return saturated_count_; }
  // nullopt when empty.
  std::optional<int64_t> min_ns() const;
  std::optional<int64_t> max_ns() const;
  std::optional<double> mean_ns() const;
  // Population standard deviation (like np.std).
  std::optional<double> stddev_ns() const;

  // The value at quantile q (0..1, clamped) by the nearest-rank definition: the smallest
  // recorded value v such that at least ceil(q * count) values are <= v, reported as its
  // bucket's midpoint, clamped to [min, max] (so q=0 gives min and q=1 gives max exactly).
  // Within 0.39% of the exact nearest-rank value. nullopt when empty.
  std::optional<int64_t> ValueAtQuantile(double q) const;

  // Calls f(lowest_ns, highest_ns, count) for every non-empty bucket, in ascending order.
  void ForEachBucket(const std::function<void(int64_t, int64_t, uint64_t)>& f) const;

  // Bucket geometry, exposed for tests.
  static int BucketIndex(int64_t value_ns) {
    const uint64_t v = static_cast<uint64_t>(value_ns);
    // m = floor(log2(v)), but at least kSubBucketBits, so small values land on shift 0.
    const int m = 63 - __builtin_clzll(v | (uint64_t{1} << kSubBucketBits));
    const int shift = m - kSubBucketBits;
    return (shift << kSubBucketBits) + static_cast<int>(v >> shift);
  }
  static int64_t BucketLowestNs(int index);
  static int64_t BucketWidthNs(int index);

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t negative_count_ = 0;
  uint64_t saturated_count_ = 0;
  unsigned __int128 sum_ = 0;
  unsigned __int128 sum_sq_ = 0;
  int64_t min_ns_ = INT64_MAX;
  int64_t max_ns_ = -1;
};

}  // namespace latdoc::stats
