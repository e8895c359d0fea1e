#include "http/client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "base/clock.h"
#include "http/server.h"

namespace latdoc::http {
namespace {

using ::testing::HasSubstr;

TEST(ParseUrlTest, Forms) {
  auto u = ParseUrl("http://127.0.0.1:8000/v1/");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8000);
  EXPECT_EQ(u->base_path, "/v1");
  EXPECT_EQ(ParseUrl("https://example.com")->port, 443);
  // A query on the base URL (Azure OpenAI's api-version) is kept apart from the path; a
  // fragment is dropped.
  auto az = ParseUrl("https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21#x");
  ASSERT_TRUE(az.ok());
  EXPECT_EQ(az->base_path, "/openai/deployments/d");
  EXPECT_EQ(az->query, "api-version=2024-10-21");
  EXPECT_EQ(ParseUrl("http://[::1]:9/")->host, "::1");
  // An IPv6 literal prints bracketed, so the port cannot be read as part of the address.
  EXPECT_EQ(ParseUrl("http://[::1]:9/")->Origin(), "http://[::1]:9");
  EXPECT_EQ(ParseUrl("http://10.0.0.1:9/")->Origin(), "http://10.0.0.1:9");
  EXPECT_EQ(ParseUrl("localhost:8000").status().message(),
            "'localhost:8000': not a URL (expected http://host:port)");
  EXPECT_EQ(ParseUrl("ftp://x").status().message(), "'ftp://x': scheme must be http or https");
  EXPECT_EQ(ParseUrl("http://x:99999").status().message(), "'http://x:99999': bad port");
  // Credentials are refused, and not echoed (it took "user:secret@host" for the host).
  EXPECT_EQ(ParseUrl("http://user:secret@10.0.0.1:8000/v1").status().message(),
            "'http://...@10.0.0.1:8000/v1': credentials in the URL are not supported (give the key with "
            "--api-key-env)");
}

// What messages print: an IPv6 host in brackets (it printed "http://::1:9"), and the URL a
// request really went to, base path included, query left out (it may carry a key).
TEST(ParseUrlTest, OriginAndSpec) {
  EXPECT_EQ(ParseUrl("http://[::1]:9/")->Origin(), "http://[::1]:9");
  EXPECT_EQ(ParseUrl("http://h")->Origin(), "http://h:80");
  EXPECT_EQ(ParseUrl("https://gw/llm/?key=abc")->Spec("/v1/models"), "https://gw:443/llm/v1/models");
  EXPECT_EQ(ParseUrl("http://h:8000")->Spec("/metrics"), "http://h:8000/metrics");
}

// Records what an exchange saw.
struct Recorder : ExchangeObserver {
  void OnHeaders(int s, std::string_view, int64_t) override { status = s; }
  void OnBody(std::string_view d, int64_t) override {
    body.append(d);
    ++reads;
  }
  void OnComplete(const ExchangeResult& r) override {
    result = r;
    done = true;
  }
  int status = 0;
  std::string body;
  int reads = 0;
  bool done = false;
  ExchangeResult result;
};

// A server and a client on one loop, driven from the test thread.
class Harness {
 public:
  Harness(Handler h, ServerOptions so = {}, ClientOptions co = {}) : server_(loop_, so, std::move(h)) {
    EXPECT_TRUE(server_.Listen().ok());
    client_ = std::make_unique<HttpClient>(
        loop_, *ParseUrl("http://127.0.0.1:" + std::to_string(server_.port())), co);
  }
  ~Harness() {
    client_.reset();
    server_.Stop();
    loop_.RunFor(10 * kNsPerMs);
  }
  Recorder Send(ClientRequest r, int64_t budget_ns = 5 * kNsPerSec) {
    Recorder rec;
    client_->Send(std::move(r), &rec);
    int64_t end = MonoNowNs() + budget_ns;
    while (!rec.done && MonoNowNs() < end) loop_.RunFor(5 * kNsPerMs);
    return rec;
  }
  HttpClient& client() { return *client_; }
  EventLoop& loop() { return loop_; }
  uint16_t port() const { return server_.port(); }

