#include "host/collector_internal.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "host/pci.h"
#include "host/proc_parsers.h"

// The network-stack probes of CollectHostFacts: sockets, TCP counters, softnet, conntrack, NIC
// interrupts, firewall rules and interfaces.
namespace latdoc::host::collector_internal {

namespace {

int64_t DefaultPort(const std::string& kind) {
  if (kind == "llama.cpp") return 8080;
  if (kind == "sglang") return 30000;
  if (kind == "tgi") return 3000;
  return 8000;  // vLLM
}

std::optional<int64_t> PortFromArgv(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--port" && i + 1 < argv.size()) return ParseInt64(argv[i + 1]);
    if (argv[i].rfind("--port=", 0) == 0) return ParseInt64(argv[i].substr(7));
  }
  return std::nullopt;
}

// Per-NIC IRQ lines: by /sys/class/net/<if>/device/msi_irqs, else by the queue names drivers
// give their vectors ("eth0-TxRx-3", "mlx5_comp3@pci:0000:3b:00.0", "virtio2-input.0").
std::map<std::string, std::set<std::string>> NicIrqLines(const SysRoot& fs, const Interrupts& irqs) {
  std::map<std::string, std::set<std::string>> out;
  std::vector<std::string> nics;
  std::map<std::string, std::string> by_device;   // "virtio2" or "0000:3b:00.0" -> "eth0"
  if (auto names = fs.List("/sys/class/net"); names.ok()) {
    for (const auto& n : *names) {
      if (n == "lo") continue;
      nics.push_back(n);
      if (auto link = fs.ReadLink("/sys/class/net/" + n + "/device"); link.ok()) {
        const std::string& l = *link;
        by_device.emplace(l.substr(l.rfind('/') + 1), n);
      }
      if (auto msi = fs.List("/sys/class/net/" + n + "/device/msi_irqs"); msi.ok()) {
        for (const auto& irq : *msi) out[n].insert(irq);
      }
    }
  }
  for (const auto& row : irqs.rows) {
    const std::string& a = row.action;
    bool claimed = false;
    for (const auto& [nic, lines] : out) claimed |= lines.count(row.irq) > 0;
    if (claimed) continue;
    for (const auto& n : nics) {
      if (a.rfind(n + "-", 0) == 0 || a.rfind(n + "_", 0) == 0) {
        out[n].insert(row.irq);
        claimed = true;
        break;
      }
    }
    if (claimed) continue;
    if (a.rfind("mlx5_comp", 0) == 0) {
      auto at = a.find('@');
      // "mlx5_comp3@pci:0000:3b:00.0": the interface whose device is that PCI function.
      std::string name = "mlx5" + (at == std::string::npos ? std::string() : a.substr(at));
      if (at != std::string::npos && a.compare(at, 5, "@pci:") == 0) {
        if (auto it = by_device.find(a.substr(at + 5)); it != by_device.end()) name = it->second;
      }
      out[name].insert(row.irq);
    } else if (a.rfind("virtio", 0) == 0 &&
               (a.find("-input.") != std::string::npos || a.find("-output.") != std::string::npos)) {
      // "virtio2-input.0": the virtio device; /sys/class/net/<if>/device links to it.
      const std::string dev = a.substr(0, a.find('-'));
      auto it = by_device.find(dev);
      out[it == by_device.end() ? dev : it->second].insert(row.irq);
    }
  }
  return out;
}

}  // namespace

