// Roofline verdicts: puts each kernel family of trace::RooflineStats against its GPU's peaks
// (gpu_specs.h) and judges it. Every threshold is in RooflineRuleOptions, documented with its
// reason in docs/trace-roofline.md.
//
// Honesty rules: a rate above a datasheet peak is a data problem (wrong times, counters or
// shapes; or, for bytes counted from shapes, data served from cache), never a result; a GPU
// without a row in the table gets its achieved rates and a `skip` saying so; a kernel family
// whose FLOPs are unknown is judged on bandwidth alone.
#pragma once

#include <vector>

#include "rules/finding.h"
#include "trace/analysis/trace_report.h"

namespace latdoc::rules {

struct RooflineRuleOptions {
  // A rate above peak x this is impossible (timestamps round to 1 ns and datasheet peaks are
  // theoretical: a few percent is left for rounding, no more).
  double impossible_margin = 1.05;
  // A hot family (≥ hot_share of GPU busy time, mean instance ≥ min_mean_ns: shorter kernels are
  // bound by launch and tail latency, not by a roof) below low_roof_share of its roof warns.
  double hot_share = 0.20;
  double low_roof_share = 0.20;
  int64_t min_mean_ns = 50'000;
};

// Fills the peaks, ridge point, bound, share of the roof and impossibility of each family of
// r.roofline, and r.roofline.gpu_not_in_table. Pure. Called by AddKnowledgeFacts.
void AddRooflineFacts(trace::TraceReport& r, const RooflineRuleOptions& o = {});

// kernel.roofline (info: the hot families on the roofline), kernel.roofline_low (warn: a hot
// family far under its roof), kernel.rate_above_peak (warn: impossible rates, kernels or
// copies), kernel.roofline_gpu_unknown (skip).
void RooflineRules(const trace::TraceReport& r, std::vector<Finding>& out, const RooflineRuleOptions& o = {});

}  // namespace latdoc::rules
