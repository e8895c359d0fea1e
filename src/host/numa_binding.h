// NumaBinding: where `latdoc numa-exec --gpu N` binds a command: the NUMA node of GPU N (by
// PCI address order, as nvidia-smi and CUDA_DEVICE_ORDER=PCI_BUS_ID number them) and that
// node's CPUs. Pure lookup over SysRoot; the binding itself (libnuma) is done by the CLI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "host/sysroot.h"

namespace latdoc::host {

struct NumaBinding {
  int64_t gpu_index = 0;
  std::string bdf;
  // -1: the platform reports no node (single-node machines, some VMs): bind CPUs only, to
  // `cpus` from the device's local_cpulist, and leave memory policy alone.
  int64_t node = -1;
  std::vector<int64_t> cpus;  // the node's cpulist (or the device's local_cpulist)
  std::string cpulist;        // as text, for messages
};

// Errors: no GPU with that index (the message lists the GPUs found); unreadable numa_node.
StatusOr<NumaBinding> BindingForGpu(const SysRoot& fs, int64_t gpu_index);

}  // namespace latdoc::host
