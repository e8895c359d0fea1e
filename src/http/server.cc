#include "http/server.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <deque>
#include <optional>
#include <unordered_map>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/strings.h"
#include "http/asio.h"
#include "http/parser_input.h"
#include "http/stamped_read.h"

namespace latdoc::http {

std::string_view StatusText(int status) {
  switch (status) {
    case 100: return "100 Continue";
    case 200: return "200 OK";
    case 400: return "400 Bad Request";
    case 401: return "401 Unauthorized";
    case 404: return "404 Not Found";
    case 405: return "405 Method Not Allowed";
    case 408: return "408 Request Timeout";
    case 413: return "413 Payload Too Large";
    case 422: return "422 Unprocessable Entity";
    case 429: return "429 Too Many Requests";
    case 500: return "500 Internal Server Error";
    case 502: return "502 Bad Gateway";
    case 503: return "503 Service Unavailable";
    case 504: return "504 Gateway Timeout";
    default: return "500 Internal Server Error";
  }
}

std::string_view Request::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return {};
}

namespace {

// "Mon, 30 Nov 2026 00:36:47 GMT", cached per second.
const std::string& HttpDate() {
  static thread_local time_t last = 0;
  static thread_local std::string cached;
  time_t now = ::time(nullptr);
  if (now != last) {
    last = now;
    tm g;
    gmtime_r(&now, &g);
    char buf[64];
    strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &g);
    cached = buf;
  }
  return cached;
}

std::string ErrorJson(int code, std::string_view type, std::string_view message) {
  return fmt::format(R"({{"error":{{"message":"{}","type":"{}","param":null,"code":{}}}}})",
                     message, type, code);
}

}  // namespace

class Connection;

struct Server::Impl : std::enable_shared_from_this<Server::Impl> {
  Impl(EventLoop& l, ServerOptions o, Handler h)
      : loop(l),
        io(*static_cast<asio::io_context*>(l.native())),
        options(std::move(o)),
        handler(std::move(h)),
        acceptor(io) {}

  void Accept();

  EventLoop& loop;
  asio::io_context& io;
  ServerOptions options;
  Handler handler;
  tcp::acceptor acceptor;
  bool stopped = false;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns;
};

