#include "rules/trace_rank_rules.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "rules/trace_rules_internal.h"

namespace latdoc::rules {
namespace {

using trace_internal::Make;
using trace_internal::Num;

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// Rank files that do not fit together (different runs or steps).
void RankFilesMismatchRule(const trace::TraceReport& r, std::vector<Finding>& out) {
  const trace::RankStats& rs = r.ranks;
  if (!rs.problems.empty()) {
    Finding f = Make("kernel.rank_files_mismatch", Severity::kWarn,
                     fmt::format("The rank files do not fit together: {}", rs.problems.front()),
                     "give one trace per rank of the same run, profiled over the same steps (the same "
                     "torch.profiler schedule on every rank)");
    for (size_t i = 0; i < rs.problems.size() && i < 5; ++i) {
      f.evidence.push_back(Num(fmt::format("problem_{}", i + 1), std::nullopt, "", rs.problems[i]));
    }
    out.push_back(std::move(f));
  }
}

// The rank the others wait for in collectives: one usual straggler, or waits spread over all.
// `window_ns`: the ranks' GPU windows summed.
void RankStragglerRule(const trace::TraceReport& r, std::vector<Finding>& out,
                       const RankRuleOptions& o, int64_t window_ns) {
  const trace::RankStats& rs = r.ranks;
  if (rs.usual_straggler) {
    const trace::RankInfo& s = rs.ranks[*rs.usual_straggler];
    int64_t others_window = 0;
    for (size_t i = 0; i < rs.ranks.size(); ++i) {
      if (i != *rs.usual_straggler) others_window += rs.ranks[i].total_ns;
    }
    const double share = others_window > 0 ? static_cast<double>(s.caused_wait_ns) / static_cast<double>(others_window) : 0;
    // Files that are not one job's ranks (kernel.rank_files_mismatch) cannot convict a rank.
    Finding f = Make("kernel.rank_straggler",
                     share >= o.straggler_warn_share && !rs.files_conflict ? Severity::kWarn : Severity::kInfo,
                     fmt::format("{} is the straggler: last into {} of {} collectives with a straggler; the other ranks "
                                 "wait {:.2f} ms for it ({:.1f}% of their GPU time){}",
                                 s.label, s.straggler_count, rs.collectives_with_straggler, Ms(s.caused_wait_ns), 100 * share,
                                 rs.files_conflict ? "; but the rank files do not fit together" : ""),
                     "the same rank late every time points at that GPU's host side: its CPU cores and NUMA node "
                     "(taskset/numactl binding of that rank's process), its PCIe link (lspci -vv: width and speed), "
                     "clocks and power of that GPU, or more work on that rank (uneven sharding)");
    f.evidence.push_back(Num("straggler", std::nullopt, "", s.label));
    f.evidence.push_back(Num("last_into", 100 * rs.usual_share, "%", "of the collectives with a straggler"));
    f.evidence.push_back(Num("others_wait", Ms(s.caused_wait_ns), "ms"));
    if (s.straggler_count > 0) {
      f.evidence.push_back(Num("wait_per_collective", Ms(s.caused_wait_ns) * 1e3 / static_cast<double>(s.straggler_count), "us",
                               "summed over the other ranks"));
    }
    f.evidence.push_back(Num("collectives_aligned", static_cast<double>(rs.collectives_aligned), ""));
    f.evidence.push_back(Num("method", std::nullopt, "",
                             "aligned by collective order; a rank's wait is its collective kernel's duration above "
                             "the shortest one's (clock-free)"));
    if (window_ns > 0) f.latency_share = std::min(1.0, static_cast<double>(s.caused_wait_ns) / static_cast<double>(window_ns));
    out.push_back(std::move(f));
  } else if (rs.collectives_with_straggler > 0) {
    const double share = window_ns > 0 ? static_cast<double>(rs.total_wait_ns) / static_cast<double>(window_ns) : 0;
    Finding f = Make("kernel.rank_straggler", Severity::kInfo,
                     fmt::format("Ranks wait for each other in {} of {} collectives, but no one rank is always last "
                                 "({:.2f} ms of waiting, {:.1f}% of GPU time)",
                                 rs.collectives_with_straggler, rs.collectives_aligned, Ms(rs.total_wait_ns), 100 * share),
                     "a changing straggler is load imbalance or jitter (host scheduling, uneven batches), not one bad GPU");
    f.evidence.push_back(Num("total_wait", Ms(rs.total_wait_ns), "ms"));
    out.push_back(std::move(f));
  }
}

// The rank with the most communication not hidden under compute, waits for a straggler excluded.
void RankExposedCommRule(const trace::TraceReport& r, std::vector<Finding>& out,
                         const RankRuleOptions& o) {
  const trace::RankStats& rs = r.ranks;
  // Communication not hidden: its part that is waiting for a straggler is the straggler's
  // finding; what is left is the transfer itself.
  const trace::RankInfo* worst = nullptr;
  double worst_share = 0;
  for (const auto& x : rs.ranks) {
    if (x.total_ns <= 0) continue;
    const int64_t transfer = std::max<int64_t>(0, x.exposed_comm_ns - x.waited_ns);
    const double share = static_cast<double>(transfer) / static_cast<double>(x.total_ns);
    if (worst == nullptr || share > worst_share) {
      worst = &x;
      worst_share = share;
    }
  }
  if (worst != nullptr && worst_share >= o.exposed_comm_warn_share) {
    Finding f = Make("kernel.rank_exposed_comm", Severity::kWarn,
                     fmt::format("{:.1f}% of {}'s GPU time is communication not hidden under compute (waits for a "
                                 "straggler excluded)",
                                 100 * worst_share, worst->label),
                     "overlap communication with compute (async collectives, sequence/tensor-parallel overlap in the "
                     "serving engine), or use fewer ranks for a model this size");
    for (const auto& x : rs.ranks) {
      f.evidence.push_back(Num(x.label, Ms(x.exposed_comm_ns), "ms",
                               fmt::format("exposed of {:.3f} ms communication; waited {:.3f} ms; window {:.3f} ms",
                                           Ms(x.total_comm_ns), Ms(x.waited_ns), Ms(x.total_ns))));
    }
    f.latency_share = worst_share;
    out.push_back(std::move(f));
  }
}

}  // namespace

void RankRules(const trace::TraceReport& r, std::vector<Finding>& out, const RankRuleOptions& o) {
  const trace::RankStats& rs = r.ranks;
  if (rs.ranks.empty()) return;
  RankFilesMismatchRule(r, out);
  int64_t window_ns = 0;
  for (const auto& x : rs.ranks) window_ns += x.total_ns;
  RankStragglerRule(r, out, o, window_ns);
  RankExposedCommRule(r, out, o);
}

}  // namespace latdoc::rules
