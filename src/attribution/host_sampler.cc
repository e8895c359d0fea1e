#include "attribution/host_sampler.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/clock.h"

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

}  // namespace

HostSampler::HostSampler(std::string sysroot, std::string log_file)
    : sysroot_(std::move(sysroot)), log_file_(std::move(log_file)) {}

HostSampler::~HostSampler() { Stop(); }

HostPoint HostSampler::SampleOnce() const {
  HostPoint p;
  p.t_ns = MonoNowNs();
  if (!log_file_.empty()) {
    struct stat st;
    if (::stat(log_file_.c_str(), &st) == 0) p.log_bytes = static_cast<int64_t>(st.st_size);
  }
  p.psi_cpu_some_us = PsiSomeTotalUs(Join(sysroot_, "/proc/pressure/cpu"));
  p.psi_io_some_us = PsiSomeTotalUs(Join(sysroot_, "/proc/pressure/io"));
  p.psi_memory_some_us = PsiSomeTotalUs(Join(sysroot_, "/proc/pressure/memory"));
  // /proc/vmstat: "name value" per line (mm/vmstat.c); the three counters we need.
  if (FILE* f = std::fopen(Join(sysroot_, "/proc/vmstat").c_str(), "r")) {
    char name[64];
    long long v = 0;
    while (std::fscanf(f, "%63s %lld", name, &v) == 2) {
      if (std::strcmp(name, "pswpin") == 0) p.swap_in_pages = v;
      else if (std::strcmp(name, "pswpout") == 0) p.swap_out_pages = v;
      else if (std::strcmp(name, "pgmajfault") == 0) p.major_faults = v;
    }
    std::fclose(f);
  }
  return p;
}

void HostSampler::Start() {
  stop_ = false;
  // The first sample on the calling thread: the series starts when the load does, however late
  // the thread is scheduled.
  samples_.push_back(SampleOnce());
  const int64_t first_ns = samples_.back().t_ns;
  thread_ = std::thread([this, first_ns] {
    int64_t next_ns = first_ns;
    while (true) {
      next_ns += kHostSampleIntervalNs;
      const int64_t wait_ns = next_ns - MonoNowNs();
      if (wait_ns > 0) {
        timespec ts{static_cast<time_t>(wait_ns / kNsPerSec), static_cast<long>(wait_ns % kNsPerSec)};
        ::nanosleep(&ts, nullptr);
      } else {
        next_ns = MonoNowNs();  // fell behind (a loaded host): keep the interval from now
      }
      if (stop_.load(std::memory_order_relaxed)) break;
      samples_.push_back(SampleOnce());
    }
    samples_.push_back(SampleOnce());  // the last at Stop
  });
}

void HostSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace latdoc::attribution
