// CollectHostFacts: runs every host probe and returns the facts (DESIGN.md: collectors are
// the only code that touches the outside world). Read-only: nothing is written, no setting
// changed. Counters that are cumulative since boot (thread CPU time, TCP counters, interrupts,
// disk busy time, process write bytes) are sampled twice, `sample_interval_ns` apart; the
// static probes (GPUs, NUMA, sockets, firewall) run in between, so the whole collection takes
// about max(interval, probe time).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/command_runner.h"
#include "host/gpu/nvml_api.h"
#include "host/gpu/rocm_smi_api.h"
#include "host/gpu/gpu_vendor.h"
#include "host/host_facts.h"

namespace latdoc::host {

struct CollectOptions {
  std::string sysroot = "/";             // a recorded tree: no live commands, no NVML
  std::optional<int64_t> pid;            // the server process; found by command line if unset
  int64_t sample_interval_ns = 300'000'000;
  // Seams for tests. Null runner: real programs on the live host, the tree's .commands/
  // directory otherwise. `nvml` unset: libnvidia-ml.so.1 on the live host, none otherwise.
  CommandRunner* runner = nullptr;
  std::optional<VendorLibrary> nvml;
  std::optional<VendorLibrary> rocm_smi;  // likewise: librocm_smi64 on the live host
  // Called between the two counter samples (tests change the tree there).
  std::function<void()> between_samples;
};

// Never fails as a whole: what cannot be read becomes an unknown fact with the reason.
HostFacts CollectHostFacts(const CollectOptions& options);

}  // namespace latdoc::host
