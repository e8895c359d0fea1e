// Time inside latdoc: int64 nanoseconds from the monotonic clock (DESIGN.md, "Time").
// Wall-clock time is only ever a label on output. Clock is the seam tests replace.
#pragma once

#include <cstdint>
#include <ctime>

namespace latdoc {

constexpr int64_t kNsPerUs = 1000;
constexpr int64_t kNsPerMs = 1000 * 1000;
constexpr int64_t kNsPerSec = 1000 * 1000 * 1000;

// Nanoseconds from CLOCK_MONOTONIC. Cheap (vDSO); safe from any thread.
inline int64_t MonoNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * kNsPerSec + ts.tv_nsec;
}

// Nanoseconds since the Unix epoch: labels, and times other tools record on the wall clock
// (a profiler's trace). Never durations: it can step.
inline int64_t WallNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * kNsPerSec + ts.tv_nsec;
}

inline double NsToMs(int64_t ns) { return static_cast<double>(ns) / 1e6; }
inline double NsToSec(int64_t ns) { return static_cast<double>(ns) / 1e9; }
inline int64_t MsToNs(double ms) { return static_cast<int64_t>(ms * 1e6); }
inline int64_t SecToNs(double s) { return static_cast<int64_t>(s * 1e9); }

// A clock that tests can drive by hand.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowNs() const = 0;
};

class MonotonicClock final : public Clock {
 public:
  int64_t NowNs() const override { return MonoNowNs(); }
};

class ManualClock final : public Clock {
 public:
  int64_t NowNs() const override { return now_ns_; }
  void AdvanceNs(int64_t ns) { now_ns_ += ns; }
  void SetNs(int64_t ns) { now_ns_ = ns; }

 private:
  int64_t now_ns_ = 0;
};

}  // namespace latdoc
