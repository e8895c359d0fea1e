// Per-step analysis: finds the steps of a decode (or training) loop and measures each one.
//
// Plan:
//  1. The device: the (file, device) that ran the most GPU ops; steps are of its ops only.
//  2. Step windows, on the host clock, first of these that the trace has (≥ min_steps):
//     - the profiler's `ProfilerStep#N` ranges (PyTorch torch.profiler, prof.step());
//     - vLLM's model-runner ranges (names holding `execute_model`);
//     - else the cadence of the op sequence: N steps when ≥ cadence_coverage of the ops have a
//       name that ran a multiple of N times (the largest such N that some name ran exactly N
//       times); the name of count N met first opens each step (the anchor). When the file has
//       exactly N graph launches, the steps are the graph launches.
//     An op belongs to the window its launch call began in (its GPU start without one).
//  3. One pass over the device's ops in start order: per step its busy time, its idle gaps split
//     as HTA splits them (host late, kernel wait, other) plus `sync` (the launching thread had
//     just waited in a sync call), copies, pageable copies, and per kernel name the steps it ran
//     in (a name in every k-th step only is a periodic kernel).
//  4. One pass over the API calls of the file: per step launches, syncs (time waited), allocs.
//  5. One pass over the CPU ops: the launching thread's busy time per step, nested ops once.
//  6. A second pass over the ops for the kernels that made the slowest steps slow.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "base/strings.h"
#include "trace/analysis/intervals.h"
#include "trace/analysis/quantile.h"
#include "trace/analysis/steps_internal.h"
#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {

std::string_view StepMethodName(StepMethod m) {
  switch (m) {
    case StepMethod::kNone: return "none";
    case StepMethod::kProfilerStep: return "profiler_step";
    case StepMethod::kVllmRange: return "vllm_execute_model";
    case StepMethod::kGraphLaunch: return "graph_launch";
    case StepMethod::kCadence: return "cadence";
  }
  return "none";
}

std::optional<StepQuantile> StepStats::Quantile(std::string_view column) const {
  for (const StepQuantile& q : quantiles) {
    if (q.column == column) return q;
  }
  return std::nullopt;
}

namespace {

using namespace steps_internal;

// 1. The device with the most ops, and how often each name ran there.
void PickDevice(StepContext& c) {
  const Trace& trace = c.trace;
  StepStats& s = c.s;
  std::map<std::pair<uint16_t, int32_t>, int64_t> per_device;
  trace.gpu_ops.ForEach([&](const GpuOp& op) { ++per_device[{op.source, op.device}]; });
  const auto busiest = std::max_element(per_device.begin(), per_device.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
  s.source = busiest->first.first;
  s.device = busiest->first.second;
  c.name_count.assign(trace.names.size(), 0);
  int64_t device_linked = 0;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (!c.OnDevice(op)) return;
    ++c.name_count[op.name];
    ++c.device_ops;
    if (op.linked()) ++device_linked;
  });
  s.host_records = device_linked > 0;
}

// 2. Step windows: explicit ranges first (ProfilerStep#N, then execute_model); none when
// Sync calls of each thread, by start (API calls are sorted by start): the idle split looks
// up whether the launching thread had just waited in one.
using SyncsByThread = std::map<std::pair<int32_t, int32_t>, std::vector<Interval>>;
SyncsByThread SyncCalls(const Trace& trace, uint16_t source) {
  SyncsByThread syncs_by_thread;
  trace.api_calls.ForEach([&](const ApiCall& a) {
    if (a.source == source && (a.kind == ApiKind::kSync || a.kind == ApiKind::kMemcpy)) {
      syncs_by_thread[{a.pid, a.tid}].push_back({a.start_ns, a.end_ns()});
    }
  });
  return syncs_by_thread;
}

// Whether the thread of launch `l` had just waited in a sync call when the gap began.
bool WaitedInSync(const SyncsByThread& syncs_by_thread, const Launch& l, int64_t gap_start,
                  const AnalysisOptions& o) {
  auto it = syncs_by_thread.find({l.pid, l.tid});
  if (it == syncs_by_thread.end()) return false;
  const std::vector<Interval>& v = it->second;
  // The last sync that began before the gap (and before the launch); it must end at the gap's
  // start or after (within clock noise): the host was blocked until the GPU drained.
  auto after = std::upper_bound(v.begin(), v.end(), std::min(gap_start, l.start_ns),
                                [](int64_t t, const Interval& x) { return t < x.start_ns; });
  if (after == v.begin()) return false;
  const Interval& sync = *(after - 1);
  return sync.end_ns + o.sync_gap_tolerance_ns >= gap_start && sync.end_ns <= l.start_ns;
}

