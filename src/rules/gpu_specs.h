// GPU peaks, as data: one row per product, each citing its source. Used by the trace rules to
// put achieved copy bandwidth against the link it crosses, and each kernel on a roofline
// (trace_roofline_rules.h). Bandwidths are vendor datasheet peaks in GB/s (1e9 bytes/s);
// host_link_gbps and peer_link_gbps are one direction of a link. FLOP rates are dense (no
// structured sparsity: a datasheet figure marked "with sparsity" is halved) in TFLOP/s (1e12).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace latdoc::rules {

struct GpuSpec {
  std::string_view name;          // "NVIDIA H200"
  std::string_view match;         // substring of the device name as profilers report it
  std::string_view arch;          // "sm90", "gfx942": fallback match when the name is empty
  double hbm_gbps;                // device memory peak
  double host_link_gbps;          // PCIe, one direction, theoretical
  // The link one peer-to-peer copy crosses, one direction: NVLink through NVSwitch (one peer
  // can use all of it), one xGMI link to a peer (AMD), or PCIe where a bridge is optional.
  double peer_link_gbps;
  std::string_view source;
  // Dense peak FLOP rates, TFLOP/s; nullopt where the part has no such unit or the datasheet
  // gives none. fp32: NVIDIA's non-tensor FP32 (TF32 tensor cores are tf32, used for fp32
  // GEMMs only when allowed: torch.backends.cuda.matmul.allow_tf32); AMD's FP32 matrix rate
  // (rocBLAS runs fp32 GEMMs on the matrix cores), equal to or above its vector rate.
  std::optional<double> fp32_tflops = std::nullopt;
  std::optional<double> tf32_tflops = std::nullopt;
  std::optional<double> bf16_tflops = std::nullopt;
  std::optional<double> fp16_tflops = std::nullopt;
  std::optional<double> fp8_tflops = std::nullopt;
  std::string_view compute_source = {};   // datasheet name and version of the FLOP rates
};

// The table, most specific rows first.
const std::vector<GpuSpec>& GpuSpecs();

// The row for a device: by name substring first, then by architecture (the first row of that
// arch is the family's reference part). nullptr when unknown.
const GpuSpec* FindGpuSpec(std::string_view device_name, std::string_view arch);

}  // namespace latdoc::rules
