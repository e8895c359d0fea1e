// What the files of RunBench (loadgen/runner.h) share, private to src/loadgen:
//   runner.cc          checks the options, finds the model and the thread count, then calls
//                      RunLoadThreads()
//   runner_worker.cc   Worker, one per event-loop thread, and Flight, one per request in flight
//   runner_threads.cc  the Coordinator on the calling thread, and RunLoadThreads()
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "http/client.h"
#include "http/event_loop.h"
#include "http/tcp_info.h"
#include "loadgen/record.h"
#include "loadgen/runner.h"

namespace latdoc::loadgen::runner_internal {

class Coordinator;  // runner_threads.cc
class Flight;       // runner_worker.cc

// CPU time of the calling thread.
inline int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * kNsPerSec + ts.tv_nsec;
}

// A worker's counts for the coordinator's progress line and stop message: written by the
// worker only, read by the coordinator (relaxed: figures for display, never for results).
struct WorkerCounters {
  std::atomic<uint64_t> done{0}, failed{0};
  std::atomic<int> in_flight{0};
};

// One load thread: its own event loop, HTTP client, parser and records. Everything here runs on
// the worker's thread, except the constructor, the destructor and the read of the results,
// which the coordinator does before the thread starts or after it has been joined. The
// coordinator drives it by posting StartWarmup(), Begin(), Stop() and StopNow(); it answers by
// posting OnWarmupDone() (at most once) and OnWorkerDone() (exactly once) to the coordinator.
class Worker {
 public:
  Worker(const BenchOptions& o, int thread, int threads, const http::Url& url,
         const std::string& model, Coordinator* coord);
  ~Worker();

  http::EventLoop& loop() { return loop_; }
  WorkerCounters& counters() { return counters_; }

  // Sends this thread's share of the warm-up, then says so.
  void StartWarmup();

  // The measured phase begins at `start_ns` (the same instant for every thread).
  void Begin(int64_t start_ns);

  // A signal: send nothing more; the streams in flight get the drain timeout.
  void Stop(const std::string& why);

  // A second signal: the streams in flight are cancelled now.
  void StopNow();

  // A connection's later snapshot supersedes its earlier one (the counters are its totals).
  void OnTcp(uint64_t connection_id, const http::TcpConnInfo& t) { tcp_last_[connection_id] = t; }

  void Finished(Flight* f, RequestRecord* rec);

  // The thread's part of the run; call after the thread has been joined. Records keep their
  // number in the whole run as `index`.
  BenchRun TakeRun();
  const std::map<uint64_t, http::TcpConnInfo>& tcp_last() const { return tcp_last_; }

 private:
  enum class Phase { kIdle, kWarmup, kMeasured, kDone };
  bool open_loop() const { return o_.request_rate > 0; }

  static http::ClientOptions LoadClientOptions(const BenchOptions& o);

  bool MoreToSend() const;

  void WarmupDone();
  void Done();

  // Open loop: the run's one schedule of arrivals, arrival k due at next_due_ns_ when next_k_
  // is k (gamma inter-arrival times drawn in order from the seed). Every thread draws every
  // gap, so each sees the same schedule, and takes the arrivals k with k % threads == thread.
  void AdvanceSchedule();

  void ScheduleNext();

  // An arrival always becomes a record: sent now, or queued for a concurrency slot.
  void Arrive(int64_t due, uint64_t k);

  void SendQueued();

  RequestRecord* NewRecord(bool warmup, int64_t scheduled, uint64_t number);

  // The j-th request of this thread (warm-up, or the measured closed loop) is the run's
  // request j * threads + thread of its phase.
  void DispatchWarmup();
  void DispatchMeasured();

  void Send(RequestRecord* rec);

  const BenchOptions& o_;
  const int thread_, threads_;
  const std::string model_;
  Coordinator* const coord_;
  int concurrency_ = 0;        // closed loop: streams; open loop: the --max-concurrency share
  uint64_t num_requests_ = 0;  // closed loop: this thread's share of --num-requests
  uint64_t warmup_ = 0;        // this thread's share of --warmup
  int warmup_threads_ = 1;     // threads with a warm-up stream (they are the first ones)
  int warmup_streams_ = 0;     // this thread's warm-up streams
  http::EventLoop loop_;
  http::HttpClient client_;
  http::EventLoop::Timer dispatch_timer_, stop_timer_, drain_timer_;
  std::mt19937_64 rng_;
  ChunkParser parser_;
  WorkerCounters counters_;
  std::unordered_map<Flight*, std::unique_ptr<Flight>> flights_;
  std::deque<RequestRecord> records_;  // every request of this thread, warm-up included
  std::deque<size_t> queue_;           // open loop: arrivals (positions in records_) waiting
  Phase phase_ = Phase::kIdle;
  bool stopping_ = false;
  uint64_t warmup_sent_ = 0, measured_sent_ = 0;
  int in_flight_ = 0, max_in_flight_ = 0;
  uint64_t next_k_ = 0;  // open loop: the next arrival of the schedule
  int64_t next_due_ns_ = 0;
  int64_t start_ns_ = 0, done_ns_ = 0;
  int64_t cpu0_ns_ = 0, wall0_ns_ = 0;
  uint64_t events_ = 0, events0_ = 0, reads0_ = 0, late0_ = 0, connections0_ = 0;
  ThreadLoad load_;
  std::map<uint64_t, http::TcpConnInfo> tcp_last_;  // by connection id
};

// Runs the load of `o` for `model` on `threads` event-loop threads (each its own client of
// `url`), coordinated from `loop` on the calling thread: warm-up, measured phase, /metrics
// scrapes, signals and the progress line. Returns the run with the threads' records merged
// (MergeThreadRuns); never fails: each record says how its request ended.
BenchRun RunLoadThreads(const BenchOptions& o, http::EventLoop& loop, const http::Url& url,
                        int threads, std::string model);

}  // namespace latdoc::loadgen::runner_internal
