#include "net/testing/delay_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

#include "base/clock.h"

namespace latdoc::net::testing {
namespace {

// A listening socket on 127.0.0.1:0, plain POSIX (independent of the code under test).
struct Listener {
  int fd = -1;
  uint16_t port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd, 8), 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
  // Accepts one connection within `timeout_ms`; -1 when none came.
  int Accept(int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return -1;
    return ::accept(fd, nullptr, nullptr);
  }
};

int Connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

// Reads until `want` bytes arrived or `timeout_ms` passed.
std::string ReadN(int fd, size_t want, int timeout_ms) {
  std::string got;
  int64_t deadline = MonoNowNs() + int64_t{timeout_ms} * 1'000'000;
  while (got.size() < want) {
    int left = static_cast<int>((deadline - MonoNowNs()) / 1'000'000);
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) break;
    char buf[256];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

class ProxyFixture {
 public:
  explicit ProxyFixture(DelayProxyOptions o) : proxy_(loop_, o) {
    auto port = proxy_.Start();
    EXPECT_TRUE(port.ok());
    port_ = port.ok() ? *port : 0;
    thread_ = std::thread([this] { loop_.Run(); });
  }
  ~ProxyFixture() {
    loop_.Stop();
    thread_.join();
  }
  uint16_t port() const { return port_; }
  DelayProxy& proxy() { return proxy_; }

 private:
  http::EventLoop loop_;
  DelayProxy proxy_;
  std::thread thread_;
  uint16_t port_ = 0;
};

TEST(DelayProxyTest, AddsTheDelayToRequestsNotResponses) {
  Listener up;
  DelayProxyOptions o;
  o.upstream_port = up.port;
  o.delay_ns = 30'000'000;
  ProxyFixture fx(o);
  int c = Connect(fx.port());
  int s = up.Accept(2000);
  ASSERT_GE(s, 0);
  int64_t t0 = MonoNowNs();
  ASSERT_EQ(::send(c, "GET /x HTTP/1.1\r\n\r\n", 19, 0), 19);
  EXPECT_EQ(ReadN(s, 19, 2000), "GET /x HTTP/1.1\r\n\r\n");
  double took_ms = static_cast<double>(MonoNowNs() - t0) / 1e6;
  EXPECT_GE(took_ms, 30.0);
  EXPECT_LT(took_ms, 50.0);  // loose: a loaded 2-core machine; the e2e tests bound it to 1 ms
  int64_t t1 = MonoNowNs();
  ASSERT_EQ(::send(s, "pong", 4, 0), 4);
  EXPECT_EQ(ReadN(c, 4, 2000), "pong");
  EXPECT_LT(static_cast<double>(MonoNowNs() - t1) / 1e6, 5.0);  // no delay back
  auto applied = fx.proxy().applied();
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].delay_ns, 30'000'000);
  EXPECT_EQ(applied[0].first_line, "GET /x HTTP/1.1");
  EXPECT_GE(applied[0].actual_ns, 30'000'000);  // held at least as planned
  EXPECT_LE(applied[0].actual_ns, static_cast<int64_t>(took_ms * 1e6));
  ::close(c);
  ::close(s);
}

TEST(DelayProxyTest, JitterKeepsOrderAndStaysInRange) {
  Listener up;
  DelayProxyOptions o;
  o.upstream_port = up.port;
  o.delay_ns = 5'000'000;
  o.jitter_ns = 20'000'000;
  o.first_chunk_delay_ns = 10'000'000;
  o.seed = 42;
  ProxyFixture fx(o);
  int c = Connect(fx.port());
  int s = up.Accept(2000);
  ASSERT_GE(s, 0);
  std::string sent;
  for (char ch = 'a'; ch <= 'h'; ++ch) {
    ASSERT_EQ(::send(c, &ch, 1, 0), 1);
    sent += ch;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(ReadN(s, sent.size(), 3000), sent);
  auto applied = fx.proxy().applied();
  // Under load the proxy may read two sends as one chunk; each chunk gets one delay.
  ASSERT_LE(applied.size(), sent.size());
  ASSERT_GE(applied.size(), 3u);
  EXPECT_GE(applied[0].delay_ns, 15'000'000);  // the first chunk pays first_chunk_delay too
  EXPECT_LE(applied[0].delay_ns, 35'000'000);
  bool varied = false;
  for (size_t i = 1; i < applied.size(); ++i) {
    EXPECT_GE(applied[i].delay_ns, 5'000'000);
    EXPECT_LE(applied[i].delay_ns, 25'000'000);
    varied = varied || applied[i].delay_ns != applied[1].delay_ns;
  }
  EXPECT_TRUE(varied);
  ::close(c);
  ::close(s);
}

TEST(DelayProxyTest, HangModeNeverConnectsUpstreamNorAnswers) {
  Listener up;
  DelayProxyOptions o;
  o.upstream_port = up.port;
  o.hang = true;
  ProxyFixture fx(o);
  int c = Connect(fx.port());
  ASSERT_EQ(::send(c, "GET / HTTP/1.1\r\n\r\n", 18, 0), 18);
  EXPECT_EQ(up.Accept(200), -1);
  EXPECT_EQ(ReadN(c, 1, 200), "");
  EXPECT_EQ(fx.proxy().connections(), 1u);
  ::close(c);
}

}  // namespace
}  // namespace latdoc::net::testing
