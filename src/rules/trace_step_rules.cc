#include "rules/trace_step_rules.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/strings.h"
#include "rules/trace_rules_internal.h"

namespace latdoc::rules {
namespace {

using trace_internal::Make;
using trace_internal::Num;

using trace::StepMethod;
using trace::StepRow;
using trace::StepStats;
using trace::TraceReport;

double Ms(double ns) { return ns / 1e6; }
double Us(double ns) { return ns / 1e3; }

bool HaveSteps(const TraceReport& r) { return r.steps.method != StepMethod::kNone && !r.steps.steps.empty(); }

template <typename Get>
double SumOf(const StepStats& s, Get get) {
  double total = 0;
  for (const StepRow& st : s.steps) total += static_cast<double>(get(st));
  return total;
}

template <typename Pred>
double ShareOfSteps(const StepStats& s, Pred pred) {
  double n = 0;
  for (const StepRow& st : s.steps) n += pred(st) ? 1 : 0;
  return n / static_cast<double>(s.steps.size());
}

double P50(const StepStats& s, std::string_view column) {
  const auto q = s.Quantile(column);
  return q ? q->p50 : 0;
}

std::string MethodText(const StepStats& s) {
  return fmt::format("{} steps found by {}{}", s.steps.size(), trace::StepMethodName(s.method),
                     s.method == StepMethod::kCadence ? " (a guess from the op sequence)" : "");
}

// Class 1: a sync (and a device-to-host copy) in every step. The cost a sync has on the step is
// the GPU idle right after it (the host was held until the GPU drained, then had to launch
// again): that share of step time sets the severity. A DtoH copy read back every step (.item(),
// .cpu()) warns whatever it costs today: it ties the host to the GPU each step, so the host
// cannot run ahead (nor a CUDA graph replay be queued) once the host-side cost is gone.
void SyncEveryStep(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  const StepStats& s = r.steps;
  const double with_sync = ShareOfSteps(s, [](const StepRow& st) { return st.syncs > 0; });
  if (with_sync < o.per_step_share || s.syncs.empty()) return;
  const double with_d2h = ShareOfSteps(s, [](const StepRow& st) { return st.d2h_copies > 0; });
  const double wall = SumOf(s, [](const StepRow& st) { return st.wall_ns; });
  const double idle_sync = SumOf(s, [](const StepRow& st) { return st.idle_sync_ns; });
  const double waited = SumOf(s, [](const StepRow& st) { return st.sync_wait_ns; });
  const double share = wall > 0 ? idle_sync / wall : 0;
  const bool d2h = with_d2h >= o.per_step_share;
  Severity sev = Severity::kInfo;
  if (share >= o.step_sync_fail_share) {
    sev = Severity::kFail;
  } else if (d2h || share >= o.step_sync_warn_share) {
    sev = Severity::kWarn;
  }
  const double n = static_cast<double>(s.steps.size());
  const trace::ApiUse& top = s.syncs.front();
  Finding f = Make(
      "kernel.sync_every_step", sev,
      fmt::format("{} in {:.0f}% of steps ({:.1f} a step){}: GPU idle after it {:.3f} ms a step, {:.1f}% of step time",
                  top.name, 100 * with_sync, static_cast<double>(top.count) / n,
                  d2h ? fmt::format(", with a device-to-host copy ({})", ShortenMiddle(s.d2h_copy, 40)) : "",
                  Ms(idle_sync / n), 100 * share),
      d2h ? "the step reads a result back to the host (.item(), .cpu(), .tolist(), a Python if on a "
            "GPU value): keep sampling and stopping checks on the GPU, or read back one step later "
            "from a pinned buffer with non_blocking=True and an event, so the host can queue the next step"
          : "remove the synchronisation from the step: copies from pinned memory with "
            "non_blocking=True, no torch.cuda.synchronize(); wait on an event for the one stream "
            "that needs it");
  for (size_t i = 0; i < s.syncs.size() && i < 3; ++i) {
    f.evidence.push_back(Num(s.syncs[i].name, static_cast<double>(s.syncs[i].count) / n, "a step",
                             fmt::format("{:.3f} ms waited a step", Ms(static_cast<double>(s.syncs[i].total_ns) / n))));
  }
  f.evidence.push_back(Num("steps_with_sync", 100 * with_sync, "%"));
  f.evidence.push_back(Num("steps_with_d2h_copy", 100 * with_d2h, "%", s.d2h_copy));
  f.evidence.push_back(Num("host_wait_per_step", Ms(waited / n), "ms", "host blocked inside the sync calls"));
  f.evidence.push_back(Num("gpu_idle_after_sync_per_step", Ms(idle_sync / n), "ms",
                           "GPU idle from the sync's return to the next op (the cost judged)"));
  f.evidence.push_back(Num("share_of_step_time", 100 * share, "%"));
  f.evidence.push_back(Num("steps", n, "", MethodText(s)));
  f.latency_share = share;
  out.push_back(std::move(f));
}

// Class 2: a kernel that runs every k-th step only.
void PeriodicKernels(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  const StepStats& s = r.steps;
  const double busy = SumOf(s, [](const StepRow& st) { return st.gpu_busy_ns; });
  const double wall = SumOf(s, [](const StepRow& st) { return st.wall_ns; });
  const auto q = s.Quantile("wall_ns");
  const double ratio = q && q->p50 > 0 ? q->p99 / q->p50 : 0;
  for (const trace::PeriodicKernel& p : s.periodic) {
    const double gpu_share = busy > 0 ? static_cast<double>(p.total_ns) / busy : 0;
    if (gpu_share < o.periodic_min_gpu_share) continue;
    const double step_share = wall > 0 ? static_cast<double>(p.total_ns) / wall : 0;
    // The period in time: between its first and its last step, over the periods between them.
    const size_t a = static_cast<size_t>(p.first_step);
    const size_t b = a + static_cast<size_t>(p.period_steps) * static_cast<size_t>(p.occurrences - 1);
    const double period_ns = b < s.steps.size() && p.occurrences > 1
                                 ? static_cast<double>(s.steps[b].at_ns - s.steps[a].at_ns) / static_cast<double>(p.occurrences - 1)
                                 : 0;
    Finding f = Make("kernel.periodic_heavy_kernel", ratio >= o.step_spike_ratio ? Severity::kWarn : Severity::kInfo,
                     fmt::format("{} runs every {} steps ({:.2f} ms apart), {:.0f}% of GPU busy time: p99 step {:.1f}x the median",
                                 ShortenMiddle(p.name, 60), p.period_steps, Ms(period_ns), 100 * gpu_share, ratio),
                     "a step that runs this kernel is a latency spike for every request in the batch "
                     "(inter-token p99): move the work off the decode path (another stream or "
                     "process), spread it over steps, or make it cheaper (dtype: TF32/bf16 instead of fp32)");
    f.evidence.push_back(Num("period_steps", p.period_steps, "", fmt::format("first in step {}, {} times", p.first_step, p.occurrences)));
    f.evidence.push_back(Num("period", Ms(period_ns), "ms"));
    f.evidence.push_back(Num("kernel_time_per_run", Ms(static_cast<double>(p.total_ns) / static_cast<double>(p.occurrences)), "ms"));
    f.evidence.push_back(Num("share_of_gpu_busy", 100 * gpu_share, "%", "of the steps' GPU busy time"));
    f.evidence.push_back(Num("share_of_step_time", 100 * step_share, "%", "of the steps' wall time"));
    f.evidence.push_back(Num("p99_over_median_step", ratio, "x"));
    f.evidence.push_back(Num("steps", static_cast<double>(s.steps.size()), "", MethodText(s)));
    f.latency_share = step_share;
    out.push_back(std::move(f));
  }
}

// Steps much slower than the median step, and what made them slow; those a periodic kernel
// explains are left to kernel.periodic_heavy_kernel.
void StepOutliers(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  const StepStats& s = r.steps;
  const double median = P50(s, "wall_ns");
  if (median <= 0) return;
  double excess = 0;
  int64_t slow = 0;
  for (const StepRow& st : s.steps) {
    if (static_cast<double>(st.wall_ns) >= o.step_outlier_factor * median) {
      ++slow;
      excess += static_cast<double>(st.wall_ns) - median;
    }
  }
  if (slow == 0) return;
  auto periodic = [&](const std::string& name) {
    for (const auto& p : s.periodic) {
      if (p.name == name) return true;
    }
    return false;
  };
  bool explained = true;
  for (const trace::SlowStep& x : s.slowest) {
    if (x.ratio_to_median < o.step_outlier_factor) continue;
    if (x.kernels.empty() || !periodic(x.kernels.front().name)) explained = false;
  }
  if (explained) return;
  const double wall = SumOf(s, [](const StepRow& st) { return st.wall_ns; });
  const double share = wall > 0 ? excess / wall : 0;
  Finding f = Make("kernel.step_outliers", share >= o.step_outlier_warn_share ? Severity::kWarn : Severity::kInfo,
                   fmt::format("{} of {} steps took over {:g}x the median step ({:.3f} ms)", slow, s.steps.size(),
                               o.step_outlier_factor, Ms(median)),
                   "open the trace at those steps (--annotate) and look at what ran: the kernels "
                   "listed, the host (GC, Python work, other threads), or other processes on the GPU");
  for (const trace::SlowStep& x : s.slowest) {
    if (x.ratio_to_median < o.step_outlier_factor) continue;
    const StepRow& st = s.steps[static_cast<size_t>(x.index)];
    std::string what;
    for (const auto& k : x.kernels) {
      what += fmt::format("{}{} {:.1f} us (mean {:.1f})", what.empty() ? "" : ", ", ShortenMiddle(k.name, 40),
                          Us(static_cast<double>(k.ns)), Us(k.mean_ns_per_step));
    }
    f.evidence.push_back(Num(fmt::format("step_{}", x.index), Ms(static_cast<double>(x.wall_ns)), "ms",
                             fmt::format("{:.1f}x median; GPU busy {:.3f} ms, host late {:.3f} ms, after syncs {:.3f} ms{}",
                                         x.ratio_to_median, Ms(static_cast<double>(st.gpu_busy_ns)),
                                         Ms(static_cast<double>(st.idle_host_late_ns)), Ms(static_cast<double>(st.idle_sync_ns)),
                                         what.empty() ? "" : "; kernels above their mean: " + what)));
  }
  f.evidence.push_back(Num("excess_share_of_step_time", 100 * share, "%"));
  f.latency_share = share;
  out.push_back(std::move(f));
}

}  // namespace

bool HasHostRecords(const TraceReport& r) { return r.api_calls > 0 || r.launch.kernels_linked > 0; }

void AddStepIdleEvidence(const TraceReport& r, Finding& f) {
  if (!HaveSteps(r)) return;
  const StepStats& s = r.steps;
  f.evidence.push_back(Num("step_time_p50", Ms(P50(s, "wall_ns")), "ms", MethodText(s)));
  f.evidence.push_back(Num("step_gpu_busy_p50", Ms(P50(s, "gpu_busy_ns")), "ms"));
  if (s.host_records) {
    f.evidence.push_back(Num("step_idle_host_late_p50", Ms(P50(s, "idle_host_late_ns")), "ms"));
    f.evidence.push_back(Num("step_idle_after_sync_p50", Ms(P50(s, "idle_sync_ns")), "ms"));
  }
  f.evidence.push_back(Num("step_idle_kernel_wait_p50", Ms(P50(s, "idle_kernel_wait_ns")), "ms"));
}

void AddAllocStepEvidence(const TraceReport& r, Finding& f) {
  if (!HaveSteps(r)) return;
  const StepStats& s = r.steps;
  const double n = static_cast<double>(s.steps.size());
  f.evidence.push_back(Num("steps_with_alloc", 100 * ShareOfSteps(s, [](const StepRow& st) { return st.allocs > 0; }),
                           "%", MethodText(s)));
  f.evidence.push_back(Num("alloc_calls_per_step", SumOf(s, [](const StepRow& st) { return st.allocs; }) / n, "",
                           "malloc/free calls between the first and the last launch of the steps"));
  double ns = 0;
  for (const trace::ApiUse& u : s.allocs) ns += static_cast<double>(u.total_ns);
  f.evidence.push_back(Num("alloc_time_per_step", Ms(ns / n), "ms", "host time inside those calls"));
}

std::optional<double> SmallH2DPerStep(const TraceReport& r) {
  if (!HaveSteps(r)) return std::nullopt;
  return P50(r.steps, "small_h2d_copies");
}

std::optional<PageablePerStep> PageableStepCost(const TraceReport& r) {
  if (!HaveSteps(r)) return std::nullopt;
  const StepStats& s = r.steps;
  PageablePerStep p;
  p.steps = s.steps.size();
  p.steps_share = ShareOfSteps(s, [](const StepRow& st) { return st.pageable_copies > 0; });
  p.copies_p50 = P50(s, "pageable_copies");
  p.bytes_p50 = P50(s, "pageable_bytes");
  p.ns_p50 = P50(s, "pageable_ns");
  const double wall = SumOf(s, [](const StepRow& st) { return st.wall_ns; });
  p.time_share = wall > 0 ? SumOf(s, [](const StepRow& st) { return st.pageable_ns; }) / wall : 0;
  return p;
}

Severity PageableStepSeverity(const PageablePerStep& p, const TraceRuleOptions& o) {
  if (p.steps_share < o.per_step_share) return Severity::kInfo;   // not a per-step habit
  if (p.copies_p50 >= o.pageable_warn_per_step || p.bytes_p50 >= static_cast<double>(o.pageable_warn_bytes_per_step) ||
      p.time_share >= o.pageable_warn_share) {
    return Severity::kWarn;
  }
  return Severity::kInfo;
}

void AddPageableStepEvidence(const PageablePerStep& p, Finding& f) {
  f.evidence.push_back(Num("steps_with_pageable_copy", 100 * p.steps_share, "%", fmt::format("of {} steps", p.steps)));
  f.evidence.push_back(Num("pageable_copies_per_step", p.copies_p50, "", "median step"));
  f.evidence.push_back(Num("pageable_bytes_per_step", p.bytes_p50, "B", "median step"));
  f.evidence.push_back(Num("pageable_time_per_step", Us(p.ns_p50), "us", "device time, median step"));
  f.evidence.push_back(Num("pageable_share_of_step_time", 100 * p.time_share, "%"));
}

void StepRules(const TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out) {
  if (!HasHostRecords(r) && r.gpu_ops > 0) {
    // Class 6: a kernel-only trace. The checks that read the host side cannot run.
    for (const char* id : {"kernel.launch_overhead", "kernel.steady_state_sync", "kernel.steady_state_alloc",
                           "kernel.sync_every_step"}) {
      Finding f = Make(id, Severity::kSkip, "not checked: the trace has no host API records", "");
      f.evidence.push_back(Num("reason", std::nullopt, "",
                               "a kernel trace only (no runtime API calls): launches, synchronisations "
                               "and allocations are not in it; trace the API too (rocprofv3 "
                               "--hip-trace, nsys --trace=cuda)"));
      out.push_back(std::move(f));
    }
  }
  if (!HaveSteps(r)) return;
  if (r.steps.host_records) SyncEveryStep(r, o, out);
  PeriodicKernels(r, o, out);
  StepOutliers(r, o, out);
}

}  // namespace latdoc::rules
