#include "net/idle_close.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/core.h>

#include "base/clock.h"

namespace latdoc::net {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Waits for `events` on `fd` until `deadline_ns`; false on timeout.
bool WaitFor(int fd, short events, int64_t deadline_ns) {
  for (;;) {
    int64_t left_ns = deadline_ns - MonoNowNs();
    if (left_ns <= 0) return false;
    pollfd p{fd, events, 0};
    int ms = static_cast<int>(std::min<int64_t>(left_ns / 1'000'000 + 1, 1'000'000));
    int n = ::poll(&p, 1, ms);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // let the caller's I/O call report the error
  }
}

// Connects to the first of `addrs` that accepts, in getaddrinfo's order, all by `deadline_ns`:
// "localhost" may give ::1 before 127.0.0.1 while the server listens on only one of them.
// Returns the connected non-blocking socket, or -1 with `error` saying why the last one failed.
int ConnectFirst(const addrinfo* addrs, int64_t deadline_ns, std::string& error) {
  error = "connect: no address";
  for (const addrinfo* ai = addrs; ai != nullptr; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) {
      error = fmt::format("socket: {}", std::strerror(errno));
      continue;
    }
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      error = fmt::format("connect: {}", std::strerror(errno));
      continue;
    }
    if (!WaitFor(fd.get(), POLLOUT, deadline_ns)) {
      error = "connect: timed out";
      return -1;  // the time is spent for every later address too
    }
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
    if (soerr != 0) {
      error = fmt::format("connect: {}", std::strerror(soerr));
      continue;
    }
    return fd.release();
  }
  return -1;
}

IdleCloseFacts Skip(std::string why) {
  IdleCloseFacts f;
  f.skipped_reason = std::move(why);
  return f;
}

}  // namespace

IdleCloseFacts CheckIdleClose(const http::Url& url, const std::string& path, int64_t max_wait_ns,
                              int64_t connect_timeout_ns) {
  if (url.tls()) return Skip("plain http only; this URL is https");
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(url.port);
  if (int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Skip(fmt::format("resolve {}: {}", url.host, ::gai_strerror(rc)));
  IdleCloseFacts f = CheckIdleCloseAt(res, url, path, max_wait_ns, connect_timeout_ns);
  ::freeaddrinfo(res);
  return f;
}

IdleCloseFacts CheckIdleCloseAt(const addrinfo* addrs, const http::Url& url,
                                const std::string& path, int64_t max_wait_ns,
                                int64_t connect_timeout_ns) {
  const int64_t deadline = MonoNowNs() + connect_timeout_ns;
  std::string error;
  Fd fd(ConnectFirst(addrs, deadline, error));
  if (fd.get() < 0) return Skip(error);

  std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  std::string req = fmt::format(
      "GET {}{}{}{} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: latdoc\r\nAccept: */*\r\n\r\n",
      url.base_path, path, url.query.empty() ? "" : "?", url.query, host, url.port);
  size_t sent = 0;
  while (sent < req.size()) {
    if (!WaitFor(fd.get(), POLLOUT, deadline)) return Skip("send: timed out");
    ssize_t n = ::send(fd.get(), req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return Skip(fmt::format("send: {}", std::strerror(errno)));
    sent += static_cast<size_t>(n);
  }

  // Read until the server closes. The response arrives first; every read with data moves
  // `last_data_ns`, so the idle time counts from the response's last byte however it is framed.
  IdleCloseFacts f;
  f.checked = true;
  f.waited_s = static_cast<double>(max_wait_ns) / 1e9;
  int64_t last_data_ns = -1;
  int64_t first_byte_deadline = MonoNowNs() + connect_timeout_ns;
  char buf[4096];
  for (;;) {
    int64_t wait_until = last_data_ns < 0 ? first_byte_deadline : last_data_ns + max_wait_ns;
    if (!WaitFor(fd.get(), POLLIN, wait_until)) {
      if (last_data_ns < 0) return Skip("no response before the timeout");
      return f;  // still open after max_wait_ns idle
    }
    ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
    int64_t now = MonoNowNs();
    if (n > 0) {
      last_data_ns = now;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (last_data_ns < 0) {
      return Skip(n == 0 ? "the server closed the connection before answering"
                         : fmt::format("recv: {}", std::strerror(errno)));
    }
    f.closed = true;  // EOF or reset
    f.closed_after_s = static_cast<double>(now - last_data_ns) / 1e9;
    return f;
  }
}

}  // namespace latdoc::net
