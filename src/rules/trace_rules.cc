#include "rules/trace_rules.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/strings.h"
#include "rules/gpu_specs.h"
#include "rules/kernel_patterns.h"
#include "rules/trace_rank_rules.h"
#include "rules/trace_roofline_rules.h"
#include "rules/trace_rules_internal.h"
#include "rules/trace_step_rules.h"

namespace latdoc::rules {
namespace {

using trace_internal::Make;
using trace_internal::Num;

using trace::CopyDirection;
using trace::TraceReport;

double Ms(double ns) { return ns / 1e6; }
double Us(double ns) { return ns / 1e3; }
double Share(double part, double whole) { return whole > 0 ? part / whole : 0; }

// The GPU time of every device apart, summed: with several devices (GPUs, or ranks in files of
// their own) one device's busy time must not hide another's idle time, nor the time between
// two files' windows count as idle. One device: the timeline itself.
struct GpuTime {
  int64_t total_ns = 0, busy_ns = 0, idle_ns = 0, exposed_memcpy_ns = 0;
  size_t devices = 1;
};
GpuTime DeviceSum(const TraceReport& r) {
  if (r.per_device.empty()) {
    return {r.timeline.total_ns, r.timeline.busy_ns, r.timeline.idle_ns, r.timeline.exposed_memcpy_ns, 1};
  }
  GpuTime t;
  t.devices = r.per_device.size();
  for (const auto& d : r.per_device) {
    t.total_ns += d.total_ns;
    t.busy_ns += d.busy_ns;
    t.idle_ns += d.idle_ns;
    t.exposed_memcpy_ns += d.exposed_memcpy_ns;
  }
  return t;
}

std::string Arch(const TraceReport& r) {
  for (const auto& d : r.devices) {
    if (!d.arch.empty()) return d.arch;
  }
  return "";
}

// How the GPU-idle finding is named: its id, the title's suffix and the advice.
struct IdleNaming {
  std::string id, suffix, advice;
};

// The naming for the idle time's cause; lowers `sev` to info when the cause is the GPU's own
// gaps.
IdleNaming NameIdleCause(const TraceReport& r, const TraceRuleOptions& o, bool host_records,
                         double host_share, double gap_share, Severity& sev) {
  // Which of three causes the idle time has, named only when the trace shows it: the host
  // launching late; the GPU's own gaps between ops already launched (short, back to back: only
  // fusion removes them, so info at most); or neither (syncs, waits between streams).
  enum class Cause { kHost, kKernelGaps, kOther, kUnknown } cause = Cause::kOther;
  if (!host_records) {
    cause = Cause::kUnknown;
  } else if (host_share >= o.host_bound_share) {
    cause = Cause::kHost;
  } else if (gap_share >= o.kernel_gap_share) {
    cause = Cause::kKernelGaps;
    sev = std::min(sev, Severity::kInfo);
  }
  const bool named = sev != Severity::kOk;
  const bool several_streams = r.overlap.streams_with_kernels >= 2;
  IdleNaming n{"kernel.gpu_idle", "", ""};
  switch (cause) {
    case Cause::kHost:
      if (named) {
        n.id = "kernel.gpu_idle_host_bound";
        n.suffix = fmt::format("; {:.0f}% of stream idle time is the host launching late",
                               100 * host_share);
      }
      n.advice =
          "the host is the bottleneck: capture the step in CUDA/HIP graphs (vLLM: drop "
          "--enforce-eager), cut Python work per step (torch.compile), and pin the server to the "
          "GPU's NUMA node with a performance CPU governor (latdoc numa-exec)";
      break;
    case Cause::kKernelGaps:
      if (named) {
        n.id = "kernel.gpu_idle_kernel_gaps";
        n.suffix = fmt::format("; {:.0f}% of it is short gaps between ops already launched",
                               100 * gap_share);
      }
      n.advice =
          "the gaps are the GPU's own between back-to-back ops (launch already done): only "
          "fewer, larger kernels remove them (fusion, torch.compile)";
      break;
    case Cause::kOther:
      n.advice =
          several_streams
              ? "the GPU waits without the host being late: look for synchronisations and "
                "dependencies between streams (see kernel.steady_state_sync)"
              : "the GPU waits without the host being late: look for synchronisations and long "
                "copies in the step (see kernel.steady_state_sync)";
      break;
    case Cause::kUnknown:
      n.advice =
          "the trace has no host API records, so whether the host launched late cannot be "
          "told: trace the runtime API too (rocprofv3 --hip-trace, nsys --trace=cuda, "
          "torch.profiler with CUDA activities)";
      break;
  }
  return n;
}

// The largest idle gap: its length, where, before which op, and what the CPU did meanwhile.
void AddLargestGapEvidence(const TraceReport& r, Finding& f) {
  if (!r.idle.largest_gaps.empty()) {
    const auto& g = r.idle.largest_gaps.front();
    std::string cpu;
    for (const auto& a : g.cpu_top) {
      cpu += fmt::format("{}{} {:.1f} us", cpu.empty() ? "" : ", ", a.name, Us(static_cast<double>(a.overlap_ns)));
    }
    f.evidence.push_back(Num("largest_gap", Us(static_cast<double>(g.dur_ns)), "us",
                             fmt::format("at {:.3f} ms, before {}{}{}", Ms(static_cast<double>(g.at_ns)),
                                         ShortenMiddle(g.next_op, 60),
                                         g.cpu_busy_ns ? fmt::format("; launching thread busy {:.1f} us", Us(static_cast<double>(*g.cpu_busy_ns))) : "",
                                         cpu.empty() ? "" : "; CPU (outermost ops): " + cpu)));
  }
}

void IdleRule(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  const GpuTime t = DeviceSum(r);
  if (t.total_ns <= 0) return;
  const double idle = Share(static_cast<double>(t.idle_ns), static_cast<double>(t.total_ns));
  const double stream_idle =
      static_cast<double>(r.idle.host_wait_ns + r.idle.kernel_wait_ns + r.idle.other_ns);
  const double host_share = Share(static_cast<double>(r.idle.host_wait_ns), stream_idle);
  const double gap_share = Share(static_cast<double>(r.idle.kernel_wait_ns), stream_idle);
  const bool host_records = HasHostRecords(r);
  Severity sev = Severity::kOk;
  if (idle >= o.idle_fail_share) {
    sev = Severity::kFail;
  } else if (idle >= o.idle_warn_share) {
    sev = Severity::kWarn;
  }
  const IdleNaming n = NameIdleCause(r, o, host_records, host_share, gap_share, sev);
  Finding f =
      Make(n.id, sev,
           fmt::format("GPU idle {:.1f}% of {} {:.2f} ms window{}", 100 * idle,
                       t.devices > 1 ? fmt::format("{} devices'", t.devices) : std::string("its"),
                       Ms(static_cast<double>(t.total_ns)), n.suffix),
           n.advice);
  f.evidence.push_back(Num("gpu_idle", Ms(static_cast<double>(t.idle_ns)), "ms"));
  f.evidence.push_back(Num("gpu_idle_share", 100 * idle, "%"));
  f.evidence.push_back(
      Num("host_wait_share_of_stream_idle",
          host_records && stream_idle > 0 ? std::optional<double>(100 * host_share) : std::nullopt,
          "%", host_records ? "" : "no host records"));
  f.evidence.push_back(Num("kernel_wait", Ms(static_cast<double>(r.idle.kernel_wait_ns)), "ms"));
  AddLargestGapEvidence(r, f);
  AddStepIdleEvidence(r, f);
  f.latency_share = idle;
  out.push_back(std::move(f));
}

void HotKernelRule(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  if (r.hot_kernels.empty()) return;
  const auto& k = r.hot_kernels.front();
  if (k.busy_share < o.hot_kernel_share) return;
  Finding f = Make("kernel.hot_kernel", Severity::kInfo,
                   fmt::format("{:.0f}% of GPU busy time is one kernel: {}", 100 * k.busy_share, ShortenMiddle(k.name, 80)),
                   "this kernel is where GPU time goes: check it runs the library path expected for "
                   "its shapes (GEMM backend, attention backend) before tuning anything else");
  f.evidence.push_back(Num("count", static_cast<double>(k.count), ""));
  f.evidence.push_back(Num("total", Ms(static_cast<double>(k.total_ns)), "ms"));
  f.evidence.push_back(Num("p50", Us(k.p50_ns), "us"));
  f.evidence.push_back(Num("p99", Us(k.p99_ns), "us"));
  const GpuTime t = DeviceSum(r);
  if (t.total_ns > 0) f.latency_share = std::min(1.0, Share(static_cast<double>(k.total_ns), static_cast<double>(t.total_ns)));
  out.push_back(std::move(f));
}

void OutlierRule(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  if (r.outlier_count == 0) return;
  // Every outlier's excess, not only the instances the report lists.
  const double excess = static_cast<double>(r.outlier_excess_ns);
  const double share = Share(excess, static_cast<double>(r.all_ops_busy_ns));
  Finding f = Make("kernel.outlier_instances", share >= o.outlier_warn_share ? Severity::kWarn : Severity::kInfo,
                   fmt::format("{} kernel instances ran far slower than their kernel's median", r.outlier_count),
                   "open the trace with the findings marked (--annotate) and look at what ran at those "
                   "moments: other processes on the GPU, clock throttling, a contended stream, or "
                   "input-dependent shapes");
  for (size_t i = 0; i < r.outliers.size() && i < 3; ++i) {
    const auto& x = r.outliers[i];
    f.evidence.push_back(Num(fmt::format("outlier_{}", i + 1), Us(static_cast<double>(x.dur_ns)), "us",
                             fmt::format("{} at {:.3f} ms, median {:.1f} us", ShortenMiddle(x.name, 60),
                                         Ms(static_cast<double>(x.at_ns)), Us(x.median_ns))));
  }
  f.latency_share = Share(excess, static_cast<double>(DeviceSum(r).total_ns));
  out.push_back(std::move(f));
}

// Many small host-to-device copies (a storm, or a high rate).
void SmallH2DCopyRule(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  for (const auto& d : r.copies.by_direction) {
    if (d.direction == CopyDirection::kHtoD && d.small_count >= o.small_h2d_min_count) {
      const double rate = d.small_per_s.value_or(0);   // the busiest file, over its own span
      if (rate >= o.small_h2d_min_per_s || d.storm_runs > 0) {
        // With steps: a copy or so a step (a position id) costs a microsecond; warn from a few.
        const std::optional<double> per_step = SmallH2DPerStep(r);
        const Severity sev = per_step && *per_step < o.small_h2d_warn_per_step ? Severity::kInfo : Severity::kWarn;
        Finding f = Make("kernel.small_h2d_copies", sev,
                         fmt::format("{} small host-to-device copies ({:.0f}/s)", d.small_count, rate),
                         "batch small inputs into one pinned staging buffer and copy it once per step "
                         "(tensor.pin_memory() + .to(device, non_blocking=True)); avoid building "
                         "tensors from Python lists in the step loop");
        f.evidence.push_back(Num("small_copies", static_cast<double>(d.small_count), ""));
        f.evidence.push_back(Num("small_share", 100 * Share(static_cast<double>(d.small_count), static_cast<double>(d.count)), "%"));
        f.evidence.push_back(Num("rate", rate, "/s"));
        f.evidence.push_back(Num("storm_runs", static_cast<double>(d.storm_runs), "", fmt::format("longest {}", d.longest_storm)));
        if (per_step) f.evidence.push_back(Num("small_h2d_per_step", *per_step, "", "median step"));
        out.push_back(std::move(f));
      }
    }
  }
}

// Copies from or to pageable host memory.
void PageableCopyRule(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  int64_t pageable = 0, pageable_ns = 0;
  for (const auto& d : r.copies.by_direction) {
    pageable += d.pageable_count;
    pageable_ns += d.pageable_ns;
  }
  if (pageable > 0) {
    const GpuTime window = DeviceSum(r);
    const double share = Share(static_cast<double>(pageable_ns), static_cast<double>(window.total_ns));
    Severity sev = pageable >= o.copy_warn_count || share >= o.pageable_warn_share ? Severity::kWarn : Severity::kInfo;
    const std::optional<PageablePerStep> per_step = PageableStepCost(r);
    if (per_step) sev = PageableStepSeverity(*per_step, o);
    Finding f = Make("kernel.pageable_copies", sev,
                     fmt::format("{} copies from or to pageable host memory{}", pageable,
                                 r.copies.pageable_is_heuristic ? " (heuristic: the async call blocked)" : ""),
                     "pin the host buffers (pin_memory=True, cudaHostAlloc/hipHostMalloc) so the copy "
                     "is DMA'd asynchronously instead of staged through a bounce buffer");
    f.evidence.push_back(Num("pageable_copies", static_cast<double>(pageable), ""));
    f.evidence.push_back(Num("pageable_copy_time", Ms(static_cast<double>(pageable_ns)), "ms",
                             fmt::format("{:.2f}% of the GPU window", 100 * share)));
    f.evidence.push_back(Num("method", std::nullopt, "",
                             r.copies.pageable_is_heuristic
                                 ? "ROCm traces record no memory kind: an *Async copy whose call "
                                   "blocked for most of the copy's time counts as pageable"
                                 : "memory kind recorded by the profiler"));
    if (per_step) AddPageableStepEvidence(*per_step, f);
    out.push_back(std::move(f));
  }
}

// Synchronous copy calls after warm-up.
void SyncCopyRule(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  int64_t sync = 0;
  for (const auto& d : r.copies.by_direction) sync += d.sync_count;
  if (r.steady.sync_copy_count > 0) {   // warm-up copies (loading the model) are fine
    Finding f = Make("kernel.sync_copies",
                     r.steady.sync_copy_count >= o.copy_warn_count ? Severity::kWarn : Severity::kInfo,
                     fmt::format("{} synchronous copy calls after warm-up", r.steady.sync_copy_count),
                     "use async copies (cudaMemcpyAsync/hipMemcpyAsync, .to(non_blocking=True) from "
                     "pinned memory) and keep .item()/.cpu()/.tolist() out of the step loop");
    f.evidence.push_back(Num("sync_copy_calls_steady", static_cast<double>(r.steady.sync_copy_count), ""));
    f.evidence.push_back(Num("gpu_copies_from_sync_calls", static_cast<double>(sync), "",
                             "whole trace, warm-up included"));
    out.push_back(std::move(f));
  }
}

// Copies not hidden under compute.
void ExposedMemcpyRule(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  const GpuTime t = DeviceSum(r);
  const double exposed = Share(static_cast<double>(t.exposed_memcpy_ns), static_cast<double>(t.total_ns));
  if (exposed >= o.exposed_memcpy_share) {
    Finding f = Make("kernel.exposed_memcpy", Severity::kWarn,
                     fmt::format("{:.1f}% of the GPU window is copies not hidden under compute", 100 * exposed),
                     "overlap copies with compute on a separate stream, prefetch inputs, or remove the "
                     "copies (keep tensors on the device)");
    f.evidence.push_back(Num("exposed_memcpy", Ms(static_cast<double>(t.exposed_memcpy_ns)), "ms"));
    f.latency_share = exposed;
    out.push_back(std::move(f));
  }
}

// Large copies far under the peak bandwidth of their direction.
void LowCopyBandwidthRule(const TraceReport& r, const TraceRuleOptions& o,
                          std::vector<Finding>& out) {
  for (const auto& b : r.bandwidth) {
    if (b.copies < 0) continue;   // kernel counters: low traffic may just be compute-bound
    const auto it = std::find_if(r.copies.by_direction.begin(), r.copies.by_direction.end(),
                                 [&](const auto& d) { return d.direction == b.direction; });
    if (it == r.copies.by_direction.end() || !it->bytes || it->bytes_count == 0) continue;
    const double avg = static_cast<double>(*it->bytes) / static_cast<double>(it->bytes_count);
    if (avg < static_cast<double>(o.low_bandwidth_min_avg_bytes)) continue;
    if (b.achieved_gbps >= o.low_bandwidth_share * b.peak_gbps) continue;
    const bool host = b.direction == CopyDirection::kHtoD || b.direction == CopyDirection::kDtoH;
    Finding f = Make("kernel.low_copy_bandwidth", Severity::kWarn,
                     fmt::format("{} copies reach {:.1f} GB/s, {:.0f}% of the {} peak", trace::CopyDirectionName(b.direction),
                                 b.achieved_gbps, 100 * b.achieved_gbps / b.peak_gbps, b.gpu),
                     host ? "large copies this far under peak are usually pageable (staged) or strided: pin "
                            "host memory and copy contiguous buffers"
                     : b.direction == CopyDirection::kPtoP
                         ? "peer copies this slow are usually staged through the host: enable peer access "
                           "(cudaDeviceEnablePeerAccess/hipDeviceEnablePeerAccess; NCCL_P2P_DISABLE unset) "
                           "and check the GPUs' link (nvidia-smi topo -m, rocm-smi --showtopo)"
                         : "device copies this far under peak are usually strided or many small ones: copy "
                           "contiguous buffers, or fuse the copy into the kernel that needs the data");
    f.evidence.push_back(Num("achieved", b.achieved_gbps, "GB/s"));
    f.evidence.push_back(Num("peak", b.peak_gbps, "GB/s", b.peak_source));
    f.evidence.push_back(Num("avg_copy", avg / 1e6, "MB"));
    out.push_back(std::move(f));
  }
}

void CopyRules(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  SmallH2DCopyRule(r, o, out);
  PageableCopyRule(r, o, out);
  SyncCopyRule(r, o, out);
  ExposedMemcpyRule(r, o, out);
  LowCopyBandwidthRule(r, o, out);
}

void LaunchRules(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  // Without host records, "launched one by one" cannot be told from "in a graph": StepRules
  // says the check was skipped.
  if (!HasHostRecords(r)) return;
  const auto& l = r.launch;
  if (l.graph_launches > 0) {
    Finding f = Make("kernel.graphs_in_use", Severity::kOk,
                     fmt::format("CUDA/HIP graphs in use: {} graph launches ran {} kernels", l.graph_launches, l.graph_kernels),
                     "");
    f.evidence.push_back(Num("graph_launch_to_first_node_p50", l.graph_first_node_p50_ns ? std::optional<double>(Us(*l.graph_first_node_p50_ns)) : std::nullopt, "us"));
    out.push_back(std::move(f));
  }
  const int64_t one_by_one = l.kernels - l.graph_kernels;
  if (one_by_one >= o.tiny_kernel_min_count && l.tiny_share >= o.tiny_kernel_share) {
    Finding f = Make("kernel.launch_overhead", Severity::kWarn,
                     fmt::format("{:.0f}% of {} kernels launched one by one run under {:g} us", 100 * l.tiny_share,
                                 one_by_one, static_cast<double>(l.tiny_kernel_limit_ns) / 1e3),
                     "capture the step in CUDA/HIP graphs (vLLM: remove --enforce-eager; PyTorch: "
                     "torch.compile(mode=\"reduce-overhead\")) and fuse chains of small kernels");
    f.evidence.push_back(Num("tiny_kernels", static_cast<double>(l.tiny_kernels), ""));
    f.evidence.push_back(Num("launch_call_p50", l.launch_call_p50_ns ? std::optional<double>(Us(*l.launch_call_p50_ns)) : std::nullopt, "us"));
    f.evidence.push_back(Num("launch_to_start_p50", l.delay_p50_ns ? std::optional<double>(Us(*l.delay_p50_ns)) : std::nullopt, "us"));
    f.evidence.push_back(Num("launch_to_start_p99", l.delay_p99_ns ? std::optional<double>(Us(*l.delay_p99_ns)) : std::nullopt, "us"));
    f.evidence.push_back(Num("launches_per_s", l.launches_per_s, "/s"));
    f.evidence.push_back(Num("launch_bound_kernels", static_cast<double>(l.launch_bound_kernels), "", "launch call ≤ 50 us and longer than the kernel (HTA)"));
    out.push_back(std::move(f));
  }
}

void SteadyRules(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  const auto& s = r.steady;
  // With steps found, the syncs of the loop are judged per step (kernel.sync_every_step); those
  // outside it (a final synchronize) are not a finding.
  if (s.sync_count > 0 && r.steps.method == trace::StepMethod::kNone) {
    const double share = Share(static_cast<double>(s.sync_ns), static_cast<double>(s.steady_span_ns));
    // A few syncs (a final synchronize, a one-off read) are not a habit of the loop: info.
    const bool habit = s.sync_count >= o.sync_warn_min_count;
    Finding f = Make("kernel.steady_state_sync", habit && share >= o.sync_warn_share ? Severity::kWarn : Severity::kInfo,
                     fmt::format("{} synchronisations after warm-up, {:.2f} ms on the host", s.sync_count, Ms(static_cast<double>(s.sync_ns))),
                     "remove device-wide waits from the step (torch.cuda.synchronize(), .item(), "
                     ".cpu()); wait on events for the one stream that needs it");
    for (size_t i = 0; i < s.syncs.size() && i < 3; ++i) {
      f.evidence.push_back(Num(s.syncs[i].name, Ms(static_cast<double>(s.syncs[i].total_ns)), "ms",
                               fmt::format("{} calls", s.syncs[i].count)));
    }
    out.push_back(std::move(f));
  }
  if (s.alloc_count > 0) {
    Finding f = Make("kernel.steady_state_alloc", Severity::kWarn,
                     fmt::format("{} device/host allocation calls after warm-up ({:.2f} ms)", s.alloc_count, Ms(static_cast<double>(s.alloc_ns))),
                     "allocations in the steady state mean the caching allocator is missing: "
                     "preallocate, or let it grow in place (PYTORCH_CUDA_ALLOC_CONF / "
                     "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True)");
    for (size_t i = 0; i < s.allocs.size() && i < 3; ++i) {
      f.evidence.push_back(Num(s.allocs[i].name, Ms(static_cast<double>(s.allocs[i].total_ns)), "ms",
                               fmt::format("{} calls", s.allocs[i].count)));
    }
    AddAllocStepEvidence(r, f);
    out.push_back(std::move(f));
  }
}

void PatternRules(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  for (const auto& p : r.patterns) {
    const double share = p.busy_share;
    // A pattern whose condition the kernel name cannot show (the inputs' strides, alignment,
    // dtypes) may be the right path for this op: info, saying what to check.
    const bool shown = p.condition_checked;
    Finding f = Make("kernel.pattern." + p.pattern,
                     shown && share >= o.pattern_warn_share ? Severity::kWarn : Severity::kInfo,
                     fmt::format("{}: {} ({} calls, {:.1f}% of busy time)", shown ? "known slow path" : "possible slow path",
                                 ShortenMiddle(p.kernel, 70), p.count, 100 * share),
                     p.advice);
    f.evidence.push_back(Num("total", Ms(static_cast<double>(p.total_ns)), "ms"));
    if (!shown) {
      f.evidence.push_back(Num("condition", std::nullopt, "",
                               "not checked (the trace does not show it): slow only when " + p.condition));
    }
    f.evidence.push_back(Num("source", std::nullopt, "", p.source));
    out.push_back(std::move(f));
  }
}

void ConcurrencyRule(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  const auto& ov = r.overlap;
  // Streams of one device (ComputeOverlap judges only devices with two or more).
  if (ov.max_streams_per_device >= 2 && ov.concurrency_share && *ov.concurrency_share < o.concurrency_low_share) {
    Finding f = Make("kernel.serialized_streams", Severity::kInfo,
                     fmt::format("kernels on {} streams of one device but only {:.1f}% of their busy time concurrent",
                                 ov.max_streams_per_device, 100 * *ov.concurrency_share),
                     "the streams serialise: check for a sync or an event wait between them, or "
                     "whether one stream would do");
    out.push_back(std::move(f));
  }
  if (ov.copy_hidden_share && *ov.copy_hidden_share < o.copies_hidden_low_share) {
    Finding f = Make("kernel.copies_not_overlapped", Severity::kInfo,
                     fmt::format("{:.0f}% of long-copy time ran without compute alongside", 100 * (1 - *ov.copy_hidden_share)),
                     "issue copies on a side stream ahead of use so they overlap kernels");
    f.evidence.push_back(Num("long_copy_time", Ms(static_cast<double>(ov.copy_ns)), "ms"));
    out.push_back(std::move(f));
  }
}

// Bandwidth: per copy direction with bytes, against the first known device's spec.
void AddBandwidthChecks(TraceReport& r) {
  const trace::DeviceInfo* dev = nullptr;
  const GpuSpec* spec = nullptr;
  for (const auto& d : r.devices) {
    if ((spec = FindGpuSpec(d.name, d.arch)) != nullptr) {
      dev = &d;
      break;
    }
  }
  if (spec != nullptr) {
    for (const auto& c : r.copies.by_direction) {
      if (!c.achieved_gbps) continue;
      trace::BandwidthCheck b;
      b.device = dev->device;
      b.gpu = std::string(spec->name);
      b.direction = c.direction;
      b.achieved_gbps = *c.achieved_gbps;
      // Each direction against the link it crosses; a host-to-host copy or one of unknown
      // direction crosses none of the GPU's, and is not judged.
      switch (c.direction) {
        case CopyDirection::kHtoD:
        case CopyDirection::kDtoH:
          b.peak_gbps = spec->host_link_gbps;
          b.peak_source = std::string(spec->source);
          break;
        case CopyDirection::kDtoD:
          b.peak_gbps = spec->hbm_gbps / 2;   // it reads and writes device memory
          b.peak_source = std::string(spec->source) + "; DtoD peak = HBM peak / 2";
          break;
        case CopyDirection::kPtoP:
          b.peak_gbps = spec->peer_link_gbps;
          b.peak_source = std::string(spec->source) + "; PtoP peak = one direction of the peer link";
          break;
        case CopyDirection::kHtoH:
        case CopyDirection::kUnknown:
          continue;
      }
      b.copies = c.count;
      r.bandwidth.push_back(std::move(b));
    }
    if (r.counter_gbps) {
      trace::BandwidthCheck b;
      b.device = dev->device;
      b.gpu = std::string(spec->name);
      b.achieved_gbps = *r.counter_gbps;
      b.peak_gbps = spec->hbm_gbps;
      b.peak_source = std::string(spec->source) + "; kernel traffic from FETCH_SIZE+WRITE_SIZE (KB)";
      b.copies = -r.counter_kernels;
      r.bandwidth.push_back(std::move(b));
    }
  }
}

// The known kernel patterns the trace's kernels and ops match, on `arch`.
void AddPatternHits(TraceReport& r, const std::string& arch) {
  for (const auto& p : KernelPatterns()) {
    trace::PatternHit hit;
    for (const auto* list : {&r.hot_kernels, &r.other_ops}) {
      for (const auto& k : *list) {
        if (!MatchesPattern(p, k.name, arch)) continue;
        if (hit.count == 0) hit.kernel = k.name;
        hit.count += k.count;
        hit.total_ns += k.total_ns;
        // Copies and fills have no time-ran of their own: their total stands in.
        hit.busy_share += list == &r.hot_kernels
                              ? k.busy_share
                              : Share(static_cast<double>(k.total_ns), static_cast<double>(r.all_ops_busy_ns));
      }
    }
    if (hit.count == 0) continue;
    hit.busy_share = std::min(hit.busy_share, 1.0);
    hit.pattern = std::string(p.id);
    hit.advice = std::string(p.advice);
    hit.source = std::string(p.source);
    hit.condition = std::string(p.condition);
    hit.condition_checked = p.condition.empty();
    hit.arch = arch;
    r.patterns.push_back(std::move(hit));
  }
}

}  // namespace

void AddKnowledgeFacts(TraceReport& r) {
  r.bandwidth.clear();
  r.patterns.clear();
  const std::string arch = Arch(r);
  AddBandwidthChecks(r);
  AddRooflineFacts(r);
  AddPatternHits(r, arch);
}

std::vector<Finding> EvaluateTraceRules(const TraceReport& r, const TraceRuleOptions& o) {
  std::vector<Finding> out;
  IdleRule(r, o, out);
  HotKernelRule(r, o, out);
  OutlierRule(r, o, out);
  CopyRules(r, o, out);
  LaunchRules(r, o, out);
  SteadyRules(r, o, out);
  PatternRules(r, o, out);
  ConcurrencyRule(r, o, out);
  StepRules(r, o, out);
  RooflineRules(r, out);
  RankRules(r, out);
  // Judged on its own, a trace's shares are of the GPU time it recorded; a diagnosis places them
  // on its latency scale (PlaceTraceFindings).
  for (Finding& f : out) f.share_basis = ShareBasis::kTracedGpuTime;
  return out;
}

}  // namespace latdoc::rules
