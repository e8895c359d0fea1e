#include "rules/trace_roofline_rules.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "base/strings.h"
#include "rules/gpu_specs.h"
#include "rules/trace_rules_internal.h"

namespace latdoc::rules {
namespace {

using trace_internal::Make;
using trace_internal::Num;

using trace::RooflineKernel;
using trace::TraceReport;

const trace::DeviceInfo* DeviceOf(const TraceReport& r, uint16_t source, int32_t device) {
  for (const auto& d : r.devices) {
    if (d.source == source && d.device == device) return &d;
  }
  return r.devices.empty() ? nullptr : &r.devices.front();
}

// The dense peak for a dtype, and its name; nullopt where the table has none.
std::optional<double> PeakFor(const GpuSpec& s, std::string_view dtype, std::string* name) {
  *name = std::string(dtype);
  if (dtype == "bf16") return s.bf16_tflops;
  if (dtype == "fp16") return s.fp16_tflops;
  if (dtype == "fp8") return s.fp8_tflops;
  if (dtype == "fp32") return s.fp32_tflops;
  return std::nullopt;
}

void Place(RooflineKernel& k, const GpuSpec& s, const RooflineRuleOptions& o) {
  k.gpu = std::string(s.name);
  k.peak_gbps = s.hbm_gbps;
  const bool gemm_like = k.kind == "gemm" || k.kind == "attention";
  if (gemm_like) {
    k.peak_tflops = PeakFor(s, k.dtype, &k.peak_tflops_name);
    // An fp32 GEMM faster than the FP32 peak ran on TF32 tensor cores (PyTorch's allow_tf32, or
    // AMD's xf32): its roof is the TF32 one.
    if (k.dtype == "fp32" && k.peak_tflops && s.tf32_tflops && k.achieved_tflops &&
        *k.achieved_tflops > *k.peak_tflops * o.impossible_margin) {
      k.peak_tflops = s.tf32_tflops;
      k.peak_tflops_name = "tf32";
      k.note = "faster than the FP32 peak: assumed to run on TF32 tensor cores (allow_tf32)";
    }
  }
  if (k.peak_tflops && k.intensity) {
    k.ridge = *k.peak_tflops * 1e3 / *k.peak_gbps;
    const double roof_tflops = std::min(*k.peak_tflops, *k.intensity * *k.peak_gbps / 1e3);
    k.bound = *k.intensity < *k.ridge ? "memory" : "compute";
    if (k.achieved_tflops && roof_tflops > 0) k.roof_share = *k.achieved_tflops / roof_tflops;
  } else if (k.achieved_gbps) {
    // Bandwidth alone: elementwise ops (their FLOPs are far under any ridge point), counter
    // bytes (FLOPs unknown), or a dtype without a peak in the table.
    k.roof_share = *k.achieved_gbps / *k.peak_gbps;
    if (k.kind == "elementwise") {
      k.bound = "memory";
    } else if (k.kind == "counters") {
      k.note = "bytes from FETCH_SIZE+WRITE_SIZE; FLOPs unknown: judged on bandwidth";
    } else if (gemm_like) {
      k.note = fmt::format("no {} peak in the table: judged on bandwidth", k.dtype);
    }
  }
  if (k.achieved_tflops && k.peak_tflops && *k.achieved_tflops > *k.peak_tflops * o.impossible_margin) {
    k.impossible = true;
    k.note = fmt::format("{:.1f} TFLOP/s is above the {} peak of {:.1f}: the kernel times or shapes are wrong",
                         *k.achieved_tflops, k.peak_tflops_name, *k.peak_tflops);
  } else if (k.achieved_gbps && *k.achieved_gbps > *k.peak_gbps * o.impossible_margin) {
    k.impossible = true;
    k.note = k.kind == "counters"
                 ? fmt::format("{:.0f} GB/s of device-memory traffic is above the {:.0f} GB/s peak: the counters or "
                               "kernel times are wrong", *k.achieved_gbps, *k.peak_gbps)
                 : fmt::format("{:.0f} GB/s counted from shapes is above the {:.0f} GB/s HBM peak: the data came "
                               "from cache, or the kernel times are wrong", *k.achieved_gbps, *k.peak_gbps);
  }
}

std::string Rates(const RooflineKernel& k) {
  std::string s;
  if (k.achieved_tflops) s += fmt::format("{:.2f} TFLOP/s", *k.achieved_tflops);
  if (k.peak_tflops) s += fmt::format(" of {:.0f} {}", *k.peak_tflops, k.peak_tflops_name);
  if (k.achieved_gbps) {
    if (!s.empty()) s += ", ";
    s += fmt::format("{:.0f} GB/s", *k.achieved_gbps);
    if (k.peak_gbps) s += fmt::format(" of {:.0f}", *k.peak_gbps);
  }
  return s;
}

std::string Label(const RooflineKernel& k) {
  std::string s = ShortenMiddle(k.name, 60);
  if (!k.op.empty()) s += fmt::format(" ({} {})", k.op, k.dtype);
  return s;
}

}  // namespace

void AddRooflineFacts(TraceReport& r, const RooflineRuleOptions& o) {
  r.roofline.gpu_not_in_table.clear();
  for (RooflineKernel& k : r.roofline.kernels) {
    std::string name = k.device_name, arch = k.device_arch;
    if (name.empty() && arch.empty()) {
      if (const trace::DeviceInfo* d = DeviceOf(r, k.source, k.device)) {
        name = d->name;
        arch = d->arch;
      }
    }
    const GpuSpec* s = name.empty() && arch.empty() ? nullptr : FindGpuSpec(name, arch);
    if (s == nullptr) {
      if (r.roofline.gpu_not_in_table.empty()) {
        r.roofline.gpu_not_in_table = !name.empty() ? name : !arch.empty() ? arch : "(the trace names no GPU)";
      }
      continue;
    }
    Place(k, *s, o);
  }
}

namespace {

// Impossible rates: kernel families and copy/counter bandwidth checks.
void RateAbovePeakRule(const TraceReport& r, std::vector<Finding>& out,
                       const RooflineRuleOptions& o) {
  const auto& rf = r.roofline;
  Finding f = Make(
      "kernel.rate_above_peak", Severity::kWarn, "",
      "treat these numbers as a data problem: check the profiler's timestamps (clock domains, "
      "a kernel whose time was cut short), the counters' units (rocprof v1 FETCH_SIZE/WRITE_SIZE "
      "are KB), the recorded shapes, and that the GPU named in the trace is the one that ran");
  bool only_cache = true;
  for (const RooflineKernel& k : rf.kernels) {
    if (!k.impossible) continue;
    const bool cache =
        k.kind != "counters" && !(k.achieved_tflops && k.peak_tflops &&
                                  *k.achieved_tflops > *k.peak_tflops * o.impossible_margin);
    only_cache = only_cache && cache;
    f.evidence.push_back(
        Num(ShortenMiddle(k.name, 60),
            k.roof_share ? std::optional<double>(100 * *k.roof_share) : std::nullopt, "% of roof",
            k.note));
  }
  for (const auto& b : r.bandwidth) {
    if (b.peak_gbps <= 0 || b.achieved_gbps <= b.peak_gbps * o.impossible_margin) continue;
    only_cache = false;
    const std::string what = b.copies < 0
                                 ? "kernel memory traffic (counters)"
                                 : fmt::format("{} copies", trace::CopyDirectionName(b.direction));
    f.evidence.push_back(
        Num(what, b.achieved_gbps, "GB/s",
            fmt::format("above the {:.0f} GB/s peak of the {}'s link", b.peak_gbps, b.gpu)));
  }
  if (!f.evidence.empty()) {
    if (only_cache) {
      // Bytes counted from shapes above the HBM peak can be cache hits: worth a look, no more.
      f.severity = Severity::kInfo;
    }
    f.title = fmt::format("{} rate{} above the GPU's datasheet peak: a data problem, not a result",
                          f.evidence.size(), f.evidence.size() == 1 ? "" : "s");
    out.push_back(std::move(f));
  }
}

// No roofline when the trace's GPU is not in the peak table.
void RooflineGpuUnknownRule(const TraceReport& r, std::vector<Finding>& out) {
  const auto& rf = r.roofline;
  if (!rf.gpu_not_in_table.empty()) {
    Finding f = Make("kernel.roofline_gpu_unknown", Severity::kSkip,
                     rf.gpu_not_in_table.starts_with("(")
                         ? std::string("No roofline: the trace names no GPU; achieved rates only")
                         : fmt::format("No roofline: GPU {} is not in the peak table; achieved rates only", rf.gpu_not_in_table),
                     "the achieved TFLOP/s and GB/s are in the report (--json roofline); compare them with the "
                     "datasheet of this GPU by hand");
    f.evidence.push_back(Num("gpu", std::nullopt, "", rf.gpu_not_in_table));
    out.push_back(std::move(f));
  }
}

// The hottest kernel families with known work, against their roofs.
void HottestRooflineRule(const TraceReport& r, std::vector<Finding>& out) {
  const auto& rf = r.roofline;
  const double covered = rf.kernel_ns > 0 ? static_cast<double>(rf.kernel_ns_with_work) / static_cast<double>(rf.kernel_ns) : 0;
  // Below this share of kernel time with known work (a graph-replayed loop: its kernels carry no
  // op id) or of GPU busy time per family, a roofline says nothing about where the time goes.
  constexpr double kMinCovered = 0.10, kMinFamilyShare = 0.01;
  const RooflineKernel* top = nullptr;
  for (const RooflineKernel& k : rf.kernels) {
    if (covered < kMinCovered) break;
    if (k.roof_share && !k.impossible && k.busy_share >= kMinFamilyShare) {
      top = &k;
      break;
    }
  }
  if (top != nullptr) {
    Finding f = Make("kernel.roofline", Severity::kInfo,
                     fmt::format("Roofline: hottest kernel with known work {} {}at {:.0f}% of its roof", Label(*top),
                                 top->bound.empty() ? "" : top->bound + "-bound ", 100 * *top->roof_share),
                     "memory-bound kernels gain from moving fewer bytes (fusion, larger batches per weight read, "
                     "lower-precision weights); compute-bound ones from the GEMM/attention backend and shapes "
                     "aligned to the tensor-core tiles");
    f.evidence.push_back(Num("kernel_time_with_known_work", 100 * covered, "%"));
    int shown = 0;
    for (const RooflineKernel& k : rf.kernels) {
      if (!k.roof_share || k.impossible || k.busy_share < kMinFamilyShare) continue;
      f.evidence.push_back(Num(Label(k), 100 * *k.roof_share, "% of roof",
                               fmt::format("{}{}; {:.0f}% of GPU busy", k.bound.empty() ? "" : k.bound + "-bound: ",
                                           Rates(k), 100 * k.busy_share)));
      if (++shown == 5) break;
    }
    out.push_back(std::move(f));
  }
}

// Each hot kernel family far under its roof.
void LowRooflineRule(const TraceReport& r, std::vector<Finding>& out,
                     const RooflineRuleOptions& o) {
  const auto& rf = r.roofline;
  for (const RooflineKernel& k : rf.kernels) {
    if (!k.roof_share || k.impossible || k.count == 0) continue;
    if (k.busy_share < o.hot_share || *k.roof_share >= o.low_roof_share) continue;
    if (k.total_ns / k.count < o.min_mean_ns) continue;
    Finding f = Make("kernel.roofline_low", Severity::kWarn,
                     fmt::format("{} takes {:.0f}% of GPU busy time at {:.0f}% of its {} roof", Label(k), 100 * k.busy_share,
                                 100 * *k.roof_share, k.bound.empty() ? "bandwidth" : k.bound),
                     k.bound == "compute"
                         ? "check the backend chose a tensor-core kernel for these shapes and dtype (dimensions "
                           "multiples of 16, no fp32 fallback), and try the library's autotuning (cuBLASLt, "
                           "hipBLASLt, torch.compile max-autotune)"
                         : "the kernel moves its bytes slowly: check its access pattern (strided or transposed "
                           "inputs, .contiguous() copies), and whether a fused or vendor kernel exists for it");
    f.evidence.push_back(Num("roof_share", 100 * *k.roof_share, "%", Rates(k)));
    f.evidence.push_back(Num("busy_share", 100 * k.busy_share, "%"));
    f.evidence.push_back(Num("mean", static_cast<double>(k.total_ns) / static_cast<double>(k.count) / 1e3, "us"));
    if (k.intensity) f.evidence.push_back(Num("intensity", *k.intensity, "FLOP/byte"));
    if (k.ridge) f.evidence.push_back(Num("ridge", *k.ridge, "FLOP/byte"));
    f.latency_share = k.busy_share * (1 - *k.roof_share);
    out.push_back(std::move(f));
  }
}

}  // namespace

void RooflineRules(const TraceReport& r, std::vector<Finding>& out, const RooflineRuleOptions& o) {
  RateAbovePeakRule(r, out, o);
  if (r.roofline.kernels.empty()) return;
  RooflineGpuUnknownRule(r, out);
  HottestRooflineRule(r, out);
  LowRooflineRule(r, out, o);
}

}  // namespace latdoc::rules
