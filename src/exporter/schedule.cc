#include "exporter/schedule.h"

#include <charconv>
#include <cmath>
#include <string>

namespace latdoc::exporter {

Schedule::Schedule(int64_t start_ns, int64_t interval_ns)
    : start_ns_(start_ns), interval_ns_(interval_ns) {}

int64_t Schedule::NextCycleNs(int64_t now_ns) const {
  const int64_t due = start_ns_ + next_tick_ * interval_ns_;
  // On time, or late by less than an interval: run that tick (now, when it has passed).
  if (now_ns - due < interval_ns_) return due;
  // Overran by more: the first tick at or after now; the ones between are skipped.
  int64_t k = (now_ns - start_ns_ + interval_ns_ - 1) / interval_ns_;
  return start_ns_ + k * interval_ns_;
}

uint64_t Schedule::CycleStarted(int64_t now_ns) {
  // The tick this cycle stands for: the last tick at or before now (a timer may fire a little
  // late, never early by design of NextCycleNs).
  int64_t k = now_ns < start_ns_ ? 0 : (now_ns - start_ns_) / interval_ns_;
  uint64_t skipped = k > next_tick_ ? uint64_t(k - next_tick_) : 0;
  skipped_ += skipped;
  next_tick_ = (k >= next_tick_ ? k : next_tick_) + 1;
  return skipped;
}

bool Schedule::ExpensiveDue(std::optional<int64_t> last_ns, int64_t period_ns, int64_t now_ns) {
  if (period_ns <= 0) return false;
  if (!last_ns) return true;
  return now_ns - *last_ns >= period_ns;
}

StatusOr<int64_t> ParseDurationNs(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument("'" + std::string(text) + "' is not a duration (e.g. 15s, 500ms, 2m)");
  };
  size_t unit_at = text.find_first_not_of("0123456789.");
  std::string_view number = text.substr(0, unit_at);
  std::string_view unit = unit_at == std::string_view::npos ? "" : text.substr(unit_at);
  double v = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) return bad();
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1e9;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return bad();
  const double ns = v * scale;
  if (!std::isfinite(ns) || ns > 1e18) return bad();
  return static_cast<int64_t>(std::llround(ns));
}

}  // namespace latdoc::exporter
