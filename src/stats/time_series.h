// TimeSeries: values summed into fixed-interval buckets on the monotonic clock, e.g. output
// tokens per 1 s (vLLM's `max_output_tokens_per_s` is the peak of such a series), requests in
// flight sampled over time, or a scraped gauge.
//
// Bucket i covers [start_ns + i*interval_ns, start_ns + (i+1)*interval_ns). Buckets are
// created on demand up to the latest time added (Reserve() to keep Add() allocation-free);
// times before start_ns are dropped and counted. Thread safety: none; Merge() per-worker
// series at the end.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace latdoc::stats {

class TimeSeries {
 public:
  struct Bucket {
    double sum = 0;
    uint64_t count = 0;
    double min = 0;  // meaningful only when count > 0
    double max = 0;
  };

  // A bound on memory against a wild timestamp: 4 Mi buckets (1 s buckets: 48 days).
  static constexpr size_t kMaxBuckets = size_t{1} << 22;

  // REQUIRES: interval_ns > 0.
  TimeSeries(int64_t start_ns, int64_t interval_ns);

  // Adds `value` at time `t_ns` to the bucket holding t_ns.
  void Add(int64_t t_ns, double value);
  // Makes room for buckets up to time `until_ns` (exclusive) without further allocation.
  void Reserve(int64_t until_ns);
  // Adds `other` bucket by bucket. REQUIRES: same start and interval.
  void Merge(const TimeSeries& other);

  int64_t start_ns() const { return start_ns_; }
  int64_t interval_ns() const { return interval_ns_; }
  size_t size() const { return buckets_.size(); }
  const Bucket& bucket(size_t i) const { return buckets_[i]; }
  int64_t bucket_start_ns(size_t i) const { return start_ns_ + static_cast<int64_t>(i) * interval_ns_; }
  uint64_t dropped_before_start() const { return dropped_; }
  uint64_t dropped_after_end() const { return dropped_after_end_; }

  // sum / interval in seconds for every bucket (e.g. tokens/s per second of the run).
  std::vector<double> RatesPerSec() const;
  // The largest of RatesPerSec(); nullopt when there are no buckets.
  std::optional<double> PeakRatePerSec() const;
  // Mean of the values added to bucket i (sum / count); nullopt for an empty bucket.
  std::optional<double> BucketMean(size_t i) const;

 private:
  int64_t start_ns_;
  int64_t interval_ns_;
  std::vector<Bucket> buckets_;
  uint64_t dropped_ = 0;
  uint64_t dropped_after_end_ = 0;
};

}  // namespace latdoc::stats
