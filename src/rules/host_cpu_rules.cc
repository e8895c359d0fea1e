#include "rules/host_rules_internal.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/strings.h"

// Host CPU, kernel, memory and disk rules of `latdoc doctor` (host.numa_balancing, host.thp,
// cpu.governor, cpu.saturation, cpu.cgroup_throttle, cpu.pressure, host.memory_pressure,
// disk.log_write). Shared helpers: host_rules_internal.h.
namespace latdoc::rules::host_rules_internal {
namespace {

// ---------------------------------------------------------------------------------------------
// Host CPU and kernel settings.

Finding NumaBalancing(const HostFacts& facts) {
  const std::string id = "host.numa_balancing";
  const auto& nb = facts.cpu.numa_balancing;
  if (!nb.known()) return Skip(id, Layer::kSystem, "automatic NUMA balancing", nb.reason);
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   *nb == 0 ? "automatic NUMA balancing off"
                            : "automatic NUMA balancing on, harmless with one NUMA node");
  f.evidence.push_back(Num("kernel.numa_balancing", static_cast<double>(*nb), ""));
  f.evidence.push_back(Num("numa_nodes", static_cast<double>(facts.cpu.numa_nodes.size()), ""));
  if (*nb != 0 && facts.cpu.numa_nodes.size() > 1) {
    f.severity = Severity::kWarn;
    f.title = "automatic NUMA balancing on: page migrations stall GPU host threads";
    f.advice = "sysctl -w kernel.numa_balancing=0   (persist in /etc/sysctl.d/)";
  }
  return f;
}

Finding Thp(const HostFacts& facts) {
  const std::string id = "host.thp";
  const auto& t = facts.cpu.transparent_hugepage;
  if (!t.known()) return Skip(id, Layer::kSystem, "transparent huge pages", t.reason);
  Finding f = Make(id, Layer::kSystem, Severity::kOk, "transparent huge pages: " + *t);
  if (*t == "always") {
    f.severity = Severity::kInfo;
    f.title = "transparent huge pages 'always': khugepaged compaction can add CPU stalls";
    f.advice = "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled";
  }
  return f;
}

Finding Governor(const HostFacts& facts) {
  const std::string id = "cpu.governor";
  const auto& g = facts.cpu.governor;
  if (!g.known()) return Skip(id, Layer::kSystem, "CPU frequency governor", g.reason + " (no cpufreq: typical in a VM)");
  Finding f = Make(id, Layer::kSystem, Severity::kOk, "CPU governor: " + *g);
  if (*g != "performance") {
    f.severity = Severity::kWarn;
    f.title = "CPU governor '" + *g + "': slower kernel launches and tokenization";
    f.advice = "cpupower frequency-set -g performance";
  }
  return f;
}

Finding Saturation(const HostFacts& facts) {
  const std::string id = "cpu.saturation";
  if (!facts.server) return Skip(id, Layer::kSystem, "server threads", facts.server_note);
  const auto& s = *facts.server;
  if (!s.threads.known()) return Skip(id, Layer::kSystem, "server threads", s.threads.reason);
  if (s.threads->empty()) return Skip(id, Layer::kSystem, "server threads", "no thread sampled");
  const auto& top = s.threads->front();
  // A thread of one of the server's children (vLLM V1's engine core or a GPU worker) is not the
  // front end: it says the engine's host side holds the GPU back.
  const bool child = top.pid != 0 && top.pid != s.pid;
  const std::string process = top.process.empty() ? "pid " + std::to_string(top.pid) : top.process;
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   fmt::format("busiest server thread at {:.0f}% of a core", top.cpu_pct));
  f.evidence.push_back(Num("busiest_thread_cpu", top.cpu_pct, "%"));
  f.evidence.push_back(Text("busiest_thread",
                            fmt::format("tid {} ({}), on CPU {}{}", top.tid, top.comm, top.last_cpu,
                                        child ? fmt::format(", in {} (pid {})", process, top.pid)
                                              : std::string())));
  f.evidence.push_back(Num("sample_interval", static_cast<double>(facts.sample_interval_ns) / 1e6, "ms"));
  if (!s.children.empty()) {
    std::string names;
    for (const auto& c : s.children) names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", c.pid, c.name);
    f.evidence.push_back(Text("child_processes", names));
  }
  if (top.cpu_pct < 95) return f;
  f.severity = Severity::kWarn;
  if (child && top.process.find("EngineCore") != std::string::npos) {
    f.title = fmt::format("engine core thread {} ({}) pinned at {:.0f}% of a core: the scheduler "
                          "and input preparation hold the GPU back", top.tid, top.comm, top.cpu_pct);
    f.advice = "--async-scheduling (schedules the next step while the GPU runs this one); keep "
               "CUDA graphs on (config.enforce_eager); the performance governor and a NUMA-local "
               "core for the engine; latdoc trace shows the GPU idle while the host works";
  } else if (child && top.process.find("Worker") != std::string::npos) {
    f.title = fmt::format("GPU worker thread {} ({}, {}) pinned at {:.0f}% of a core: kernel "
                          "launches are host-bound", top.tid, top.comm, top.process, top.cpu_pct);
    f.advice = "keep CUDA graphs on (config.enforce_eager, config.cudagraph_capture); the "
               "performance governor; a NUMA-local core for the worker (gpu.numa)";
  } else if (child && top.process.find("APIServer") == std::string::npos) {
    f.title = fmt::format("thread {} ({}) of the server's child {} pinned at {:.0f}% of a core",
                          top.tid, top.comm, process, top.cpu_pct);
    f.advice = "see what that process does (py-spy dump --pid " + std::to_string(top.pid) + ")";
  } else {  // the server itself, or one of its API-server processes (--api-server-count)
    f.title = fmt::format("server thread {} ({}) pinned at {:.0f}% of a core: a GIL-bound front end",
                          top.tid, top.comm, top.cpu_pct);
    f.advice = s.kind == "vllm"
                   ? "run more API-server processes: vllm serve ... --api-server-count 4 "
                     "(or data parallelism); --stream-interval 2+ cuts per-token work"
                   : "spread the HTTP front end over more processes / threads";
  }
  return f;
}

