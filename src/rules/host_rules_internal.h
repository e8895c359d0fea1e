// What the host rule families share (private to src/rules): the evidence and finding helpers,
// and each family's entry point, which JudgeHost (host_rules.cc) calls in the order of the
// report. One file per family: host_gpu_rules.cc, host_numa_rules.cc, host_cpu_rules.cc,
// host_net_rules.cc, host_config_rules.cc. Pure functions, as in host_rules.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "host/host_facts.h"
#include "rules/finding.h"
#include "rules/host_rules.h"

namespace latdoc::rules::host_rules_internal {

using host::Fact;
using host::GpuFacts;
using host::HostFacts;

Evidence Num(std::string name, double v, std::string unit);
Evidence Text(std::string name, std::string text);
template <typename T>
Evidence FactNum(std::string name, const Fact<T>& f, std::string unit) {
  if (f.known()) return Num(std::move(name), static_cast<double>(*f), std::move(unit));
  return Evidence{std::move(name), std::nullopt, std::move(unit), "unknown: " + f.reason};
}

// The sample interval in seconds, for "N in S s" titles.
double SampleSeconds(const HostFacts& facts);

Finding Make(std::string id, Layer layer, Severity sev, std::string title);
Finding Skip(std::string id, Layer layer, std::string subject, const std::string& reason);

std::string GpuLabel(const GpuFacts& g);

// host_gpu_rules.cc: per GPU, in index order: gpu.clock_policy, gpu.throttle (when it has
// something to say), gpu.power_cap, gpu.pcie_link, gpu.persistence (NVIDIA only).
std::vector<Finding> JudgeGpus(const HostFacts& facts);

// host_numa_rules.cc: gpu.numa, and the GPUs the server uses (*_VISIBLE_DEVICES, else vLLM's
// parallel sizes, else all).
Finding GpuNuma(const HostFacts& facts);
std::vector<const GpuFacts*> ServerGpus(const HostFacts& facts);

// host_cpu_rules.cc: host.numa_balancing, host.thp, cpu.governor, cpu.saturation,
// cpu.cgroup_throttle, cpu.pressure, host.memory_pressure, disk.log_write, in that order.
std::vector<Finding> JudgeCpu(const HostFacts& facts);

// host_net_rules.cc: net.time_wait, net.conntrack, net.listen_overflow, net.socket_drops,
// net.softnet, net.retrans, net.irq (one per NIC), net.firewall, in that order.
std::vector<Finding> JudgeNet(const HostFacts& facts);

// host_config_rules.cc: the config.* checks on `facts.server` (which must be set); `who`
// names the server in the titles.
std::vector<Finding> VllmLint(const HostFacts& facts, const HostRuleOptions& options,
                              const std::string& who);

}  // namespace latdoc::rules::host_rules_internal
