#include "rules/host_rules_internal.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/strings.h"

// Network-stack rules of `latdoc doctor` (net.time_wait, net.conntrack, net.listen_overflow,
// net.socket_drops, net.softnet, net.retrans, net.irq, net.firewall). Shared helpers:
// host_rules_internal.h.
namespace latdoc::rules::host_rules_internal {
namespace {

// net.irq: one CPU taking more than about half of a NIC's interrupts (latdoc's threshold; IRQ
// and RPS steering: torvalds/linux Documentation/networking/scaling.rst).
constexpr double kIrqOneCpuShare = 0.5;

// ---------------------------------------------------------------------------------------------
// Network.

Finding TimeWait(const HostFacts& facts) {
  const std::string id = "net.time_wait";
  const auto& n = facts.net;
  if (!n.tcp_time_wait.known()) return Skip(id, Layer::kNetwork, "TIME_WAIT sockets", n.tcp_time_wait.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk,
                   fmt::format("{} TIME_WAIT sockets", *n.tcp_time_wait));
  f.evidence.push_back(Num("tcp_time_wait", static_cast<double>(*n.tcp_time_wait), ""));
  if (n.server_port.known()) {
    f.evidence.push_back(FactNum(fmt::format("time_wait_on_port_{}", *n.server_port),
                                 n.server_port_time_wait, ""));
  }
  if (*n.tcp_time_wait >= 10000) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} TIME_WAIT sockets: clients open a new connection per request",
                          *n.tcp_time_wait);
    f.advice = "reuse connections (HTTP keep-alive / a client pool); raise the server idle timeout "
               "(VLLM_HTTP_TIMEOUT_KEEP_ALIVE=30); on client hosts sysctl -w net.ipv4.tcp_tw_reuse=1";
  }
  return f;
}

Finding Conntrack(const HostFacts& facts) {
  const std::string id = "net.conntrack";
  const auto& n = facts.net;
  if (!n.conntrack_count.known()) return Skip(id, Layer::kNetwork, "conntrack table", n.conntrack_count.reason);
  if (!n.conntrack_max.known() || *n.conntrack_max <= 0) {
    return Skip(id, Layer::kNetwork, "conntrack table",
                n.conntrack_max.known() ? "nf_conntrack_max is 0" : n.conntrack_max.reason);
  }
  const double fill = static_cast<double>(*n.conntrack_count) / static_cast<double>(*n.conntrack_max);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk,
                   fmt::format("conntrack table {:.0f}% full", fill * 100));
  f.evidence.push_back(Num("nf_conntrack_count", static_cast<double>(*n.conntrack_count), ""));
  f.evidence.push_back(Num("nf_conntrack_max", static_cast<double>(*n.conntrack_max), ""));
  if (fill > 0.8) {
    f.severity = fill > 0.95 ? Severity::kFail : Severity::kWarn;
    f.title = fmt::format("conntrack table {:.0f}% full: new connections get dropped when full", fill * 100);
    f.advice = fmt::format("sysctl -w net.netfilter.nf_conntrack_max={}; and reuse connections",
                           *n.conntrack_max * 4);
  }
  f.evidence.push_back(FactNum("conntrack_drops_delta", n.conntrack_drops_delta, ""));
  f.evidence.push_back(FactNum("conntrack_insert_failed_delta", n.conntrack_insert_failed_delta, ""));
  const int64_t clashes = n.conntrack_insert_failed_delta.value_or(0);
  if (clashes > 0 && f.severity < Severity::kWarn) {
    // Two packets of one new flow, or of flows that map to the same entry, raced to insert it
    // (parallel UDP lookups through NAT are the classic case): the loser is dropped.
    f.severity = Severity::kWarn;
    f.title = fmt::format("conntrack insertions failed {} times in {:.1f} s (entry clashes): the "
                          "packet that lost the race is dropped and its sender retries",
                          clashes, SampleSeconds(facts));
    f.advice = "clashes come from parallel connections or UDP lookups of one flow through NAT "
               "(DNS from pods: single-request-reopen, or a node-local DNS cache); or leave the "
               "serving port out of connection tracking (a notrack rule in the raw table)";
  }
  if (n.conntrack_drops_delta.known() && *n.conntrack_drops_delta > 0) {
    f.severity = Severity::kFail;
    f.title = fmt::format("conntrack dropped {} packets in {:.1f} s (table {:.0f}% full): a new "
                          "connection that loses its SYN waits a second or more for the retry",
                          *n.conntrack_drops_delta, SampleSeconds(facts), fill * 100);
    // A full table is the usual cause; with room left, a protocol tracker refused the packets.
    f.advice = fmt::format("sysctl -w net.netfilter.nf_conntrack_max={}; or leave the serving "
                           "port out of connection tracking (a NOTRACK / notrack rule in the raw "
                           "table); and reuse connections",
                           *n.conntrack_max * 4);
  }
  return f;
}

