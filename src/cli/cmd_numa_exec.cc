// latdoc numa-exec --gpu N [--sysroot DIR] [--dry-run] -- CMD [ARG...]: runs CMD bound to the
// CPUs and memory of GPU N's NUMA node, the way `latdoc doctor` advises launching a server
// (gpu.numa). The lookup is in host/numa_binding; the binding is libnuma; then execvp.
#include <numa.h>
#include <numaif.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/exit_codes.h"
#include "cli/command.h"
#include "host/numa_binding.h"

namespace latdoc::cli {
namespace {

struct NumaExecArgs {
  int64_t gpu = -1;
  std::string sysroot = "/";
  bool dry_run = false;
  std::vector<std::string> command;
};

int RunNumaExec(const NumaExecArgs& a) {
  if (a.command.empty()) return Fail("numa-exec", "no command given after --", kExitBadInput);
  host::SysRoot fs(a.sysroot);
  auto b = host::BindingForGpu(fs, a.gpu);
  if (!b.ok()) return Fail("numa-exec", b.status().message(), ExitCodeFor(b.status()));
  std::string cmd;
  for (const auto& w : a.command) cmd += (cmd.empty() ? "" : " ") + w;
  const bool bind_memory = b->node >= 0;
  // Said once the bindings hold (at once for a dry run): never "bound" over a failed binding.
  const std::string said = fmt::format(
      "latdoc numa-exec: GPU {} ({}): {}, CPUs {}{}; running: {}\n", b->gpu_index, b->bdf,
      bind_memory ? "NUMA node " + std::to_string(b->node) : "no NUMA node reported (numa_node -1)",
      b->cpulist, bind_memory ? ", memory bound to that node" : ", memory not bound", cmd);
  if (a.dry_run) {
    std::fputs(said.c_str(), stderr);
    return kExitOk;
  }
  if (b->cpus.empty()) {
    return Fail("numa-exec", "GPU " + b->bdf + ": no CPU list to bind to", kExitCannotRun);
  }
  if (numa_available() < 0) {
    return Fail("numa-exec", "libnuma: NUMA is not available on this kernel", kExitCannotRun);
  }

  struct bitmask* cpus = numa_allocate_cpumask();
  for (int64_t c : b->cpus) {
    if (c < static_cast<int64_t>(numa_bitmask_nbytes(cpus) * 8)) {
      numa_bitmask_setbit(cpus, static_cast<unsigned>(c));
    }
  }
  if (numa_sched_setaffinity(0, cpus) != 0) {
    int err = errno;
    numa_free_cpumask(cpus);
    return Fail("numa-exec",
                std::string("sched_setaffinity to CPUs ") + b->cpulist + ": " + std::strerror(err),
                kExitCannotRun);
  }
  numa_free_cpumask(cpus);
  if (bind_memory) {
    // set_mempolicy itself, not numa_set_membind: that one only warns on failure (a node this
    // process may not use, as in a container whose cpuset.mems leaves it out), and the command
    // would run unbound under a message that says it is bound.
    struct bitmask* nodes = numa_allocate_nodemask();
    if (static_cast<uint64_t>(b->node) < nodes->size) numa_bitmask_setbit(nodes, static_cast<unsigned>(b->node));
    const int rc = set_mempolicy(MPOL_BIND, nodes->maskp, nodes->size + 1);  // inherited across execvp
    const int err = errno;
    numa_free_nodemask(nodes);
    if (rc != 0) {
      return Fail("numa-exec", "cannot bind memory to NUMA node " + std::to_string(b->node) + ": " +
                                   std::strerror(err), kExitCannotRun);
    }
  }
  std::fputs(said.c_str(), stderr);
  std::vector<char*> argv;
  for (const auto& w : a.command) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  int err = errno;
  return Fail("numa-exec", a.command[0] + ": " + std::strerror(err),
              err == ENOENT ? kExitBadInput : kExitCannotRun);
}

}  // namespace

Command RegisterNumaExec(CLI::App& root) {
  auto args = std::make_shared<NumaExecArgs>();
  CLI::App* app = root.add_subcommand(
      "numa-exec", "Run a command bound to the CPUs and memory of a GPU's NUMA node");
  app->add_option("--gpu", args->gpu, "GPU index (PCI address order, as nvidia-smi numbers them)")
      ->required();
  app->add_option("--sysroot", args->sysroot, "Read /sys from this directory (tests)");
  app->add_flag("--dry-run", args->dry_run, "Print the binding and exit");
  app->add_option("command", args->command, "The command and its arguments, after --")
      ->required();
  app->prefix_command(false);
  return Command{app, [args]() { return RunNumaExec(*args); }};
}

}  // namespace latdoc::cli
