// An HTTP/1.1 server on Boost.Asio/Beast for latdoc's simulator and exporter.
//
// Requests are parsed by Beast; responses are written by hand, either whole (content-length) or
// streamed with chunked transfer encoding, so a simulator can push thousands of SSE streams from
// one thread cheaply. Keep-alive follows HTTP/1.1 (an idle connection is closed after
// `keep_alive_timeout_ns`, as uvicorn does after 5 s). While a response streams, the server
// watches the socket so a client that vanishes is noticed at once (ResponseStream::OnClose).
//
// Threading: everything runs on the EventLoop's thread; handlers are called there and every
// ResponseStream method must be called there too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "http/event_loop.h"

namespace latdoc::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;   // "GET", "POST"
  std::string target;   // "/v1/completions?x=1"
  std::string path;     // target without the query
  std::string body;
  Headers headers;      // names lower-cased
  std::string remote;   // "127.0.0.1:54321"
  bool keep_alive = true;
  int64_t received_ns = 0;  // MonoNowNs clock: when the request's last byte reached this host
                            // (the kernel's receive timestamp where it gives one)

  // The first header named `name` (lower case), or "" when absent.
  std::string_view Header(std::string_view name) const;
};

// The response to one request. Handlers may keep it (shared_ptr) to stream later.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;

  // A whole response with content-length.
  virtual void Send(int status, std::string_view content_type, std::string_view body,
                    const Headers& extra = {}) = 0;
  // Starts a chunked response; then WriteChunk() any number of times and EndChunked().
  virtual void BeginChunked(int status, std::string_view content_type,
                            const Headers& extra = {}) = 0;
  virtual void WriteChunk(std::string_view data) = 0;
  virtual void EndChunked() = 0;
  // Ends the connection without completing the response: with a TCP reset when `reset`, else
  // with an orderly close (the client sees the body cut short).
  virtual void Abort(bool reset) = 0;

  // True once the response is complete or the connection is gone.
  virtual bool finished() const = 0;
  // Called once if the peer goes away before the response is complete.
  virtual void OnPeerClosed(std::function<void()> fn) = 0;
  // Write receipts, for ground-truth timing: `fn(n, ns)` is called once the bytes of this
  // response's n-th WriteChunk() (0-based) are all handed to the kernel; `ns` (MonoNowNs) is
  // that moment, after any simulated network delay. It may run inside WriteChunk(). The
  // function is dropped when the response ends or the connection closes. Free when unset.
  virtual void OnChunkWritten(std::function<void(uint64_t, int64_t)> fn) = 0;
};

using Handler = std::function<void(const Request&, std::shared_ptr<ResponseStream>)>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;                          // 0: any free port
  size_t max_body_bytes = 8 << 20;            // larger bodies get 413
  int64_t keep_alive_timeout_ns = 5'000'000'000;   // idle kept-alive connection is closed
  int64_t request_timeout_ns = 30'000'000'000;     // a request must arrive whole within this
  // Delay before each write reaches the socket (simulated network). Writes keep their order.
  std::function<int64_t()> write_delay_ns;
  std::string server_header = "uvicorn";
};

class Server {
 public:
  Server(EventLoop& loop, ServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts accepting. Errors name the address.
  Status Listen();
  uint16_t port() const;
  // Stops accepting and closes every connection.
  void Stop();
  size_t open_connections() const;

  struct Impl;  // internal; public so the connection class in server.cc can name it

 private:
  std::shared_ptr<Impl> impl_;
};

// "200 OK", "404 Not Found", ...
std::string_view StatusText(int status);

}  // namespace latdoc::http
