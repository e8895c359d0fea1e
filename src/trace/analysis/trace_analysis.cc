#include "trace/analysis/trace_analysis.h"

#include <algorithm>
#include <future>
#include <optional>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "trace/analysis/ranks.h"
#include "trace/analysis/roofline.h"

namespace latdoc::trace {

int64_t TraceStartNs(const Trace& trace) {
  int64_t t0 = INT64_MAX;
  if (!trace.gpu_ops.empty()) t0 = std::min(t0, trace.gpu_ops.front().start_ns);
  if (!trace.api_calls.empty()) t0 = std::min(t0, trace.api_calls.front().start_ns);
  return t0 == INT64_MAX ? 0 : t0;
}

int64_t TraceSpanNs(const Trace& trace) {
  int64_t last = INT64_MIN;
  trace.gpu_ops.ForEach([&](const GpuOp& op) { last = std::max(last, op.end_ns()); });
  trace.api_calls.ForEach([&](const ApiCall& a) { last = std::max(last, a.end_ns()); });
  return last == INT64_MIN ? 0 : last - TraceStartNs(trace);
}

namespace {

// The trace's counts and span, and its formats (sorted, once each).
void FillHeader(const Trace& trace, TraceReport& r) {
  std::set<std::string> formats;
  for (const SourceFile& s : trace.sources) formats.insert(s.format);
  r.formats.assign(formats.begin(), formats.end());
  r.span_ns = TraceSpanNs(trace);
  r.gpu_ops = static_cast<int64_t>(trace.gpu_ops.size());
  r.api_calls = static_cast<int64_t>(trace.api_calls.size());
  r.cpu_ops = static_cast<int64_t>(trace.cpu_ops.size());
}

// Devices of all GPU ops; ops come in runs of one device, so a set lookup only on a change.
// Fills r.devices (those with ops; all of them when no op names one) and r.idle_devices.
std::set<std::pair<uint16_t, int32_t>> UsedDevices(const Trace& trace, TraceReport& r) {
  std::set<std::pair<uint16_t, int32_t>> used;  // (source, device)
  std::optional<std::pair<uint16_t, int32_t>> prev;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (prev && prev->first == op.source && prev->second == op.device) return;
    prev.emplace(op.source, op.device);
    used.insert(*prev);
  });
  for (const DeviceInfo& d : trace.devices) {
    if (used.empty() || used.count({d.source, d.device}) != 0) {
      r.devices.push_back(d);
    } else {
      ++r.idle_devices;
    }
  }
  return used;
}

// TraceLens's rule counts GPU ops with their launch in the trace. A file none of whose ops
// has one (a kernel-only format) has all its ops counted, as when it is read alone.
GpuTimelineOptions TimelineOptions(const Trace& trace, TraceReport& r) {
  GpuTimelineOptions tl;
  std::vector<bool> has_ops(trace.sources.size()), has_linked(trace.sources.size());
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (op.source >= has_ops.size()) {
      has_ops.resize(size_t{op.source} + 1);
      has_linked.resize(size_t{op.source} + 1);
    }
    has_ops[op.source] = true;
    if (op.linked()) has_linked[op.source] = true;
  });
  tl.all_ops_of_source.resize(has_ops.size());
  for (size_t s = 0; s < has_ops.size(); ++s) {
    tl.all_ops_of_source[s] = has_ops[s] && !has_linked[s];
    r.timeline_used_all_ops = r.timeline_used_all_ops || tl.all_ops_of_source[s];
  }
  return tl;
}

// With more than one device: r.per_device, one timeline per device, and r.devices_summed.
void PerDeviceTimelines(const Trace& trace, const GpuTimelineOptions& tl,
                        const std::set<std::pair<uint16_t, int32_t>>& used, TraceReport& r) {
  if (used.size() <= 1) return;
  GpuTimeline sum;
  for (const auto& [source, device] : used) {
    const GpuTimeline& d =
        r.per_device.emplace_back(ComputeGpuTimeline(trace, tl, SourceDevice{source, device}));
    sum.ops += d.ops;
    sum.ops_dropped_unlinked += d.ops_dropped_unlinked;
    sum.total_ns += d.total_ns;
    sum.busy_ns += d.busy_ns;
    sum.idle_ns += d.idle_ns;
    sum.computation_ns += d.computation_ns;
    sum.exposed_comm_ns += d.exposed_comm_ns;
    sum.exposed_memcpy_ns += d.exposed_memcpy_ns;
    sum.total_comm_ns += d.total_comm_ns;
    sum.total_memcpy_ns += d.total_memcpy_ns;
    sum.total_ms += d.total_ms;
    sum.busy_ms += d.busy_ms;
    sum.idle_ms += d.idle_ms;
    sum.computation_ms += d.computation_ms;
    sum.exposed_comm_ms += d.exposed_comm_ms;
    sum.exposed_memcpy_ms += d.exposed_memcpy_ms;
    sum.total_comm_ms += d.total_comm_ms;
    sum.total_memcpy_ms += d.total_memcpy_ms;
  }
  r.devices_summed = sum;
}

