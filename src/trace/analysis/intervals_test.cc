#include "trace/analysis/intervals.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace latdoc::trace
