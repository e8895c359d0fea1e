#include "rules/host_rules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "host/proc_parsers.h"
#include "host/vllm_config.h"
#include "rules/vllm_args.h"

namespace latdoc::rules {
namespace {

using host::Fact;
using host::GpuFacts;
using host::HostFacts;

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
// net.irq: one CPU taking more than about half of a NIC's interrupts (latdoc's threshold; IRQ
// and RPS steering: torvalds/linux Documentation/networking/scaling.rst).
constexpr double kIrqOneCpuShare = 0.5;

Evidence Num(std::string name, double v, std::string unit) {
  return Evidence{std::move(name), v, std::move(unit), ""};
}
Evidence Text(std::string name, std::string text) {
  return Evidence{std::move(name), std::nullopt, "", std::move(text)};
}
template <typename T>
Evidence FactNum(std::string name, const Fact<T>& f, std::string unit) {
  if (f.known()) return Num(std::move(name), static_cast<double>(*f), std::move(unit));
  return Evidence{std::move(name), std::nullopt, std::move(unit), "unknown: " + f.reason};
}

// The sample interval in seconds, for "N in S s" titles.
double SampleSeconds(const HostFacts& facts) {
  return static_cast<double>(facts.sample_interval_ns) / 1e9;
}

Finding Make(std::string id, Layer layer, Severity sev, std::string title) {
  Finding f;
  f.id = std::move(id);
  f.layer = layer;
  f.severity = sev;
  f.title = std::move(title);
  return f;
}

Finding Skip(std::string id, Layer layer, std::string subject, const std::string& reason) {
  Finding f = Make(std::move(id), layer, Severity::kSkip, subject + ": not checked");
  // A fact an older latdoc's facts file does not have comes back with no reason.
  f.evidence.push_back(Text("reason", reason.empty() ? "not in these facts (collected by an older latdoc)"
                                                     : reason));
  return f;
}

std::string GpuLabel(const GpuFacts& g) {
  return fmt::format("GPU {} ({}{})", g.index, g.bdf,
                     g.name.known() ? ", " + *g.name : std::string());
}

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
      auto gen = [](double gts) {
        auto n = host::PcieGenFromGts(gts);
        return n ? fmt::format("Gen{}", *n) : fmt::format("{} GT/s", gts);
      };
      double limit_gts = *l.max_speed_gts;
      int64_t limit_width = *l.max_width;
      if ((i ^ 1) < path.size()) {
        const auto& other = path[i ^ 1];
        if (other.max_speed_gts.known()) limit_gts = std::min(limit_gts, *other.max_speed_gts);
        if (other.max_width.known()) limit_width = std::min(limit_width, *other.max_width);
      }
      text = fmt::format("{} x{} of {} x{}", gen(*l.cur_speed_gts), *l.cur_width,
                         gen(*l.max_speed_gts), *l.max_width);
      if (limit_gts + 0.01 < *l.max_speed_gts || limit_width < *l.max_width) {
        text += fmt::format(" (link max {} x{})", gen(limit_gts), limit_width);
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
  // The GPU's own max_link_speed is the card's capability: a Gen5 card in a Gen4 slot shows
  // 32 GT/s there. The slot's (or a switch's) limit is the lowest max along the path.
  auto expected = ExpectedMaxGts(g);
  std::optional<double> path_max;
  for (const auto& l : path) {
    if (l.max_speed_gts.known()) path_max = std::min(path_max.value_or(*l.max_speed_gts), *l.max_speed_gts);
  }
  if (expected && path_max && *path_max + 0.01 < *expected) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{}: slot allows only {} GT/s; this GPU is built for {} GT/s", who, *path_max,
                          *expected);
    f.advice = "move the GPU to a Gen5 slot or check the BIOS link speed setting";
  }
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

// ---------------------------------------------------------------------------------------------
// NUMA.

std::set<int64_t> CpuSet(const std::string& list) {
  auto v = host::ParseCpuList(list);
  return v ? std::set<int64_t>(v->begin(), v->end()) : std::set<int64_t>();
}

// The GPUs the server uses, and how that was decided.
struct ServerGpuSet {
  std::vector<const GpuFacts*> gpus;
  // How they were chosen: named by a *_VISIBLE_DEVICES variable, taken from vLLM's parallel
  // sizes, or every GPU of the host (nothing said which).
  enum class How { kVariable, kVllmParallel, kAll } how = How::kAll;
  std::string note;  // for evidence: the variable, the sizes, or why all
};

// *_VISIBLE_DEVICES when set to plain indices. Without one, vLLM takes the first
// tensor x pipeline x data-parallel GPUs (devices from 0; `index` is PCI order, as with
// CUDA_DEVICE_ORDER=PCI_BUS_ID). Else all. When the variable names none of the host's GPUs (an
// index past the end, CUDA's "-1"), the set is empty and the note says so.
ServerGpuSet ChooseServerGpus(const HostFacts& facts) {
  ServerGpuSet out;
  for (const auto& g : facts.gpus) out.gpus.push_back(&g);
  if (!facts.server) {
    out.note = "no server process";
    return out;
  }
  const host::ServerProcess& s = *facts.server;
  if (s.env.known()) {
    for (const char* var : {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}) {
      auto it = s.env->find(var);
      if (it == s.env->end()) continue;
      std::vector<const GpuFacts*> picked;
      for (auto word : Split(it->second, ',')) {
        auto idx = ParseInt64(word);
        if (!idx) {  // UUIDs or MIG ids: not mapped here
          out.note = fmt::format("{}={} is not plain indices: all GPUs", var, it->second);
          return out;
        }
        for (const auto& g : facts.gpus) {
          if (g.index == *idx) picked.push_back(&g);
        }
      }
      out.how = ServerGpuSet::How::kVariable;
      out.note = picked.empty() ? fmt::format("{}={} names no GPU of this host ({} found)", var, it->second,
                                              facts.gpus.size())
                                : fmt::format("{}={}", var, it->second);
      out.gpus = std::move(picked);
      return out;
    }
  }
  // An unreadable environment may hold a variable: then nothing says which GPUs (all assumed).
  const char* why_unnamed = s.env.known() ? "no *_VISIBLE_DEVICES" : "the server's environment is unreadable";
  if (s.kind == "vllm" && s.env.known()) {
    const std::vector<std::string> a = NormalizeVllmArgv(
        s.config_file_args.known() ? host::WithConfigFileArgs(s.argv, *s.config_file_args) : s.argv);
    auto size = [&](const char* flag) {
      const std::optional<double> v = FlagDouble(a, flag);
      return v && *v >= 1 && *v <= 4096 ? static_cast<size_t>(*v) : size_t{1};
    };
    const size_t dp = FlagValue(a, "--data-parallel-size-local") ? size("--data-parallel-size-local")
                                                                 : size("--data-parallel-size");
    const size_t n = size("--tensor-parallel-size") * size("--pipeline-parallel-size") * dp;
    if (n <= out.gpus.size()) {
      out.gpus.resize(n);
      out.how = ServerGpuSet::How::kVllmParallel;
      out.note = fmt::format("{}: vLLM's first {} GPU{} (tensor x pipeline x data parallel)", why_unnamed, n,
                             n == 1 ? "" : "s");
      return out;
    }
  }
  out.note = fmt::format("{}: all GPUs", why_unnamed);
  return out;
}

std::vector<const GpuFacts*> ServerGpus(const HostFacts& facts) { return ChooseServerGpus(facts).gpus; }

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t'\"$`\\*?;&|<>(){}") == std::string::npos;
    s += plain ? a : "'" + a + "'";
  }
  return s;
}

