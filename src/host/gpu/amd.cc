// AMD GPUs: enumerated from PCI sysfs (vendor 0x1002), filled from amdgpu sysfs attributes
// (drivers/gpu/drm/amd/pm/amdgpu_pm.c), the hwmon power cap, the KFD topology for the
// architecture name, and `amd-smi metric --json` for what sysfs did not give (when installed).
// Reference: torvalds/linux drivers/gpu/drm/amd/pm/amdgpu_pm.c (kernel-doc of pp_*, power_dpm_*,
// hwmon), swsmu/smu13/smu_v13_0_6_ppt.c (MI300); ROCm/amdsmi amdsmi_cli/amdsmi_commands.py
// (Oct 2024) and ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py (Oct 2024).
#include <map>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "host/gpu/gpu_vendor.h"
#include "host/gpu/rocm_smi_api.h"
#include "host/pci.h"
#include "host/proc_parsers.h"

namespace latdoc::host {
namespace {

// PCI device ids (amdgpu_drv.c pciidlist; ROCm gpu-arch-specs) of the parts latdoc knows.
const std::map<std::string, std::string>& AmdDeviceNames() {
  static const auto* m = new std::map<std::string, std::string>{
      {"0x74a1", "AMD Instinct MI300X"}, {"0x74a5", "AMD Instinct MI325X"},
      {"0x74a0", "AMD Instinct MI300A"}, {"0x740c", "AMD Instinct MI250X/MI250"},
      {"0x740f", "AMD Instinct MI210"}};
  return *m;
}

// KFD topology node properties ("key value" lines, kfd_topology.c node_show):
//   gfx_target_version 90402
//   simd_count 1216
//   location_id 3072
//   domain 0
// Returns {gfx name, CU count} for the KFD node whose domain/location_id is `bdf`.
std::optional<std::string> KfdArch(const SysRoot& fs, const std::string& bdf) {
  auto addr = ParsePciAddress(bdf);
  if (!addr) return std::nullopt;
  auto nodes = fs.List("/sys/class/kfd/kfd/topology/nodes");
  if (!nodes.ok()) return std::nullopt;
  // bdf "0000:0c:00.0" -> domain 0, location_id = bus << 8 | dev << 3 | fn.
  const int64_t location = addr->bus << 8 | addr->device << 3 | addr->function;
  for (const auto& n : *nodes) {
    auto props = fs.Read("/sys/class/kfd/kfd/topology/nodes/" + n + "/properties");
    if (!props.ok()) continue;
    std::map<std::string, int64_t> kv;
    for (auto line : Split(*props, '\n')) {
      auto w = SplitWhitespace(line);
      if (w.size() == 2) {
        if (auto v = ParseInt64(w[1])) kv[std::string(w[0])] = *v;
      }
    }
    if (kv["simd_count"] == 0 || kv["location_id"] != location) continue;
    if (kv.count("domain") && kv["domain"] != addr->domain) continue;
    int64_t gfx = kv["gfx_target_version"];  // MMmmss decimal: 90402 -> gfx942
    char name[32];
    std::snprintf(name, sizeof(name), "gfx%lld%llx%llx", static_cast<long long>(gfx / 10000),
                  static_cast<long long>(gfx / 100 % 100), static_cast<long long>(gfx % 100));
    int64_t simd_per_cu = kv.count("simd_per_cu") && kv["simd_per_cu"] > 0 ? kv["simd_per_cu"] : 4;
    return std::string(name) + ", " + std::to_string(kv["simd_count"] / simd_per_cu) + " CU";
  }
  return std::nullopt;
}

// hwmon power1_cap / power1_cap_default are in microwatts.
Fact<double> ReadMicrowatts(const SysRoot& fs, const std::string& dir, const char* file) {
  auto names = fs.List(dir + "/hwmon");
  if (!names.ok()) return Fact<double>::Unknown(names.status().message());
  for (const auto& h : *names) {
    Fact<int64_t> uw = ReadIntFact(fs, dir + "/hwmon/" + h + "/" + file);
    if (uw.known()) return Fact<double>::Known(*uw / 1e6, uw.source);
    return Fact<double>::Unknown(uw.reason);
  }
  return Fact<double>::Unknown(dir + "/hwmon: no hwmon device");
}

// librocm_smi64 (dlopen), for the performance level and busy % sysfs did not give. Matched to
// sysfs GPUs by PCI address (rsmi_dev_pci_id_get).
void FillFromRocmSmi(const ProbeContext& ctx, std::vector<GpuFacts>& gpus,
                     std::vector<std::string>* notes) {
  bool need = false;
  for (const auto& g : gpus) need |= !g.perf_level.known() || !g.util_pct.known();
  if (!need || !ctx.rocm_smi.lookup) return;
  auto api = BindRocmSmi(ctx.rocm_smi.lookup);
  if (!api.ok()) {
    notes->push_back("amd: " + api.status().message());
    return;
  }
  int rc = api->init(0);
  if (rc != 0) {
    notes->push_back("amd: rsmi_init failed with " + std::to_string(rc));
    return;
  }
  uint32_t n = 0;
  if (api->num_monitor_devices(&n) == 0) {
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t id = 0;
      if (api->dev_pci_id_get(i, &id) != 0) continue;
      const std::string bdf = BdfFromRsmiId(id);
      for (auto& g : gpus) {
        if (g.bdf != bdf) continue;
        const std::string src = "librocm_smi64 (device " + std::to_string(i) + ")";
        int level = 0;
        if (!g.perf_level.known() && api->dev_perf_level_get &&
            api->dev_perf_level_get(i, &level) == 0) {
          if (auto name = PerfLevelName(level)) g.perf_level = Fact<std::string>::Known(*name, src);
        }
        uint32_t busy = 0;
        if (!g.util_pct.known() && api->dev_busy_percent_get &&
            api->dev_busy_percent_get(i, &busy) == 0) {
          g.util_pct = Fact<int64_t>::Known(busy, src);
        }
        g.vendor_source = "amdgpu-sysfs+rocm-smi";
      }
    }
  }
  api->shut_down();
}

// amd-smi prints the amdsmi_dev_perf_level_t enumerator (amdsmi.h), with or without its
// AMDSMI_DEV_PERF_LEVEL_ prefix depending on the version: "AMDSMI_DEV_PERF_LEVEL_STABLE_MIN_SCLK".
// The facts carry the names power_dpm_force_performance_level uses (amdgpu_pm.c), which the
// rules know. An unrecognised name is kept, lower-cased.
std::string SysfsPerfLevel(std::string_view amdsmi_name) {
  static const auto* kNames = new std::map<std::string, std::string, std::less<>>{
      {"stable_std", "profile_standard"},
      {"stable_peak", "profile_peak"},
      {"stable_min_mclk", "profile_min_mclk"},
      {"stable_min_sclk", "profile_min_sclk"},
      {"determinism", "perf_determinism"}};
  std::string p = ToLower(amdsmi_name);
  const std::string_view prefix = "amdsmi_dev_perf_level_";
  if (p.rfind(prefix, 0) == 0) p = p.substr(prefix.size());
  auto it = kNames->find(p);
  return it == kNames->end() ? p : it->second;
}

// `amd-smi metric --json`: a list of per-GPU objects (older) or {"gpu_data": [...]} (newer):
//   [{"gpu": 0, "usage": {"gfx_activity": {"value": 0, "unit": "%"}, ...},
//     "perf_level": "AMDSMI_DEV_PERF_LEVEL_AUTO", ...}]
// amd-smi numbers GPUs in its own order; they are matched to sysfs by position, which is the
// PCI order on the hosts checked (an assumption, stated in the note when used).
void FillFromAmdSmi(const ProbeContext& ctx, std::vector<GpuFacts>& gpus,
                    std::vector<std::string>* notes) {
  bool need = false;
  for (const auto& g : gpus) {
    need |= !g.perf_level.known() || !g.util_pct.known() || !g.throttle_status.known();
  }
  if (!need) return;
  auto r = ctx.runner->Run({"amd-smi", "metric", "--json"}, ctx.command_timeout_ns);
  if (!r.ok() || r->exit_code != 0) return;
  nlohmann::json j = nlohmann::json::parse(r->stdout_text, nullptr, false);
  if (j.is_object() && j.contains("gpu_data")) j = j["gpu_data"];
  if (!j.is_array()) {
    notes->push_back("amd: amd-smi metric --json: not a list of GPUs");
    return;
  }
  for (size_t i = 0; i < gpus.size() && i < j.size(); ++i) {
    const auto& e = j[i];
    GpuFacts& g = gpus[i];
    // The vendor source names amd-smi when it gave a fact the rules read in place of sysfs
    // or rocm-smi's (perf level, load); the throttle status comes only from it.
    const bool had = g.perf_level.known() && g.util_pct.known();
    if (!g.perf_level.known() && e.contains("perf_level") && e["perf_level"].is_string()) {
      g.perf_level = Fact<std::string>::Known(SysfsPerfLevel(e["perf_level"].get<std::string>()),
                                              "amd-smi metric --json");
    }
    if (!g.util_pct.known() && e.contains("usage") && e["usage"].contains("gfx_activity")) {
      const auto& a = e["usage"]["gfx_activity"];
      const auto& v = a.is_object() ? a.value("value", nlohmann::json()) : a;
      if (v.is_number()) {
        g.util_pct = Fact<int64_t>::Known(v.get<int64_t>(), "amd-smi metric --json");
      }
    }
    // Throttling, as amd-smi shows it:
    //   "power": {..., "throttle_status": "THROTTLED"}        (Navi, MI1xx/MI2xx; MI300 "N/A")
    //   "throttle": {"ppt_violation_status": "ACTIVE", "socket_thermal_violation_status":
    //                "NOT ACTIVE", ...}                         (MI300 and later, ROCm 6.4+)
    if (!g.throttle_status.known()) {   // sysfs gpu_metrics, when it had them, come first
      if (e.contains("power") && e["power"].is_object()) {
        const auto& ts = e["power"].value("throttle_status", nlohmann::json());
        if (ts.is_string() && (ts == "THROTTLED" || ts == "UNTHROTTLED")) {
          g.throttle_status = Fact<std::string>::Known(ts.get<std::string>(), "amd-smi metric --json");
        }
      }
      if (e.contains("throttle") && e["throttle"].is_object()) {
        std::string active;
        bool any = false;
        for (const auto& [key, v] : e["throttle"].items()) {
          const std::string suffix = "_violation_status";
          if (key.size() <= suffix.size() || key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0 ||
              !v.is_string()) {
            continue;
          }
          any = true;
          if (v == "ACTIVE") active += (active.empty() ? "" : ", ") + key.substr(0, key.size() - suffix.size());
        }
        if (any) {
          g.throttle_active = Fact<std::string>::Known(active, "amd-smi metric --json");
          if (!g.throttle_status.known()) {
            g.throttle_status = Fact<std::string>::Known(active.empty() ? "UNTHROTTLED" : "THROTTLED",
                                                         "amd-smi metric --json");
          }
        }
      }
    }
    if (!had) g.vendor_source = "amdgpu-sysfs+amd-smi";
  }
}

// sysfs gpu_metrics: the SMU's metrics table as the driver exports it, a C struct whose header
// gives its layout (drivers/gpu/drm/amd/include/kgd_pp_interface.h):
//   struct metrics_table_header { uint16_t structure_size; uint8_t format_revision;
//                                 uint8_t content_revision; };
// Read here, at their offsets in the naturally aligned structs:
//   v1.1, v1.2 (MI100/MI200, Navi)  uint32_t throttle_status        at 68 (ASIC dependent bits)
//   v1.3 (Navi 2x/3x)               uint64_t indep_throttle_status  at 112 (SMU_THROTTLER_* bits)
//   v1.4 (MI300)                    uint32_t throttle_status        at 40
//   v1.5 (MI300, later kernels)     uint32_t throttle_status        at 104
// Other revisions are not read (their layouts differ). Little-endian, as the hosts are.
struct GpuMetricsThrottle {
  bool throttled = false;
  std::string active;   // names of the ASIC-independent bits set (v1.3), else ""
  std::string revision; // "1.3"
};

std::optional<GpuMetricsThrottle> ParseGpuMetricsThrottle(std::string_view b) {
  auto u16 = [&](size_t at) { return static_cast<uint64_t>(static_cast<uint8_t>(b[at])) |
                                     static_cast<uint64_t>(static_cast<uint8_t>(b[at + 1])) << 8; };
  auto uint = [&](size_t at, size_t bytes) {
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(b[at + i])) << (8 * i);
    return v;
  };
  if (b.size() < 4) return std::nullopt;
  const uint64_t size = u16(0);
  const int format = static_cast<uint8_t>(b[2]), content = static_cast<uint8_t>(b[3]);
  if (format != 1 || size > b.size()) return std::nullopt;
  GpuMetricsThrottle t;
  t.revision = std::to_string(format) + "." + std::to_string(content);
  // SMU_THROTTLER_* bit names (drivers/gpu/drm/amd/pm/swsmu/inc/amdgpu_smu.h).
  static constexpr std::pair<int, const char*> kBits[] = {
      {0, "PPT0"}, {1, "PPT1"}, {2, "PPT2"}, {3, "PPT3"}, {4, "SPL"}, {5, "FPPT"}, {6, "SPPT"},
      {7, "SPPT_APU"}, {16, "TDC_GFX"}, {17, "TDC_SOC"}, {18, "TDC_MEM"}, {19, "TDC_VDD"},
      {20, "TDC_CVIP"}, {21, "EDC_CPU"}, {22, "EDC_GFX"}, {23, "APCC"}, {32, "TEMP_GPU"},
      {33, "TEMP_CORE"}, {34, "TEMP_MEM"}, {35, "TEMP_EDGE"}, {36, "TEMP_HOTSPOT"},
      {37, "TEMP_SOC"}, {38, "TEMP_VR_GFX"}, {39, "TEMP_VR_SOC"}, {40, "TEMP_VR_MEM0"},
      {41, "TEMP_VR_MEM1"}, {42, "TEMP_LIQUID0"}, {43, "TEMP_LIQUID1"}, {44, "VRHOT0"},
      {45, "VRHOT1"}, {46, "PROCHOT_CPU"}, {47, "PROCHOT_GFX"}, {56, "PPM"}, {57, "FIT"}};
  if (content == 3 && size >= 120) {
    const uint64_t bits = uint(112, 8);
    t.throttled = bits != 0;
    for (auto [bit, name] : kBits) {
      if (bits >> bit & 1) t.active += (t.active.empty() ? "" : ", ") + std::string(name);
    }
    return t;
  }
  size_t at = content == 1 || content == 2 ? 68 : content == 4 ? 40 : content == 5 ? 104 : 0;
  if (at == 0 || size < at + 4) return std::nullopt;
  t.throttled = uint(at, 4) != 0;
  return t;
}