// The gap before `op` (no op of the device running since `device_cover`), split as HTA splits
// it, into step `g`.
void AddGap(StepRow& g, const GpuOp& op, int64_t device_cover, const SyncsByThread& syncs_by_thread,
            const AnalysisOptions& o) {
  const int64_t gap = op.start_ns - device_cover;
  if (!op.linked()) {
    g.idle_other_ns += gap;
  } else if (op.launch.start_ns > device_cover) {
    (WaitedInSync(syncs_by_thread, op.launch, device_cover, o) ? g.idle_sync_ns
                                                               : g.idle_host_late_ns) += gap;
  } else if (gap < o.kernel_wait_max_ns) {
    g.idle_kernel_wait_ns += gap;
  } else {
    g.idle_other_ns += gap;
  }
}

// Op `op` of step `i`: its step's counts and times, and its name's steps. `cover`: per step,
// the latest end of its ops so far.
void AddOp(StepContext& c, int i, const GpuOp& op, std::vector<int64_t>& cover) {
  const AnalysisOptions& o = c.o;
  const size_t k = static_cast<size_t>(i);
  StepRow& st = c.s.steps[k];
  ++st.ops;
  c.first_start[k] = std::min(c.first_start[k], op.start_ns);
  c.last_end[k] = std::max(c.last_end[k], op.end_ns());
  if (op.linked()) c.last_issue_end[k] = std::max(c.last_issue_end[k], op.launch.end_ns());
  st.gpu_busy_ns += std::max<int64_t>(0, op.end_ns() - std::max(op.start_ns, cover[k]));
  cover[k] = std::max(cover[k], op.end_ns());
  if (op.kind == GpuOpKind::kKernel) ++st.kernels;
  if (op.kind == GpuOpKind::kMemcpy) {
    ++st.copies;
    if (op.direction == CopyDirection::kHtoD && op.bytes >= 0 && op.bytes < o.small_copy_bytes)
      ++st.small_h2d_copies;
    if (op.direction == CopyDirection::kDtoH) {
      ++st.d2h_copies;
      ++c.d2h_names[op.name];
    }
    if (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable) {
      ++st.pageable_copies;
      st.pageable_ns += op.dur_ns;
      if (op.bytes > 0) st.pageable_bytes += op.bytes;
    }
  }
  NameSteps& ns = c.by_name[op.name];
  ns.kind = op.kind;
  ns.Add(i, op.dur_ns);
}

// 3. The ops, in start order: each into the step its issue falls in, each gap into the step
// of the op before it.
void ScanOps(StepContext& c) {
  const Trace& trace = c.trace;
  StepStats& s = c.s;
  const int n = static_cast<int>(c.windows.size());
  s.steps.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) s.steps[static_cast<size_t>(i)].index = i;
  c.first_start.assign(static_cast<size_t>(n), INT64_MAX);
  c.last_end.assign(static_cast<size_t>(n), INT64_MIN);
  c.last_issue_end.assign(static_cast<size_t>(n), INT64_MIN);
  std::vector<int64_t> cover(static_cast<size_t>(n), INT64_MIN);
  const SyncsByThread syncs_by_thread = SyncCalls(trace, s.source);
  int64_t device_cover = INT64_MIN;
  int64_t last_cap = -1;
  int prev_step = -1;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (!c.OnDevice(op)) return;
    const int64_t issue = IssueNs(op);
    int i = FindWindow(c.windows, issue);
    if (i == n - 1 && c.cadence_ops_per_step > 0) {
      // The open last step takes as many ops as the largest step before it: the rest is a tail.
      if (last_cap < 0) {
        last_cap = c.cadence_ops_per_step;
        for (int k = 0; k + 1 < n; ++k)
          last_cap = std::max(last_cap, s.steps[static_cast<size_t>(k)].ops);
      }
      if (s.steps.back().ops >= last_cap) i = -1;
    }
    // The gap before this op (no op of the device running) belongs to the step it falls in: the
    // step of the op before.
    if (device_cover != INT64_MIN && op.start_ns > device_cover && prev_step >= 0 && i >= 0) {
      AddGap(s.steps[static_cast<size_t>(prev_step)], op, device_cover, syncs_by_thread, c.o);
    }
    device_cover = device_cover == INT64_MIN ? op.end_ns() : std::max(device_cover, op.end_ns());
    if (i < 0) {
      ++s.ops_outside;
      return;
    }
    prev_step = i;
    AddOp(c, i, op, cover);
  });
}