// The trace's own statistics tables (aggregate rows), longest total first.
void StatsTables(const Trace& trace, TraceReport& r) {
  for (const AggregateRow& a : trace.aggregates) {
    r.stats_tables.push_back(
        {std::string(trace.Name(a.name)), a.kind, a.calls, a.total_ns, a.min_ns, a.max_ns});
  }
  std::stable_sort(
      r.stats_tables.begin(), r.stats_tables.end(),
      [](const AggregateStat& a, const AggregateStat& b) { return a.total_ns > b.total_ns; });
}

}  // namespace

TraceReport Analyze(const Trace& trace, const AnalysisOptions& o) {
  TraceReport r;
  const int64_t t0 = TraceStartNs(trace);
  FillHeader(trace, r);

  // The analyses only read `trace` (and its string table), so half of them run on a second
  // thread, each half writing its own results. The split balances the two on large traces.
  // Without a second core (or thread), they run here, when get() is called.
  struct SideResults {
    IdleStats idle;
    LaunchStats launch;
    OverlapStats overlap;
  };
  const auto policy = std::thread::hardware_concurrency() > 1
                          ? std::launch::async | std::launch::deferred
                          : std::launch::deferred;
  // The steps on a thread of their own where there are cores for it: the steady state below
  // waits for them, the rest of this thread's analyses do not.
  const auto steps_policy = std::thread::hardware_concurrency() > 2
                                ? std::launch::async | std::launch::deferred
                                : std::launch::deferred;
  std::future<StepStats> steps = std::async(steps_policy, [&trace, &o, t0] { return ComputeSteps(trace, o, t0); });
  std::future<SideResults> side = std::async(policy, [&trace, &o, t0] {
    SideResults s;
    s.idle = ComputeIdle(trace, o, t0);
    s.launch = ComputeLaunch(trace, o);
    s.overlap = ComputeOverlap(trace, o);
    return s;
  });

  const std::set<std::pair<uint16_t, int32_t>> used = UsedDevices(trace, r);  // (source, device)
  const GpuTimelineOptions tl = TimelineOptions(trace, r);
  r.timeline = ComputeGpuTimeline(trace, tl);
  PerDeviceTimelines(trace, tl, used, r);
  r.all_ops_busy_ns = BusyOfAllOps(trace);
  ComputeKernelStats(trace, o, r.all_ops_busy_ns, t0, r);
  r.roofline = ComputeRoofline(trace, r.all_ops_busy_ns);
  ComputeRanks(trace, trace.sources, r);
  r.copies = ComputeCopyStats(trace, o);
  r.steps = steps.get();
  r.steady = ComputeSteadyState(trace, o, t0, r.steps);
  SideResults side_results = side.get();
  r.idle = std::move(side_results.idle);
  r.launch = std::move(side_results.launch);
  r.overlap = std::move(side_results.overlap);
  StatsTables(trace, r);
  return r;
}

