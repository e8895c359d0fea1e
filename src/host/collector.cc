#include "host/collector.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "base/clock.h"
#include "base/strings.h"
#include "host/pci.h"
#include "host/vllm_config.h"
#include "host/proc_parsers.h"
#include "host/server_process.h"

namespace latdoc::host {
namespace {

// Everything sampled twice.
struct Counters {
  int64_t t_ns = 0;
  std::map<int64_t, TaskStat> tasks;  // tid -> stat, of the server and its children
  std::map<int64_t, int64_t> task_pid;  // tid -> the process it belongs to
  Status tasks_status;                  // of the server's own task list
  std::optional<int64_t> write_bytes;
  Status io_status;
  std::map<int64_t, int64_t> child_write_bytes;   // pid -> write_bytes, children readable
  std::map<std::string, int64_t> disk_flushes;
  std::map<std::string, int64_t> tcp;  // ParseCounterPairs of netstat + snmp
  Status tcp_status;
  Interrupts irqs;
  Status irq_status;
  std::map<std::string, int64_t> disk_ticks;
  Status disk_status;
  std::vector<std::optional<CgroupCpuStat>> cgroup_stats;  // one per CgroupCpu limit
  std::map<std::string, int64_t> vmstat;
  Status vmstat_status;
  std::optional<SoftnetStat> softnet;
  Status softnet_status;
  std::map<std::string, std::vector<int64_t>> conntrack_stat;  // of /proc/net/stat/nf_conntrack
  Status conntrack_status;
};

// Reads the stat of every thread of `pid` into c; false when its task list cannot be listed.
Status SampleTasks(const SysRoot& fs, int64_t pid, Counters& c) {
  const std::string base = "/proc/" + std::to_string(pid);
  auto tids = fs.List(base + "/task");
  if (!tids.ok()) return tids.status();
  for (const auto& t : *tids) {
    auto tid = ParseInt64(t);
    if (!tid) continue;
    auto text = fs.Read(base + "/task/" + t + "/stat");
    if (!text.ok()) continue;  // the thread ended between listing and reading
    if (auto st = ParseTaskStat(*text)) {
      c.tasks[*tid] = *st;
      c.task_pid[*tid] = pid;
    }
  }
  return Status();
}

Counters SampleCounters(const SysRoot& fs, std::optional<int64_t> pid,
                        const std::vector<ServerChild>& children,
                        const std::vector<CgroupCpuLimit>& cgroup_limits) {
  Counters c;
  c.t_ns = MonoNowNs();
  for (const auto& limit : cgroup_limits) {
    auto text = fs.Read(limit.dir + "/cpu.stat");
    c.cgroup_stats.push_back(text.ok() ? ParseCgroupCpuStat(*text) : std::nullopt);
  }
  if (pid) {
    const std::string base = "/proc/" + std::to_string(*pid);
    c.tasks_status = SampleTasks(fs, *pid, c);
    // A child that exited meanwhile has no threads to show: not an error.
    for (const auto& child : children) (void)SampleTasks(fs, child.pid, c);
    auto io = fs.Read(base + "/io");
    if (!io.ok()) {
      c.io_status = io.status();
    } else if (!(c.write_bytes = ParseIoWriteBytes(*io))) {
      c.io_status = DataLoss(base + "/io: no write_bytes line");
    }
    // vLLM's engine core (a child) does its own writes: counted with the server's.
    for (const auto& child : children) {
      auto cio = fs.Read("/proc/" + std::to_string(child.pid) + "/io");
      if (!cio.ok()) continue;
      if (auto w = ParseIoWriteBytes(*cio)) c.child_write_bytes[child.pid] = *w;
    }
  }
  auto netstat = fs.Read("/proc/net/netstat");
  auto snmp = fs.Read("/proc/net/snmp");
  if (netstat.ok()) c.tcp = ParseCounterPairs(*netstat);
  else c.tcp_status = netstat.status();
  if (snmp.ok()) {
    for (auto& [k, v] : ParseCounterPairs(*snmp)) c.tcp[k] = v;
  } else {
    c.tcp_status = snmp.status();
  }
  auto irq = fs.Read("/proc/interrupts");
  if (irq.ok()) c.irqs = ParseInterrupts(*irq);
  else c.irq_status = irq.status();
  auto disk = fs.Read("/proc/diskstats");
  if (disk.ok()) {
    c.disk_ticks = ParseDiskIoTicks(*disk);
    c.disk_flushes = ParseDiskFlushes(*disk);
  }
  else c.disk_status = disk.status();
  auto vm = fs.Read("/proc/vmstat");
  if (vm.ok()) c.vmstat = ParseVmstat(*vm);
  else c.vmstat_status = vm.status();
  auto softnet = fs.Read("/proc/net/softnet_stat");
  if (!softnet.ok()) {
    c.softnet_status = softnet.status();
  } else if (!(c.softnet = ParseSoftnetStat(*softnet))) {
    c.softnet_status = DataLoss("/proc/net/softnet_stat: no line of hex counters");
  }
  auto ct = fs.Read("/proc/net/stat/nf_conntrack");
  if (!ct.ok()) {
    c.conntrack_status = ct.status();
  } else if ((c.conntrack_stat = ParseStatTable(*ct)).empty()) {
    c.conntrack_status = DataLoss("/proc/net/stat/nf_conntrack: no header line");
  }
  return c;
}

Fact<PsiFacts> ReadPsi(const SysRoot& fs, const std::string& path) {
  auto text = fs.Read(path);
  if (!text.ok()) {
    return Fact<PsiFacts>::Unknown(text.status().message() +
                                   " (PSI needs kernel 4.20+ with CONFIG_PSI, not psi=0)");
  }
  auto p = ParsePsi(*text);
  if (!p) return Fact<PsiFacts>::Unknown(path + ": no \"some avg10= avg60= avg300=\" line");
  PsiFacts f;
  f.some_avg10 = p->some_avg10;
  f.some_avg60 = p->some_avg60;
  f.some_avg300 = p->some_avg300;
  f.has_full = p->full_avg10.has_value();
  f.full_avg10 = p->full_avg10.value_or(0);
  f.full_avg60 = p->full_avg60.value_or(0);
  f.full_avg300 = p->full_avg300.value_or(0);
  return Fact<PsiFacts>::Known(f, path);
}

Fact<int64_t> VmstatDelta(const Counters& a, const Counters& b, const std::string& key) {
  if (!a.vmstat_status.ok()) return Fact<int64_t>::Unknown(a.vmstat_status.message());
  if (!b.vmstat_status.ok()) return Fact<int64_t>::Unknown(b.vmstat_status.message());
  auto x = a.vmstat.find(key);
  auto y = b.vmstat.find(key);
  if (x == a.vmstat.end() || y == b.vmstat.end()) {
    return Fact<int64_t>::Unknown("/proc/vmstat: no " + key + " line");
  }
  return Fact<int64_t>::Known(std::max<int64_t>(y->second - x->second, 0), "/proc/vmstat");
}

template <typename T>
Fact<T> FromOptional(const std::optional<T>& v, const std::string& source,
                     const std::string& missing) {
  return v ? Fact<T>::Known(*v, source) : Fact<T>::Unknown(missing);
}

void CollectCpu(const SysRoot& fs, CpuFacts* cpu) {
  auto online = fs.ReadTrimmed("/sys/devices/system/cpu/online");
  if (online.ok()) {
    auto cpus = ParseCpuList(*online);
    cpu->online_cpus = cpus ? Fact<int64_t>::Known(static_cast<int64_t>(cpus->size()),
                                                    "/sys/devices/system/cpu/online")
                            : Fact<int64_t>::Unknown("/sys/devices/system/cpu/online: garbage");
  } else {
    cpu->online_cpus = Fact<int64_t>::Unknown(online.status().message());
  }
  auto nodes = fs.List("/sys/devices/system/node");
  if (nodes.ok()) {
    for (const auto& n : *nodes) {
      if (n.rfind("node", 0) != 0) continue;
      auto id = ParseInt64(std::string_view(n).substr(4));
      if (!id) continue;
      auto list = fs.ReadTrimmed("/sys/devices/system/node/" + n + "/cpulist");
      cpu->numa_nodes.push_back({*id, list.ok() ? *list : std::string()});
    }
    std::sort(cpu->numa_nodes.begin(), cpu->numa_nodes.end(),
              [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  }
  cpu->governor = ReadStringFact(fs, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  cpu->numa_balancing = ReadIntFact(fs, "/proc/sys/kernel/numa_balancing");
  auto thp = fs.ReadTrimmed("/sys/kernel/mm/transparent_hugepage/enabled");
  if (thp.ok()) {
    cpu->transparent_hugepage =
        FromOptional(BracketedChoice(*thp), "/sys/kernel/mm/transparent_hugepage/enabled",
                     "/sys/kernel/mm/transparent_hugepage/enabled: no [choice]");
  } else {
    cpu->transparent_hugepage = Fact<std::string>::Unknown(thp.status().message());
  }
  cpu->pressure = ReadPsi(fs, "/proc/pressure/cpu");
}

std::string ParentDir(const std::string& dir) {
  const size_t slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

void SetCumulative(const CgroupCpuStat& st, CgroupCpuLimit* limit) {
  limit->nr_periods = st.nr_periods;
  limit->nr_throttled = st.nr_throttled;
  limit->throttled_s = static_cast<double>(st.throttled_us) / 1e6;
}

// Where a hierarchy is mounted and which of its groups is the mount's root, from this process's
// mountinfo; the usual places when that cannot be read (a recorded tree without it).
// Whether `path` is the group `root` or below it.
bool UnderRoot(const std::string& path, const std::string& root) {
  return root == "/" || path == root || path.rfind(root + "/", 0) == 0;
}

// The same hierarchy may be mounted more than once (a monitoring container's own view, plus the
// host's bind-mounted elsewhere): a mount whose root holds the server's group wins, the one
// with the shallowest root first (it shows the most of the groups above the server's).
std::optional<CgroupMount> FindMount(const SysRoot& fs, int version, const std::string& v1_controllers,
                                     const std::string& path) {
  std::vector<CgroupMount> mounts;
  if (auto mi = fs.Read("/proc/self/mountinfo"); mi.ok()) mounts = ParseCgroupMounts(*mi);
  std::optional<CgroupMount> first, best;
  for (const auto& m : mounts) {
    if (m.version != version) continue;
    if (version == 1 &&
        std::find(m.controllers.begin(), m.controllers.end(), "cpu") == m.controllers.end()) {
      continue;
    }
    if (!first) first = m;
    if (UnderRoot(path, m.root) && (!best || m.root.size() < best->root.size())) best = m;
  }
  if (best) return best;
  if (first) return first;  // the caller says the group is outside this view
  if (!mounts.empty()) return std::nullopt;  // mountinfo read: it is not mounted here
  std::vector<std::string> guesses;
  if (version == 1) {
    guesses = {"/sys/fs/cgroup/" + v1_controllers, "/sys/fs/cgroup/cpu",
               "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"};
  } else {
    guesses = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
  }
  for (const auto& g : guesses) {
    if (fs.Exists(g + (version == 1 ? "/cpu.cfs_period_us" : "/cgroup.controllers"))) {
      CgroupMount m;
      m.version = version;
      m.root = "/";
      m.mount_point = g;
      return m;
    }
  }
  return std::nullopt;
}

// The server's CPU cgroup (/proc/PID/cgroup) and every group from it up to the hierarchy's root
// that sets a CFS quota, with cpu.stat as read now. The cpu controller is looked for in cgroup v1
// first (on a hybrid host it is bound there, not in the unified tree). The server's path is
// mapped through the mount's root: a container without its own cgroup namespace mounts its own
// group as the root and sees the server's full path; a group outside what this process can see
// (another container's, or "/.." from a private namespace) is unknown, never someone else's.
Fact<CgroupCpu> FindCgroupCpu(const SysRoot& fs, int64_t pid) {
  const std::string file = "/proc/" + std::to_string(pid) + "/cgroup";
  auto text = fs.Read(file);
  if (!text.ok()) return Fact<CgroupCpu>::Unknown(text.status().message());
  const ProcCgroup pc = ParseProcCgroup(*text);
  CgroupCpu cg;
  if (pc.v1_cpu) {
    cg.version = 1;
    cg.cgroup = *pc.v1_cpu;
  } else if (pc.unified) {
    cg.version = 2;
    cg.cgroup = *pc.unified;
  } else {
    return Fact<CgroupCpu>::Unknown(file + ": no cgroup v2 line and no v1 cpu hierarchy");
  }
  const auto m = FindMount(fs, static_cast<int>(cg.version), pc.v1_cpu_controllers, cg.cgroup);
  if (!m) {
    return Fact<CgroupCpu>::Unknown(
        cg.version == 1 ? "the cgroup v1 cpu hierarchy (" + pc.v1_cpu_controllers + ") is not mounted"
                        : std::string("cgroup v2 is not mounted (looked in /proc/self/mountinfo)"));
  }
  const std::string& mount = m->mount_point;
  const std::string root = m->root == "/" ? std::string() : m->root;
  const bool inside = cg.cgroup.rfind("/..", 0) != 0 && UnderRoot(cg.cgroup, m->root);
  if (!inside) {
    return Fact<CgroupCpu>::Unknown(
        cg.cgroup + " is outside the part of the hierarchy this process sees (" + mount +
        " is group " + m->root + "): run latdoc on the host or in the server's container");
  }
  const std::string rel = cg.cgroup.substr(root.size());
  if (!root.empty()) cg.note = mount + " is group " + root + " (a container's view)";
  std::string leaf = rel.empty() || rel == "/" ? mount : mount + rel;
  if (!fs.Exists(leaf)) return Fact<CgroupCpu>::Unknown(leaf + ": no such group");
  // The true root group's cpu.pressure is the host's, not a group's own.
  const bool host_root = leaf == mount && root.empty();
  if (cg.version == 2 && !host_root) cg.pressure = ReadPsi(fs, leaf + "/cpu.pressure");
  for (std::string dir = leaf;; dir = ParentDir(dir)) {
    std::optional<CpuQuota> quota;
    if (cg.version == 2) {
      if (auto t = fs.Read(dir + "/cpu.max"); t.ok()) quota = ParseCpuMax(*t);
    } else {
      auto q = fs.Read(dir + "/cpu.cfs_quota_us");
      auto p = fs.Read(dir + "/cpu.cfs_period_us");
      if (q.ok() && p.ok()) quota = ParseCfsQuota(*q, *p);
    }
    if (quota && quota->quota_us) {
      CgroupCpuLimit limit;
      limit.dir = dir;
      limit.period_us = quota->period_us;
      limit.quota_cpus = static_cast<double>(*quota->quota_us) / static_cast<double>(quota->period_us);
      if (auto t = fs.Read(dir + "/cpu.stat"); t.ok()) {
        if (auto st = ParseCgroupCpuStat(*t)) SetCumulative(*st, &limit);
      }
      cg.limits.push_back(std::move(limit));
    }
    if (dir == mount || dir.size() <= mount.size()) break;
  }
  // latdoc in the server's container draws on the same quota while it probes.
  if (fs.live() && !cg.limits.empty()) {
    if (auto self = fs.Read("/proc/self/cgroup"); self.ok()) {
      const ProcCgroup mine = ParseProcCgroup(*self);
      const auto& path = cg.version == 1 ? mine.v1_cpu : mine.unified;
      if (path && path->rfind("/..", 0) != 0 && UnderRoot(*path, m->root)) {
        const std::string my_rel = path->substr(root.size());
        const std::string my_leaf = my_rel.empty() || my_rel == "/" ? mount : mount + my_rel;
        for (auto& limit : cg.limits) {
          limit.includes_latdoc =
              my_leaf == limit.dir || my_leaf.rfind(limit.dir + "/", 0) == 0;
        }
      }
    }
  }
  return Fact<CgroupCpu>::Known(std::move(cg), file);
}

// Throttling over the sample interval, and the counters as of the second sample.
void CgroupDeltas(const Counters& a, const Counters& b, CgroupCpu* cg) {
  for (size_t i = 0; i < cg->limits.size(); ++i) {
    CgroupCpuLimit& limit = cg->limits[i];
    const auto& x = i < a.cgroup_stats.size() ? a.cgroup_stats[i] : std::nullopt;
    const auto& y = i < b.cgroup_stats.size() ? b.cgroup_stats[i] : std::nullopt;
    if (!x || !y) {
      const std::string why = limit.dir + "/cpu.stat: unreadable or without nr_periods";
      limit.periods_delta = limit.throttled_delta = Fact<int64_t>::Unknown(why);
      limit.throttled_s_delta = Fact<double>::Unknown(why);
      continue;
    }
    SetCumulative(*y, &limit);
    const std::string src = limit.dir + "/cpu.stat";
    limit.periods_delta = Fact<int64_t>::Known(std::max<int64_t>(y->nr_periods - x->nr_periods, 0), src);
    limit.throttled_delta =
        Fact<int64_t>::Known(std::max<int64_t>(y->nr_throttled - x->nr_throttled, 0), src);
    limit.throttled_s_delta = Fact<double>::Known(
        static_cast<double>(std::max<int64_t>(y->throttled_us - x->throttled_us, 0)) / 1e6, src);
  }
}

// A recorded tree is one reading of each file: read twice, every counter moved by nothing, and
// the interval facts would say "nothing happened" where the tree cannot tell. They become
// unknown with this reason (since-boot and since-start figures stay: one reading has those).
constexpr const char* kOneReading =
    "a recorded tree is one reading: no interval to count over (run doctor on the live host)";

void ForgetIntervals(HostFacts& facts) {
  // A fact already unknown keeps its own reason (a missing file says more).
  auto unknown = [](auto& fact) {
    if (fact.known()) fact = std::decay_t<decltype(fact)>::Unknown(kOneReading);
  };
  unknown(facts.memory.swap_in_pages_delta);
  unknown(facts.memory.swap_out_pages_delta);
  NetFacts& n = facts.net;
  for (Fact<int64_t>* f : {&n.listen_overflows_delta, &n.listen_drops_delta, &n.backlog_drops_delta,
                           &n.rcvq_drops_delta, &n.retrans_segs_delta, &n.out_segs_delta,
                           &n.softnet_dropped_delta, &n.softnet_squeezed_delta, &n.conntrack_drops_delta,
                           &n.conntrack_insert_failed_delta}) {
    unknown(*f);
  }
  unknown(facts.disk.busiest_util_pct);
  unknown(facts.disk.flushes_per_s);
  if (facts.server) {
    ServerProcess& s = *facts.server;
    unknown(s.threads);
    unknown(s.write_bytes_per_s);
    if (s.cgroup_cpu.known()) {
      CgroupCpu cg = *s.cgroup_cpu;
      for (CgroupCpuLimit& l : cg.limits) {
        unknown(l.periods_delta);
        unknown(l.throttled_delta);
        unknown(l.throttled_s_delta);
      }
      s.cgroup_cpu = Fact<CgroupCpu>::Known(std::move(cg), s.cgroup_cpu.source);
    }
  }
}

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

void CollectServerStatic(const SysRoot& fs, ServerProcess* s) {
  const std::string base = "/proc/" + std::to_string(s->pid);
  auto env = fs.Read(base + "/environ");
  if (env.ok()) {
    s->env = Fact<std::map<std::string, std::string>>::Known(FilterEnv(SplitNul(*env)),
                                                              base + "/environ");
  } else {
    s->env = Fact<std::map<std::string, std::string>>::Unknown(
        env.status().message() + " (run as the server's user or root)");
  }
  auto status = fs.Read(base + "/status");
  if (status.ok()) {
    s->cpus_allowed_list = FromOptional(StatusField(*status, "Cpus_allowed_list"),
                                        base + "/status", base + "/status: no Cpus_allowed_list");
    s->mems_allowed_list = FromOptional(StatusField(*status, "Mems_allowed_list"),
                                        base + "/status", base + "/status: no Mems_allowed_list");
  } else {
    s->cpus_allowed_list = s->mems_allowed_list = Fact<std::string>::Unknown(
        status.status().message());
  }
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

// The flags of a vLLM server's --config file, read as the server sees its file system: through
// /proc/PID/root (its container's mount namespace) or, for a relative path, /proc/PID/cwd.
Fact<std::vector<std::string>> ReadVllmConfigFile(const SysRoot& fs, int64_t pid,
                                                  const std::vector<std::string>& argv) {
  const std::optional<std::string> path = VllmConfigPath(argv);
  if (!path) return Fact<std::vector<std::string>>::Unknown("no --config file");
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string where = !path->empty() && (*path)[0] == '/' ? proc + "/root" + *path
                                                                 : proc + "/cwd/" + *path;
  auto text = fs.Read(where, 1 << 20);
  if (!text.ok()) return Fact<std::vector<std::string>>::Unknown("--config " + *path + ": " + text.status().message());
  auto args = VllmConfigFileArgs(*text);
  if (!args.ok()) return Fact<std::vector<std::string>>::Unknown("--config " + *path + ": " + args.status().message());
  return Fact<std::vector<std::string>>::Known(RedactArgv(std::move(*args)), where);
}

// vLLM's --ssl-certfile (uvicorn's ssl_certfile), "--ssl-certfile F" or "--ssl-certfile=F";
// vLLM's parser takes the underscored spelling too. The last one given wins, as in argparse.
std::optional<std::string> SslCertfilePath(const std::vector<std::string>& argv) {
  std::optional<std::string> path;
  for (size_t i = 0; i < argv.size(); ++i) {
    for (std::string_view flag : {"--ssl-certfile", "--ssl_certfile"}) {
      const std::string& a = argv[i];
      if (a == flag && i + 1 < argv.size()) path = argv[i + 1];
      else if (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0 && a[flag.size()] == '=')
        path = a.substr(flag.size() + 1);
    }
  }
  return path;
}

std::string X509NameText(X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);  // as http/client.cc prints the peer's
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(bio);
  return out;
}

// The leaf of a PEM certificate file: the first "-----BEGIN CERTIFICATE-----" block (uvicorn
// hands the file to ssl.SSLContext.load_cert_chain, which takes the leaf first).
StatusOr<ServerCert> ParseLeafCertificate(std::string_view pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return Internal("out of memory");
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (cert == nullptr) return DataLoss("no PEM certificate in the file");
  ServerCert c;
  c.subject = X509NameText(X509_get_subject_name(cert));
  c.issuer = X509NameText(X509_get_issuer_name(cert));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const bool digested = X509_digest(cert, EVP_sha256(), md, &len) == 1;
  X509_free(cert);
  if (!digested) return Internal("SHA-256 of the certificate failed");
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned int k = 0; k < len; ++k) {
    c.sha256_hex += kHex[md[k] >> 4];
    c.sha256_hex += kHex[md[k] & 15];
  }
  return c;
}

// The certificate file vLLM serves, read as the server sees it (as ReadVllmConfigFile does).
Fact<ServerCert> ReadServerCert(const SysRoot& fs, int64_t pid,
                                const std::vector<std::string>& argv) {
  const std::optional<std::string> path = SslCertfilePath(argv);
  if (!path || path->empty()) return Fact<ServerCert>::Unknown("no --ssl-certfile");
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string where = (*path)[0] == '/' ? proc + "/root" + *path : proc + "/cwd/" + *path;
  auto text = fs.Read(where, 1 << 20);
  if (!text.ok()) return Fact<ServerCert>::Unknown("--ssl-certfile " + *path + ": " + text.status().message());
  auto cert = ParseLeafCertificate(*text);
  if (!cert.ok()) return Fact<ServerCert>::Unknown("--ssl-certfile " + *path + ": " + cert.status().message());
  cert->path = *path;
  return Fact<ServerCert>::Known(std::move(*cert), where);
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

}  // namespace

HostFacts CollectHostFacts(const CollectOptions& options) {
  HostFacts facts;
  SysRoot fs(options.sysroot);
  facts.sysroot = fs.root();
  std::unique_ptr<CommandRunner> own_runner;
  CommandRunner* runner = options.runner;
  if (runner == nullptr) {
    own_runner = fs.live() ? MakeExecCommandRunner()
                           : MakeReplayCommandRunner(fs.Resolve("/.commands"), "<sysroot>/.commands");
    runner = own_runner.get();
  }

  // The server process first: the counters need its pid.
  auto found = FindServerProcess(fs, options.pid);
  if (found.ok()) {
    ServerProcess s;
    s.pid = found->pid;
    s.kind = found->kind;
    s.argv = found->argv;
    if (s.kind == "vllm") {
      s.config_file_args = ReadVllmConfigFile(fs, s.pid, s.argv);
      s.tls_cert = ReadServerCert(
          fs, s.pid, s.config_file_args.known() ? WithConfigFileArgs(s.argv, *s.config_file_args) : s.argv);
    }
    facts.server = std::move(s);
  } else {
    facts.server_note = found.status().message();
  }
  std::optional<int64_t> pid;
  std::vector<CgroupCpuLimit> cgroup_limits;
  if (facts.server) {
    pid = facts.server->pid;
    for (auto& c : FindDescendants(fs, *pid)) facts.server->children.push_back({c.pid, c.name});
    facts.server->cgroup_cpu = FindCgroupCpu(fs, *pid);
    if (facts.server->cgroup_cpu.known()) cgroup_limits = facts.server->cgroup_cpu->limits;
  }

  const std::vector<ServerChild> no_children;
  const std::vector<ServerChild>& children = facts.server ? facts.server->children : no_children;
  Counters first = SampleCounters(fs, pid, children, cgroup_limits);

  // Static probes, between the two samples.
  ProbeContext ctx;
  ctx.fs = &fs;
  ctx.runner = runner;
  if (options.nvml) {
    ctx.nvml = *options.nvml;
  } else if (fs.live() && !ListPciGpus(fs, kPciVendorNvidia).empty()) {
    ctx.nvml = OpenSystemNvml();
  }
  if (options.rocm_smi) {
    ctx.rocm_smi = *options.rocm_smi;
  } else if (fs.live() && !ListPciGpus(fs, kPciVendorAmd).empty()) {
    ctx.rocm_smi = OpenSystemRocmSmi();
  }
  for (auto& vendor : AllGpuVendors()) vendor->Collect(ctx, &facts.gpus, &facts.gpu_notes);
  std::sort(facts.gpus.begin(), facts.gpus.end(),
            [](const GpuFacts& a, const GpuFacts& b) { return a.bdf < b.bdf; });
  for (size_t i = 0; i < facts.gpus.size(); ++i) facts.gpus[i].index = static_cast<int64_t>(i);
  if (facts.gpus.empty()) facts.gpu_notes.push_back("no NVIDIA or AMD GPU in /sys/bus/pci/devices");
  CollectCpu(fs, &facts.cpu);
  if (facts.server) CollectServerStatic(fs, &*facts.server);
  CollectNetStatic(fs, facts.server, &facts.net);
  facts.net.firewall_rules = CountFirewallRules(*runner, ctx.command_timeout_ns);
  facts.net.interfaces = ReadInterfaces(fs);

  if (options.between_samples) options.between_samples();
  const int64_t wait_ns = options.sample_interval_ns - (MonoNowNs() - first.t_ns);
  if (wait_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
  Counters second = SampleCounters(fs, pid, children, cgroup_limits);
  const int64_t dt_ns = std::max<int64_t>(second.t_ns - first.t_ns, 1);
  facts.sample_interval_ns = dt_ns;
  const double dt_s = static_cast<double>(dt_ns) / 1e9;

  if (facts.server) {
    ServerProcess& s = *facts.server;
    const std::string base = "/proc/" + std::to_string(s.pid);
    if (!first.tasks_status.ok()) {
      s.threads = Fact<std::vector<ThreadCpu>>::Unknown(first.tasks_status.message());
    } else if (!second.tasks_status.ok() || second.tasks.empty()) {
      s.threads = Fact<std::vector<ThreadCpu>>::Unknown(
          "process " + std::to_string(s.pid) + " exited during sampling");
    } else {
      static const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
      std::vector<ThreadCpu> threads;
      for (const auto& [tid, b] : second.tasks) {
        auto it = first.tasks.find(tid);
        if (it == first.tasks.end()) continue;  // started during the interval
        const TaskStat& a = it->second;
        int64_t ticks = (b.utime_ticks + b.stime_ticks) - (a.utime_ticks + a.stime_ticks);
        ThreadCpu t{tid, b.comm, std::max<int64_t>(ticks, 0) / ticks_per_s / dt_s * 100.0,
                    b.processor, second.task_pid.at(tid), ""};
        for (const auto& child : s.children) {
          if (child.pid == t.pid) t.process = child.name;
        }
        threads.push_back(std::move(t));
      }
      std::sort(threads.begin(), threads.end(), [](const ThreadCpu& x, const ThreadCpu& y) {
        return x.cpu_pct != y.cpu_pct ? x.cpu_pct > y.cpu_pct : x.tid < y.tid;
      });
      if (threads.size() > 16) threads.resize(16);
      s.threads = Fact<std::vector<ThreadCpu>>::Known(std::move(threads), base + "/task/*/stat");
    }
    if (s.cgroup_cpu.known()) {
      CgroupCpu cg = *s.cgroup_cpu;
      CgroupDeltas(first, second, &cg);
      s.cgroup_cpu = Fact<CgroupCpu>::Known(std::move(cg), s.cgroup_cpu.source);
    }
    if (first.write_bytes && second.write_bytes) {
      int64_t bytes = *second.write_bytes - *first.write_bytes;
      size_t counted = 0;
      for (const auto& [child, w] : second.child_write_bytes) {
        auto it = first.child_write_bytes.find(child);
        if (it == first.child_write_bytes.end()) continue;
        bytes += w - it->second;
        ++counted;
      }
      s.write_bytes_per_s = Fact<double>::Known(
          static_cast<double>(bytes) / dt_s,
          counted ? base + "/io and " + std::to_string(counted) +
                        (counted == 1 ? " child process" : " child processes")
                  : base + "/io");
    } else {
      const Status& st = !first.io_status.ok() ? first.io_status : second.io_status;
      s.write_bytes_per_s = Fact<double>::Unknown(
          st.ok() ? "process exited during sampling" : st.message() + " (needs same uid or root)");
    }
  }

  facts.memory.pressure = ReadPsi(fs, "/proc/pressure/memory");
  facts.memory.swap_in_pages_delta = VmstatDelta(first, second, "pswpin");
  facts.memory.swap_out_pages_delta = VmstatDelta(first, second, "pswpout");
  facts.net.listen_overflows_delta = CounterDelta(first, second, "TcpExt.ListenOverflows");
  facts.net.listen_drops_delta = CounterDelta(first, second, "TcpExt.ListenDrops");
  facts.net.backlog_drops_delta = CounterDelta(first, second, "TcpExt.TCPBacklogDrop");
  facts.net.rcvq_drops_delta = CounterDelta(first, second, "TcpExt.TCPRcvQDrop");
  facts.net.softnet_dropped_delta = SoftnetDelta(first, second, &SoftnetCpu::dropped);
  facts.net.softnet_squeezed_delta = SoftnetDelta(first, second, &SoftnetCpu::time_squeeze);
  facts.net.conntrack_drops_delta = ConntrackDelta(first, second, "drop");
  facts.net.conntrack_insert_failed_delta = ConntrackDelta(first, second, "insert_failed");
  facts.net.retrans_segs_delta = CounterDelta(first, second, "Tcp.RetransSegs");
  facts.net.out_segs_delta = CounterDelta(first, second, "Tcp.OutSegs");
  const bool one_reading = !fs.live() && !options.between_samples;
  if (one_reading) {
    Counters none;  // no first reading: NIC interrupts are judged since boot
    none.irq_status = Status(StatusCode::kNotFound, kOneReading);
    CollectNicIrqs(fs, none, second, &facts.net);
  } else {
    CollectNicIrqs(fs, first, second, &facts.net);
  }

  if (!second.disk_status.ok() || !first.disk_status.ok()) {
    facts.disk.busiest_util_pct = Fact<double>::Unknown(
        (!first.disk_status.ok() ? first.disk_status : second.disk_status).message());
    facts.disk.flushes_per_s = Fact<double>::Unknown(facts.disk.busiest_util_pct.reason);
  } else {
    double best = -1;
    for (const auto& [dev, ticks] : second.disk_ticks) {
      auto it = first.disk_ticks.find(dev);
      if (it == first.disk_ticks.end()) continue;
      double util = static_cast<double>(ticks - it->second) / (dt_s * 1000.0) * 100.0;
      util = std::clamp(util, 0.0, 100.0);
      if (util > best) {
        best = util;
        facts.disk.busiest_device = dev;
      }
    }
    facts.disk.busiest_util_pct = best >= 0 ? Fact<double>::Known(best, "/proc/diskstats")
                                            : Fact<double>::Unknown("/proc/diskstats: no disks");
    double flush_best = -1;
    for (const auto& [dev, n] : second.disk_flushes) {
      auto it = first.disk_flushes.find(dev);
      if (it == first.disk_flushes.end()) continue;
      const double rate = static_cast<double>(n - it->second) / dt_s;
      if (rate > flush_best) {
        flush_best = rate;
        facts.disk.flush_device = dev;
      }
    }
    facts.disk.flushes_per_s =
        flush_best >= 0 ? Fact<double>::Known(flush_best, "/proc/diskstats")
                        : Fact<double>::Unknown("/proc/diskstats: no flush counts (Linux < 5.5)");
  }
  if (one_reading) ForgetIntervals(facts);
  return facts;
}

}  // namespace latdoc::host
