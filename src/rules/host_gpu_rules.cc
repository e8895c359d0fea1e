#include "rules/host_rules_internal.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "host/proc_parsers.h"

// GPU rules of `latdoc doctor` (gpu.clock_policy, gpu.throttle, gpu.power_cap, gpu.pcie_link,
// gpu.persistence): one finding per GPU and check. Shared helpers: host_rules_internal.h.
namespace latdoc::rules::host_rules_internal {
namespace {

// NVML clocks-event reason bits (nvml.h nvmlClocksEventReasons).
constexpr uint64_t kReasonGpuIdle = 0x1;
constexpr uint64_t kReasonSwPowerCap = 0x4;
constexpr uint64_t kReasonHwSlowdown = 0x8;
constexpr uint64_t kReasonSwThermal = 0x20;
constexpr uint64_t kReasonHwThermal = 0x40;
constexpr uint64_t kReasonHwPowerBrake = 0x80;
constexpr uint64_t kReasonsHard =
    kReasonHwSlowdown | kReasonSwThermal | kReasonHwThermal | kReasonHwPowerBrake;

constexpr int64_t kBusyUtilPct = 50;  // "under load" for clock and link checks

bool GpuBusy(const GpuFacts& g) { return g.util_pct.known() && *g.util_pct >= kBusyUtilPct; }

// ---------------------------------------------------------------------------------------------
// GPU clocks: configured policy (AMD) and clocks observed under load (both vendors).

Finding ClockPolicy(const GpuFacts& g) {
  const std::string id = "gpu.clock_policy";
  const std::string who = GpuLabel(g);
  Finding f = Make(id, Layer::kSystem, Severity::kOk, who + ": clocks as expected");
  f.evidence.push_back(FactNum("sm_clock", g.sm_clock_mhz, "MHz"));
  f.evidence.push_back(FactNum("max_sm_clock", g.max_sm_clock_mhz, "MHz"));
  f.evidence.push_back(FactNum("gpu_util", g.util_pct, "%"));
  if (g.vendor == "amd") {
    if (!g.perf_level.known()) return Skip(id, Layer::kSystem, who, g.perf_level.reason);
    const std::string& lvl = *g.perf_level;
    f.evidence.push_back(Text("performance_level", lvl));
    if (g.sclk_deep_sleep.known() && *g.sclk_deep_sleep) {
      f.evidence.push_back(Text("sclk", "deep sleep (S: level current): normal at idle"));
    }
    const std::string reset =
        fmt::format("amd-smi set -g {} -l AUTO   (or: echo auto > /sys/bus/pci/devices/{}/"
                    "power_dpm_force_performance_level)", g.index, g.bdf);
    if (lvl == "low" || lvl == "profile_min_sclk" || lvl == "profile_min_mclk") {
      f.severity = Severity::kFail;
      f.title = who + ": performance level '" + lvl + "' pins clocks low";
      f.advice = reset;
      return f;
    }
    if (lvl == "profile_standard") {
      f.severity = Severity::kWarn;
      f.title = who + ": performance level 'profile_standard' fixes clocks below peak";
      f.advice = reset;
      return f;
    }
    if (lvl == "manual") {
      f.severity = Severity::kWarn;
      f.title = who + ": performance level 'manual': the enabled sclk levels may cap the clock";
      f.advice = "check pp_dpm_sclk / pp_od_clk_voltage; to undo: " + reset;
      return f;
    }
    if (lvl == "perf_determinism") {
      f.severity = Severity::kInfo;
      f.title = who + ": determinism mode caps sclk (AMD's advice for steadier clocks)";
      f.advice = "intentional on MI300X (rocm-smi --setperfdeterminism 1900); revert with rocm-smi -r";
      return f;
    }
  }
  if (GpuBusy(g) && g.sm_clock_mhz.known() && g.max_sm_clock_mhz.known() &&
      *g.sm_clock_mhz < 0.8 * static_cast<double>(*g.max_sm_clock_mhz)) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{}: {} of {} MHz while {}% busy", who, *g.sm_clock_mhz,
                          *g.max_sm_clock_mhz, *g.util_pct);
    f.advice = g.vendor == "nvidia"
                   ? "see gpu.throttle and gpu.power_cap; nvidia-smi -q -d PERFORMANCE"
                   : "see gpu.power_cap; amd-smi metric --clock --power";
    return f;
  }
  if (!g.sm_clock_mhz.known() && g.vendor == "nvidia") {
    return Skip(id, Layer::kSystem, who, g.sm_clock_mhz.reason);
  }
  if (!GpuBusy(g)) {
    bool idle_reason = g.clocks_event_reasons.known() && (*g.clocks_event_reasons & kReasonGpuIdle);
    bool deep_sleep = g.sclk_deep_sleep.known() && *g.sclk_deep_sleep;
    if (idle_reason || deep_sleep) {
      f.title = who + ": idle, low clock is normal power management";
    } else if (!g.util_pct.known()) {
      f.title = who + ": clock policy normal; load unknown, clocks not judged";
    } else {
      f.title = who + ": idle; clocks not judged";
    }
  }
  return f;
}