// CFS quota throttling of the server's cgroup. When a group has used its quota within a period
// (100 ms by default), every thread in it waits for the next period: the API server's event
// loop and the engine's scheduler stall together, which shows up as TTFT and ITL spikes at p99
// while average CPU use looks moderate. Judged on the sample interval first (throttling now;
// a 300 ms sample holds only 3-4 periods, so it takes two throttled ones), then on the counters
// since the cgroup was made (a doctor run at idle still sees what load did; they include the
// server's start-up, so they need a few seconds of activity and ten throttled periods).
constexpr double kThrottledNowShare = 0.05;    // of the periods in the sample interval
constexpr int64_t kThrottledNowMin = 2;
constexpr double kThrottledEverShare = 0.01;   // of the periods since the cgroup was made
constexpr int64_t kEverPeriodsMin = 100;       // 10 s of activity at the default period
constexpr int64_t kThrottledEverMin = 10;

// The share of the sample's periods `l` was throttled in; 0 under kThrottledNowMin periods.
double ThrottledNowShare(const host::CgroupCpuLimit& l) {
  return l.periods_delta.known() && l.throttled_delta.known() && *l.periods_delta > 0 &&
                 *l.throttled_delta >= kThrottledNowMin
             ? static_cast<double>(*l.throttled_delta) / static_cast<double>(*l.periods_delta)
             : 0.0;
}

// The share of the periods since the cgroup was made; 0 with too few to judge.
double ThrottledEverShare(const host::CgroupCpuLimit& l) {
  return l.nr_periods >= kEverPeriodsMin && l.nr_throttled >= kThrottledEverMin
             ? static_cast<double>(l.nr_throttled) / static_cast<double>(l.nr_periods)
             : 0.0;
}

