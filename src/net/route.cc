#include "net/route.h"

#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/core.h>

#include "base/clock.h"

namespace latdoc::net {
namespace {

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> w;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    if (j > i) w.push_back(text.substr(i, j - i));
    i = j;
  }
  return w;
}

enum class Answer { kReached, kTooBig, kSilent, kError };

// One datagram of `mtu` bytes (IP and UDP headers included) and its fate.
class UdpProber {
 public:
  explicit UdpProber(int fd) : fd_(fd) {}

  Answer Try(uint32_t mtu, int64_t wait_ns, uint32_t* reported_mtu, std::string* error) {
    Drain();
    std::vector<char> payload(mtu > 28 ? mtu - 28 : 1, 'l');
    if (::send(fd_, payload.data(), payload.size(), 0) < 0) {
      if (errno == EMSGSIZE) {  // above this host's own limit for the route
        int m = 0;
        socklen_t len = sizeof m;
        if (::getsockopt(fd_, IPPROTO_IP, IP_MTU, &m, &len) == 0 && m > 0 &&
            static_cast<uint32_t>(m) < mtu) {
          *reported_mtu = static_cast<uint32_t>(m);
          return Answer::kTooBig;
        }
      }
      *error = std::strerror(errno);
      return Answer::kError;
    }
    const int64_t deadline = MonoNowNs() + wait_ns;
    for (int64_t now = MonoNowNs(); now < deadline; now = MonoNowNs()) {
      struct pollfd p = {fd_, POLLIN, 0};
      int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, (deadline - now) / 1'000'000)));
      if (n <= 0) continue;
      if (p.revents & POLLERR) {
        Answer a = ReadError(mtu, reported_mtu, error);
        if (a != Answer::kSilent) return a;
      } else if (p.revents & POLLIN) {
        char buf[64];
        (void)::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
        return Answer::kReached;  // something listens on the port and answered
      }
    }
    return Answer::kSilent;
  }

 private:
  // The error queue (IP_RECVERR): ICMP errors for our datagrams.
  Answer ReadError(uint32_t mtu, uint32_t* reported_mtu, std::string* error) {
    char data[2048], control[512];
    struct iovec iov = {data, sizeof data};
    struct msghdr msg;
    std::memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (::recvmsg(fd_, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return Answer::kSilent;
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR) continue;
      struct sock_extended_err e;
      std::memcpy(&e, CMSG_DATA(c), sizeof e);
      if (e.ee_errno == EMSGSIZE) {
        if (e.ee_info > 0 && e.ee_info < mtu) {
          *reported_mtu = e.ee_info;
          return Answer::kTooBig;
        }
        continue;
      }
      if (e.ee_errno == ECONNREFUSED) return Answer::kReached;  // ICMP port unreachable
      *error = std::strerror(static_cast<int>(e.ee_errno));
      return Answer::kError;
    }
    return Answer::kSilent;
  }

  // Answers to earlier datagrams: replies, queued ICMP errors and the pending socket error (a
  // connected UDP socket's send() would report it), so the next answer is the next datagram's.
  void Drain() {
    char buf[2048];
    while (::recv(fd_, buf, sizeof buf, MSG_DONTWAIT) >= 0) {
    }
    for (int i = 0; i < 16; ++i) {
      char data[2048], control[512];
      struct iovec iov = {data, sizeof data};
      struct msghdr msg;
      std::memset(&msg, 0, sizeof msg);
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      if (::recvmsg(fd_, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) break;
    }
    int err = 0;
    socklen_t len = sizeof err;
    (void)::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
  }

  int fd_;
};

}  // namespace

bool ParseIpRouteGet(std::string_view text, RouteFacts& r) {
  std::vector<std::string_view> w = Words(text);
  bool has_dev = false;
  for (size_t i = 0; i < w.size(); ++i) {
    const bool next = i + 1 < w.size();
    if (i == 0 && w[i] == "local") r.local = true;
    if (w[i] == "dev" && next) {
      r.dev = std::string(w[i + 1]);
      has_dev = true;
    } else if (w[i] == "via" && next) {
      r.gateway = std::string(w[i + 1]);
    } else if (w[i] == "src" && next) {
      r.src = std::string(w[i + 1]);
    } else if (w[i] == "mtu" && next) {
      // "mtu lock 1400" when locked
      std::string_view v = w[i + 1] == "lock" && i + 2 < w.size() ? w[i + 2] : w[i + 1];
      uint32_t m = 0;
      for (char ch : v) {
        if (ch < '0' || ch > '9') { m = 0; break; }
        m = m * 10 + static_cast<uint32_t>(ch - '0');
      }
      if (m > 0) r.cached_mtu_bytes = m;
    }
  }
  return has_dev;
}

std::optional<uint32_t> InterfaceMtu(const std::string& dev) {
  if (dev.empty() || dev.size() >= IFNAMSIZ) return std::nullopt;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  struct ifreq ifr;
  std::memset(&ifr, 0, sizeof ifr);
  std::memcpy(ifr.ifr_name, dev.data(), dev.size());
  std::optional<uint32_t> mtu;
  if (::ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0) mtu = static_cast<uint32_t>(ifr.ifr_mtu);
  ::close(fd);
  return mtu;
}

