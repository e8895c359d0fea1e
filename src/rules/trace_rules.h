// Rules over trace facts (trace/analysis/trace_report.h): pure functions from a TraceReport to
// findings, each with a stable id `kernel.*`, evidence in ms/%/GB/s and the change to try.
// Thresholds are in TraceRuleOptions with their defaults and reasons.
#pragma once

#include <vector>

#include "rules/finding.h"
#include "trace/analysis/trace_report.h"

namespace latdoc::rules {

struct TraceRuleOptions {
  double idle_warn_share = 0.10;       // GPU idle share of the GPU window: warn
  double idle_fail_share = 0.30;       // ... fail
  double hot_kernel_share = 0.25;      // one kernel name above this share of busy time
  int64_t small_h2d_min_count = 10;    // small HtoD copies needed to call it a pattern
  double small_h2d_min_per_s = 100;    // ... at this rate, or in back-to-back storms
  double tiny_kernel_share = 0.5;      // eager launch of mostly tiny kernels
  int64_t tiny_kernel_min_count = 100;
  double exposed_memcpy_share = 0.05;
  double low_bandwidth_share = 0.25;   // achieved / peak below this...
  int64_t low_bandwidth_min_avg_bytes = 1 << 20;   // ...for copies averaging ≥ 1 MiB
  double pattern_warn_share = 0.05;    // a known slow kernel above this share of busy: warn
  double sync_warn_share = 0.05;       // steady-state sync time above this share of the span
  // Pageable copies warn from this many, or from this share of the GPU window in device time;
  // steady-state synchronous copy calls from this many. Fewer (a one-off, a 1-byte copy in a
  // long trace) are info: worth knowing, not worth the change.
  int64_t copy_warn_count = 10;
  double pageable_warn_share = 0.01;
};

// Puts the knowledge tables against the report: bandwidth checks from GpuSpecs() and
// kernel-pattern hits from KernelPatterns(). Pure: fills r.bandwidth and r.patterns.
void AddKnowledgeFacts(trace::TraceReport& r);

// Every trace rule; order is not ranking (call RankFindings).
std::vector<Finding> EvaluateTraceRules(const trace::TraceReport& r, const TraceRuleOptions& o);

}  // namespace latdoc::rules
