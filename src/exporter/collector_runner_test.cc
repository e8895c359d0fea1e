#include "exporter/collector_runner.h"

#include <atomic>
#include <future>

#include <gtest/gtest.h>

#include "base/clock.h"

namespace latdoc::exporter {
namespace {

TEST(CollectorRunnerTest, ReturnsTheValueOrTheError) {
  CollectorRunner r("c", 5 * kNsPerSec);
  int out = 0;
  RunReport ok = r.Run<int>([] { return StatusOr<int>(42); }, &out);
  EXPECT_EQ(ok.outcome, RunOutcome::kOk);
  EXPECT_EQ(out, 42);
  RunReport bad = r.Run<int>([] { return StatusOr<int>(NotFound("x: gone")); }, &out);
  EXPECT_EQ(bad.outcome, RunOutcome::kError);
  EXPECT_EQ(bad.error, "x: gone");
  EXPECT_EQ(out, 42);  // untouched
}

// A hung collector costs the caller the timeout, no more; while it hangs it is not started
// again; once it ends, it runs normally, and its late result is not delivered.
TEST(CollectorRunnerTest, HungWorkTimesOutThenIsBusyUntilItEnds) {
  CollectorRunner r("hang", 200 * kNsPerMs);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  int out = 0;
  const int64_t t0 = MonoNowNs();
  RunReport first = r.Run<int>(
      [released] {
        released.wait();
        return StatusOr<int>(7);
      },
      &out);
  const int64_t waited = MonoNowNs() - t0;
  EXPECT_EQ(first.outcome, RunOutcome::kTimeout);
  EXPECT_EQ(first.error, "hang: no result within 0.2 s");
  EXPECT_GE(waited, 200 * kNsPerMs);
  EXPECT_LT(waited, 2 * kNsPerSec);
  EXPECT_TRUE(r.busy());
  std::atomic<int> calls{0};
  RunReport second = r.Run<int>([&calls] { ++calls; return StatusOr<int>(1); }, &out);
  EXPECT_EQ(second.outcome, RunOutcome::kBusy);
  EXPECT_EQ(calls.load(), 0);
  release.set_value();
  for (int i = 0; i < 200 && r.busy(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(r.busy());
  EXPECT_EQ(out, 0);  // the hung run's 7 was dropped
  RunReport third = r.Run<int>([] { return StatusOr<int>(9); }, &out);
  EXPECT_EQ(third.outcome, RunOutcome::kOk);
  EXPECT_EQ(out, 9);
}

}  // namespace
}  // namespace latdoc::exporter
