#include "rules/host_rules_internal.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/strings.h"
#include "rules/vllm_args.h"

// NUMA locality of the server's GPUs (gpu.numa), and which GPUs the server uses (ServerGpus,
// also read by the config.* checks). Shared helpers: host_rules_internal.h.
namespace latdoc::rules::host_rules_internal {
namespace {

// ---------------------------------------------------------------------------------------------
// NUMA.

std::set<int64_t> CpuSet(const std::optional<std::vector<int64_t>>& cpus) {
  return cpus ? std::set<int64_t>(cpus->begin(), cpus->end()) : std::set<int64_t>();
}

// The GPUs the server uses, and how that was decided.
struct ServerGpuSet {
  std::vector<const GpuFacts*> gpus;
  // How they were chosen: named by a *_VISIBLE_DEVICES variable, taken from vLLM's parallel
  // sizes, or every GPU of the host (nothing said which).
  enum class How { kVariable, kVllmParallel, kAll } how = How::kAll;
  std::string note;  // for evidence: the variable, the sizes, or why all
};

// *_VISIBLE_DEVICES when set to plain indices. Without one, vLLM takes the first
// tensor x pipeline x data-parallel GPUs (devices from 0; `index` is PCI order, as with
// CUDA_DEVICE_ORDER=PCI_BUS_ID). Else all. When the variable names none of the host's GPUs (an
// index past the end, CUDA's "-1"), the set is empty and the note says so.
ServerGpuSet ChooseServerGpus(const HostFacts& facts) {
  ServerGpuSet out;
  for (const auto& g : facts.gpus) out.gpus.push_back(&g);
  if (!facts.server) {
    out.note = "no server process";
    return out;
  }
  const host::ServerProcess& s = *facts.server;
  if (s.env.known()) {
    for (const char* var : {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}) {
      auto it = s.env->find(var);
      if (it == s.env->end()) continue;
      std::vector<const GpuFacts*> picked;
      for (auto word : Split(it->second, ',')) {
        auto idx = ParseInt64(word);
        if (!idx) {  // UUIDs or MIG ids: not mapped here
          out.note = fmt::format("{}={} is not plain indices: all GPUs", var, it->second);
          return out;
        }
        for (const auto& g : facts.gpus) {
          if (g.index == *idx) picked.push_back(&g);
        }
      }
      out.how = ServerGpuSet::How::kVariable;
      out.note = picked.empty() ? fmt::format("{}={} names no GPU of this host ({} found)", var, it->second,
                                              facts.gpus.size())
                                : fmt::format("{}={}", var, it->second);
      out.gpus = std::move(picked);
      return out;
    }
  }
  // An unreadable environment may hold a variable: then nothing says which GPUs (all assumed).
  const char* why_unnamed = s.env.known() ? "no *_VISIBLE_DEVICES" : "the server's environment is unreadable";
  if (s.kind == "vllm" && s.env.known()) {
    const std::vector<std::string> a = NormalizeVllmArgv(s.EffectiveArgv());
    auto size = [&](const char* flag) {
      const std::optional<double> v = FlagDouble(a, flag);
      return v && *v >= 1 && *v <= 4096 ? static_cast<size_t>(*v) : size_t{1};
    };
    const size_t dp = FlagValue(a, "--data-parallel-size-local") ? size("--data-parallel-size-local")
                                                                 : size("--data-parallel-size");
    const size_t n = size("--tensor-parallel-size") * size("--pipeline-parallel-size") * dp;
    if (n <= out.gpus.size()) {
      out.gpus.resize(n);
      out.how = ServerGpuSet::How::kVllmParallel;
      out.note = fmt::format("{}: vLLM's first {} GPU{} (tensor x pipeline x data parallel)", why_unnamed, n,
                             n == 1 ? "" : "s");
      return out;
    }
  }
  out.note = fmt::format("{}: all GPUs", why_unnamed);
  return out;
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t'\"$`\\*?;&|<>(){}") == std::string::npos;
    s += plain ? a : "'" + a + "'";
  }
  return s;
}

// gpu.numa once the server's GPUs are known to sit on `gpu_nodes` (one entry per GPU), whose
// CPUs are `local`: whether the server may run, or allocate memory, elsewhere.
Finding ServerNumaBinding(const HostFacts& facts, const ServerGpuSet& chosen,
                          const std::vector<int64_t>& gpu_nodes, const std::set<int64_t>& local) {
  const std::string id = "gpu.numa";
  const std::vector<const GpuFacts*>& gpus = chosen.gpus;
  if (!facts.server) {
    return Skip(id, Layer::kSystem, "server NUMA binding",
                facts.server_note.empty() ? "no server process" : facts.server_note);
  }
  // With every GPU assumed and GPUs on several nodes, every node is "local": nothing to judge.
  if (chosen.how == ServerGpuSet::How::kAll && std::set<int64_t>(gpu_nodes.begin(), gpu_nodes.end()).size() > 1) {
    return Skip(id, Layer::kSystem, "server NUMA binding",
                "which GPUs the server uses is unknown (" + chosen.note +
                    ") and the host's GPUs sit on several NUMA nodes");
  }
  const auto& s = *facts.server;
  if (!s.cpus_allowed_list.known()) {
    return Skip(id, Layer::kSystem, "server NUMA binding", s.cpus_allowed_list.reason);
  }
  std::set<int64_t> allowed = CpuSet(s.CpusAllowed());
  size_t remote = 0;
  for (int64_t c : allowed) remote += local.count(c) == 0;
  // Memory may come only from nodes without any of its GPUs (a --membind or cpuset.mems
  // elsewhere): every page is remote. A list that holds a GPU's node is fine: allocations
  // follow the CPU the thread runs on.
  const std::vector<int64_t> mem_nodes = s.MemsAllowed().value_or(std::vector<int64_t>{});
  const bool memory_remote =
      !mem_nodes.empty() && std::none_of(mem_nodes.begin(), mem_nodes.end(), [&](int64_t n) {
        return std::find(gpu_nodes.begin(), gpu_nodes.end(), n) != gpu_nodes.end();
      });
  Finding f = Make(id, Layer::kSystem, Severity::kOk,
                   fmt::format("server pid {} runs on CPUs local to its GPUs", s.pid));
  f.evidence.push_back(Text("cpus_allowed_list", *s.cpus_allowed_list));
  if (s.mems_allowed_list.known()) f.evidence.push_back(Text("mems_allowed_list", *s.mems_allowed_list));
  std::string node_list;
  for (int64_t n : gpu_nodes) node_list += (node_list.empty() ? "" : ",") + std::to_string(n);
  f.evidence.push_back(Text("gpu_numa_nodes", node_list));
  f.evidence.push_back(Text("server_gpus", chosen.note));
  if (memory_remote) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server pid {} may allocate memory only on NUMA node(s) {}, none of them its GPUs' ({})",
                          s.pid, *s.mems_allowed_list, node_list);
    f.advice = gpus.size() == 1
                   ? fmt::format("latdoc numa-exec --gpu {} -- {}", gpus[0]->index, ShellJoin(s.argv))
                   : fmt::format("numactl --cpunodebind={0} --membind={0} {1}", node_list, ShellJoin(s.argv));
  } else if (remote > 0) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("server pid {} may run on {} CPUs of another NUMA node than its GPUs",
                          s.pid, remote);
    if (gpus.size() == 1) {
      f.advice = fmt::format("latdoc numa-exec --gpu {} -- {}", gpus[0]->index, ShellJoin(s.argv));
    } else {
      f.advice = fmt::format("numactl --cpunodebind={0} --membind={0} {1}", node_list,
                             ShellJoin(s.argv));
    }
  }
  return f;
}

}  // namespace

