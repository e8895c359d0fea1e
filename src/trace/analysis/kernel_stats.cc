// Kernel hot list (per normalised name: count, total, mean, p50, p99, max, share of busy
// time; like nsys cuda_gpu_kern_sum and rocprof's stats CSV) and outlier instances.
#include <algorithm>
#include <unordered_map>

#include "trace/analysis/quantile.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/common/gpu_names.h"

namespace latdoc::trace {

void ComputeKernelStats(const Trace& trace, const AnalysisOptions& o, int64_t busy_ns,
                        int64_t t0_ns, TraceReport& r) {
  // Group by interned raw name first (cheap), then fold raw names into normalised ones.
  std::unordered_map<NameId, std::string> norm_of;
  std::unordered_map<std::string, std::vector<uint32_t>> ops_by_name;
  for (uint32_t i = 0; i < trace.gpu_ops.size(); ++i) {
    const GpuOp& op = trace.gpu_ops[i];
    if (op.kind != GpuOpKind::kKernel) continue;
    if (op.bytes >= 0) {
      ++r.counter_kernels;
      r.counter_bytes += op.bytes;
      r.counter_kernel_ns += op.dur_ns;
    }
    auto it = norm_of.find(op.name);
    if (it == norm_of.end()) {
      it = norm_of.emplace(op.name, NormalizeKernelName(trace.Name(op.name))).first;
    }
    ops_by_name[it->second].push_back(i);
  }
  std::vector<OutlierInstance> outliers;
  for (auto& [name, idx] : ops_by_name) {
    KernelStat s;
    s.name = name;
    s.count = static_cast<int64_t>(idx.size());
    std::vector<int64_t> durs;
    durs.reserve(idx.size());
    for (uint32_t i : idx) durs.push_back(trace.gpu_ops[i].dur_ns);
    std::sort(durs.begin(), durs.end());
    for (int64_t d : durs) s.total_ns += d;
    s.mean_ns = static_cast<double>(s.total_ns) / static_cast<double>(s.count);
    s.p50_ns = QuantileSorted(durs, 0.5);
    s.p99_ns = QuantileSorted(durs, 0.99);
    s.max_ns = durs.back();
    s.busy_share = busy_ns > 0 ? static_cast<double>(s.total_ns) / static_cast<double>(busy_ns) : 0;
    if (s.count >= o.outlier_min_count) {
      for (uint32_t i : idx) {
        const GpuOp& op = trace.gpu_ops[i];
        const double d = static_cast<double>(op.dur_ns);
        if (d > o.outlier_factor * s.p50_ns &&
            d - s.p50_ns >= static_cast<double>(o.outlier_min_excess_ns)) {
          outliers.push_back({name, op.device, op.stream, op.start_ns - t0_ns, op.dur_ns, s.p50_ns});
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
  std::sort(outliers.begin(), outliers.end(), [](const OutlierInstance& a, const OutlierInstance& b) {
    const double ea = static_cast<double>(a.dur_ns) - a.median_ns;
    const double eb = static_cast<double>(b.dur_ns) - b.median_ns;
    return ea != eb ? ea > eb : a.at_ns < b.at_ns;
  });
  if (outliers.size() > static_cast<size_t>(o.outliers_kept)) outliers.resize(o.outliers_kept);
  r.outliers = std::move(outliers);
}

}  // namespace latdoc::trace