std::string ReasonNames(uint64_t r) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {0x1, "GpuIdle"}, {0x2, "ApplicationsClocksSetting"}, {0x4, "SwPowerCap"},
      {0x8, "HwSlowdown"}, {0x10, "SyncBoost"}, {0x20, "SwThermalSlowdown"},
      {0x40, "HwThermalSlowdown"}, {0x80, "HwPowerBrakeSlowdown"}, {0x100, "DisplayClockSetting"}};
  std::string s;
  for (auto [bit, name] : kNames) {
    if (r & bit) s += (s.empty() ? "" : ", ") + std::string(name);
  }
  return s.empty() ? "None" : s;
}

// AMD: amd-smi's throttle status (and, on MI300 and later, which violations are active). A GPU
// that amd-smi says is THROTTLED while busy runs below its clocks; some Navi firmware sets the
// TEMP_HOTSPOT bit at idle too (ROCm/rocm-systems issue 11781), so an idle GPU is not judged.
std::optional<Finding> AmdThrottle(const GpuFacts& g) {
  if (!g.throttle_status.known()) return std::nullopt;   // no amd-smi: as before, no finding
  const std::string id = "gpu.throttle";
  const std::string who = GpuLabel(g);
  Finding f = Make(id, Layer::kSystem, Severity::kOk, who + ": amd-smi reports no throttling");
  f.evidence.push_back(Text("throttle_status", *g.throttle_status));
  if (g.throttle_active.known() && !g.throttle_active->empty()) {
    f.evidence.push_back(Text("active_violations", *g.throttle_active));
  }
  f.evidence.push_back(FactNum("gpu_util", g.util_pct, "%"));
  if (*g.throttle_status == "THROTTLED") {
    const std::string why = g.throttle_active.known() && !g.throttle_active->empty()
                                ? " (" + *g.throttle_active + ")"
                                : "";
    if (GpuBusy(g)) {
      f.severity = Severity::kWarn;
      f.title = who + ": clocks throttled while busy" + why;
      f.advice = "amd-smi metric --power --temperature --clock (socket power against the cap, "
                 "hotspot and memory temperatures), amd-smi metric --throttle for the violation "
                 "counters; check cooling and the power cap (gpu.power_cap)";
    } else {
      f.severity = g.util_pct.known() ? Severity::kOk : Severity::kInfo;
      f.title = fmt::format("{}: amd-smi reports THROTTLED{} ({}), not judged", who, why,
                            g.util_pct.known() ? fmt::format("GPU at {}%", *g.util_pct)
                                               : "GPU load unknown");
    }
  }
  return f;
}

std::optional<Finding> Throttle(const GpuFacts& g) {
  if (g.vendor == "amd") return AmdThrottle(g);
  if (g.vendor != "nvidia") return std::nullopt;
  const std::string id = "gpu.throttle";
  const std::string who = GpuLabel(g);
  if (!g.clocks_event_reasons.known()) {
    return Skip(id, Layer::kSystem, who, g.clocks_event_reasons.reason);
  }
  const uint64_t r = *g.clocks_event_reasons;
  Finding f = Make(id, Layer::kSystem, Severity::kOk, who + ": no clock slowdown reason active");
  f.evidence.push_back(Text("clocks_event_reasons", fmt::format("0x{:x} ({})", r, ReasonNames(r))));
  f.evidence.push_back(FactNum("gpu_util", g.util_pct, "%"));
  if (r & kReasonsHard) {
    f.severity = Severity::kFail;
    f.title = who + ": clocks cut by " + ReasonNames(r & kReasonsHard);
    f.advice = "check cooling and the PSU / power brake (nvidia-smi -q -d PERFORMANCE,TEMPERATURE)";
  } else if ((r & kReasonSwPowerCap) && GpuBusy(g)) {
    f.severity = Severity::kWarn;
    f.title = who + ": held to the power limit while busy (SwPowerCap)";
    f.advice = "compare the power limit with the default (gpu.power_cap); nvidia-smi -pl <default W>";
  } else if (r == kReasonGpuIdle) {
    f.title = who + ": idle (GpuIdle): normal";
  } else if (r & ~kReasonGpuIdle) {
    // A soft reason with the GPU idle, or its load unknown: said, not judged.
    f.severity = g.util_pct.known() ? Severity::kOk : Severity::kInfo;
    f.title = fmt::format("{}: {} active ({}), not judged", who, ReasonNames(r & ~kReasonGpuIdle),
                          g.util_pct.known() ? fmt::format("GPU at {}%", *g.util_pct) : "GPU load unknown");
  }
  return f;
}

