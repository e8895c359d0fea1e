// Idle gaps per device and stream, split as HTA's get_idle_time_breakdown does
// (hta/analyzers/breakdown_analysis.py; trace-formats.md 6.2):
//   per stream, ops sorted by start; idle = next.start − prev.end when positive;
//   host_wait   if the next op's launch call began after prev ended (the host was late);
//   kernel_wait else if idle < kernel_wait_max_ns (HTA's consecutive_kernel_delay);
//   other       otherwise.
// Plus the largest gaps of each device (no op on any stream), with what the launching thread
// was doing on the CPU meanwhile: the evidence that the host is the bottleneck.
#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "trace/analysis/intervals.h"
#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {
namespace {

void DescribeHost(const Trace& trace, const AnalysisOptions& o, int64_t max_api_ns, IdleGap& g,
                  int64_t gs, int64_t ge, const GpuOp& next) {
  g.next_op = std::string(trace.Name(next.name));
  if (next.api == kNoLink) return;
  const ApiCall& launch = trace.api_calls[next.api];
  g.next_launch = std::string(trace.Name(launch.name));
  g.launch_tid = launch.tid;
  g.launch_wait_ns = launch.start_ns - gs;
  (void)o;
  // What the launching thread ran during [gs, ge): CPU ops and API calls.
  std::vector<Interval> busy;
  std::map<std::string, int64_t> by_name;
  auto take = [&](int64_t s, int64_t e, NameId name, bool count_name) {
    const int64_t a = std::max(s, gs), b = std::min(e, ge);
    if (a >= b) return;
    busy.push_back({a, b});
    if (count_name) by_name[std::string(trace.Name(name))] += b - a;
  };
  const auto lo = std::lower_bound(trace.cpu_ops.begin(), trace.cpu_ops.end(),
                                   std::make_tuple(launch.source, launch.pid, launch.tid),
                                   [](const CpuOp& c, const std::tuple<uint16_t, int32_t, int32_t>& k) {
                                     return std::make_tuple(c.source, c.pid, c.tid) < k;
                                   });
  for (auto it = lo; it != trace.cpu_ops.end() && it->source == launch.source &&
                     it->pid == launch.pid && it->tid == launch.tid && it->start_ns < ge;
       ++it) {
    if (it->kind == CpuOpKind::kOp) take(it->start_ns, it->end_ns(), it->name, true);
  }
  auto a = std::lower_bound(trace.api_calls.begin(), trace.api_calls.end(), gs - max_api_ns,
                            [](const ApiCall& c, int64_t t) { return c.start_ns < t; });
  for (; a != trace.api_calls.end() && a->start_ns < ge; ++a) {
    if (a->source == launch.source && a->pid == launch.pid && a->tid == launch.tid) {
      take(a->start_ns, a->end_ns(), a->name, true);
    }
  }
  g.cpu_busy_ns = TotalLength(MergeIntervals(std::move(busy)));
  std::vector<CpuActivity> top;
  for (auto& [name, ns] : by_name) top.push_back({name, ns});
  std::sort(top.begin(), top.end(), [](const CpuActivity& x, const CpuActivity& y) {
    return x.overlap_ns != y.overlap_ns ? x.overlap_ns > y.overlap_ns : x.name < y.name;
  });
  if (top.size() > 3) top.resize(3);
  g.cpu_top = std::move(top);
}

// A device-level gap: no op of the device runs in [start, end); `next` ends it.
struct GapCandidate {
  uint16_t source;
  int32_t device;
  int64_t start, end;
  uint32_t next;
};

// The ranking of the largest gaps: longer first, then earlier, then by file and device. A total
// order (one device's gaps start at different times), so which gaps make the cut and their
// order do not depend on the order they were found in or on the sort used.
bool Larger(const GapCandidate& a, const GapCandidate& b) {
  const int64_t la = a.end - a.start, lb = b.end - b.start;
  if (la != lb) return la > lb;
  if (a.start != b.start) return a.start < b.start;
  if (a.source != b.source) return a.source < b.source;
  return a.device < b.device;
}

// Every gap candidate, sorted by Larger.
std::vector<GapCandidate> AllGapsSorted(const Trace& trace) {
  std::map<std::pair<uint16_t, int32_t>, std::vector<uint32_t>> by_device;
  for (uint32_t i = 0; i < trace.gpu_ops.size(); ++i) {
    by_device[{trace.gpu_ops[i].source, trace.gpu_ops[i].device}].push_back(i);
  }
  std::vector<GapCandidate> gaps;
  for (const auto& [key, idx] : by_device) {
    int64_t cover_end = INT64_MIN;
    for (uint32_t i : idx) {
      const GpuOp& op = trace.gpu_ops[i];
      if (cover_end != INT64_MIN && op.start_ns > cover_end) {
        gaps.push_back({key.first, key.second, cover_end, op.start_ns, i});
      }
      cover_end = std::max(cover_end, op.end_ns());
    }
  }
  std::sort(gaps.begin(), gaps.end(), Larger);
  return gaps;
}

// The `keep` best candidates by Larger, as they come, in a heap with the worst kept on top.
class BestGaps {
 public:
  explicit BestGaps(size_t keep) : keep_(keep) {}
  void Add(const GapCandidate& c) {
    if (heap_.size() < keep_) {
      heap_.push_back(c);
      std::push_heap(heap_.begin(), heap_.end(), Larger);
    } else if (keep_ > 0 && Larger(c, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), Larger);
      heap_.back() = c;
      std::push_heap(heap_.begin(), heap_.end(), Larger);
    }
  }
  // The kept candidates, best first: exactly the first ones of AllGapsSorted(), Larger being a
  // total order.
  std::vector<GapCandidate> Sorted() {
    std::sort_heap(heap_.begin(), heap_.end(), Larger);
    return std::move(heap_);
  }

