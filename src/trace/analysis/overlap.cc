// Copy/compute overlap (RATELProf hidden_transfers: copies > 1e5 ns, share hidden under
// kernels) and cross-stream concurrency (time with kernels on ≥ 2 streams of a device at once;
// RATELProf concurrency, TraceLens overlapping_uids).
#include <algorithm>
#include <map>

#include "trace/analysis/intervals.h"
#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {

OverlapStats ComputeOverlap(const Trace& trace, const AnalysisOptions& o) {
  OverlapStats s;
  using DevKey = std::pair<uint16_t, int32_t>;
  std::map<DevKey, std::map<int32_t, std::vector<Interval>>> kernels;   // device -> stream
  std::map<DevKey, std::vector<Interval>> copies;
  for (const GpuOp& op : trace.gpu_ops) {
    const DevKey key{op.source, op.device};
    if (op.kind == GpuOpKind::kMemcpy) {
      if (op.dur_ns >= o.overlap_min_copy_ns) copies[key].push_back({op.start_ns, op.end_ns()});
    } else if (op.kind == GpuOpKind::kKernel) {
      kernels[key][op.stream].push_back({op.start_ns, op.end_ns()});
    }
  }
  for (auto& [dev, streams] : kernels) {
    std::vector<Interval> all;
    std::vector<std::pair<int64_t, int>> edges;
    for (auto& [stream, ivs] : streams) {
      ++s.streams_with_kernels;
      const IntervalSet merged = MergeIntervals(ivs);
      for (const Interval& i : merged) {
        edges.push_back({i.start_ns, +1});
        edges.push_back({i.end_ns, -1});
        all.push_back(i);
      }
    }
    const IntervalSet busy = MergeIntervals(std::move(all));
    s.kernel_busy_ns += TotalLength(busy);
    std::sort(edges.begin(), edges.end());   // ends (-1) before starts (+1) at equal times
    int active = 0;
    int64_t since = 0;
    for (const auto& [t, d] : edges) {
      if (active >= 2) s.multi_stream_ns += t - since;
      active += d;
      since = t;
    }
    auto c = copies.find(dev);
    if (c != copies.end()) {
      const IntervalSet copy_set = MergeIntervals(c->second);
      s.copy_ns += TotalLength(copy_set);
      s.copy_hidden_ns += TotalLength(Intersect(copy_set, busy));
      copies.erase(c);
    }
  }
  for (auto& [dev, ivs] : copies) s.copy_ns += TotalLength(MergeIntervals(ivs));
  if (s.copy_ns > 0) s.copy_hidden_share = static_cast<double>(s.copy_hidden_ns) / static_cast<double>(s.copy_ns);
  if (s.kernel_busy_ns > 0) {
    s.concurrency_share = static_cast<double>(s.multi_stream_ns) / static_cast<double>(s.kernel_busy_ns);
  }
  return s;
}

}  // namespace latdoc::trace
