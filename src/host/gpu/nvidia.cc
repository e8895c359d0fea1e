// NVIDIA GPUs: enumerated from PCI sysfs (vendor 0x10de), then filled from NVML loaded with
// dlopen (libnvidia-ml.so.1), or from `nvidia-smi --query-gpu ... --format=csv` when NVML is
// not there (or when replaying a recorded tree). Reference: NVIDIA/go-nvml gen/nvml/nvml.h
// (NVML API 13), the NVML API reference (docs.nvidia.com/deploy/nvml-api) and
// `nvidia-smi --help-query-gpu` (driver 580).
#include <cstring>
#include <map>

#include "base/strings.h"
#include "host/gpu/gpu_vendor.h"
#include "host/gpu/nvml_api.h"
#include "host/pci.h"

namespace latdoc::host {
namespace {

// The nvidia-smi fields read, in order. `clocks_event_reasons.active` is called
// `clocks_throttle_reasons.active` by older drivers; an unknown field fails the whole command,
// so the older name is tried second.
constexpr const char* kQueryFields =
    "index,uuid,name,pci.bus_id,persistence_mode,pstate,utilization.gpu,clocks.current.sm,"
    "clocks.max.sm,power.limit,power.default_limit,pcie.link.gen.current,pcie.link.gen.max,"
    "pcie.link.width.current,pcie.link.width.max,memory.total";
enum QueryColumn {
  kIndex, kUuid, kName, kBusId, kPersistence, kPstate, kUtil, kSmClock, kSmClockMax, kPowerLimit,
  kPowerDefault, kGenCur, kGenMax, kWidthCur, kWidthMax, kMemTotal, kReasons, kColumns
};

std::string NormalizeBusId(std::string_view id) {
  // NVML/nvidia-smi print "00000000:00:06.0" (8-digit domain); sysfs "0000:00:06.0".
  std::string s = ToLower(Trim(id));
  if (s.size() > 12) s = s.substr(s.size() - 12);
  return s;
}

template <typename T>
Fact<T> NvmlFact(int rc, const NvmlApi& api, const char* what, T v) {
  if (rc == kNvmlSuccess) return Fact<T>::Known(v, std::string("nvml:") + what);
  return Fact<T>::Unknown(std::string(what) + ": " + api.ErrorText(rc));
}

// Fills `g` from NVML. REQUIRES: api bound and initialised.
std::string Unsupported(const char* what) {
  return std::string(what) + ": not exported by this libnvidia-ml";
}

// The SM clock, its maximum and the reasons it is held down.
void FillClocks(const NvmlApi& api, NvmlDevice dev, GpuFacts& g) {
  int rc = 0;
  unsigned u = 0;
  if (api.get_clock_info) {
    rc = api.get_clock_info(dev, kNvmlClockSm, &u);
    g.sm_clock_mhz = NvmlFact<int64_t>(rc, api, "nvmlDeviceGetClockInfo(SM)", u);
  } else {
    g.sm_clock_mhz = Fact<int64_t>::Unknown(Unsupported("nvmlDeviceGetClockInfo"));
  }
  if (api.get_max_clock_info) {
    rc = api.get_max_clock_info(dev, kNvmlClockSm, &u);
    g.max_sm_clock_mhz = NvmlFact<int64_t>(rc, api, "nvmlDeviceGetMaxClockInfo(SM)", u);
  }
  if (api.get_clocks_event_reasons) {
    unsigned long long reasons = 0;
    rc = api.get_clocks_event_reasons(dev, &reasons);
    g.clocks_event_reasons =
        NvmlFact<uint64_t>(rc, api, "nvmlDeviceGetCurrentClocksEventReasons", reasons);
  } else {
    g.clocks_event_reasons =
        Fact<uint64_t>::Unknown(Unsupported("nvmlDeviceGetCurrentClocksEventReasons"));
  }
}

// Utilization, the power limits, persistence mode and the memory size.
void FillPowerAndMemory(const NvmlApi& api, NvmlDevice dev, GpuFacts& g) {
  int rc = 0;
  unsigned u = 0;
  if (api.get_utilization_rates) {
    NvmlUtilization util{};
    rc = api.get_utilization_rates(dev, &util);
    g.util_pct = NvmlFact<int64_t>(rc, api, "nvmlDeviceGetUtilizationRates", util.gpu);
  }
  if (api.get_enforced_power_limit) {
    rc = api.get_enforced_power_limit(dev, &u);
    g.power_limit_w = NvmlFact<double>(rc, api, "nvmlDeviceGetEnforcedPowerLimit", u / 1000.0);
  }
  if (api.get_power_default_limit) {
    rc = api.get_power_default_limit(dev, &u);
    g.power_default_limit_w =
        NvmlFact<double>(rc, api, "nvmlDeviceGetPowerManagementDefaultLimit", u / 1000.0);
  }
  if (api.get_persistence_mode) {
    int mode = 0;
    rc = api.get_persistence_mode(dev, &mode);
    g.persistence_mode = NvmlFact<bool>(rc, api, "nvmlDeviceGetPersistenceMode", mode == 1);
  }
  if (api.get_memory_info) {
    NvmlMemory mem{};
    rc = api.get_memory_info(dev, &mem);
    g.memory_total_mib = NvmlFact<int64_t>(rc, api, "nvmlDeviceGetMemoryInfo",
                                           static_cast<int64_t>(mem.total >> 20));
  }
}

// The PCIe link's generation and width, current and maximum.
void FillPcieLinks(const NvmlApi& api, NvmlDevice dev, GpuFacts& g) {
  int rc = 0;
  unsigned u = 0;
  struct {
    NvmlUnsignedFn fn;
    Fact<int64_t>* out;
    const char* what;
  } links[] = {
      {api.get_curr_pcie_gen, &g.pcie_gen_cur, "nvmlDeviceGetCurrPcieLinkGeneration"},
      {api.get_max_pcie_gen, &g.pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration"},
      {api.get_curr_pcie_width, &g.pcie_width_cur, "nvmlDeviceGetCurrPcieLinkWidth"},
      {api.get_max_pcie_width, &g.pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth"},
  };
  for (auto& l : links) {
    if (!l.fn) {
      *l.out = Fact<int64_t>::Unknown(Unsupported(l.what));
      continue;
    }
    rc = l.fn(dev, &u);
    *l.out = NvmlFact<int64_t>(rc, api, l.what, u);
  }
}

void FillFromNvml(const NvmlApi& api, GpuFacts& g) {
  NvmlDevice dev = nullptr;
  int rc = api.get_handle_by_pci_bus_id(g.bdf.c_str(), &dev);
  if (rc != kNvmlSuccess) {
    g.name = Fact<std::string>::Unknown("nvmlDeviceGetHandleByPciBusId_v2(" + g.bdf +
                                        "): " + api.ErrorText(rc));
    return;
  }
  g.vendor_source = "nvml";
  if (api.get_name) {
    char name[96] = {0};
    rc = api.get_name(dev, name, sizeof(name));
    g.name = NvmlFact<std::string>(rc, api, "nvmlDeviceGetName", std::string(name));
  }
  FillClocks(api, dev, g);
  FillPowerAndMemory(api, dev, g);
  FillPcieLinks(api, dev, g);
}

// One CSV field of nvidia-smi --format=csv,noheader,nounits. "[N/A]", "[Not Supported]" and
// friends are unknown.
std::optional<std::string> CsvField(std::string_view v) {
  v = Trim(v);
  if (v.empty() || v.front() == '[' || v == "N/A") return std::nullopt;
  return std::string(v);
}

// Output of nvidia-smi --query-gpu=<kQueryFields>,clocks_event_reasons.active
//   --format=csv,noheader,nounits (one line per GPU):
// 0, GPU-5d76fdb9-..., NVIDIA H200, 00000000:00:06.0, Enabled, P0, 0, 345, 1980, 700.00, 700.00,
//   5, 5, 16, 16, 143771, 0x0000000000000001
bool FillFromSmiLine(std::string_view line, const std::string& source,
                     std::map<std::string, GpuFacts*>& by_bus) {
  auto f = Split(line, ',');
  if (f.size() != kColumns) return false;
  auto it = by_bus.find(NormalizeBusId(f[kBusId]));
  if (it == by_bus.end()) return false;
  GpuFacts& g = *it->second;
  g.vendor_source = "nvidia-smi";
  auto na = [&](const char* field) { return std::string("nvidia-smi: ") + field + " not reported"; };
  auto int_fact = [&](QueryColumn c, const char* field) {
    auto v = CsvField(f[c]);
    auto n = v ? ParseInt64(*v) : std::nullopt;
    return n ? Fact<int64_t>::Known(*n, source) : Fact<int64_t>::Unknown(na(field));
  };
  auto dbl_fact = [&](QueryColumn c, const char* field) {
    auto v = CsvField(f[c]);
    auto n = v ? ParseDouble(*v) : std::nullopt;
    return n ? Fact<double>::Known(*n, source) : Fact<double>::Unknown(na(field));
  };
  if (auto v = CsvField(f[kName])) g.name = Fact<std::string>::Known(*v, source);
  if (auto v = CsvField(f[kPersistence])) {
    g.persistence_mode = Fact<bool>::Known(*v == "Enabled", source);
  } else {
    g.persistence_mode = Fact<bool>::Unknown(na("persistence_mode"));
  }
  g.util_pct = int_fact(kUtil, "utilization.gpu");
  g.sm_clock_mhz = int_fact(kSmClock, "clocks.current.sm");
  g.max_sm_clock_mhz = int_fact(kSmClockMax, "clocks.max.sm");
  g.power_limit_w = dbl_fact(kPowerLimit, "power.limit");
  g.power_default_limit_w = dbl_fact(kPowerDefault, "power.default_limit");
  g.pcie_gen_cur = int_fact(kGenCur, "pcie.link.gen.current");
  g.pcie_gen_max = int_fact(kGenMax, "pcie.link.gen.max");
  g.pcie_width_cur = int_fact(kWidthCur, "pcie.link.width.current");
  g.pcie_width_max = int_fact(kWidthMax, "pcie.link.width.max");
  g.memory_total_mib = int_fact(kMemTotal, "memory.total");
  auto r = CsvField(f[kReasons]);
  std::optional<uint64_t> reasons;
  if (r && r->size() > 2 && (*r)[0] == '0' && ((*r)[1] == 'x' || (*r)[1] == 'X')) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(r->c_str() + 2, &end, 16);
    if (end != nullptr && *end == '\0') reasons = v;
  }
  g.clocks_event_reasons = reasons ? Fact<uint64_t>::Known(*reasons, source)
                                   : Fact<uint64_t>::Unknown(na("clocks_event_reasons.active"));
  return true;
}

// Returns "" when nvidia-smi answered, else why not.
std::string FillFromNvidiaSmi(const ProbeContext& ctx, std::vector<GpuFacts*>& gpus) {
  std::map<std::string, GpuFacts*> by_bus;
  for (auto* g : gpus) by_bus[NormalizeBusId(g->bdf)] = g;
  std::string why;
  for (const char* reasons : {"clocks_event_reasons.active", "clocks_throttle_reasons.active"}) {
    std::vector<std::string> argv = {"nvidia-smi",
                                     std::string("--query-gpu=") + kQueryFields + "," + reasons,
                                     "--format=csv,noheader,nounits"};
    auto r = ctx.runner->Run(argv, ctx.command_timeout_ns);
    if (!r.ok()) return r.status().message();
    if (r->exit_code != 0) {
      why = "nvidia-smi exited with " + std::to_string(r->exit_code);
      continue;
    }
    int filled = 0;
    for (auto line : Split(r->stdout_text, '\n')) {
      if (Trim(line).empty()) continue;
      if (FillFromSmiLine(line, "nvidia-smi", by_bus)) ++filled;
    }
    if (filled == 0) {
      why = "nvidia-smi: no line matched a GPU's PCI address";
      continue;
    }
    return "";
  }
  return why;
}

class NvidiaGpuVendor : public GpuVendor {
 public:
  std::string_view name() const override { return "nvidia"; }

  void Collect(const ProbeContext& ctx, std::vector<GpuFacts>* out,
               std::vector<std::string>* notes) override {
    std::vector<GpuFacts> gpus = ListPciGpus(*ctx.fs, kPciVendorNvidia);
    if (gpus.empty()) return;
    std::vector<GpuFacts*> ptrs;
    for (auto& g : gpus) ptrs.push_back(&g);

    std::string nvml_why = "NVML not consulted for a recorded tree";
    if (ctx.nvml.lookup) {
      auto api = BindNvml(ctx.nvml.lookup);
      if (!api.ok()) {
        nvml_why = api.status().message();
      } else {
        int rc = api->init();
        if (rc != kNvmlSuccess) {
          nvml_why = std::string("nvmlInit_v2: ") + api->ErrorText(rc);
        } else {
          for (auto* g : ptrs) FillFromNvml(*api, *g);
          api->shutdown();
          nvml_why.clear();
        }
      }
    } else if (ctx.fs->live()) {
      nvml_why = ctx.nvml.unavailable_reason;
    }
    if (!nvml_why.empty()) {
      std::string smi_why = FillFromNvidiaSmi(ctx, ptrs);
      if (smi_why.empty()) {
        notes->push_back("nvidia: " + nvml_why + "; used nvidia-smi");
      } else {
        notes->push_back("nvidia: " + nvml_why + "; " + smi_why);
        const std::string why = "no NVML (" + nvml_why + ") and no nvidia-smi (" + smi_why + ")";
        for (auto* g : ptrs) MarkVendorUnknown(*g, why);
      }
    }
    for (auto& g : gpus) out->push_back(std::move(g));
  }

 private:
  static void MarkVendorUnknown(GpuFacts& g, const std::string& why) {
    g.name = Fact<std::string>::Unknown(why);
    g.util_pct = g.sm_clock_mhz = g.max_sm_clock_mhz = g.memory_total_mib =
        Fact<int64_t>::Unknown(why);
    g.pcie_gen_cur = g.pcie_gen_max = g.pcie_width_cur = g.pcie_width_max =
        Fact<int64_t>::Unknown(why);
    g.power_limit_w = g.power_default_limit_w = Fact<double>::Unknown(why);
    g.clocks_event_reasons = Fact<uint64_t>::Unknown(why);
    g.persistence_mode = Fact<bool>::Unknown(why);
  }
};

}  // namespace

std::unique_ptr<GpuVendor> MakeNvidiaGpuVendor() { return std::make_unique<NvidiaGpuVendor>(); }

}  // namespace latdoc::host
