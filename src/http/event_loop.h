// EventLoop: one thread's I/O and timer loop (an Asio io_context behind a small interface), so
// modules above http/ get timers, posted tasks and signals without including Asio.
//
// Everything scheduled on a loop runs on the thread that called Run(). Post() and Stop() are the
// only methods safe to call from other threads. Timer deadlines are CLOCK_MONOTONIC nanoseconds,
// the same clock as MonoNowNs().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace latdoc::http {

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs until Stop() or until no work is left.
  void Run();
  // Runs ready handlers and those becoming ready within `budget_ns`; returns handlers run.
  size_t RunFor(int64_t budget_ns);
  void Stop();
  bool stopped() const;
  void Post(std::function<void()> fn);

  // A one-shot timer. Re-arming cancels the previous deadline (its callback does not run).
  // Destroying the timer cancels it.
  class Timer {
   public:
    explicit Timer(EventLoop& loop);
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
    void ExpireAtNs(int64_t mono_ns, std::function<void()> fn);
    void ExpireAfterNs(int64_t delay_ns, std::function<void()> fn);
    void Cancel();

   private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
  };

  // Calls `fn(signo)` on this loop each time SIGINT or SIGTERM arrives, until the loop is
  // destroyed. Once per loop.
  void OnTerminationSignal(std::function<void(int)> fn);

  // The underlying io_context, for http/ internals only (as void* to keep Asio out of here).
  void* native();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Raises RLIMIT_NOFILE's soft limit to the hard limit; returns the new soft limit. Load tests
// with thousands of connections need it.
uint64_t RaiseFileLimit();

}  // namespace latdoc::http
