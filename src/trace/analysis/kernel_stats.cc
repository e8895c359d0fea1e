// Kernel hot list (per normalised name: count, total, mean, p50, p99, max, share of busy
// time; like nsys cuda_gpu_kern_sum and rocprof's stats CSV) and outlier instances.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "trace/analysis/quantile.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/common/gpu_names.h"

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
  for (const GpuOp& op : trace.gpu_ops) {
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
  }
  for (const auto& [key, o] : open) {
    if (o.end != INT64_MIN) busy += o.end - o.start;
  }
  return busy;
}

void ComputeKernelStats(const Trace& trace, const AnalysisOptions& o, int64_t busy_ns,
                        int64_t t0_ns, TraceReport& r) {
  // Group by interned raw name first (cheap), then fold raw names into normalised ones.
  // `group_by_name` receives its keys in the order of each name's first op, as the map of
  // op lists it replaces did, so it iterates in the same order: the order outliers come in
  // before their sort, which leaves ties as they come.
  constexpr uint32_t kNoGroup = UINT32_MAX;
  std::vector<uint32_t> group_of_raw(trace.names.size(), kNoGroup);
  std::unordered_map<std::string, uint32_t> group_by_name;
  std::vector<std::vector<uint32_t>> ops_of_group;
  std::map<NameId, KernelStat> others;
  for (uint32_t i = 0; i < trace.gpu_ops.size(); ++i) {
    const GpuOp& op = trace.gpu_ops[i];
    if (op.kind != GpuOpKind::kKernel) {
      KernelStat& other = others[op.name];
      other.kind = op.kind;
      ++other.count;
      other.total_ns += op.dur_ns;
      continue;
    }
    if (op.bytes >= 0) {
      ++r.counter_kernels;
      r.counter_bytes += op.bytes;
      r.counter_kernel_ns += op.dur_ns;
    }
    uint32_t& g = group_of_raw[op.name];
    if (g == kNoGroup) {
      auto [it, inserted] = group_by_name.emplace(NormalizeKernelName(trace.Name(op.name)),
                                                  static_cast<uint32_t>(ops_of_group.size()));
      if (inserted) ops_of_group.emplace_back();
      g = it->second;
    }
    ops_of_group[g].push_back(i);
  }
  r.other_ops.clear();
  for (auto& [name, stat] : others) {
    stat.name = std::string(trace.Name(name));
    stat.mean_ns = static_cast<double>(stat.total_ns) / static_cast<double>(stat.count);
    r.other_ops.push_back(std::move(stat));
  }
  std::vector<OutlierInstance> outliers;
  r.hot_kernels.reserve(group_by_name.size());
  std::vector<int64_t> durs;
  // The time this kernel ran on some stream, per device: instances on several streams at once
  // count once, so the share of busy time stays a share (summed durations would pass 100%).
  struct Open {
    int64_t start = 0, end = INT64_MIN;
  };
  std::map<std::pair<uint16_t, int32_t>, Open> open;
  for (auto& [name, group] : group_by_name) {
    const std::vector<uint32_t>& idx = ops_of_group[group];
    KernelStat s;
    s.name = name;
    s.count = static_cast<int64_t>(idx.size());
    durs.clear();
    s.max_ns = INT64_MIN;
    open.clear();
    int64_t ran_ns = 0;
    for (uint32_t i : idx) {  // in start order, as gpu_ops are
      const GpuOp& op = trace.gpu_ops[i];
      const int64_t d = op.dur_ns;
      durs.push_back(d);
      s.total_ns += d;
      s.max_ns = std::max(s.max_ns, d);
      Open& u = open[{op.source, op.device}];
      if (u.end == INT64_MIN || op.start_ns > u.end) {
        if (u.end != INT64_MIN) ran_ns += u.end - u.start;
        u = {op.start_ns, op.end_ns()};
      } else {
        u.end = std::max(u.end, op.end_ns());
      }
    }
    for (const auto& [key, u] : open) {
      if (u.end != INT64_MIN) ran_ns += u.end - u.start;
    }
    s.mean_ns = static_cast<double>(s.total_ns) / static_cast<double>(s.count);
    s.p99_ns = QuantileSelect(durs, 0.99);
    s.p50_ns = QuantileSelect(durs, 0.5);
    s.busy_share = busy_ns > 0 ? static_cast<double>(ran_ns) / static_cast<double>(busy_ns) : 0;
    if (s.count >= o.outlier_min_count) {
      for (uint32_t i : idx) {
        const GpuOp& op = trace.gpu_ops[i];
        const double d = static_cast<double>(op.dur_ns);
        if (d > o.outlier_factor * s.p50_ns &&
            d - s.p50_ns >= static_cast<double>(o.outlier_min_excess_ns)) {
          outliers.push_back({name, op.source, op.device, op.stream, op.start_ns - t0_ns, op.dur_ns, s.p50_ns});
        }
      }
    }
    r.hot_kernels.push_back(std::move(s));
  }
  std::sort(r.hot_kernels.begin(), r.hot_kernels.end(), [](const KernelStat& a, const KernelStat& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (r.counter_kernel_ns > 0) {
    r.counter_gbps = static_cast<double>(r.counter_bytes) / static_cast<double>(r.counter_kernel_ns);
  }
  r.outlier_count = static_cast<int64_t>(outliers.size());
  double excess = 0;  // over all of them, before the list is cut
  for (const OutlierInstance& x : outliers) excess += static_cast<double>(x.dur_ns) - x.median_ns;
  r.outlier_excess_ns = static_cast<int64_t>(excess);
  // Largest excess first, then earlier; the rest of the key makes the order total, so which
  // instances make the cut does not depend on the sort.
  std::sort(outliers.begin(), outliers.end(), [](const OutlierInstance& a, const OutlierInstance& b) {
    const double ea = static_cast<double>(a.dur_ns) - a.median_ns;
    const double eb = static_cast<double>(b.dur_ns) - b.median_ns;
    if (ea != eb) return ea > eb;
    return std::tie(a.at_ns, a.source, a.device, a.stream, a.name) <
           std::tie(b.at_ns, b.source, b.device, b.stream, b.name);
  });
  if (outliers.size() > static_cast<size_t>(o.outliers_kept)) outliers.resize(o.outliers_kept);
  r.outliers = std::move(outliers);
}

}  // namespace latdoc::trace
