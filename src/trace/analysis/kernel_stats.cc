// Kernel hot list (per normalised name: count, total, mean, p50, p99, max, share of busy
// time; like nsys cuda_gpu_kern_sum and rocprof's stats CSV) and outlier instances.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "trace/analysis/quantile.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/model/gpu_names.h"

namespace latdoc::trace {

int64_t BusyOfAllOps(const Trace& trace) {
  // gpu_ops are sorted by start: each device's ops merge in one pass (its open interval).
  struct Open {
    int64_t start = 0, end = INT64_MIN;
  };
  std::map<std::pair<uint16_t, int32_t>, Open> open;
  std::pair<uint16_t, int32_t> last_key;
  Open* last = nullptr;
  int64_t busy = 0;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    const std::pair<uint16_t, int32_t> key{op.source, op.device};
    if (last == nullptr || key != last_key) {
      last = &open[key];
      last_key = key;
    }
    if (last->end == INT64_MIN || op.start_ns > last->end) {
      if (last->end != INT64_MIN) busy += last->end - last->start;
      *last = {op.start_ns, op.end_ns()};
    } else {
      last->end = std::max(last->end, op.end_ns());
    }
  });
  for (const auto& [key, o] : open) {
    if (o.end != INT64_MIN) busy += o.end - o.start;
  }
  return busy;
}

namespace {

// One normalised kernel name: its instances' sums, and the time it ran on each device (an
// open interval per device, ops coming in start order).
struct Group {
  std::string name;
  int64_t count = 0, total_ns = 0, max_ns = INT64_MIN;
  int64_t ran_ns = 0;
  struct Open {
    int64_t start = 0, end = INT64_MIN;
  };
  std::map<std::pair<uint16_t, int32_t>, Open> open;
  double p50_ns = 0, p99_ns = 0;
};

// An outlier before its name is looked up.
struct Outlier {
  uint32_t group;
  uint16_t source;
  int32_t device, stream;
  int64_t at_ns, dur_ns;
  double median_ns;
  double excess() const { return static_cast<double>(dur_ns) - median_ns; }
};

constexpr uint32_t kNoGroup = UINT32_MAX;

// (group, duration) of every kernel: sorted, each group's durations come in order, for exact
// quantiles in the memory of a few blocks.
struct GroupDur {
  uint32_t group;
  int64_t dur_ns;
};

// The one pass over all ops: kernels grouped by interned raw name first (cheap), raw names
// folded into normalised ones in the order of each name's first op; other ops summed by name;
// the counters' bytes and time summed into r.
void GroupKernels(const Trace& trace, std::vector<uint32_t>& group_of_raw,
                  std::vector<Group>& groups, std::map<NameId, KernelStat>& others,
                  SpillTable<GroupDur>& durs, TraceReport& r) {
  std::unordered_map<std::string, uint32_t> group_by_name;
  auto group_of = [&](const GpuOp& op) {
    uint32_t& g = group_of_raw[op.name];
    if (g == kNoGroup) {
      std::string name = NormalizeKernelName(trace.Name(op.name));
      auto [it, inserted] = group_by_name.emplace(name, static_cast<uint32_t>(groups.size()));
      if (inserted) groups.emplace_back().name = std::move(name);
      g = it->second;
    }
    return g;
  };
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (op.kind != GpuOpKind::kKernel) {
      KernelStat& other = others[op.name];
      other.kind = op.kind;
      ++other.count;
      other.total_ns += op.dur_ns;
      return;
    }
    if (op.bytes >= 0) {
      ++r.counter_kernels;
      r.counter_bytes += op.bytes;
      r.counter_kernel_ns += op.dur_ns;
    }
    const uint32_t gi = group_of(op);
    Group& g = groups[gi];
    ++g.count;
    g.total_ns += op.dur_ns;
    g.max_ns = std::max(g.max_ns, op.dur_ns);
    // The time this kernel ran on some stream, per device: instances on several streams at
    // once count once, so the share of busy time stays a share.
    Group::Open& u = g.open[{op.source, op.device}];
    if (u.end == INT64_MIN || op.start_ns > u.end) {
      if (u.end != INT64_MIN) g.ran_ns += u.end - u.start;
      u = {op.start_ns, op.end_ns()};
    } else {
      u.end = std::max(u.end, op.end_ns());
    }
    durs.push_back({gi, op.dur_ns});
  });
}

void OtherOps(const Trace& trace, std::map<NameId, KernelStat>& others, TraceReport& r) {
  r.other_ops.clear();
  for (auto& [name, stat] : others) {
    stat.name = std::string(trace.Name(name));
    stat.mean_ns = static_cast<double>(stat.total_ns) / static_cast<double>(stat.count);
    r.other_ops.push_back(std::move(stat));
  }
}