// One accepted connection; it is also the ResponseStream of the request in progress.
//
// Plan of a connection's life: read a request (header first, so that `Expect: 100-continue` is
// answered), hand it to the handler, write what the handler produces (through a delay queue
// when a network delay is simulated), then either read the next request (keep-alive) or close.
// While a response is in progress, an async_wait on the socket notices a peer that goes away.
class Connection final : public ResponseStream, public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<Server::Impl> srv, tcp::socket s)
      : srv_(std::move(srv)), socket_(std::move(s)), timer_(srv_->io), delay_timer_(srv_->io) {
    boost::system::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    EnableReceiveTimestamps(socket_.native_handle());
    auto ep = socket_.remote_endpoint(ec);
    if (!ec) remote_ = fmt::format("{}:{}", ep.address().to_string(), ep.port());
  }

  ~Connection() override { srv_->conns.erase(this); }

  void Start() { ReadRequest(); }

  void Close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    timer_.cancel();
    delay_timer_.cancel();
    socket_.close(ec);
    receipts_.clear();
    chunk_written_ = nullptr;
    if (in_response_) {
      in_response_ = false;
      if (peer_closed_) {
        auto fn = std::move(peer_closed_);
        peer_closed_ = nullptr;
        fn();
      }
    }
  }

  // ResponseStream.
  void Send(int status, std::string_view content_type, std::string_view body,
            const Headers& extra) override {
    if (!in_response_ || headers_sent_) return;
    std::string out = Head(status, content_type, extra);
    out += fmt::format("content-length: {}\r\n\r\n", body.size());
    if (!head_) out.append(body);  // a HEAD response has the length of the body it omits
    Write(out);
    end_queued_ = true;
    QueueMarker(Marker::kEnd);
  }

  void BeginChunked(int status, std::string_view content_type, const Headers& extra) override {
    if (!in_response_ || headers_sent_) return;
    // An HTTP/1.0 client knows no chunked coding (RFC 9112 6.1): the body is delimited by the
    // connection's close instead, as uvicorn (h11) sends it.
    if (http10_) keep_alive_ = false;
    std::string out = Head(status, content_type, extra);
    out += http10_ ? "\r\n" : "transfer-encoding: chunked\r\n\r\n";
    Write(out);
  }

  void WriteChunk(std::string_view data) override {
    if (!in_response_ || !headers_sent_ || end_queued_ || data.empty() || head_) return;
    if (http10_) {
      Write(data, "", "", /*receipt=*/true);
      return;
    }
    char head[20];
    char* end = std::to_chars(head, head + sizeof head - 2, data.size(), 16).ptr;
    *end++ = '\r';
    *end++ = '\n';
    Write(std::string_view(head, end - head), data, "\r\n", /*receipt=*/true);
  }

  void EndChunked() override {
    if (!in_response_ || !headers_sent_ || end_queued_) return;
    if (!head_ && !http10_) Write("0\r\n\r\n");
    end_queued_ = true;
    QueueMarker(Marker::kEnd);
  }

  void Abort(bool reset) override {
    if (!in_response_ || end_queued_) return;
    end_queued_ = true;
    QueueMarker(reset ? Marker::kReset : Marker::kCloseFin);
  }

  bool finished() const override { return closed_ || !in_response_ || end_queued_; }
  void OnPeerClosed(std::function<void()> fn) override { peer_closed_ = std::move(fn); }
  void OnChunkWritten(std::function<void(uint64_t, int64_t)> fn) override {
    chunk_written_ = std::move(fn);
  }

 private:
  enum class Marker { kNone, kEnd, kReset, kCloseFin };
  struct Pending {
    int64_t due_ns;
    std::string bytes;
    Marker marker = Marker::kNone;
  };

  std::string Head(int status, std::string_view content_type, const Headers& extra) {
    headers_sent_ = true;
    std::string out = fmt::format("HTTP/1.1 {}\r\ndate: {}\r\nserver: {}\r\n", StatusText(status),
                                  HttpDate(), srv_->options.server_header);
    if (!content_type.empty()) out += fmt::format("content-type: {}\r\n", content_type);
    for (const auto& [k, v] : extra) out += fmt::format("{}: {}\r\n", k, v);
    if (!keep_alive_) out += "connection: close\r\n";
    return out;
  }

  void ArmTimer(int64_t ns) {
    timer_.expires_after(std::chrono::nanoseconds(ns));
    timer_.async_wait([w = weak_from_this()](const boost::system::error_code& ec) {
      if (ec) return;
      if (auto self = w.lock()) self->Close();
    });
  }

  // Reads the next request: waits for readability, drains the socket with stamped reads and
  // feeds Beast's parser by hand, so `received_ns` is when the request's last byte reached
  // this host (the simulator's ground truth), however busy this thread was.
  void ReadRequest() {
    if (closed_) return;
    parser_.emplace();
    parser_->eager(true);
    parser_->body_limit(srv_->options.max_body_bytes);
    parser_->header_limit(64 * 1024);
    header_handled_ = false;
    ArmTimer(requests_ == 0 ? srv_->options.request_timeout_ns
                            : srv_->options.keep_alive_timeout_ns);
    if (in_.size() > 0 && Parse(last_read_ns_)) return;  // a pipelined request already here
    WaitRequest();
  }

  void WaitRequest() {
    socket_.async_wait(tcp::socket::wait_read,
                       [self = shared_from_this()](boost::system::error_code ec) {
                         if (self->closed_) return;
                         if (ec) return self->Close();
                         self->ReadMore();
                       });
  }

  void ReadMore() {
    const int fd = socket_.native_handle();
    const int64_t offset = RealMinusMonoNs();
    for (int i = 0; i < 8; ++i) {
      int64_t at;
      ssize_t n = StampedRead(fd, in_.space(), in_.space_size(), offset, &at);
      if (n > 0) {
        in_.Commit(size_t(n));
        last_read_ns_ = at;
        if (Parse(at)) return;
        continue;
      }
      if (n == 0) return Close();  // the peer closed, between or inside requests
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return Close();
    }
    WaitRequest();
  }

  // Feeds the buffered bytes to the parser. Returns true when reading stops here: the request
  // is complete (handed on) or bad (answered).
  bool Parse(int64_t at) {
    boost::system::error_code ec = in_.FeedTo(*parser_);
    if (ec) {
      OnReadError(ec);
      return true;
    }
    if (parser_->is_header_done() && !header_handled_) {
      header_handled_ = true;
      // A request has begun: it must now arrive whole within the request timeout.
      ArmTimer(srv_->options.request_timeout_ns);
      auto expect = parser_->get()[bhttp::field::expect];
      if (IEquals(Trim(std::string_view(expect.data(), expect.size())), "100-continue") &&
          !parser_->is_done()) {
        auto msg = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
        asio::async_write(socket_, asio::buffer(*msg),
                          [self = shared_from_this(), msg](boost::system::error_code wec, size_t) {
                            if (wec) self->Close();
                          });
      }
    }
    if (!parser_->is_done()) return false;
    OnRequest(at);
    return true;
  }

  void OnReadError(boost::system::error_code ec) {
    if (ec == bhttp::error::body_limit) {
      SendRaw(413, ErrorJson(413, "BadRequestError",
                             fmt::format("Request body is larger than the limit of {} bytes",
                                         srv_->options.max_body_bytes)));
      return;
    }
    if (ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category() &&
        ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
      SendRaw(400, ErrorJson(400, "BadRequestError", "Malformed HTTP request: " + ec.message()));
      return;
    }
    Close();
  }

  // An error response outside the handler; the connection closes after it.
  void SendRaw(int status, std::string body) {
    in_response_ = true;
    keep_alive_ = false;
    headers_sent_ = false;
    end_queued_ = false;
    head_ = false;
    Send(status, "application/json", body, {});
  }

  void OnRequest(int64_t received_ns) {
    if (closed_) return;
    timer_.cancel();
    ++requests_;
    auto& msg = parser_->get();
    Request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    req.path = req.target.substr(0, req.target.find('?'));
    req.body = std::move(msg.body());
    req.keep_alive = msg.keep_alive();
    req.remote = remote_;
    req.received_ns = received_ns;
    for (const auto& f : msg) {
      req.headers.emplace_back(ToLower(std::string_view(f.name_string().data(),
                                                        f.name_string().size())),
                               std::string(f.value()));
    }
    keep_alive_ = req.keep_alive;
    http10_ = msg.version() < 11;
    head_ = req.method == "HEAD";
    in_response_ = true;
    headers_sent_ = false;
    end_queued_ = false;
    peer_closed_ = nullptr;
    chunk_written_ = nullptr;
    chunk_seq_ = 0;
    WatchPeer();
    srv_->handler(req, shared_from_this());
  }

  // Completes when the socket becomes readable: EOF or an error means the peer went away.
  void WatchPeer() {
    if (watching_) return;
    watching_ = true;
    socket_.async_wait(tcp::socket::wait_read,
                       [self = shared_from_this()](boost::system::error_code ec) {
                         self->watching_ = false;
                         if (self->closed_ || ec == asio::error::operation_aborted) return;
                         char c;
                         ssize_t n = ::recv(self->socket_.native_handle(), &c, 1,
                                            MSG_PEEK | MSG_DONTWAIT);
                         if (ec || n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                           self->Close();
                         }
                         // n > 0: a pipelined request; it is read after this response.
                       });
  }

  // Writes `a`, `b`, `c` in order after everything written before. The fast path (no simulated
  // delay, nothing queued) hands the bytes straight to the kernel from here: no copy, no
  // handler, so one thread can feed thousands of streams per step. What the kernel does not
  // take at once is queued and sent by async_write, which also reports errors: a failing
  // send is left to it, so Close() (and OnPeerClosed) never runs inside a handler's
  // WriteChunk() call.
  void Write(std::string_view a, std::string_view b = {}, std::string_view c = {},
             bool receipt = false) {
    if (closed_) return;
    const std::string_view parts[3] = {a, b, c};
    queued_bytes_ += a.size() + b.size() + c.size();
    if (receipt) {
      if (chunk_written_) receipts_.push_back({queued_bytes_, chunk_seq_});
      ++chunk_seq_;
    }
    auto& delay = srv_->options.write_delay_ns;
    if (delay || !delayed_.empty()) {
      int64_t due = MonoNowNs() + (delay ? delay() : 0);
      if (due < last_due_) due = last_due_;  // writes keep their order
      last_due_ = due;
      std::string bytes;
      bytes.reserve(a.size() + b.size() + c.size());
      for (std::string_view p : parts) bytes.append(p);
      delayed_.push_back({due, std::move(bytes)});
      ScheduleDelayed();
      return;
    }
    size_t sent = 0;
    if (!writing_ && pending_.empty()) {
      iovec iov[3];
      int n = 0;
      for (std::string_view p : parts)
        if (!p.empty()) iov[n++] = {const_cast<char*>(p.data()), p.size()};
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = n;
      ssize_t r = ::sendmsg(socket_.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (r > 0) {
        sent = size_t(r);
        Sent(sent);
      }
    }
    for (std::string_view p : parts) {
      size_t skip = std::min(sent, p.size());
      sent -= skip;
      pending_.append(p.substr(skip));
    }
    Flush();
  }

  void QueueMarker(Marker m) {
    if (!delayed_.empty()) {
      delayed_.push_back({last_due_, {}, m});
      return;
    }
    marker_ = m;
    MaybeFinish();
  }

  void ScheduleDelayed() {
    if (delayed_.empty() || delay_armed_) return;
    delay_armed_ = true;
    delay_timer_.expires_at(std::chrono::steady_clock::time_point(
        std::chrono::nanoseconds(delayed_.front().due_ns)));
    delay_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      self->delay_armed_ = false;
      if (ec || self->closed_) return;
      int64_t now = MonoNowNs();
      while (!self->delayed_.empty() && self->delayed_.front().due_ns <= now) {
        Pending p = std::move(self->delayed_.front());
        self->delayed_.pop_front();
        if (p.marker != Marker::kNone) {
          self->marker_ = p.marker;
        } else {
          self->pending_.append(p.bytes);
        }
      }
      self->Flush();
      self->MaybeFinish();
      self->ScheduleDelayed();
    });
  }

  void Flush() {
    if (writing_ || pending_.empty() || closed_) return;
    writing_ = true;
    inflight_.swap(pending_);
    asio::async_write(socket_, asio::buffer(inflight_),
                      [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                        self->writing_ = false;
                        self->inflight_.clear();
                        if (ec) return self->Close();
                        self->Sent(n);
                        self->Flush();
                        self->MaybeFinish();
                      });
  }

  // `n` more bytes went to the kernel: hands out the receipts now due.
  void Sent(size_t n) {
    sent_bytes_ += n;
    if (receipts_.empty()) return;
    int64_t now = MonoNowNs();
    while (!receipts_.empty() && receipts_.front().first <= sent_bytes_) {
      uint64_t seq = receipts_.front().second;
      receipts_.pop_front();
      if (chunk_written_) chunk_written_(seq, now);
    }
  }

  // Runs the end-of-response action once every byte before it has been written.
  void MaybeFinish() {
    if (marker_ == Marker::kNone || writing_ || !pending_.empty() || closed_) return;
    Marker m = marker_;
    marker_ = Marker::kNone;
    in_response_ = false;
    chunk_written_ = nullptr;
    boost::system::error_code ec;
    switch (m) {
      case Marker::kEnd:
        if (keep_alive_) {
          ReadRequest();
        } else {
          socket_.shutdown(tcp::socket::shutdown_send, ec);
          Close();
        }
        break;
      case Marker::kReset:
        socket_.set_option(asio::socket_base::linger(true, 0), ec);
        Close();
        break;
      case Marker::kCloseFin:
        socket_.shutdown(tcp::socket::shutdown_both, ec);
        Close();
        break;
      case Marker::kNone: break;
    }
  }

  std::shared_ptr<Server::Impl> srv_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  asio::steady_timer delay_timer_;
  ParserInput in_{16 * 1024};  // read, not yet parsed
  int64_t last_read_ns_ = 0;
  bool header_handled_ = false;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string remote_;
  std::string pending_, inflight_;
  std::deque<Pending> delayed_;
  int64_t last_due_ = 0;
  bool delay_armed_ = false;
  bool writing_ = false;
  bool closed_ = false;
  bool watching_ = false;
  bool in_response_ = false;
  bool headers_sent_ = false;
  bool end_queued_ = false;
  bool head_ = false;  // the request is HEAD: headers only
  bool keep_alive_ = true;
  bool http10_ = false;  // the request was HTTP/1.0: a streamed body ends with the connection
  Marker marker_ = Marker::kNone;
  uint64_t requests_ = 0;
  std::function<void()> peer_closed_;
  // Write receipts: bytes ever queued and ever sent on this connection, and the chunks whose
  // last byte (an offset in that count) is still to be sent.
  std::function<void(uint64_t, int64_t)> chunk_written_;
  std::deque<std::pair<uint64_t, uint64_t>> receipts_;  // (end offset, chunk number)
  uint64_t queued_bytes_ = 0, sent_bytes_ = 0, chunk_seq_ = 0;
};

