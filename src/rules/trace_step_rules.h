// Trace rules that judge per step (trace/analysis/steps.cc's StepStats), and the helpers the
// whole-trace rules (trace_rules.cc) use to add per-step evidence or to stay silent about the
// host when the trace has no host records. Pure functions; thresholds in TraceRuleOptions.
#pragma once

#include <optional>
#include <vector>

#include "rules/finding.h"
#include "rules/trace_rules.h"
#include "trace/analysis/trace_report.h"

namespace latdoc::rules {

// True when the trace has host API records (launch calls): without them no rule may say
// anything about the host.
bool HasHostRecords(const trace::TraceReport& r);

// Adds the steps' idle split (p50 per step) to the GPU idle finding, when steps were found.
void AddStepIdleEvidence(const trace::TraceReport& r, Finding& f);

// Adds the steps' allocation calls (share of steps with one, calls and ms a step) to the
// steady-state allocation finding, when steps were found.
void AddAllocStepEvidence(const trace::TraceReport& r, Finding& f);

// Median small HtoD copies a step; nullopt without steps.
std::optional<double> SmallH2DPerStep(const trace::TraceReport& r);

// Pageable copies of the steps: in what share of the steps, and their median count, bytes and
// device time a step, and their device time over the steps' time.
struct PageablePerStep {
  double steps_share = 0;
  double copies_p50 = 0, bytes_p50 = 0, ns_p50 = 0;
  double time_share = 0;
  size_t steps = 0;
};
std::optional<PageablePerStep> PageableStepCost(const trace::TraceReport& r);
Severity PageableStepSeverity(const PageablePerStep& p, const TraceRuleOptions& o);
void AddPageableStepEvidence(const PageablePerStep& p, Finding& f);

// kernel.sync_every_step, kernel.periodic_heavy_kernel, kernel.step_outliers, and `skip` for
// the host-side checks of a trace without host records.
void StepRules(const trace::TraceReport& r, const TraceRuleOptions& o, std::vector<Finding>& out);

}  // namespace latdoc::rules
