// GpuVendor: one implementation per GPU vendor, one file each (nvidia.cc, amd.cc), listed
// explicitly in registry.cc (no self-registration: the linker can drop static initialisers).
// A vendor enumerates its GPUs from PCI sysfs, then fills what its library or CLI reports.
// A vendor whose library or CLI is missing still returns its GPUs, with the facts it could not
// read left unknown and a note saying why.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/command_runner.h"
#include "host/host_facts.h"
#include "host/sysroot.h"

namespace latdoc::host {

// Resolves a symbol of a vendor library (dlsym, or a fake table in tests); nullptr if absent.
using SymbolLookup = std::function<void*(const char* symbol)>;

// A vendor library bound at run time. `lookup` is empty when the library could not be loaded;
// then `unavailable_reason` says why ("libnvidia-ml.so.1: cannot open shared object file").
struct VendorLibrary {
  SymbolLookup lookup;
  std::string unavailable_reason;
};

// dlopen()s the first of `names` that loads (RTLD_NOW | RTLD_LOCAL); never unloads it.
VendorLibrary OpenVendorLibrary(const std::vector<std::string>& names);

struct ProbeContext {
  const SysRoot* fs = nullptr;
  CommandRunner* runner = nullptr;
  // Vendor libraries: consulted only on the live host (a recorded tree's GPU is not this
  // host's). Empty lookup: not available.
  VendorLibrary nvml;
  VendorLibrary rocm_smi;
  int64_t command_timeout_ns = 400'000'000;
};

class GpuVendor {
 public:
  virtual ~GpuVendor() = default;
  virtual std::string_view name() const = 0;
  // Appends this vendor's GPUs to `gpus` and any explanation to `notes`.
  virtual void Collect(const ProbeContext& ctx, std::vector<GpuFacts>* gpus,
                       std::vector<std::string>* notes) = 0;
};

std::unique_ptr<GpuVendor> MakeNvidiaGpuVendor();
std::unique_ptr<GpuVendor> MakeAmdGpuVendor();

// Every vendor, in a fixed order (registry.cc).
std::vector<std::unique_ptr<GpuVendor>> AllGpuVendors();

}  // namespace latdoc::host