void CollectNicIrqs(const SysRoot& fs, const Counters& a, const Counters& b, NetFacts* net) {
  if (!b.irq_status.ok()) {
    net->nic_irqs = Fact<std::vector<NicIrqs>>::Unknown(b.irq_status.message());
    return;
  }
  const bool have_delta = a.irq_status.ok() && a.irqs.cpu_ids == b.irqs.cpu_ids;
  std::map<std::string, const IrqRow*> before;
  for (const auto& r : a.irqs.rows) before[r.irq] = &r;
  std::vector<NicIrqs> out;
  for (const auto& [nic, lines] : NicIrqLines(fs, b.irqs)) {
    NicIrqs n;
    n.nic = nic;
    n.since_boot = !have_delta;
    n.per_cpu.assign(static_cast<size_t>(b.irqs.cpu_columns), 0);
    n.cpu_ids = b.irqs.cpu_ids;
    for (const auto& r : b.irqs.rows) {
      if (!lines.count(r.irq)) continue;
      ++n.irq_count;
      const IrqRow* prev = have_delta && before.count(r.irq) ? before[r.irq] : nullptr;
      for (size_t c = 0; c < r.per_cpu.size(); ++c) {
        int64_t v = r.per_cpu[c] - (prev ? prev->per_cpu[c] : 0);
        n.per_cpu[c] += std::max<int64_t>(v, 0);
      }
    }
    if (n.irq_count > 0) out.push_back(std::move(n));
  }
  net->nic_irqs = Fact<std::vector<NicIrqs>>::Known(std::move(out), "/proc/interrupts");
}

// `nft -j list ruleset` (JSON: {"nftables": [{"metainfo": ...}, {"rule": {...}}, ...]}), else
// `iptables-save` ("-A INPUT -p tcp ..." lines). Both need root (CAP_NET_ADMIN).
Fact<int64_t> CountFirewallRules(CommandRunner& runner, int64_t timeout_ns) {
  std::string why;
  auto nft = runner.Run({"nft", "-j", "list", "ruleset"}, timeout_ns);
  if (nft.ok() && nft->exit_code == 0) {
    auto j = nlohmann::json::parse(nft->stdout_text, nullptr, false);
    if (j.is_object() && j.contains("nftables") && j["nftables"].is_array()) {
      int64_t n = 0;
      for (const auto& e : j["nftables"]) n += e.is_object() && e.contains("rule");
      if (n > 0) return Fact<int64_t>::Known(n, "nft -j list ruleset");
      why = "nft: no rules";
    } else {
      why = "nft -j list ruleset: output is not nftables JSON";
    }
  } else {
    why = nft.ok() ? "nft exited with " + std::to_string(nft->exit_code) + " (needs root)"
                   : nft.status().message();
  }
  auto ipt = runner.Run({"iptables-save"}, timeout_ns);
  if (ipt.ok() && ipt->exit_code == 0) {
    int64_t n = 0;
    for (auto line : Split(ipt->stdout_text, '\n')) n += line.rfind("-A ", 0) == 0;
    // nft found no rules and iptables-save counted its own: the iptables count stands.
    return Fact<int64_t>::Known(n, "iptables-save");
  }
  why += "; " + (ipt.ok() ? "iptables-save exited with " + std::to_string(ipt->exit_code) +
                                " (needs root)"
                          : ipt.status().message());
  if (why.rfind("nft: no rules", 0) == 0) return Fact<int64_t>::Known(0, "nft -j list ruleset");
  return Fact<int64_t>::Unknown(why);
}

