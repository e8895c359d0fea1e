// Launch overhead (HTA get_cuda_kernel_launch_stats, extended to hip* names and graphs) and
// synchronisations/allocations in the steady state.
#include <algorithm>
#include <map>
#include <optional>

#include "trace/analysis/quantile.h"
#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {
namespace {

// The API calls of one file that pass a filter: how many, first start, last end.
struct SourceSpan {
  int64_t calls = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
};

template <typename Keep>
std::vector<SourceSpan> PerSourceSpans(const Trace& trace, Keep keep) {
  std::vector<SourceSpan> spans(trace.sources.size());
  trace.api_calls.ForEach([&](const ApiCall& a) {
    if (!keep(a)) return;
    if (a.source >= spans.size()) spans.resize(size_t{a.source} + 1);
    SourceSpan& f = spans[a.source];
    ++f.calls;
    f.first = std::min(f.first, a.start_ns);
    f.last = std::max(f.last, a.end_ns());
  });
  return spans;
}

// A graph's nodes, by launch: its first node's start is the graph's launch delay.
struct GraphNode {
  uint32_t api;
  int64_t start_ns;
  int64_t launch_start_ns, launch_end_ns;
};

// Each graph launch's first node's delay after the launch, into graph_first.
void GraphFirstNodes(SpillTable<GraphNode>&& graph_nodes, const AnalysisOptions& o,
                     QuantileSample& graph_first) {
  // Each graph launch's nodes together (by launch), for their first start.
  std::optional<GraphNode> first;  // of the launch being read: its earliest node
  auto close = [&] {
    // As a kernel's launch delay: a first node before its launch call began, or later than
    // the plausible bound, is a clock mismatch and not counted.
    if (!first) return;
    const int64_t delay = first->start_ns - first->launch_end_ns;
    if (first->start_ns < first->launch_start_ns || delay > o.max_plausible_launch_delay_ns) return;
    graph_first.Add(std::max<int64_t>(0, delay));
  };
  SortTable(std::move(graph_nodes), [](const GraphNode& a, const GraphNode& b) {
    return a.api < b.api;
  }).ForEach([&](const GraphNode& n) {
    if (first && first->api == n.api) {
      first->start_ns = std::min(first->start_ns, n.start_ns);
      return;
    }
    close();
    first = n;
  });
  close();
}

}  // namespace

LaunchStats ComputeLaunch(const Trace& trace, const AnalysisOptions& o) {
  LaunchStats s;
  s.tiny_kernel_limit_ns = o.tiny_kernel_ns;
  QuantileSample delays(BlockRowsFor<int64_t>(trace)), call_durs(BlockRowsFor<int64_t>(trace)),
      graph_first(BlockRowsFor<int64_t>(trace));
  SpillTable<GraphNode> graph_nodes(BlockRowsFor<GraphNode>(trace));
  int64_t delay_max = INT64_MIN;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (op.kind != GpuOpKind::kKernel) return;
    ++s.kernels;
    const Launch* a = op.linked() ? &op.launch : nullptr;
    // Tiny kernels count among those launched one by one (a graph's nodes cost one launch).
    if (op.dur_ns < o.tiny_kernel_ns && (a == nullptr || a->kind != ApiKind::kGraphLaunch)) {
      ++s.tiny_kernels;
      s.tiny_kernel_ns_total += op.dur_ns;
    }
    if (a == nullptr) return;
    ++s.kernels_linked;
    if (a->kind == ApiKind::kGraphLaunch) {
      ++s.graph_kernels;
      graph_nodes.push_back({op.api, op.start_ns, a->start_ns, a->end_ns()});
      return;
    }
    if (a->dur_ns <= 50'000 && op.dur_ns < a->dur_ns) ++s.launch_bound_kernels;
    const int64_t delay = op.start_ns - a->end_ns();
    // A GPU start before its launch call began, or a delay over the plausible bound, is a
    // clock-domain mismatch (rocprof v1 DispatchNs vs BeginNs) and is not counted.
    if (op.start_ns < a->start_ns || delay > o.max_plausible_launch_delay_ns) {
      ++s.delays_rejected;
      return;
    }
    delays.Add(std::max<int64_t>(delay, 0));
    delay_max = std::max(delay_max, std::max<int64_t>(delay, 0));
  });
  std::vector<SourceSpan> launches = PerSourceSpans(trace, [](const ApiCall& a) {
    return a.kind == ApiKind::kKernelLaunch;
  });
  trace.api_calls.ForEach([&](const ApiCall& a) {
    if (a.kind == ApiKind::kGraphLaunch) ++s.graph_launches;
    if (a.kind != ApiKind::kKernelLaunch) return;
    ++s.launch_calls;
    call_durs.Add(a.dur_ns);
  });
  GraphFirstNodes(std::move(graph_nodes), o, graph_first);
  for (const SourceSpan& f : launches) {
    if (f.calls < 2 || f.last <= f.first) continue;
    const double rate = static_cast<double>(f.calls) * 1e9 / static_cast<double>(f.last - f.first);
    s.launches_per_s = std::max(s.launches_per_s.value_or(0), rate);
  }
  if (!delays.empty()) {
    s.delay_max_ns = static_cast<double>(delay_max);
    const std::vector<double> q = delays.Take({0.99, 0.5});
    s.delay_p99_ns = q[0];
    s.delay_p50_ns = q[1];
  }
  if (!call_durs.empty()) s.launch_call_p50_ns = call_durs.Take({0.5})[0];
  if (!graph_first.empty()) s.graph_first_node_p50_ns = graph_first.Take({0.5})[0];
  const int64_t one_by_one = s.kernels - s.graph_kernels;
  s.tiny_share = one_by_one > 0 ? static_cast<double>(s.tiny_kernels) / static_cast<double>(one_by_one) : 0;
  return s;
}

