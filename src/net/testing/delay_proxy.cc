#include "net/testing/delay_proxy.h"

#include <algorithm>
#include <deque>
#include <random>

#include "base/clock.h"
#include "http/asio.h"

namespace latdoc::net::testing {

using http::asio::ip::tcp;
namespace asio = http::asio;

struct DelayProxy::Impl : std::enable_shared_from_this<DelayProxy::Impl> {
  Impl(http::EventLoop& l, DelayProxyOptions o)
      : loop(l), io(*static_cast<asio::io_context*>(l.native())), opts(o), acceptor(io), rng(o.seed) {}

  void Accept();
  int64_t Draw(bool first) {
    int64_t d = opts.delay_ns + (first ? opts.first_chunk_delay_ns : 0);
    if (opts.jitter_ns > 0) d += std::uniform_int_distribution<int64_t>(0, opts.jitter_ns)(rng);
    return d;
  }
  size_t Record(int64_t delay_ns, std::string_view chunk, bool first) {
    std::lock_guard lock(mu);
    applied.push_back({delay_ns, -1, std::string(chunk.substr(0, chunk.find("\r\n"))), first});
    return applied.size() - 1;
  }
  void Forwarded(size_t index, int64_t actual_ns) {
    std::lock_guard lock(mu);
    applied[index].actual_ns = actual_ns;
  }

  http::EventLoop& loop;
  asio::io_context& io;
  DelayProxyOptions opts;
  tcp::acceptor acceptor;
  std::mt19937_64 rng;
  mutable std::mutex mu;
  std::vector<AppliedDelay> applied;
  uint64_t accepted = 0;
  std::vector<std::weak_ptr<void>> sessions;
  bool stopped = false;
};

namespace {

// One client connection and its upstream. Plan: client -> (delay queue) -> upstream, and
// upstream -> client as it arrives; either side closing closes both.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<DelayProxy::Impl> proxy, tcp::socket client)
      : proxy_(std::move(proxy)), client_(std::move(client)), upstream_(proxy_->io),
        timer_(proxy_->loop) {}

  void Start() {
    ReadClient();
    if (proxy_->opts.hang) return;
    tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), proxy_->opts.upstream_port);
    upstream_.async_connect(ep, [self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return self->Close();
      self->upstream_connected_ = true;
      self->ReadUpstream();
      self->Pump();
    });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    timer_.Cancel();
    boost::system::error_code ec;
    client_.close(ec);
    upstream_.close(ec);
  }

 private:
  void ReadClient() {
    client_.async_read_some(asio::buffer(in_), [self = shared_from_this()](
                                                   boost::system::error_code ec, size_t n) {
      if (ec || self->closed_) return self->Close();
      int64_t now = MonoNowNs();
      std::string_view chunk(self->in_.data(), n);
      if (!self->proxy_->opts.hang) {
        bool first = self->first_;
        self->first_ = false;
        int64_t d = self->proxy_->Draw(first);
        size_t index = self->proxy_->Record(d, chunk, first);
        int64_t at = std::max(now + d, self->last_at_);
        self->last_at_ = at;
        self->queue_.push_back({at, now, index, std::string(chunk)});
        self->Pump();
      }
      self->ReadClient();
    });
  }

  // Forwards the queue's head once it is due; one write at a time.
  void Pump() {
    if (closed_ || writing_ || !upstream_connected_ || queue_.empty()) return;
    const Pending& head = queue_.front();
    int64_t now = MonoNowNs();
    if (now < head.at_ns) {
      timer_.ExpireAtNs(head.at_ns, [self = shared_from_this()] { self->Pump(); });
      return;
    }
    proxy_->Forwarded(head.record, now - head.arrival_ns);
    writing_ = true;
    asio::async_write(upstream_, asio::buffer(head.data),
                      [self = shared_from_this()](boost::system::error_code ec, size_t) {
                        self->writing_ = false;
                        if (ec) return self->Close();
                        self->queue_.pop_front();
                        self->Pump();
                      });
  }

  void ReadUpstream() {
    upstream_.async_read_some(asio::buffer(back_), [self = shared_from_this()](
                                                       boost::system::error_code ec, size_t n) {
      if (ec || self->closed_) return self->Close();
      asio::async_write(self->client_, asio::buffer(self->back_.data(), n),
                        [self](boost::system::error_code ec2, size_t) {
                          if (ec2) return self->Close();
                          self->ReadUpstream();
                        });
    });
  }

  std::shared_ptr<DelayProxy::Impl> proxy_;
  tcp::socket client_;
  tcp::socket upstream_;
  http::EventLoop::Timer timer_;
  std::array<char, 16384> in_{};
  std::array<char, 16384> back_{};
  struct Pending {
    int64_t at_ns;
    int64_t arrival_ns;
    size_t record;
    std::string data;
  };
  std::deque<Pending> queue_;
  int64_t last_at_ = 0;
  bool first_ = true;
  bool upstream_connected_ = false;
  bool writing_ = false;
  bool closed_ = false;
};

}  // namespace

void DelayProxy::Impl::Accept() {
  acceptor.async_accept([self = shared_from_this()](boost::system::error_code ec, tcp::socket s) {
    if (self->stopped) return;
    if (!ec) {
      boost::system::error_code ignored;
      s.set_option(tcp::no_delay(true), ignored);
      auto session = std::make_shared<Session>(self, std::move(s));
      self->sessions.push_back(session);
      {
        std::lock_guard lock(self->mu);
        ++self->accepted;
      }
      session->Start();
    }
    self->Accept();
  });
}

DelayProxy::DelayProxy(http::EventLoop& loop, DelayProxyOptions options)
    : impl_(std::make_shared<Impl>(loop, options)) {}

DelayProxy::~DelayProxy() {
  impl_->stopped = true;
  boost::system::error_code ec;
  impl_->acceptor.close(ec);
  for (auto& w : impl_->sessions)
    if (auto s = w.lock()) std::static_pointer_cast<Session>(s)->Close();
}

StatusOr<uint16_t> DelayProxy::Start() {
  boost::system::error_code ec;
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(ep, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status(StatusCode::kUnavailable, "delay proxy: listen: " + ec.message());
  impl_->Accept();
  return impl_->acceptor.local_endpoint().port();
}

std::vector<AppliedDelay> DelayProxy::applied() const {
  std::lock_guard lock(impl_->mu);
  return impl_->applied;
}

uint64_t DelayProxy::connections() const {
  std::lock_guard lock(impl_->mu);
  return impl_->accepted;
}

ProxyThread::ProxyThread(DelayProxyOptions options) : proxy_(loop_, options) {
  StatusOr<uint16_t> port = proxy_.Start();
  if (port.ok()) {
    port_ = *port;
  } else {
    status_ = port.status();
  }
  thread_ = std::thread([this] { loop_.Run(); });
}

ProxyThread::~ProxyThread() {
  loop_.Stop();
  thread_.join();
}

}  // namespace latdoc::net::testing
