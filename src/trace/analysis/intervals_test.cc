#include "trace/analysis/intervals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "trace/analysis/quantile.h"

namespace latdoc::trace {
namespace {

bool operator==(const Interval& a, const Interval& b) {
  return a.start_ns == b.start_ns && a.end_ns == b.end_ns;
}

TEST(IntervalsTest, MergeJoinsOverlappingAndTouchingAndDropsEmpty) {
  const IntervalSet s = MergeIntervals({{10, 20}, {0, 5}, {5, 7}, {15, 30}, {40, 40}});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE((s[0] == Interval{0, 7}));
  EXPECT_TRUE((s[1] == Interval{10, 30}));
  EXPECT_EQ(TotalLength(s), 27);
}

TEST(IntervalsTest, SubtractAndIntersect) {
  const IntervalSet a = MergeIntervals({{0, 10}, {20, 30}});
  const IntervalSet b = MergeIntervals({{5, 25}});
  const IntervalSet d = Subtract(a, b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE((d[0] == Interval{0, 5}));
  EXPECT_TRUE((d[1] == Interval{25, 30}));
  EXPECT_EQ(TotalLength(Intersect(a, b)), 10);
  EXPECT_EQ(TotalLength(Unite(a, b)), 30);
  EXPECT_EQ(TotalLength(Subtract(b, a)), 10);
}

// The builder's set must be MergeIntervals' in any order: sorted (merged as it comes), with a
// disorder anywhere (the rest parked and merged at the end), with empty intervals.
TEST(IntervalsTest, BuilderMatchesMergeInAnyOrder) {
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    std::vector<Interval> v(rng() % 40);
    for (Interval& i : v) {
      i.start_ns = static_cast<int64_t>(rng() % 200);
      i.end_ns = i.start_ns + static_cast<int64_t>(rng() % 12);
    }
    if (round % 2 == 0) {
      std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
        return a.start_ns < b.start_ns;
      });
    }
    IntervalSetBuilder b;
    for (const Interval& i : v) b.Add(i);
    const IntervalSet got = b.Finish();
    const IntervalSet want = MergeIntervals(v);
    ASSERT_EQ(got.size(), want.size()) << "round " << round;
    for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(got[k] == want[k]) << "round " << round;
  }
}

TEST(IntervalsTest, UniteOfSetsIsMergeOfBoth) {
  const IntervalSet a = MergeIntervals({{0, 10}, {20, 30}, {40, 41}});
  const IntervalSet b = MergeIntervals({{10, 12}, {15, 20}, {41, 50}});
  const IntervalSet u = Unite(a, b);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_TRUE((u[0] == Interval{0, 12}));
  EXPECT_TRUE((u[1] == Interval{15, 30}));
  EXPECT_TRUE((u[2] == Interval{40, 50}));
}

// QuantileSelect must give QuantileSorted's value exactly (p50/p99 are reported to the bit),
// with duplicates, at every size from one element.
TEST(QuantileTest, SelectEqualsSortedQuantile) {
  std::mt19937 rng(11);
  for (size_t n = 1; n < 300; ++n) {
    std::vector<int64_t> v(n);
    for (int64_t& x : v) x = static_cast<int64_t>(rng() % (n % 3 == 0 ? 5 : 100000));
    std::vector<int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (double q : {0.0, 0.5, 0.9, 0.99, 1.0}) {
      std::vector<int64_t> w = v;
      EXPECT_EQ(QuantileSelect(w, q), QuantileSorted(sorted, q)) << "n=" << n << " q=" << q;
    }
  }
}

}  // namespace
}  // namespace latdoc::trace
