// The client's plain connections' epoll set and its deadline sweep (http/client.h).
#include <sys/epoll.h>

#include <chrono>
#include <memory>
#include <vector>

#include "base/clock.h"
#include "http/client_internal.h"
#include "http/stamped_read.h"

namespace latdoc::http {

using client_internal::ConnBase;

// Plain connections, once connected, leave Asio's reactor for an epoll set of the client's
// own: each socket is added once, edge-triggered, and Asio sees the set as one descriptor.
// Waiting on a socket through Asio costs an epoll_ctl() and a queued operation for every
// read (async_wait re-arms the descriptor each time); here a batch of ready sockets costs
// one epoll_wait(). Returns false (errno set) if the socket could not be added.
bool HttpClient::Impl::Watch(int fd, ConnBase* c) {
  if (epfd < 0) {
    int fd_set = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd_set < 0) return false;
    epfd = fd_set;
    epoll_desc.emplace(io, fd_set);
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = c;
  return ::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0;
}

// `delta` plain connections started (+1) or ended (-1) an exchange. The set is waited on
// only while some exchange is under way, so an idle client leaves its event loop free to
// return (as with the sweep).
void HttpClient::Impl::OnPolled(int delta) {
  polled += delta;
  if (polled > 0 && !epoll_waiting) {
    WaitReady();
  } else if (polled == 0 && epoll_waiting) {
    epoll_waiting = false;
    ++epoll_gen;
    boost::system::error_code ignored;
    epoll_desc->cancel(ignored);
  }
}

void HttpClient::Impl::WaitReady() {
  epoll_waiting = true;
  epoll_desc->async_wait(asio::posix::stream_descriptor::wait_read,
                         [w = weak_from_this(), gen = epoll_gen](boost::system::error_code ec) {
                           auto self = w.lock();
                           if (!self || ec || gen != self->epoll_gen) return;
                           self->epoll_waiting = false;
                           self->PollReady();
                           if (self->polled > 0 && !self->epoll_waiting) self->WaitReady();
                         });
}

// One batch of ready sockets. More than a batch stays ready in the set, and the next
// async_wait finds it at once (re-arming an edge-triggered descriptor re-checks it).
void HttpClient::Impl::PollReady() {
  constexpr int kBatch = 256;
  epoll_event events[kBatch];
  int n = ::epoll_wait(epfd, events, kBatch, 0);
  real_minus_mono_ns = RealMinusMonoNs();  // once a batch: receive stamps are CLOCK_REALTIME
  batch_now_ns = MonoNowNs();
  // Every socket in the set is open, and a connection closes its socket before it is
  // destroyed, so each connection in this batch is alive now; holding them all before any
  // handler runs keeps them so while earlier handlers run (one may close another).
  std::shared_ptr<ConnBase> ready[kBatch];
  for (int i = 0; i < n; ++i)
    ready[i] = static_cast<ConnBase*>(events[i].data.ptr)->shared_from_this();
  for (int i = 0; i < n; ++i) {
    ready[i]->OnReady(events[i].events);
    ready[i].reset();
  }
}

// `delta` connections got (+1) or lost (-1) a deadline. The sweep runs only while some
// connection has one, so an idle client leaves its event loop free to return.
void HttpClient::Impl::OnTimed(int delta) {
  timed += delta;
  if (timed > 0 && !sweeping) {
    sweeping = true;
    ArmSweep();
  } else if (timed == 0 && sweeping) {
    sweeping = false;
    ++sweep_gen;
    sweep_timer.cancel();
  }
}

void HttpClient::Impl::ArmSweep() {
  sweep_timer.expires_after(std::chrono::nanoseconds(sweep_every_ns));
  sweep_timer.async_wait([w = weak_from_this(), gen = sweep_gen](boost::system::error_code ec) {
    auto self = w.lock();
    if (!self || ec || gen != self->sweep_gen) return;
    int64_t now = MonoNowNs();
    std::vector<std::shared_ptr<ConnBase>> due;
    for (auto& [p, weak] : self->live)
      if (p->deadline_ns <= now)
        if (auto c = weak.lock()) due.push_back(std::move(c));
    for (auto& c : due) c->OnDeadline();
    if (self->sweeping && gen == self->sweep_gen) self->ArmSweep();
  });
}

}  // namespace latdoc::http
