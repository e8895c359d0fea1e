// HostSampler: samples this host's counters at a fixed interval on a thread of its own, on the
// client's clock, while a load runs (diagnose --local). Small on purpose: the server log file's
// size (its write rate), PSI cpu/io/memory "some" totals (/proc/pressure, Linux 4.20+), and
// pswpin/pswpout/pgmajfault (/proc/vmstat), every kHostSampleIntervalNs; and every
// kThreadSampleEvery-th sample, the run queue (procs_running of /proc/stat) and the CPU time of
// every thread of the server's processes (ServerCpu), when the server is found: the process
// listening on the port of `server_url`, else the server found by its command line
// (host::FindServerProcess), with its descendants (vLLM's engine core and workers). A file that
// cannot be read gives nullopt. The PSI and vmstat files may come from another tree than the
// rest (`counters_root`: a recorded or simulated /proc, for tests; sim/host_counters.h): the
// server's threads, the run queue and the online CPUs always come from `sysroot`.
//
// Thread safety: Start and Stop from one thread; samples() and server_cpu() after Stop.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "attribution/timeline.h"
#include "host/sysroot.h"

namespace latdoc::attribution {

constexpr int64_t kHostSampleIntervalNs = 10'000'000;  // 10 ms
// The server's threads and the run queue are read on every second sample (20 ms): a vLLM server
// has a hundred threads or more, a read each, and the kernel's CPU time of a thread moves in
// steps of its scheduler tick (4 ms at HZ=250) anyway.
constexpr int kThreadSampleEvery = 2;

class HostSampler {
 public:
  // `sysroot`: "/" or a recorded tree (tests); `log_file`: empty for none; `server_url`: the
  // URL under load ("" or no port: the server is looked for by its command line only);
  // `counters_root`: where /proc/vmstat and /proc/pressure/* are read ("": `sysroot`).
  HostSampler(std::string sysroot, std::string log_file, std::string server_url = "",
              std::string counters_root = "");
  ~HostSampler();
  HostSampler(const HostSampler&) = delete;
  HostSampler& operator=(const HostSampler&) = delete;

  // Start finds the server and takes the first sample before it returns; Stop the last before it
  // returns.
  void Start();
  void Stop();
  const std::vector<HostPoint>& samples() const { return samples_; }
  const ServerCpu& server_cpu() const { return server_cpu_; }

  // One sample now (exposed for tests); `threads`: also the run queue and the server's threads
  // (appended to server_cpu()).
  HostPoint SampleOnce(bool threads = false);
  // Finds the server's pid and its descendants into server_cpu() (exposed for tests).
  void FindServer();

 private:
  void SampleThreads(int64_t t_ns);

  std::string sysroot_, log_file_, server_url_, counters_root_;
  host::SysRoot fs_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<HostPoint> samples_;  // written by thread_ until Stop joins it
  ServerCpu server_cpu_;            // likewise
  std::map<int64_t, size_t> thread_index_;  // tid -> server_cpu_.threads
  bool schedstat_ = true;           // /proc/PID/task/TID/schedstat readable (CONFIG_SCHEDSTATS/SCHED_INFO)
};

}  // namespace latdoc::attribution
