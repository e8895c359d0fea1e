// DelayProxy: a TCP proxy on loopback that adds a known delay, for tests of `latdoc net` (the
// "gateway" between the probe and `latdoc sim`).
//
// Each chunk read from the client is forwarded to the upstream at
//   max(arrival + delay + U[0, jitter] (+ first_chunk_delay on a connection's first chunk),
//       the previous chunk's forwarding time)
// so order is kept. U is drawn from a seeded generator; every applied delay is recorded with
// the chunk's first line and the time it was really held, so a test knows exactly what was
// injected. Responses flow back
// without delay. In `hang` mode it accepts connections and reads requests but never connects
// upstream nor answers (a proxy that hangs).
//
// Listens on 127.0.0.1 only. Runs on `loop`; applied() may be called from any thread.
// Destroy the proxy before its EventLoop, after the loop stopped running.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "http/event_loop.h"

namespace latdoc::net::testing {

struct DelayProxyOptions {
  uint16_t upstream_port = 0;           // on 127.0.0.1
  int64_t delay_ns = 0;
  int64_t jitter_ns = 0;
  int64_t first_chunk_delay_ns = 0;     // once per connection (a backend connect per client connection)
  bool hang = false;
  uint64_t seed = 1;
};

struct AppliedDelay {
  int64_t delay_ns = 0;                 // planned: beyond the chunk's arrival
  int64_t actual_ns = -1;               // arrival -> handed to the upstream socket (timer
                                        // wake-up included); -1 until forwarded
  std::string first_line;               // "GET /health HTTP/1.1"
  bool first_chunk = false;             // the connection's first chunk
};

class DelayProxy {
 public:
  DelayProxy(http::EventLoop& loop, DelayProxyOptions options);
  ~DelayProxy();
  DelayProxy(const DelayProxy&) = delete;
  DelayProxy& operator=(const DelayProxy&) = delete;

  // Binds 127.0.0.1:0 and starts accepting; returns the port.
  StatusOr<uint16_t> Start();
  std::vector<AppliedDelay> applied() const;
  uint64_t connections() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// A DelayProxy on its own loop thread, for tests that drive it from outside (the "gateway").
// A proxy that could not start has port() 0 and says why in status().
class ProxyThread {
 public:
  explicit ProxyThread(DelayProxyOptions options);
  ~ProxyThread();
  ProxyThread(const ProxyThread&) = delete;
  ProxyThread& operator=(const ProxyThread&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const Status& status() const { return status_; }
  const DelayProxy& proxy() const { return proxy_; }

 private:
  http::EventLoop loop_;
  DelayProxy proxy_;
  Status status_;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace latdoc::net::testing