// Steps that got no op (a range with no GPU work) are dropped, the others renumbered. False,
// with the steps cleared and s.detail saying why, when fewer than min_steps are left.
bool DropEmptySteps(StepContext& c) {
  StepStats& s = c.s;
  const int n = static_cast<int>(s.steps.size());
  std::vector<StepRow> kept;
  std::vector<Window> kept_windows;
  std::vector<int64_t> fs, le, lie;
  std::vector<int32_t> renumber(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (s.steps[k].ops == 0) continue;
    renumber[k] = static_cast<int32_t>(kept.size());
    kept.push_back(s.steps[k]);
    kept.back().index = renumber[k];
    kept_windows.push_back(c.windows[k]);
    fs.push_back(c.first_start[k]);
    le.push_back(c.last_end[k]);
    lie.push_back(c.last_issue_end[k]);
  }
  if (static_cast<int64_t>(kept.size()) < c.o.min_steps) {
    s.detail =
        "fewer than " + std::to_string(c.o.min_steps) + " steps with GPU work (" + s.detail + ")";
    s.method = StepMethod::kNone;
    s.steps.clear();
    return false;
  }
  for (auto& [id, ns] : c.by_name) {
    // Renumbering keeps the order; a stride measured across a dropped step is still judged on
    // kept numbers below only when no step was dropped.
    if (kept.size() != static_cast<size_t>(n)) ns.stride_ok = false;
  }
  s.steps = std::move(kept);
  c.windows = std::move(kept_windows);
  c.first_start = std::move(fs);
  c.last_end = std::move(le);
  c.last_issue_end = std::move(lie);
  return true;
}

// Each step's start and wall time, the GPU and host spans, and the open last window closed.
void SetStepTimes(StepContext& c, int64_t t0_ns) {
  StepStats& s = c.s;
  std::vector<Window>& windows = c.windows;
  const size_t m = s.steps.size();
  for (size_t k = 0; k < m; ++k) {
    StepRow& st = s.steps[k];
    st.at_ns = c.first_start[k] - t0_ns;
    st.wall_ns = (k + 1 < m ? c.first_start[k + 1] : c.last_end[k]) - c.first_start[k];
    if (windows[k].end_ns == INT64_MAX) {
      windows[k].end_ns = std::max(c.last_issue_end[k], windows[k].start_ns + 1);
    }
  }
  s.gpu_from_ns = c.first_start.front() - t0_ns;
  s.gpu_to_ns = *std::max_element(c.last_end.begin(), c.last_end.end()) - t0_ns;
  s.host_from_ns = windows.front().start_ns - t0_ns;
  s.host_to_ns = (s.method == StepMethod::kProfilerStep || s.method == StepMethod::kVllmRange
                      ? windows.back().end_ns
                      : std::max(c.last_issue_end.back(), windows.back().start_ns)) -
                 t0_ns;
  // The open last window ends with its last launch: what follows (a final synchronize) is not
  // part of the loop.
  windows.back().end_ns = s.host_to_ns + t0_ns;
}

