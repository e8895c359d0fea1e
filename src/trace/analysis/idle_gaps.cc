// Idle gaps per device and stream, split as HTA's get_idle_time_breakdown does
// (facebookresearch/HolisticTraceAnalysis@f4d0062 hta/analyzers/breakdown_analysis.py):
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

using ThreadKey = std::tuple<uint16_t, int32_t, int32_t>;  // (source, pid, tid)

// What the launching threads ran during the largest gaps: CPU ops and API calls on the thread
// that launched the op ending each gap. CPU ops come from one pass over the table, in the order
// they were added (it may be on disk); API calls from their sorted table.
class HostDuringGaps {
 public:
  // Adds the gap [gs, ge) of result `g`, whose launch call (in file `source`) is `launch`.
  void Add(IdleGap* g, int64_t gs, int64_t ge, uint16_t source, const Launch& launch) {
    Window w{gs, ge, gaps_.size()};
    gaps_.push_back({g, gs, ge, {}});
    ThreadWindows& t = by_thread_[ThreadKey{source, launch.pid, launch.tid}];
    t.windows.push_back(w);
    t.max_len = std::max(t.max_len, ge - gs);
  }

  // Fills cpu_busy_ns and cpu_top of every gap added. Returns false when the CPU ops could not
  // be read back (their spill file); the gaps then have no CPU side.
  bool Describe(const Trace& trace, std::string* error) {
    if (gaps_.empty()) return true;
    for (auto& [key, t] : by_thread_) {
      std::sort(t.windows.begin(), t.windows.end(),
                [](const Window& a, const Window& b) { return a.start < b.start; });
    }
    // Ops of one thread come in runs: the last thread looked up is kept.
    ThreadKey last_key{};
    const ThreadWindows* last = nullptr;
    bool have_last = false;
    const bool read = trace.cpu_ops.TryForEach([&](const CpuOp& c) {
      if (c.kind != CpuOpKind::kOp) return;
      const ThreadKey key{c.source, c.pid, c.tid};
      if (!have_last || key != last_key) {
        auto it = by_thread_.find(key);
        last = it == by_thread_.end() ? nullptr : &it->second;
        last_key = key;
        have_last = true;
      }
      if (last != nullptr) Take(*last, c.start_ns, c.end_ns(), c.name);
    }, error);
    if (!read) {
      for (GapWork& w : gaps_) w.pieces.clear();
      return false;
    }
    // API calls on the same threads, in one pass over their table.
    have_last = false;
    trace.api_calls.ForEach([&](const ApiCall& a) {
      const ThreadKey key{a.source, a.pid, a.tid};
      if (!have_last || key != last_key) {
        auto it = by_thread_.find(key);
        last = it == by_thread_.end() ? nullptr : &it->second;
        last_key = key;
        have_last = true;
      }
      if (last != nullptr) Take(*last, a.start_ns, a.end_ns(), a.name);
    });
    for (GapWork& w : gaps_) {
      // Busy time is the union of the pieces; the names are of the outermost ones only (an op
      // inside another, aten::copy_ inside aten::to, or a launch call inside its op, is part of
      // it), so that the listed times never add up to more than the thread was busy.
      std::sort(w.pieces.begin(), w.pieces.end(), [](const Piece& a, const Piece& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
      });
      std::vector<Interval> busy;
      std::map<std::string_view, int64_t> by_text;  // two ids never share a text, but to be sure
      int64_t outer_end = INT64_MIN;
      for (const Piece& p : w.pieces) {
        busy.push_back({p.start, p.end});
        if (p.end <= outer_end) continue;   // inside the last outermost piece
        // One that starts inside and ends past it (not nested: a thread's ops nest) counts its
        // part past the end.
        by_text[trace.Name(p.name)] += p.end - std::max(p.start, outer_end);
        outer_end = p.end;
      }
      w.gap->cpu_busy_ns = TotalLength(MergeIntervals(std::move(busy)));
      std::vector<CpuActivity> top;
      for (const auto& [name, ns] : by_text) top.push_back({std::string(name), ns});
      std::sort(top.begin(), top.end(), [](const CpuActivity& x, const CpuActivity& y) {
        return x.overlap_ns != y.overlap_ns ? x.overlap_ns > y.overlap_ns : x.name < y.name;
      });
      if (top.size() > 3) top.resize(3);
      w.gap->cpu_top = std::move(top);
    }
    return true;
  }

 private:
  struct Window {
    int64_t start, end;
    size_t gap;  // index into gaps_
  };
  struct ThreadWindows {
    std::vector<Window> windows;  // by start
    int64_t max_len = 0;
  };
  struct Piece {
    int64_t start, end;   // clipped to the gap
    NameId name;
  };
  struct GapWork {
    IdleGap* gap;
    int64_t start, end;
    std::vector<Piece> pieces;
  };

  // The op [s, e) in every window of its thread that it overlaps: those start after
  // s − max_len (none is longer) and before e.
  void Take(const ThreadWindows& t, int64_t s, int64_t e, NameId name) {
    auto w = std::lower_bound(t.windows.begin(), t.windows.end(), s - t.max_len,
                              [](const Window& x, int64_t v) { return x.start < v; });
    for (; w != t.windows.end() && w->start < e; ++w) Clip(gaps_[w->gap], s, e, name);
  }
  static void Clip(GapWork& w, int64_t s, int64_t e, NameId name) {
    const int64_t a = std::max(s, w.start), b = std::min(e, w.end);
    if (a >= b) return;
    w.pieces.push_back({a, b, name});
  }