// The limit that throttled most: in the sample when any did, else since it was made. `cg` has
// at least one limit.
const host::CgroupCpuLimit& WorstLimit(const host::CgroupCpu& cg) {
  const host::CgroupCpuLimit* worst = &cg.limits.front();
  for (const auto& l : cg.limits) {
    if (std::make_pair(ThrottledNowShare(l), ThrottledEverShare(l)) >
        std::make_pair(ThrottledNowShare(*worst), ThrottledEverShare(*worst))) {
      worst = &l;
    }
  }
  return *worst;
}

// A quota for titles: 2.5 -> "2.5 CPUs", 1 -> "1 CPU".
std::string QuotaText(double quota_cpus) {
  std::string quota = fmt::format("{:.2f}", quota_cpus);  // "2.50" -> "2.5 CPUs"
  quota.erase(quota.find_last_not_of('0') + 1);
  if (quota.back() == '.') quota.pop_back();
  quota += quota == "1" ? " CPU" : " CPUs";
  return quota;
}

Finding CgroupThrottle(const HostFacts& facts) {
  const std::string id = "cpu.cgroup_throttle";
  const std::string what = "server CPU quota";
  if (!facts.server) return Skip(id, Layer::kSystem, what, facts.server_note);
  const auto& s = *facts.server;
  if (!s.cgroup_cpu.known()) return Skip(id, Layer::kSystem, what, s.cgroup_cpu.reason);
  const host::CgroupCpu& cg = *s.cgroup_cpu;
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   fmt::format("no CPU quota on the server's cgroup (v{})", cg.version));
  f.evidence.push_back(Text("cgroup", cg.cgroup));
  if (!cg.note.empty()) f.evidence.push_back(Text("note", cg.note));
  if (cg.limits.empty()) return f;

  const host::CgroupCpuLimit& l = WorstLimit(cg);
  const double now = ThrottledNowShare(l);
  const double ever = ThrottledEverShare(l);
  f.evidence.push_back(Text("limit_dir", l.dir));
  if (l.includes_latdoc) {
    f.evidence.push_back(Text("note", "latdoc itself runs in this group: its own probes drew on "
                                      "the quota during the sample"));
  }
  f.evidence.push_back(Num("quota", l.quota_cpus, "CPUs"));
  f.evidence.push_back(Num("period", static_cast<double>(l.period_us) / 1e3, "ms"));
  if (l.periods_delta.known() && l.throttled_delta.known()) {
    const double raw = *l.periods_delta > 0 ? static_cast<double>(*l.throttled_delta) /
                                                  static_cast<double>(*l.periods_delta)
                                            : 0.0;
    f.evidence.push_back(Text("throttled_in_sample",
                              fmt::format("{} of {} periods ({:.0f}%), {:.1f} ms waiting",
                                          *l.throttled_delta, *l.periods_delta, raw * 100,
                                          l.throttled_s_delta.value_or(0) * 1e3)));
  } else {
    f.evidence.push_back(FactNum("throttled_in_sample", l.throttled_delta, "periods"));
  }
  const double ever_raw = l.nr_periods > 0 ? static_cast<double>(l.nr_throttled) /
                                                  static_cast<double>(l.nr_periods)
                                            : 0.0;
  f.evidence.push_back(Text("throttled_since_start",
                            fmt::format("{} of {} periods ({:.1f}%), {:.1f} s waiting{}",
                                        l.nr_throttled, l.nr_periods, ever_raw * 100, l.throttled_s,
                                        l.nr_periods < kEverPeriodsMin
                                            ? " (too few periods to judge)" : "")));
  const std::string quota = QuotaText(l.quota_cpus);
  if ((l.nr_periods < kEverPeriodsMin || l.nr_throttled < kThrottledEverMin) && l.nr_throttled > 0) {
    f.title = fmt::format("server's cgroup has a CPU quota of {}; throttled in {} of {} periods "
                          "since it started, too few to judge", quota, l.nr_throttled, l.nr_periods);
  } else if (l.nr_throttled > 0) {
    f.title = fmt::format("server's cgroup has a CPU quota of {}; rarely throttled ({:.2f}% of "
                          "periods)", quota, ever_raw * 100);
  } else {
    f.title = fmt::format("server's cgroup has a CPU quota of {}; not throttled", quota);
  }
  const std::string advice = fmt::format(
      "raise or remove the CPU limit on the server's container: Kubernetes "
      "resources.limits.cpu (keep requests; or a Guaranteed pod with whole CPUs and the static "
      "CPU manager policy), docker run --cpus, systemd CPUQuota=. A throttled group stops every "
      "server thread for the rest of its {:.0f} ms period", static_cast<double>(l.period_us) / 1e3);
  if (now >= kThrottledNowShare) {
    f.severity = Severity::kFail;
    f.title = fmt::format("server's cgroup throttled in {:.0f}% of CPU periods during the sample "
                          "(quota {}): its threads stall until the next period", now * 100, quota);
    f.advice = advice;
  } else if (ever >= kThrottledEverShare) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server's cgroup throttled in {:.1f}% of CPU periods since it started, "
                          "start-up included (quota {})", ever * 100, quota);
    f.advice = advice;
  }
  return f;
}

