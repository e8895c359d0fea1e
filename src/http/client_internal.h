// What the parts of the HTTP client share (private to src/http): an exchange, the connection
// (plain or TLS) and HttpClient::Impl. One file per concern:
//   client.cc          the client object, its pool, and a connection's life (run, close,
//                      deadlines)
//   client_url.cc      URLs and failure names
//   client_poll.cc     the plain connections' epoll set and the deadline sweep
//   client_connect.cc  a new connection: resolve, connect, TLS handshake, the peer's chain
//   client_write.cc    writing the request
//   client_read.cc     reading the response: parsing, streaming the body, the end or failure
// Conn's members are defined in those files and instantiated there for both kinds
// (Conn<false>: plain, Conn<true>: TLS). Beast stays in these files.
// Threading: everything runs on the EventLoop's thread (http/client.h).
#pragma once

#include <openssl/ssl.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "http/asio.h"
#include "http/client.h"
#include "http/parser_input.h"

namespace latdoc::http::client_internal {

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

// The chain as the server sent it, leaf first (client_connect.cc).
std::vector<PeerCert> PeerChain(SSL* ssl);

}  // namespace latdoc::http::client_internal

namespace latdoc::http {

struct HttpClient::Impl : std::enable_shared_from_this<HttpClient::Impl> {
  using ConnBase = client_internal::ConnBase;
  using Exchange = client_internal::Exchange;

  Impl(EventLoop& l, Url u, ClientOptions o);

  void StartNew(std::unique_ptr<Exchange> ex);
  void Release(const std::shared_ptr<ConnBase>& c) { idle.push_back(c); }
  void Forget(ConnBase* c) { live.erase(c); }

  // The plain connections' epoll set and the deadline sweep (client_poll.cc).
  bool Watch(int fd, ConnBase* c);
  void OnPolled(int delta);
  void WaitReady();
  void PollReady();
  void OnTimed(int delta);
  void ArmSweep();

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
  int64_t timed = 0;         // connections with a deadline
  uint64_t conn_serial = 0;  // the last connection's id
  bool sweeping = false;
  uint64_t sweep_gen = 0;  // bumped on cancel, so a cancelled wait never re-arms
  int epfd = -1;           // the plain connections' epoll set (owned by epoll_desc)
  std::optional<asio::posix::stream_descriptor> epoll_desc;
  int64_t polled = 0;              // plain connections in an exchange
  int64_t real_minus_mono_ns = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC as of this batch
  int64_t batch_now_ns = 0;        // MonoNowNs as this batch of ready sockets began
  uint64_t reads = 0;              // plain reads that returned bytes
  uint64_t late_reads = 0;         // of them, begun more than late_read_ns after the bytes came
  int64_t late_read_ns = 1'000'000;
  bool epoll_waiting = false;
  uint64_t epoll_gen = 0;
};

}  // namespace latdoc::http

namespace latdoc::http::client_internal {

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
  explicit Conn(std::shared_ptr<HttpClient::Impl> client);
  ~Conn() override;
  void Run(std::unique_ptr<Exchange> ex) override;
  void Close() override;
  void OnDeadline() override;
  void OnReady(uint32_t events) override;

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

  // A new connection (client_connect.cc).
  void Resolve();
  void Connect(const tcp::resolver::results_type& results);
  void Handshake();
  // The request (client_write.cc).
  void Write();
  void SendRest();
  void Sent(int64_t before_ns);
  // The response (client_read.cc).
  void NewParser();
  void ReadSome();
  bool QuietInPool();
  void Drain(bool to_end = false);
  bool Feed(size_t n, int64_t at);
  void OnReadError(boost::system::error_code ec);
  void Done(int64_t now);
  void Fail(FailureKind kind, std::string msg);
  void CaptureTcpInfo(ExchangeResult& res);
  // Closing (client.cc).
  void CloseQuietly();
  void CloseFd();
  void SetPolled(bool on);

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
  size_t out_sent_ = 0;             // bytes of out_ sent
  bool writing_ = false;            // waiting for room to send the rest of out_
  bool polled_ = false;             // counted in the client's `polled`
  std::shared_ptr<ConnBase> self_;  // set while polled_
  uint64_t id_;                     // ExchangeResult::connection_id
};

}  // namespace latdoc::http::client_internal
