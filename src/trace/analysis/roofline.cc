#include "trace/analysis/roofline.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/strings.h"

#include "trace/model/gpu_names.h"

namespace latdoc::trace {
namespace {

struct Family {
  RooflineKernel k;
  double flops = 0, bytes = 0;
  bool has_flops = false, has_bytes = false;
};

// A kernel instance whose op's work is known, kept until every kernel of that op is seen.
struct Matched {
  uint32_t work;
  NameId name;
  int64_t dur_ns;
  uint16_t source;
  int32_t device;
};

uint64_t Key(uint16_t source, int64_t external_id) {
  return (static_cast<uint64_t>(source) << 48) ^ static_cast<uint64_t>(external_id);
}

using Families = std::map<std::tuple<std::string, std::string, std::string, std::string>, Family>;

// The ops' work by (source, External id): its index in trace.op_work.
std::unordered_map<uint64_t, uint32_t> IndexWork(const Trace& trace) {
  std::unordered_map<uint64_t, uint32_t> work_of;
  work_of.reserve(trace.op_work.size());
  for (uint32_t i = 0; i < trace.op_work.size(); ++i) {
    const OpWork& w = trace.op_work[i];
    if (w.external_id >= 0) work_of.emplace(Key(w.source, w.external_id), i);
  }
  return work_of;
}

// Each family's kernel row with its rates and share of busy time; the kRooflineKernels
// longest kept.
void FamilyKernels(Families& families, int64_t busy_ns, RooflineStats& out) {
  for (auto& [key, f] : families) {
    RooflineKernel k = std::move(f.k);
    if (f.has_flops) k.flops = f.flops;
    if (f.has_bytes) k.bytes = f.bytes;
    if (k.total_ns > 0) {
      const double secs = static_cast<double>(k.total_ns) / 1e9;
      if (k.flops) k.achieved_tflops = *k.flops / secs / 1e12;
      if (k.bytes) k.achieved_gbps = *k.bytes / secs / 1e9;
    }
    if (k.flops && k.bytes && *k.bytes > 0) k.intensity = *k.flops / *k.bytes;
    k.busy_share = busy_ns > 0 ? static_cast<double>(k.total_ns) / static_cast<double>(busy_ns) : 0;
    out.kernels.push_back(std::move(k));
  }
  std::stable_sort(
      out.kernels.begin(), out.kernels.end(),
      [](const RooflineKernel& a, const RooflineKernel& b) { return a.total_ns > b.total_ns; });
  if (out.kernels.size() > kRooflineKernels) out.kernels.resize(kRooflineKernels);
}

// Each kept kernel's device name and arch: its own device's, else the first of its file's.
void NameDevices(const Trace& trace, RooflineStats& out) {
  for (RooflineKernel& k : out.kernels) {
    const DeviceInfo* d = trace.FindDevice(k.source, k.device);
    for (size_t i = 0; d == nullptr && i < trace.devices.size(); ++i) {
      if (trace.devices[i].source == k.source) d = &trace.devices[i];
    }
    if (d != nullptr) {
      k.device_name = d->name;
      k.device_arch = d->arch;
    }
  }
}

}  // namespace

RooflineStats ComputeRoofline(const Trace& trace, int64_t busy_ns) {
  RooflineStats out;
  out.work_ops = static_cast<int64_t>(trace.op_work.size());
  // Plan: index the ops' work by (source, External id); one pass over the kernels collects
  // those with work (and sums each op's kernel time) and folds counter kernels straight into
  // their family; then each matched kernel takes its duration's share of its op's work.
  const std::unordered_map<uint64_t, uint32_t> work_of = IndexWork(trace);
  std::vector<int64_t> op_kernel_ns(trace.op_work.size(), 0);
  std::vector<int64_t> op_kernels(trace.op_work.size(), 0);
  std::vector<Matched> matched;
  // Family by (normalised kernel name, op, kind, dtype).
  Families families;
  std::unordered_map<NameId, std::string> normalised;
  auto norm = [&](NameId id) -> const std::string& {
    auto it = normalised.find(id);
    if (it == normalised.end()) it = normalised.emplace(id, NormalizeKernelName(trace.Name(id))).first;
    return it->second;
  };
  auto family = [&](NameId kernel, std::string op, std::string kind, std::string dtype, uint16_t source,
                    int32_t device) -> Family& {
    const std::string& name = norm(kernel);
    auto [it, fresh] = families.try_emplace(std::make_tuple(name, op, kind, dtype));
    if (fresh) {
      it->second.k.name = name;
      it->second.k.op = std::move(op);
      it->second.k.kind = std::move(kind);
      it->second.k.dtype = std::move(dtype);
      it->second.k.source = source;
      it->second.k.device = device;
    }
    return it->second;
  };
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (op.kind != GpuOpKind::kKernel) return;
    ++out.kernels_seen;
    out.kernel_ns += op.dur_ns;
    if (op.external_id >= 0 && !work_of.empty()) {
      auto it = work_of.find(Key(op.source, op.external_id));
      if (it != work_of.end()) {
        matched.push_back({it->second, op.name, op.dur_ns, op.source, op.device});
        op_kernel_ns[it->second] += op.dur_ns;
        ++op_kernels[it->second];
        return;
      }
    }
    if (op.bytes >= 0) {
      Family& f = family(op.name, "", "counters", "unknown", op.source, op.device);
      ++f.k.count;
      f.k.total_ns += op.dur_ns;
      f.bytes += static_cast<double>(op.bytes);
      f.has_bytes = true;
      ++out.kernels_with_work;
      out.kernel_ns_with_work += op.dur_ns;
    }
  });
  for (const Matched& m : matched) {
    const OpWork& w = trace.op_work[m.work];
    const double share = op_kernel_ns[m.work] > 0
                             ? static_cast<double>(m.dur_ns) / static_cast<double>(op_kernel_ns[m.work])
                             : 1.0 / static_cast<double>(op_kernels[m.work]);
    Family& f = family(m.name, std::string(trace.Name(w.op)), std::string(WorkKindName(w.kind)),
                       std::string(WorkDtypeName(w.dtype)), m.source, m.device);
    ++f.k.count;
    f.k.total_ns += m.dur_ns;
    f.flops += w.flops * share;
    f.bytes += w.bytes * share;
    f.has_flops = f.has_flops || w.kind != WorkKind::kElementwise || w.flops > 0;
    f.has_bytes = true;
    ++out.kernels_with_work;
    out.kernel_ns_with_work += m.dur_ns;
  }
  FamilyKernels(families, busy_ns, out);
  NameDevices(trace, out);
  return out;
}

