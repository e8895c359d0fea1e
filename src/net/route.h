// How the client reaches the server: the route (`ip route get ADDRESS`: the interface, a
// gateway or none, the source address, a path MTU the kernel has learnt), the interface's MTU
// (SIOCGIFMTU), and the path MTU measured with UDP datagrams that carry Don't Fragment, as
// iputils' tracepath does: the largest one the server's host answers (ICMP "port unreachable"),
// stepping down on ICMP "fragmentation needed", and, where large ones vanish without a word,
// searching down for the largest that passes (a PMTU black hole).
//
// Blocking, a few seconds at most (InspectRoute's `per_try_ns` bounds each datagram's wait).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/command_runner.h"
#include "net/net_facts.h"

namespace latdoc::net {

// Parses one `ip route get ADDRESS` answer (iproute2), e.g.
//   "10.242.2.2 via 10.242.1.1 dev vc0 src 10.242.1.2 uid 0 \n    cache expires 597sec mtu 1400"
//   "10.242.1.2 dev ta src 10.242.1.1 uid 0 \n    cache"
//   "local 127.0.0.1 dev lo src 127.0.0.1 uid 0 \n    cache <local>"
// into dev, gateway, src, local and cached_mtu_bytes of `r`. False when no "dev" is named.
bool ParseIpRouteGet(std::string_view text, RouteFacts& r);

// The interface MTU of `dev` in this network namespace; nullopt when unknown.
std::optional<uint32_t> InterfaceMtu(const std::string& dev);

// The MTUs tried, after the interface's, when large datagrams get no answer: the common ones
// (PPPoE 1492, VXLAN 1450, WireGuard 1420, IPv6's minimum 1280...) and the IPv4 minimum 576.
inline constexpr uint32_t kCommonMtus[] = {1492, 1480, 1472, 1460, 1450, 1440, 1420,
                                           1400, 1380, 1360, 1300, 1280, 1024, 576};

struct PathMtuResult {
  std::optional<uint32_t> path_mtu_bytes;
  bool frag_needed_seen = false;
  bool black_hole = false;
  std::string note;
};
// Measures the path MTU to `address`:`port` (IPv4) starting from `start_mtu_bytes`.
PathMtuResult MeasurePathMtu(const std::string& address, uint16_t port, uint32_t start_mtu_bytes,
                             int64_t per_try_ns);

// Resolves `host` (its first address), asks the route, the interface MTU and the path MTU.
// Never fails: what could not be learnt is said in skipped_reason or pmtu_note.
RouteFacts InspectRoute(CommandRunner& runner, const std::string& host, uint16_t port,
                        int64_t per_try_ns = 300'000'000);

}  // namespace latdoc::net
