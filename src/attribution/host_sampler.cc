#include "attribution/host_sampler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/strings.h"
#include "host/listening_process.h"
#include "host/proc_parsers.h"
#include "host/server_process.h"
#include "http/client.h"

namespace latdoc::attribution {
namespace {

std::string Join(const std::string& root, const char* path) {
  if (root.empty() || root == "/") return path;
  return root + path;
}

// /proc/pressure/{cpu,io,memory} (Documentation/accounting/psi.rst):
//   some avg10=0.00 avg60=0.00 avg300=0.00 total=12345
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
// The "some" line's total: microseconds in which at least one task stalled on the resource.
std::optional<int64_t> PsiSomeTotalUs(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return std::nullopt;
  char buf[256];
  std::optional<int64_t> out;
  while (std::fgets(buf, sizeof buf, f)) {
    if (std::strncmp(buf, "some ", 5) != 0) continue;
    const char* total = std::strstr(buf, "total=");
    long long v = 0;
    if (total && std::sscanf(total + 6, "%lld", &v) == 1) out = v;
    break;
  }
  std::fclose(f);
  return out;
}

// /proc/stat (proc(5)): "procs_running 3": tasks runnable now (running or waiting for a CPU).
std::optional<int64_t> ProcsRunning(std::string_view text) {
  const auto at = text.find("\nprocs_running ");
  if (at == std::string_view::npos) return std::nullopt;
  const auto end = text.find('\n', at + 1);
  return ParseInt64(Trim(text.substr(at + 15, end == std::string_view::npos ? end : end - at - 15)));
}

int64_t ThreadCpuNowNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * kNsPerSec + ts.tv_nsec;
}

}  // namespace

HostSampler::HostSampler(std::string sysroot, std::string log_file, std::string server_url,
                         std::string counters_root)
    : sysroot_(std::move(sysroot)), log_file_(std::move(log_file)), server_url_(std::move(server_url)),
      counters_root_(counters_root.empty() ? sysroot_ : std::move(counters_root)),
      fs_(sysroot_.empty() ? "/" : sysroot_) {}

HostSampler::~HostSampler() { Stop(); }

void HostSampler::FindServer() {
  ServerCpu& s = server_cpu_;
  s.thread_interval_ns = kThreadSampleEvery * kHostSampleIntervalNs;
  if (auto online = fs_.ReadTrimmed("/sys/devices/system/cpu/online"); online.ok()) {
    if (auto cpus = host::ParseCpuList(*online)) s.online_cpus = int(cpus->size());
  }
  if (s.online_cpus == 0 && fs_.live()) s.online_cpus = int(sysconf(_SC_NPROCESSORS_ONLN));
  std::string why;
  if (!server_url_.empty()) {
    auto url = http::ParseUrl(server_url_);
    if (url.ok()) {
      auto pid = host::FindListeningPid(fs_, url->port);
      if (pid.ok()) {
        s.pid = *pid;
        s.found_by = fmt::format("listening on port {}", url->port);
      } else {
        why = pid.status().message();
      }
    }
  }
  if (s.pid == 0) {
    auto found = host::FindServerProcess(fs_, std::nullopt);
    if (found.ok()) {
      s.pid = found->pid;
      s.found_by = fmt::format("command line ({})", found->kind);
    } else {
      s.note = (why.empty() ? "" : why + "; ") + found.status().message();
      return;
    }
  }
  for (const host::ChildProcess& c : host::FindDescendants(fs_, s.pid)) s.child_pids.push_back(c.pid);
}