Finding PowerCap(const GpuFacts& g) {
  const std::string id = "gpu.power_cap";
  const std::string who = GpuLabel(g);
  if (!g.power_limit_w.known()) return Skip(id, Layer::kSystem, who, g.power_limit_w.reason);
  if (!g.power_default_limit_w.known()) {
    return Skip(id, Layer::kSystem, who, g.power_default_limit_w.reason);
  }
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   fmt::format("{}: power limit {:.0f} W (default)", who, *g.power_limit_w));
  f.evidence.push_back(Num("power_limit", *g.power_limit_w, "W"));
  f.evidence.push_back(Num("power_default_limit", *g.power_default_limit_w, "W"));
  if (*g.power_limit_w < 0.95 * *g.power_default_limit_w) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{}: power limit {:.0f} W below the default {:.0f} W", who,
                          *g.power_limit_w, *g.power_default_limit_w);
    f.advice = g.vendor == "nvidia"
                   ? fmt::format("nvidia-smi -i {} -pl {:.0f}", g.index, *g.power_default_limit_w)
                   : fmt::format("amd-smi set -g {} -o {:.0f}", g.index, *g.power_default_limit_w);
  }
  return f;
}

// The PCIe generation each model is built for (vendor datasheets; ROCm/ROCm
// docs/reference/gpu-arch-specs.rst, stas00/ml-engineering compute/accelerator/README.md).
std::optional<double> ExpectedMaxGts(const GpuFacts& g) {
  if (!g.name.known()) return std::nullopt;
  const std::string& n = *g.name;
  for (const char* m : {"H100", "H200", "B200", "MI300", "MI325", "MI355"}) {
    if (n.find(m) != std::string::npos) return 32.0;
  }
  for (const char* m : {"A100", "L40S", "MI210", "MI250"}) {
    if (n.find(m) != std::string::npos) return 16.0;
  }
  return std::nullopt;
}

// "Gen5", or "20 GT/s" for a rate that is no PCIe generation.
std::string PcieGen(double gts) {
  auto n = host::PcieGenFromGts(gts);
  return n ? fmt::format("Gen{}", *n) : fmt::format("{} GT/s", gts);
}

// gpu.pcie_link when every link runs at its max: warns (on `f`) when the slot holds the GPU
// below the speed it is built for.
void JudgeSlotSpeed(const GpuFacts& g, const std::string& who, Finding& f) {
  // The GPU's own max_link_speed is the card's capability: a Gen5 card in a Gen4 slot shows
  // 32 GT/s there. The slot's (or a switch's) limit is the lowest max along the path.
  auto expected = ExpectedMaxGts(g);
  std::optional<double> path_max;
  for (const auto& l : g.pcie_path) {
    if (l.max_speed_gts.known()) path_max = std::min(path_max.value_or(*l.max_speed_gts), *l.max_speed_gts);
  }
  if (expected && path_max && *path_max + 0.01 < *expected) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{}: slot allows only {} GT/s; this GPU is built for {} GT/s", who, *path_max,
                          *expected);
    f.advice = "move the GPU to a Gen5 slot or check the BIOS link speed setting";
  }
}

