#include "http/tcp_info.h"

// linux/tcp.h's struct tcp_info, not glibc's netinet/tcp.h (older: it stops before segs_out).
// Not to be included with netinet/tcp.h in one translation unit: hence a file of its own.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace latdoc::http {

std::optional<TcpConnInfo> ReadTcpConnInfo(int fd) {
  if (fd < 0) return std::nullopt;
  struct tcp_info ti;
  std::memset(&ti, 0, sizeof ti);
  socklen_t len = sizeof ti;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return std::nullopt;
  // An older kernel fills a prefix of the struct (`len` says how much); what it leaves out
  // stays 0, and the fields read here all exist since Linux 4.2 except rcv_ooopack (5.4).
  if (len < offsetof(struct tcp_info, tcpi_total_retrans) + sizeof ti.tcpi_total_retrans)
    return std::nullopt;
  TcpConnInfo t;
  t.total_retrans_segs = ti.tcpi_total_retrans;
  t.segs_out = ti.tcpi_segs_out;
  t.segs_in = ti.tcpi_segs_in;
  t.rcv_ooo_packets = ti.tcpi_rcv_ooopack;
  t.srtt_us = ti.tcpi_rtt;
  t.rttvar_us = ti.tcpi_rttvar;
  t.pmtu_bytes = ti.tcpi_pmtu;
  t.snd_mss_bytes = ti.tcpi_snd_mss;
  t.advmss_bytes = ti.tcpi_advmss;
  t.reordering = ti.tcpi_reordering;
  t.ca_state = ti.tcpi_ca_state;
  int mtu = 0;
  socklen_t mtu_len = sizeof mtu;
  if (::getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &mtu_len) == 0 && mtu > 0) {
    t.ip_mtu_bytes = static_cast<uint32_t>(mtu);
  } else if (mtu_len = sizeof mtu; ::getsockopt(fd, IPPROTO_IPV6, IPV6_MTU, &mtu, &mtu_len) == 0 &&
                                   mtu > 0) {
    t.ip_mtu_bytes = static_cast<uint32_t>(mtu);
  }
  return t;
}

void AddConnection(TcpTotals& f, const TcpConnInfo& t) {
  ++f.connections;
  f.segs_out += t.segs_out;
  f.retrans_segs += t.total_retrans_segs;
  f.rcv_ooo_packets += t.rcv_ooo_packets;
  if (f.segs_out > 0)
    f.retrans_share = static_cast<double>(f.retrans_segs) / static_cast<double>(f.segs_out);
  auto lower = [](std::optional<double>& v, double x) { v = v ? std::min(*v, x) : x; };
  auto higher = [](std::optional<double>& v, double x) { v = v ? std::max(*v, x) : x; };
  auto lower_u = [](std::optional<uint32_t>& v, uint32_t x) {
    if (x > 0) v = v ? std::min(*v, x) : x;  // 0: the kernel did not say
  };
  // A connection that never got an ACK has no RTT sample: tcpi_rtt is 0 then, not a fast path.
  if (t.srtt_us > 0) {
    lower(f.srtt_min_ms, t.srtt_us / 1e3);
    higher(f.srtt_max_ms, t.srtt_us / 1e3);
    higher(f.rttvar_max_ms, t.rttvar_us / 1e3);
  }
  lower_u(f.pmtu_min_bytes, t.pmtu_bytes);
  if (t.ip_mtu_bytes) lower_u(f.ip_mtu_min_bytes, *t.ip_mtu_bytes);
  lower_u(f.snd_mss_min_bytes, t.snd_mss_bytes);
  if (t.advmss_bytes > 0) f.advmss_bytes = t.advmss_bytes;
  f.reordering_max = std::max(f.reordering_max.value_or(0), t.reordering);
  if (f.connections == 1 || t.ca_state > f.worst_ca_state_code) {
    f.worst_ca_state_code = t.ca_state;
    f.worst_ca_state = std::string(CaStateName(t.ca_state));
  }
}

std::string_view CaStateName(uint8_t ca_state) {
  switch (ca_state) {
    case 0: return "open";
    case 1: return "disorder";
    case 2: return "cwr";
    case 3: return "recovery";
    case 4: return "loss";
    default: return "?";
  }
}

}  // namespace latdoc::http
