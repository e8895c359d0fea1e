// The HTTP client object and its pool (http/client.h), and a connection's life: run an
// exchange, close, deadlines. The other parts are in the client_*.cc files beside it
// (http/client_internal.h lists them).
#include "http/client.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>

#include <fmt/core.h>

#include "base/clock.h"
#include "http/client_internal.h"

namespace latdoc::http {

namespace client_internal {

template <bool kTls>
Conn<kTls>::Conn(std::shared_ptr<HttpClient::Impl> client)
    : client_(std::move(client)),
      stream_(MakeStream()),
      resolver_(client_->io),
      id_(++client_->conn_serial) {}

template <bool kTls>
Conn<kTls>::~Conn() {
  ClearDeadline();
  CloseFd();
  client_->Forget(this);
}

template <bool kTls>
void Conn<kTls>::Run(std::unique_ptr<Exchange> ex) {
  if (connected_ && !QuietInPool()) {
    // The server closed it (or answered unasked: 408 and close; over TLS also a
    // close_notify) while it sat in the pool; nothing was sent on it, so a new connection
    // takes the exchange.
    CloseQuietly();
    ex->res.times = ExchangeTimes{ex->res.times.start_ns};
    return client_->StartNew(std::move(ex));
  }
  ex_ = std::move(ex);
  ex_->res.times.reused = connected_;
  if (connected_) return Write();
  SetDeadline(client_->opts.connect_timeout_ns);
  Resolve();
}

template <bool kTls>
void Conn<kTls>::Close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  resolver_.cancel();
  Sock().close(ec);
  CloseFd();
  if (ex_) Fail(FailureKind::kReset, "cancelled");
}

template <bool kTls>
void Conn<kTls>::OnDeadline() {
  ClearDeadline();
  if (closed_ || !ex_) return;
  const int64_t total = client_->opts.request_timeout_ns;
  if (total > 0 && MonoNowNs() >= ex_->res.times.start_ns + total) {
    return Fail(
        FailureKind::kTimeout,
        fmt::format("not finished within the request timeout ({:.3g} s)", double(total) / 1e9));
  }
  if (!connected_) {
    return Fail(FailureKind::kTimeout, fmt::format("connect {}: timed out", client_->url.Origin()));
  }
  Fail(FailureKind::kTimeout, body_seen_      ? "stream idle timeout"
                              : headers_seen_ ? "no body before the first-byte timeout"
                                              : "no response before the first-byte timeout");
}

template <bool kTls>
void Conn<kTls>::CloseQuietly() {
  closed_ = true;
  ClearDeadline();
  boost::system::error_code ec;
  resolver_.cancel();
  Sock().close(ec);
  CloseFd();
}

template <bool kTls>
// Plain: closing the socket also takes it out of the client's epoll set.
void Conn<kTls>::CloseFd() {
  SetPolled(false);
  writing_ = false;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

template <bool kTls>
// While an exchange is under way the connection owns itself: no Asio handler holds it
// between reads. Every caller of SetPolled(false) holds its own reference.
void Conn<kTls>::SetPolled(bool on) {
  if (on == polled_) return;
  polled_ = on;
  client_->OnPolled(on ? 1 : -1);
  if (on) {
    self_ = shared_from_this();
  } else {
    self_.reset();
  }
}

// Both kinds of connection (client_internal.h): the members defined in this file.
template Conn<false>::Conn(std::shared_ptr<HttpClient::Impl>);
template Conn<false>::~Conn();
template void Conn<false>::Run(std::unique_ptr<Exchange>);
template void Conn<false>::Close();
template void Conn<false>::OnDeadline();
template void Conn<false>::CloseQuietly();
template void Conn<false>::CloseFd();
template void Conn<false>::SetPolled(bool);
template Conn<true>::Conn(std::shared_ptr<HttpClient::Impl>);
template Conn<true>::~Conn();
template void Conn<true>::Run(std::unique_ptr<Exchange>);
template void Conn<true>::Close();
template void Conn<true>::OnDeadline();
template void Conn<true>::CloseQuietly();
template void Conn<true>::CloseFd();
template void Conn<true>::SetPolled(bool);

}  // namespace client_internal

using client_internal::Conn;
using client_internal::ConnBase;
using client_internal::Exchange;

HttpClient::Impl::Impl(EventLoop& l, Url u, ClientOptions o)
    : io(*static_cast<asio::io_context*>(l.native())),
      url(std::move(u)),
      opts(o),
      ssl_ctx(asio::ssl::context::tls_client),
      sweep_timer(io) {
  if (url.tls()) {
    ssl_ctx.set_default_verify_paths();
    ssl_ctx.set_verify_mode(opts.insecure ? asio::ssl::verify_none : asio::ssl::verify_peer);
  }
  // Timeouts are enforced by one sweep over the live connections rather than a timer per
  // read: re-arming a timer on every read of thousands of streams costs more than the read.
  int64_t shortest =
      std::min({opts.connect_timeout_ns, opts.first_byte_timeout_ns, opts.idle_timeout_ns});
  if (opts.request_timeout_ns > 0) shortest = std::min(shortest, opts.request_timeout_ns);
  sweep_every_ns = std::clamp<int64_t>(shortest / 8, 5'000'000, 250'000'000);
}

void HttpClient::Impl::StartNew(std::unique_ptr<Exchange> ex) {
  std::shared_ptr<ConnBase> c;
  if (url.tls()) {
    c = std::make_shared<Conn<true>>(shared_from_this());
  } else {
    c = std::make_shared<Conn<false>>(shared_from_this());
  }
  live[c.get()] = c;
  ++opened;
  c->Run(std::move(ex));
}

HttpClient::HttpClient(EventLoop& loop, Url url, ClientOptions options)
    : impl_(std::make_shared<Impl>(loop, std::move(url), options)) {
  const Url& u = impl_->url;
  bool default_port = (u.tls() && u.port == 443) || (!u.tls() && u.port == 80);
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  impl_->host_header = default_port ? host : fmt::format("{}:{}", host, u.port);
}

HttpClient::~HttpClient() { Shutdown(); }

void HttpClient::Send(ClientRequest request, ExchangeObserver* observer) {
  auto ex = std::make_unique<Exchange>();
  ex->req = std::move(request);
  ex->obs = observer;
  ex->res.times.start_ns = MonoNowNs();
  // A header line break would end the header early and smuggle the rest in as another (an API
  // key read from a file with its CRLF): refused before anything is sent, and the value is not
  // repeated in the message (it may be a key). Reported from the loop, as every result is.
  for (const auto& [name, value] : ex->req.headers) {
    if (name.find_first_of("\r\n:") == std::string::npos &&
        value.find_first_of("\r\n") == std::string::npos)
      continue;
    ex->res.failure = FailureKind::kProtocol;
    ex->res.error = fmt::format("request header {}: a line break in the name or value", name);
    auto shared = std::make_shared<std::unique_ptr<Exchange>>(std::move(ex));
    asio::post(impl_->io, [shared] {
      Exchange& e = **shared;
      e.res.times.end_ns = MonoNowNs();
      e.obs->OnComplete(e.res);
    });
    return;
  }
  if (impl_->opts.keep_alive && !impl_->idle.empty()) {
    auto c = std::move(impl_->idle.back());
    impl_->idle.pop_back();
    c->Run(std::move(ex));
    return;
  }
  impl_->StartNew(std::move(ex));
}

void HttpClient::Shutdown() {
  impl_->idle.clear();
  auto live = impl_->live;
  for (auto& [p, w] : live)
    if (auto c = w.lock()) c->Close();
}

const Url& HttpClient::url() const { return impl_->url; }
uint64_t HttpClient::connections_opened() const { return impl_->opened; }
uint64_t HttpClient::reads() const { return impl_->reads; }
uint64_t HttpClient::late_reads() const { return impl_->late_reads; }
size_t HttpClient::idle_connections() const { return impl_->idle.size(); }

namespace {
class Collector final : public ExchangeObserver {
 public:
  explicit Collector(std::function<void(const ExchangeResult&, std::string)> done)
      : done_(std::move(done)) {}
  void OnBody(std::string_view data, int64_t) override { body_.append(data); }
  void OnComplete(const ExchangeResult& r) override {
    auto done = std::move(done_);
    std::string body = std::move(body_);
    delete this;
    done(r, std::move(body));
  }

 private:
  std::function<void(const ExchangeResult&, std::string)> done_;
  std::string body_;
};
}  // namespace

void FetchAll(HttpClient& client, ClientRequest request,
              std::function<void(const ExchangeResult&, std::string body)> done) {
  client.Send(std::move(request), new Collector(std::move(done)));
}

}  // namespace latdoc::http
