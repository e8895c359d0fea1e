// Copy/compute overlap (RATELProf hidden_transfers: copies > 1e5 ns, share hidden under
// kernels) and cross-stream concurrency (time with kernels on ≥ 2 streams of a device at once;
// RATELProf concurrency, TraceLens overlapping_uids).
#include <algorithm>
#include <map>
#include <tuple>

#include "trace/analysis/intervals.h"
#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {

OverlapStats ComputeOverlap(const Trace& trace, const AnalysisOptions& o) {
  OverlapStats s;
  using DevKey = std::pair<uint16_t, int32_t>;
  // Sets built in gpu_ops order, so merged as they come. Ops of one stream come in runs: the
  // last builder used is tried before the maps (map nodes do not move).
  std::map<DevKey, std::map<int32_t, IntervalSetBuilder>> kernels;   // device -> stream
  std::map<DevKey, IntervalSetBuilder> copies;
  IntervalSetBuilder* last_kernels = nullptr;
  std::tuple<uint16_t, int32_t, int32_t> last_kernels_key;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    const DevKey key{op.source, op.device};
    if (op.kind == GpuOpKind::kMemcpy) {
      if (op.dur_ns >= o.overlap_min_copy_ns) copies[key].Add({op.start_ns, op.end_ns()});
    } else if (op.kind == GpuOpKind::kKernel) {
      const std::tuple<uint16_t, int32_t, int32_t> stream_key{op.source, op.device, op.stream};
      if (last_kernels == nullptr || stream_key != last_kernels_key) {
        last_kernels = &kernels[key][op.stream];
        last_kernels_key = stream_key;
      }
      last_kernels->Add({op.start_ns, op.end_ns()});
    }
  });
  std::vector<std::pair<int64_t, int>> edges, merged_edges;
  for (auto& [dev, streams] : kernels) {
    s.streams_with_kernels += static_cast<int64_t>(streams.size());
    s.max_streams_per_device = std::max(s.max_streams_per_device, static_cast<int>(streams.size()));
    IntervalSet busy;
    if (streams.size() == 1) {
      // One stream: its set is the device's, and never are two streams busy at once.
      busy = streams.begin()->second.Finish();
    } else {
      // Each stream's merged set gives its edges already in order; merging the streams' runs
      // pairwise sorts them all (ends (-1) before starts (+1) at equal times). A sweep over
      // them gives both the time with >= 2 streams busy and the device's busy set.
      edges.clear();
      std::vector<size_t> bounds{0};
      for (auto& [stream, builder] : streams) {
        for (const Interval& i : builder.Finish()) {
          edges.push_back({i.start_ns, +1});
          edges.push_back({i.end_ns, -1});
        }
        bounds.push_back(edges.size());
      }
      merged_edges.resize(edges.size());
      while (bounds.size() > 2) {
        std::vector<size_t> next{0};
        size_t k = 0;
        for (; k + 2 < bounds.size(); k += 2) {
          std::merge(edges.begin() + bounds[k], edges.begin() + bounds[k + 1],
                     edges.begin() + bounds[k + 1], edges.begin() + bounds[k + 2],
                     merged_edges.begin() + bounds[k]);
          next.push_back(bounds[k + 2]);
        }
        if (k + 1 < bounds.size()) {
          std::copy(edges.begin() + bounds[k], edges.begin() + bounds[k + 1],
                    merged_edges.begin() + bounds[k]);
          next.push_back(bounds[k + 1]);
        }
        edges.swap(merged_edges);
        bounds.swap(next);
      }
      // busy = the union of all streams' sets, touching intervals joined (MergeIntervals).
      int active = 0;
      int64_t since = 0;
      for (const auto& [t, d] : edges) {
        if (active >= 2) s.multi_stream_ns += t - since;
        if (active == 0 && d > 0) {
          if (!busy.empty() && busy.back().end_ns == t) {
            busy.back().end_ns = INT64_MIN;   // reopened; closed again below
          } else {
            busy.push_back({t, INT64_MIN});
          }
        }
        active += d;
        if (active == 0) busy.back().end_ns = t;
        since = t;
      }
    }
    s.kernel_busy_ns += TotalLength(busy);
    if (streams.size() >= 2) s.multi_stream_busy_ns += TotalLength(busy);
    auto c = copies.find(dev);
    if (c != copies.end()) {
      const IntervalSet copy_set = c->second.Finish();
      s.copy_ns += TotalLength(copy_set);
      s.copy_hidden_ns += TotalLength(Intersect(copy_set, busy));
      copies.erase(c);
    }
  }
  for (auto& [dev, builder] : copies) s.copy_ns += TotalLength(builder.Finish());
  if (s.copy_ns > 0) s.copy_hidden_share = static_cast<double>(s.copy_hidden_ns) / static_cast<double>(s.copy_ns);
  // Over the devices that have two streams or more: one stream of each of two GPUs (ranks, or
  // tensor parallelism in one file) is no serialisation.
  if (s.multi_stream_busy_ns > 0) {
    s.concurrency_share = static_cast<double>(s.multi_stream_ns) / static_cast<double>(s.multi_stream_busy_ns);
  }
  return s;
}

}  // namespace latdoc::trace