// /proc/PID/task/TID/schedstat (Documentation/scheduler/sched-stats.rst): "RUN_NS WAIT_NS SLICES":
// the thread's time on a CPU in ns, the same sum_exec_runtime that /proc/PID/task/TID/stat's
// utime + stime (fields 14, 15) give in clock ticks (sysconf(_SC_CLK_TCK), 10 ms): read when the
// kernel has it (CONFIG_SCHED_INFO), else stat.
void HostSampler::SampleThreads(int64_t t_ns) {
  static const int64_t kNsPerTick = kNsPerSec / std::max<long>(1, sysconf(_SC_CLK_TCK));
  std::vector<int64_t> pids = {server_cpu_.pid};
  pids.insert(pids.end(), server_cpu_.child_pids.begin(), server_cpu_.child_pids.end());
  for (int64_t pid : pids) {
    const std::string base = fmt::format("/proc/{}/task", pid);
    auto tids = fs_.List(base);
    if (!tids.ok()) continue;  // the process ended
    for (const std::string& t : *tids) {
      auto tid = ParseInt64(t);
      if (!tid) continue;
      const std::string dir = base + "/" + t;
      std::optional<int64_t> cpu_ns, wait_ns;
      if (schedstat_) {
        auto text = fs_.Read(dir + "/schedstat", 256);
        if (text.ok()) {
          auto w = SplitWhitespace(*text);
          if (!w.empty()) cpu_ns = ParseInt64(w[0]);
          if (w.size() >= 2) wait_ns = ParseInt64(w[1]);
        } else if (fs_.Exists(dir)) {
          schedstat_ = false;  // no schedstat on this kernel: stat from now on
        }
      }
      if (!schedstat_) {
        auto text = fs_.Read(dir + "/stat", 4096);
        if (text.ok())
          if (auto st = host::ParseTaskStat(*text)) cpu_ns = (st->utime_ticks + st->stime_ticks) * kNsPerTick;
      }
      if (!cpu_ns) continue;  // the thread ended between the listing and the read
      auto [it, fresh] = thread_index_.try_emplace(*tid, server_cpu_.threads.size());
      if (fresh) {
        ServerThread th;
        th.pid = pid;
        th.tid = *tid;
        if (auto comm = fs_.ReadTrimmed(dir + "/comm"); comm.ok()) th.comm = *comm;
        server_cpu_.threads.push_back(std::move(th));
      }
      server_cpu_.threads[it->second].cpu.push_back({t_ns, *cpu_ns, wait_ns.value_or(-1)});
    }
  }
}

HostPoint HostSampler::SampleOnce(bool threads) {
  HostPoint p;
  p.t_ns = MonoNowNs();
  if (!log_file_.empty()) {
    struct stat st;
    if (::stat(log_file_.c_str(), &st) == 0) p.log_bytes = static_cast<int64_t>(st.st_size);
  }
  p.psi_cpu_some_us = PsiSomeTotalUs(Join(counters_root_, "/proc/pressure/cpu"));
  p.psi_io_some_us = PsiSomeTotalUs(Join(counters_root_, "/proc/pressure/io"));
  p.psi_memory_some_us = PsiSomeTotalUs(Join(counters_root_, "/proc/pressure/memory"));
  // /proc/vmstat: "name value" per line (mm/vmstat.c); the three counters we need.
  if (FILE* f = std::fopen(Join(counters_root_, "/proc/vmstat").c_str(), "r")) {
    char name[64];
    long long v = 0;
    while (std::fscanf(f, "%63s %lld", name, &v) == 2) {
      if (std::strcmp(name, "pswpin") == 0) p.swap_in_pages = v;
      else if (std::strcmp(name, "pswpout") == 0) p.swap_out_pages = v;
      else if (std::strcmp(name, "pgmajfault") == 0) p.major_faults = v;
    }
    std::fclose(f);
  }
  if (threads) {
    if (auto stat = fs_.Read("/proc/stat", 1 << 20); stat.ok()) p.procs_running = ProcsRunning(*stat);
    if (server_cpu_.pid > 0) SampleThreads(p.t_ns);
  }
  return p;
}

void HostSampler::Start() {
  stop_ = false;
  FindServer();
  // The first sample on the calling thread: the series starts when the load does, however late
  // the thread is scheduled.
  samples_.push_back(SampleOnce(true));
  const int64_t first_ns = samples_.back().t_ns;
  thread_ = std::thread([this, first_ns] {
    const int64_t cpu0_ns = ThreadCpuNowNs();
    int64_t next_ns = first_ns;
    for (int n = 1;; ++n) {
      next_ns += kHostSampleIntervalNs;
      const int64_t wait_ns = next_ns - MonoNowNs();
      if (wait_ns > 0) {
        timespec ts{static_cast<time_t>(wait_ns / kNsPerSec), static_cast<long>(wait_ns % kNsPerSec)};
        ::nanosleep(&ts, nullptr);
      } else {
        next_ns = MonoNowNs();  // fell behind (a loaded host): keep the interval from now
      }
      if (stop_.load(std::memory_order_relaxed)) break;
      samples_.push_back(SampleOnce(n % kThreadSampleEvery == 0));
    }
    samples_.push_back(SampleOnce(true));  // the last at Stop
    server_cpu_.sampler_cpu_ns = ThreadCpuNowNs() - cpu0_ns;
    server_cpu_.sampler_wall_ns = samples_.back().t_ns - first_ns;
  });
}

void HostSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace latdoc::attribution