namespace {

using nlohmann::json;

template <typename T>
json Opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json TimelineJson(const GpuTimeline& t) {
  json j;
  j["source"] = Opt(t.source);
  j["device"] = Opt(t.device);
  j["gpu_ops"] = t.ops;
  j["gpu_ops_dropped_unlinked"] = t.ops_dropped_unlinked;
  j["total_ms"] = t.total_ms;
  j["busy_ms"] = t.busy_ms;
  j["idle_ms"] = t.idle_ms;
  j["computation_ms"] = t.computation_ms;
  j["exposed_comm_ms"] = t.exposed_comm_ms;
  j["exposed_memcpy_ms"] = t.exposed_memcpy_ms;
  j["total_comm_ms"] = t.total_comm_ms;
  j["total_memcpy_ms"] = t.total_memcpy_ms;
  j["total_ns"] = t.total_ns;
  j["busy_ns"] = t.busy_ns;
  j["idle_ns"] = t.idle_ns;
  j["computation_ns"] = t.computation_ns;
  j["exposed_comm_ns"] = t.exposed_comm_ns;
  j["exposed_memcpy_ns"] = t.exposed_memcpy_ns;
  j["idle_pct"] = t.total_ns > 0 ? 100.0 * static_cast<double>(t.idle_ns) / static_cast<double>(t.total_ns) : 0.0;
  return j;
}

// The per-step table: `steps` (one object per step), their p50/p99 by column, the slowest
// steps with the kernels that made them slow, and the kernels that run every k-th step only.
template <typename Uses>
json StepsJson(const StepStats& s, Uses uses) {
  json j;
  j["method"] = StepMethodName(s.method);
  j["detail"] = s.detail;
  j["count"] = s.steps.size();
  if (s.method == StepMethod::kNone) return j;
  j["source"] = s.source;
  j["device"] = s.device;
  j["host_records"] = s.host_records;
  j["ops_outside"] = s.ops_outside;
  j["steady"] = {{"host_from_ns", s.host_from_ns}, {"host_to_ns", s.host_to_ns},
                 {"gpu_from_ns", s.gpu_from_ns}, {"gpu_to_ns", s.gpu_to_ns}};
  json q = json::object();
  for (const StepQuantile& x : s.quantiles) q[x.column] = {{"p50", x.p50}, {"p99", x.p99}};
  j["quantiles"] = q;
  json rows = json::array();
  for (const StepRow& st : s.steps) {
    rows.push_back({{"index", st.index}, {"at_ns", st.at_ns}, {"wall_ns", st.wall_ns},
                    {"gpu_busy_ns", st.gpu_busy_ns}, {"host_busy_ns", Opt(st.host_busy_ns)},
                    {"idle_host_late_ns", st.idle_host_late_ns}, {"idle_sync_ns", st.idle_sync_ns},
                    {"idle_kernel_wait_ns", st.idle_kernel_wait_ns}, {"idle_other_ns", st.idle_other_ns},
                    {"ops", st.ops}, {"kernels", st.kernels}, {"launches", st.launches},
                    {"copies", st.copies}, {"d2h_copies", st.d2h_copies}, {"syncs", st.syncs},
                    {"sync_wait_ns", st.sync_wait_ns}, {"allocs", st.allocs},
                    {"pageable_copies", st.pageable_copies}, {"pageable_bytes", st.pageable_bytes},
                    {"pageable_ns", st.pageable_ns}, {"small_h2d_copies", st.small_h2d_copies}});
  }
  j["table"] = std::move(rows);
  json slow = json::array();
  for (const SlowStep& x : s.slowest) {
    json k = json::array();
    for (const StepKernelExcess& e : x.kernels) {
      k.push_back({{"name", e.name}, {"ns", e.ns}, {"mean_ns_per_step", e.mean_ns_per_step}});
    }
    slow.push_back({{"index", x.index}, {"wall_ns", x.wall_ns}, {"ratio_to_median", x.ratio_to_median},
                    {"kernels", k}});
  }
  j["slowest"] = std::move(slow);
  json per = json::array();
  for (const PeriodicKernel& p : s.periodic) {
    per.push_back({{"name", p.name}, {"period_steps", p.period_steps}, {"first_step", p.first_step},
                   {"occurrences", p.occurrences}, {"count", p.count}, {"total_ns", p.total_ns}});
  }
  j["periodic_kernels"] = std::move(per);
  j["syncs"] = uses(s.syncs);
  j["allocs"] = uses(s.allocs);
  j["d2h_copy"] = s.d2h_copy.empty() ? json(nullptr) : json(s.d2h_copy);
  return j;
}

json DevicesJson(const std::vector<DeviceInfo>& devices) {
  json a = json::array();
  for (const DeviceInfo& d : devices) {
    a.push_back({{"source", d.source},
                 {"device", d.device},
                 {"name", d.name},
                 {"arch", d.arch.empty() ? json(nullptr) : json(d.arch)}});
  }
  return a;
}

// The hottest 100 kernels.
json KernelsJson(const TraceReport& r) {
  json a = json::array();
  for (size_t i = 0; i < r.hot_kernels.size() && i < 100; ++i) {
    const KernelStat& k = r.hot_kernels[i];
    a.push_back({{"name", k.name},
                 {"count", k.count},
                 {"total_ns", k.total_ns},
                 {"mean_ns", k.mean_ns},
                 {"p50_ns", k.p50_ns},
                 {"p99_ns", k.p99_ns},
                 {"max_ns", k.max_ns},
                 // No busy time (ops of no duration): no share, rather than 0%.
                 {"busy_share", r.all_ops_busy_ns > 0 ? json(k.busy_share) : json(nullptr)}});
  }
  return a;
}

json OutliersJson(const TraceReport& r) {
  json o = {
      {"count", r.outlier_count}, {"excess_ns", r.outlier_excess_ns}, {"instances", json::array()}};
  for (const OutlierInstance& x : r.outliers) {
    o["instances"].push_back({{"name", x.name},
                              {"source", x.source},
                              {"device", x.device},
                              {"stream", x.stream},
                              {"at_ns", x.at_ns},
                              {"dur_ns", x.dur_ns},
                              {"median_ns", x.median_ns}});
  }
  return o;
}

json CopiesJson(const CopyStats& copies) {
  json c;
  c["copies"] = copies.copies;
  c["copies_with_bytes"] = copies.copies_with_bytes;
  c["small_copies"] = copies.small_copies;
  c["small_copies_per_s"] = Opt(copies.small_copies_per_s);
  c["pageable_is_heuristic"] = copies.pageable_is_heuristic;
  c["memsets"] = copies.memsets;
  c["memset_ns"] = copies.memset_ns;
  c["by_direction"] = json::array();
  for (const CopyDirectionStat& d : copies.by_direction) {
    c["by_direction"].push_back({{"direction", CopyDirectionName(d.direction)}, {"count", d.count},
                                 {"total_ns", d.total_ns}, {"bytes", Opt(d.bytes)}, {"with_bytes", d.bytes_count},
                                 {"achieved_gbps", Opt(d.achieved_gbps)}, {"small", d.small_count},
                                 {"pageable", d.pageable_count}, {"pageable_ns", d.pageable_ns}, {"sync", d.sync_count},
                                 {"storm_runs", d.storm_runs}, {"longest_storm", d.longest_storm},
                                 {"small_per_s", Opt(d.small_per_s)}});
  }
  return c;
}

json IdleJson(const IdleStats& stats) {
  json idle;
  idle["host_wait_ns"] = stats.host_wait_ns;
  idle["kernel_wait_ns"] = stats.kernel_wait_ns;
  idle["other_ns"] = stats.other_ns;
  idle["streams"] = json::array();
  for (const StreamIdle& s : stats.streams) {
    idle["streams"].push_back({{"source", s.source}, {"device", s.device}, {"stream", s.stream},
                               {"ops", s.ops}, {"span_ns", s.span_ns}, {"host_wait_ns", s.host_wait_ns},
                               {"kernel_wait_ns", s.kernel_wait_ns}, {"other_ns", s.other_ns}});
  }
  idle["largest_gaps"] = json::array();
  for (const IdleGap& g : stats.largest_gaps) {
    json top = json::array();
    for (const CpuActivity& a : g.cpu_top) top.push_back({{"name", a.name}, {"overlap_ns", a.overlap_ns}});
    idle["largest_gaps"].push_back({{"source", g.source}, {"device", g.device}, {"at_ns", g.at_ns},
                                    {"dur_ns", g.dur_ns}, {"next_op", g.next_op},
                                    {"next_launch", Opt(g.next_launch)}, {"launch_tid", Opt(g.launch_tid)},
                                    {"launch_wait_ns", Opt(g.launch_wait_ns)},
                                    {"cpu_busy_ns", Opt(g.cpu_busy_ns)}, {"cpu_top", top}});
  }
  return idle;
}

json LaunchJson(const LaunchStats& l) {
  return {{"kernels", l.kernels},
          {"kernels_linked", l.kernels_linked},
          {"launch_calls", l.launch_calls},
          {"launches_per_s", Opt(l.launches_per_s)},
          {"delay_p50_ns", Opt(l.delay_p50_ns)},
          {"delay_p99_ns", Opt(l.delay_p99_ns)},
          {"delay_max_ns", Opt(l.delay_max_ns)},
          {"delays_rejected", l.delays_rejected},
          {"tiny_kernels", l.tiny_kernels},
          {"tiny_kernel_ns", l.tiny_kernel_ns_total},
          {"tiny_share", l.tiny_share},
          {"launch_bound_kernels", l.launch_bound_kernels},
          {"graph_launches", l.graph_launches},
          {"graph_kernels", l.graph_kernels},
          {"graph_first_node_p50_ns", Opt(l.graph_first_node_p50_ns)},
          {"launch_call_p50_ns", Opt(l.launch_call_p50_ns)}};
}

json UsesJson(const std::vector<ApiUse>& v) {
  json a = json::array();
  for (const ApiUse& u : v)
    a.push_back({{"name", u.name}, {"count", u.count}, {"total_ns", u.total_ns}});
  return a;
}

json SteadyStateJson(const SteadyStateApi& s) {
  return {{"from_ns", s.steady_from_ns},
          {"span_ns", s.steady_span_ns},
          {"sync_count", s.sync_count},
          {"sync_ns", s.sync_ns},
          {"alloc_count", s.alloc_count},
          {"alloc_ns", s.alloc_ns},
          {"sync_copy_count", s.sync_copy_count},
          {"syncs", UsesJson(s.syncs)},
          {"allocs", UsesJson(s.allocs)},
          {"to_ns", Opt(s.steady_to_ns)},
          {"basis", s.basis}};
}

json OverlapJson(const OverlapStats& ov) {
  return {{"copy_ns", ov.copy_ns},
          {"copy_hidden_ns", ov.copy_hidden_ns},
          {"copy_hidden_share", Opt(ov.copy_hidden_share)},
          {"kernel_busy_ns", ov.kernel_busy_ns},
          {"multi_stream_ns", ov.multi_stream_ns},
          {"multi_stream_busy_ns", ov.multi_stream_busy_ns},
          {"concurrency_share", Opt(ov.concurrency_share)},
          {"streams_with_kernels", ov.streams_with_kernels},
          {"max_streams_per_device", ov.max_streams_per_device}};
}

json BandwidthJson(const std::vector<BandwidthCheck>& checks) {
  json a = json::array();
  for (const BandwidthCheck& b : checks) {
    a.push_back({{"device", b.device},
                 {"gpu", b.gpu},
                 {"direction", CopyDirectionName(b.direction)},
                 {"achieved_gbps", b.achieved_gbps},
                 {"peak_gbps", b.peak_gbps},
                 {"peak_source", b.peak_source},
                 {"copies", b.copies}});
  }
  return a;
}

json StatsTablesJson(const std::vector<AggregateStat>& tables) {
  json a = json::array();
  for (const AggregateStat& s : tables) {
    static constexpr const char* kKinds[] = {"kernel", "api", "copy"};
    a.push_back({{"name", s.name},
                 {"kind", kKinds[static_cast<int>(s.kind)]},
                 {"calls", s.calls},
                 {"total_ns", s.total_ns},
                 {"min_ns", Opt(s.min_ns)},
                 {"max_ns", Opt(s.max_ns)}});
  }
  return a;
}

json PatternsJson(const std::vector<PatternHit>& patterns) {
  json a = json::array();
  for (const PatternHit& p : patterns) {
    a.push_back({{"pattern", p.pattern},
                 {"kernel", p.kernel},
                 {"count", p.count},
                 {"total_ns", p.total_ns},
                 {"arch", p.arch},
                 {"advice", p.advice},
                 {"source", p.source}});
  }
  return a;
}

}  // namespace

