// The explicit list of GPU vendors. Adding a vendor: one file beside this one and one line here.
#include <dlfcn.h>

#include "host/gpu/gpu_vendor.h"

namespace latdoc::host {

std::vector<std::unique_ptr<GpuVendor>> AllGpuVendors() {
  std::vector<std::unique_ptr<GpuVendor>> v;
  v.push_back(MakeNvidiaGpuVendor());
  v.push_back(MakeAmdGpuVendor());
  return v;
}

VendorLibrary OpenVendorLibrary(const std::vector<std::string>& names) {
  VendorLibrary lib;
  std::string errors;
  for (const auto& n : names) {
    void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      lib.lookup = [h](const char* sym) { return ::dlsym(h, sym); };
      return lib;
    }
    const char* e = ::dlerror();
    if (!errors.empty()) errors += "; ";
    errors += e != nullptr ? e : n + ": cannot load";
  }
  lib.unavailable_reason = errors;
  return lib;
}

}  // namespace latdoc::host
