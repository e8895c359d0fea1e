// The terminal summary of `latdoc trace`: inputs, GPU time breakdown, hot kernels, outliers,
// copies, idle gaps, launch overhead, steady-state syncs/allocations, overlap, bandwidth and
// known slow kernels. Pure: report in, text out. Values not reported print "n/a".
#pragma once

#include <string>
#include <vector>

#include "trace/analysis/analysis_options.h"
#include "trace/analysis/trace_report.h"
#include "trace/model/trace.h"

namespace latdoc::trace {

std::string RenderTraceSummary(const TraceReport& r, const std::vector<SourceFile>& sources,
                               const AnalysisOptions& o);

// The per-step part of the summary: how the steps were found, p50/p99 of step time and its
// parts, the slowest steps and the kernels that run every k-th step. One line when none.
std::string RenderStepSummary(const StepStats& s);

}  // namespace latdoc::trace