std::vector<const GpuFacts*> ServerGpus(const HostFacts& facts) { return ChooseServerGpus(facts).gpus; }

Finding GpuNuma(const HostFacts& facts) {
  const std::string id = "gpu.numa";
  const size_t nodes = facts.cpu.numa_nodes.size();
  if (facts.gpus.empty()) return Skip(id, Layer::kSystem, "GPU NUMA locality", "no GPU found");
  if (nodes <= 1) {
    Finding f = Make(id, Layer::kSystem, Severity::kOk,
                     "one NUMA node: every CPU is local to the GPUs");
    for (const auto& g : facts.gpus) {
      f.evidence.push_back(FactNum(fmt::format("gpu{}_numa_node", g.index), g.numa_node, ""));
    }
    return f;
  }
  const ServerGpuSet chosen = ChooseServerGpus(facts);
  const std::vector<const GpuFacts*>& gpus = chosen.gpus;
  if (gpus.empty()) return Skip(id, Layer::kSystem, "server NUMA binding", chosen.note);
  std::set<int64_t> local;
  std::vector<int64_t> gpu_nodes;
  for (const auto* g : gpus) {
    if (!g->numa_node.known()) {
      return Skip(id, Layer::kSystem, GpuLabel(*g), g->numa_node.reason);
    }
    if (*g->numa_node < 0) {
      Finding f = Make(id, Layer::kSystem, Severity::kInfo,
                       GpuLabel(*g) + ": the platform reports no NUMA node (numa_node -1) on a "
                                      "multi-node host");
      f.advice = "enable NUMA / ACPI SRAT reporting in the BIOS (NPS setting) so binding can be "
                 "checked; nvidia-smi topo -m shows the affinity the driver assumes";
      return f;
    }
    gpu_nodes.push_back(*g->numa_node);
    for (const auto& n : facts.cpu.numa_nodes) {
      if (n.id == *g->numa_node) {
        for (int64_t c : CpuSet(n.Cpus())) local.insert(c);
      }
    }
  }
  return ServerNumaBinding(facts, chosen, gpu_nodes, local);
}

}  // namespace latdoc::rules::host_rules_internal
