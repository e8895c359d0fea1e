// Name conventions shared by the importers and the analyses: copy directions in names, ROCm runtime-internal
// copy/fill "kernels", GPU architecture from a compute capability.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trace/model/trace.h"

namespace latdoc::trace {

// Finds a direction token in a copy's name or kind: "Memcpy HtoD (...)", "HtoD",
// "MEMORY_COPY_HOST_TO_DEVICE", "HOST_TO_DEVICE", "CopyHostToDevice", "HostToDevice".
CopyDirection ParseCopyDirection(std::string_view name);

// ROCm runtime-internal kernels that are really copies or fills (as AMD-AGI/TraceLens@171dd74
// classifies them, TraceLens/util.py _ROCM_LEGACY_MEMCPY_NAMES):
// "__amd_rocclr_copyBuffer*", "MEMORY_COPY_*" -> kMemcpy; "__amd_rocclr_fillBuffer*" -> kMemset.
std::optional<GpuOpKind> ClassifyRocmInternalKernel(std::string_view name);

// "sm90" for NVIDIA 9.0; for AMD (amd = true) the gfx target Kineto's computeMajor/Minor map to:
// 9.0 -> gfx90a (MI200; gfx908 also reports 9.0), 9.4 -> gfx942, 9.5 -> gfx950. Empty if unknown.
std::string ArchFromComputeCapability(bool amd, int64_t major, int64_t minor);

// Normalises a kernel name for grouping: drops "void " and the trailing parameter list of a
// demangled C++ name, and the " [clone .kd]" / ".kd" suffixes of ROCm symbols.
std::string NormalizeKernelName(std::string_view name);

}  // namespace latdoc::trace