 private:
  EventLoop loop_;
  Server server_;
  std::unique_ptr<HttpClient> client_;
};

Handler Echo() {
  return [](const Request& r, std::shared_ptr<ResponseStream> w) {
    w->Send(200, "text/plain", r.method + " " + r.target + " " + r.body + " " +
                                   std::string(r.Header("authorization")));
  };
}

TEST(HttpClientTest, KeepAliveReusesOneConnection) {
  Harness h(Echo());
  for (int i = 0; i < 3; ++i) {
    Recorder r = h.Send({"POST", "/x", "hi", {{"Authorization", "Bearer k"}}});
    ASSERT_TRUE(r.done);
    EXPECT_EQ(r.result.failure, FailureKind::kNone) << r.result.error;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "POST /x hi Bearer k");
    EXPECT_EQ(r.result.times.reused, i > 0);
    EXPECT_TRUE(r.result.body_complete);
  }
  EXPECT_EQ(h.client().connections_opened(), 1u);
}

// The base URL's query goes on every request, after the request's own query if it has one.
TEST(HttpClientTest, BaseUrlQueryIsSentWithEveryRequest) {
  EventLoop loop;
  Server server(loop, {}, Echo());
  ASSERT_TRUE(server.Listen().ok());
  HttpClient client(loop, *ParseUrl("http://127.0.0.1:" + std::to_string(server.port()) +
                                    "/base?api-version=7"), {});
  for (auto [target, want] : {std::pair{"/v1/models", "GET /base/v1/models?api-version=7  "},
                              std::pair{"/m?x=1", "GET /base/m?x=1&api-version=7  "}}) {
    Recorder r;
    client.Send({"GET", target, "", {}}, &r);
    const int64_t end = MonoNowNs() + 5 * kNsPerSec;
    while (!r.done && MonoNowNs() < end) loop.RunFor(5 * kNsPerMs);
    EXPECT_EQ(r.body, want);
  }
  server.Stop();
  loop.RunFor(10 * kNsPerMs);
}

TEST(HttpClientTest, NoKeepAliveOpensAConnectionPerRequest) {
  ClientOptions co;
  co.keep_alive = false;
  Harness h(Echo(), {}, co);
  for (int i = 0; i < 3; ++i) {
    Recorder r = h.Send({"GET", "/", "", {}});
    EXPECT_EQ(r.status, 200);
    EXPECT_FALSE(r.result.times.reused);
    EXPECT_GE(r.result.times.connect_ns, r.result.times.start_ns);
    EXPECT_GE(r.result.times.headers_ns, r.result.times.sent_ns);
  }
  EXPECT_EQ(h.client().connections_opened(), 3u);
}

TEST(HttpClientTest, ChunkedStreamArrivesDecodedAndInPieces) {
  ServerOptions so;
  so.write_delay_ns = [] { return 5 * kNsPerMs; };
  int64_t i = 0;
  so.write_delay_ns = [&i] { return (i++) * 5 * kNsPerMs; };  // each write later than the last
  Harness h([](const Request&, std::shared_ptr<ResponseStream> w) {
    w->BeginChunked(200, "text/event-stream");
    for (int k = 0; k < 4; ++k) w->WriteChunk("data: " + std::to_string(k) + "\n\n");
    w->EndChunked();
  }, so);
  Recorder r = h.Send({"GET", "/s", "", {}});
  EXPECT_EQ(r.body, "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\n");
  EXPECT_GE(r.reads, 3);
  EXPECT_TRUE(r.result.body_complete);
}

