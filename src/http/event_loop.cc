#include "http/event_loop.h"

#include <sys/resource.h>

#include <chrono>
#include <memory>
#include <optional>

#include "http/asio.h"

namespace latdoc::http {

struct EventLoop::Impl {
  asio::io_context io{1};
  std::optional<asio::signal_set> signals;
};

EventLoop::EventLoop() : impl_(std::make_unique<Impl>()) {}
EventLoop::~EventLoop() = default;

void EventLoop::Run() {
  if (impl_->io.stopped()) impl_->io.restart();
  auto guard = asio::make_work_guard(impl_->io);
  impl_->io.run();
}

size_t EventLoop::RunFor(int64_t budget_ns) {
  if (impl_->io.stopped()) impl_->io.restart();
  return impl_->io.run_for(std::chrono::nanoseconds(budget_ns));
}

void EventLoop::Stop() { impl_->io.stop(); }
bool EventLoop::stopped() const { return impl_->io.stopped(); }
void EventLoop::Post(std::function<void()> fn) { asio::post(impl_->io, std::move(fn)); }
void* EventLoop::native() { return &impl_->io; }

namespace {

// Waits for the next signal of `set`, calls `fn`, and waits again: a second Ctrl-C reaches the
// handler too (the first may only have begun an orderly stop).
void WaitForSignal(asio::signal_set& set, std::shared_ptr<std::function<void(int)>> fn) {
  set.async_wait([&set, fn](const boost::system::error_code& ec, int signo) {
    if (ec) return;  // the set was cancelled or destroyed
    (*fn)(signo);
    WaitForSignal(set, fn);
  });
}

}  // namespace

void EventLoop::OnTerminationSignal(std::function<void(int)> fn) {
  impl_->signals.emplace(impl_->io, SIGINT, SIGTERM);
  WaitForSignal(*impl_->signals, std::make_shared<std::function<void(int)>>(std::move(fn)));
}

struct EventLoop::Timer::Impl {
  explicit Impl(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
};

EventLoop::Timer::Timer(EventLoop& loop)
    : impl_(std::make_unique<Impl>(*static_cast<asio::io_context*>(loop.native()))) {}
EventLoop::Timer::~Timer() = default;

void EventLoop::Timer::ExpireAtNs(int64_t mono_ns, std::function<void()> fn) {
  // steady_clock is CLOCK_MONOTONIC on Linux, so its epoch matches MonoNowNs().
  impl_->timer.expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(mono_ns)));
  impl_->timer.async_wait([fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec) fn();
  });
}

void EventLoop::Timer::ExpireAfterNs(int64_t delay_ns, std::function<void()> fn) {
  impl_->timer.expires_after(std::chrono::nanoseconds(delay_ns));
  impl_->timer.async_wait([fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec) fn();
  });
}

void EventLoop::Timer::Cancel() { impl_->timer.cancel(); }

uint64_t RaiseFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

}  // namespace latdoc::http