 private:
  size_t keep_;
  std::vector<GapCandidate> heap_;
};

// Key -> slot (0, 1, 2... in first-seen order) for per-stream and per-device state. Ops of
// one stream usually come in runs, so the last key is checked before the map.
template <typename Key>
class Slots {
 public:
  uint32_t Get(const Key& k) {
    if (last_ != kNone && k == last_key_) return last_;
    auto [it, inserted] = ids_.emplace(k, static_cast<uint32_t>(ids_.size()));
    last_key_ = k;
    last_ = it->second;
    return last_;
  }
  const std::map<Key, uint32_t>& by_key() const { return ids_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  std::map<Key, uint32_t> ids_;
  Key last_key_{};
  uint32_t last_ = kNone;
};

}  // namespace

IdleStats ComputeIdle(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns) {
  IdleStats s;
  // gpu_ops are sorted by start: one pass in that order walks every stream's and every
  // device's ops in start order, with a little state per stream and per device. Streams are
  // reported in key order.
  struct StreamState {
    StreamIdle st;
    const GpuOp* prev = nullptr;
    int64_t first_start = 0;
    int64_t last_end = INT64_MIN;
  };
  // The gaps reported are the first `largest_gaps` of AllGapsSorted(), kept here as they come
  // (all wanted, or very many: sorted after).
  const bool bounded = o.largest_gaps >= 0 && o.largest_gaps < 1024;
  BestGaps best(bounded ? static_cast<size_t>(o.largest_gaps) : 0);
  std::vector<int64_t> cover_end;   // per device slot: end of the ops so far
  Slots<std::tuple<uint16_t, int32_t, int32_t>> stream_slots;
  Slots<std::pair<uint16_t, int32_t>> device_slots;
  std::vector<StreamState> streams;
  for (uint32_t i = 0; i < trace.gpu_ops.size(); ++i) {
    const GpuOp& op = trace.gpu_ops[i];
    const uint32_t si = stream_slots.Get({op.source, op.device, op.stream});
    if (si == streams.size()) {
      streams.emplace_back();
      streams.back().st.source = op.source;
      streams.back().st.device = op.device;
      streams.back().st.stream = op.stream;
      streams.back().first_start = op.start_ns;
    }
    StreamState& ss = streams[si];
    StreamIdle& st = ss.st;
    ++st.ops;
    if (ss.prev != nullptr) {
      const GpuOp& prev = *ss.prev;
      const int64_t gap = op.start_ns - prev.end_ns();
      if (gap > 0) {
        const bool host_late =
            op.api != kNoLink && trace.api_calls[op.api].start_ns > prev.end_ns();
        if (host_late) {
          st.host_wait_ns += gap;
        } else if (gap < o.kernel_wait_max_ns) {
          st.kernel_wait_ns += gap;
        } else {
          st.other_ns += gap;
        }
      }
    }
    ss.prev = &op;
    ss.last_end = std::max(ss.last_end, op.end_ns());

    // Device-level gaps: between merged busy intervals of all the device's ops.
    const uint32_t di = device_slots.Get({op.source, op.device});
    if (di == cover_end.size()) cover_end.push_back(INT64_MIN);
    if (cover_end[di] != INT64_MIN && op.start_ns > cover_end[di]) {
      best.Add({op.source, op.device, cover_end[di], op.start_ns, i});
    }
    cover_end[di] = std::max(cover_end[di], op.end_ns());
  }
  for (const auto& [key, si] : stream_slots.by_key()) {
    StreamState& ss = streams[si];
    ss.st.span_ns = ss.last_end - ss.first_start;
    s.host_wait_ns += ss.st.host_wait_ns;
    s.kernel_wait_ns += ss.st.kernel_wait_ns;
    s.other_ns += ss.st.other_ns;
    s.streams.push_back(ss.st);
  }
  int64_t max_api_ns = 0;
  for (const ApiCall& a : trace.api_calls) max_api_ns = std::max(max_api_ns, a.dur_ns);
  const std::vector<GapCandidate> gaps = bounded ? best.Sorted() : AllGapsSorted(trace);
  for (size_t k = 0; k < gaps.size() && k < static_cast<size_t>(o.largest_gaps); ++k) {
    const GapCandidate& c = gaps[k];
    IdleGap g;
    g.source = c.source;
    g.device = c.device;
    g.at_ns = c.start - t0_ns;
    g.dur_ns = c.end - c.start;
    DescribeHost(trace, o, max_api_ns, g, c.start, c.end, trace.gpu_ops[c.next]);
    s.largest_gaps.push_back(std::move(g));
  }
  return s;
}

}  // namespace latdoc::trace
