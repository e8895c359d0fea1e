// Runs every trace analysis over a finalized Trace and writes the result as JSON.
//
// Each analysis is a pure function of (Trace, AnalysisOptions); they are declared here so
// tests can run one alone. Definitions (HTA, TraceLens, RATELProf) are cited in each .cc.
#pragma once

#include <algorithm>
#include <cstddef>

#include <nlohmann/json_fwd.hpp>

#include "trace/analysis/analysis_options.h"
#include "trace/analysis/trace_report.h"
#include "trace/model/trace.h"

namespace latdoc::trace {

// Every analysis; `trace` must be finalized. Half of the analyses run on a second thread
// where there is a second core; both are done when Analyze returns.
TraceReport Analyze(const Trace& trace, const AnalysisOptions& options);

// Individual analyses (kernel_stats.cc, copy_stats.cc, idle_gaps.cc, launch_stats.cc,
// overlap.cc). `t0_ns` is the trace start that `_at_ns` offsets count from.
// Kernel shares are of `busy_ns`: BusyOfAllOps, as the totals count every kernel.
void ComputeKernelStats(const Trace& trace, const AnalysisOptions& o, int64_t busy_ns,
                        int64_t t0_ns, TraceReport& r);
// GPU busy time summed over the devices of every file, every GPU op counted (linked to a launch
// in the trace or not; the timeline counts TraceLens's subset).
int64_t BusyOfAllOps(const Trace& trace);
CopyStats ComputeCopyStats(const Trace& trace, const AnalysisOptions& o);
IdleStats ComputeIdle(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns);
LaunchStats ComputeLaunch(const Trace& trace, const AnalysisOptions& o);
SteadyStateApi ComputeSteadyState(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns);
// The same, with the steps' file's steady state taken from its steps when any were found.
SteadyStateApi ComputeSteadyState(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns,
                                  const StepStats& steps);
// The steps of the loop the trace recorded and their table (steps.cc).
StepStats ComputeSteps(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns);
OverlapStats ComputeOverlap(const Trace& trace, const AnalysisOptions& o);

// The first start among GPU ops and API calls (0 for an empty trace), and the span to the
// last end.
int64_t TraceStartNs(const Trace& trace);
int64_t TraceSpanNs(const Trace& trace);

// Rows per block for an analysis's own table of T: the bytes of one of the trace's blocks (small
// in tests that make the trace's blocks small, so that every pass reads its file).
template <typename T>
size_t BlockRowsFor(const Trace& trace) {
  return std::max<size_t>(trace.gpu_ops.block_rows() * sizeof(GpuOp) / sizeof(T), 1);
}

nlohmann::json ReportToJson(const TraceReport& r);

}  // namespace latdoc::trace
