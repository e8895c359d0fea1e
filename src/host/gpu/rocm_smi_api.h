// The slice of the ROCm SMI library (librocm_smi64.so) latdoc calls, bound at run time
// (dlopen) or from a fake symbol table in tests. Signatures and enum values follow
// ROCm/rocm_smi_lib include/rocm_smi/rocm_smi.h. Used for AMD facts that amdgpu sysfs did not
// give (an unreadable file, a kernel without the attribute); amd-smi's CLI is the last resort.
//
// Required symbols: rsmi_init, rsmi_shut_down, rsmi_num_monitor_devices, rsmi_dev_pci_id_get.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "host/gpu/gpu_vendor.h"

namespace latdoc::host {

struct RocmSmiApi {
  int (*init)(uint64_t flags) = nullptr;
  int (*shut_down)() = nullptr;
  int (*num_monitor_devices)(uint32_t*) = nullptr;
  int (*dev_pci_id_get)(uint32_t, uint64_t*) = nullptr;     // BDFID, see BdfFromRsmiId
  int (*dev_perf_level_get)(uint32_t, int*) = nullptr;      // rsmi_dev_perf_level_t
  int (*dev_busy_percent_get)(uint32_t, uint32_t*) = nullptr;
};

StatusOr<RocmSmiApi> BindRocmSmi(const SymbolLookup& lookup);

// dlopen("librocm_smi64.so.1"), then ".so.7", ".so".
VendorLibrary OpenSystemRocmSmi();

// rsmi BDFID = domain << 32 | bus << 8 | device << 3 | function -> "0000:0c:00.0".
std::string BdfFromRsmiId(uint64_t id);

// rsmi_dev_perf_level_t -> the sysfs spelling ("auto", "profile_min_sclk", ...); nullopt for
// RSMI_DEV_PERF_LEVEL_UNKNOWN (0x100) and values this build does not know.
std::optional<std::string> PerfLevelName(int rsmi_level);

}  // namespace latdoc::host
