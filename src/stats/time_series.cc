#include "stats/time_series.h"

#include <algorithm>
#include <cassert>

namespace latdoc::stats {

TimeSeries::TimeSeries(int64_t start_ns, int64_t interval_ns)
    : start_ns_(start_ns), interval_ns_(interval_ns > 0 ? interval_ns : 1) {
  assert(interval_ns > 0);
}

void TimeSeries::Add(int64_t t_ns, double value) {
  if (t_ns < start_ns_) {
    ++dropped_;
    return;
  }
  const uint64_t i = static_cast<uint64_t>(t_ns - start_ns_) / static_cast<uint64_t>(interval_ns_);
  if (i >= kMaxBuckets) {
    ++dropped_after_end_;
    return;
  }
  if (i >= buckets_.size()) buckets_.resize(i + 1);
  Bucket& b = buckets_[i];
  if (b.count == 0) {
    b.min = b.max = value;
  } else {
    b.min = std::min(b.min, value);
    b.max = std::max(b.max, value);
  }
  b.sum += value;
  ++b.count;
}

void TimeSeries::Reserve(int64_t until_ns) {
  if (until_ns <= start_ns_) return;
  const uint64_t n = (static_cast<uint64_t>(until_ns - start_ns_) + interval_ns_ - 1) /
                     static_cast<uint64_t>(interval_ns_);
  buckets_.reserve(std::min<uint64_t>(n, kMaxBuckets));
}

void TimeSeries::Merge(const TimeSeries& other) {
  assert(other.start_ns_ == start_ns_ && other.interval_ns_ == interval_ns_);
  if (other.buckets_.size() > buckets_.size()) buckets_.resize(other.buckets_.size());
  for (size_t i = 0; i < other.buckets_.size(); ++i) {
    const Bucket& o = other.buckets_[i];
    if (o.count == 0) continue;
    Bucket& b = buckets_[i];
    if (b.count == 0) {
      b = o;
      continue;
    }
    b.sum += o.sum;
    b.count += o.count;
    b.min = std::min(b.min, o.min);
    b.max = std::max(b.max, o.max);
  }
  dropped_ += other.dropped_;
  dropped_after_end_ += other.dropped_after_end_;
}

std::vector<double> TimeSeries::RatesPerSec() const {
  const double interval_s = static_cast<double>(interval_ns_) / 1e9;
  std::vector<double> out;
  out.reserve(buckets_.size());
  for (const Bucket& b : buckets_) out.push_back(b.sum / interval_s);
  return out;
}

std::optional<double> TimeSeries::PeakRatePerSec() const {
  if (buckets_.empty()) return std::nullopt;
  std::vector<double> rates = RatesPerSec();
  return *std::max_element(rates.begin(), rates.end());
}

std::optional<double> TimeSeries::BucketMean(size_t i) const {
  if (i >= buckets_.size() || buckets_[i].count == 0) return std::nullopt;
  return buckets_[i].sum / static_cast<double>(buckets_[i].count);
}

}  // namespace latdoc::stats