// Each group's exact p50 and p99, from its durations sorted.
void GroupQuantiles(SpillTable<GroupDur>&& durs, std::vector<Group>& groups) {
  std::optional<SortedQuantiles> q;
  uint32_t current = kNoGroup;
  size_t i = 0;
  auto close = [&] {
    if (current == kNoGroup) return;
    groups[current].p99_ns = q->Get(0);
    groups[current].p50_ns = q->Get(1);
  };
  SortTable(std::move(durs), [](const GroupDur& a, const GroupDur& b) {
    return a.group != b.group ? a.group < b.group : a.dur_ns < b.dur_ns;
  }).ForEach([&](const GroupDur& d) {
    if (d.group != current) {
      close();
      current = d.group;
      q.emplace(static_cast<size_t>(groups[current].count),
                std::initializer_list<double>{0.99, 0.5});
      i = 0;
    }
    q->Feed(i++, d.dur_ns);
  });
  close();
}

// r.hot_kernels (longest total first, then by name) and the counters' achieved bandwidth.
void HotKernels(std::vector<Group>& groups, int64_t busy_ns, TraceReport& r) {
  r.hot_kernels.reserve(groups.size());
  for (Group& g : groups) {
    for (const auto& [key, u] : g.open) {
      if (u.end != INT64_MIN) g.ran_ns += u.end - u.start;
    }
    KernelStat s;
    s.name = g.name;
    s.count = g.count;
    s.total_ns = g.total_ns;
    s.max_ns = g.max_ns;
    s.mean_ns = static_cast<double>(s.total_ns) / static_cast<double>(s.count);
    s.p99_ns = g.p99_ns;
    s.p50_ns = g.p50_ns;
    s.busy_share = busy_ns > 0 ? static_cast<double>(g.ran_ns) / static_cast<double>(busy_ns) : 0;
    r.hot_kernels.push_back(std::move(s));
  }
  std::sort(r.hot_kernels.begin(), r.hot_kernels.end(), [](const KernelStat& a, const KernelStat& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (r.counter_kernel_ns > 0) {
    r.counter_gbps = static_cast<double>(r.counter_bytes) / static_cast<double>(r.counter_kernel_ns);
  }
}

// Outliers: a second pass, now that each kernel's median is known. Largest excess first,
// then earlier; the rest of the key makes the order total, so which instances are kept does
// not depend on the order they are met in.
void Outliers(const Trace& trace, const AnalysisOptions& o, int64_t t0_ns,
              const std::vector<uint32_t>& group_of_raw, const std::vector<Group>& groups,
              TraceReport& r) {
  auto better = [&groups](const Outlier& a, const Outlier& b) {
    const double ea = a.excess(), eb = b.excess();
    if (ea != eb) return ea > eb;
    return std::tie(a.at_ns, a.source, a.device, a.stream, groups[a.group].name) <
           std::tie(b.at_ns, b.source, b.device, b.stream, groups[b.group].name);
  };
  const size_t keep = o.outliers_kept < 0 ? SIZE_MAX : static_cast<size_t>(o.outliers_kept);
  std::vector<Outlier> kept;  // a heap with the worst kept on top, while it is full
  double excess = 0;          // over all of them, before the list is cut: halves, summed exactly
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (op.kind != GpuOpKind::kKernel) return;
    const uint32_t gi = group_of_raw[op.name];
    const Group& g = groups[gi];
    if (g.count < o.outlier_min_count) return;
    const double d = static_cast<double>(op.dur_ns);
    if (!(d > o.outlier_factor * g.p50_ns && d - g.p50_ns >= static_cast<double>(o.outlier_min_excess_ns))) return;
    ++r.outlier_count;
    const Outlier x{gi, op.source, op.device, op.stream, op.start_ns - t0_ns, op.dur_ns, g.p50_ns};
    excess += x.excess();
    if (kept.size() < keep) {
      kept.push_back(x);
      std::push_heap(kept.begin(), kept.end(), better);
    } else if (keep > 0 && better(x, kept.front())) {
      std::pop_heap(kept.begin(), kept.end(), better);
      kept.back() = x;
      std::push_heap(kept.begin(), kept.end(), better);
    }
  });
  r.outlier_excess_ns = static_cast<int64_t>(excess);
  std::sort_heap(kept.begin(), kept.end(), better);
  r.outliers.clear();
  for (const Outlier& x : kept) {
    r.outliers.push_back({groups[x.group].name, x.source, x.device, x.stream, x.at_ns, x.dur_ns, x.median_ns});
  }
}

}  // namespace

void ComputeKernelStats(const Trace& trace, const AnalysisOptions& o, int64_t busy_ns,
                        int64_t t0_ns, TraceReport& r) {
  std::vector<uint32_t> group_of_raw(trace.names.size(), kNoGroup);
  std::vector<Group> groups;
  std::map<NameId, KernelStat> others;
  SpillTable<GroupDur> durs(BlockRowsFor<GroupDur>(trace));
  GroupKernels(trace, group_of_raw, groups, others, durs, r);
  OtherOps(trace, others, r);
  GroupQuantiles(std::move(durs), groups);
  HotKernels(groups, busy_ns, r);
  Outliers(trace, o, t0_ns, group_of_raw, groups, r);
}

}  // namespace latdoc::trace