Finding GpuNuma(const HostFacts& facts) {
  const std::string id = "gpu.numa";
  const size_t nodes = facts.cpu.numa_nodes.size();
  if (facts.gpus.empty()) return Skip(id, Layer::kSystem, "GPU NUMA locality", "no GPU found");
  if (nodes <= 1) {
    Finding f = Make(id, Layer::kSystem, Severity::kOk,
                     "one NUMA node: every CPU is local to the GPUs");
    for (const auto& g : facts.gpus) {
      f.evidence.push_back(FactNum(fmt::format("gpu{}_numa_node", g.index), g.numa_node, ""));
    }
    return f;
  }
  const ServerGpuSet chosen = ChooseServerGpus(facts);
  const std::vector<const GpuFacts*>& gpus = chosen.gpus;
  if (gpus.empty()) return Skip(id, Layer::kSystem, "server NUMA binding", chosen.note);
  std::set<int64_t> local;
  std::vector<int64_t> gpu_nodes;
  for (const auto* g : gpus) {
    if (!g->numa_node.known()) {
      return Skip(id, Layer::kSystem, GpuLabel(*g), g->numa_node.reason);
    }
    if (*g->numa_node < 0) {
      Finding f = Make(id, Layer::kSystem, Severity::kInfo,
                       GpuLabel(*g) + ": the platform reports no NUMA node (numa_node -1) on a "
                                      "multi-node host");
      f.advice = "enable NUMA / ACPI SRAT reporting in the BIOS (NPS setting) so binding can be "
                 "checked; nvidia-smi topo -m shows the affinity the driver assumes";
      return f;
    }
    gpu_nodes.push_back(*g->numa_node);
    for (const auto& n : facts.cpu.numa_nodes) {
      if (n.id == *g->numa_node) {
        for (int64_t c : CpuSet(n.cpulist)) local.insert(c);
      }
    }
  }
  if (!facts.server) {
    return Skip(id, Layer::kSystem, "server NUMA binding",
                facts.server_note.empty() ? "no server process" : facts.server_note);
  }
  // With every GPU assumed and GPUs on several nodes, every node is "local": nothing to judge.
  if (chosen.how == ServerGpuSet::How::kAll && std::set<int64_t>(gpu_nodes.begin(), gpu_nodes.end()).size() > 1) {
    return Skip(id, Layer::kSystem, "server NUMA binding",
                "which GPUs the server uses is unknown (" + chosen.note +
                    ") and the host's GPUs sit on several NUMA nodes");
  }
  const auto& s = *facts.server;
  if (!s.cpus_allowed_list.known()) {
    return Skip(id, Layer::kSystem, "server NUMA binding", s.cpus_allowed_list.reason);
  }
  std::set<int64_t> allowed = CpuSet(*s.cpus_allowed_list);
  size_t remote = 0;
  for (int64_t c : allowed) remote += local.count(c) == 0;
  // Memory may come only from nodes without any of its GPUs (a --membind or cpuset.mems
  // elsewhere): every page is remote. A list that holds a GPU's node is fine: allocations
  // follow the CPU the thread runs on.
  std::vector<int64_t> mem_nodes;
  if (s.mems_allowed_list.known()) {
    if (auto v = host::ParseCpuList(*s.mems_allowed_list)) mem_nodes = *v;
  }
  const bool memory_remote =
      !mem_nodes.empty() && std::none_of(mem_nodes.begin(), mem_nodes.end(), [&](int64_t n) {
        return std::find(gpu_nodes.begin(), gpu_nodes.end(), n) != gpu_nodes.end();
      });
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   fmt::format("server pid {} runs on CPUs local to its GPUs", s.pid));
  f.evidence.push_back(Text("cpus_allowed_list", *s.cpus_allowed_list));
  if (s.mems_allowed_list.known()) f.evidence.push_back(Text("mems_allowed_list", *s.mems_allowed_list));
  std::string node_list;
  for (int64_t n : gpu_nodes) node_list += (node_list.empty() ? "" : ",") + std::to_string(n);
  f.evidence.push_back(Text("gpu_numa_nodes", node_list));
  f.evidence.push_back(Text("server_gpus", chosen.note));
  if (memory_remote) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server pid {} may allocate memory only on NUMA node(s) {}, none of them its GPUs' ({})",
                          s.pid, *s.mems_allowed_list, node_list);
    f.advice = gpus.size() == 1
                   ? fmt::format("latdoc numa-exec --gpu {} -- {}", gpus[0]->index, ShellJoin(s.argv))
                   : fmt::format("numactl --cpunodebind={0} --membind={0} {1}", node_list, ShellJoin(s.argv));
  } else if (remote > 0) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server pid {} may run on {} CPUs of another NUMA node than its GPUs",
                          s.pid, remote);
    if (gpus.size() == 1) {
      f.advice = fmt::format("latdoc numa-exec --gpu {} -- {}", gpus[0]->index, ShellJoin(s.argv));
    } else {
      f.advice = fmt::format("numactl --cpunodebind={0} --membind={0} {1}", node_list,
                             ShellJoin(s.argv));
    }
  }
  return f;
}

// ---------------------------------------------------------------------------------------------
// Host CPU and kernel settings.

Finding NumaBalancing(const HostFacts& facts) {
  const std::string id = "host.numa_balancing";
  const auto& nb = facts.cpu.numa_balancing;
  if (!nb.known()) return Skip(id, Layer::kSystem, "automatic NUMA balancing", nb.reason);
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   *nb == 0 ? "automatic NUMA balancing off"
                            : "automatic NUMA balancing on, harmless with one NUMA node");
  f.evidence.push_back(Num("kernel.numa_balancing", static_cast<double>(*nb), ""));
  f.evidence.push_back(Num("numa_nodes", static_cast<double>(facts.cpu.numa_nodes.size()), ""));
  if (*nb != 0 && facts.cpu.numa_nodes.size() > 1) {
    f.severity = Severity::kWarn;
    f.title = "automatic NUMA balancing on: page migrations stall GPU host threads";
    f.advice = "sysctl -w kernel.numa_balancing=0   (persist in /etc/sysctl.d/)";
  }
  return f;
}

Finding Thp(const HostFacts& facts) {
  const std::string id = "host.thp";
  const auto& t = facts.cpu.transparent_hugepage;
  if (!t.known()) return Skip(id, Layer::kSystem, "transparent huge pages", t.reason);
  Finding f = Make(id, Layer::kSystem, Severity::kOk, "transparent huge pages: " + *t);
  if (*t == "always") {
    f.severity = Severity::kInfo;
    f.title = "transparent huge pages 'always': khugepaged compaction can add CPU stalls";
    f.advice = "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled";
  }
  return f;
}

Finding Governor(const HostFacts& facts) {
  const std::string id = "cpu.governor";
  const auto& g = facts.cpu.governor;
  if (!g.known()) return Skip(id, Layer::kSystem, "CPU frequency governor", g.reason + " (no cpufreq: typical in a VM)");
  Finding f = Make(id, Layer::kSystem, Severity::kOk, "CPU governor: " + *g);
  if (*g != "performance") {
    f.severity = Severity::kWarn;
    f.title = "CPU governor '" + *g + "': slower kernel launches and tokenization";
    f.advice = "cpupower frequency-set -g performance";
  }
  return f;
}

Finding Saturation(const HostFacts& facts) {
  const std::string id = "cpu.saturation";
  if (!facts.server) return Skip(id, Layer::kSystem, "server threads", facts.server_note);
  const auto& s = *facts.server;
  if (!s.threads.known()) return Skip(id, Layer::kSystem, "server threads", s.threads.reason);
  if (s.threads->empty()) return Skip(id, Layer::kSystem, "server threads", "no thread sampled");
  const auto& top = s.threads->front();
  // A thread of one of the server's children (vLLM V1's engine core or a GPU worker) is not the
  // front end: it says the engine's host side holds the GPU back.
  const bool child = top.pid != 0 && top.pid != s.pid;
  const std::string process = top.process.empty() ? "pid " + std::to_string(top.pid) : top.process;
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   fmt::format("busiest server thread at {:.0f}% of a core", top.cpu_pct));
  f.evidence.push_back(Num("busiest_thread_cpu", top.cpu_pct, "%"));
  f.evidence.push_back(Text("busiest_thread",
                            fmt::format("tid {} ({}), on CPU {}{}", top.tid, top.comm, top.last_cpu,
                                        child ? fmt::format(", in {} (pid {})", process, top.pid)
                                              : std::string())));
  f.evidence.push_back(Num("sample_interval", static_cast<double>(facts.sample_interval_ns) / 1e6, "ms"));
  if (!s.children.empty()) {
    std::string names;
    for (const auto& c : s.children) names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", c.pid, c.name);
    f.evidence.push_back(Text("child_processes", names));
  }
  if (top.cpu_pct < 95) return f;
  f.severity = Severity::kWarn;
  if (child && top.process.find("EngineCore") != std::string::npos) {
    f.title = fmt::format("engine core thread {} ({}) pinned at {:.0f}% of a core: the scheduler "
                          "and input preparation hold the GPU back", top.tid, top.comm, top.cpu_pct);
    f.advice = "--async-scheduling (schedules the next step while the GPU runs this one); keep "
               "CUDA graphs on (config.enforce_eager); the performance governor and a NUMA-local "
               "core for the engine; latdoc trace shows the GPU idle while the host works";
  } else if (child && top.process.find("Worker") != std::string::npos) {
    f.title = fmt::format("GPU worker thread {} ({}, {}) pinned at {:.0f}% of a core: kernel "
                          "launches are host-bound", top.tid, top.comm, top.process, top.cpu_pct);
    f.advice = "keep CUDA graphs on (config.enforce_eager, config.cudagraph_capture); the "
               "performance governor; a NUMA-local core for the worker (gpu.numa)";
  } else if (child && top.process.find("APIServer") == std::string::npos) {
    f.title = fmt::format("thread {} ({}) of the server's child {} pinned at {:.0f}% of a core",
                          top.tid, top.comm, process, top.cpu_pct);
    f.advice = "see what that process does (py-spy dump --pid " + std::to_string(top.pid) + ")";
  } else {  // the server itself, or one of its API-server processes (--api-server-count)
    f.title = fmt::format("server thread {} ({}) pinned at {:.0f}% of a core: a GIL-bound front end",
                          top.tid, top.comm, top.cpu_pct);
    f.advice = s.kind == "vllm"
                   ? "run more API-server processes: vllm serve ... --api-server-count 4 "
                     "(or data parallelism); --stream-interval 2+ cuts per-token work"
                   : "spread the HTTP front end over more processes / threads";
  }
  return f;
}

// CFS quota throttling of the server's cgroup. When a group has used its quota within a period
// (100 ms by default), every thread in it waits for the next period: the API server's event
// loop and the engine's scheduler stall together, which shows up as TTFT and ITL spikes at p99
// while average CPU use looks moderate. Judged on the sample interval first (throttling now;
// a 300 ms sample holds only 3-4 periods, so it takes two throttled ones), then on the counters
// since the cgroup was made (a doctor run at idle still sees what load did; they include the
// server's start-up, so they need a few seconds of activity and ten throttled periods).
constexpr double kThrottledNowShare = 0.05;    // of the periods in the sample interval
constexpr int64_t kThrottledNowMin = 2;
constexpr double kThrottledEverShare = 0.01;   // of the periods since the cgroup was made
constexpr int64_t kEverPeriodsMin = 100;       // 10 s of activity at the default period
constexpr int64_t kThrottledEverMin = 10;

