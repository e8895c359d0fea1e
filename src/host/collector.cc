#include "host/collector.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/strings.h"
#include "host/collector_internal.h"
#include "host/pci.h"
#include "host/proc_parsers.h"
#include "host/server_process.h"

// CollectHostFacts: the two counter samples, the GPU and disk probes, and the order in which
// every probe runs. The other probes: collector_internal.h.
namespace latdoc::host {

using collector_internal::CollectCpu;
using collector_internal::CollectNetStatic;
using collector_internal::CollectServerProcess;
using collector_internal::CollectServerStatic;
using collector_internal::Counters;
using collector_internal::CountFirewallRules;
using collector_internal::FindCgroupCpu;
using collector_internal::kOneReading;
using collector_internal::NetDeltas;
using collector_internal::ReadInterfaces;
using collector_internal::ReadPsi;
using collector_internal::ServerDeltas;
using collector_internal::VmstatDelta;

namespace {

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

// The GPUs of every vendor, in PCI address order, numbered in that order (`index`).
void CollectGpus(const ProbeContext& ctx, HostFacts* facts) {
  for (auto& vendor : AllGpuVendors()) vendor->Collect(ctx, &facts->gpus, &facts->gpu_notes);
  std::sort(facts->gpus.begin(), facts->gpus.end(),
            [](const GpuFacts& a, const GpuFacts& b) { return a.bdf < b.bdf; });
  for (size_t i = 0; i < facts->gpus.size(); ++i) facts->gpus[i].index = static_cast<int64_t>(i);
  if (facts->gpus.empty()) facts->gpu_notes.push_back("no NVIDIA or AMD GPU in /sys/bus/pci/devices");
}

// The busiest disk (by time busy) and the disk with the most flushes a second, over the interval.
void DiskDeltas(const Counters& first, const Counters& second, double dt_s, DiskFacts* disk) {
  if (!second.disk_status.ok() || !first.disk_status.ok()) {
    disk->busiest_util_pct = Fact<double>::Unknown(
        (!first.disk_status.ok() ? first.disk_status : second.disk_status).message());
    disk->flushes_per_s = Fact<double>::Unknown(disk->busiest_util_pct.reason);
  } else {
    double best = -1;
    for (const auto& [dev, ticks] : second.disk_ticks) {
      auto it = first.disk_ticks.find(dev);
      if (it == first.disk_ticks.end()) continue;
      double util = static_cast<double>(ticks - it->second) / (dt_s * 1000.0) * 100.0;
      util = std::clamp(util, 0.0, 100.0);
      if (util > best) {
        best = util;
        disk->busiest_device = dev;
      }
    }
    disk->busiest_util_pct = best >= 0 ? Fact<double>::Known(best, "/proc/diskstats")
                                       : Fact<double>::Unknown("/proc/diskstats: no disks");
    double flush_best = -1;
    for (const auto& [dev, n] : second.disk_flushes) {
      auto it = first.disk_flushes.find(dev);
      if (it == first.disk_flushes.end()) continue;
      const double rate = static_cast<double>(n - it->second) / dt_s;
      if (rate > flush_best) {
        flush_best = rate;
        disk->flush_device = dev;
      }
    }
    disk->flushes_per_s =
        flush_best >= 0 ? Fact<double>::Known(flush_best, "/proc/diskstats")
                        : Fact<double>::Unknown("/proc/diskstats: no flush counts (Linux < 5.5)");
  }
}

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
  CollectServerProcess(fs, options.pid, &facts);
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
  CollectGpus(ctx, &facts);
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

  if (facts.server) ServerDeltas(first, second, dt_s, &*facts.server);

  facts.memory.pressure = ReadPsi(fs, "/proc/pressure/memory");
  facts.memory.swap_in_pages_delta = VmstatDelta(first, second, "pswpin");
  facts.memory.swap_out_pages_delta = VmstatDelta(first, second, "pswpout");
  const bool one_reading = !fs.live() && !options.between_samples;
  NetDeltas(fs, first, second, one_reading, &facts.net);

  DiskDeltas(first, second, dt_s, &facts.disk);
  if (one_reading) ForgetIntervals(facts);
  return facts;
}

}  // namespace latdoc::host
