#include "host/numa_binding.h"

#include "host/pci.h"
#include "host/proc_parsers.h"

namespace latdoc::host {

StatusOr<NumaBinding> BindingForGpu(const SysRoot& fs, int64_t gpu_index) {
  std::vector<GpuFacts> gpus = ListPciGpus(fs, "");
  if (gpu_index < 0 || gpu_index >= static_cast<int64_t>(gpus.size())) {
    std::string found;
    for (const auto& g : gpus) {
      found += (found.empty() ? "" : ", ") + std::to_string(g.index) + " = " + g.bdf;
    }
    return InvalidArgument("no GPU " + std::to_string(gpu_index) + " (found " +
                           (found.empty() ? std::string("no NVIDIA or AMD GPU") : found) + ")");
  }
  const GpuFacts& g = gpus[static_cast<size_t>(gpu_index)];
  NumaBinding b;
  b.gpu_index = gpu_index;
  b.bdf = g.bdf;
  if (!g.numa_node.known()) return Unavailable(g.numa_node.reason);
  b.node = *g.numa_node;
  std::string list;
  if (b.node >= 0) {
    ASSIGN_OR_RETURN(list, fs.ReadTrimmed("/sys/devices/system/node/node" +
                                          std::to_string(b.node) + "/cpulist"));
  } else if (g.local_cpulist.known()) {
    list = *g.local_cpulist;
  }
  auto cpus = ParseCpuList(list);
  if (!cpus) return DataLoss("GPU " + g.bdf + ": CPU list '" + list + "' is not a cpulist");
  b.cpus = std::move(*cpus);
  b.cpulist = list;
  return b;
}

}  // namespace latdoc::host