Finding CgroupThrottle(const HostFacts& facts) {
  const std::string id = "cpu.cgroup_throttle";
  const std::string what = "server CPU quota";
  if (!facts.server) return Skip(id, Layer::kSystem, what, facts.server_note);
  const auto& s = *facts.server;
  if (!s.cgroup_cpu.known()) return Skip(id, Layer::kSystem, what, s.cgroup_cpu.reason);
  const host::CgroupCpu& cg = *s.cgroup_cpu;
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   fmt::format("no CPU quota on the server's cgroup (v{})", cg.version));
  f.evidence.push_back(Text("cgroup", cg.cgroup));
  if (!cg.note.empty()) f.evidence.push_back(Text("note", cg.note));
  if (cg.limits.empty()) return f;

  // The limit that throttled most: in the sample when any did, else since it was made.
  auto now_share = [](const host::CgroupCpuLimit& l) {
    return l.periods_delta.known() && l.throttled_delta.known() && *l.periods_delta > 0 &&
                   *l.throttled_delta >= kThrottledNowMin
               ? static_cast<double>(*l.throttled_delta) / static_cast<double>(*l.periods_delta)
               : 0.0;
  };
  auto ever_share = [](const host::CgroupCpuLimit& l) {
    return l.nr_periods >= kEverPeriodsMin && l.nr_throttled >= kThrottledEverMin
               ? static_cast<double>(l.nr_throttled) / static_cast<double>(l.nr_periods)
               : 0.0;
  };
  const host::CgroupCpuLimit* worst = &cg.limits.front();
  for (const auto& l : cg.limits) {
    if (std::make_pair(now_share(l), ever_share(l)) >
        std::make_pair(now_share(*worst), ever_share(*worst))) {
      worst = &l;
    }
  }
  const host::CgroupCpuLimit& l = *worst;
  const double now = now_share(l);
  const double ever = ever_share(l);
  f.evidence.push_back(Text("limit_dir", l.dir));
  if (l.includes_latdoc) {
    f.evidence.push_back(Text("note", "latdoc itself runs in this group: its own probes drew on "
                                      "the quota during the sample"));
  }
  f.evidence.push_back(Num("quota", l.quota_cpus, "CPUs"));
  f.evidence.push_back(Num("period", static_cast<double>(l.period_us) / 1e3, "ms"));
  if (l.periods_delta.known() && l.throttled_delta.known()) {
    const double raw = *l.periods_delta > 0 ? static_cast<double>(*l.throttled_delta) /
                                                  static_cast<double>(*l.periods_delta)
                                            : 0.0;
    f.evidence.push_back(Text("throttled_in_sample",
                              fmt::format("{} of {} periods ({:.0f}%), {:.1f} ms waiting",
                                          *l.throttled_delta, *l.periods_delta, raw * 100,
                                          l.throttled_s_delta.value_or(0) * 1e3)));
  } else {
    f.evidence.push_back(FactNum("throttled_in_sample", l.throttled_delta, "periods"));
  }
  const double ever_raw = l.nr_periods > 0 ? static_cast<double>(l.nr_throttled) /
                                                  static_cast<double>(l.nr_periods)
                                            : 0.0;
  f.evidence.push_back(Text("throttled_since_start",
                            fmt::format("{} of {} periods ({:.1f}%), {:.1f} s waiting{}",
                                        l.nr_throttled, l.nr_periods, ever_raw * 100, l.throttled_s,
                                        l.nr_periods < kEverPeriodsMin
                                            ? " (too few periods to judge)" : "")));
  std::string quota = fmt::format("{:.2f}", l.quota_cpus);  // "2.50" -> "2.5 CPUs"
  quota.erase(quota.find_last_not_of('0') + 1);
  if (quota.back() == '.') quota.pop_back();
  quota += quota == "1" ? " CPU" : " CPUs";
  if ((l.nr_periods < kEverPeriodsMin || l.nr_throttled < kThrottledEverMin) && l.nr_throttled > 0) {
    f.title = fmt::format("server's cgroup has a CPU quota of {}; throttled in {} of {} periods "
                          "since it started, too few to judge", quota, l.nr_throttled, l.nr_periods);
  } else if (l.nr_throttled > 0) {
    f.title = fmt::format("server's cgroup has a CPU quota of {}; rarely throttled ({:.2f}% of "
                          "periods)", quota, ever_raw * 100);
  } else {
    f.title = fmt::format("server's cgroup has a CPU quota of {}; not throttled", quota);
  }
  const std::string advice = fmt::format(
      "raise or remove the CPU limit on the server's container: Kubernetes "
      "resources.limits.cpu (keep requests; or a Guaranteed pod with whole CPUs and the static "
      "CPU manager policy), docker run --cpus, systemd CPUQuota=. A throttled group stops every "
      "server thread for the rest of its {:.0f} ms period", static_cast<double>(l.period_us) / 1e3);
  if (now >= kThrottledNowShare) {
    f.severity = Severity::kFail;
    f.title = fmt::format("server's cgroup throttled in {:.0f}% of CPU periods during the sample "
                          "(quota {}): its threads stall until the next period", now * 100, quota);
    f.advice = advice;
  } else if (ever >= kThrottledEverShare) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server's cgroup throttled in {:.1f}% of CPU periods since it started, "
                          "start-up included (quota {})", ever * 100, quota);
    f.advice = advice;
  }
  return f;
}

// Pressure stall information: the share of time runnable tasks waited for a CPU, or tasks
// stalled on memory (reclaim, swap-in). Judged on the worst of the 10 s, 60 s and 300 s
// averages, so a doctor run just after the load still sees it.
constexpr double kCpuPressureWarnPct = 10;
constexpr double kCpuPressureFailPct = 40;
constexpr double kMemoryPressureWarnPct = 5;   // some: at least one task stalled
constexpr double kMemoryPressureFailPct = 5;   // full: every non-idle task stalled at once
constexpr double kSwapInWarnPagesPerS = 256;   // 1 MiB/s of 4 KiB pages

double WorstSome(const host::PsiFacts& p) {
  return std::max({p.some_avg10, p.some_avg60, p.some_avg300});
}
double WorstFull(const host::PsiFacts& p) {
  return p.has_full ? std::max({p.full_avg10, p.full_avg60, p.full_avg300}) : 0.0;
}
Evidence PsiText(const std::string& name, const host::PsiFacts& p, bool full) {
  return full ? Text(name, fmt::format("full avg10={:.2f} avg60={:.2f} avg300={:.2f} (%)",
                                       p.full_avg10, p.full_avg60, p.full_avg300))
              : Text(name, fmt::format("some avg10={:.2f} avg60={:.2f} avg300={:.2f} (%)",
                                       p.some_avg10, p.some_avg60, p.some_avg300));
}

// Judged on the server's own cgroup (v2 cpu.pressure: its tasks waiting) when known; the
// host-wide figure says only that some task somewhere waited, so it names the host, not the
// server.
Finding CpuPressure(const HostFacts& facts) {
  const std::string id = "cpu.pressure";
  const host::PsiFacts* server = nullptr;
  if (facts.server && facts.server->cgroup_cpu.known() && facts.server->cgroup_cpu->pressure.known()) {
    server = &*facts.server->cgroup_cpu->pressure;
  }
  const auto& host = facts.cpu.pressure;
  if (!server && !host.known()) return Skip(id, Layer::kSystem, "CPU pressure", host.reason);
  const double worst = WorstSome(server ? *server : *host);
  const char* whose = server ? "the server's tasks" : "tasks on the host";
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   fmt::format("CPU pressure low: {} waited for a CPU at most {:.1f}% of the time",
                               whose, worst));
  if (server) f.evidence.push_back(PsiText("server_cgroup_cpu_pressure", *server, false));
  if (host.known()) f.evidence.push_back(PsiText("host_cpu_pressure", *host, false));
  if (worst < kCpuPressureWarnPct) return f;
  f.severity = worst >= kCpuPressureFailPct ? Severity::kFail : Severity::kWarn;
  // A group's cpu.pressure also counts the time its own CPU quota held it back: then the
  // quota, not other work, is the cause (cpu.cgroup_throttle has the numbers and the fix).
  bool throttled = false;
  if (server) {
    for (const auto& l : facts.server->cgroup_cpu->limits) {
      throttled |= l.nr_throttled > 0 || (l.throttled_delta.known() && *l.throttled_delta > 0);
    }
  }
  if (throttled) {
    f.title = fmt::format("the server's tasks waited for a CPU {:.0f}% of the time (PSI of its "
                          "cgroup), partly held back by its own CPU quota", worst);
    f.advice = "see cpu.cgroup_throttle: raise or remove the server's CPU limit; then, if the "
               "pressure stays, find the other work on its cores (top -o %CPU, pidstat 1)";
    return f;
  }
  f.title = server ? fmt::format("the server's tasks waited for a CPU {:.0f}% of the time (PSI of "
                                 "its cgroup): its CPUs are oversubscribed", worst)
                   : fmt::format("host CPUs oversubscribed: runnable tasks waited for a CPU {:.0f}% "
                                 "of the time (PSI, whole host)", worst);
  f.advice = "find the other work (top -o %CPU, pidstat 1) and move it off the server's cores, "
             "or reserve CPUs for the server (latdoc numa-exec, taskset, the Kubernetes static "
             "CPU manager); cap helper threads (OMP_NUM_THREADS, TOKENIZERS_PARALLELISM=false)";
  return f;
}

