// Schedule: when `latdoc exporter` runs a cycle, and which collectors run in it.
//
// Cycles start at fixed times, start + k * interval. A cycle that overruns does not cause a
// burst of catch-up cycles: the next one starts at the first tick after it ended (missed
// ticks are skipped and counted). Cheap collectors run in every cycle; an expensive one runs
// in the first cycle and then in the first cycle that starts at least its own period after
// its previous run started. So the canary's rate is at most one request per interval.
// Pure arithmetic on nanosecond timestamps (the clock is the caller's); not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/status.h"

namespace latdoc::exporter {

class Schedule {
 public:
  // REQUIRES: interval_ns > 0.
  Schedule(int64_t start_ns, int64_t interval_ns);

  // When the next cycle starts: the next tick not yet run, or, when the previous cycle
  // overran past it, the first tick at or after `now_ns`.
  int64_t NextCycleNs(int64_t now_ns) const;
  // Records that a cycle started at `now_ns`; returns the ticks skipped since the previous
  // cycle (0 when on time).
  uint64_t CycleStarted(int64_t now_ns);
  uint64_t skipped_ticks() const { return skipped_; }

  // Whether an expensive collector with period `period_ns` that last ran in the cycle of tick
  // `last_ns` (nullopt: never) runs in the cycle of tick `now_ns`. Pass tick times, not the
  // moments cycles really started, so timer lateness cannot push a run a whole interval
  // back. A period <= 0 means never.
  static bool ExpensiveDue(std::optional<int64_t> last_ns, int64_t period_ns, int64_t now_ns);

 private:
  int64_t start_ns_;
  int64_t interval_ns_;
  int64_t next_tick_ = 0;  // index of the next tick to run
  uint64_t skipped_ = 0;
};

// Parses a duration for the command line: a number with a unit, "500ms", "15s", "1.5m",
// "1h", or a bare number of seconds. Error: "'<text>' is not a duration (e.g. 15s, 500ms, 2m)".
StatusOr<int64_t> ParseDurationNs(std::string_view text);

}  // namespace latdoc::exporter
