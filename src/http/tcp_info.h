// TcpConnInfo: what the kernel knows about one TCP connection (TCP_INFO, IP_MTU), read on the
// client's own socket. A snapshot, cheap (two getsockopt calls), taken once per exchange by an
// HttpClient that asks for it (ClientOptions::capture_tcp_info): never on a read.
//
// Counters are the connection's totals from its start (TCP_INFO is cumulative), so the facts of
// a kept-alive connection are those of its last snapshot, not a sum of its exchanges'.
// TcpTotals adds such snapshots up over a set of connections (a probe's, a load test's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace latdoc::http {

struct TcpConnInfo {
  uint32_t total_retrans_segs = 0;  // tcpi_total_retrans: segments this side retransmitted
  uint32_t segs_out = 0;            // tcpi_segs_out: segments sent, retransmits and ACKs included
  uint32_t segs_in = 0;             // tcpi_segs_in
  uint32_t rcv_ooo_packets = 0;     // tcpi_rcv_ooopack: packets received out of order (the
                                    // server's segments lost or reordered on the way here)
  uint32_t srtt_us = 0;             // tcpi_rtt: smoothed RTT
  uint32_t rttvar_us = 0;           // tcpi_rttvar
  uint32_t pmtu_bytes = 0;          // tcpi_pmtu: the path MTU the kernel uses for this route
  uint32_t snd_mss_bytes = 0;       // tcpi_snd_mss
  uint32_t advmss_bytes = 0;        // tcpi_advmss: the MSS this side advertised
  uint32_t reordering = 0;          // tcpi_reordering: the reordering degree the kernel assumes
  uint8_t ca_state = 0;             // tcpi_ca_state (TCP_CA_Open = 0 .. TCP_CA_Loss = 4)
  std::optional<uint32_t> ip_mtu_bytes;  // IP_MTU on the connected socket
};

// TCP facts of a set of latdoc's own connections (TCP_INFO, read as each exchange ended): the
// counters summed over the connections, the rest as their range. `connections` 0: none read
// (every other field then means nothing and is null in JSON).
struct TcpTotals {
  int connections = 0;
  uint64_t segs_out = 0;          // segments sent, retransmits included
  uint64_t retrans_segs = 0;      // segments retransmitted (the client's side)
  uint64_t rcv_ooo_packets = 0;   // the server's packets that arrived out of order
  std::optional<double> retrans_share;           // retrans_segs / segs_out
  std::optional<double> srtt_min_ms, srtt_max_ms, rttvar_max_ms;
  std::optional<uint32_t> pmtu_min_bytes;        // the lowest path MTU a connection used
  std::optional<uint32_t> ip_mtu_min_bytes;      // IP_MTU on the connected sockets
  std::optional<uint32_t> snd_mss_min_bytes, advmss_bytes;
  std::optional<uint32_t> reordering_max;
  std::string worst_ca_state;                    // the worst congestion state seen ("open": none)
  uint8_t worst_ca_state_code = 0;
};
// Adds one connection's snapshot.
void AddConnection(TcpTotals& f, const TcpConnInfo& t);

// Reads the socket's TCP facts; nullopt when `fd` is not a TCP socket (or the kernel says no).
std::optional<TcpConnInfo> ReadTcpConnInfo(int fd);

// "open", "disorder", "cwr", "recovery", "loss" (include/net/tcp.h's tcp_ca_state), else "?".
std::string_view CaStateName(uint8_t ca_state);

}  // namespace latdoc::http
