#include "http/client.h"

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/strings.h"
#include "http/asio.h"
#include "http/parser_input.h"
#include "http/stamped_read.h"

namespace latdoc::http {

// An IPv6 literal is bracketed (RFC 3986 section 3.2.2): "http://[::1]:8000", not "http://::1:8000".
std::string Url::Origin() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", scheme, v6 ? "[" : "", host, v6 ? "]" : "", port);
}

std::string Url::Spec(std::string_view target) const { return Origin() + base_path + std::string(target); }

StatusOr<Url> ParseUrl(std::string_view text) {
  Url u;
  std::string_view rest = text;
  if (auto p = rest.find("://"); p != std::string_view::npos) {
    u.scheme = ToLower(rest.substr(0, p));
    rest.remove_prefix(p + 3);
  } else {
    return InvalidArgument(fmt::format("'{}': not a URL (expected http://host:port)", text));
  }
  if (u.scheme != "http" && u.scheme != "https")
    return InvalidArgument(fmt::format("'{}': scheme must be http or https", text));
  rest = rest.substr(0, rest.find('#'));  // a fragment is never sent
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    u.query = std::string(rest.substr(q + 1));  // Azure's ?api-version=...: sent every time
    rest = rest.substr(0, q);
  }
  std::string_view hostport = rest.substr(0, rest.find('/'));
  if (auto at = hostport.rfind('@'); at != std::string_view::npos) {
    // Not echoed: the part before '@' is a user and often a password.
    return InvalidArgument(fmt::format("'{}://...@{}': credentials in the URL are not supported (give the key "
                                       "with --api-key-env)", u.scheme, rest.substr(at + 1)));
  }
  if (rest.size() > hostport.size()) {
    std::string_view path = rest.substr(hostport.size());
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    u.base_path = std::string(path);
  }
  u.port = u.tls() ? 443 : 80;
  if (!hostport.empty() && hostport.front() == '[') {  // [::1]:8000
    auto close = hostport.find(']');
    if (close == std::string_view::npos) return InvalidArgument(fmt::format("'{}': bad IPv6 host", text));
    u.host = std::string(hostport.substr(1, close - 1));
    hostport.remove_prefix(close + 1);
    if (!hostport.empty() && hostport.front() == ':') {
      auto port = ParseUint64(hostport.substr(1));
      if (!port || *port == 0 || *port > 65535)
        return InvalidArgument(fmt::format("'{}': bad port", text));
      u.port = static_cast<uint16_t>(*port);
    }
  } else if (auto c = hostport.rfind(':'); c != std::string_view::npos) {
    auto port = ParseUint64(hostport.substr(c + 1));
    if (!port || *port == 0 || *port > 65535)
      return InvalidArgument(fmt::format("'{}': bad port", text));
    u.port = static_cast<uint16_t>(*port);
    u.host = std::string(hostport.substr(0, c));
  } else {
    u.host = std::string(hostport);
  }
  if (u.host.empty()) return InvalidArgument(fmt::format("'{}': no host", text));
  return u;
}

std::string_view FailureKindName(FailureKind k) {
  switch (k) {
    case FailureKind::kNone: return "none";
    case FailureKind::kConnect: return "connect";
    case FailureKind::kTimeout: return "timeout";
    case FailureKind::kReset: return "reset";
    case FailureKind::kProtocol: return "protocol";
  }
  return "?";
}

namespace {

struct Exchange {
  ClientRequest req;
  ExchangeObserver* obs = nullptr;
  ExchangeResult res;
  bool retried = false;
};

class ConnBase : public std::enable_shared_from_this<ConnBase> {
 public:
  virtual ~ConnBase() = default;
  virtual void Run(std::unique_ptr<Exchange> ex) = 0;
  virtual void Close() = 0;
  // The connection's current deadline (connect, first byte or idle), MonoNowNs; the sweeper
  // calls OnDeadline() once it has passed.
  int64_t deadline_ns = INT64_MAX;
  virtual void OnDeadline() = 0;
  // A plain connection's socket became readable or writable (`events`: epoll's bits).
  virtual void OnReady(uint32_t events) = 0;
};

}  // namespace

