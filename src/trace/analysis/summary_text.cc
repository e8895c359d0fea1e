#include "trace/analysis/summary_text.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/strings.h"
#include "trace/analysis/ranks.h"
#include "trace/analysis/roofline.h"

namespace latdoc::trace {
namespace {

std::string OptUs(const std::optional<double>& ns) {
  return ns ? fmt::format("{:.1f} us", *ns / 1e3) : "n/a";
}

// Names (kernels, ops) are cut from the middle: kernels of one family share their start and
// differ in the template arguments at the end.
std::string Cut(const std::string& s, size_t n) { return ShortenMiddle(s, n); }

std::string Bytes(int64_t b) {
  if (b >= (1 << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1 << 30));
  if (b >= (1 << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(b) / (1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{} B", b);
}

// "device 3", or with several files "device 0 of rank1.json" (device numbers repeat across
// ranks).
std::string DeviceLabel(uint16_t source, int32_t device, const std::vector<SourceFile>& sources) {
  if (sources.size() <= 1 || source >= sources.size()) return fmt::format("device {}", device);
  const std::string& path = sources[source].path;
  const size_t slash = path.find_last_of('/');
  return fmt::format("device {} of {}", device, slash == std::string::npos ? path : path.substr(slash + 1));
}

// The inputs: each file with its bad records, then the devices.
void InputsSection(const TraceReport& r, const std::vector<SourceFile>& sources, std::string& out) {
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("Inputs: {} file(s); {} GPU ops, {} API calls, {} CPU ops over {:.3f} ms",
                   sources.size(), r.gpu_ops, r.api_calls, r.cpu_ops, static_cast<double>(r.span_ns) / 1e6));
  for (const SourceFile& s : sources) {
    std::string issues = "no bad records";
    if (s.issues.total() > 0) {
      issues = fmt::format("{} bad records (", s.issues.total());
      bool first = true;
      for (const auto& [reason, n] : s.issues.count_by_reason) {
        issues += fmt::format("{}{}: {}", first ? "" : ", ", reason, n);
        first = false;
      }
      issues += fmt::format("; first at {})", s.issues.examples.front().where);
    }
    line(fmt::format("  {} [{}]: {} events, {}{}", s.path, s.format, s.events_read, issues,
                     s.fatal_error ? "; DAMAGED: " + *s.fatal_error : ""));
  }
  for (const DeviceInfo& d : r.devices) {
    line(fmt::format("  {}: {} ({})", DeviceLabel(d.source, d.device, sources), d.name.empty() ? "unnamed" : d.name,
                     d.arch.empty() ? "arch n/a" : d.arch));
  }
  if (r.idle_devices > 0) line(fmt::format("  ({} more devices in the trace ran no GPU work)", r.idle_devices));
}

// TraceLens's gpu_timeline over everything, then each device on its own window.
void TimelineSection(const TraceReport& r, const std::vector<SourceFile>& sources,
                     std::string& out) {
  auto line = [&](const std::string& s) { out += s + "\n"; };
  const GpuTimeline& t = r.timeline;
  line("");
  line(fmt::format("GPU time (TraceLens gpu_timeline; {} ops{}, {} without a host launch dropped)",
                   t.ops, r.timeline_used_all_ops ? " (a file without host launches: all its ops)" : " with a host launch",
                   t.ops_dropped_unlinked));
  if (t.ops > 0) {
    const double total = t.total_ms;
    auto pct = [&](double v) { return total > 0 ? 100 * v / total : 0.0; };
    line(fmt::format("  total {:.6f} ms   busy {:.6f} ms ({:.2f}%)   idle {:.6f} ms ({:.2f}%)", total,
                     t.busy_ms, pct(t.busy_ms), t.idle_ms, pct(t.idle_ms)));
    line(fmt::format("  computation {:.6f} ms   exposed comm {:.6f} ms   exposed memcpy {:.6f} ms",
                     t.computation_ms, t.exposed_comm_ms, t.exposed_memcpy_ms));
  }
  if (r.devices_summed && r.devices_summed->total_ms > 0) {
    // The line above is one window over every device and file (TraceLens's); with several,
    // this is what the findings judge: each device on its own window.
    const GpuTimeline& s = *r.devices_summed;
    line(fmt::format("  {} devices summed, each on its own window: total {:.3f} ms, busy {:.3f} ms, idle {:.3f} ms ({:.2f}%)",
                     r.per_device.size(), s.total_ms, s.busy_ms, s.idle_ms, 100 * s.idle_ms / s.total_ms));
  }
  for (const GpuTimeline& d : r.per_device) {
    line(fmt::format("  {}: total {:.3f} ms, busy {:.3f} ms, idle {:.3f} ms",
                     DeviceLabel(d.source.value_or(0), d.device.value_or(-1), sources), d.total_ms,
                     d.busy_ms, d.idle_ms));
  }
}

void HotKernelsSection(const TraceReport& r, const AnalysisOptions& o, std::string& out) {
  auto line = [&](const std::string& s) { out += s + "\n"; };
  if (!r.hot_kernels.empty()) {
    line("");
    // The rows shown, named in at least 30 columns and wider where two names would read the
    // same; the column widens with them.
    const size_t shown = std::min(r.hot_kernels.size(), static_cast<size_t>(std::max(0, o.hot_list)));
    std::vector<std::string> names;
    for (size_t i = 0; i < shown; ++i) names.push_back(r.hot_kernels[i].name);
    names = ShortenMiddleDistinct(names, 30);
    size_t width = 30;
    for (const std::string& n : names) width = std::max(width, CodePoints(n));
    line(fmt::format("{:<{}} {:>6} {:>11} {:>9} {:>9} {:>9} {:>9} {:>7}",
                     fmt::format("Top kernels ({} names)", r.hot_kernels.size()), width + 2, "count",
                     "total ms", "mean us", "p50 us", "p99 us", "max us", "busy %"));
    line(fmt::format("  (busy %: share of the {:.3f} ms of GPU busy time, devices summed, every op counted whether its launch is in the trace or not)",
                     static_cast<double>(r.all_ops_busy_ns) / 1e6));
    for (size_t i = 0; i < shown; ++i) {
      const KernelStat& k = r.hot_kernels[i];
      line(fmt::format("  {:<{}} {:>6} {:>11.3f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>7.1f}", names[i], width,
                       k.count, static_cast<double>(k.total_ns) / 1e6, k.mean_ns / 1e3, k.p50_ns / 1e3,
                       k.p99_ns / 1e3, static_cast<double>(k.max_ns) / 1e3, 100 * k.busy_share));
    }
  }
}

void OutliersSection(const TraceReport& r, const std::vector<SourceFile>& sources,
                     const AnalysisOptions& o, std::string& out) {
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line("");
  line(fmt::format("Outliers (> {:g}x the kernel's median and +{:.0f} us): {}", o.outlier_factor,
                   static_cast<double>(o.outlier_min_excess_ns) / 1e3, r.outlier_count));
  for (size_t i = 0; i < r.outliers.size() && i < 5; ++i) {
    const OutlierInstance& x = r.outliers[i];
    line(fmt::format("  {:.1f} us (median {:.1f} us) at {:.3f} ms, {} stream {}: {}",
                     static_cast<double>(x.dur_ns) / 1e3, x.median_ns / 1e3, static_cast<double>(x.at_ns) / 1e6,
                     DeviceLabel(x.source, x.device, sources), x.stream, Cut(x.name, 60)));
  }
}

void CopiesSection(const TraceReport& r, const AnalysisOptions& o, std::string& out) {
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line("");
  line(fmt::format("Copies: {} ({} with bytes), {} memsets; small (< {}) {}/s: {}", r.copies.copies,
                   r.copies.copies_with_bytes, r.copies.memsets, Bytes(o.small_copy_bytes),
                   r.copies.small_copies_per_s ? fmt::format("{:.1f}", *r.copies.small_copies_per_s) : "n/a",
                   r.copies.small_copies));
  if (!r.copies.by_direction.empty()) {
    line("  dir       count     bytes        time ms     GB/s   small  pageable  sync  storms");
    for (const CopyDirectionStat& d : r.copies.by_direction) {
      line(fmt::format("  {:<8} {:>6} {:>11} {:>12.3f} {:>8} {:>7} {:>9} {:>5} {:>7}", CopyDirectionName(d.direction),
                       d.count, d.bytes ? Bytes(*d.bytes) : "n/a", static_cast<double>(d.total_ns) / 1e6,
                       d.achieved_gbps ? fmt::format("{:.2f}", *d.achieved_gbps) : "n/a", d.small_count,
                       d.pageable_count, d.sync_count, d.storm_runs));
    }
    if (r.copies.pageable_is_heuristic) line("  (pageable: heuristic, the trace records no memory kind)");
  }
}

// The idle split, then the largest gaps with what the host did in them.
void IdleSection(const TraceReport& r, const std::vector<SourceFile>& sources, std::string& out) {
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line("");
  line(fmt::format("Idle gaps (HTA split): host wait {:.3f} ms, kernel wait {:.3f} ms, other {:.3f} ms",
                   static_cast<double>(r.idle.host_wait_ns) / 1e6, static_cast<double>(r.idle.kernel_wait_ns) / 1e6,
                   static_cast<double>(r.idle.other_ns) / 1e6));
  for (const IdleGap& g : r.idle.largest_gaps) {
    std::string cpu;
    for (const CpuActivity& a : g.cpu_top) {
      cpu += fmt::format("{}{} {:.1f} us", cpu.empty() ? "" : ", ", Cut(a.name, 40), static_cast<double>(a.overlap_ns) / 1e3);
    }
    line(fmt::format("  {:.1f} us at {:.3f} ms on {} before {}", static_cast<double>(g.dur_ns) / 1e3,
                     static_cast<double>(g.at_ns) / 1e6, DeviceLabel(g.source, g.device, sources),
                     Cut(g.next_op, 50)));
    if (g.next_launch) {
      const int64_t wait = g.launch_wait_ns.value_or(0);
      line(fmt::format("      launched by {} (tid {}) {:.1f} us {} the gap began; launching thread busy {} of it{}",
                       *g.next_launch, g.launch_tid.value_or(0), static_cast<double>(wait < 0 ? -wait : wait) / 1e3,
                       wait < 0 ? "before" : "after",
                       OptUs(g.cpu_busy_ns ? std::optional<double>(*g.cpu_busy_ns) : std::nullopt),
                       cpu.empty() ? "" : "; CPU (outermost ops): " + cpu));
    }
  }
  if (r.idle.cpu_ops_error) line("  (no CPU side for the gaps: " + *r.idle.cpu_ops_error + ")");
}

void LaunchSection(const TraceReport& r, const AnalysisOptions& o, std::string& out) {
  auto line = [&](const std::string& s) { out += s + "\n"; };
  const LaunchStats& l = r.launch;
  line("");
  line(fmt::format("Launch: {} kernels ({} with their launch), {} launch calls, {}/s; call p50 {}",
                   l.kernels, l.kernels_linked, l.launch_calls,
                   l.launches_per_s ? fmt::format("{:.0f}", *l.launches_per_s) : "n/a", OptUs(l.launch_call_p50_ns)));
  line(fmt::format("  launch-to-start p50 {}, p99 {}, max {}; {} rejected (clock mismatch)", OptUs(l.delay_p50_ns),
                   OptUs(l.delay_p99_ns), OptUs(l.delay_max_ns), l.delays_rejected));
  line(fmt::format("  tiny kernels launched one by one (< {:.0f} us): {} ({:.1f}%); launch-bound (HTA short): {}; graph launches: {} -> {} kernels, first node p50 {}",
                   static_cast<double>(o.tiny_kernel_ns) / 1e3, l.tiny_kernels, 100 * l.tiny_share,
                   l.launch_bound_kernels, l.graph_launches, l.graph_kernels, OptUs(l.graph_first_node_p50_ns)));
}

// Kernel memory traffic, bandwidth against the peak, and known slow kernels.
void BandwidthSection(const TraceReport& r, std::string& out) {
  auto line = [&](const std::string& s) { out += s + "\n"; };
  if (r.counter_gbps) {
    line(fmt::format("Kernel memory traffic (FETCH_SIZE+WRITE_SIZE): {} kernels, {} over {:.3f} ms = {:.1f} GB/s",
                     r.counter_kernels, Bytes(r.counter_bytes), static_cast<double>(r.counter_kernel_ns) / 1e6,
                     *r.counter_gbps));
  }
  for (const BandwidthCheck& b : r.bandwidth) {
    line(fmt::format("Bandwidth {}: {:.2f} GB/s of {:.0f} GB/s peak ({}) over {} {}{}",
                     b.direction == CopyDirection::kUnknown && b.copies < 0 ? "kernels" : CopyDirectionName(b.direction),
                     b.achieved_gbps, b.peak_gbps, b.gpu, b.copies < 0 ? -b.copies : b.copies,
                     b.copies < 0 ? "kernels" : "copies",
                     // The rules' margin (trace_roofline_rules.h): above it, the data is wrong.
                     b.peak_gbps > 0 && b.achieved_gbps > b.peak_gbps * 1.05 ? ": ABOVE THE PEAK, a data problem" : ""));
  }
  for (const PatternHit& p : r.patterns) {
    line(fmt::format("Known slow kernel [{}]: {} x{} ({:.3f} ms)", p.pattern, Cut(p.kernel, 60), p.count,
                     static_cast<double>(p.total_ns) / 1e6));
  }
}

void StatsTablesSection(const TraceReport& r, const AnalysisOptions& o, std::string& out) {
  auto line = [&](const std::string& s) { out += s + "\n"; };
  if (!r.stats_tables.empty()) {
    line("");
    line("From the profiler's stats tables      kind     calls     total ms    mean us");
    for (size_t i = 0; i < r.stats_tables.size() && i < static_cast<size_t>(o.hot_list); ++i) {
      const AggregateStat& a = r.stats_tables[i];
      static constexpr const char* kKinds[] = {"kernel", "api", "copy"};
      line(fmt::format("  {:<36} {:<6} {:>7} {:>12.3f} {:>10.1f}", Cut(a.name, 36), kKinds[static_cast<int>(a.kind)],
                       a.calls, static_cast<double>(a.total_ns) / 1e6,
                       a.calls > 0 ? static_cast<double>(a.total_ns) / static_cast<double>(a.calls) / 1e3 : 0.0));
    }
  }
}

}  // namespace

std::string RenderTraceSummary(const TraceReport& r, const std::vector<SourceFile>& sources,
                               const AnalysisOptions& o) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  InputsSection(r, sources, out);
  TimelineSection(r, sources, out);
  HotKernelsSection(r, o, out);
  OutliersSection(r, sources, o, out);
  CopiesSection(r, o, out);
  IdleSection(r, sources, out);
  LaunchSection(r, o, out);
  line("");
  line(
      fmt::format("Steady state (from {:.3f} ms): {} syncs ({:.3f} ms), {} alloc/free calls "
                  "({:.3f} ms), {} sync copies",
                  static_cast<double>(r.steady.steady_from_ns) / 1e6, r.steady.sync_count,
                  static_cast<double>(r.steady.sync_ns) / 1e6, r.steady.alloc_count,
                  static_cast<double>(r.steady.alloc_ns) / 1e6, r.steady.sync_copy_count));
  out += RenderStepSummary(r.steps);
  line(fmt::format(
      "Overlap: long copies hidden under kernels {}; kernels on {} streams, concurrent {}",
      r.overlap.copy_hidden_share ? fmt::format("{:.1f}%", 100 * *r.overlap.copy_hidden_share)
                                  : "n/a",
      r.overlap.streams_with_kernels,
      r.overlap.concurrency_share
          ? fmt::format("{:.1f}% of the busy time of devices with 2 or more",
                        100 * *r.overlap.concurrency_share)
          : "n/a"));
  BandwidthSection(r, out);
  out += RenderRooflineText(r.roofline, static_cast<size_t>(o.hot_list));
  out += RenderRanksText(r.ranks);
  StatsTablesSection(r, o, out);
  return out;
}

std::string RenderStepSummary(const StepStats& s) {
  if (s.method == StepMethod::kNone) return fmt::format("Steps: none found ({})\n", s.detail);
  auto ms = [](double ns) { return ns / 1e6; };
  auto q = [&](std::string_view column) { return s.Quantile(column).value_or(StepQuantile{}); };
  std::string out = fmt::format("Steps: {} by {}{} ({}); steady state {:.3f}-{:.3f} ms on the GPU, {} ops outside\n",
                                s.steps.size(), StepMethodName(s.method),
                                s.method == StepMethod::kCadence ? " (guessed)" : "", s.detail,
                                ms(static_cast<double>(s.gpu_from_ns)), ms(static_cast<double>(s.gpu_to_ns)),
                                s.ops_outside);
  const StepQuantile wall = q("wall_ns"), busy = q("gpu_busy_ns");
  std::string host = "host n/a";
  if (const auto h = s.Quantile("host_busy_ns")) host = fmt::format("host busy {:.3f}/{:.3f}", ms(h->p50), ms(h->p99));
  out += fmt::format("  p50/p99 ms: step {:.3f}/{:.3f}, GPU busy {:.3f}/{:.3f}, {}; idle host late {:.3f}/{:.3f}, "
                     "after sync {:.3f}/{:.3f}, kernel wait {:.3f}/{:.3f}\n",
                     ms(wall.p50), ms(wall.p99), ms(busy.p50), ms(busy.p99), host, ms(q("idle_host_late_ns").p50),
                     ms(q("idle_host_late_ns").p99), ms(q("idle_sync_ns").p50), ms(q("idle_sync_ns").p99),
                     ms(q("idle_kernel_wait_ns").p50), ms(q("idle_kernel_wait_ns").p99));
  out += fmt::format("  per step (p50): {:g} launches, {:g} kernels, {:g} copies ({:g} DtoH, {:g} pageable), {:g} syncs, {:g} allocs\n",
                     q("launches").p50, q("kernels").p50, q("copies").p50, q("d2h_copies").p50,
                     q("pageable_copies").p50, q("syncs").p50, q("allocs").p50);
  for (const SlowStep& x : s.slowest) {
    std::string why;
    for (const StepKernelExcess& k : x.kernels) {
      why += fmt::format("{}{} {:.1f} us (mean {:.1f})", why.empty() ? "" : ", ", Cut(k.name, 40),
                         static_cast<double>(k.ns) / 1e3, k.mean_ns_per_step / 1e3);
    }
    out += fmt::format("  slow step {}: {:.3f} ms ({:.2f}x median){}\n", x.index, ms(static_cast<double>(x.wall_ns)),
                       x.ratio_to_median, why.empty() ? "" : "; kernels above their mean: " + why);
  }
  for (const PeriodicKernel& p : s.periodic) {
    out += fmt::format("  every {} steps (from step {}): {} x{}, {:.3f} ms\n", p.period_steps, p.first_step,
                       Cut(p.name, 60), p.count, ms(static_cast<double>(p.total_ns)));
  }
  return out;
}

}  // namespace latdoc::trace