// Plan: try the starting MTU (twice, against a lost datagram). An answer ends it; "fragmentation
// needed" steps down to the MTU the router named and tries again. Silence at the start: try
// 576; silent too, nothing can be said (UDP or ICMP filtered). 576 answered: a black hole between
// 576 and the start: binary search over the common MTUs between them for the largest that
// passes (few datagrams: a host rate-limits its ICMP answers to about one a second after a
// burst of six, Linux's icmp_ratelimit).
PathMtuResult MeasurePathMtu(const std::string& address, uint16_t port, uint32_t start_mtu_bytes,
                             int64_t per_try_ns) {
  PathMtuResult out;
  struct sockaddr_in sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (::inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    out.note = "not measured: the UDP probe is IPv4 only";
    return out;
  }
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    out.note = fmt::format("not measured: socket: {}", std::strerror(errno));
    return out;
  }
  // PROBE: Don't Fragment set, and this host's cached path MTU ignored, so each size is tried
  // on the wire.
  int pmtudisc = IP_PMTUDISC_PROBE, on = 1;
  if (::setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtudisc, sizeof pmtudisc) != 0 ||
      ::setsockopt(fd, IPPROTO_IP, IP_RECVERR, &on, sizeof on) != 0 ||
      ::connect(fd, reinterpret_cast<struct sockaddr*>(&sa), sizeof sa) != 0) {
    out.note = fmt::format("not measured: {}", std::strerror(errno));
    ::close(fd);
    return out;
  }
  UdpProber prober(fd);
  uint32_t reported = 0;
  std::string error;
  auto try_twice = [&](uint32_t mtu) {
    Answer a = prober.Try(mtu, per_try_ns, &reported, &error);
    if (a == Answer::kSilent) a = prober.Try(mtu, per_try_ns, &reported, &error);
    return a;
  };
  uint32_t mtu = start_mtu_bytes;
  for (int step = 0; step < 8; ++step) {
    Answer a = try_twice(mtu);
    if (a == Answer::kReached) {
      out.path_mtu_bytes = mtu;
      break;
    }
    if (a == Answer::kTooBig && reported >= 68) {
      out.frag_needed_seen = true;
      mtu = reported;
      continue;
    }
    if (a == Answer::kError) {
      out.note = "not measured: " + error;
      break;
    }
    if (a == Answer::kTooBig) {
      out.note = fmt::format("not measured: an MTU of {} reported", reported);
      break;
    }
    // Silent at `mtu`: is anything answered at all?
    const uint32_t kMin = 576;
    if (mtu <= kMin || try_twice(kMin) != Answer::kReached) {
      out.note = fmt::format("not measured: no answer to UDP datagrams to port {} (UDP or ICMP "
                             "filtered, or something listens there)",
                             port);
      break;
    }
    std::vector<uint32_t> between;  // ascending, strictly between 576 and mtu
    for (uint32_t m : kCommonMtus)
      if (m > kMin && m < mtu) between.push_back(m);
    std::sort(between.begin(), between.end());
    uint32_t lo = kMin;     // answered
    size_t a_i = 0, b_i = between.size();  // candidates [a_i, b_i) undecided
    while (a_i < b_i) {
      size_t mid = (a_i + b_i) / 2;
      Answer r = try_twice(between[mid]);
      if (r == Answer::kReached) {
        lo = between[mid];
        a_i = mid + 1;
      } else {
        if (r == Answer::kTooBig) out.frag_needed_seen = true;
        b_i = mid;
      }
    }
    out.path_mtu_bytes = lo;
    out.black_hole = true;
    out.note = fmt::format("datagrams of {} bytes got no answer, {} did (the largest of the "
                           "common MTUs tried that passed)",
                           mtu, lo);
    break;
  }
  ::close(fd);
  return out;
}

RouteFacts InspectRoute(CommandRunner& runner, const std::string& host, uint16_t port,
                        int64_t per_try_ns) {
  RouteFacts r;
  // The first address the resolver gives, as the probe's client connects to it.
  struct addrinfo hints;
  std::memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0 || !res) {
    r.skipped_reason = fmt::format("resolve {}: {}", host, gai_strerror(rc));
    return r;
  }
  char buf[INET6_ADDRSTRLEN] = {};
  const void* addr = res->ai_family == AF_INET
                         ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr)
                         : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr);
  ::inet_ntop(res->ai_family, addr, buf, sizeof buf);
  ::freeaddrinfo(res);
  r.address = buf;
  auto out = runner.Run({"ip", "route", "get", r.address}, 5'000'000'000);
  if (!out.ok()) {
    r.skipped_reason = out.status().code() == StatusCode::kNotFound
                           ? "ip is not installed (apt-get install iproute2)"
                           : "ip route get: " + out.status().message();
    return r;
  }
  if (out->exit_code != 0 || !ParseIpRouteGet(out->stdout_text, r)) {
    r.skipped_reason = fmt::format("ip route get {}: no route (exit {})", r.address, out->exit_code);
    return r;
  }
  r.checked = true;
  r.iface_mtu_bytes = InterfaceMtu(r.dev);
  if (r.local) {
    r.pmtu_note = "not measured: the server is this host";
    return r;
  }
  if (!r.iface_mtu_bytes) {
    r.pmtu_note = "not measured: the interface's MTU is unknown";
    return r;
  }
  PathMtuResult p = MeasurePathMtu(r.address, port, *r.iface_mtu_bytes, per_try_ns);
  r.path_mtu_bytes = p.path_mtu_bytes;
  r.pmtu_frag_needed_seen = p.frag_needed_seen;
  r.pmtu_black_hole = p.black_hole;
  r.pmtu_note = p.note;
  return r;
}

}  // namespace latdoc::net
