#include "host/gpu/nvml_api.h"

namespace latdoc::host {

std::string NvmlApi::ErrorText(int rc) const {
  if (error_string != nullptr) {
    if (const char* s = error_string(rc)) return std::string(s) + " (" + std::to_string(rc) + ")";
  }
  return "NVML error " + std::to_string(rc);
}

namespace {

template <typename Fn>
void Bind(const SymbolLookup& lookup, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(lookup(name));
}

}  // namespace

StatusOr<NvmlApi> BindNvml(const SymbolLookup& lookup) {
  NvmlApi a;
  Bind(lookup, "nvmlInit_v2", a.init);
  Bind(lookup, "nvmlShutdown", a.shutdown);
  Bind(lookup, "nvmlDeviceGetHandleByPciBusId_v2", a.get_handle_by_pci_bus_id);
  if (a.init == nullptr) return Unimplemented("libnvidia-ml lacks nvmlInit_v2 (driver too old?)");
  if (a.shutdown == nullptr) return Unimplemented("libnvidia-ml lacks nvmlShutdown");
  if (a.get_handle_by_pci_bus_id == nullptr) {
    return Unimplemented("libnvidia-ml lacks nvmlDeviceGetHandleByPciBusId_v2 (driver too old?)");
  }
  Bind(lookup, "nvmlErrorString", a.error_string);
  Bind(lookup, "nvmlDeviceGetName", a.get_name);
  Bind(lookup, "nvmlDeviceGetClockInfo", a.get_clock_info);
  Bind(lookup, "nvmlDeviceGetMaxClockInfo", a.get_max_clock_info);
  Bind(lookup, "nvmlDeviceGetCurrentClocksEventReasons", a.get_clocks_event_reasons);
  if (a.get_clocks_event_reasons == nullptr) {
    Bind(lookup, "nvmlDeviceGetCurrentClocksThrottleReasons", a.get_clocks_event_reasons);
  }
  Bind(lookup, "nvmlDeviceGetUtilizationRates", a.get_utilization_rates);
  Bind(lookup, "nvmlDeviceGetEnforcedPowerLimit", a.get_enforced_power_limit);
  Bind(lookup, "nvmlDeviceGetPowerManagementDefaultLimit", a.get_power_default_limit);
  Bind(lookup, "nvmlDeviceGetPersistenceMode", a.get_persistence_mode);
  Bind(lookup, "nvmlDeviceGetMemoryInfo", a.get_memory_info);
  Bind(lookup, "nvmlDeviceGetCurrPcieLinkGeneration", a.get_curr_pcie_gen);
  Bind(lookup, "nvmlDeviceGetMaxPcieLinkGeneration", a.get_max_pcie_gen);
  Bind(lookup, "nvmlDeviceGetCurrPcieLinkWidth", a.get_curr_pcie_width);
  Bind(lookup, "nvmlDeviceGetMaxPcieLinkWidth", a.get_max_pcie_width);
  return a;
}

VendorLibrary OpenSystemNvml() {
  return OpenVendorLibrary({"libnvidia-ml.so.1", "libnvidia-ml.so"});
}

}  // namespace latdoc::host