// Segments the kernel dropped at a socket during the sample, host-wide: drops by listeners
// beyond the accept-queue overflows that net.listen_overflow reports (ListenDrops counts both,
// and also a full SYN queue and failures to create the connection at the final ACK), a socket
// backlog over its limit while its owner held the socket (TCPBacklogDrop), a receive queue past
// its memory (TCPRcvQDrop). Each costs the sender a retransmit timeout (200 ms or more; about
// 1 s for a SYN).
Finding SocketDrops(const HostFacts& facts) {
  const std::string id = "net.socket_drops";
  const auto& n = facts.net;
  struct Part {
    std::string counter;
    std::string where;
    std::string advice;
    const Fact<int64_t>* delta;
  };
  Fact<int64_t> syn_drops = n.listen_drops_delta;
  if (syn_drops.known()) {
    if (!n.listen_overflows_delta.known()) {
      syn_drops = Fact<int64_t>::Unknown(n.listen_overflows_delta.reason);
    } else {
      syn_drops = Fact<int64_t>::Known(std::max<int64_t>(*syn_drops - *n.listen_overflows_delta, 0));
    }
  }
  const Part parts[] = {
      {"ListenDrops-ListenOverflows", "by listeners besides accept-queue overflows",
       "listener drops (a full SYN queue, which the listen() backlog and net.core.somaxconn "
       "size since Linux 4.4, or a failure to create the connection): raise the server's "
       "backlog and somaxconn, check nstat TcpExtTCPReqQFullDrop",
       &syn_drops},
      {"TCPBacklogDrop", "at a socket backlog",
       "backlog drops: a process held its socket while data arrived faster than it read "
       "(a saturated thread: cpu.saturation); ss -tmi shows each socket's drops",
       &n.backlog_drops_delta},
      {"TCPRcvQDrop", "at a full receive queue",
       "receive-queue drops: raise the receive buffers (sysctl -w "
       "net.ipv4.tcp_rmem='4096 131072 16777216') and check net.ipv4.tcp_mem",
       &n.rcvq_drops_delta},
  };
  std::string unknown;
  int64_t total = 0;
  int known = 0;
  std::vector<std::string> where, advice;
  Finding f = Make(id, Layer::kNetwork, Severity::kOk, "no TCP segments dropped at sockets during the sample");
  for (const Part& p : parts) {
    if (!p.delta->known()) {
      if (unknown.empty()) unknown = p.delta->reason;
      continue;
    }
    ++known;
    f.evidence.push_back(Num(p.counter + "_delta", static_cast<double>(**p.delta), ""));
    if (**p.delta > 0) {
      total += **p.delta;
      where.push_back(fmt::format("{} {} ({})", **p.delta, p.where, p.counter));
      advice.push_back(p.advice);
    }
  }
  if (known == 0) return Skip(id, Layer::kNetwork, "socket drops", unknown);
  if (total > 0) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} TCP segments dropped at sockets in {:.1f} s, host-wide: {}; each "
                          "waits for a retransmit timeout (about 1 s for a SYN)",
                          total, SampleSeconds(facts), fmt::join(where, ", "));
    f.advice = fmt::format("{}", fmt::join(advice, "; "));
  }
  return f;
}