// 4. API calls in the steps' host windows; the launching thread (most launches).
void ScanApiCalls(StepContext& c) {
  const Trace& trace = c.trace;
  StepStats& s = c.s;
  std::map<NameId, ApiUse> syncs, allocs;
  trace.api_calls.ForEach([&](const ApiCall& a) {
    if (a.source != s.source) return;
    const int i = FindWindow(c.windows, a.start_ns);
    if (i < 0) return;
    StepRow& st = s.steps[static_cast<size_t>(i)];
    std::map<NameId, ApiUse>* use = nullptr;
    switch (a.kind) {
      case ApiKind::kKernelLaunch:
      case ApiKind::kGraphLaunch:
        ++st.launches;
        ++c.launches_by_thread[{a.pid, a.tid}];
        break;
      case ApiKind::kSync:
      case ApiKind::kMemcpy:
        ++st.syncs;
        st.sync_wait_ns += a.dur_ns;
        use = &syncs;
        break;
      case ApiKind::kMalloc:
      case ApiKind::kFree:
        ++st.allocs;
        use = &allocs;
        break;
      default:
        break;
    }
    if (use != nullptr) {
      ApiUse& u = (*use)[a.name];
      if (u.count == 0) u.name = std::string(trace.Name(a.name));
      ++u.count;
      u.total_ns += a.dur_ns;
    }
  });
  auto flatten = [](std::map<NameId, ApiUse>& mp) {
    std::vector<ApiUse> v;
    for (auto& [id, u] : mp) v.push_back(u);
    std::sort(v.begin(), v.end(), [](const ApiUse& a, const ApiUse& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    return v;
  };
  s.syncs = flatten(syncs);
  s.allocs = flatten(allocs);
  if (!c.d2h_names.empty()) {
    const auto top =
        std::max_element(c.d2h_names.begin(), c.d2h_names.end(), [](const auto& a, const auto& b) {
          return a.second != b.second ? a.second < b.second : a.first > b.first;
        });
    s.d2h_copy = std::string(trace.Name(top->first));
  }
}

// 5. The launching thread's busy time per step: its CPU ops and API calls, merged (an op
// inside another counts once), clipped to each host window.
void HostBusy(StepContext& c) {
  if (c.launches_by_thread.empty()) return;
  const Trace& trace = c.trace;
  StepStats& s = c.s;
  const std::vector<Window>& windows = c.windows;
  const size_t m = s.steps.size();
  const auto main =
      std::max_element(c.launches_by_thread.begin(), c.launches_by_thread.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; })
          ->first;
  // Two builders: CPU ops come in file order (nearly by start, merged as they come), API
  // calls by start; a sort of everything at once was most of this analysis's time.
  IntervalSetBuilder cpu_busy, api_busy;
  const int64_t from = windows.front().start_ns, to = windows.back().end_ns;
  auto take = [&](IntervalSetBuilder& into, int32_t pid, int32_t tid, int64_t a, int64_t b) {
    if (std::tuple<int32_t, int32_t>{pid, tid} != main || b <= from || a >= to) return;
    into.Add({std::max(a, from), std::min(b, to)});
  };
  trace.cpu_ops.ForEach([&](const CpuOp& cpu) {
    if (cpu.source == s.source && cpu.kind == CpuOpKind::kOp)
      take(cpu_busy, cpu.pid, cpu.tid, cpu.start_ns, cpu.end_ns());
  });
  trace.api_calls.ForEach([&](const ApiCall& a) {
    if (a.source == s.source) take(api_busy, a.pid, a.tid, a.start_ns, a.end_ns());
  });
  for (StepRow& st : s.steps) st.host_busy_ns = 0;
  for (const Interval& iv : Unite(cpu_busy.Finish(), api_busy.Finish())) {
    // Every window the interval overlaps: from the last one that starts at or before it.
    auto first = std::upper_bound(windows.begin(), windows.end(), iv.start_ns,
                                  [](int64_t v, const Window& x) { return v < x.start_ns; });
    int i = first == windows.begin() ? 0 : static_cast<int>(first - windows.begin()) - 1;
    for (; i < static_cast<int>(m) && windows[static_cast<size_t>(i)].start_ns < iv.end_ns; ++i) {
      const Window& w = windows[static_cast<size_t>(i)];
      const int64_t a = std::max(iv.start_ns, w.start_ns), b = std::min(iv.end_ns, w.end_ns);
      if (b > a) *s.steps[static_cast<size_t>(i)].host_busy_ns += b - a;
    }
  }
}

// Quantiles of each column.
void ColumnQuantiles(StepStats& s) {
  const size_t m = s.steps.size();
  auto column = [&](const char* name, auto get) {
    std::vector<int64_t> v;
    v.reserve(m);
    for (const StepRow& st : s.steps) v.push_back(get(st));
    std::sort(v.begin(), v.end());
    s.quantiles.push_back({name, QuantileSorted(v, 0.5), QuantileSorted(v, 0.99)});
  };
  column("wall_ns", [](const StepRow& r) { return r.wall_ns; });
  column("gpu_busy_ns", [](const StepRow& r) { return r.gpu_busy_ns; });
  if (s.steps.front().host_busy_ns) column("host_busy_ns", [](const StepRow& r) { return r.host_busy_ns.value_or(0); });
  column("idle_host_late_ns", [](const StepRow& r) { return r.idle_host_late_ns; });
  column("idle_sync_ns", [](const StepRow& r) { return r.idle_sync_ns; });
  column("idle_kernel_wait_ns", [](const StepRow& r) { return r.idle_kernel_wait_ns; });
  column("idle_other_ns", [](const StepRow& r) { return r.idle_other_ns; });
  column("launches", [](const StepRow& r) { return r.launches; });
  column("kernels", [](const StepRow& r) { return r.kernels; });
  column("copies", [](const StepRow& r) { return r.copies; });
  column("d2h_copies", [](const StepRow& r) { return r.d2h_copies; });
  column("small_h2d_copies", [](const StepRow& r) { return r.small_h2d_copies; });
  column("pageable_copies", [](const StepRow& r) { return r.pageable_copies; });
  column("pageable_bytes", [](const StepRow& r) { return r.pageable_bytes; });
  column("pageable_ns", [](const StepRow& r) { return r.pageable_ns; });
  column("allocs", [](const StepRow& r) { return r.allocs; });
  column("syncs", [](const StepRow& r) { return r.syncs; });
  column("sync_wait_ns", [](const StepRow& r) { return r.sync_wait_ns; });
}

// Periodic kernels: in every k-th step only (k ≥ 2), at least twice.
void PeriodicKernels(StepContext& c) {
  StepStats& s = c.s;
  const size_t m = s.steps.size();
  for (const auto& [id, ns] : c.by_name) {
    if (ns.kind != GpuOpKind::kKernel || ns.steps < 2 || ns.stride < 2 || !ns.stride_ok) continue;
    // It must keep its period to the end: no step after its last one where it was due.
    if (ns.last + ns.stride < static_cast<int32_t>(m)) continue;
    s.periodic.push_back(
        {std::string(c.trace.Name(id)), ns.stride, ns.first, ns.steps, ns.count, ns.total_ns});
  }
  std::sort(s.periodic.begin(), s.periodic.end(), [](const PeriodicKernel& a, const PeriodicKernel& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (s.periodic.size() > 3) s.periodic.resize(3);
}

// 6. The slowest steps, and the kernels whose time there most exceeds their mean per step.
void SlowestSteps(StepContext& c) {
  const Trace& trace = c.trace;
  StepStats& s = c.s;
  const size_t m = s.steps.size();
  std::vector<size_t> order(m);
  for (size_t k = 0; k < m; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return s.steps[a].wall_ns != s.steps[b].wall_ns ? s.steps[a].wall_ns > s.steps[b].wall_ns : a < b;
  });
  const double median_wall = s.quantiles.front().p50;
  std::map<size_t, std::unordered_map<NameId, int64_t>> slow;
  for (size_t r = 0; r < order.size() && r < 3; ++r) slow[order[r]];
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (!c.OnDevice(op)) return;
    const int i = FindWindow(c.windows, IssueNs(op));
    if (i < 0) return;
    auto it = slow.find(static_cast<size_t>(i));
    if (it != slow.end()) it->second[op.name] += op.dur_ns;
  });
  for (size_t r = 0; r < order.size() && r < 3; ++r) {
    const size_t k = order[r];
    SlowStep ss;
    ss.index = static_cast<int32_t>(k);
    ss.wall_ns = s.steps[k].wall_ns;
    ss.ratio_to_median = median_wall > 0 ? static_cast<double>(ss.wall_ns) / median_wall : 0;
    for (const auto& [id, ns] : slow[k]) {
      const double mean = static_cast<double>(c.by_name[id].total_ns) / static_cast<double>(m);
      // Only what explains a part of the step's time over the median (≥ 5%, ≥ 1 us): the
      // noise of every kernel is not a cause.
      const double floor = std::max(1000.0, 0.05 * (static_cast<double>(ss.wall_ns) - median_wall));
      if (static_cast<double>(ns) - mean >= floor) ss.kernels.push_back({std::string(trace.Name(id)), ns, mean});
    }
    std::sort(ss.kernels.begin(), ss.kernels.end(), [](const StepKernelExcess& a, const StepKernelExcess& b) {
      const double ea = static_cast<double>(a.ns) - a.mean_ns_per_step, eb = static_cast<double>(b.ns) - b.mean_ns_per_step;
      return ea != eb ? ea > eb : a.name < b.name;
    });
    if (ss.kernels.size() > 3) ss.kernels.resize(3);
    s.slowest.push_back(std::move(ss));
  }
}

}  // namespace

StepStats ComputeSteps(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns) {
  StepStats s;
  if (trace.gpu_ops.empty()) {
    s.detail = "no GPU ops";
    return s;
  }
  StepContext c(trace, o, s);
  PickDevice(c);
  c.windows = RangeWindows(c);
  if (c.windows.empty() && !CadenceWindows(c)) return s;
  ScanOps(c);
  if (!DropEmptySteps(c)) return s;
  SetStepTimes(c, t0_ns);
  ScanApiCalls(c);
  HostBusy(c);
  ColumnQuantiles(s);
  PeriodicKernels(c);
  SlowestSteps(c);
  return s;
}

}  // namespace latdoc::trace
