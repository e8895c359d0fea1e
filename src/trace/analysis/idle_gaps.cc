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

}  // namespace

IdleStats ComputeIdle(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns) {
  IdleStats s;
  // gpu_ops are sorted by start; bucket their indices per stream and per device.
  std::map<std::tuple<uint16_t, int32_t, int32_t>, std::vector<uint32_t>> by_stream;
  std::map<std::pair<uint16_t, int32_t>, std::vector<uint32_t>> by_device;
  for (uint32_t i = 0; i < trace.gpu_ops.size(); ++i) {
    const GpuOp& op = trace.gpu_ops[i];
    by_stream[{op.source, op.device, op.stream}].push_back(i);
    by_device[{op.source, op.device}].push_back(i);
  }
  for (const auto& [key, idx] : by_stream) {
    StreamIdle st;
    std::tie(st.source, st.device, st.stream) = key;
    st.ops = static_cast<int64_t>(idx.size());
    const GpuOp* prev = nullptr;
    int64_t last_end = INT64_MIN;
    for (uint32_t i : idx) {
      const GpuOp& op = trace.gpu_ops[i];
      if (prev != nullptr) {
        const int64_t gap = op.start_ns - prev->end_ns();
        if (gap > 0) {
          const bool host_late = op.api != kNoLink && trace.api_calls[op.api].start_ns > prev->end_ns();
          if (host_late) {
            st.host_wait_ns += gap;
          } else if (gap < o.kernel_wait_max_ns) {
            st.kernel_wait_ns += gap;
          } else {
            st.other_ns += gap;
          }
        }
      }
      prev = &op;
      last_end = std::max(last_end, op.end_ns());
    }
    st.span_ns = last_end - trace.gpu_ops[idx.front()].start_ns;
    s.host_wait_ns += st.host_wait_ns;
    s.kernel_wait_ns += st.kernel_wait_ns;
    s.other_ns += st.other_ns;
    s.streams.push_back(st);
  }
  int64_t max_api_ns = 0;
  for (const ApiCall& a : trace.api_calls) max_api_ns = std::max(max_api_ns, a.dur_ns);
  // Device-level gaps: between merged busy intervals of all the device's ops.
  struct Candidate {
    uint16_t source;
    int32_t device;
    int64_t start, end;
    uint32_t next;
  };
  std::vector<Candidate> gaps;
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
  std::sort(gaps.begin(), gaps.end(), [](const Candidate& a, const Candidate& b) {
    return (a.end - a.start) != (b.end - b.start) ? (a.end - a.start) > (b.end - b.start)
                                                  : a.start < b.start;
  });
  for (size_t k = 0; k < gaps.size() && k < static_cast<size_t>(o.largest_gaps); ++k) {
    const Candidate& c = gaps[k];
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