// The CPUs' receive path (/proc/net/softnet_stat): packets dropped because a CPU's input
// backlog was full (net.core.netdev_max_backlog), and the times the receive softirq ran out of
// its budget (net.core.netdev_budget packets, or net.core.netdev_budget_usecs) with packets
// left, which then wait for the next round.
Finding Softnet(const HostFacts& facts) {
  const std::string id = "net.softnet";
  const auto& n = facts.net;
  const auto& d = n.softnet_dropped_delta;
  const auto& q = n.softnet_squeezed_delta;
  if (!d.known()) return Skip(id, Layer::kNetwork, "receive backlog", d.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk,
                   "no packets dropped at the CPUs' receive backlog during the sample");
  f.evidence.push_back(Num("softnet_dropped_delta", static_cast<double>(*d), ""));
  f.evidence.push_back(FactNum("softnet_time_squeeze_delta", q, ""));
  f.evidence.push_back(FactNum("net.core.netdev_max_backlog", n.netdev_max_backlog, ""));
  f.evidence.push_back(FactNum("net.core.netdev_budget", n.netdev_budget, ""));
  if (*d > 0) {
    const int64_t backlog = n.netdev_max_backlog.value_or(1000);
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} packets dropped at the CPUs' receive backlog in {:.1f} s "
                          "(net.core.netdev_max_backlog {}): the senders retransmit",
                          *d, SampleSeconds(facts), backlog);
    f.advice = fmt::format("sysctl -w net.core.netdev_max_backlog={}; and spread receive "
                           "processing over more CPUs (more NIC queues, or RPS: see net.irq)",
                           std::max<int64_t>(backlog * 2, 2000));
  } else if (q.known() && *q > 0) {
    const int64_t budget = n.netdev_budget.value_or(300);
    f.severity = Severity::kInfo;
    f.title = fmt::format("receive softirq ran out of budget {} times in {:.1f} s "
                          "(net.core.netdev_budget {} packets, or netdev_budget_usecs): packets "
                          "waited for the next round",
                          *q, SampleSeconds(facts), budget);
    f.advice = fmt::format("when it grows with the load: sysctl -w net.core.netdev_budget={} "
                           "(and net.core.netdev_budget_usecs when the time runs out first)",
                           budget * 2);
  }
  return f;
}

Finding ListenOverflow(const HostFacts& facts) {
  const std::string id = "net.listen_overflow";
  const auto& d = facts.net.listen_overflows_delta;
  if (!d.known()) return Skip(id, Layer::kNetwork, "listen queue overflows", d.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk, "no accept-queue overflow during the sample");
  f.evidence.push_back(Num("ListenOverflows_delta", static_cast<double>(*d), ""));
  if (*d > 0) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} accept-queue overflows in {:.1f} s: connections wait for a SYN retry",
                          *d, static_cast<double>(facts.sample_interval_ns) / 1e9);
    f.advice = "the server accepts too slowly for its connection rate: more API-server processes "
               "(vllm serve --api-server-count N), keep-alive on the clients; the queue holds "
               "min(the server's listen backlog, net.core.somaxconn): ss -ltn shows the backlog "
               "as Send-Q on the port, sysctl net.core.somaxconn the cap (4096 by default since "
               "Linux 5.4; raise it when lower)";
  }
  return f;
}

// net.retrans: judged by the share of segments retransmitted once there are enough of either
// (latdoc's thresholds): 1% warns, 10% fails.
constexpr int64_t kRetransMinOutSegs = 1000;
constexpr int64_t kRetransMinCount = 50;
constexpr double kRetransFailPct = 10.0;

Finding Retrans(const HostFacts& facts) {
  const std::string id = "net.retrans";
  const auto& r = facts.net.retrans_segs_delta;
  const auto& o = facts.net.out_segs_delta;
  if (!r.known()) return Skip(id, Layer::kNetwork, "TCP retransmits", r.reason);
  if (!o.known()) return Skip(id, Layer::kNetwork, "TCP retransmits", o.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk, "TCP retransmits low");
  f.evidence.push_back(Num("RetransSegs_delta", static_cast<double>(*r), ""));
  f.evidence.push_back(Num("OutSegs_delta", static_cast<double>(*o), ""));
  // A rate needs traffic to mean anything, but many retransmits in little traffic are the worst
  // case, not too little to say: 160 retransmits against 113 segments sent is a lossy path.
  if (*o < kRetransMinOutSegs && *r < kRetransMinCount) {
    f.title = "too little TCP traffic in the sample to judge retransmits";
    return f;
  }
  const double pct = 100.0 * static_cast<double>(*r) / static_cast<double>(std::max<int64_t>(*o, 1));
  f.evidence.push_back(Num("retransmit_rate", pct, "%"));
  f.title = fmt::format("TCP retransmits {:.2f}% of segments", pct);
  if (pct > 1.0) {
    f.severity = pct >= kRetransFailPct ? Severity::kFail : Severity::kWarn;
    f.title = fmt::format("TCP retransmits {:.1f}% of segments: each costs at least one RTO", pct);
    f.advice = "check NIC drops (ethtool -S), MTU mismatches and the path to the clients "
               "(latdoc net)";
  }
  return f;
}

