#include "host/collector_internal.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "base/strings.h"
#include "host/pci.h"
#include "host/proc_parsers.h"

// The CPU, NUMA, memory-pressure and cgroup probes of CollectHostFacts.
namespace latdoc::host::collector_internal {

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

namespace {

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

}  // namespace

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

}  // namespace latdoc::host::collector_internal
