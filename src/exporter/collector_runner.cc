#include "exporter/collector_runner.h"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <fmt/core.h>

#include "base/clock.h"

namespace latdoc::exporter {

// Shared by the caller and the worker thread, so a worker that outlives its caller's wait
// still writes into live memory.
struct CollectorRunner::Slot {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
};

CollectorRunner::CollectorRunner(std::string name, int64_t timeout_ns)
    : name_(std::move(name)), timeout_ns_(timeout_ns) {}

CollectorRunner::~CollectorRunner() {
  if (!thread_.joinable()) return;
  if (busy()) thread_.detach();
  else thread_.join();
}

bool CollectorRunner::busy() const {
  if (!slot_) return false;
  std::lock_guard lock(slot_->mu);
  return !slot_->done;
}

RunReport CollectorRunner::RunErased(std::function<Status()> work) {
  RunReport r;
  if (busy()) {
    r.outcome = RunOutcome::kBusy;
    r.error = fmt::format("{}: the previous run, which timed out, has not ended yet", name_);
    return r;
  }
  if (thread_.joinable()) thread_.join();  // finished: busy() was false
  auto slot = std::make_shared<Slot>();
  slot_ = slot;
  const int64_t start = MonoNowNs();
  thread_ = std::thread([slot, work = std::move(work)] {
    Status st = work();
    std::lock_guard lock(slot->mu);
    slot->status = std::move(st);
    slot->done = true;
    slot->cv.notify_all();
  });
  std::unique_lock lock(slot->mu);
  bool done = slot->cv.wait_for(lock, std::chrono::nanoseconds(timeout_ns_),
                                [&] { return slot->done; });
  r.dur_ns = MonoNowNs() - start;
  if (!done) {
    r.outcome = RunOutcome::kTimeout;
    r.error = fmt::format("{}: no result within {:.3g} s", name_, NsToSec(timeout_ns_));
    return r;
  }
  if (!slot->status.ok()) {
    r.outcome = RunOutcome::kError;
    r.error = slot->status.message();
  }
  return r;
}

}  // namespace latdoc::exporter