struct HttpClient::Impl : std::enable_shared_from_this<HttpClient::Impl> {
  Impl(EventLoop& l, Url u, ClientOptions o)
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
    int64_t shortest = std::min({opts.connect_timeout_ns, opts.first_byte_timeout_ns,
                                 opts.idle_timeout_ns});
    if (opts.request_timeout_ns > 0) shortest = std::min(shortest, opts.request_timeout_ns);
    sweep_every_ns = std::clamp<int64_t>(shortest / 8, 5'000'000, 250'000'000);
  }

  void StartNew(std::unique_ptr<Exchange> ex);
  void Release(const std::shared_ptr<ConnBase>& c) { idle.push_back(c); }
  void Forget(ConnBase* c) { live.erase(c); }

  // Plain connections, once connected, leave Asio's reactor for an epoll set of the client's
  // own: each socket is added once, edge-triggered, and Asio sees the set as one descriptor.
  // Waiting on a socket through Asio costs an epoll_ctl() and a queued operation for every
  // read (async_wait re-arms the descriptor each time); here a batch of ready sockets costs
  // one epoll_wait(). Returns false (errno set) if the socket could not be added.
  bool Watch(int fd, ConnBase* c) {
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
  void OnPolled(int delta) {
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

  void WaitReady() {
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
  void PollReady() {
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
  void OnTimed(int delta) {
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

  void ArmSweep() {
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

  asio::io_context& io;
  Url url;
  ClientOptions opts;
  asio::ssl::context ssl_ctx;
  std::vector<std::shared_ptr<ConnBase>> idle;  // LIFO: the warmest connection first
  std::unordered_map<ConnBase*, std::weak_ptr<ConnBase>> live;
  uint64_t opened = 0;
  std::string host_header;
  asio::steady_timer sweep_timer;
  int64_t sweep_every_ns = 0;
  int64_t timed = 0;        // connections with a deadline
  uint64_t conn_serial = 0; // the last connection's id
  bool sweeping = false;
  uint64_t sweep_gen = 0;   // bumped on cancel, so a cancelled wait never re-arms
  int epfd = -1;            // the plain connections' epoll set (owned by epoll_desc)
  std::optional<asio::posix::stream_descriptor> epoll_desc;
  int64_t polled = 0;       // plain connections in an exchange
  int64_t real_minus_mono_ns = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC as of this batch
  int64_t batch_now_ns = 0;        // MonoNowNs as this batch of ready sockets began
  uint64_t reads = 0;              // plain reads that returned bytes
  uint64_t late_reads = 0;         // of them, begun more than late_read_ns after the bytes came
  int64_t late_read_ns = 1'000'000;
  bool epoll_waiting = false;
  uint64_t epoll_gen = 0;
};

namespace {

std::string NameText(X509_NAME* name) {
  if (!name) return "";
  BIO* bio = BIO_new(BIO_s_mem());
  if (!bio) return "";
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data && n > 0 ? std::string(data, static_cast<size_t>(n)) : "");
  BIO_free(bio);
  return out;
}

// The chain as the server sent it (a client's SSL_get_peer_cert_chain holds the leaf first).
std::vector<PeerCert> PeerChain(SSL* ssl) {
  std::vector<PeerCert> out;
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl);
  if (!chain) return out;
  for (int i = 0; i < sk_X509_num(chain); ++i) {
    X509* c = sk_X509_value(chain, i);
    PeerCert pc;
    pc.subject = NameText(X509_get_subject_name(c));
    pc.issuer = NameText(X509_get_issuer_name(c));
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (X509_digest(c, EVP_sha256(), md, &len) == 1) {
      static constexpr char kHex[] = "0123456789abcdef";
      for (unsigned int k = 0; k < len; ++k) {
        pc.sha256_hex += kHex[md[k] >> 4];
        pc.sha256_hex += kHex[md[k] & 15];
      }
    }
    out.push_back(std::move(pc));
  }
  return out;
}

// One connection, plain or TLS. Plan of an exchange: (new connection: resolve, connect,
// handshake) -> write the request -> read until the parser is done, handing each read's body
// bytes to the observer -> back to the pool (keep-alive) or closed.
//
// A plain connection, once connected, leaves Asio: its socket joins the client's epoll set
// (Impl::Watch) and is written with send() and read with recvmsg(), asking the kernel for each
// read's receive timestamp (SO_TIMESTAMPNS): a stream's timings are when its bytes reached this
// host, not when this thread got round to them, so thousands of streams on one core do not add
// the client's own queueing to the measurement. Bytes are fed to Beast's parser by hand (no
// composed operation, no timer per read). TLS connections stay on Asio's SSL stream.
template <bool kTls>
class Conn final : public ConnBase {
  using Stream = std::conditional_t<kTls, asio::ssl::stream<tcp::socket>, tcp::socket>;
  // A stream's reads are small; thousands of connections' buffers stay cache- and TLB-friendly
  // at 16 KiB (a larger body takes more reads; a header that does not fit doubles it).
  static constexpr size_t kReadBytes = 16 * 1024;

 public:
  explicit Conn(std::shared_ptr<HttpClient::Impl> client)
      : client_(std::move(client)), stream_(MakeStream()), resolver_(client_->io),
        id_(++client_->conn_serial) {}

  ~Conn() override {
    ClearDeadline();
    CloseFd();
    client_->Forget(this);
  }

  void Run(std::unique_ptr<Exchange> ex) override {
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

  void Close() override {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    resolver_.cancel();
    Sock().close(ec);
    CloseFd();
    if (ex_) Fail(FailureKind::kReset, "cancelled");
  }

  void OnDeadline() override {
    ClearDeadline();
    if (closed_ || !ex_) return;
    const int64_t total = client_->opts.request_timeout_ns;
    if (total > 0 && MonoNowNs() >= ex_->res.times.start_ns + total) {
      return Fail(FailureKind::kTimeout,
                  fmt::format("not finished within the request timeout ({:.3g} s)",
                              double(total) / 1e9));
    }
    if (!connected_) {
      return Fail(FailureKind::kTimeout,
                  fmt::format("connect {}: timed out", client_->url.Origin()));
    }
    Fail(FailureKind::kTimeout, body_seen_      ? "stream idle timeout"
                                : headers_seen_ ? "no body before the first-byte timeout"
                                                : "no response before the first-byte timeout");
  }

  void OnReady(uint32_t events) override {
    if (closed_ || !ex_) return;  // idle in the pool: its next exchange reads first
    const bool readable = (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    if (writing_) {
      if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) SendRest();
      // A server may answer before it has read the whole request (413 for a body too large):
      // read the answer now, as its edge will not come again.
      if (closed_ || !ex_ || !readable) return;
    }
    Drain((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
  }

 private:
  Stream MakeStream() {
    if constexpr (kTls) {
      return Stream(client_->io, client_->ssl_ctx);
    } else {
      return Stream(client_->io);
    }
  }
  tcp::socket& Sock() {
    if constexpr (kTls) {
      return stream_.next_layer();
    } else {
      return stream_;
    }
  }
  // The wait now under way ends by now + timeout_ns (none if 0), and never after the
  // exchange's own limit (request_timeout_ns from Send()).
  void SetDeadline(int64_t timeout_ns, int64_t now = MonoNowNs()) {
    int64_t d = timeout_ns > 0 ? now + timeout_ns : INT64_MAX;
    if (ex_ && client_->opts.request_timeout_ns > 0)
      d = std::min(d, ex_->res.times.start_ns + client_->opts.request_timeout_ns);
    PutDeadline(d);
  }
  void ClearDeadline() { PutDeadline(INT64_MAX); }
  void PutDeadline(int64_t d) {
    bool had = deadline_ns != INT64_MAX;
    deadline_ns = d;
    bool has = deadline_ns != INT64_MAX;
    if (has != had) client_->OnTimed(has ? 1 : -1);
  }

  void Resolve() {
    const Url& u = client_->url;
    boost::system::error_code literal_ec;
    auto addr = asio::ip::make_address(u.host, literal_ec);
    if (!literal_ec) {  // an IP literal: no resolver round trip (its first use starts a thread)
      ex_->res.times.dns_ns = MonoNowNs();
      return Connect(tcp::resolver::results_type::create(tcp::endpoint(addr, u.port), u.host,
                                                         std::to_string(u.port)));
    }
    resolver_.async_resolve(
        u.host, std::to_string(u.port),
        [self = Self()](boost::system::error_code ec, tcp::resolver::results_type results) {
          if (self->closed_ || !self->ex_) return;
          if (ec) {
            return self->Fail(FailureKind::kConnect,
                              fmt::format("resolve {}: {}", self->client_->url.host, ec.message()));
          }
          self->ex_->res.times.dns_ns = MonoNowNs();
          self->Connect(results);
        });
  }

  void Connect(const tcp::resolver::results_type& results) {
    asio::async_connect(Sock(), results, [self = Self()](boost::system::error_code ec,
                                                         const tcp::endpoint&) {
      if (self->closed_ || !self->ex_) return;
      if (ec) {
        return self->Fail(FailureKind::kConnect, fmt::format("connect {}: {}",
                                                             self->client_->url.Origin(),
                                                             ec.message()));
      }
      self->ex_->res.times.connect_ns = MonoNowNs();
      boost::system::error_code ignored;
      self->Sock().set_option(tcp::no_delay(true), ignored);
      if constexpr (kTls) {
        self->Handshake();
      } else {
        EnableReceiveTimestamps(self->Sock().native_handle());
        boost::system::error_code release_ec;
        int fd = self->Sock().release(release_ec);
        if (release_ec || !self->client_->Watch(fd, self.get())) {
          std::string why = release_ec ? release_ec.message() : std::strerror(errno);
          if (fd >= 0) ::close(fd);
          return self->Fail(FailureKind::kConnect,
                            fmt::format("connect {}: cannot poll the socket: {}",
                                        self->client_->url.Origin(), why));
        }
        self->fd_ = fd;
        self->connected_ = true;
        self->Write();
      }
    });
  }

  void Handshake() {
    if constexpr (kTls) {
      const std::string& host = client_->url.host;
      SSL_set_tlsext_host_name(stream_.native_handle(), host.c_str());
      if (!client_->opts.insecure) stream_.set_verify_callback(asio::ssl::host_name_verification(host));
      stream_.async_handshake(asio::ssl::stream_base::client,
                              [self = Self()](boost::system::error_code ec) {
                                if (self->closed_ || !self->ex_) return;
                                if (ec) {
                                  return self->Fail(
                                      FailureKind::kConnect,
                                      fmt::format("TLS handshake with {}: {}",
                                                  self->client_->url.Origin(), ec.message()));
                                }
                                self->ex_->res.times.tls_ns = MonoNowNs();
                                if (self->client_->opts.capture_peer_certs)
                                  self->ex_->res.peer_certs =
                                      PeerChain(self->stream_.native_handle());
                                self->connected_ = true;
                                self->Write();
                              });
    }
  }

  void Write() {
    const ClientRequest& r = ex_->req;
    const Url& u = client_->url;
    out_.clear();
    const char* query_sep = u.query.empty() ? "" : r.target.find('?') == std::string::npos ? "?" : "&";
    // Appended piece by piece (no fmt::format_to into the string: with clang, the call into
    // Debian's g++-built libfmt does not link; see CMakePresets.json's asan preset).
    using sv = std::string_view;
    for (sv part : {sv(r.method), sv(" "), sv(u.base_path), sv(r.target), sv(query_sep), sv(u.query),
                    sv(" HTTP/1.1\r\nHost: "), sv(client_->host_header),
                    sv("\r\nUser-Agent: latdoc\r\nAccept: */*\r\n")}) {
      out_ += part;
    }
    if (!client_->opts.keep_alive) out_ += "Connection: close\r\n";
    for (const auto& [k, v] : r.headers) {
      out_ += k;
      out_ += ": ";
      out_ += v;
      out_ += "\r\n";
    }
    if (!r.body.empty() || r.method == "POST") {
      out_ += "Content-Length: ";
      out_ += std::to_string(r.body.size());
      out_ += "\r\n";
    }
    out_ += "\r\n";
    out_ += r.body;
    SetDeadline(client_->opts.first_byte_timeout_ns);
    NewParser();
    in_.Clear();
    if constexpr (kTls) {
      asio::async_write(stream_, asio::buffer(out_),
                        [self = Self(), before_ns = MonoNowNs()](boost::system::error_code ec, size_t) {
                          if (self->closed_ || !self->ex_) return;
                          if (ec) return self->OnReadError(ec);
                          self->Sent(before_ns);
                        });
    } else {
      out_sent_ = 0;
      SetPolled(true);
      SendRest();
    }
  }

  void NewParser() {
    parser_.emplace();
    parser_->eager(true);
    parser_->body_limit(uint64_t{1} << 50);  // streams are consumed as they arrive
    parser_->header_limit(64 * 1024);
    headers_seen_ = false;
    body_seen_ = false;
  }

  // Plain: sends what is left of the request; a full socket buffer waits for EPOLLOUT.
  void SendRest() {
    int64_t before_ns = -1;  // just before the send() that wrote the request's last bytes
    while (out_sent_ < out_.size()) {
      before_ns = MonoNowNs();
      ssize_t n = ::send(fd_, out_.data() + out_sent_, out_.size() - out_sent_,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        out_sent_ += size_t(n);
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        writing_ = true;
        return;
      } else if (errno != EINTR) {
        // The server stopped reading (closed or reset): what it answered before that is still
        // in the socket, and is the better account of what happened.
        const boost::system::error_code send_ec(errno, boost::system::system_category());
        writing_ = false;
        Drain(true);
        if (!closed_ && ex_) OnReadError(send_ec);
        return;
      }
    }
    writing_ = false;
    Sent(before_ns);
  }

  // `before_ns`: a stamp taken just before the call that handed the request's last byte to the
  // kernel. Not one taken after it returned: on loopback the sending thread can be preempted
  // inside send() by the woken server, which answers before send() returns, and a stamp after
  // the call would then come after the answer's own (kernel) arrival stamp.
  void Sent(int64_t before_ns) {
    ex_->res.times.sent_ns = before_ns;
    ReadSome();
  }

  void ReadSome() {
    if constexpr (kTls) {
      stream_.async_read_some(
          asio::buffer(in_.space(), in_.space_size()),
          [self = Self()](boost::system::error_code ec, size_t n) {
            if (self->closed_ || !self->ex_) return;
            if (ec) return self->OnReadError(ec);
            if (self->Feed(n, MonoNowNs())) self->ReadSome();
          });
    }
    // Plain: the response's bytes raise edges in the client's set (OnReady).
  }

  // Kept alive: true if the socket holds nothing and is still open. Its edges came while no
  // exchange listened, so ask the socket itself (peek, without taking a byte). Over TLS the
  // bytes would be a record (an answer or an alert); TLS 1.3 session tickets come before the
  // first answer, so a quiet pooled socket stays quiet. Records that came in the same read as
  // the end of the last answer sit in Asio's SSL engine, where this cannot see them; a server's
  // unasked answer comes after its idle timeout, long after that read.
  bool QuietInPool() {
    int fd = fd_;
    if constexpr (kTls) {
      if (SSL_pending(stream_.native_handle()) > 0) return false;
      fd = Sock().native_handle();
    }
    char byte;
    ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }

  // Plain: reads what the socket holds, a bounded number of reads (fairness between streams).
  // The set is edge-triggered, so a read that stops early must not leave bytes unread unseen:
  // a read shorter than its buffer emptied the socket (bytes arriving later raise a new
  // edge), and after eight full reads the rest is read on a posted turn. `to_end`: the peer
  // has closed or failed, which raises no later edge: read until EOF or EAGAIN.
  void Drain(bool to_end = false) {
    const int64_t offset = client_->real_minus_mono_ns;
    for (int i = 0; i < 8; ++i) {
      int64_t at;
      char* space = in_.space();
      const size_t room = in_.space_size();
      ssize_t n = StampedRead(fd_, space, room, offset, &at);
      if (n > 0) {
        ++client_->reads;
        if (client_->batch_now_ns - at > client_->late_read_ns) ++client_->late_reads;
        if (!Feed(size_t(n), at)) return;
        if (size_t(n) < room && !to_end) return;
        continue;
      }
      if (n == 0) return OnReadError(asio::error::eof);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return OnReadError(boost::system::error_code(errno, boost::system::system_category()));
    }
    asio::post(client_->io, [self = Self(), to_end] {
      self->client_->real_minus_mono_ns = RealMinusMonoNs();
      self->client_->batch_now_ns = MonoNowNs();
      if (!self->closed_ && self->ex_ && !self->writing_) self->Drain(to_end);
    });
  }

  // Hands `n` bytes just read into in_ to the parser. `at`: when they arrived.
  // Returns true when more should be read.
  bool Feed(size_t n, int64_t at) {
    in_.Commit(n);
    boost::system::error_code ec = in_.FeedTo(*parser_);
    // 100 Continue, 103 Early Hints: interim responses, each a complete header-only message to
    // the parser. The final response follows on the same connection.
    while (!ec && !headers_seen_ && parser_->is_done() && parser_->get().result_int() / 100 == 1 &&
           parser_->get().result_int() != 101) {
      NewParser();
      ec = in_.FeedTo(*parser_);
    }
    if (!headers_seen_ && parser_->is_header_done()) {
      headers_seen_ = true;
      ex_->res.times.headers_ns = at;
      ex_->res.status = static_cast<int>(parser_->get().result_int());
      auto ct = parser_->get()[bhttp::field::content_type];
      ex_->obs->OnHeaders(ex_->res.status, std::string_view(ct.data(), ct.size()), at);
      if (closed_ || !ex_) return false;
    }
    std::string& body = parser_->get().body();
    if (!body.empty()) {
      body_seen_ = true;
      ex_->obs->OnBody(body, at);
      if (closed_ || !ex_) return false;
      body.clear();
    }
    if (parser_->is_done()) {
      Done(at);
      return false;
    }
    if (ec) {
      OnReadError(ec);
      return false;
    }
    // A streaming server sends its headers at once and its first body bytes after queueing and
    // prefill: the first-byte timeout runs until the body starts, the idle timeout after.
    SetDeadline(body_seen_ ? client_->opts.idle_timeout_ns : client_->opts.first_byte_timeout_ns,
                at);  // idle since these bytes arrived
    return true;
  }

  void OnReadError(boost::system::error_code ec) {
    bool got_some = parser_ && parser_->got_some();
    if ((ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) && parser_ &&
        parser_->got_some() && !parser_->is_done()) {
      // A body delimited by the end of the connection ends here (over TLS, many servers close
      // without a close_notify: the end is the same).
      boost::system::error_code eof_ec;
      parser_->put_eof(eof_ec);
      if (!eof_ec && parser_->is_done()) {
        std::string& body = parser_->get().body();
        int64_t now = MonoNowNs();
        if (!body.empty()) {
          ex_->obs->OnBody(body, now);
          if (closed_ || !ex_) return;
          body.clear();
        }
        return Done(now);
      }
    }
    bool closed_by_peer = ec == asio::error::eof || ec == bhttp::error::end_of_stream ||
                          ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
                          ec == asio::ssl::error::stream_truncated;
    if (closed_by_peer && !got_some && ex_->res.times.reused && !ex_->retried) {
      // A stale kept-alive connection: the server closed it while it sat in the pool.
      auto ex = std::move(ex_);
      ex->retried = true;
      ex->res.times = ExchangeTimes{ex->res.times.start_ns};
      CloseQuietly();
      client_->StartNew(std::move(ex));
      return;
    }
    if (closed_by_peer || ec == bhttp::error::partial_message) {
      return Fail(FailureKind::kReset,
                  headers_seen_ ? fmt::format("connection {} before the body was complete",
                                              ec == asio::error::connection_reset ? "reset" : "closed")
                                : fmt::format("connection {} before any response",
                                              ec == asio::error::connection_reset ? "reset" : "closed"));
    }
    if (ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category())
      return Fail(FailureKind::kProtocol, "invalid HTTP response: " + ec.message());
    Fail(FailureKind::kReset, ec.message());
  }

  void Done(int64_t now) {
    auto ex = std::move(ex_);
    ex->res.times.end_ns = now;
    CaptureTcpInfo(ex->res);
    ex->res.body_complete = true;
    ClearDeadline();
    SetPolled(false);
    // An answer that came before the request was all sent leaves the connection mid-request.
    bool keep = client_->opts.keep_alive && parser_->keep_alive() && in_.size() == 0 &&
                !writing_ && (kTls || out_sent_ == out_.size());
    if (keep) {
      client_->Release(shared_from_this());
    } else {
      CloseQuietly();
    }
    ex->obs->OnComplete(ex->res);
  }

  void Fail(FailureKind kind, std::string msg) {
    auto ex = std::move(ex_);
    ex->res.failure = kind;
    ex->res.error = std::move(msg);
    ex->res.times.end_ns = MonoNowNs();
    CaptureTcpInfo(ex->res);
    CloseQuietly();
    ex->obs->OnComplete(ex->res);
  }

  // Before the socket closes: its counters go with it.
  void CaptureTcpInfo(ExchangeResult& res) {
    if (!client_->opts.capture_tcp_info) return;
    int fd = fd_;
    if (fd < 0 && Sock().is_open()) fd = Sock().native_handle();
    res.tcp = ReadTcpConnInfo(fd);
    res.connection_id = id_;
  }

  void CloseQuietly() {
    closed_ = true;
    ClearDeadline();
    boost::system::error_code ec;
    resolver_.cancel();
    Sock().close(ec);
    CloseFd();
  }

  // Plain: closing the socket also takes it out of the client's epoll set.
  void CloseFd() {
    SetPolled(false);
    writing_ = false;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // While an exchange is under way the connection owns itself: no Asio handler holds it
  // between reads. Every caller of SetPolled(false) holds its own reference.
  void SetPolled(bool on) {
    if (on == polled_) return;
    polled_ = on;
    client_->OnPolled(on ? 1 : -1);
    if (on) {
      self_ = shared_from_this();
    } else {
      self_.reset();
    }
  }

  std::shared_ptr<Conn> Self() { return std::static_pointer_cast<Conn>(shared_from_this()); }

  std::shared_ptr<HttpClient::Impl> client_;
  Stream stream_;
  tcp::resolver resolver_;
  ParserInput in_{kReadBytes};  // bytes read and not yet taken by the parser
  std::optional<bhttp::response_parser<StreamBody>> parser_;
  std::unique_ptr<Exchange> ex_;
  std::string out_;
  bool connected_ = false;
  bool closed_ = false;
  bool headers_seen_ = false;
  bool body_seen_ = false;
  // Plain connections after connect (the socket released from Asio):
  int fd_ = -1;
  size_t out_sent_ = 0;   // bytes of out_ sent
  bool writing_ = false;  // waiting for room to send the rest of out_
  bool polled_ = false;   // counted in the client's `polled`
  std::shared_ptr<ConnBase> self_;  // set while polled_
  uint64_t id_;                     // ExchangeResult::connection_id
};

}  // namespace

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
