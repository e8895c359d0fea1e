#include "trace/model/gpu_names.h"

namespace latdoc::trace {
namespace {
bool Has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }
}  // namespace

CopyDirection ParseCopyDirection(std::string_view n) {
  if (Has(n, "HtoD") || Has(n, "HOST_TO_DEVICE") || Has(n, "HostToDevice")) return CopyDirection::kHtoD;
  if (Has(n, "DtoH") || Has(n, "DEVICE_TO_HOST") || Has(n, "DeviceToHost")) return CopyDirection::kDtoH;
  if (Has(n, "DtoD") || Has(n, "DEVICE_TO_DEVICE") || Has(n, "DeviceToDevice")) return CopyDirection::kDtoD;
  if (Has(n, "HtoH") || Has(n, "HOST_TO_HOST") || Has(n, "HostToHost")) return CopyDirection::kHtoH;
  if (Has(n, "PtoP") || Has(n, "PEER")) return CopyDirection::kPtoP;
  return CopyDirection::kUnknown;
}

std::optional<GpuOpKind> ClassifyRocmInternalKernel(std::string_view name) {
  if (name.rfind("__amd_rocclr_copyBuffer", 0) == 0 || name.rfind("MEMORY_COPY_", 0) == 0) {
    return GpuOpKind::kMemcpy;
  }
  if (name.rfind("__amd_rocclr_fillBuffer", 0) == 0) return GpuOpKind::kMemset;
  return std::nullopt;
}

std::string ArchFromComputeCapability(bool amd, int64_t major, int64_t minor) {
  if (major < 0 || minor < 0) return "";
  if (!amd) return "sm" + std::to_string(major * 10 + minor);
  if (major == 9 && minor == 0) return "gfx90a";
  if (major == 9 && minor == 4) return "gfx942";
  if (major == 9 && minor == 5) return "gfx950";
  return "";
}

std::string NormalizeKernelName(std::string_view n) {
  while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
  for (std::string_view suffix : {std::string_view(" [clone .kd]"), std::string_view(".kd")}) {
    if (n.size() > suffix.size() && n.substr(n.size() - suffix.size()) == suffix) {
      n.remove_suffix(suffix.size());
    }
  }
  if (n.rfind("void ", 0) == 0) n.remove_prefix(5);
  // Drop a trailing "(...)" parameter list, matching parentheses from the end.
  if (!n.empty() && n.back() == ')') {
    int depth = 0;
    for (size_t i = n.size(); i-- > 0;) {
      if (n[i] == ')') ++depth;
      if (n[i] == '(' && --depth == 0) {
        if (i > 0) n = n.substr(0, i);
        break;
      }
    }
  }
  return std::string(n);
}

}  // namespace latdoc::trace