Finding MemoryPressure(const HostFacts& facts) {
  const std::string id = "host.memory_pressure";
  const auto& m = facts.memory;
  const bool swap_known = m.swap_in_pages_delta.known() && m.swap_out_pages_delta.known();
  if (!m.pressure.known() && !swap_known) {
    return Skip(id, Layer::kSystem, "memory pressure", m.pressure.reason);
  }
  Finding f = Make(id, Layer::kSystem, Severity::kOk, "no memory pressure, no swapping in");
  std::vector<std::string> what;
  Severity sev = Severity::kOk;
  if (m.pressure.known()) {
    const double some = WorstSome(*m.pressure), full = WorstFull(*m.pressure);
    f.evidence.push_back(PsiText("memory_pressure", *m.pressure, false));
    if (m.pressure->has_full) f.evidence.push_back(PsiText("memory_pressure_full", *m.pressure, true));
    if (full >= kMemoryPressureFailPct) {
      sev = Severity::kFail;
      what.push_back(fmt::format("every task stalled on memory {:.0f}% of the time", full));
    } else if (some >= kMemoryPressureWarnPct) {
      sev = Severity::kWarn;
      what.push_back(fmt::format("tasks stalled on memory {:.0f}% of the time", some));
    }
  } else {
    f.evidence.push_back(Text("memory_pressure", "unknown: " + m.pressure.reason));
  }
  if (swap_known) {
    // Swapping in is what stalls a task (a major fault); swapping cold pages out alone is not.
    const int64_t in = *m.swap_in_pages_delta, out = *m.swap_out_pages_delta;
    const double secs = std::max(static_cast<double>(facts.sample_interval_ns) / 1e9, 1e-3);
    const double in_rate = static_cast<double>(in) / secs;
    f.evidence.push_back(Text("swap_in_sample", fmt::format("{} pages ({:.0f}/s)", in, in_rate)));
    f.evidence.push_back(Text("swap_out_sample", fmt::format("{} pages", out)));
    if (in_rate >= kSwapInWarnPagesPerS) {
      sev = std::max(sev, Severity::kWarn);
      what.push_back(fmt::format("swapping in {:.0f} pages/s during the sample", in_rate));
    }
  }
  if (sev == Severity::kOk) return f;
  f.severity = sev;
  std::string joined;
  for (const auto& w : what) joined += (joined.empty() ? "" : "; ") + w;
  f.title = "host memory under pressure: " + joined;
  f.advice = "find what holds host memory (free -m; ps aux --sort=-rss | head) and lower it (the "
             "server's CPU offload or KV offload size, other processes) or add memory; "
             "vm.swappiness=10 keeps the server's pages in RAM";
  return f;
}

// disk.log_write: what the server (and its children: vLLM's engine core) writes, judged by
// its rate, by the disk's flush rate (a logger that fsyncs each line blocks on every one), and
// by how busy the disk is. latdoc's thresholds: 50 MB/s is more than logs of a healthy server
// (a busy vLLM with request logging writes a few MB/s); 10 MB/s with 20 flushes/s or more is a
// synced stream; 1 MB/s to a disk 90% busy queues behind other I/O.
constexpr double kLogWriteHeavyMbS = 50;
constexpr double kLogWriteSyncedMbS = 10;
constexpr double kLogWriteFlushesPerS = 20;

Finding LogWrite(const HostFacts& facts) {
  const std::string id = "disk.log_write";
  if (!facts.server) return Skip(id, Layer::kSystem, "server disk writes", facts.server_note);
  const auto& s = *facts.server;
  if (!s.write_bytes_per_s.known()) {
    return Skip(id, Layer::kSystem, "server disk writes", s.write_bytes_per_s.reason);
  }
  const double mb_s = *s.write_bytes_per_s / 1e6;
  const auto& flushes = facts.disk.flushes_per_s;
  const bool heavy = mb_s >= kLogWriteHeavyMbS;
  const bool synced = flushes.known() && mb_s >= kLogWriteSyncedMbS && *flushes >= kLogWriteFlushesPerS;
  if (!facts.disk.busiest_util_pct.known() && !heavy && !synced) {
    return Skip(id, Layer::kSystem, "disk utilisation", facts.disk.busiest_util_pct.reason);
  }
  const bool has_util = facts.disk.busiest_util_pct.known();
  const double util = has_util ? *facts.disk.busiest_util_pct : 0.0;
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   has_util ? fmt::format("server writes {:.2f} MB/s; busiest disk {:.0f}% busy", mb_s, util)
                            : fmt::format("server writes {:.2f} MB/s", mb_s));
  f.evidence.push_back(Num("server_write_rate", mb_s, "MB/s"));
  if (s.write_bytes_per_s.source.find("child") != std::string::npos) {
    f.evidence.push_back(Text("counted", s.write_bytes_per_s.source));
  }
  if (has_util) {
    f.evidence.push_back(Num("disk_util", util, "%"));
    f.evidence.push_back(Text("busiest_disk", facts.disk.busiest_device));
  }
  if (flushes.known() && *flushes > 0) {
    f.evidence.push_back(Num("disk_flushes", *flushes, "/s"));
    f.evidence.push_back(Text("flushing_disk", facts.disk.flush_device));
  }
  const std::string fix =
      "--disable-uvicorn-access-log, drop --enable-log-requests, VLLM_LOGGING_LEVEL=INFO; or send "
      "logs to a faster disk / journald with rate limits";
  if (synced) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server writes {:.1f} MB/s with {:.0f} disk flushes/s (fsync): each synced "
                          "write blocks the writer until the disk has it", mb_s, *flushes);
    f.advice = fix + "; a logger that fsyncs every line (a file handler with sync, a journald "
                     "SyncIntervalSec=0) should buffer instead";
  } else if (has_util && util >= 90 && mb_s >= 1.0) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server writes {:.1f} MB/s to a disk {:.0f}% busy: log writes can block "
                          "the event loop", mb_s, util);
    f.advice = fix;
  } else if (heavy) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server writes {:.1f} MB/s: far more than logs need; writes on the serving "
                          "path block its loop when the page cache fills", mb_s);
    f.advice = fix + "; find the writer: pidstat -d 1 -p <server and child pids>";
  }
  return f;
}

// ---------------------------------------------------------------------------------------------
// Network.

Finding TimeWait(const HostFacts& facts) {
  const std::string id = "net.time_wait";
  const auto& n = facts.net;
  if (!n.tcp_time_wait.known()) return Skip(id, Layer::kNetwork, "TIME_WAIT sockets", n.tcp_time_wait.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk,
                   fmt::format("{} TIME_WAIT sockets", *n.tcp_time_wait));
  f.evidence.push_back(Num("tcp_time_wait", static_cast<double>(*n.tcp_time_wait), ""));
  if (n.server_port.known()) {
    f.evidence.push_back(FactNum(fmt::format("time_wait_on_port_{}", *n.server_port),
                                 n.server_port_time_wait, ""));
  }
  if (*n.tcp_time_wait >= 10000) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} TIME_WAIT sockets: clients open a new connection per request",
                          *n.tcp_time_wait);
    f.advice = "reuse connections (HTTP keep-alive / a client pool); raise the server idle timeout "
               "(VLLM_HTTP_TIMEOUT_KEEP_ALIVE=30); on client hosts sysctl -w net.ipv4.tcp_tw_reuse=1";
  }
  return f;
}

Finding Conntrack(const HostFacts& facts) {
  const std::string id = "net.conntrack";
  const auto& n = facts.net;
  if (!n.conntrack_count.known()) return Skip(id, Layer::kNetwork, "conntrack table", n.conntrack_count.reason);
  if (!n.conntrack_max.known() || *n.conntrack_max <= 0) {
    return Skip(id, Layer::kNetwork, "conntrack table",
                n.conntrack_max.known() ? "nf_conntrack_max is 0" : n.conntrack_max.reason);
  }
  const double fill = static_cast<double>(*n.conntrack_count) / static_cast<double>(*n.conntrack_max);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk,
                   fmt::format("conntrack table {:.0f}% full", fill * 100));
  f.evidence.push_back(Num("nf_conntrack_count", static_cast<double>(*n.conntrack_count), ""));
  f.evidence.push_back(Num("nf_conntrack_max", static_cast<double>(*n.conntrack_max), ""));
  if (fill > 0.8) {
    f.severity = fill > 0.95 ? Severity::kFail : Severity::kWarn;
    f.title = fmt::format("conntrack table {:.0f}% full: new connections get dropped when full", fill * 100);
    f.advice = fmt::format("sysctl -w net.netfilter.nf_conntrack_max={}; and reuse connections",
                           *n.conntrack_max * 4);
  }
  f.evidence.push_back(FactNum("conntrack_drops_delta", n.conntrack_drops_delta, ""));
  f.evidence.push_back(FactNum("conntrack_insert_failed_delta", n.conntrack_insert_failed_delta, ""));
  const int64_t clashes = n.conntrack_insert_failed_delta.value_or(0);
  if (clashes > 0 && f.severity < Severity::kWarn) {
    // Two packets of one new flow, or of flows that map to the same entry, raced to insert it
    // (parallel UDP lookups through NAT are the classic case): the loser is dropped.
    f.severity = Severity::kWarn;
    f.title = fmt::format("conntrack insertions failed {} times in {:.1f} s (entry clashes): the "
                          "packet that lost the race is dropped and its sender retries",
                          clashes, SampleSeconds(facts));
    f.advice = "clashes come from parallel connections or UDP lookups of one flow through NAT "
               "(DNS from pods: single-request-reopen, or a node-local DNS cache); or leave the "
               "serving port out of connection tracking (a notrack rule in the raw table)";
  }
  if (n.conntrack_drops_delta.known() && *n.conntrack_drops_delta > 0) {
    f.severity = Severity::kFail;
    f.title = fmt::format("conntrack dropped {} packets in {:.1f} s (table {:.0f}% full): a new "
                          "connection that loses its SYN waits a second or more for the retry",
                          *n.conntrack_drops_delta, SampleSeconds(facts), fill * 100);
    // A full table is the usual cause; with room left, a protocol tracker refused the packets.
    f.advice = fmt::format("sysctl -w net.netfilter.nf_conntrack_max={}; or leave the serving "
                           "port out of connection tracking (a NOTRACK / notrack rule in the raw "
                           "table); and reuse connections",
                           *n.conntrack_max * 4);
  }
  return f;
}