void CollectNetStatic(const SysRoot& fs, const std::optional<ServerProcess>& server,
                      NetFacts* net) {
  auto sock = fs.Read("/proc/net/sockstat");
  if (sock.ok()) {
    Sockstat s = ParseSockstat(*sock);
    net->tcp_inuse = FromOptional(s.tcp_inuse, "/proc/net/sockstat",
                                  "/proc/net/sockstat: no TCP inuse");
    net->tcp_time_wait = FromOptional(s.tcp_time_wait, "/proc/net/sockstat",
                                      "/proc/net/sockstat: no TCP tw");
  } else {
    net->tcp_inuse = net->tcp_time_wait = Fact<int64_t>::Unknown(sock.status().message());
  }
  if (server) {
    auto port = PortFromArgv(server->argv).value_or(DefaultPort(server->kind));
    net->server_port = Fact<int64_t>::Known(port, "server command line");
    int64_t tw = 0;
    Status err;
    int files = 0;
    for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
      auto t = fs.Read(f, 64 << 20);
      if (!t.ok()) {
        err = t.status();
        continue;
      }
      ++files;
      tw += CountTimeWaitOnPort(*t, port);
    }
    net->server_port_time_wait = files > 0 ? Fact<int64_t>::Known(tw, "/proc/net/tcp{,6}")
                                           : Fact<int64_t>::Unknown(err.message());
  } else {
    net->server_port = net->server_port_time_wait =
        Fact<int64_t>::Unknown("no server process found");
  }
  const std::string ct = "/proc/sys/net/netfilter/nf_conntrack_";
  net->conntrack_count = ReadIntFact(fs, ct + "count");
  net->conntrack_max = ReadIntFact(fs, ct + "max");
  net->netdev_max_backlog = ReadIntFact(fs, "/proc/sys/net/core/netdev_max_backlog");
  net->netdev_budget = ReadIntFact(fs, "/proc/sys/net/core/netdev_budget");
  if (!net->conntrack_count.known() && !fs.Exists("/proc/sys/net/netfilter")) {
    net->conntrack_count = net->conntrack_max =
        Fact<int64_t>::Unknown("nf_conntrack is not loaded (no /proc/sys/net/netfilter)");
  }
}

// The growth of one softnet counter over the interval, summed over CPUs (`field` picks it).
Fact<int64_t> SoftnetDelta(const Counters& a, const Counters& b, int64_t SoftnetCpu::*field) {
  if (!a.softnet) return Fact<int64_t>::Unknown(a.softnet_status.message());
  if (!b.softnet) return Fact<int64_t>::Unknown(b.softnet_status.message());
  const std::vector<SoftnetCpu>& x = a.softnet->cpus;
  const std::vector<SoftnetCpu>& y = b.softnet->cpus;
  // A CPU brought online in between adds its counters since boot: not growth. Where the kernel
  // writes CPU numbers, one going offline as another comes online is seen too.
  bool same_cpus = x.size() == y.size();
  for (size_t i = 0; same_cpus && i < x.size(); ++i) same_cpus = x[i].cpu == y[i].cpu;
  if (!same_cpus) {
    return Fact<int64_t>::Unknown("/proc/net/softnet_stat: CPUs went on or offline during the sample");
  }
  std::vector<int64_t> before, after;
  for (const SoftnetCpu& c : x) before.push_back(c.*field);
  for (const SoftnetCpu& c : y) after.push_back(c.*field);
  std::optional<int64_t> d = Counter32Delta(before, after);
  if (!d) return Fact<int64_t>::Unknown("/proc/net/softnet_stat: a counter went back during the sample");
  return Fact<int64_t>::Known(*d, "/proc/net/softnet_stat");
}

// The growth of one column of conntrack's statistics over the interval, summed over CPUs:
// "drop" (packets dropped: the table full, or a tracker refusing them) or "insert_failed"
// (an entry clashed with one inserted at the same time, as parallel UDP lookups do).
// "early_drop" is not read: an old unconfirmed entry evicted so the new packet gets through.
Fact<int64_t> ConntrackDelta(const Counters& a, const Counters& b, const std::string& key) {
  if (!a.conntrack_status.ok()) {
    return Fact<int64_t>::Unknown(a.conntrack_status.message() +
                                  (a.conntrack_status.code() == StatusCode::kNotFound
                                       ? " (nf_conntrack is not loaded)"
                                       : ""));
  }
  if (!b.conntrack_status.ok()) return Fact<int64_t>::Unknown(b.conntrack_status.message());
  auto x = a.conntrack_stat.find(key);
  auto y = b.conntrack_stat.find(key);
  if (x == a.conntrack_stat.end() || y == b.conntrack_stat.end()) {
    return Fact<int64_t>::Unknown("/proc/net/stat/nf_conntrack: no " + key + " column");
  }
  std::optional<int64_t> d = Counter32Delta(x->second, y->second);
  if (!d) {
    return Fact<int64_t>::Unknown("/proc/net/stat/nf_conntrack: " + key +
                                  " went back or its CPUs changed during the sample");
  }
  return Fact<int64_t>::Known(*d, "/proc/net/stat/nf_conntrack");
}

