// CollectorRunner: runs one collector's work on its own thread with a deadline, so that a
// collector that hangs (an NFS stat, a wedged vendor tool, a server that accepts but never
// answers) cannot stall the exporter. The caller waits at most `timeout_ns`; a run that
// overruns is reported as timed out and keeps running in the background, and until it
// ends further runs are refused as busy (never two runs of one collector at once). Its
// result, when it finally comes, is dropped.
//
// The work function must own what it touches (capture copies or shared_ptrs): a timed-out run
// outlives the call that started it. The runner's destructor joins a finished thread and
// detaches one still running.
//
// Threading: Run() is called from one thread (the exporter's cycle thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/status.h"

namespace latdoc::exporter {

enum class RunOutcome { kOk, kError, kTimeout, kBusy };

struct RunReport {
  RunOutcome outcome = RunOutcome::kOk;
  std::string error;   // the work's error, or why it did not finish
  int64_t dur_ns = 0;  // wall time the caller waited
};

class CollectorRunner {
 public:
  CollectorRunner(std::string name, int64_t timeout_ns);
  ~CollectorRunner();
  CollectorRunner(const CollectorRunner&) = delete;
  CollectorRunner& operator=(const CollectorRunner&) = delete;

  // Runs `work` on a new thread and waits for it up to the timeout. On kOk, `*out` holds the
  // value the work returned.
  template <typename T>
  RunReport Run(std::function<StatusOr<T>()> work, T* out) {
    auto value = std::make_shared<std::unique_ptr<T>>();
    RunReport r = RunErased([work = std::move(work), value]() -> Status {
      StatusOr<T> v = work();
      if (!v.ok()) return v.status();
      *value = std::make_unique<T>(std::move(*v));
      return Status::Ok();
    });
    if (r.outcome == RunOutcome::kOk) *out = std::move(**value);
    return r;
  }

  const std::string& name() const { return name_; }
  // True while a timed-out run is still going.
  bool busy() const;

 private:
  struct Slot;
  RunReport RunErased(std::function<Status()> work);

  std::string name_;
  int64_t timeout_ns_;
  std::shared_ptr<Slot> slot_;  // the latest run
  std::thread thread_;
};

}  // namespace latdoc::exporter