// Segments the kernel dropped at a socket during the sample, host-wide: drops by listeners
// beyond the accept-queue overflows that net.listen_overflow reports (ListenDrops counts both,
// and also a full SYN queue and failures to create the connection at the final ACK), a socket
// backlog over its limit while its owner held the socket (TCPBacklogDrop), a receive queue past
// its memory (TCPRcvQDrop). Each costs the sender a retransmit timeout (200 ms or more; about
// 1 s for a SYN).
Finding SocketDrops(const HostFacts& facts) {
  const std::string id = "net.socket_drops";
  const auto& n = facts.net;
  struct Part {
    std::string counter;
    std::string where;
    std::string advice;
    const Fact<int64_t>* delta;
  };
  Fact<int64_t> syn_drops = n.listen_drops_delta;
  if (syn_drops.known()) {
    if (!n.listen_overflows_delta.known()) {
      syn_drops = Fact<int64_t>::Unknown(n.listen_overflows_delta.reason);
    } else {
      syn_drops = Fact<int64_t>::Known(std::max<int64_t>(*syn_drops - *n.listen_overflows_delta, 0));
    }
  }
  const Part parts[] = {
      {"ListenDrops-ListenOverflows", "by listeners besides accept-queue overflows",
       "listener drops (a full SYN queue, which the listen() backlog and net.core.somaxconn "
       "size since Linux 4.4, or a failure to create the connection): raise the server's "
       "backlog and somaxconn, check nstat TcpExtTCPReqQFullDrop",
       &syn_drops},
      {"TCPBacklogDrop", "at a socket backlog",
       "backlog drops: a process held its socket while data arrived faster than it read "
       "(a saturated thread: cpu.saturation); ss -tmi shows each socket's drops",
       &n.backlog_drops_delta},
      {"TCPRcvQDrop", "at a full receive queue",
       "receive-queue drops: raise the receive buffers (sysctl -w "
       "net.ipv4.tcp_rmem='4096 131072 16777216') and check net.ipv4.tcp_mem",
       &n.rcvq_drops_delta},
  };
  std::string unknown;
  int64_t total = 0;
  int known = 0;
  std::vector<std::string> where, advice;
  Finding f = Make(id, Layer::kNetwork, Severity::kOk, "no TCP segments dropped at sockets during the sample");
  for (const Part& p : parts) {
    if (!p.delta->known()) {
      if (unknown.empty()) unknown = p.delta->reason;
      continue;
    }
    ++known;
    f.evidence.push_back(Num(p.counter + "_delta", static_cast<double>(**p.delta), ""));
    if (**p.delta > 0) {
      total += **p.delta;
      where.push_back(fmt::format("{} {} ({})", **p.delta, p.where, p.counter));
      advice.push_back(p.advice);
    }
  }
  if (known == 0) return Skip(id, Layer::kNetwork, "socket drops", unknown);
  if (total > 0) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} TCP segments dropped at sockets in {:.1f} s, host-wide: {}; each "
                          "waits for a retransmit timeout (about 1 s for a SYN)",
                          total, SampleSeconds(facts), fmt::join(where, ", "));
    f.advice = fmt::format("{}", fmt::join(advice, "; "));
  }
  return f;
}

// The CPUs' receive path (/proc/net/softnet_stat): packets dropped because a CPU's input
// backlog was full (net.core.netdev_max_backlog), and the times the receive softirq ran out of
// its budget (net.core.netdev_budget packets, or net.core.netdev_budget_usecs) with packets
// left, which then wait for the next round.
Finding Softnet(const HostFacts& facts) {
  const std::string id = "net.softnet";
  const auto& n = facts.net;
  const auto& d = n.softnet_dropped_delta;
  const auto& q = n.softnet_squeezed_delta;
  if (!d.known()) return Skip(id, Layer::kNetwork, "receive backlog", d.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk,
                   "no packets dropped at the CPUs' receive backlog during the sample");
  f.evidence.push_back(Num("softnet_dropped_delta", static_cast<double>(*d), ""));
  f.evidence.push_back(FactNum("softnet_time_squeeze_delta", q, ""));
  f.evidence.push_back(FactNum("net.core.netdev_max_backlog", n.netdev_max_backlog, ""));
  f.evidence.push_back(FactNum("net.core.netdev_budget", n.netdev_budget, ""));
  if (*d > 0) {
    const int64_t backlog = n.netdev_max_backlog.value_or(1000);
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} packets dropped at the CPUs' receive backlog in {:.1f} s "
                          "(net.core.netdev_max_backlog {}): the senders retransmit",
                          *d, SampleSeconds(facts), backlog);
    f.advice = fmt::format("sysctl -w net.core.netdev_max_backlog={}; and spread receive "
                           "processing over more CPUs (more NIC queues, or RPS: see net.irq)",
                           std::max<int64_t>(backlog * 2, 2000));
  } else if (q.known() && *q > 0) {
    const int64_t budget = n.netdev_budget.value_or(300);
    f.severity = Severity::kInfo;
    f.title = fmt::format("receive softirq ran out of budget {} times in {:.1f} s "
                          "(net.core.netdev_budget {} packets, or netdev_budget_usecs): packets "
                          "waited for the next round",
                          *q, SampleSeconds(facts), budget);
    f.advice = fmt::format("when it grows with the load: sysctl -w net.core.netdev_budget={} "
                           "(and net.core.netdev_budget_usecs when the time runs out first)",
                           budget * 2);
  }
  return f;
}

Finding ListenOverflow(const HostFacts& facts) {
  const std::string id = "net.listen_overflow";
  const auto& d = facts.net.listen_overflows_delta;
  if (!d.known()) return Skip(id, Layer::kNetwork, "listen queue overflows", d.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk, "no accept-queue overflow during the sample");
  f.evidence.push_back(Num("ListenOverflows_delta", static_cast<double>(*d), ""));
  if (*d > 0) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} accept-queue overflows in {:.1f} s: connections wait for a SYN retry",
                          *d, static_cast<double>(facts.sample_interval_ns) / 1e9);
    f.advice = "the server accepts too slowly for its connection rate: more API-server processes "
               "(vllm serve --api-server-count N), keep-alive on the clients; the queue holds "
               "min(the server's listen backlog, net.core.somaxconn): ss -ltn shows the backlog "
               "as Send-Q on the port, sysctl net.core.somaxconn the cap (4096 by default since "
               "Linux 5.4; raise it when lower)";
  }
  return f;
}

// net.retrans: judged by the share of segments retransmitted once there are enough of either
// (latdoc's thresholds): 1% warns, 10% fails.
constexpr int64_t kRetransMinOutSegs = 1000;
constexpr int64_t kRetransMinCount = 50;
constexpr double kRetransFailPct = 10.0;

Finding Retrans(const HostFacts& facts) {
  const std::string id = "net.retrans";
  const auto& r = facts.net.retrans_segs_delta;
  const auto& o = facts.net.out_segs_delta;
  if (!r.known()) return Skip(id, Layer::kNetwork, "TCP retransmits", r.reason);
  if (!o.known()) return Skip(id, Layer::kNetwork, "TCP retransmits", o.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk, "TCP retransmits low");
  f.evidence.push_back(Num("RetransSegs_delta", static_cast<double>(*r), ""));
  f.evidence.push_back(Num("OutSegs_delta", static_cast<double>(*o), ""));
  // A rate needs traffic to mean anything, but many retransmits in little traffic are the worst
  // case, not too little to say: 160 retransmits against 113 segments sent is a lossy path.
  if (*o < kRetransMinOutSegs && *r < kRetransMinCount) {
    f.title = "too little TCP traffic in the sample to judge retransmits";
    return f;
  }
  const double pct = 100.0 * static_cast<double>(*r) / static_cast<double>(std::max<int64_t>(*o, 1));
  f.evidence.push_back(Num("retransmit_rate", pct, "%"));
  f.title = fmt::format("TCP retransmits {:.2f}% of segments", pct);
  if (pct > 1.0) {
    f.severity = pct >= kRetransFailPct ? Severity::kFail : Severity::kWarn;
    f.title = fmt::format("TCP retransmits {:.1f}% of segments: each costs at least one RTO", pct);
    f.advice = "check NIC drops (ethtool -S), MTU mismatches and the path to the clients "
               "(latdoc net)";
  }
  return f;
}

std::vector<Finding> Irq(const HostFacts& facts) {
  const std::string id = "net.irq";
  const auto& n = facts.net.nic_irqs;
  if (!n.known()) return {Skip(id, Layer::kNetwork, "NIC interrupts", n.reason)};
  std::vector<Finding> out;
  for (const auto& nic : *n) {
    int64_t total = 0, top = 0;
    size_t top_cpu = 0;
    for (size_t c = 0; c < nic.per_cpu.size(); ++c) {
      total += nic.per_cpu[c];
      if (nic.per_cpu[c] > top) {
        top = nic.per_cpu[c];
        top_cpu = c;
      }
    }
    Finding f = Make(id, Layer::kNetwork, Severity::kOk,
                     fmt::format("{}: interrupts spread over CPUs", nic.nic));
    f.evidence.push_back(Num("interrupts", static_cast<double>(total), ""));
    f.evidence.push_back(Num("irq_lines", static_cast<double>(nic.irq_count), ""));
    f.evidence.push_back(Text("window", nic.since_boot ? "since boot" : "sample interval"));
    if (nic.per_cpu.size() < 2 || total < 1000) {
      f.title = fmt::format("{}: too few interrupts ({}) to judge their spread", nic.nic, total);
      out.push_back(std::move(f));
      continue;
    }
    const double share = static_cast<double>(top) / static_cast<double>(total);
    f.evidence.push_back(Num("busiest_cpu_share", share * 100, "%"));
    if (share > kIrqOneCpuShare) {
      f.severity = Severity::kWarn;
      const int64_t cpu = top_cpu < nic.cpu_ids.size() ? nic.cpu_ids[top_cpu] : static_cast<int64_t>(top_cpu);
      f.title = fmt::format("{}: {:.0f}% of its interrupts land on CPU {}", nic.nic, share * 100, cpu);
      f.advice = "systemctl enable --now irqbalance, or spread /proc/irq/<n>/smp_affinity_list "
                 "over the NIC's NUMA node; with one queue enable RPS "
                 "(/sys/class/net/<if>/queues/rx-0/rps_cpus)";
    }
    out.push_back(std::move(f));
  }
  if (out.empty()) {
    out.push_back(Skip(id, Layer::kNetwork, "NIC interrupts", "no NIC interrupt lines recognised"));
  }
  return out;
}

