// HttpClient: an HTTP/1.1 client on Boost.Asio/Beast for latdoc's load generator and probes.
//
// One client talks to one origin (scheme, host, port). It keeps a pool of kept-alive
// connections sized by demand (no upper bound: a load test at concurrency N needs N), or opens
// a new connection per request when keep-alive is off, so the handshake cost can be measured.
// TLS goes through OpenSSL (certificates verified unless `insecure`). Each exchange reports
// timestamps for every phase (DNS, connect, TLS, request written, headers, each body read,
// end) and streams the decoded body (chunked framing removed) to its observer as it arrives.
//
// A reused connection that the server had already closed (a stale keep-alive) is retried once
// on a new connection, as browsers and HTTP libraries do, when no response byte was received.
//
// Threading: everything runs on the EventLoop's thread; Send() must be called there, and the
// observer is called there. Beast stays in client.cc and the client_*.cc files beside it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "http/event_loop.h"
#include "http/tcp_info.h"

namespace latdoc::http {

struct Url {
  std::string scheme;     // "http" or "https"
  std::string host;
  uint16_t port = 0;
  std::string base_path;  // "" or "/prefix" (no trailing slash)
  std::string query;      // "" or "api-version=1" (no '?'): added to every request's target
  bool tls() const { return scheme == "https"; }
  std::string Origin() const;  // "http://host:port" ("http://[::1]:port" for an IPv6 host)
  // The URL a request for `target` ("/v1/models") really goes to, for messages: the origin,
  // the base path and the target (the query is left out: it may carry a key).
  std::string Spec(std::string_view target) const;
};

// Parses "http://host[:port][/path][?query]"; the port defaults to 80/443. Errors say what is
// wrong.
StatusOr<Url> ParseUrl(std::string_view text);

struct ClientOptions {
  bool keep_alive = true;
  bool insecure = false;                         // skip TLS certificate verification
  int64_t connect_timeout_ns = 10'000'000'000;   // DNS + TCP + TLS
  int64_t first_byte_timeout_ns = 600'000'000'000;
  int64_t idle_timeout_ns = 60'000'000'000;      // between body reads
  int64_t request_timeout_ns = 0;                // the whole exchange, from Send(); 0: none
  // Read the connection's TCP_INFO and IP_MTU as each exchange ends (ExchangeResult::tcp): two
  // system calls per exchange, none per read.
  bool capture_tcp_info = false;
  // Record the certificate chain the server shows at each TLS handshake (ExchangeResult::
  // peer_certs), whether or not it is verified.
  bool capture_peer_certs = false;
};

// One certificate of the chain a TLS server showed.
struct PeerCert {
  std::string subject;      // RFC 2253: "CN=server.example,O=Example"
  std::string issuer;
  std::string sha256_hex;   // SHA-256 of the DER encoding, lowercase hex, no separators
};

struct ClientRequest {
  std::string method = "POST";
  std::string target;  // path and query; the URL's base path is put in front
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

enum class FailureKind {
  kNone,
  kConnect,   // DNS, TCP connect or TLS handshake failed
  kTimeout,   // connect, first byte or idle timeout
  kReset,     // the connection was reset or closed before the response completed
  kProtocol,  // not a valid HTTP response
};
std::string_view FailureKindName(FailureKind k);

struct ExchangeTimes {
  int64_t start_ns = 0;          // Send() was called
  int64_t dns_ns = -1;           // name resolved (new connections only)
  int64_t connect_ns = -1;       // TCP connected
  int64_t tls_ns = -1;           // TLS handshake done
  int64_t sent_ns = -1;          // just before the call that wrote the request's last byte
  // The response headers arrived: the kernel's receive stamp of the read that completed them
  // (plain HTTP; mapped onto MonoNowNs, http/stamped_read.h), or the read's time (TLS). The
  // first byte is no later. Never clamped to sent_ns.
  int64_t headers_ns = -1;
  int64_t end_ns = -1;
  bool reused = false;           // served on a kept-alive connection
};

struct ExchangeResult {
  FailureKind failure = FailureKind::kNone;
  std::string error;             // what went wrong, for humans
  int status = 0;                // HTTP status, 0 when none arrived
  bool body_complete = false;    // the body ended as framed
  ExchangeTimes times;
  // The connection's TCP facts as the exchange ended (its totals so far), when asked for
  // (ClientOptions::capture_tcp_info) and a socket was open.
  std::optional<TcpConnInfo> tcp;
  // Which of the client's connections `tcp` was read on (1, 2, ... in the order they were
  // opened): a kept-alive connection's later snapshots supersede its earlier ones.
  uint64_t connection_id = 0;
  // The chain the server showed, leaf first: on the exchange that made the TLS handshake, when
  // asked for (ClientOptions::capture_peer_certs); empty otherwise.
  std::vector<PeerCert> peer_certs;
};

class ExchangeObserver {
 public:
  virtual ~ExchangeObserver() = default;
  virtual void OnHeaders(int /*status*/, std::string_view /*content_type*/, int64_t /*now_ns*/) {}
  // Decoded body bytes, valid only during the call. `now_ns`: when the read completed.
  virtual void OnBody(std::string_view data, int64_t now_ns) = 0;
  // Called exactly once, last.
  virtual void OnComplete(const ExchangeResult& result) = 0;
};

class HttpClient {
 public:
  HttpClient(EventLoop& loop, Url url, ClientOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts one exchange. `observer` must stay valid until its OnComplete().
  void Send(ClientRequest request, ExchangeObserver* observer);
  // Closes idle pooled connections and fails exchanges in flight (kReset, "cancelled").
  void Shutdown();

  const Url& url() const;
  uint64_t connections_opened() const;
  // Plain-HTTP socket reads that returned bytes, and of them those begun more than 1 ms after
  // the kernel stamped the bytes' arrival (the event loop was busy elsewhere): the client's
  // own lag. Counted once per read, from one clock read per batch of ready sockets.
  uint64_t reads() const;
  uint64_t late_reads() const;
  size_t idle_connections() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// A one-shot GET/POST that collects the whole body (for /metrics, /v1/models). Runs on `loop`;
// `done` gets the status and body, or the failure.
void FetchAll(HttpClient& client, ClientRequest request,
              std::function<void(const ExchangeResult&, std::string body)> done);

}  // namespace latdoc::http
