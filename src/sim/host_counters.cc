#include "sim/host_counters.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <fmt/core.h>

namespace latdoc::sim {
namespace {

// Replaces `path` whole: a temporary file beside it, then rename(2) (atomic for a reader). No
// fsync: the reader is on this host, and the tree is a test's.
Status Replace(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return ErrnoStatus(errno, tmp);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return ErrnoStatus(errno ? errno : EIO, tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoStatus(errno, path);
  return Status::Ok();
}

// /proc/pressure/* (the kernel's Documentation/accounting/psi.rst): the averages are left at 0;
// the sampler reads the totals.
std::string Psi(int64_t some_us, int64_t full_us) {
  return fmt::format("some avg10=0.00 avg60=0.00 avg300=0.00 total={}\n"
                     "full avg10=0.00 avg60=0.00 avg300=0.00 total={}\n", some_us, full_us);
}

}  // namespace

Status HostCounters::Open(const std::string& dir) {
  if (dir.empty()) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(dir + "/proc/pressure", ec);
  if (ec) return Status(StatusCode::kInvalidArgument, "--sim-host-counters-dir " + dir + ": " + ec.message());
  dir_ = dir;
  Status s = Write();
  if (!s.ok()) return Status(s.code(), "--sim-host-counters-dir: " + s.message());
  return Status::Ok();
}

Status HostCounters::Write() {
  // /proc/vmstat: "name value" lines (mm/vmstat.c); the sampler's three and a neighbour.
  RETURN_IF_ERROR(Replace(dir_ + "/proc/vmstat",
                          fmt::format("nr_free_pages 4000000\npgmajfault {}\npswpin {}\npswpout {}\n",
                                      pgmajfault_, pswpin_, pswpout_)));
  RETURN_IF_ERROR(Replace(dir_ + "/proc/pressure/memory", Psi(psi_memory_us_, psi_memory_us_ / 2)));
  RETURN_IF_ERROR(Replace(dir_ + "/proc/pressure/cpu", Psi(0, 0)));
  return Replace(dir_ + "/proc/pressure/io", Psi(0, 0));
}

void HostCounters::OnSwapStallStart(int64_t wall_us) {
  if (!enabled()) return;
  const int64_t pages = std::max<int64_t>(1, wall_us / kSwapInPageUs);
  pswpin_ += pages;
  pgmajfault_ += pages;
  (void)Write();  // a test's tree: a failed write shows as no swap seen, which the test reports
}

void HostCounters::OnSwapStallEnd(int64_t wall_us) {
  if (!enabled()) return;
  psi_memory_us_ += wall_us;
  (void)Write();
}

}  // namespace latdoc::sim