Finding Firewall(const HostFacts& facts) {
  const std::string id = "net.firewall";
  const auto& r = facts.net.firewall_rules;
  if (!r.known()) return Skip(id, Layer::kNetwork, "firewall rules", r.reason);
  Finding f = Make(id, Layer::kNetwork, Severity::kOk, fmt::format("{} firewall rules", *r));
  f.evidence.push_back(Num("rules", static_cast<double>(*r), ""));
  f.evidence.push_back(Text("source", r.source));
  if (*r > 1000) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{} firewall rules are walked per connection", *r);
    f.advice = "consolidate rules (ipset / nft sets); kube-proxy: use IPVS or nftables mode";
  }
  return f;
}

// ---------------------------------------------------------------------------------------------
// vLLM flag lint (vllm-project/vllm: vllm/engine/arg_utils.py ~v0.7 @001999d2f3 and recent,
// vllm/config/scheduler.py @01230b4012 ~v0.11, vllm/entrypoints/openai/cli_args.py, vllm/envs.py).

// The largest CUDA-graph capture size the server's flags set, or nullopt (vLLM's default,
// min(2 x max_num_seqs, 512)). Newer vLLM: --max-cudagraph-capture-size N or
// --cudagraph-capture-sizes 1 2 4 ...; v0.10: --cuda-graph-sizes (one value is the largest);
// any: --compilation-config (-cc and dotted keys arrive as it: vllm_args.h) / -O JSON with
// max_cudagraph_capture_size or cudagraph_capture_sizes (older: max_capture_size).
std::optional<int64_t> CaptureSizeMax(const std::vector<std::string>& a) {
  if (auto v = FlagValue(a, "--max-cudagraph-capture-size")) {
    if (auto n = ParseInt64(*v)) return n;
  }
  for (const char* flag : {"--cudagraph-capture-sizes", "--cuda-graph-sizes"}) {
    std::optional<int64_t> best;  // of the last occurrence (argparse keeps the last)
    for (size_t i = 0; i < a.size(); ++i) {
      std::vector<std::string_view> values;
      if (a[i] == flag || a[i].rfind(std::string(flag) + "=", 0) == 0) best.reset();
      if (a[i] == flag) {
        for (size_t k = i + 1; k < a.size() && ParseInt64(a[k]); ++k) values.push_back(a[k]);
      } else if (a[i].rfind(std::string(flag) + "=", 0) == 0) {
        for (auto v : Split(std::string_view(a[i]).substr(std::string_view(flag).size() + 1), ','))
          values.push_back(v);
      }
      for (auto v : values) {
        if (auto n = ParseInt64(Trim(v))) best = std::max(best.value_or(0), *n);
      }
    }
    if (best) return best;
  }
  for (const char* flag : {"--compilation-config", "-O"}) {
    auto v = FlagValue(a, flag);
    if (!v || v->empty() || (*v)[0] != '{') continue;
    auto j = nlohmann::json::parse(*v, nullptr, false);
    if (!j.is_object()) continue;
    for (const char* key : {"max_cudagraph_capture_size", "max_capture_size"}) {
      if (j.contains(key) && j[key].is_number_integer()) return j[key].get<int64_t>();
    }
    if (j.contains("cudagraph_capture_sizes") && j["cudagraph_capture_sizes"].is_array()) {
      std::optional<int64_t> best;
      for (const auto& e : j["cudagraph_capture_sizes"]) {
        if (e.is_number_integer()) best = std::max(best.value_or(0), e.get<int64_t>());
      }
      if (best) return best;
    }
  }
  return std::nullopt;
}

std::string EnvValue(const host::ServerProcess& s, const std::string& name) {
  if (!s.env.known()) return "";
  auto it = s.env->find(name);
  return it == s.env->end() ? "" : it->second;
}

// Whether -O set level 0: "-O 0" (from -O0), or a JSON "level" of 0 (older vLLM read -O as the
// compilation config and -O0 as {"level": 0}). Every -O is read: dotted -O keys come after it.
bool OptimizationLevelZero(const std::vector<std::string>& a) {
  for (const std::string& v : FlagValues(a, "-O")) {
    if (v == "0") return true;
    if (!v.empty() && v[0] == '{') {
      auto j = nlohmann::json::parse(v, nullptr, false);
      if (j.is_object() && j.contains("level") && j["level"] == 0) return true;
    }
  }
  return false;
}

// Whether a compilation config turns CUDA graphs off. cudagraph_mode in vLLM's JSON dump is a
// number (NONE 0, PIECEWISE 1, FULL 2) or a pair ([2, 0] FULL_DECODE_ONLY, [2, 1]
// FULL_AND_PIECEWISE); given by hand, a name in any case. vLLM (VllmConfig.__post_init__):
//   - no cudagraph_mode (or null): NONE unless the model is compiled piecewise (level or mode 3);
//   - PIECEWISE without piecewise compilation is overridden to NONE;
//   - NONE is NONE; FULL modes need no compilation.
// Text that is not JSON is searched for NONE.
bool CompilationConfigEager(const std::string& v) {
  auto j = nlohmann::json::parse(v, nullptr, false);
  if (!j.is_object()) return v.find("NONE") != std::string::npos;
  std::optional<bool> compiled;  // level or mode 3, when either is given
  for (const char* key : {"mode", "level"}) {
    if (compiled || !j.contains(key)) continue;
    const auto& m = j[key];
    if (m.is_number()) compiled = m == 3;
    if (m.is_string()) {
      const std::string name = m.get<std::string>();
      compiled = IEquals(name, "VLLM_COMPILE") || IEquals(name, "PIECEWISE") || name == "3";
    }
  }
  const nlohmann::json cg = j.value("cudagraph_mode", nlohmann::json());
  auto is = [&](std::string_view name, int number) {
    return (cg.is_string() && IEquals(cg.get<std::string>(), name)) || (cg.is_number() && cg == number);
  };
  if (cg.is_null()) return compiled.has_value() && !*compiled;
  if (is("NONE", 0)) return true;
  if (is("PIECEWISE", 1)) return compiled.has_value() && !*compiled;
  return false;
}

// Graphs off altogether: --enforce-eager, -O0, or a compilation config (its own flag, or -O
// JSON) that turns them off.
bool Eager(const std::vector<std::string>& a) {
  bool off = false;
  if (auto cc = FlagValue(a, "--compilation-config")) off = CompilationConfigEager(*cc);
  for (const std::string& v : FlagValues(a, "-O")) {
    off |= !v.empty() && v[0] == '{' && CompilationConfigEager(v);
  }
  return HasFlag(a, "--enforce-eager") || OptimizationLevelZero(a) || off;
}

