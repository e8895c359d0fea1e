#include "http/tcp_info.h"

// linux/tcp.h's struct tcp_info, not glibc's netinet/tcp.h (older: it stops before segs_out).
// Not to be included with netinet/tcp.h in one translation unit: hence a file of its own.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

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
