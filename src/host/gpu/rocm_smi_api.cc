#include "host/gpu/rocm_smi_api.h"

#include <cstdio>

namespace latdoc::host {

namespace {
template <typename Fn>
void Bind(const SymbolLookup& lookup, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(lookup(name));
}
}  // namespace

StatusOr<RocmSmiApi> BindRocmSmi(const SymbolLookup& lookup) {
  RocmSmiApi a;
  Bind(lookup, "rsmi_init", a.init);
  Bind(lookup, "rsmi_shut_down", a.shut_down);
  Bind(lookup, "rsmi_num_monitor_devices", a.num_monitor_devices);
  Bind(lookup, "rsmi_dev_pci_id_get", a.dev_pci_id_get);
  for (auto [ok, name] : {std::pair{a.init != nullptr, "rsmi_init"},
                          std::pair{a.shut_down != nullptr, "rsmi_shut_down"},
                          std::pair{a.num_monitor_devices != nullptr, "rsmi_num_monitor_devices"},
                          std::pair{a.dev_pci_id_get != nullptr, "rsmi_dev_pci_id_get"}}) {
    if (!ok) return Unimplemented(std::string("librocm_smi64 lacks ") + name);
  }
  Bind(lookup, "rsmi_dev_perf_level_get", a.dev_perf_level_get);
  Bind(lookup, "rsmi_dev_busy_percent_get", a.dev_busy_percent_get);
  return a;
}

VendorLibrary OpenSystemRocmSmi() {
  return OpenVendorLibrary({"librocm_smi64.so.1", "librocm_smi64.so.7", "librocm_smi64.so"});
}

std::string BdfFromRsmiId(uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", static_cast<unsigned>((id >> 32) & 0xffff),
                static_cast<unsigned>((id >> 8) & 0xff), static_cast<unsigned>((id >> 3) & 0x1f),
                static_cast<unsigned>(id & 0x7));
  return buf;
}

std::optional<std::string> PerfLevelName(int rsmi_level) {
  // RSMI_DEV_PERF_LEVEL_AUTO = 0 ... DETERMINISM = 8 (rocm_smi.h; static_asserts in
  // rocm_smi_lib's tests pin these values).
  static const char* kNames[] = {"auto",         "low",              "high",
                                 "manual",       "profile_standard", "profile_peak",
                                 "profile_min_mclk", "profile_min_sclk", "perf_determinism"};
  if (rsmi_level < 0 || rsmi_level > 8) return std::nullopt;
  return std::string(kNames[rsmi_level]);
}

}  // namespace latdoc::host