std::vector<Finding> VllmLint(const HostFacts& facts, const HostRuleOptions& options,
                              const std::string& who) {
  std::vector<Finding> out;
  const auto& s = *facts.server;
  // As vLLM reads it: underscores, aliases, -O3 and dotted keys in one canonical form.
  // A --config YAML file's flags go where vLLM puts them: before the command line's own.
  const bool config_file = host::VllmConfigPath(s.argv).has_value();
  const std::vector<std::string> a = NormalizeVllmArgv(
      s.config_file_args.known() ? host::WithConfigFileArgs(s.argv, *s.config_file_args) : s.argv);
  const Layer L = Layer::kConfig;

  {  // config.enforce_eager
    Finding f = Make("config.enforce_eager", L, Severity::kOk, who + ": CUDA/HIP graphs on");
    const bool o0 = OptimizationLevelZero(a);
    if (Eager(a)) {
      f.severity = Severity::kFail;
      f.title = who + ": graphs disabled (" +
                (HasFlag(a, "--enforce-eager") ? std::string("--enforce-eager")
                 : o0 ? std::string("-O0") : std::string("cudagraph_mode NONE")) +
                "): every decode step launches kernels one by one";
      f.advice = "remove --enforce-eager / -O0 (keep the default -O2, cudagraph_mode FULL_AND_PIECEWISE)";
    }
    out.push_back(std::move(f));
  }

  // GPU memory of the server's GPUs (for the batch defaults and the KV budget).
  std::optional<int64_t> mem_mib;
  bool a100 = false;
  for (const auto* g : ServerGpus(facts)) {
    if (g->memory_total_mib.known()) mem_mib = std::max(mem_mib.value_or(0), *g->memory_total_mib);
    a100 |= g->name.known() && ToLower(*g->name).find("a100") != std::string::npos;
  }
  // vLLM's get_batch_defaults gives the large defaults to >= 70 GiB GPUs other than the A100
  // (it tests "a100" in the device name): an A100-80GB gets 256 (vllm/engine/arg_utils.py,
  // EngineArgs.get_batch_defaults, ~v0.11).
  const bool big_gpu = mem_mib && *mem_mib >= 70 * 1024 && !a100;

  {  // config.gpu_memory_utilization
    auto gmu = FlagDouble(a, "--gpu-memory-utilization");
    const double v = gmu.value_or(0.9);
    Finding f = Make("config.gpu_memory_utilization", L, Severity::kOk,
                     fmt::format("{}: --gpu-memory-utilization {:.2f}{}", who, v, gmu ? "" : " (default)"));
    f.evidence.push_back(Num("gpu_memory_utilization", v, ""));
    if (mem_mib) {
      f.evidence.push_back(Num("gpu_memory", static_cast<double>(*mem_mib) / 1024.0, "GiB"));
      f.evidence.push_back(Num("vllm_memory_budget", v * static_cast<double>(*mem_mib) / 1024.0, "GiB"));
    }
    if (v < 0.8) {
      f.severity = Severity::kWarn;
      f.title = fmt::format("{}: --gpu-memory-utilization {:.2f} leaves a small KV cache: "
                            "preemption and queueing under load", who, v);
      f.advice = "--gpu-memory-utilization 0.9 (up to 0.95 when nothing else uses the GPU)";
    } else if (v > 0.95) {
      f.severity = Severity::kWarn;
      f.title = fmt::format("{}: --gpu-memory-utilization {:.2f} leaves under {:.0f}% for "
                            "activations and other processes: OOM or KV preemption when memory "
                            "runs short", who, v, (1 - v) * 100);
      f.advice = "--gpu-memory-utilization 0.92";
    }
    out.push_back(std::move(f));
  }

  // max_num_seqs as the server runs it: the flag, else vLLM's default for its GPUs.
  std::optional<int64_t> eff;
  std::string basis;
  if (auto flag = FlagDouble(a, "--max-num-seqs")) {
    eff = static_cast<int64_t>(*flag);
    basis = "--max-num-seqs";
  } else if (mem_mib) {
    eff = big_gpu ? 1024 : 256;
    basis = big_gpu ? "default for >= 70 GiB GPUs" : a100 ? "default on A100" : "default";
  }

  {  // config.max_num_seqs
    if (!eff) {
      out.push_back(Skip("config.max_num_seqs", L, who, "GPU memory unknown, so the default is unknown"));
    } else {
      Finding f = Make("config.max_num_seqs", L, Severity::kOk,
                       fmt::format("{}: max_num_seqs {} ({})", who, *eff, basis));
      f.evidence.push_back(Num("max_num_seqs", static_cast<double>(*eff), ""));
      if (options.sweep_knee_concurrency) {
        const int64_t knee = *options.sweep_knee_concurrency;
        f.evidence.push_back(Num("sweep_knee_concurrency", static_cast<double>(knee), ""));
        if (*eff > 2 * knee) {
          f.severity = Severity::kWarn;
          f.title = fmt::format("{}: max_num_seqs {} is far above the latency knee at {} concurrent "
                                "requests: past the knee p99 grows with no throughput gain", who, *eff, knee);
          f.advice = fmt::format("--max-num-seqs {}", knee);
        }
      } else {
        f.title += "; no sweep given (latdoc sweep finds the knee)";
      }
      out.push_back(std::move(f));
    }
  }

  // config.cudagraph_capture: decode batches larger than the largest captured size run
  // without CUDA/HIP graphs (every kernel launched one by one), so ITL jumps once the running
  // batch passes it. Not judged when graphs are off altogether (config.enforce_eager).
  if (eff && !Eager(a)) {
    const auto set = CaptureSizeMax(a);
    const int64_t cap = set.value_or(std::min<int64_t>(2 * *eff, 512));
    Finding f = Make("config.cudagraph_capture", L, Severity::kOk,
                     fmt::format("{}: CUDA graphs captured up to batch {} ({}), max_num_seqs {}",
                                 who, cap, set ? "set" : "vLLM's default min(2 x max_num_seqs, 512)",
                                 *eff));
    f.evidence.push_back(Num("max_cudagraph_capture_size", static_cast<double>(cap), ""));
    f.evidence.push_back(Num("max_num_seqs", static_cast<double>(*eff), ""));
    if (*eff > cap) {
      const auto knee = options.sweep_knee_concurrency;
      if (knee) f.evidence.push_back(Num("sweep_knee_concurrency", static_cast<double>(*knee), ""));
      if (knee && *knee <= cap) {
        f.title = fmt::format("{}: batches above {} would run without CUDA graphs, but the latency "
                              "knee at {} is below that", who, cap, *knee);
      } else {
        // Whether the load reaches such batches is what the sweep's knee says.
        f.severity = knee ? Severity::kWarn : Severity::kInfo;
        f.title = fmt::format("{}: max_num_seqs {} is above the largest CUDA-graph capture size {}: "
                              "decode batches of {}-{} run without graphs (inter-token latency "
                              "jumps past {}){}", who, *eff, cap, cap + 1, *eff, cap,
                              knee ? fmt::format("; the latency knee at {} is past it", *knee)
                                   : std::string("; latdoc sweep tells whether the load gets there"));
        f.advice = fmt::format(
            "capture up to the batch limit: --compilation-config '{{\"max_cudagraph_capture_size\": {}}}' "
            "(newer vLLM: --max-cudagraph-capture-size {}), at some start-up time and GPU memory; "
            "or cap the batch at the captured size: --max-num-seqs {}", *eff, *eff, cap);
      }
    }
    out.push_back(std::move(f));
  }

  {  // config.max_num_batched_tokens
    auto mbt = FlagDouble(a, "--max-num-batched-tokens");
    Finding f = Make("config.max_num_batched_tokens", L, Severity::kOk,
                     mbt ? fmt::format("{}: --max-num-batched-tokens {:.0f}", who, *mbt)
                         : who + ": --max-num-batched-tokens default");
    if (mbt) f.evidence.push_back(Num("max_num_batched_tokens", *mbt, ""));
    // vLLM refuses to start on these (vllm/config/scheduler.py SchedulerConfig.verify_args,
    // v0.10.2 and later; vllm/config.py SchedulerConfig._verify_args before):
    //   max_num_batched_tokens < max_num_seqs
    //   max_num_batched_tokens < max_model_len while chunked prefill is off
    const auto mml = FlagDouble(a, "--max-model-len");
    const auto cp = FlagValue(a, "--enable-chunked-prefill");
    const bool chunked_off =
        (FlagValue(a, "--no-enable-chunked-prefill") && !HasFlag(a, "--enable-chunked-prefill")) ||
        (cp && (ToLower(*cp) == "false" || *cp == "0"));
    if (mbt && eff && *mbt < static_cast<double>(*eff)) {
      f.severity = Severity::kFail;
      f.title = fmt::format("{}: --max-num-batched-tokens {:.0f} is below max_num_seqs {} ({}): vLLM "
                            "refuses to start (\"max_num_batched_tokens must be greater than or "
                            "equal to max_num_seqs\")", who, *mbt, *eff, basis);
      f.evidence.push_back(Num("max_num_seqs", static_cast<double>(*eff), ""));
      f.evidence.push_back(Text("rule", "vllm/config/scheduler.py SchedulerConfig (v0.10.2+; "
                                        "vllm/config.py before): max_num_batched_tokens >= max_num_seqs"));
      f.advice = fmt::format("--max-num-batched-tokens {} or more (or lower --max-num-seqs)", *eff);
    } else if (mbt && mml && chunked_off && *mbt < *mml) {
      f.severity = Severity::kFail;
      f.title = fmt::format("{}: --max-num-batched-tokens {:.0f} is below --max-model-len {:.0f} with "
                            "chunked prefill off: vLLM refuses to start (a prompt that long could "
                            "never be scheduled)", who, *mbt, *mml);
      f.evidence.push_back(Num("max_model_len", *mml, ""));
      f.evidence.push_back(Text("rule", "vllm/config/scheduler.py SchedulerConfig (v0.10.2+; "
                                        "vllm/config.py before): without chunked prefill, "
                                        "max_num_batched_tokens >= max_model_len"));
      f.advice = fmt::format("--max-num-batched-tokens {:.0f}, or turn chunked prefill on "
                             "(--enable-chunked-prefill)", *mml);
    } else if (mbt && *mbt > 16384) {
      f.severity = Severity::kWarn;
      f.title = fmt::format("{}: --max-num-batched-tokens {:.0f}: long prefill chunks stall "
                            "running decodes (inter-token latency spikes)", who, *mbt);
      f.advice = "--max-num-batched-tokens 8192 for interactive serving (16384 at most)";
    }
    out.push_back(std::move(f));
  }

  {  // config.block_size
    auto bs = FlagDouble(a, "--block-size");
    Finding f = Make("config.block_size", L, Severity::kOk,
                     bs ? fmt::format("{}: --block-size {:.0f}", who, *bs) : who + ": default block size");
    // The sizes vLLM's CLI accepts (vllm/config/cache.py BlockSize: Literal[1, 8, 16, 32, 64,
    // 128] in v0.10, 256 added in v0.11); argparse rejects any other before the server starts.
    const bool valid = !bs || *bs == 1 || *bs == 8 || *bs == 16 || *bs == 32 || *bs == 64 ||
                       *bs == 128 || *bs == 256;
    if (!valid) {
      f.severity = Severity::kFail;
      f.title = fmt::format("{}: --block-size {:.0f} is not one vLLM accepts (1, 8, 16, 32, 64, 128; "
                            "256 from v0.11): the server does not start", who, *bs);
      f.evidence.push_back(Text("rule", "vllm/config/cache.py BlockSize = Literal[1, 8, 16, 32, 64, "
                                        "128] (v0.10), with 256 (v0.11+)"));
      f.advice = "drop --block-size (default 16)";
    } else if (bs && *bs != 16) {
      f.severity = Severity::kInfo;
      f.title = fmt::format("{}: --block-size {:.0f} (default 16): some attention kernels need "
                            "their own size; others may fall back", who, *bs);
      f.advice = "drop --block-size unless the attention backend asks for it (AITER MLA: 1)";
    }
    out.push_back(std::move(f));
  }

  {  // config.logging
    std::vector<std::string> warn, fail;
    if (HasFlag(a, "--enable-log-requests")) warn.push_back("--enable-log-requests");
    if (HasFlag(a, "--enable-log-outputs")) warn.push_back("--enable-log-outputs");
    auto uv = FlagValue(a, "--uvicorn-log-level");
    if (uv && (*uv == "debug" || *uv == "trace")) warn.push_back("--uvicorn-log-level " + *uv);
    if (ToLower(EnvValue(s, "VLLM_LOGGING_LEVEL")) == "debug") warn.push_back("VLLM_LOGGING_LEVEL=DEBUG");
    auto resp = ToLower(EnvValue(s, "VLLM_DEBUG_LOG_API_SERVER_RESPONSE"));
    if (resp == "1" || resp == "true") warn.push_back("VLLM_DEBUG_LOG_API_SERVER_RESPONSE");
    if (EnvValue(s, "VLLM_TRACE_FUNCTION") == "1") fail.push_back("VLLM_TRACE_FUNCTION=1");
    Finding f = Make("config.logging", L, Severity::kOk, who + ": logging at normal levels");
    if (!s.env.known()) f.evidence.push_back(Text("environment", "unknown: " + s.env.reason));
    if (!fail.empty() || !warn.empty()) {
      std::string all;
      for (const auto& v : fail) all += (all.empty() ? "" : ", ") + v;
      for (const auto& v : warn) all += (all.empty() ? "" : ", ") + v;
      f.severity = fail.empty() ? Severity::kWarn : Severity::kFail;
      f.title = who + ": verbose logging on the request path: " + all;
      f.evidence.push_back(Text("settings", all));
      f.advice = "unset VLLM_TRACE_FUNCTION; VLLM_LOGGING_LEVEL=INFO; drop --enable-log-requests / "
                 "--enable-log-outputs; --uvicorn-log-level info";
    } else if (!HasFlag(a, "--disable-uvicorn-access-log")) {
      f.severity = Severity::kInfo;
      f.title = who + ": one access-log line per request (the default)";
      f.advice = "at high request rates: --disable-uvicorn-access-log (or "
                 "--disable-access-log-for-endpoints /health,/metrics)";
    }
    out.push_back(std::move(f));
  }

  {  // config.async_scheduling
    Finding f = Make("config.async_scheduling", L, Severity::kOk, who + ": --async-scheduling on");
    const bool pp = FlagDouble(a, "--pipeline-parallel-size").value_or(1) > 1;
    const bool spec = FlagValue(a, "--speculative-config").has_value();
    if (HasFlag(a, "--async-scheduling")) {
      // on
    } else if (pp || spec) {
      f.title = who + ": async scheduling not available with " +
                std::string(pp ? "pipeline parallelism" : "speculative decoding");
    } else if (HasFlag(a, "--no-async-scheduling")) {
      f.severity = Severity::kInfo;
      f.title = who + ": async scheduling turned off: the GPU idles while the CPU schedules";
      f.advice = "drop --no-async-scheduling";
    } else {
      f.severity = Severity::kInfo;
      f.title = who + ": --async-scheduling not given: on by default only in recent vLLM";
      f.advice = "--async-scheduling (vLLM >= 0.11; check the startup log for 'async scheduling')";
    }
    out.push_back(std::move(f));
  }

  {  // config.v1_multiprocessing
    Finding f = Make("config.v1_multiprocessing", L, Severity::kOk,
                     who + ": engine core in its own process");
    if (!s.env.known()) {
      out.push_back(Skip("config.v1_multiprocessing", L, who, s.env.reason));
    } else {
      if (EnvValue(s, "VLLM_ENABLE_V1_MULTIPROCESSING") == "0") {
        f.severity = Severity::kWarn;
        f.title = who + ": VLLM_ENABLE_V1_MULTIPROCESSING=0 puts the engine in the API-server "
                        "process: both share one GIL";
        f.advice = "unset VLLM_ENABLE_V1_MULTIPROCESSING";
      }
      out.push_back(std::move(f));
    }
  }

  // config.rocm_aiter: on MI300X/MI325X (gfx942) and MI350/MI355 (gfx950) AMD's vLLM guide turns
  // on the AITER kernels (attention, MoE, GEMM); vLLM leaves them off by default.
  std::string gfx;
  for (const auto* g : ServerGpus(facts)) {
    if (g->vendor != "amd" || !g->name.known()) continue;
    for (const char* arch : {"gfx942", "gfx950"}) {
      if (g->name->find(arch) != std::string::npos) gfx = arch;
    }
  }
  if (!gfx.empty()) {
    const std::string id = "config.rocm_aiter";
    if (!s.env.known()) {
      out.push_back(Skip(id, L, who, s.env.reason));
    } else {
      const std::string aiter = EnvValue(s, "VLLM_ROCM_USE_AITER");
      const bool on = aiter == "1" || ToLower(aiter) == "true";
      Finding f = Make(id, L, Severity::kOk, fmt::format("{}: AITER kernels on ({})", who, gfx));
      f.evidence.push_back(Text("VLLM_ROCM_USE_AITER", aiter.empty() ? "unset (vLLM's default: off)" : aiter));
      if (!on) {
        f.severity = Severity::kWarn;
        f.title = fmt::format("{}: AITER kernels off on {}: attention, MoE and GEMM run vLLM's "
                              "generic ROCm kernels", who, gfx);
        f.advice = "VLLM_ROCM_USE_AITER=1 in the server's environment (AMD's vLLM guide for "
                   "MI300X/MI325X/MI355X); the log then says \"Using Aiter ... backend\"";
      }
      const std::string old_flag = EnvValue(s, "VLLM_USE_TRITON_FLASH_ATTN");
      if (!old_flag.empty()) {
        f.evidence.push_back(Text("VLLM_USE_TRITON_FLASH_ATTN",
                                  old_flag + " (obsolete: recent vLLM ignores it)"));
      }
      out.push_back(std::move(f));
    }
  }
  if (config_file) {
    const std::string note = s.config_file_args.known()
                                 ? "read: " + s.config_file_args.source
                                 : "not read (its flags are not judged): " + s.config_file_args.reason;
    for (Finding& f : out) f.evidence.push_back(Text("config_file", note));
  }
  return out;
}

}  // namespace

