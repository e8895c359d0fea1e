#include "stats/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace latdoc::stats {
namespace {

TEST(LatencyHistogramTest, BucketGeometryCoversEveryValueWithBoundedWidth) {
  std::mt19937_64 rng(1);
  std::vector<int64_t> probes = {0, 1, 127, 128, 255, 256, 257, 511, 512, 1000, 1 << 20,
                                 LatencyHistogram::kMaxTrackableNs};
  for (int i = 0; i < 100000; ++i) {
    probes.push_back(static_cast<int64_t>(rng() >> (20 + rng() % 44)) &
                     LatencyHistogram::kMaxTrackableNs);
  }
  for (int64_t v : probes) {
    const int idx = LatencyHistogram::BucketIndex(v);
    ASSERT_GE(idx, 0) << v;
    ASSERT_LT(idx, LatencyHistogram::kNumBuckets) << v;
    const int64_t lo = LatencyHistogram::BucketLowestNs(idx);
    const int64_t width = LatencyHistogram::BucketWidthNs(idx);
    ASSERT_LE(lo, v);
    ASSERT_LT(v, lo + width);
    if (v >= 256) {
      ASSERT_LE(static_cast<double>(width) / lo, 1.0 / 128) << v;
    } else {
      ASSERT_EQ(width, 1) << v;
    }
  }
  // Buckets tile the range: each starts where the previous ended.
  for (int i = 1; i < LatencyHistogram::kNumBuckets; ++i) {
    ASSERT_EQ(LatencyHistogram::BucketLowestNs(i),
              LatencyHistogram::BucketLowestNs(i - 1) + LatencyHistogram::BucketWidthNs(i - 1))
        << i;
  }
}

// Nearest rank on the exact sorted samples.
int64_t ExactQuantile(std::vector<int64_t> sorted, double q) {
  std::sort(sorted.begin(), sorted.end());
  size_t rank = static_cast<size_t>(std::ceil(q * sorted.size()));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

TEST(LatencyHistogramTest, QuantilesWithinHalfAPercentOfExact) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(std::log(20e6), 1.0);  // ~20 ms, heavy tail
  std::vector<int64_t> values;
  LatencyHistogram h;
  for (int i = 0; i < 200000; ++i) {
    const int64_t v = static_cast<int64_t>(dist(rng));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.0, 0.001, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999, 1.0}) {
    const int64_t exact = ExactQuantile(values, q);
    const int64_t got = *h.ValueAtQuantile(q);
    EXPECT_LE(std::fabs(static_cast<double>(got - exact)) / static_cast<double>(exact), 0.0040)
        << "q=" << q << " exact=" << exact << " got=" << got;
  }
  EXPECT_EQ(*h.ValueAtQuantile(0), values.front());
  EXPECT_EQ(*h.ValueAtQuantile(1), values.back());
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (int64_t v = 0; v < 256; ++v) h.Record(v);
  EXPECT_EQ(*h.ValueAtQuantile(0.5), 127);  // rank 128 of 0..255
  EXPECT_EQ(*h.ValueAtQuantile(100.0 / 256), 99);
}

TEST(LatencyHistogramTest, MeanAndStddevAreExact) {
  LatencyHistogram h;
  std::vector<int64_t> v = {1000, 2000, 3000, 4000, 123456789};
  for (int64_t x : v) h.Record(x);
  long double sum = 0, sq = 0;
  for (int64_t x : v) sum += x;
  const long double mean = sum / v.size();
  for (int64_t x : v) sq += (x - mean) * (x - mean);
  EXPECT_DOUBLE_EQ(*h.mean_ns(), static_cast<double>(mean));
  EXPECT_NEAR(*h.stddev_ns(), static_cast<double>(std::sqrt(sq / v.size())), 1e-6);
  EXPECT_EQ(*h.min_ns(), 1000);
  EXPECT_EQ(*h.max_ns(), 123456789);
  EXPECT_EQ(h.count(), 5u);
}

TEST(LatencyHistogramTest, RecordNCountsNTimes) {
  LatencyHistogram a, b;
  a.Record(5000, 3);
  for (int i = 0; i < 3; ++i) b.Record(5000);
  EXPECT_EQ(a.count(), 3u);
  EXPECT_EQ(*a.mean_ns(), *b.mean_ns());
  EXPECT_EQ(*a.stddev_ns(), 0.0);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(3);
  LatencyHistogram all, w1, w2;
  for (int i = 0; i < 50000; ++i) {
    const int64_t v = static_cast<int64_t>(rng() % 1000000000);
    all.Record(v);
    (i % 3 ? w1 : w2).Record(v);
  }
  w1.Merge(w2);
  EXPECT_EQ(w1.count(), all.count());
  EXPECT_EQ(*w1.min_ns(), *all.min_ns());
  EXPECT_EQ(*w1.max_ns(), *all.max_ns());
  EXPECT_DOUBLE_EQ(*w1.mean_ns(), *all.mean_ns());
  EXPECT_DOUBLE_EQ(*w1.stddev_ns(), *all.stddev_ns());
  for (double q : {0.01, 0.5, 0.99, 0.999}) EXPECT_EQ(*w1.ValueAtQuantile(q), *all.ValueAtQuantile(q));
  // Merging an empty histogram changes nothing.
  LatencyHistogram empty;
  w1.Merge(empty);
  EXPECT_EQ(*w1.min_ns(), *all.min_ns());
}

TEST(LatencyHistogramTest, EmptyReportsNothing) {
  LatencyHistogram h;
  EXPECT_FALSE(h.ValueAtQuantile(0.5).has_value());
  EXPECT_FALSE(h.mean_ns().has_value());
  EXPECT_FALSE(h.stddev_ns().has_value());
  EXPECT_FALSE(h.min_ns().has_value());
  EXPECT_FALSE(h.max_ns().has_value());
  h.Record(42);
  h.Reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_FALSE(h.max_ns().has_value());
}

TEST(LatencyHistogramTest, OutOfRangeValuesAreClampedAndCounted) {
  LatencyHistogram h;
  h.Record(-5);
  h.Record(LatencyHistogram::kMaxTrackableNs + 1000);
  EXPECT_EQ(h.negative_count(), 1u);
  EXPECT_EQ(h.saturated_count(), 1u);
  EXPECT_EQ(*h.min_ns(), 0);
  EXPECT_EQ(*h.max_ns(), LatencyHistogram::kMaxTrackableNs);
}

TEST(LatencyHistogramTest, ForEachBucketVisitsNonEmptyBucketsInOrder) {
  LatencyHistogram h;
  h.Record(10);
  h.Record(10);
  h.Record(1000000);
  std::vector<std::tuple<int64_t, int64_t, uint64_t>> got;
  h.ForEachBucket([&](int64_t lo, int64_t hi, uint64_t n) { got.emplace_back(lo, hi, n); });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_tuple(int64_t{10}, int64_t{10}, uint64_t{2}));
  EXPECT_LE(std::get<0>(got[1]), 1000000);
  EXPECT_GE(std::get<1>(got[1]), 1000000);
  EXPECT_EQ(std::get<2>(got[1]), 1u);
}

}  // namespace
}  // namespace latdoc::stats