// Pressure stall information: the share of time runnable tasks waited for a CPU, or tasks
// stalled on memory (reclaim, swap-in). Judged on the worst of the 10 s, 60 s and 300 s
// averages, so a doctor run just after the load still sees it.
constexpr double kCpuPressureWarnPct = 10;
constexpr double kCpuPressureFailPct = 40;
constexpr double kMemoryPressureWarnPct = 5;   // some: at least one task stalled
constexpr double kMemoryPressureFailPct = 5;   // full: every non-idle task stalled at once
constexpr double kSwapInWarnPagesPerS = 256;   // 1 MiB/s of 4 KiB pages

double WorstSome(const host::PsiFacts& p) {
  return std::max({p.some_avg10, p.some_avg60, p.some_avg300});
}
double WorstFull(const host::PsiFacts& p) {
  return p.has_full ? std::max({p.full_avg10, p.full_avg60, p.full_avg300}) : 0.0;
}
Evidence PsiText(const std::string& name, const host::PsiFacts& p, bool full) {
  return full ? Text(name, fmt::format("full avg10={:.2f} avg60={:.2f} avg300={:.2f} (%)",
                                       p.full_avg10, p.full_avg60, p.full_avg300))
              : Text(name, fmt::format("some avg10={:.2f} avg60={:.2f} avg300={:.2f} (%)",
                                       p.some_avg10, p.some_avg60, p.some_avg300));
}

// Judged on the server's own cgroup (v2 cpu.pressure: its tasks waiting) when known; the
// host-wide figure says only that some task somewhere waited, so it names the host, not the
// server.
Finding CpuPressure(const HostFacts& facts) {
  const std::string id = "cpu.pressure";
  const host::PsiFacts* server = nullptr;
  if (facts.server && facts.server->cgroup_cpu.known() && facts.server->cgroup_cpu->pressure.known()) {
    server = &*facts.server->cgroup_cpu->pressure;
  }
  const auto& host = facts.cpu.pressure;
  if (!server && !host.known()) return Skip(id, Layer::kSystem, "CPU pressure", host.reason);
  const double worst = WorstSome(server ? *server : *host);
  const char* whose = server ? "the server's tasks" : "tasks on the host";
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   fmt::format("CPU pressure low: {} waited for a CPU at most {:.1f}% of the time",
                               whose, worst));
  if (server) f.evidence.push_back(PsiText("server_cgroup_cpu_pressure", *server, false));
  if (host.known()) f.evidence.push_back(PsiText("host_cpu_pressure", *host, false));
  if (worst < kCpuPressureWarnPct) return f;
  f.severity = worst >= kCpuPressureFailPct ? Severity::kFail : Severity::kWarn;
  // A group's cpu.pressure also counts the time its own CPU quota held it back: then the
  // quota, not other work, is the cause (cpu.cgroup_throttle has the numbers and the fix).
  bool throttled = false;
  if (server) {
    for (const auto& l : facts.server->cgroup_cpu->limits) {
      throttled |= l.nr_throttled > 0 || (l.throttled_delta.known() && *l.throttled_delta > 0);
    }
  }
  if (throttled) {
    f.title = fmt::format("the server's tasks waited for a CPU {:.0f}% of the time (PSI of its "
                          "cgroup), partly held back by its own CPU quota", worst);
    f.advice = "see cpu.cgroup_throttle: raise or remove the server's CPU limit; then, if the "
               "pressure stays, find the other work on its cores (top -o %CPU, pidstat 1)";
    return f;
  }
  f.title = server ? fmt::format("the server's tasks waited for a CPU {:.0f}% of the time (PSI of "
                                 "its cgroup): its CPUs are oversubscribed", worst)
                   : fmt::format("host CPUs oversubscribed: runnable tasks waited for a CPU {:.0f}% "
                                 "of the time (PSI, whole host)", worst);
  f.advice = "find the other work (top -o %CPU, pidstat 1) and move it off the server's cores, "
             "or reserve CPUs for the server (latdoc numa-exec, taskset, the Kubernetes static "
             "CPU manager); cap helper threads (OMP_NUM_THREADS, TOKENIZERS_PARALLELISM=false)";
  return f;
}