std::vector<Finding> Irq(const HostFacts& facts) {
  const std::string id = "net.irq";
  const auto& n = facts.net.nic_irqs;
  if (!n.known()) return {Skip(id, Layer::kNetwork, "NIC interrupts", n.reason)};
  std::vector<Finding> out;
  for (const auto& nic : *n) {
    int64_t total = 0, top = 0;
    size_t top_cpu = 0;
    for (size_t c = 0; c < nic.per_cpu.size(); ++c) {
      total += nic.per_cpu[c];
      if (nic.per_cpu[c] > top) {
        top = nic.per_cpu[c];
        top_cpu = c;
      }
    }
    Finding f = Make(id, Layer::kNetwork, Severity::kOk,
                     fmt::format("{}: interrupts spread over CPUs", nic.nic));
    f.evidence.push_back(Num("interrupts", static_cast<double>(total), ""));
    f.evidence.push_back(Num("irq_lines", static_cast<double>(nic.irq_count), ""));
    f.evidence.push_back(Text("window", nic.since_boot ? "since boot" : "sample interval"));
    if (nic.per_cpu.size() < 2 || total < 1000) {
      f.title = fmt::format("{}: too few interrupts ({}) to judge their spread", nic.nic, total);
      out.push_back(std::move(f));
      continue;
    }
    const double share = static_cast<double>(top) / static_cast<double>(total);
    f.evidence.push_back(Num("busiest_cpu_share", share * 100, "%"));
    if (share > kIrqOneCpuShare) {
      f.severity = Severity::kWarn;
      const int64_t cpu = top_cpu < nic.cpu_ids.size() ? nic.cpu_ids[top_cpu] : static_cast<int64_t>(top_cpu);
      f.title = fmt::format("{}: {:.0f}% of its interrupts land on CPU {}", nic.nic, share * 100, cpu);
      f.advice = "systemctl enable --now irqbalance, or spread /proc/irq/<n>/smp_affinity_list "
                 "over the NIC's NUMA node; with one queue enable RPS "
                 "(/sys/class/net/<if>/queues/rx-0/rps_cpus)";
    }
    out.push_back(std::move(f));
  }
  if (out.empty()) {
    out.push_back(Skip(id, Layer::kNetwork, "NIC interrupts", "no NIC interrupt lines recognised"));
  }
  return out;
}

Finding Firewall(const HostFacts& facts) {
  const std::string id = "net.firewall";
  const auto& r = facts.net.firewall_rules;
  if (!r.known()) return Skip(id, Layer::kNetwork, "firewall rules", r.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk, fmt::format("{} firewall rules", *r));
  f.evidence.push_back(Num("rules", static_cast<double>(*r), ""));
  f.evidence.push_back(Text("source", r.source));
  if (*r > 1000) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} firewall rules are walked per connection", *r);
    f.advice = "consolidate rules (ipset / nft sets); kube-proxy: use IPVS or nftables mode";
  }
  return f;
}

}  // namespace

std::vector<Finding> JudgeNet(const HostFacts& facts) {
  std::vector<Finding> out;
  out.push_back(TimeWait(facts));
  out.push_back(Conntrack(facts));
  out.push_back(ListenOverflow(facts));
  out.push_back(SocketDrops(facts));
  out.push_back(Softnet(facts));
  out.push_back(Retrans(facts));
  for (auto& f : Irq(facts)) out.push_back(std::move(f));
  out.push_back(Firewall(facts));
  return out;
}

}  // namespace latdoc::rules::host_rules_internal
