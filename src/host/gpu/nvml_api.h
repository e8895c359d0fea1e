// The slice of NVML that latdoc calls, as a table of function pointers bound at run time from
// libnvidia-ml.so.1 (or from a fake symbol table in tests). Signatures follow nvml.h
// (NVIDIA/go-nvml gen/nvml/nvml.h); latdoc needs no NVIDIA SDK to build.
//
// Required symbols: nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByPciBusId_v2. A library
// without them is "the wrong version": BindNvml fails and the caller falls back to nvidia-smi.
// Every other symbol is optional (older drivers lack nvmlDeviceGetCurrentClocksEventReasons,
// which is then looked up under its older name nvmlDeviceGetCurrentClocksThrottleReasons).
#pragma once

#include "base/status.h"
#include "host/gpu/gpu_vendor.h"

namespace latdoc::host {

inline constexpr int kNvmlSuccess = 0;
inline constexpr int kNvmlClockSm = 1;  // nvmlClockType_t NVML_CLOCK_SM

using NvmlDevice = void*;  // nvmlDevice_t
struct NvmlUtilization {   // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {        // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using NvmlUnsignedFn = int (*)(NvmlDevice, unsigned int*);

struct NvmlApi {
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*get_handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*get_name)(NvmlDevice, char*, unsigned int) = nullptr;
  int (*get_clock_info)(NvmlDevice, int, unsigned int*) = nullptr;
  int (*get_max_clock_info)(NvmlDevice, int, unsigned int*) = nullptr;
  int (*get_clocks_event_reasons)(NvmlDevice, unsigned long long*) = nullptr;
  int (*get_utilization_rates)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlUnsignedFn get_enforced_power_limit = nullptr;  // mW
  NvmlUnsignedFn get_power_default_limit = nullptr;   // mW
  int (*get_persistence_mode)(NvmlDevice, int*) = nullptr;
  int (*get_memory_info)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlUnsignedFn get_curr_pcie_gen = nullptr;
  NvmlUnsignedFn get_max_pcie_gen = nullptr;
  NvmlUnsignedFn get_curr_pcie_width = nullptr;
  NvmlUnsignedFn get_max_pcie_width = nullptr;

  // "NVML error 3" when nvmlErrorString is missing.
  std::string ErrorText(int rc) const;
};

// Binds the table. Error (kUnimplemented) names the first missing required symbol.
StatusOr<NvmlApi> BindNvml(const SymbolLookup& lookup);

// dlopen("libnvidia-ml.so.1"), then "libnvidia-ml.so".
VendorLibrary OpenSystemNvml();

}  // namespace latdoc::host
