// Host, stack and server-configuration rules of `latdoc doctor`: pure functions from HostFacts
// to findings (no I/O, no clock). Every check yields one finding per subject (per GPU, per NIC,
// or one for the host), with severity ok / info / warn / fail, or skip with the reason when a
// fact it needs is unknown. Rules never flag what is normal: a low clock at idle (NVIDIA reason
// 0x1 GpuIdle, AMD deep sleep), numa_node -1 on a one-node machine, MI300's `auto` level.
//
// Ids: gpu.clock_policy, gpu.throttle, gpu.power_cap, gpu.pcie_link, gpu.persistence,
// gpu.numa, host.numa_balancing, host.thp, cpu.governor, cpu.saturation, cpu.cgroup_throttle,
// cpu.pressure, host.memory_pressure, disk.log_write, net.time_wait, net.conntrack,
// net.listen_overflow, net.socket_drops, net.softnet, net.retrans, net.irq, net.firewall,
// config.enforce_eager, config.cudagraph_capture, config.gpu_memory_utilization,
// config.max_num_seqs, config.max_num_batched_tokens, config.block_size, config.logging,
// config.async_scheduling, config.v1_multiprocessing, config.rocm_aiter (AMD gfx942/gfx950
// only). Thresholds are latdoc's own, from: NVML's clocks-event reason bits (NVIDIA/go-nvml
// gen/nvml/nvml.h, NVML API 13); vLLM's EngineArgs defaults and env variables
// (vllm-project/vllm vllm/engine/arg_utils.py, vllm/config/scheduler.py ~v0.11, vllm/envs.py);
// AMD's MI300X tuning guide (ROCm/ROCm docs/how-to/system-optimization/mi300x.rst, Mar 2025)
// and NVIDIA's NCCL troubleshooting and driver-persistence docs; the kernel's docs
// (Documentation/accounting/psi.rst, Documentation/networking/ip-sysctl.rst,
// nf_conntrack-sysctl.rst, scaling.rst, proc_net_tcp.rst). vLLM's flags are read through
// NormalizeVllmArgv (vllm_args.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "host/host_facts.h"
#include "rules/finding.h"

namespace latdoc::rules {

struct HostRuleOptions {
  // The concurrency at the latency knee that `latdoc sweep` found (loadgen::SweepKneeFromJson).
  std::optional<int64_t> sweep_knee_concurrency;
};

std::vector<Finding> JudgeHost(const host::HostFacts& facts, const HostRuleOptions& options);

// The config.* checks on a vLLM command line alone, as a server's startup log gives it
// (logs/vllm_startup.h): no GPU facts, so the defaults that depend on the GPU's memory are
// unknown, and no environment. `who` names the server in the titles.
std::vector<Finding> JudgeVllmArgv(const std::vector<std::string>& argv, const std::string& who,
                                   const HostRuleOptions& options);

}  // namespace latdoc::rules