class AmdGpuVendor : public GpuVendor {
 public:
  std::string_view name() const override { return "amd"; }

  void Collect(const ProbeContext& ctx, std::vector<GpuFacts>* out,
               std::vector<std::string>* notes) override {
    std::vector<GpuFacts> gpus = ListPciGpus(*ctx.fs, kPciVendorAmd);
    if (gpus.empty()) return;
    for (auto& g : gpus) {
      const std::string dir = "/sys/bus/pci/devices/" + g.bdf;
      const SysRoot& fs = *ctx.fs;
      g.vendor_source = "amdgpu-sysfs";
      auto dev = fs.ReadTrimmed(dir + "/device");
      std::string name = "AMD GPU";
      if (dev.ok() && AmdDeviceNames().count(*dev)) name = AmdDeviceNames().at(*dev);
      if (auto arch = KfdArch(fs, g.bdf)) name += " (" + *arch + ")";
      g.name = Fact<std::string>::Known(name, dir + "/device");
      g.perf_level = ReadStringFact(fs, dir + "/power_dpm_force_performance_level");
      g.util_pct = ReadIntFact(fs, dir + "/gpu_busy_percent");
      auto sclk_text = fs.Read(dir + "/pp_dpm_sclk");
      if (!sclk_text.ok()) {
        g.sm_clock_mhz = g.max_sm_clock_mhz = Fact<int64_t>::Unknown(sclk_text.status().message());
        g.sclk_deep_sleep = Fact<bool>::Unknown(sclk_text.status().message());
      } else if (auto s = ParsePpDpmSclk(*sclk_text)) {
        const std::string src = dir + "/pp_dpm_sclk";
        g.sm_clock_mhz = s->cur_mhz ? Fact<int64_t>::Known(*s->cur_mhz, src)
                                    : Fact<int64_t>::Unknown(src + ": no level marked '*'");
        g.max_sm_clock_mhz = s->max_mhz ? Fact<int64_t>::Known(*s->max_mhz, src)
                                        : Fact<int64_t>::Unknown(src + ": no numbered level");
        g.sclk_deep_sleep = s->cur_mhz ? Fact<bool>::Known(s->deep_sleep, src)
                                       : Fact<bool>::Unknown(src + ": no level marked '*'");
      } else {
        const std::string why = dir + "/pp_dpm_sclk: unrecognised format";
        g.sm_clock_mhz = g.max_sm_clock_mhz = Fact<int64_t>::Unknown(why);
        g.sclk_deep_sleep = Fact<bool>::Unknown(why);
      }
      g.power_limit_w = ReadMicrowatts(fs, dir, "power1_cap");
      g.power_default_limit_w = ReadMicrowatts(fs, dir, "power1_cap_default");
      Fact<int64_t> vram = ReadIntFact(fs, dir + "/mem_info_vram_total");
      g.memory_total_mib = vram.known() ? Fact<int64_t>::Known(*vram >> 20, vram.source)
                                        : Fact<int64_t>::Unknown(vram.reason);
      if (auto gm = fs.Read(dir + "/gpu_metrics"); gm.ok()) {
        if (auto t = ParseGpuMetricsThrottle(*gm)) {
          const std::string src = dir + "/gpu_metrics (v" + t->revision + ")";
          g.throttle_status = Fact<std::string>::Known(t->throttled ? "THROTTLED" : "UNTHROTTLED", src);
          if (!t->active.empty() || !t->throttled) g.throttle_active = Fact<std::string>::Known(t->active, src);
        }
      }
      const std::string nvidia_only = "not applicable to AMD";
      g.clocks_event_reasons = Fact<uint64_t>::Unknown(nvidia_only);
      g.persistence_mode = Fact<bool>::Unknown(nvidia_only);
    }
    FillFromRocmSmi(ctx, gpus, notes);
    FillFromAmdSmi(ctx, gpus, notes);
    for (auto& g : gpus) out->push_back(std::move(g));
  }
};

}  // namespace

std::unique_ptr<GpuVendor> MakeAmdGpuVendor() { return std::make_unique<AmdGpuVendor>(); }

}  // namespace latdoc::host