TEST(HttpClientTest, StaleKeptAliveConnectionIsRetriedOnce) {
  ServerOptions so;
  so.keep_alive_timeout_ns = 50 * kNsPerMs;
  Harness h(Echo(), so);
  EXPECT_EQ(h.Send({"GET", "/a", "", {}}).status, 200);
  h.loop().RunFor(150 * kNsPerMs);  // the server closes the idle connection
  Recorder r = h.Send({"GET", "/b", "", {}});
  EXPECT_EQ(r.result.failure, FailureKind::kNone) << r.result.error;
  EXPECT_EQ(r.body, "GET /b  ");
  EXPECT_EQ(h.client().connections_opened(), 2u);
}

TEST(HttpClientTest, RefusedConnectionIsAConnectFailure) {
  EventLoop loop;
  // Bind a port and close it, so nothing listens there.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  HttpClient c(loop, *ParseUrl("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port))), {});
  Recorder r;
  c.Send({"GET", "/", "", {}}, &r);
  while (!r.done) loop.RunFor(5 * kNsPerMs);
  EXPECT_EQ(r.result.failure, FailureKind::kConnect);
  EXPECT_THAT(r.result.error, HasSubstr("Connection refused"));
}

TEST(HttpClientTest, UnresolvableHostIsAConnectFailure) {
  EventLoop loop;
  HttpClient c(loop, *ParseUrl("http://no-such-host.invalid:80"), {});
  Recorder r;
  c.Send({"GET", "/", "", {}}, &r);
  int64_t end = MonoNowNs() + 20 * kNsPerSec;
  while (!r.done && MonoNowNs() < end) loop.RunFor(5 * kNsPerMs);
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.result.failure, FailureKind::kConnect);
  EXPECT_THAT(r.result.error, HasSubstr("resolve no-such-host.invalid"));
}

TEST(HttpClientTest, FirstByteTimeout) {
  std::shared_ptr<ResponseStream> held;
  ClientOptions co;
  co.first_byte_timeout_ns = 100 * kNsPerMs;
  Harness h([&](const Request&, std::shared_ptr<ResponseStream> w) { held = w; }, {}, co);
  Recorder r = h.Send({"GET", "/", "", {}});
  EXPECT_EQ(r.result.failure, FailureKind::kTimeout);
  EXPECT_EQ(r.result.error, "no response before the first-byte timeout");
  held.reset();
}

// A streaming server sends its headers at once and its first body bytes after queueing and
// prefill. The wait for the body is the first-byte timeout's, not the idle timeout's: a first
// token 250 ms after the headers is fine with a 100 ms idle timeout, and no body at all ends
// at the first-byte timeout, saying so.
TEST(HttpClientTest, FirstByteTimeoutRunsUntilTheBodyStarts) {
  std::shared_ptr<ResponseStream> held;
  ClientOptions co;
  co.first_byte_timeout_ns = 600 * kNsPerMs;
  co.idle_timeout_ns = 100 * kNsPerMs;
  bool write_body = true;
  std::unique_ptr<EventLoop::Timer> later;
  EventLoop* loop = nullptr;
  Harness h(
      [&](const Request&, std::shared_ptr<ResponseStream> w) {
        w->BeginChunked(200, "text/event-stream");
        held = w;
        if (!write_body) return;
        later = std::make_unique<EventLoop::Timer>(*loop);
        later->ExpireAfterNs(250 * kNsPerMs, [&] {
          held->WriteChunk("data: x\n\n");
          held->EndChunked();
        });
      },
      {}, co);
  loop = &h.loop();
  Recorder ok = h.Send({"GET", "/", "", {}});
  ASSERT_TRUE(ok.done);
  EXPECT_EQ(ok.result.failure, FailureKind::kNone) << ok.result.error;
  EXPECT_EQ(ok.body, "data: x\n\n");

  write_body = false;
  const int64_t t0 = MonoNowNs();
  Recorder none = h.Send({"GET", "/", "", {}});
  EXPECT_EQ(none.result.failure, FailureKind::kTimeout);
  EXPECT_EQ(none.result.error, "no body before the first-byte timeout");
  EXPECT_GE(MonoNowNs() - t0, 550 * kNsPerMs);
  later.reset();
  held.reset();
}

