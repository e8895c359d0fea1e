#include "rules/gpu_specs.h"

namespace latdoc::rules {

// A data table, one entry per GPU: kept whole (over 80 lines) so that each row sits beside
// the others it is compared with.
const std::vector<GpuSpec>& GpuSpecs() {
  // PCIe: Gen4 x16 = 16 GT/s x 16 lanes x 128/130 ≈ 31.5 GB/s per direction; Gen5 x16 ≈ 63 GB/s
  // (PCI-SIG PCIe 4.0/5.0 base specifications). Peer links: NVLink 900 GB/s (H100/H200 SXM) and
  // 600 GB/s (A100 SXM) are both directions together; an MI300X/MI325X xGMI link is 128 GB/s
  // both directions (7 links, one per peer in an 8-GPU hive), MI355X 153.6, MI250X 100. PCIe
  // cards, whose NVLink or Infinity Fabric bridge is optional, are judged on PCIe: a bridged
  // pair then reads above 100%, never a false warning.
  // FLOP rates: the dense figures of each datasheet named in compute_source (figures the sheet
  // gives "with sparsity" halved). A row without them is judged on bandwidth only.
  static const std::vector<GpuSpec> specs = {
      {"NVIDIA H200 NVL", "H200 NVL", "", 4800, 63, 63,
       "https://www.nvidia.com/en-us/data-center/h200/ (H200 NVL 4.8 TB/s; PCIe Gen5 x16; NVLink bridge optional)",
       60, 417.5, 835.5, 835.5, 1670.5,
       "NVIDIA H200 Tensor Core GPU datasheet (Nov 2024), H200 NVL column: FP32 60 TF; TF32 835, BF16/FP16 1,671, FP8 3,341 TF with sparsity"},
      {"NVIDIA H200", "H200", "", 4800, 63, 450,
       "https://www.nvidia.com/en-us/data-center/h200/ (4.8 TB/s HBM3e; PCIe Gen5 x16; NVLink 900 GB/s)",
       67, 494.5, 989.5, 989.5, 1979,
       "NVIDIA H200 Tensor Core GPU datasheet (Nov 2024), H200 SXM column: FP32 67 TF; TF32 989, BF16/FP16 1,979, FP8 3,958 TF with sparsity"},
      {"NVIDIA H100 NVL", "H100 NVL", "", 3900, 63, 63,
       "https://www.nvidia.com/en-us/data-center/h100/ (H100 NVL 3.9 TB/s; PCIe Gen5 x16)",
       60, 417.5, 835.5, 835.5, 1670.5,
       "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 NVL column: FP32 60 TF; TF32 835, BF16/FP16 1,671, FP8 3,341 TF with sparsity"},
      {"NVIDIA H100 SXM", "H100 80GB HBM3", "sm90", 3350, 63, 450,
       "https://www.nvidia.com/en-us/data-center/h100/ (H100 SXM 3.35 TB/s; PCIe Gen5 x16; NVLink 900 GB/s)",
       67, 494.5, 989.5, 989.5, 1979,
       "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column: FP32 67 TF; TF32 989, BF16/FP16 1,979, FP8 3,958 TF with sparsity"},
      {"NVIDIA H100 PCIe", "H100 PCIe", "", 2000, 63, 63,
       "https://www.nvidia.com/en-us/data-center/h100/ (H100 PCIe 2 TB/s)",
       51, 378, 756.5, 756.5, 1513,
       "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 PCIe column: FP32 51 TF; TF32 756, BF16/FP16 1,513, FP8 3,026 TF with sparsity"},
      {"NVIDIA B200", "B200", "sm100", 8000, 63, 900,
       "https://www.nvidia.com/en-us/data-center/hgx/ (HGX B200: 8 GPUs, 64 TB/s HBM3e in all; PCIe Gen5 x16; NVLink 5 1.8 TB/s)",
       75, 1125, 2250, 2250, 4500,
       "NVIDIA HGX B200 datasheet (2024), 8-GPU totals / 8: FP32 600 TF; TF32 18, BF16/FP16 36, FP8 72 PF with sparsity"},
      {"NVIDIA A100 80GB", "A100-SXM4-80GB", "sm80", 2039, 31.5, 300,
       "https://www.nvidia.com/en-us/data-center/a100/ (A100 80GB SXM 2,039 GB/s; PCIe Gen4 x16; NVLink 600 GB/s)",
       19.5, 156, 312, 312, std::nullopt,
       "NVIDIA A100 Tensor Core GPU datasheet (2021): FP32 19.5 TF; TF32 156, BF16/FP16 312 TF dense; no FP8"},
      {"NVIDIA A100 80GB PCIe", "A100 80GB PCIe", "", 1935, 31.5, 31.5,
       "https://www.nvidia.com/en-us/data-center/a100/ (A100 80GB PCIe 1,935 GB/s; PCIe Gen4 x16)",
       19.5, 156, 312, 312, std::nullopt,
       "NVIDIA A100 Tensor Core GPU datasheet (2021): FP32 19.5 TF; TF32 156, BF16/FP16 312 TF dense; no FP8"},
      {"NVIDIA A100 40GB", "A100", "", 1555, 31.5, 31.5,
       "https://www.nvidia.com/en-us/data-center/a100/ (A100 40GB 1,555 GB/s)",
       19.5, 156, 312, 312, std::nullopt,
       "NVIDIA A100 Tensor Core GPU datasheet (2021): FP32 19.5 TF; TF32 156, BF16/FP16 312 TF dense; no FP8"},
      {"NVIDIA L40S", "L40S", "sm89", 864, 31.5, 31.5,
       "https://www.nvidia.com/en-us/data-center/l40s/ (864 GB/s GDDR6; PCIe Gen4 x16, no NVLink)",
       91.6, 183, 362.05, 362.05, 733,
       "NVIDIA L40S datasheet (2023): FP32 91.6 TF; TF32 366, BF16/FP16 733, FP8 1,466 TF with sparsity"},
      {"NVIDIA L40", "L40", "", 864, 31.5, 31.5,
       "https://www.nvidia.com/en-us/data-center/l40/ (864 GB/s GDDR6; PCIe Gen4 x16)",
       90.5, 90.5, 181, 181, 362,
       "NVIDIA L40 datasheet (2022): FP32 90.5 TF; TF32 181, BF16/FP16 362, FP8 724 TF with sparsity"},
      {"NVIDIA L4", "L4", "", 300, 31.5, 31.5,
       "https://www.nvidia.com/en-us/data-center/l4/ (300 GB/s GDDR6; PCIe Gen4 x16)",
       30.3, 60, 121, 121, 242.5,
       "NVIDIA L4 datasheet (2023): FP32 30.3 TF; TF32 120, BF16/FP16 242, FP8 485 TF with sparsity"},
      {"AMD Instinct MI325X", "MI325X", "", 6000, 63, 64,
       "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html (6 TB/s HBM3E; 128 GB/s per Infinity Fabric link)",
       163.4, 653.7, 1307.4, 1307.4, 2614.9,
       "AMD Instinct MI325X datasheet (2024): FP32 matrix 163.4 TF; TF32 653.7, BF16/FP16 1,307.4, FP8 2,614.9 TF dense"},
      {"AMD Instinct MI300X", "MI300X", "gfx942", 5300, 63, 64,
       "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html (5.3 TB/s; PCIe Gen5 x16; 128 GB/s per Infinity Fabric link)",
       163.4, 653.7, 1307.4, 1307.4, 2614.9,
       "AMD Instinct MI300X datasheet (2023): FP32 matrix 163.4 TF; TF32 653.7, BF16/FP16 1,307.4, FP8 2,614.9 TF dense"},
      {"AMD Instinct MI355X", "MI355X", "gfx950", 8000, 63, 76.8,
       "https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html (8 TB/s HBM3E; 153.6 GB/s per Infinity Fabric link)",
       157.3, std::nullopt, 2500, 2500, 5000,
       "AMD Instinct MI355X datasheet (2025): FP32 vector 157.3 TF; BF16/FP16 2.5, FP8 5.0 PF dense; no TF32"},
      {"AMD Instinct MI250X", "MI250X", "gfx90a", 3276.8, 31.5, 50,
       "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html (3.2768 TB/s, both GCDs; PCIe Gen4 x16; 100 GB/s per Infinity Fabric link)",
       95.7, std::nullopt, 383, 383, std::nullopt,
       "AMD Instinct MI250X datasheet (2021), both GCDs: FP32 matrix 95.7 TF; BF16/FP16 383 TF; no TF32, no FP8"},
      {"AMD Instinct MI210", "MI210", "", 1638.4, 31.5, 31.5,
       "https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html (1.6384 TB/s)",
       45.3, std::nullopt, 181, 181, std::nullopt,
       "AMD Instinct MI210 datasheet (2022): FP32 matrix 45.3 TF; BF16/FP16 181 TF; no TF32, no FP8"},
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
