// The host counters a swap stall shows in, for tests (--sim-host-counters-dir DIR): the simulator
// keeps a small /proc tree of its own under DIR, with the three files `latdoc diagnose --local`'s
// host sampler reads for swap (attribution/host_sampler.h): DIR/proc/vmstat (pswpin, pswpout,
// pgmajfault) and DIR/proc/pressure/{cpu,io,memory} (PSI "some" and "full" lines). A test points
// diagnose at DIR (--host-counters-root) and so sees swap at the instants the simulator stalled
// for it, on a host that does not swap. Nothing else of the host is simulated.
//
// At a swap stall's start, pswpin and pgmajfault grow by one page per kSwapInPageUs of the stall
// (its wall time); at its end, PSI memory "some" and "full" totals grow by the stall's wall time
// in microseconds. Files are replaced whole (a temporary file and rename(2)), so a reader never
// sees half a file. Not thread-safe: the sim's loop thread only.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace latdoc::sim {

constexpr int64_t kSwapInPageUs = 10;  // a 4 KiB page read from swap every 10 us (~400 MB/s)

class HostCounters {
 public:
  // Empty dir: keeps nothing. Else creates DIR/proc/pressure and writes the files' first state.
  Status Open(const std::string& dir);
  bool enabled() const { return !dir_.empty(); }
  // A swap stall of `wall_us` begins: its pages are read in (pswpin, pgmajfault).
  void OnSwapStallStart(int64_t wall_us);
  // ...and ends: its time is memory pressure stall time (PSI memory some and full).
  void OnSwapStallEnd(int64_t wall_us);

  int64_t swap_in_pages() const { return pswpin_; }
  int64_t psi_memory_us() const { return psi_memory_us_; }

 private:
  Status Write();

  std::string dir_;
  // Start values as a host that swapped a little since boot would show.
  int64_t pswpin_ = 1000, pswpout_ = 2000, pgmajfault_ = 5000, psi_memory_us_ = 100000;
};

}  // namespace latdoc::sim
