// HostSampler: samples this host's counters at a fixed interval on a thread of its own, on the
// client's clock, while a load runs (diagnose --local). Small on purpose: the server log file's
// size (its write rate), PSI cpu/io/memory "some" totals (/proc/pressure, Linux 4.20+), and
// pswpin/pswpout/pgmajfault (/proc/vmstat). A file that cannot be read gives nullopt.
//
// Thread safety: Start and Stop from one thread; samples() after Stop.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "attribution/timeline.h"

namespace latdoc::attribution {

constexpr int64_t kHostSampleIntervalNs = 10'000'000;  // 10 ms

class HostSampler {
 public:
  // `sysroot`: "/" or a recorded tree (tests); `log_file`: empty for none.
  HostSampler(std::string sysroot, std::string log_file);
  ~HostSampler();
  HostSampler(const HostSampler&) = delete;
  HostSampler& operator=(const HostSampler&) = delete;

  // Start takes the first sample before it returns; Stop the last before it returns.
  void Start();
  void Stop();
  const std::vector<HostPoint>& samples() const { return samples_; }

  // One sample now (exposed for tests).
  HostPoint SampleOnce() const;

 private:
  std::string sysroot_, log_file_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<HostPoint> samples_;  // written by thread_ until Stop joins it
};

}  // namespace latdoc::attribution