Finding MemoryPressure(const HostFacts& facts) {
  const std::string id = "host.memory_pressure";
  const auto& m = facts.memory;
  const bool swap_known = m.swap_in_pages_delta.known() && m.swap_out_pages_delta.known();
  if (!m.pressure.known() && !swap_known) {
    return Skip(id, Layer::kSystem, "memory pressure", m.pressure.reason);
  }
  Finding f = Make(id, Layer::kSystem, Severity::kOk, "no memory pressure, no swapping in");
  std::vector<std::string> what;
  Severity sev = Severity::kOk;
  if (m.pressure.known()) {
    const double some = WorstSome(*m.pressure), full = WorstFull(*m.pressure);
    f.evidence.push_back(PsiText("memory_pressure", *m.pressure, false));
    if (m.pressure->has_full) f.evidence.push_back(PsiText("memory_pressure_full", *m.pressure, true));
    if (full >= kMemoryPressureFailPct) {
      sev = Severity::kFail;
      what.push_back(fmt::format("every task stalled on memory {:.0f}% of the time", full));
    } else if (some >= kMemoryPressureWarnPct) {
      sev = Severity::kWarn;
      what.push_back(fmt::format("tasks stalled on memory {:.0f}% of the time", some));
    }
  } else {
    f.evidence.push_back(Text("memory_pressure", "unknown: " + m.pressure.reason));
  }
  if (swap_known) {
    // Swapping in is what stalls a task (a major fault); swapping cold pages out alone is not.
    const int64_t in = *m.swap_in_pages_delta, out = *m.swap_out_pages_delta;
    const double secs = std::max(static_cast<double>(facts.sample_interval_ns) / 1e9, 1e-3);
    const double in_rate = static_cast<double>(in) / secs;
    f.evidence.push_back(Text("swap_in_sample", fmt::format("{} pages ({:.0f}/s)", in, in_rate)));
    f.evidence.push_back(Text("swap_out_sample", fmt::format("{} pages", out)));
    if (in_rate >= kSwapInWarnPagesPerS) {
      sev = std::max(sev, Severity::kWarn);
      what.push_back(fmt::format("swapping in {:.0f} pages/s during the sample", in_rate));
    }
  }
  if (sev == Severity::kOk) return f;
  f.severity = sev;
  std::string joined;
  for (const auto& w : what) joined += (joined.empty() ? "" : "; ") + w;
  f.title = "host memory under pressure: " + joined;
  f.advice = "find what holds host memory (free -m; ps aux --sort=-rss | head) and lower it (the "
             "server's CPU offload or KV offload size, other processes) or add memory; "
             "vm.swappiness=10 keeps the server's pages in RAM";
  return f;
}

