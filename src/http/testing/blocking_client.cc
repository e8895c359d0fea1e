#include "http/testing/blocking_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace latdoc::http::testing {

std::string RawExchange(uint16_t port, const std::string& raw) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL) == ssize_t(raw.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, size_t(n));
  }
  ::close(fd);
  return got;
}

std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    std::string ev = body.substr(pos, end - pos);
    if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

BlockingResponse Fetch(uint16_t port, const std::string& method, const std::string& path,
                       const std::string& body,
                       const std::vector<std::pair<std::string, std::string>>& headers) {
  BlockingResponse r;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    r.err = errno;
    ::close(fd);
    return r;
  }
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST") {
    req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  req += "\r\n" + body;
  size_t off = 0;
  while (off < req.size()) {
    ssize_t w = ::send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (w <= 0) break;
    off += size_t(w);
  }
  std::string raw;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0) { r.err = errno; break; }
    if (n == 0) break;
    raw.append(buf, size_t(n));
  }
  ::close(fd);
  size_t he = raw.find("\r\n\r\n");
  if (he == std::string::npos) return r;
  r.head = raw.substr(0, he + 2);
  r.status = std::atoi(raw.c_str() + 9);
  std::string rest = raw.substr(he + 4);
  std::string lower = r.head;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("transfer-encoding: chunked") != std::string::npos) {
    size_t p = 0;
    for (;;) {
      size_t le = rest.find("\r\n", p);
      if (le == std::string::npos) break;
      size_t len = std::strtoul(rest.c_str() + p, nullptr, 16);
      if (len == 0) { r.complete = rest.compare(le, 4, "\r\n\r\n") == 0; break; }
      if (le + 2 + len + 2 > rest.size()) { r.body += rest.substr(le + 2); break; }
      r.body += rest.substr(le + 2, len);
      p = le + 2 + len + 2;
    }
  } else {
    r.body = rest;
    size_t cl = lower.find("content-length: ");
    r.complete = cl == std::string::npos ||
                 rest.size() == std::strtoul(lower.c_str() + cl + 16, nullptr, 10);
  }
  r.sse_data = SseData(r.body);
  return r;
}

}  // namespace latdoc::http::testing