SteadyStateApi ComputeSteadyState(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns) {
  return ComputeSteadyState(trace, o, t0_ns, StepStats{});
}

SteadyStateApi ComputeSteadyState(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns,
                                  const StepStats& steps) {
  SteadyStateApi s;
  std::vector<SourceSpan> spans = PerSourceSpans(trace, [](const ApiCall&) { return true; });
  std::vector<int64_t> from(spans.size(), INT64_MAX);  // per source; INT64_MAX: no calls
  std::vector<int64_t> to(spans.size(), INT64_MAX);    // per source: the end of its steady state
  int64_t earliest = INT64_MAX;
  for (size_t i = 0; i < spans.size(); ++i) {
    const SourceSpan& f = spans[i];
    if (f.calls == 0) continue;
    if (steps.method != StepMethod::kNone && i == steps.source) {
      // The steps' file: its steady state is the steps' host window, no share guessed.
      from[i] = steps.host_from_ns + t0_ns;
      to[i] = steps.host_to_ns + t0_ns;
      s.steady_to_ns = steps.host_to_ns;
      s.basis = "steps";
    } else {
      from[i] = f.first + static_cast<int64_t>(o.warmup_share * static_cast<double>(f.last - f.first));
      to[i] = f.last;
    }
    earliest = std::min(earliest, from[i]);
    s.steady_span_ns += to[i] - from[i];
  }
  if (earliest == INT64_MAX) return s;
  s.steady_from_ns = earliest - t0_ns;
  std::map<NameId, ApiUse> syncs, allocs;
  trace.api_calls.ForEach([&](const ApiCall& a) {
    if (a.start_ns < from[a.source] || a.start_ns >= to[a.source]) return;
    if (a.kind == ApiKind::kMemcpy) ++s.sync_copy_count;
    std::map<NameId, ApiUse>* m = nullptr;
    if (a.kind == ApiKind::kSync) {
      m = &syncs;
      ++s.sync_count;
      s.sync_ns += a.dur_ns;
    } else if (a.kind == ApiKind::kMalloc || a.kind == ApiKind::kFree) {
      m = &allocs;
      ++s.alloc_count;
      s.alloc_ns += a.dur_ns;
    } else {
      return;
    }
    ApiUse& u = (*m)[a.name];
    u.name = std::string(trace.Name(a.name));
    ++u.count;
    u.total_ns += a.dur_ns;
  });
  auto flatten = [](std::map<NameId, ApiUse>& m) {
    std::vector<ApiUse> v;
    for (auto& [id, u] : m) v.push_back(u);
    std::sort(v.begin(), v.end(), [](const ApiUse& a, const ApiUse& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    return v;
  };
  s.syncs = flatten(syncs);
  s.allocs = flatten(allocs);
  return s;
}

}  // namespace latdoc::trace
