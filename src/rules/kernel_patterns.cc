#include "rules/kernel_patterns.h"

namespace latdoc::rules {

const std::vector<KernelPattern>& KernelPatterns() {
  static const std::vector<KernelPattern> rows = {
      {"rocclr_copy_kernel", "__amd_rocclr_copyBuffer", "", "gfx90a,gfx942,gfx950",
       "a copy run as a blit kernel of the HIP runtime on the compute units (not the SDMA engines)",
       "remove the copy from the hot path (a .contiguous()/.clone()/.to() per step); for host "
       "copies use pinned memory (pin_memory=True, hipHostMalloc) and check HSA_ENABLE_SDMA is not 0",
       "ROCm/clr rocclr/device/rocm/rocblit.cpp (blit kernels __amd_rocclr_copyBuffer*); "
       "TraceLens util.py _ROCM_LEGACY_MEMCPY_NAMES"},
      {"rocclr_fill_kernel", "__amd_rocclr_fillBuffer", "", "gfx90a,gfx942,gfx950",
       "a memset run as a fill kernel of the HIP runtime",
       "avoid zero-filling buffers every step (torch.zeros -> torch.empty where the values are "
       "overwritten anyway)",
       "ROCm/clr rocclr/device/rocm/rocblit.cpp (fill kernels __amd_rocclr_fillBuffer*)"},
      {"unrolled_elementwise", "at::native::unrolled_elementwise_kernel<", "", "",
       "PyTorch's non-vectorised elementwise path: taken when inputs are misaligned, "
       "non-contiguous or need a dtype cast inside the kernel",
       "make operands contiguous and of one dtype before the op, or fuse the chain with "
       "torch.compile",
       "pytorch/pytorch aten/src/ATen/native/cuda/CUDALoops.cuh (launch_vectorized_kernel only "
       "for contiguous, aligned, same-dtype inputs; unrolled_elementwise_kernel otherwise)",
       "its inputs are misaligned or non-contiguous; a dtype cast inside the kernel (LoadWithCast/"
       "StoreWithCast, e.g. .to(dtype)) takes this path by design"},
      {"legacy_elementwise", "at::native::elementwise_kernel<", "", "",
       "PyTorch's generic strided elementwise path (non-contiguous tensors, index math per element)",
       "call .contiguous() once before a chain of elementwise ops, or fuse them with torch.compile",
       "pytorch/pytorch aten/src/ATen/native/cuda/CUDALoops.cuh (gpu_kernel_impl falls back to "
       "launch_legacy_kernel / elementwise_kernel when the iterator is not contiguous)",
       "its inputs are non-contiguous; a broadcast operand (a bias, a scalar tensor) or a strided "
       "output of contiguous inputs takes this path by design"},
      {"cat_batched_copy", "", "CatArrayBatchedCopy", "",
       "torch.cat in the step: every call copies all inputs into a new tensor",
       "preallocate the output and write into slices, or keep a persistent buffer (KV/cache "
       "tensors) instead of concatenating per step",
       "pytorch/pytorch aten/src/ATen/native/cuda/Shape.cu (CatArrayBatchedCopy)"},
      {"miopen_naive_conv", "", "naive_conv", "gfx90a,gfx942,gfx950",
       "MIOpen fell back to its naive (reference) convolution solver",
       "run MIOpen's tuning (MIOPEN_FIND_MODE=NORMAL, MIOPEN_FIND_ENFORCE=SEARCH once) or change "
       "the layout/dtype to one MIOpen has fast solvers for",
       "ROCm/MIOpen src/kernels/naive_conv.cpp and src/solver/conv_direct_naive_conv*.cpp"},
      {"pre_hopper_gemm_on_hopper", "ampere_", "", "sm90",
       "a GEMM kernel built for Ampere (sm80) running on Hopper: no wgmma/TMA, well below peak",
       "update PyTorch/cuBLAS (CUDA 12.x cuBLAS ships sm90 kernels) and keep GEMM dims multiples "
       "of 16 bytes so the Hopper kernels qualify",
       "cuBLAS kernel naming: kernels carry their target architecture (ampere_*, sm80_xmma_*, "
       "sm90_xmma_*), cuBLAS release notes",
       "", "sgemm"},
      // An fp32 GEMM without TF32 (f32f32_f32f32) runs on the CUDA cores: cuBLAS has no sm90
      // tensor-core kernel for it, and an sm80 one is the expected choice (cuBLAS docs,
      // cublasMath_t: CUBLAS_DEFAULT_MATH runs fp32 in fp32 unless TF32 is allowed).
      {"sm80_xmma_on_hopper", "sm80_xmma", "", "sm90",
       "an sm80 XMMA kernel running on Hopper (no wgmma/TMA)",
       "update PyTorch/cuBLAS/cuDNN to a build with sm90 kernels; check dtype and alignment",
       "cuBLAS/cuDNN kernel naming (sm80_xmma_* vs sm90_xmma_*)",
       "", "f32f32_f32f32"},
      // indexSelectLargeIndex with 32-bit index math (IndexType unsigned int) is PyTorch's
      // normal kernel for more than 16 indices; only the uint64_t instance (unsigned long) is
      // the 64-bit fallback for tensors past 32-bit index math.
      {"index_select_large_index", "", "indexSelectLargeIndex", "",
       "index_select/embedding with 64-bit index math (a tensor too large for 32-bit indexing)",
       "shard or split the indexed tensor so 32-bit indexing applies",
       "pytorch/pytorch aten/src/ATen/native/cuda/Indexing.cu (index_select_out_cuda_impl: "
       "SMALL_INDEX/LARGE_INDEX with unsigned int when canUse32BitIndexMath, else LARGE_INDEX "
       "with uint64_t)",
       "", "unsigned int"},
  };
  return rows;
}

bool MatchesPattern(const KernelPattern& p, std::string_view name, std::string_view arch) {
  if (!arch.empty() && !p.archs.empty()) {
    bool applies = false;
    std::string_view list = p.archs;
    while (!list.empty()) {
      const size_t comma = list.find(',');
      if (list.substr(0, comma) == arch) applies = true;
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    if (!applies) return false;
  }
  if (!p.excludes.empty() && name.find(p.excludes) != std::string_view::npos) return false;
  if (!p.prefix.empty()) return name.substr(0, p.prefix.size()) == p.prefix;
  return !p.contains.empty() && name.find(p.contains) != std::string_view::npos;
}

}  // namespace latdoc::rules
