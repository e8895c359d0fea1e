// The network rules of the path between client and server (net_rules_internal.h): the hops,
// the client's retransmits, the route, the path MTU and a stream that stalls on the way.
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/core.h>

#include "rules/net_rules.h"
#include "rules/net_rules_internal.h"

namespace latdoc::rules::net_rules_internal {

using net::NetFacts;
using net::ProbeFacts;

void Path(const NetFacts& nf, std::vector<Finding>& out) {
  const net::PathFacts& p = nf.path;
  if (!p.ran || p.hops.empty()) {
    if (p.skipped_reason.empty()) return;
    out.push_back(Make("net.path", Severity::kSkip, "Path not traced: " + p.skipped_reason));
    return;
  }
  Finding f =
      Make("net.path", Severity::kInfo,
           p.jump_hop ? fmt::format("{} hops; the latency rises most at hop {} (+{:.1f} ms)",
                                    p.hops.size(), *p.jump_hop, *p.jump_ms)
                      : fmt::format("{} hops; no hop answered with a time", p.hops.size()));
  f.evidence.push_back(Text("tool", p.tool));
  for (const auto& h : p.hops) {
    f.evidence.push_back(Num(
        fmt::format("hop_{}{}", h.hop, h.address.empty() ? "" : " " + h.address), h.rtt_ms, "ms"));
  }
  out.push_back(std::move(f));
}

// Retransmits are the client's own (its SYNs, requests and FINs resent); the server's lost
// segments show on the client as packets received out of order, reported beside them.
void Retransmits(const ProbeFacts& p, std::vector<Finding>& out) {
  const net::TcpFacts& t = p.tcp;
  if (t.connections == 0) return;
  if (t.segs_out < kRetransMinSegs) {
    Finding f = Make("net.probe_retransmits", Severity::kSkip,
                     fmt::format("Retransmits not judged: {} segments sent (fewer than {})",
                                 t.segs_out, kRetransMinSegs));
    f.evidence = {Num("segments_sent", static_cast<double>(t.segs_out), "")};
    out.push_back(std::move(f));
    return;
  }
  const double share = t.retrans_share.value_or(0);
  Severity sev = Severity::kOk;
  if (t.retrans_segs >= kRetransWarnCount || (t.retrans_segs > 0 && share >= kRetransWarnShare))
    sev = share >= kRetransFailShare ? Severity::kFail : Severity::kWarn;
  std::string ooo =
      t.rcv_ooo_packets == 0
          ? ""
          : fmt::format("; {} of the server's packets arrived out of order", t.rcv_ooo_packets);
  Finding f =
      Make("net.probe_retransmits", sev,
           t.retrans_segs == 0
               ? fmt::format("No TCP retransmits: 0 of {} segments on {} connections{}", t.segs_out,
                             t.connections, ooo)
               : fmt::format("{} of {} TCP segments retransmitted ({:.1f}%) on {} connections{}",
                             t.retrans_segs, t.segs_out, share * 100, t.connections, ooo));
  f.evidence = {Num("retransmitted_segments", static_cast<double>(t.retrans_segs), ""),
                Num("segments_sent", static_cast<double>(t.segs_out), ""),
                Num("retransmit_share", share * 100, "%"),
                Num("connections", t.connections, ""),
                Num("received_out_of_order", static_cast<double>(t.rcv_ooo_packets), ""),
                Num("srtt_max", t.srtt_max_ms, "ms"),
                Num("rttvar_max", t.rttvar_max_ms, "ms"),
                Text("worst_congestion_state", t.worst_ca_state)};
  if (sev != Severity::kOk) {
    f.advice =
        "Packets are lost between client and server: a retransmitted SYN costs 1 s, a lost "
        "request an RTO (>= 200 ms) before the first token. Find the hop with `mtr -n HOST` "
        "or `ping -c 200 HOST`; look at drop and error counters (`ip -s link`, `ethtool -S "
        "DEV`, `nstat -az TcpRetransSegs`) on both ends and on any firewall or VPN between.";
  }
  out.push_back(std::move(f));
}

// Where the route goes, said as an info finding so that the network layer's summary in diagnose
// carries it.
void Route(const NetFacts& nf, std::vector<Finding>& out) {
  const net::RouteFacts& r = nf.route;
  if (!r.checked) {
    if (r.skipped_reason.empty()) return;
    Finding f = Make("net.route", Severity::kSkip, "Route not checked: " + r.skipped_reason);
    out.push_back(std::move(f));
    return;
  }
  std::string how = r.local             ? fmt::format("on this host (dev {})", r.dev)
                    : r.gateway.empty() ? fmt::format("directly on the subnet of dev {}", r.dev)
                                        : fmt::format("via gateway {} (dev {})", r.gateway, r.dev);
  Finding f =
      Make("net.route", Severity::kInfo, fmt::format("Server {} reached {}", r.address, how));
  f.evidence = {Text("address", r.address), Text("dev", r.dev),
                Text("gateway", !r.gateway.empty() ? r.gateway
                                : r.local          ? "none (this host)"
                                                   : "none (same subnet)"),
                Text("source", r.src)};
  if (r.iface_mtu_bytes) f.evidence.push_back(Num("interface_mtu", *r.iface_mtu_bytes, "bytes"));
  if (nf.path.ran) f.evidence.push_back(Num("hops", static_cast<double>(nf.path.hops.size()), ""));
  out.push_back(std::move(f));
}

// A path MTU below the interface's: something on the way has a smaller MTU (a tunnel, a VPN, a
// VXLAN overlay) and says so (ICMP), or does not (a black hole: large packets vanish, and a
// stream whose segments fill the MSS stalls until TCP gives up on them).
void PathMtu(const NetFacts& nf, std::vector<Finding>& out) {
  const net::RouteFacts& r = nf.route;
  if (!r.checked || r.local) return;
  if (!r.path_mtu_bytes || !r.iface_mtu_bytes) {
    Finding f = Make("net.path_mtu", Severity::kSkip,
                     "Path MTU not measured" + (r.pmtu_note.empty() ? "" : ": " + r.pmtu_note));
    out.push_back(std::move(f));
    return;
  }
  const uint32_t path = *r.path_mtu_bytes, iface = *r.iface_mtu_bytes;
  Severity sev = Severity::kOk;
  std::string title;
  if (r.pmtu_black_hole) {
    sev = Severity::kFail;
    title = fmt::format(
        "PMTU black hole: packets above {} bytes to {} vanish without ICMP "
        "'fragmentation needed' (interface MTU {})",
        path, r.address, iface);
  } else if (path < iface && nf.server_iface_mtu_bytes && path >= *nf.server_iface_mtu_bytes) {
    // The server's own interface is the narrow end: nothing on the way lowers it.
    title = fmt::format(
        "Path MTU {} equals the server's interface MTU ({} {}), below the "
        "client's {} (dev {}): the server's end sets it",
        path, nf.server_iface, *nf.server_iface_mtu_bytes, iface, r.dev);
  } else if (path < iface && nf.server_iface_mtu_bytes) {
    sev = Severity::kWarn;
    title = fmt::format(
        "Path MTU {} below both ends' interfaces (client {} dev {}, server {} {}): "
        "a smaller MTU on the way to {}",
        path, iface, r.dev, *nf.server_iface_mtu_bytes, nf.server_iface, r.address);
  } else if (path < iface) {
    sev = Severity::kWarn;
    title = fmt::format(
        "Path MTU {} below the interface's {} (dev {}): a smaller MTU on the way "
        "to {}",
        path, iface, r.dev, r.address);
  } else {
    title = fmt::format("Path MTU {} equals the interface's (dev {})", path, r.dev);
  }
  Finding f = Make("net.path_mtu", sev, std::move(title));
  f.evidence = {Num("path_mtu", path, "bytes"), Num("interface_mtu", iface, "bytes"),
                Text("dev", r.dev)};
  if (nf.server_iface_mtu_bytes) {
    f.evidence.push_back(Num("server_interface_mtu", *nf.server_iface_mtu_bytes, "bytes"));
    f.evidence.push_back(Text("server_dev", nf.server_iface));
  }
  if (r.cached_mtu_bytes)
    f.evidence.push_back(Num("kernel_cached_mtu", *r.cached_mtu_bytes, "bytes"));
  if (nf.probe.tcp.snd_mss_min_bytes)
    f.evidence.push_back(Num("tcp_mss", *nf.probe.tcp.snd_mss_min_bytes, "bytes"));
  if (!r.pmtu_note.empty()) f.evidence.push_back(Text("probe", r.pmtu_note));
  if (sev == Severity::kFail) {
    f.advice = fmt::format(
        "A device on the path drops packets above {0} bytes and does not send ICMP "
        "'fragmentation needed' (a firewall filtering ICMP, a tunnel): let ICMP type 3 code 4 "
        "through, or clamp TCP's MSS on the device (`iptables -t mangle -A FORWARD -p tcp "
        "--tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu`), or lower the MTU on the "
        "client (`ip link set dev {1} mtu {0}`); `sysctl net.ipv4.tcp_mtu_probing=1` lets TCP "
        "find it by itself.",
        path, r.dev);
  } else if (sev == Severity::kWarn) {
    f.advice = fmt::format(
        "Every full-size packet is fragmented or sent again smaller: set the MTU of {} to {} "
        "on the client, or clamp TCP's MSS on the tunnel's end, so packets fit the path.",
        r.dev, path);
  }
  out.push_back(std::move(f));
}

// The bandwidth stream stopped coming part-way while the probe's small requests passed: large
// packets are lost on the path (a PMTU black hole, a middlebox dropping full-size segments).
void StreamStall(const NetFacts& nf, const ProbeFacts& p, std::vector<Finding>& out) {
  const net::BandwidthFacts& b = p.bandwidth;
  if (!b.stalled) return;
  const net::RouteFacts& r = nf.route;
  std::string why = "large packets are lost on the path (a PMTU black hole or a middlebox)";
  if (r.pmtu_black_hole && r.path_mtu_bytes)
    why = fmt::format("packets above the path MTU of {} bytes vanish (PMTU black hole)",
                      *r.path_mtu_bytes);
  Finding f = Make(
      "net.stream_stall", Severity::kFail,
      fmt::format("The {}-token stream ({}-byte prompt) stalled after {:.0f} bytes of its answer "
                  "({:.0f} tokens): nothing more for {:.1f} s while the small requests passed; {}",
                  b.stream_tokens_requested, b.stream_prompt_bytes, b.stall_bytes.value_or(0),
                  b.stall_tokens.value_or(0), b.stall_quiet_ms.value_or(0) / 1e3, why));
  f.evidence = {Num("stream_tokens_requested", b.stream_tokens_requested, ""),
                Num("stream_prompt", b.stream_prompt_bytes, "B"),
                Num("bytes_before_stall", b.stall_bytes, "B"),
                Num("tokens_before_stall", b.stall_tokens, ""),
                Num("quiet", b.stall_quiet_ms, "ms"),
                Text("ended", b.stall_error),
                Text("url", p.url)};
  if (r.path_mtu_bytes) f.evidence.push_back(Num("path_mtu", *r.path_mtu_bytes, "bytes"));
  if (p.tcp.connections > 0) f.evidence.push_back(Num("tcp_retransmitted", p.tcp.retrans_segs, ""));
  f.advice =
      "Long responses will hang the same way: find the device that drops large packets "
      "(see net.path_mtu; `tracepath` to the server), let ICMP 'fragmentation needed' "
      "through or clamp TCP's MSS there, or lower the client's MTU to the path's.";
  out.push_back(std::move(f));
}

}  // namespace latdoc::rules::net_rules_internal
