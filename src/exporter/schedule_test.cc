#include "exporter/schedule.h"

#include <gtest/gtest.h>

namespace latdoc::exporter {
namespace {

// Cycles on the start + k*interval grid; interval 10 (units are whatever the caller uses).
TEST(ScheduleTest, OnTimeCyclesFollowTheGrid) {
  Schedule s(100, 10);
  EXPECT_EQ(s.NextCycleNs(100), 100);
  EXPECT_EQ(s.CycleStarted(101), 0u);
  EXPECT_EQ(s.NextCycleNs(104), 110);  // ended early: wait for the next tick
  EXPECT_EQ(s.CycleStarted(110), 0u);
  EXPECT_EQ(s.NextCycleNs(119), 120);
  EXPECT_EQ(s.skipped_ticks(), 0u);
}

// A cycle that overruns by less than an interval is followed at once (its tick is late, not
// lost); one that overruns by more skips the missed ticks instead of bursting to catch up.
TEST(ScheduleTest, OverrunsRunLateOnceThenSkip) {
  Schedule s(0, 10);
  s.CycleStarted(0);
  EXPECT_EQ(s.NextCycleNs(13), 10);  // tick 10 is late by 3: run it now
  EXPECT_EQ(s.CycleStarted(13), 0u);
  EXPECT_EQ(s.NextCycleNs(47), 50);  // ticks 20, 30, 40 are gone
  EXPECT_EQ(s.CycleStarted(50), 3u);
  EXPECT_EQ(s.skipped_ticks(), 3u);
  EXPECT_EQ(s.NextCycleNs(51), 60);
}

// Never more cycles than ticks: the canary's rate bound rests on this.
TEST(ScheduleTest, AtMostOneCyclePerInterval) {
  Schedule s(0, 10);
  int cycles = 0;
  int64_t now = 0;
  // Cycles that take 0..19 units, cycling.
  for (int i = 0; i < 1000; ++i) {
    now = std::max(now, s.NextCycleNs(now));
    s.CycleStarted(now);
    ++cycles;
    now += i % 20;
  }
  EXPECT_LE(cycles, now / 10 + 1);
}

// Cheap collectors run every cycle (they are not asked); an expensive one runs in the first
// cycle, then once at least a period of ticks later.
TEST(ScheduleTest, ExpensiveCollectorsRunOncePerPeriod) {
  const int64_t interval = 15, period = 60;
  std::optional<int64_t> last;
  std::vector<int64_t> ran;
  for (int64_t tick = 0; tick <= 240; tick += interval) {
    if (Schedule::ExpensiveDue(last, period, tick)) {
      ran.push_back(tick);
      last = tick;
    }
  }
  EXPECT_EQ(ran, (std::vector<int64_t>{0, 60, 120, 180, 240}));
  // A period that is not a multiple of the interval: the first tick at or past it.
  last.reset();
  ran.clear();
  for (int64_t tick = 0; tick <= 100; tick += 15) {
    if (Schedule::ExpensiveDue(last, 40, tick)) {
      ran.push_back(tick);
      last = tick;
    }
  }
  EXPECT_EQ(ran, (std::vector<int64_t>{0, 45, 90}));
  EXPECT_FALSE(Schedule::ExpensiveDue(std::nullopt, 0, 0));  // period 0: off
}

}  // namespace
}  // namespace latdoc::exporter

namespace latdoc::exporter {
namespace {

TEST(ParseDurationTest, UnitsAndErrors) {
  EXPECT_EQ(*ParseDurationNs("15s"), 15'000'000'000);
  EXPECT_EQ(*ParseDurationNs("500ms"), 500'000'000);
  EXPECT_EQ(*ParseDurationNs("1.5m"), 90'000'000'000);
  EXPECT_EQ(*ParseDurationNs("1h"), 3'600'000'000'000);
  EXPECT_EQ(*ParseDurationNs("2"), 2'000'000'000);
  EXPECT_EQ(*ParseDurationNs("0"), 0);
  for (const char* bad : {"", "s", "15x", "-1s", "1.2.3s", "fast", "15 s"}) {
    auto r = ParseDurationNs(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(),
              std::string("'") + bad + "' is not a duration (e.g. 15s, 500ms, 2m)");
  }
}

}  // namespace
}  // namespace latdoc::exporter