// A stream whose every wait is short but which runs past the request timeout ends there, as a
// timeout, with what arrived so far; without the limit the same stream completes.
TEST(HttpClientTest, RequestTimeoutBoundsAStreamOfShortWaits) {
  auto slow_stream = [](int64_t* i) {
    ServerOptions so;
    so.write_delay_ns = [i] { return ((*i)++) * 40 * kNsPerMs; };  // a chunk every 40 ms
    return so;
  };
  auto handler = [](const Request&, std::shared_ptr<ResponseStream> w) {
    w->BeginChunked(200, "text/event-stream");
    for (int k = 0; k < 10; ++k) w->WriteChunk("data: " + std::to_string(k) + "\n\n");
    w->EndChunked();
  };
  ClientOptions co;
  co.idle_timeout_ns = 300 * kNsPerMs;
  {
    int64_t i = 0;
    Harness h(handler, slow_stream(&i), co);
    Recorder r = h.Send({"GET", "/s", "", {}});
    EXPECT_EQ(r.result.failure, FailureKind::kNone) << r.result.error;
    EXPECT_TRUE(r.result.body_complete);
  }
  co.request_timeout_ns = 150 * kNsPerMs;
  int64_t i = 0;
  Harness h(handler, slow_stream(&i), co);
  Recorder r = h.Send({"GET", "/s", "", {}});
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.result.failure, FailureKind::kTimeout);
  EXPECT_EQ(r.result.error, "not finished within the request timeout (0.15 s)");
  EXPECT_FALSE(r.result.body_complete);
  EXPECT_THAT(r.body, HasSubstr("data: 0"));
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("data: 9")));
  const int64_t took = r.result.times.end_ns - r.result.times.start_ns;
  EXPECT_GE(took, 150 * kNsPerMs);
  EXPECT_LT(took, 330 * kNsPerMs);  // the limit plus a sweep period (limit / 8), with slack
}

// Bodies far larger than a socket buffer both ways: the request is sent in pieces as the
// socket makes room, and the response takes many more reads than one turn allows (plain
// connections are edge-triggered: a turn that stops early must still read the rest).
TEST(HttpClientTest, LargeRequestAndResponseCrossManyReadsAndWrites) {
  Harness h(Echo());
  std::string big(6 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4099) big[i] = char('a' + i % 26);
  for (int i = 0; i < 2; ++i) {
    Recorder r = h.Send({"POST", "/big", big, {}}, 20 * kNsPerSec);
    ASSERT_TRUE(r.done);
    EXPECT_EQ(r.result.failure, FailureKind::kNone) << r.result.error;
    EXPECT_TRUE(r.body == "POST /big " + big + " ") << r.body.size();
    EXPECT_GT(r.reads, 8);
  }
  EXPECT_EQ(h.client().connections_opened(), 1u);
}

