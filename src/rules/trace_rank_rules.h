// Verdicts on several ranks of one job (trace::RankStats, analysis/ranks.h): the straggler,
// communication left exposed, and rank files that do not fit together. Thresholds in
// RankRuleOptions, documented in docs/trace-roofline.md.
#pragma once

#include <vector>

#include "rules/finding.h"
#include "trace/analysis/trace_report.h"

namespace latdoc::rules {

struct RankRuleOptions {
  // The others' wait for the usual straggler, as a share of their summed GPU windows: warn
  // from this share (below: info).
  double straggler_warn_share = 0.05;
  // Communication not hidden under compute, as a share of a rank's GPU window: warn from this.
  double exposed_comm_warn_share = 0.10;
};

// kernel.rank_straggler, kernel.rank_exposed_comm, kernel.rank_files_mismatch.
void RankRules(const trace::TraceReport& r, std::vector<Finding>& out, const RankRuleOptions& o = {});

}  // namespace latdoc::rules