Finding PcieLink(const GpuFacts& g) {
  const std::string id = "gpu.pcie_link";
  const std::string who = GpuLabel(g);
  if (g.pcie_path.empty()) return Skip(id, Layer::kSystem, who, "no PCI link information");
  Finding f = Make(id, Layer::kSystem, Severity::kOk, who + ": PCIe links at full width and speed");
  std::string worst_width, worst_speed;
  bool any_known = false;
  // A link trains to the lower max of its two ends (nvtop keeps the minimum over the path): a
  // Gen4 card under a Gen5 port runs at full speed at Gen4. The path runs GPU first, root port
  // last, and the ends pair up from the GPU: the GPU with the port above it, then each switch's
  // upstream port with the port above that (hops 0-1, 2-3, ...). A hop without a partner (a GPU
  // on a VM's root bus) has only its own max.
  const auto& path = g.pcie_path;
  for (size_t i = 0; i < path.size(); ++i) {
    const auto& l = path[i];
    std::string text;
    if (l.cur_speed_gts.known() && l.max_speed_gts.known() && l.cur_width.known() &&
        l.max_width.known()) {
      any_known = true;
      double limit_gts = *l.max_speed_gts;
      int64_t limit_width = *l.max_width;
      if ((i ^ 1) < path.size()) {
        const auto& other = path[i ^ 1];
        if (other.max_speed_gts.known()) limit_gts = std::min(limit_gts, *other.max_speed_gts);
        if (other.max_width.known()) limit_width = std::min(limit_width, *other.max_width);
      }
      text = fmt::format("{} x{} of {} x{}", PcieGen(*l.cur_speed_gts), *l.cur_width,
                         PcieGen(*l.max_speed_gts), *l.max_width);
      if (limit_gts + 0.01 < *l.max_speed_gts || limit_width < *l.max_width) {
        text += fmt::format(" (link max {} x{})", PcieGen(limit_gts), limit_width);
      }
      if (*l.cur_width < limit_width && worst_width.empty()) {
        worst_width = l.role + " " + l.bdf + ": " + text;
      }
      if (*l.cur_speed_gts + 0.01 < limit_gts && worst_speed.empty()) {
        worst_speed = l.role + " " + l.bdf + ": " + text;
      }
    } else {
      text = "unknown: " + (!l.cur_width.known() ? l.cur_width.reason : l.cur_speed_gts.reason);
    }
    f.evidence.push_back(Text(l.role + " " + l.bdf, text));
  }
  if (!any_known) return Skip(id, Layer::kSystem, who, f.evidence.front().text);
  if (!worst_width.empty()) {
    f.severity = Severity::kFail;
    f.title = who + ": PCIe link trained narrower than it can: " + worst_width;
    f.advice = "reseat the GPU / riser, check the slot's lane wiring and BIOS bifurcation; "
               "lspci -vv -s " + g.bdf + " | grep -E 'LnkCap|LnkSta'";
    return f;
  }
  if (!worst_speed.empty()) {
    // NVIDIA lowers the link generation at idle; only a slow link under load is a fault.
    if (g.vendor == "nvidia" && !GpuBusy(g)) {
      // Without a load figure it may be power saving or a fault: said, not judged.
      f.severity = g.util_pct.known() ? Severity::kOk : Severity::kInfo;
      f.title = who + (g.util_pct.known() ? ": PCIe speed below max while idle (normal power saving): "
                                          : ": PCIe speed below max, GPU load unknown (NVIDIA lowers it "
                                            "at idle; check under load): ") +
                worst_speed;
      return f;
    }
    f.severity = Severity::kWarn;
    f.title = who + ": PCIe link below its max speed: " + worst_speed;
    f.advice = "check under load (nvidia-smi -q -d PCIE / amd-smi metric --pcie); BIOS PCIe "
               "speed setting; lspci -vv -s " + g.bdf;
    return f;
  }
  JudgeSlotSpeed(g, who, f);
  return f;
}

std::optional<Finding> Persistence(const GpuFacts& g) {
  if (g.vendor != "nvidia") return std::nullopt;
  const std::string id = "gpu.persistence";
  const std::string who = GpuLabel(g);
  if (!g.persistence_mode.known()) return Skip(id, Layer::kSystem, who, g.persistence_mode.reason);
  if (*g.persistence_mode) return Make(id, Layer::kSystem, Severity::kOk, who + ": persistence mode on");
  Finding f = Make(id, Layer::kSystem, Severity::kWarn,
                   who + ": persistence mode off: the first CUDA client pays driver start-up");
  f.advice = "systemctl enable --now nvidia-persistenced   (or: nvidia-smi -pm 1)";
  return f;
}

}  // namespace

std::vector<Finding> JudgeGpus(const HostFacts& facts) {
  std::vector<Finding> out;
  for (const auto& g : facts.gpus) {
    out.push_back(ClockPolicy(g));
    if (auto f = Throttle(g)) out.push_back(std::move(*f));
    out.push_back(PowerCap(g));
    out.push_back(PcieLink(g));
    if (auto f = Persistence(g)) out.push_back(std::move(*f));
  }
  return out;
}

}  // namespace latdoc::rules::host_rules_internal
