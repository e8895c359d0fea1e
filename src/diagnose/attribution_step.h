// diagnose's stall attribution step (docs/attribution.md): what the target load step keeps
// for it (its run, the client's wall/monotonic pair, host samples under --local, the trace
// --profile-load recorded over it), and the step itself, which lays them with the server log
// and any GPU trace on one clock, attributes the stalls, adds the "attribution" section and
// findings, and points load.itl_stalls at them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attribution/host_sampler.h"
#include "attribution/timeline.h"
#include "diagnose/profile_at.h"
#include "loadgen/runner.h"
#include "rules/finding.h"
#include "trace/importers/importer.h"

namespace latdoc::diagnose {

struct LoadCapture {
  loadgen::BenchRun run;
  attribution::LogClock clock;
  std::vector<attribution::HostPoint> host;  // empty without --local
  attribution::ServerCpu server_cpu;         // the server's threads (--local, the server found)
  LoadProfile profile;                       // --profile-load's capture (status "" without it)
};

// `log_file`: the server log named by --logs (the first), or empty. `gpu_traces`: profiler
// traces (--trace, and --profile-load's files), read with `import`; the kernels of those on the
// wall clock (Kineto's baseTimeNanoseconds, an Nsight Systems export's session start, a rocpd
// file of this host with import.local_boot_clock) go on the timeline (PlaceGpuTraces).
void AddAttribution(const LoadCapture& capture, const std::string& log_file,
                    const std::vector<std::string>& gpu_traces, const trace::ImportOptions& import,
                    nlohmann::ordered_json& doc, std::vector<rules::Finding>& all);

// The GPU kernels of `files` that record their wall clock, mapped to the client clock through
// `clock` (attribution::WallToMono), those overlapping [t->start_ns, t->end_ns] into t->gpu (by
// start), their names with the median duration of the trace's kernels of each into
// t->gpu_names. Returns the import
// errors ("" none); files without a wall clock are left out.
std::string PlaceGpuTraces(const std::vector<std::string>& files,
                           const trace::ImportOptions& import, const attribution::LogClock& clock,
                           attribution::Timeline* t);

}  // namespace latdoc::diagnose