StatusOr<int64_t> SweepKneeFromJson(std::string_view text, std::string_view name) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument(std::string(name) + ": not a JSON object");
  }
  auto pick = [](const nlohmann::json& o, const char* k) -> std::optional<int64_t> {
    if (o.is_object() && o.contains(k) && o[k].is_number()) {
      return static_cast<int64_t>(std::llround(o[k].get<double>()));
    }
    return std::nullopt;
  };
  std::optional<int64_t> v;
  if (j.contains("knee")) v = pick(j["knee"], "concurrency");
  if (!v && j.contains("knee")) v = pick(j["knee"], "max_num_seqs");
  if (!v && j.contains("recommendations") && j["recommendations"].contains("max_num_seqs")) {
    v = pick(j["recommendations"]["max_num_seqs"], "value");  // latdoc sweep's own advice
  }
  if (!v && j.contains("recommendation")) v = pick(j["recommendation"], "max_num_seqs");
  if (!v) v = pick(j, "knee_concurrency");
  if (!v || *v <= 0) {
    return InvalidArgument(std::string(name) +
                           ": no knee found (expected knee.concurrency, knee.max_num_seqs, "
                           "recommendations.max_num_seqs.value, recommendation.max_num_seqs or "
                           "knee_concurrency)");
  }
  return *v;
}

std::vector<Finding> JudgeVllmArgv(const std::vector<std::string>& argv, const std::string& who,
                                   const HostRuleOptions& options) {
  HostFacts facts;
  facts.server.emplace();
  facts.server->kind = "vllm";
  facts.server->argv = argv;
  facts.server->env = Fact<std::map<std::string, std::string>>::Unknown("a log gives no environment");
  return VllmLint(facts, options, who);
}

std::vector<Finding> JudgeHost(const HostFacts& facts, const HostRuleOptions& options) {
  std::vector<Finding> out;
  for (const auto& g : facts.gpus) {
    out.push_back(ClockPolicy(g));
    if (auto f = Throttle(g)) out.push_back(std::move(*f));
    out.push_back(PowerCap(g));
    out.push_back(PcieLink(g));
    if (auto f = Persistence(g)) out.push_back(std::move(*f));
  }
  out.push_back(GpuNuma(facts));
  out.push_back(NumaBalancing(facts));
  out.push_back(Thp(facts));
  out.push_back(Governor(facts));
  out.push_back(Saturation(facts));
  out.push_back(CgroupThrottle(facts));
  out.push_back(CpuPressure(facts));
  out.push_back(MemoryPressure(facts));
  out.push_back(LogWrite(facts));
  out.push_back(TimeWait(facts));
  out.push_back(Conntrack(facts));
  out.push_back(ListenOverflow(facts));
  out.push_back(SocketDrops(facts));
  out.push_back(Softnet(facts));
  out.push_back(Retrans(facts));
  for (auto& f : Irq(facts)) out.push_back(std::move(f));
  out.push_back(Firewall(facts));
  if (facts.server && facts.server->kind == "vllm") {
    for (auto& f : VllmLint(facts, options, fmt::format("vLLM pid {}", facts.server->pid))) {
      out.push_back(std::move(f));
    }
  } else {
    out.push_back(Skip("config.vllm_flags", Layer::kConfig, "vLLM flags",
                       facts.server ? "server is " + facts.server->kind + ", not vLLM"
                                    : (facts.server_note.empty() ? "no server process" : facts.server_note)));
  }
  return out;
}

}  // namespace latdoc::rules