void Server::Impl::Accept() {
  acceptor.async_accept([self = shared_from_this()](boost::system::error_code ec, tcp::socket s) {
    if (self->stopped) return;
    if (!ec) {
      auto c = std::make_shared<Connection>(self, std::move(s));
      self->conns[c.get()] = c;
      c->Start();
    }
    // EMFILE and friends: keep accepting; the pending connection waits in the backlog.
    self->Accept();
  });
}

Server::Server(EventLoop& loop, ServerOptions options, Handler handler)
    : impl_(std::make_shared<Impl>(loop, std::move(options), std::move(handler))) {}

Server::~Server() { Stop(); }

Status Server::Listen() {
  boost::system::error_code ec;
  // "localhost" as uvicorn takes it; other names are not looked up (an address is explicit).
  const std::string& host = impl_->options.host;
  auto addr = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) return InvalidArgument(fmt::format("--host {}: not an IP address (or localhost)", host));
  tcp::endpoint ep(addr, impl_->options.port);
  std::string where = fmt::format("{}:{}", impl_->options.host, impl_->options.port);
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(ep, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  // Accepted sockets inherit it, and the kernel stamps a request's bytes even when they
  // arrive before the loop gets round to accepting the connection.
  if (!ec) EnableReceiveTimestamps(impl_->acceptor.native_handle());
  if (ec) return Unavailable(fmt::format("listen on {}: {}", where, ec.message()));
  impl_->Accept();
  return Status::Ok();
}

uint16_t Server::port() const {
  boost::system::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void Server::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  boost::system::error_code ec;
  impl_->acceptor.close(ec);
  auto conns = impl_->conns;  // Close() may erase from the map
  for (auto& [p, w] : conns)
    if (auto c = w.lock()) c->Close();
}

size_t Server::open_connections() const { return impl_->conns.size(); }

}  // namespace latdoc::http