nlohmann::json RooflineToJson(const RooflineStats& r) {
  using nlohmann::json;
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json j;
  j["kernels_seen"] = r.kernels_seen;
  j["kernels_with_work"] = r.kernels_with_work;
  j["kernel_ns"] = r.kernel_ns;
  j["kernel_ns_with_work"] = r.kernel_ns_with_work;
  j["work_ops"] = r.work_ops;
  j["gpu_not_in_table"] = r.gpu_not_in_table.empty() ? json(nullptr) : json(r.gpu_not_in_table);
  j["kernels"] = json::array();
  for (const RooflineKernel& k : r.kernels) {
    j["kernels"].push_back({{"name", k.name}, {"op", k.op.empty() ? json(nullptr) : json(k.op)},
                            {"kind", k.kind}, {"dtype", k.dtype}, {"source", k.source}, {"device", k.device},
                            {"device_name", k.device_name}, {"count", k.count}, {"total_ns", k.total_ns}, {"busy_share", k.busy_share},
                            {"flops", opt(k.flops)}, {"bytes", opt(k.bytes)},
                            {"achieved_tflops", opt(k.achieved_tflops)}, {"achieved_gbps", opt(k.achieved_gbps)},
                            {"intensity_flop_per_byte", opt(k.intensity)},
                            {"gpu", k.gpu.empty() ? json(nullptr) : json(k.gpu)},
                            {"peak_tflops", opt(k.peak_tflops)}, {"peak_tflops_dtype", k.peak_tflops_name},
                            {"peak_gbps", opt(k.peak_gbps)}, {"ridge_flop_per_byte", opt(k.ridge)},
                            {"bound", k.bound.empty() ? json(nullptr) : json(k.bound)},
                            {"roof_share", opt(k.roof_share)}, {"impossible", k.impossible}, {"note", k.note}});
  }
  return j;
}

std::string RenderRooflineText(const RooflineStats& r, size_t rows) {
  if (r.kernels.empty()) return "";
  std::string out = fmt::format(
      "\nRoofline: {} of {} kernels with known work ({:.1f}% of kernel time){}\n", r.kernels_with_work,
      r.kernels_seen,
      r.kernel_ns > 0 ? 100.0 * static_cast<double>(r.kernel_ns_with_work) / static_cast<double>(r.kernel_ns) : 0.0,
      r.gpu_not_in_table.empty()             ? ""
      : r.gpu_not_in_table.starts_with("(") ? std::string("; the trace names no GPU: no roof")
                                            : fmt::format("; GPU {} not in the peak table: no roof", r.gpu_not_in_table));
  out += fmt::format("  {:<44} {:<12} {:>6} {:>9} {:>9} {:>9} {:>8} {:>8}  {}\n", "kernel", "op", "count", "total ms",
                     "TFLOP/s", "GB/s", "FLOP/B", "% roof", "bound");
  auto num = [](const std::optional<double>& v, int precision) {
    return v ? fmt::format("{:.{}f}", *v, precision) : std::string("n/a");
  };
  for (size_t i = 0; i < r.kernels.size() && i < rows; ++i) {
    const RooflineKernel& k = r.kernels[i];
    const std::string op = k.op.empty() ? k.kind : fmt::format("{} {}", k.op.substr(k.op.starts_with("aten::") ? 6 : 0), k.dtype);
    out += fmt::format("  {:<44} {:<12} {:>6} {:>9.3f} {:>9} {:>9} {:>8} {:>8}  {}{}\n", ShortenMiddle(k.name, 44),
                       ShortenMiddle(op, 12), k.count, static_cast<double>(k.total_ns) / 1e6, num(k.achieved_tflops, 2),
                       num(k.achieved_gbps, 0), num(k.intensity, 1),
                       k.roof_share ? fmt::format("{:.0f}%", 100 * *k.roof_share) : std::string("n/a"),
                       k.impossible ? "IMPOSSIBLE" : k.bound.empty() ? "-" : k.bound,
                       k.note.empty() ? "" : " (" + k.note + ")");
  }
  return out;
}

}  // namespace latdoc::trace
