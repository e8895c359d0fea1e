// Rules over trace facts (trace/analysis/trace_report.h): pure functions from a TraceReport to
// findings, each with a stable id `kernel.*`, evidence in ms/%/GB/s and the change to try.
// Thresholds are in TraceRuleOptions with their defaults and reasons.
#pragma once

#include <vector>

#include "rules/finding.h"
#include "trace/analysis/trace_report.h"

namespace latdoc::rules {

// Every severity threshold of the trace rules (trace_rules.cc, trace_step_rules.cc), in one
// place. docs/trace-verdicts.md gives each one's reason and source; keep the two in step.
struct TraceRuleOptions {
  // GPU idle.
  double idle_warn_share = 0.10;       // GPU idle share of the GPU window: warn
  double idle_fail_share = 0.30;       // ... fail
  double host_bound_share = 0.5;       // host-late share of stream idle that names the host
  double kernel_gap_share = 0.5;       // kernel-wait share of stream idle: the GPU's own gaps (info)
  // Kernels.
  double hot_kernel_share = 0.25;      // one kernel name above this share of busy time (info)
  double outlier_warn_share = 0.01;    // outlier instances' excess above this share of busy: warn
  double pattern_warn_share = 0.05;    // a known slow kernel whose condition the trace shows, above this share of busy: warn
  // Copies.
  int64_t small_h2d_min_count = 10;    // small HtoD copies needed to call it a pattern
  double small_h2d_min_per_s = 100;    // ... at this rate, or in back-to-back storms
  double small_h2d_warn_per_step = 2;  // with steps: warn from this many small HtoD copies a step
  double exposed_memcpy_share = 0.05;
  double low_bandwidth_share = 0.25;   // achieved / peak below this...
  int64_t low_bandwidth_min_avg_bytes = 1 << 20;   // ...for copies averaging ≥ 1 MiB
  // Pageable copies warn from this many, or from this share of the GPU window in device time;
  // steady-state synchronous copy calls from this many. Fewer (a one-off, a 1-byte copy in a
  // long trace) are info: worth knowing, not worth the change.
  int64_t copy_warn_count = 10;
  double pageable_warn_share = 0.01;
  // With steps: pageable copies in most steps warn from this many a step, or this many bytes a
  // step, or the share above of step time; one tiny copy a step (a position id) is info.
  double pageable_warn_per_step = 2;
  int64_t pageable_warn_bytes_per_step = 4096;
  // Launch.
  double tiny_kernel_share = 0.5;      // eager launch of mostly tiny kernels
  int64_t tiny_kernel_min_count = 100;
  // Steady state.
  double sync_warn_share = 0.05;       // steady-state sync time above this share of the span (no steps found)...
  int64_t sync_warn_min_count = 10;    // ...from this many syncs (fewer: one-offs, info)
  // Steps (trace_step_rules.cc).
  double per_step_share = 0.5;         // "every step": in at least this share of the steps
  double step_sync_warn_share = 0.05;  // GPU idle after syncs / step time: warn
  double step_sync_fail_share = 0.25;  // ... fail
  double step_spike_ratio = 1.5;       // p99 / median step time from which a periodic kernel warns
  double periodic_min_gpu_share = 0.10;   // a periodic kernel's share of the steps' GPU busy time to report it
  double step_outlier_factor = 2.0;    // a step this many times the median step is an outlier
  double step_outlier_warn_share = 0.05;  // outliers' excess above this share of the steps' time: warn
  // Streams.
  double concurrency_low_share = 0.05; // kernels on ≥ 2 streams concurrent below this share (info)
  double copies_hidden_low_share = 0.5;   // long copies hidden under compute below this share (info)
};

// Puts the knowledge tables against the report: bandwidth checks from GpuSpecs() and
// kernel-pattern hits from KernelPatterns(). Pure: fills r.bandwidth and r.patterns.
void AddKnowledgeFacts(trace::TraceReport& r);

// Every trace rule; order is not ranking (call RankFindings).
std::vector<Finding> EvaluateTraceRules(const trace::TraceReport& r, const TraceRuleOptions& o);

}  // namespace latdoc::rules