// disk.log_write: what the server (and its children: vLLM's engine core) writes, judged by
// its rate, by the disk's flush rate (a logger that fsyncs each line blocks on every one), and
// by how busy the disk is. latdoc's thresholds: 50 MB/s is more than logs of a healthy server
// (a busy vLLM with request logging writes a few MB/s); 10 MB/s with 20 flushes/s or more is a
// synced stream; 1 MB/s to a disk 90% busy queues behind other I/O.
constexpr double kLogWriteHeavyMbS = 50;
constexpr double kLogWriteSyncedMbS = 10;
constexpr double kLogWriteFlushesPerS = 20;

Finding LogWrite(const HostFacts& facts) {
  const std::string id = "disk.log_write";
  if (!facts.server) return Skip(id, Layer::kSystem, "server disk writes", facts.server_note);
  const auto& s = *facts.server;
  if (!s.write_bytes_per_s.known()) {
    return Skip(id, Layer::kSystem, "server disk writes", s.write_bytes_per_s.reason);
  }
  const double mb_s = *s.write_bytes_per_s / 1e6;
  const auto& flushes = facts.disk.flushes_per_s;
  const bool heavy = mb_s >= kLogWriteHeavyMbS;
  const bool synced = flushes.known() && mb_s >= kLogWriteSyncedMbS && *flushes >= kLogWriteFlushesPerS;
  if (!facts.disk.busiest_util_pct.known() && !heavy && !synced) {
    return Skip(id, Layer::kSystem, "disk utilisation", facts.disk.busiest_util_pct.reason);
  }
  const bool has_util = facts.disk.busiest_util_pct.known();
  const double util = has_util ? *facts.disk.busiest_util_pct : 0.0;
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   has_util ? fmt::format("server writes {:.2f} MB/s; busiest disk {:.0f}% busy", mb_s, util)
                            : fmt::format("server writes {:.2f} MB/s", mb_s));
  f.evidence.push_back(Num("server_write_rate", mb_s, "MB/s"));
  if (s.write_bytes_per_s.source.find("child") != std::string::npos) {
    f.evidence.push_back(Text("counted", s.write_bytes_per_s.source));
  }
  if (has_util) {
    f.evidence.push_back(Num("disk_util", util, "%"));
    f.evidence.push_back(Text("busiest_disk", facts.disk.busiest_device));
  }
  if (flushes.known() && *flushes > 0) {
    f.evidence.push_back(Num("disk_flushes", *flushes, "/s"));
    f.evidence.push_back(Text("flushing_disk", facts.disk.flush_device));
  }
  const std::string fix =
      "--disable-uvicorn-access-log, drop --enable-log-requests, VLLM_LOGGING_LEVEL=INFO; or send "
      "logs to a faster disk / journald with rate limits";
  if (synced) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server writes {:.1f} MB/s with {:.0f} disk flushes/s (fsync): each synced "
                          "write blocks the writer until the disk has it", mb_s, *flushes);
    f.advice = fix + "; a logger that fsyncs every line (a file handler with sync, a journald "
                     "SyncIntervalSec=0) should buffer instead";
  } else if (has_util && util >= 90 && mb_s >= 1.0) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server writes {:.1f} MB/s to a disk {:.0f}% busy: log writes can block "
                          "the event loop", mb_s, util);
    f.advice = fix;
  } else if (heavy) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server writes {:.1f} MB/s: far more than logs need; writes on the serving "
                          "path block its loop when the page cache fills", mb_s);
    f.advice = fix + "; find the writer: pidstat -d 1 -p <server and child pids>";
  }
  return f;
}

}  // namespace

std::vector<Finding> JudgeCpu(const HostFacts& facts) {
  std::vector<Finding> out;
  out.push_back(NumaBalancing(facts));
  out.push_back(Thp(facts));
  out.push_back(Governor(facts));
  out.push_back(Saturation(facts));
  out.push_back(CgroupThrottle(facts));
  out.push_back(CpuPressure(facts));
  out.push_back(MemoryPressure(facts));
  out.push_back(LogWrite(facts));
  return out;
}

}  // namespace latdoc::rules::host_rules_internal
