#include "stats/time_series.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::stats {
namespace {

constexpr int64_t kSec = 1000000000;

TEST(TimeSeriesTest, BucketsByIntervalAndPeakRate) {
  TimeSeries ts(10 * kSec, kSec);
  ts.Add(10 * kSec, 5);              // bucket 0 (start inclusive)
  ts.Add(11 * kSec - 1, 3);          // bucket 0 (end exclusive)
  ts.Add(11 * kSec, 2);              // bucket 1
  ts.Add(13 * kSec + kSec / 2, 20);  // bucket 3; bucket 2 stays empty
  ts.Add(9 * kSec, 100);             // before start: dropped
  ASSERT_EQ(ts.size(), 4u);
  EXPECT_THAT(ts.RatesPerSec(), ::testing::ElementsAre(8, 2, 0, 20));
  EXPECT_EQ(*ts.PeakRatePerSec(), 20);
  EXPECT_EQ(ts.dropped_before_start(), 1u);
  EXPECT_EQ(ts.bucket(0).count, 2u);
  EXPECT_EQ(ts.bucket(0).min, 3);
  EXPECT_EQ(ts.bucket(0).max, 5);
  EXPECT_EQ(*ts.BucketMean(0), 4);
  EXPECT_FALSE(ts.BucketMean(2).has_value());
  EXPECT_EQ(ts.bucket_start_ns(3), 13 * kSec);
}

TEST(TimeSeriesTest, WildTimestampIsDroppedNotAllocated) {
  TimeSeries ts(0, kSec);
  ts.Add(INT64_MAX, 1);
  ts.Add(static_cast<int64_t>(TimeSeries::kMaxBuckets) * kSec, 1);
  EXPECT_EQ(ts.size(), 0u);
  EXPECT_EQ(ts.dropped_after_end(), 2u);
  ts.Add(5 * kSec, 1);
  EXPECT_EQ(ts.size(), 6u);
}

TEST(TimeSeriesTest, RateUsesTheInterval) {
  TimeSeries ts(0, kSec / 4);
  ts.Add(0, 10);
  EXPECT_EQ(*ts.PeakRatePerSec(), 40);  // 10 in a quarter second
  TimeSeries empty(0, kSec);
  EXPECT_FALSE(empty.PeakRatePerSec().has_value());
}

TEST(TimeSeriesTest, MergeAddsBucketWise) {
  TimeSeries a(0, kSec), b(0, kSec);
  a.Reserve(3 * kSec);
  a.Add(0, 1);
  b.Add(0, 4);
  b.Add(2 * kSec, 7);
  a.Merge(b);
  EXPECT_THAT(a.RatesPerSec(), ::testing::ElementsAre(5, 0, 7));
  EXPECT_EQ(a.bucket(0).min, 1);
  EXPECT_EQ(a.bucket(0).max, 4);
  EXPECT_EQ(a.bucket(2).count, 1u);
}

}  // namespace
}  // namespace latdoc::stats