TEST(HttpClientTest, BodyCutShortIsAReset) {
  Harness h([](const Request&, std::shared_ptr<ResponseStream> w) {
    w->BeginChunked(200, "text/plain");
    w->WriteChunk("partial");
    w->Abort(/*reset=*/false);
  });
  Recorder r = h.Send({"GET", "/", "", {}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "partial");
  EXPECT_EQ(r.result.failure, FailureKind::kReset);
  EXPECT_FALSE(r.result.body_complete);
  EXPECT_EQ(r.result.error, "connection closed before the body was complete");
}

TEST(HttpClientTest, GarbageResponseIsAProtocolError) {
  // A raw TCP server that answers with something that is not HTTP.
  int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(ls, 1);
  socklen_t len = sizeof a;
  ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread t([ls] {
    int c = ::accept(ls, nullptr, nullptr);
    char buf[1024];
    ::recv(c, buf, sizeof buf, 0);
    const char* junk = "<html>hello</html>\r\n\r\n";
    ::send(c, junk, strlen(junk), 0);
    ::close(c);
  });
  EventLoop loop;
  HttpClient c(loop, *ParseUrl("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port))), {});
  Recorder r;
  c.Send({"GET", "/", "", {}}, &r);
  while (!r.done) loop.RunFor(5 * kNsPerMs);
  t.join();
  ::close(ls);
  EXPECT_EQ(r.result.failure, FailureKind::kProtocol);
}


// A blocking loopback listener for tests whose server is a plain thread writing raw bytes.
struct RawListener {
  explicit RawListener(int backlog = 1) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd, backlog), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~RawListener() { ::close(fd); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  int fd = -1;
  uint16_t port = 0;
};

// Reads one request's head from a raw server socket (blocking); returns what was read.
std::string ReadRequestHead(int fd) {
  std::string req;
  char buf[4096];
  while (req.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    req.append(buf, size_t(n));
  }
  return req;
}

// A client of a RawListener on its own loop, driven from the test thread.
struct RawClient {
  explicit RawClient(const RawListener& listener) : client(loop, *ParseUrl(listener.url()), {}) {}
  // Sends `req` and runs the loop until `rec` has the exchange's end (at most 5 s).
  void Send(ClientRequest req, Recorder& rec) {
    client.Send(std::move(req), &rec);
    int64_t end = MonoNowNs() + 5 * kNsPerSec;
    while (!rec.done && MonoNowNs() < end) loop.RunFor(5 * kNsPerMs);
  }
  EventLoop loop;
  HttpClient client;
};

// Body times are when the bytes reached this host (the kernel's receive timestamp), not when a
// busy client thread got round to reading them: the observer stalls the loop for 60 ms after
// the headers, the server sends the second piece 10 ms after the first, and the second piece's
// time is still within a few ms of its sending.
TEST(HttpClientTest, BodyTimesAreArrivalsNotReads) {
  RawListener listener;
  const int lfd = listener.fd;
  std::atomic<int64_t> second_sent{0};
  std::thread server([&] {
    int fd = ::accept(lfd, nullptr, nullptr);
    ReadRequestHead(fd);
    std::string head = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 6\r\n\r\nabc";
    ::send(fd, head.data(), head.size(), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    second_sent = MonoNowNs();
    ::send(fd, "def", 3, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::close(fd);
  });
  struct Stalling : Recorder {
    void OnHeaders(int s, std::string_view ct, int64_t now) override {
      Recorder::OnHeaders(s, ct, now);
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
    }
    void OnBody(std::string_view d, int64_t now) override {
      Recorder::OnBody(d, now);
      last_body_ns = now;
    }
    int64_t last_body_ns = 0;
  } rec;
  RawClient c(listener);
  c.Send({"GET", "/", "", {}}, rec);
  server.join();
  ASSERT_TRUE(rec.done);
  EXPECT_EQ(rec.body, "abcdef");
  EXPECT_GE(rec.last_body_ns, second_sent.load());
  // Far under the 60 ms the reader stalled (a loaded 2-core machine can hold the sender
  // between its stamp and the send for a few ms).
  EXPECT_LT(rec.last_body_ns - second_sent.load(), 30 * kNsPerMs);
}


// More sockets ready at once than the client reads in one epoll batch (256): the client's epoll
// set reports to the event loop by edges, so what one batch leaves ready must still be read
// while no new byte arrives. All 400 answers are sent while the client's loop is not running;
// each exchange must see its first piece without the server sending anything more.
TEST(HttpClientTest, MoreReadySocketsThanOneBatchAreAllRead) {
  constexpr int kConns = 400;
  RawListener listener(kConns);
  RawClient c(listener);
  std::vector<Recorder> recs(kConns);
  for (Recorder& r : recs) c.client.Send({"GET", "/", "", {}}, &r);
  std::vector<int> fds;
  std::atomic<int> accepted{0};
  std::thread server([&] {
    for (int i = 0; i < kConns; ++i) {
      int fd = ::accept(listener.fd, nullptr, nullptr);
      if (fd < 0) break;
      ReadRequestHead(fd);
      fds.push_back(fd);
      ++accepted;
    }
  });
  int64_t end = MonoNowNs() + 10 * kNsPerSec;
  while (accepted < kConns && MonoNowNs() < end) c.loop.RunFor(5 * kNsPerMs);
  server.join();
  ASSERT_EQ(fds.size(), size_t(kConns));
  const std::string head = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 6\r\n\r\nabc";
  for (int fd : fds) ASSERT_EQ(::send(fd, head.data(), head.size(), 0), ssize_t(head.size()));
  auto count = [&](const char* body) {
    return std::count_if(recs.begin(), recs.end(), [&](const Recorder& r) { return r.body == body; });
  };
  end = MonoNowNs() + 2 * kNsPerSec;
  while (count("abc") < kConns && MonoNowNs() < end) c.loop.RunFor(5 * kNsPerMs);
  EXPECT_EQ(count("abc"), kConns);
  for (int fd : fds) ::send(fd, "def", 3, 0);
  end = MonoNowNs() + 5 * kNsPerSec;
  while (count("abcdef") < kConns && MonoNowNs() < end) c.loop.RunFor(5 * kNsPerMs);
  EXPECT_EQ(count("abcdef"), kConns);
  for (int fd : fds) ::close(fd);
}

// The second request of the "answered unasked while pooled" tests: it got its own answer, on a
// connection of its own.
void ExpectAnsweredOnANewConnection(const Recorder& second, const HttpClient& client) {
  ASSERT_TRUE(second.done);
  EXPECT_EQ(second.result.failure, FailureKind::kNone) << second.result.error;
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.body, "second");
  EXPECT_FALSE(second.result.times.reused);
  EXPECT_EQ(client.connections_opened(), 2u);
}

// A kept-alive connection the server answered unasked while it sat in the pool (a 408 that
// says it will close) is not used again: the next request goes on a new connection and gets its own answer.
TEST(HttpClientTest, IdleConnectionAnsweredUnaskedIsNotReused) {
  RawListener listener;
  const int lfd = listener.fd;
  std::thread server([&] {
    int fd = ::accept(lfd, nullptr, nullptr);
    ReadRequestHead(fd);
    std::string ok = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst";
    ::send(fd, ok.data(), ok.size(), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::string timeout =
        "HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
    ::send(fd, timeout.data(), timeout.size(), 0);  // and the socket stays open a while
    int fd2 = ::accept(lfd, nullptr, nullptr);
    ReadRequestHead(fd2);
    std::string second = "HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecond";
    ::send(fd2, second.data(), second.size(), 0);
    ::close(fd2);
    ::close(fd);
  });
  RawClient c(listener);
  Recorder first;
  c.Send({"GET", "/1", "", {}}, first);
  EXPECT_EQ(first.body, "first");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c.loop.RunFor(10 * kNsPerMs);
  Recorder second;
  c.Send({"GET", "/2", "", {}}, second);
  server.join();
  ExpectAnsweredOnANewConnection(second, c.client);
}

// A TLS server on blocking sockets, for tests: a self-signed P-256 certificate made in memory.
class TlsTestServer {
 public:
  TlsTestServer() : ctx_(SSL_CTX_new(TLS_server_method())) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509_sign(cert, key, EVP_sha256());
    EXPECT_EQ(SSL_CTX_use_certificate(ctx_, cert), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx_, key), 1);
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  ~TlsTestServer() { SSL_CTX_free(ctx_); }
  TlsTestServer(const TlsTestServer&) = delete;
  TlsTestServer& operator=(const TlsTestServer&) = delete;

  // One accepted connection after its handshake.
  class Peer {
   public:
    Peer(SSL_CTX* ctx, int fd) : fd_(fd), ssl_(SSL_new(ctx)) {
      // Without it the answer waits behind the session tickets for the client's delayed ACK
      // (Nagle), 40 ms, and may arrive in one read with what the test sends after it.
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      SSL_set_fd(ssl_, fd);
      EXPECT_EQ(SSL_accept(ssl_), 1);
    }
    ~Peer() {
      SSL_free(ssl_);
      ::close(fd_);
    }
    Peer(const Peer&) = delete;
    Peer& operator=(const Peer&) = delete;
    void ReadHead() {
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        int n = SSL_read(ssl_, buf, sizeof buf);
        if (n <= 0) return;
        req.append(buf, static_cast<size_t>(n));
      }
    }
    void Write(const std::string& s) { SSL_write(ssl_, s.data(), static_cast<int>(s.size())); }

   private:
    int fd_;
    SSL* ssl_;
  };
  // The next connection after its handshake, or nullptr when none came within 3 s.
  std::unique_ptr<Peer> Accept(int listen_fd) {
    pollfd p{listen_fd, POLLIN, 0};
    if (::poll(&p, 1, 3000) != 1) return nullptr;
    return std::make_unique<Peer>(ctx_, ::accept(listen_fd, nullptr, nullptr));
  }

 private:
  SSL_CTX* ctx_;
};

// The TLS form of IdleConnectionAnsweredUnaskedIsNotReused: a kept-alive TLS connection the
// server answered unasked while it sat in the pool is not used again (before, the 408 was read
// as the second request's answer). The 408 comes 150 ms after the answer, as a server's idle
// timeout would send it: well after the client's last read.
TEST(HttpClientTest, IdleTlsConnectionAnsweredUnaskedIsNotReused) {
  RawListener listener;
  TlsTestServer tls;
  const int lfd = listener.fd;
  std::thread server([&] {
    auto first = tls.Accept(lfd);
    if (!first) return;
    first->ReadHead();
    first->Write("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst");
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    first->Write("HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    auto second = tls.Accept(lfd);
    if (!second) return;
    second->ReadHead();
    second->Write("HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecond");
  });
  EventLoop loop;
  ClientOptions co;
  co.insecure = true;
  HttpClient client(loop, *ParseUrl("https://127.0.0.1:" + std::to_string(listener.port)), co);
  auto send = [&](const char* path, Recorder& rec) {
    client.Send({"GET", path, "", {}}, &rec);
    const int64_t end = MonoNowNs() + 5 * kNsPerSec;
    while (!rec.done && MonoNowNs() < end) loop.RunFor(5 * kNsPerMs);
  };
  Recorder first;
  send("/1", first);
  EXPECT_EQ(first.result.failure, FailureKind::kNone) << first.result.error;
  EXPECT_EQ(first.body, "first");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  loop.RunFor(10 * kNsPerMs);
  Recorder second;
  send("/2", second);
  server.join();
  ExpectAnsweredOnANewConnection(second, client);
}

// Interim responses (100 Continue, 103 Early Hints) are not the answer: the final response
// that follows is, whether it comes later or in the same read, and the kept-alive connection
// then carries the next request's own answer (before, the 100 was taken as the response and
// the 200 that followed was read as the next request's).
TEST(HttpClientTest, InterimResponsesAreSkippedForTheFinalOne) {
  RawListener listener;
  const int lfd = listener.fd;
  std::thread server([&] {
    int fd = ::accept(lfd, nullptr, nullptr);
    ReadRequestHead(fd);
    std::string cont = "HTTP/1.1 100 Continue\r\n\r\n";
    ::send(fd, cont.data(), cont.size(), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::string first = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst";
    ::send(fd, first.data(), first.size(), 0);
    ReadRequestHead(fd);
    std::string second =
        "HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n"
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 6\r\n\r\nsecond";
    ::send(fd, second.data(), second.size(), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::close(fd);
  });
  RawClient c(listener);
  Recorder first, second;
  c.Send({"POST", "/1", "x", {}}, first);
  c.Send({"POST", "/2", "y", {}}, second);
  server.join();
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.body, "first");
  EXPECT_EQ(first.result.failure, FailureKind::kNone) << first.result.error;
  EXPECT_EQ(second.status, 201);
  EXPECT_EQ(second.body, "second");
  EXPECT_TRUE(second.result.times.reused);
  EXPECT_EQ(c.client.connections_opened(), 1u);
}

// A server that answers before it has read the whole request (413 for a body too large) and
// closes: the answer is read while the request is still being written, not left unread until
// the first-byte timeout, and the connection is not kept for another request.
TEST(HttpClientTest, AnswerBeforeTheRequestIsAllSentIsRead) {
  RawListener listener;
  const int lfd = listener.fd;
  std::thread server([&] {
    int fd = ::accept(lfd, nullptr, nullptr);
    ReadRequestHead(fd);
    std::string r = "HTTP/1.1 413 Payload Too Large\r\ncontent-length: 8\r\n"
                    "connection: close\r\n\r\ntoo big!";
    ::send(fd, r.data(), r.size(), 0);
    // Reads on slowly (a server draining before it closes), so the client's send blocks.
    char buf[4096];
    for (int i = 0; i < 100 && ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::close(fd);
  });
  ClientOptions co;
  co.first_byte_timeout_ns = 3 * kNsPerSec;
  EventLoop loop;
  HttpClient client(loop, *ParseUrl(listener.url()), co);
  Recorder r;
  const int64_t t0 = MonoNowNs();
  client.Send({"POST", "/big", std::string(32 << 20, 'x'), {}}, &r);
  while (!r.done && MonoNowNs() - t0 < 5 * kNsPerSec) loop.RunFor(5 * kNsPerMs);
  const int64_t took = MonoNowNs() - t0;
  server.join();
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.body, "too big!");
  EXPECT_EQ(r.result.failure, FailureKind::kNone) << r.result.error;
  EXPECT_LT(took, 2 * kNsPerSec);
  EXPECT_EQ(client.idle_connections(), 0u);
}

// A header value with a line break (an API key read from a file with its CRLF) would end the
// header and smuggle in another: the request fails before anything is sent, and the message
// names the header but not its value (it may be a key).
TEST(HttpClientTest, HeaderWithALineBreakIsRefusedWithoutEchoingIt) {
  Harness h(Echo());
  Recorder r = h.Send({"GET", "/", "", {{"Authorization", "Bearer sk-secret\r\nX-Evil: 1"}}});
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.result.failure, FailureKind::kProtocol);
  EXPECT_EQ(r.result.error, "request header Authorization: a line break in the name or value");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(h.client().connections_opened(), 0u);
}

// Fuzz crash 93a4a92f: a response announcing a 55 GB body made the client reserve it (Beast's
// string_body) and abort. Now the stream ends as a reset with the bytes that came.
TEST(HttpClientTest, FuzzCrash93a4a92fHugeContentLengthIsNotReserved) {
  RawListener listener;
  const int lfd = listener.fd;
  std::thread server([&] {
    int fd = ::accept(lfd, nullptr, nullptr);
    char buf[4096];
    ::recv(fd, buf, sizeof buf, 0);
    std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 55555555555\r\n\r\nsome bytes";
    ::send(fd, r.data(), r.size(), 0);
    ::close(fd);
  });
  RawClient c(listener);
  Recorder rec;
  c.Send({"GET", "/", "", {}}, rec);
  server.join();
  ASSERT_TRUE(rec.done);
  EXPECT_EQ(rec.status, 200);
  EXPECT_EQ(rec.body, "some bytes");
  EXPECT_EQ(rec.result.failure, FailureKind::kReset);
  EXPECT_FALSE(rec.result.body_complete);
}

}  // namespace
}  // namespace latdoc::http