  std::vector<GapWork> gaps_;
  std::map<ThreadKey, ThreadWindows> by_thread_;
};

// A device-level gap: no op of the device runs in [start, end); the op `next` ends it.
struct GapCandidate {
  uint16_t source;
  int32_t device;
  int64_t start, end;
  NameId next;
  uint32_t next_api;   // the op's link, kNoLink for none
  Launch launch;       // its launch call, when linked
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
  std::map<std::pair<uint16_t, int32_t>, int64_t> cover_end;  // per device: end of the ops so far
  std::vector<GapCandidate> gaps;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    auto [it, inserted] = cover_end.emplace(std::make_pair(op.source, op.device), op.end_ns());
    if (inserted) return;
    if (op.start_ns > it->second) gaps.push_back({op.source, op.device, it->second, op.start_ns, op.name, op.api, op.launch});
    it->second = std::max(it->second, op.end_ns());
  });
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

// One stream's state in ComputeIdle's pass: its idle split so far and its last op.
struct StreamState {
  StreamIdle st;
  bool seen = false;     // an op of the stream came before
  int64_t prev_end = 0;  // the end of the one before
  int64_t first_start = 0;
  int64_t last_end = INT64_MIN;
};

// Each stream's span, into s.streams in key order, and the split summed over them.
void SumStreams(const Slots<std::tuple<uint16_t, int32_t, int32_t>>& stream_slots,
                std::vector<StreamState>& streams, IdleStats& s) {
  for (const auto& [key, si] : stream_slots.by_key()) {
    StreamState& ss = streams[si];
    ss.st.span_ns = ss.last_end - ss.first_start;
    s.host_wait_ns += ss.st.host_wait_ns;
    s.kernel_wait_ns += ss.st.kernel_wait_ns;
    s.other_ns += ss.st.other_ns;
    s.streams.push_back(ss.st);
  }
}

// The gaps reported (the first `largest_gaps` of AllGapsSorted(): `best` when bounded), each
// with the op after it, that op's launch, and what the launching thread did during the gap.
void DescribeGaps(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns, bool bounded,
                  BestGaps& best, IdleStats& s) {
  const std::vector<GapCandidate> gaps = bounded ? best.Sorted() : AllGapsSorted(trace);
  const size_t keep =
      o.largest_gaps < 0 ? gaps.size() : std::min(gaps.size(), static_cast<size_t>(o.largest_gaps));
  s.largest_gaps.resize(keep);  // not to move again: HostDuringGaps points into it
  HostDuringGaps host;
  for (size_t k = 0; k < keep; ++k) {
    const GapCandidate& c = gaps[k];
    IdleGap& g = s.largest_gaps[k];
    g.source = c.source;
    g.device = c.device;
    g.at_ns = c.start - t0_ns;
    g.dur_ns = c.end - c.start;
    g.next_op = std::string(trace.Name(c.next));
    if (c.next_api == kNoLink) continue;
    g.next_launch = std::string(trace.Name(c.launch.name));
    g.launch_tid = c.launch.tid;
    g.launch_wait_ns = c.launch.start_ns - c.start;
    host.Add(&g, c.start, c.end, c.source, c.launch);
  }
  std::string error;
  if (!host.Describe(trace, &error)) s.cpu_ops_error = std::move(error);
}

}  // namespace

IdleStats ComputeIdle(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns) {
  IdleStats s;
  // gpu_ops are sorted by start: one pass in that order walks every stream's and every
  // device's ops in start order, with a little state per stream and per device. Streams are
  // reported in key order.
  // The gaps reported are the first `largest_gaps` of AllGapsSorted(), kept here as they come
  // (all wanted, or very many: sorted after).
  const bool bounded = o.largest_gaps >= 0 && o.largest_gaps < 1024;
  BestGaps best(bounded ? static_cast<size_t>(o.largest_gaps) : 0);
  std::vector<int64_t> cover_end;   // per device slot: end of the ops so far
  Slots<std::tuple<uint16_t, int32_t, int32_t>> stream_slots;
  Slots<std::pair<uint16_t, int32_t>> device_slots;
  std::vector<StreamState> streams;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
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
    if (ss.seen) {
      const int64_t gap = op.start_ns - ss.prev_end;
      if (gap > 0) {
        const bool host_late = op.linked() && op.launch.start_ns > ss.prev_end;
        if (host_late) {
          st.host_wait_ns += gap;
        } else if (gap < o.kernel_wait_max_ns) {
          st.kernel_wait_ns += gap;
        } else {
          st.other_ns += gap;
        }
      }
    }
    ss.seen = true;
    ss.prev_end = op.end_ns();
    ss.last_end = std::max(ss.last_end, op.end_ns());

    // Device-level gaps: between merged busy intervals of all the device's ops.
    const uint32_t di = device_slots.Get({op.source, op.device});
    if (di == cover_end.size()) cover_end.push_back(INT64_MIN);
    if (cover_end[di] != INT64_MIN && op.start_ns > cover_end[di]) {
      best.Add({op.source, op.device, cover_end[di], op.start_ns, op.name, op.api, op.launch});
    }
    cover_end[di] = std::max(cover_end[di], op.end_ns());
  });
  SumStreams(stream_slots, streams, s);
  DescribeGaps(trace, o, t0_ns, bounded, best, s);
  return s;
}

}  // namespace latdoc::trace
