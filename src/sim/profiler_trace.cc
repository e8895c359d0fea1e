#include "sim/profiler_trace.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/core.h>

#include "base/file_util.h"

namespace latdoc::sim {
namespace {

constexpr int kStream = 7;       // the GPU stream kernels run on, as a default CUDA stream
constexpr int64_t kLaunchNs = 4'000;   // a cudaLaunchKernel call on the CPU
constexpr int64_t kLaunchToKernelNs = 6'000;

struct KernelShape {
  const char* name;
  double share;  // of the step's GPU time
};

// Decode: GEMMs dominate, paged attention grows with context; prefill: flash attention.
constexpr KernelShape kDecode[] = {
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", 0.46},
    {"void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>", 0.05},
    {"void vllm::paged_attention_v2_kernel<__nv_bfloat16, 128, 16, 128, 512>", 0.22},
    {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>", 0.07},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1", 0.17},
    {"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, 0>", 0.03},
};
constexpr KernelShape kPrefill[] = {
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1", 0.52},
    {"void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>", 0.04},
    {"void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, true>", 0.26},
    {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>", 0.06},
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1", 0.10},
    {"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, 0>", 0.02},
};

// Kineto writes ts and dur in µs with 3 decimals (ns resolution).
std::string Us(int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

}  // namespace

void StepProfiler::Start(int64_t mono_now_ns, int64_t unix_now_ns) {
  if (!enabled() || active_) return;
  active_ = true;
  base_mono_ns_ = mono_now_ns;
  base_unix_ns_ = unix_now_ns;
  steps_.clear();
  dropped_ = 0;
}

void StepProfiler::OnStep(int64_t start_ns, int64_t end_ns, const StepPlan& plan) {
  if (!active_ || start_ns < base_mono_ns_) return;
  if (steps_.size() >= kMaxSteps) {
    ++dropped_;
    return;
  }
  steps_.push_back(Step{start_ns, std::max(end_ns, start_ns + 1), plan});
}

std::string StepProfiler::TraceJson(const std::vector<Step>& steps, int64_t base_mono_ns,
                                    int64_t base_unix_ns, int pid) {
  std::string out;
  out += "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", "
         "\"computeMajor\": 9, \"computeMinor\": 0, \"totalGlobalMem\": 85045379072, "
         "\"numSms\": 132}],\n";
  out += fmt::format("\"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 1}},\n");
  out += "\"traceEvents\": [\n";
  out += fmt::format("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"tid\": 0, \"args\": "
                     "{{\"name\": \"python3\"}}}},\n", pid);
  out += "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": \"GPU 0\"}}";
  int64_t correlation = 1;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    const int64_t t0 = s.start_ns - base_mono_ns, dur = s.end_ns - s.start_ns;
    out += fmt::format(",\n{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", "
                       "\"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}}}}}",
                       i + 1, pid, pid, Us(t0), Us(dur), 2 * i + 1);
    out += fmt::format(",\n{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"execute_model\", "
                       "\"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, "
                       "\"prefill_tokens\": {}, \"decode_seqs\": {}, \"num_running\": {}}}}}",
                       pid, pid, Us(t0 + 1), Us(std::max<int64_t>(1, dur - 2)), 2 * i + 2,
                       s.plan.prefill_tokens, s.plan.decode_seqs, s.plan.num_running);
    const bool prefill = s.plan.prefill_tokens > 0;
    const auto& shapes = prefill ? kPrefill : kDecode;
    const size_t n = std::size(kDecode);
    // A host stall first (its share of the step's model time, on the step's wall span): nothing
    // is launched, the GPU idles.
    const int64_t gap = s.plan.dur_ns > 0 && s.plan.host_stall_ns > 0
                            ? int64_t(double(dur) * double(s.plan.host_stall_ns) / double(s.plan.dur_ns))
                            : 0;
    // The kernels fill 90% of the rest after the first launch; the rest is launch gaps.
    const int64_t gpu = std::max<int64_t>(n, (dur - gap - kLaunchToKernelNs) * 9 / 10);
    int64_t cpu_t = t0 + gap + 2, gpu_t = t0 + gap + kLaunchToKernelNs;
    for (size_t k = 0; k < n; ++k) {
      double share = shapes[k].share;
      if (s.plan.slow_kernel) share = k == 0 ? 0.9 : 0.1 / double(n - 1);
      const int64_t kdur = std::max<int64_t>(1, int64_t(double(gpu) * share));
      const int64_t launch = std::min(cpu_t, gpu_t - 1);
      out += fmt::format(",\n{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                         "\"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, "
                         "\"cbid\": 211, \"correlation\": {}}}}}",
                         pid, pid, Us(launch), Us(kLaunchNs), 2 * i + 2, correlation);
      out += fmt::format(",\n{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": 0, \"tid\": {}, "
                         "\"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"device\": 0, "
                         "\"stream\": {}, \"correlation\": {}, \"grid\": [132, 1, 1], \"block\": [128, 1, 1]}}}}",
                         shapes[k].name, kStream, Us(gpu_t), Us(kdur), 2 * i + 2, kStream, correlation);
      out += fmt::format(",\n{{\"ph\": \"s\", \"id\": {0}, \"pid\": {1}, \"tid\": {1}, \"ts\": {2}, "
                         "\"cat\": \"ac2g\", \"name\": \"ac2g\"}}", correlation, pid, Us(launch));
      out += fmt::format(",\n{{\"ph\": \"f\", \"id\": {0}, \"pid\": 0, \"tid\": {1}, \"ts\": {2}, "
                         "\"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}", correlation, kStream,
                         Us(gpu_t));
      ++correlation;
      cpu_t += kLaunchNs + 1;
      gpu_t += kdur;
    }
  }
  out += fmt::format("\n],\n\"traceName\": \"latdoc-sim\",\n\"baseTimeNanoseconds\": {}\n}}\n", base_unix_ns);
  return out;
}

StatusOr<std::string> StepProfiler::Stop() {
  if (!active_) return std::string();
  active_ = false;
  const int pid = int(::getpid());
  const std::string path = fmt::format("{}/latdoc-sim_{}.{}.pt.trace.json", dir_, pid,
                                       base_unix_ns_ / 1'000'000);
  std::string text = TraceJson(steps_, base_mono_ns_, base_unix_ns_, pid);
  steps_.clear();
  steps_.shrink_to_fit();
  std::error_code ec;  // as torch's trace handler, the directory is made when missing
  std::filesystem::create_directories(dir_, ec);
  RETURN_IF_ERROR(WriteFileAtomic(path, text));
  return path;
}

}  // namespace latdoc::sim