Fact<int64_t> CounterDelta(const Counters& a, const Counters& b, const std::string& key) {
  if (!a.tcp_status.ok()) return Fact<int64_t>::Unknown(a.tcp_status.message());
  if (!b.tcp_status.ok()) return Fact<int64_t>::Unknown(b.tcp_status.message());
  auto x = a.tcp.find(key);
  auto y = b.tcp.find(key);
  if (x == a.tcp.end() || y == b.tcp.end()) return Fact<int64_t>::Unknown(key + ": not reported");
  return Fact<int64_t>::Known(y->second - x->second, "/proc/net/netstat,/proc/net/snmp");
}

// Interfaces that are up, with their MTU: /sys/class/net/NAME/{flags,mtu,operstate}. "flags"
// is the kernel's hex ifr_flags ("0x1003"); IFF_UP is bit 0 (include/uapi/linux/if.h).
Fact<std::vector<NetInterface>> ReadInterfaces(const SysRoot& fs) {
  auto names = fs.List("/sys/class/net");
  if (!names.ok()) return Fact<std::vector<NetInterface>>::Unknown(names.status().message());
  std::vector<NetInterface> out;
  for (const std::string& name : *names) {
    if (name == "lo") continue;
    const std::string dir = "/sys/class/net/" + name;
    auto flags = fs.ReadTrimmed(dir + "/flags");
    auto mtu = fs.ReadTrimmed(dir + "/mtu");
    if (!flags.ok() || !mtu.ok()) continue;
    char* end = nullptr;
    const unsigned long f = std::strtoul(flags->c_str(), &end, 16);
    if (end == flags->c_str() || (f & 0x1) == 0) continue;
    const long long m = std::strtoll(mtu->c_str(), &end, 10);
    if (end == mtu->c_str() || m <= 0) continue;
    auto oper = fs.ReadTrimmed(dir + "/operstate");
    out.push_back({name, m, oper.ok() ? *oper : ""});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return Fact<std::vector<NetInterface>>::Known(std::move(out), "/sys/class/net");
}

// The TCP, softnet and conntrack counters' growth over the interval, and the NICs' interrupts
// (since boot when the tree is `one_reading`).
void NetDeltas(const SysRoot& fs, const Counters& first, const Counters& second, bool one_reading,
               NetFacts* net) {
  net->listen_overflows_delta = CounterDelta(first, second, "TcpExt.ListenOverflows");
  net->listen_drops_delta = CounterDelta(first, second, "TcpExt.ListenDrops");
  net->backlog_drops_delta = CounterDelta(first, second, "TcpExt.TCPBacklogDrop");
  net->rcvq_drops_delta = CounterDelta(first, second, "TcpExt.TCPRcvQDrop");
  net->softnet_dropped_delta = SoftnetDelta(first, second, &SoftnetCpu::dropped);
  net->softnet_squeezed_delta = SoftnetDelta(first, second, &SoftnetCpu::time_squeeze);
  net->conntrack_drops_delta = ConntrackDelta(first, second, "drop");
  net->conntrack_insert_failed_delta = ConntrackDelta(first, second, "insert_failed");
  net->retrans_segs_delta = CounterDelta(first, second, "Tcp.RetransSegs");
  net->out_segs_delta = CounterDelta(first, second, "Tcp.OutSegs");
  if (one_reading) {
    Counters none;  // no first reading: NIC interrupts are judged since boot
    none.irq_status = Status(StatusCode::kNotFound, kOneReading);
    CollectNicIrqs(fs, none, second, net);
  } else {
    CollectNicIrqs(fs, first, second, net);
  }
}

}  // namespace latdoc::host::collector_internal