json ReportToJson(const TraceReport& r) {
  json j;
  j["formats"] = r.formats;
  j["span_ns"] = r.span_ns;
  j["gpu_ops"] = r.gpu_ops;
  j["api_calls"] = r.api_calls;
  j["cpu_ops"] = r.cpu_ops;
  j["devices"] = DevicesJson(r.devices);
  j["gpu_timeline"] = TimelineJson(r.timeline);
  j["gpu_timeline"]["all_ops_counted"] = r.timeline_used_all_ops;
  // What the findings judge with several devices or files; null with one (then gpu_timeline is it).
  j["gpu_timeline_devices_summed"] =
      r.devices_summed ? TimelineJson(*r.devices_summed) : json(nullptr);
  j["gpu_timeline_per_device"] = json::array();
  for (const GpuTimeline& t : r.per_device) j["gpu_timeline_per_device"].push_back(TimelineJson(t));
  j["kernels"] = KernelsJson(r);
  j["kernel_names"] = r.hot_kernels.size();
  j["all_ops_busy_ns"] = r.all_ops_busy_ns;
  j["outliers"] = OutliersJson(r);
  j["copies"] = CopiesJson(r.copies);
  j["idle"] = IdleJson(r.idle);
  j["launch"] = LaunchJson(r.launch);
  j["steady_state"] = SteadyStateJson(r.steady);
  j["steps"] = StepsJson(r.steps, UsesJson);
  j["overlap"] = OverlapJson(r.overlap);
  j["bandwidth"] = BandwidthJson(r.bandwidth);
  j["kernel_counters"] = {{"kernels", r.counter_kernels}, {"bytes", r.counter_bytes},
                          {"kernel_ns", r.counter_kernel_ns}, {"achieved_gbps", Opt(r.counter_gbps)}};
  j["roofline"] = RooflineToJson(r.roofline);
  j["ranks"] = RanksToJson(r.ranks);
  j["stats_tables"] = StatsTablesJson(r.stats_tables);
  j["kernel_patterns"] = PatternsJson(r.patterns);
  return j;
}

}  // namespace latdoc::trace
