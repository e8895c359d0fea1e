#include "rules/gpu_specs.h"

namespace latdoc::rules {

const std::vector<GpuSpec>& GpuSpecs() {
  // PCIe: Gen4 x16 = 16 GT/s x 16 lanes x 128/130 ≈ 31.5 GB/s per direction; Gen5 x16 ≈ 63 GB/s
  // (PCI-SIG PCIe 4.0/5.0 base specifications). Peer links: NVLink 900 GB/s (H100/H200 SXM) and
  // 600 GB/s (A100 SXM) are both directions together; an MI300X/MI325X xGMI link is 128 GB/s
  // both directions (7 links, one per peer in an 8-GPU hive), MI355X 153.6, MI250X 100. PCIe
  // cards, whose NVLink or Infinity Fabric bridge is optional, are judged on PCIe: a bridged
  // pair then reads above 100%, never a false warning.
  static const std::vector<GpuSpec> specs = {
      {"NVIDIA H200", "H200", "", 4800, 63, 450,
       "https://www.nvidia.com/en-us/data-center/h200/ (4.8 TB/s HBM3e; PCIe Gen5 x16; NVLink 900 GB/s)"},
      {"NVIDIA H100 SXM", "H100 80GB HBM3", "sm90", 3350, 63, 450,
       "https://www.nvidia.com/en-us/data-center/h100/ (H100 SXM 3.35 TB/s; PCIe Gen5 x16; NVLink 900 GB/s)"},
      {"NVIDIA H100 PCIe", "H100 PCIe", "", 2000, 63, 63,
       "https://www.nvidia.com/en-us/data-center/h100/ (H100 PCIe 2 TB/s)"},
      {"NVIDIA A100 80GB", "A100-SXM4-80GB", "sm80", 2039, 31.5, 300,
       "https://www.nvidia.com/en-us/data-center/a100/ (A100 80GB SXM 2,039 GB/s; PCIe Gen4 x16; NVLink 600 GB/s)"},
      {"NVIDIA A100 80GB PCIe", "A100 80GB PCIe", "", 1935, 31.5, 31.5,
       "https://www.nvidia.com/en-us/data-center/a100/ (A100 80GB PCIe 1,935 GB/s; PCIe Gen4 x16)"},
      {"NVIDIA A100 40GB", "A100", "", 1555, 31.5, 31.5,
       "https://www.nvidia.com/en-us/data-center/a100/ (A100 40GB 1,555 GB/s)"},
      {"NVIDIA L40S", "L40S", "sm89", 864, 31.5, 31.5,
       "https://www.nvidia.com/en-us/data-center/l40s/ (864 GB/s GDDR6; PCIe Gen4 x16, no NVLink)"},
      {"AMD Instinct MI325X", "MI325X", "", 6000, 63, 64,
       "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html (6 TB/s HBM3E; 128 GB/s per Infinity Fabric link)"},
      {"AMD Instinct MI300X", "MI300X", "gfx942", 5300, 63, 64,
       "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html (5.3 TB/s; PCIe Gen5 x16; 128 GB/s per Infinity Fabric link)"},
      {"AMD Instinct MI355X", "MI355X", "gfx950", 8000, 63, 76.8,
       "https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html (8 TB/s HBM3E; 153.6 GB/s per Infinity Fabric link)"},
      {"AMD Instinct MI250X", "MI250X", "gfx90a", 3276.8, 31.5, 50,
       "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html (3.2768 TB/s, both GCDs; PCIe Gen4 x16; 100 GB/s per Infinity Fabric link)"},
      {"AMD Instinct MI210", "MI210", "", 1638.4, 31.5, 31.5,
       "https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html (1.6384 TB/s)"},
  };
  return specs;
}

const GpuSpec* FindGpuSpec(std::string_view device_name, std::string_view arch) {
  if (!device_name.empty()) {
    for (const GpuSpec& s : GpuSpecs()) {
      if (device_name.find(s.match) != std::string_view::npos) return &s;
    }
  }
  if (!arch.empty()) {
    for (const GpuSpec& s : GpuSpecs()) {
      if (s.arch == arch) return &s;
    }
  }
  return nullptr;
}

}  // namespace latdoc::rules
