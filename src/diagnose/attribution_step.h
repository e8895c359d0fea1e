// diagnose's stall attribution step (docs/attribution.md): what the target load step keeps
// for it (its run, the client's wall/monotonic pair, host samples under --local), and the step
// itself, which lays them with the server log on one clock, attributes the stalls, adds the
// "attribution" section and findings, and points load.itl_stalls at them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attribution/host_sampler.h"
#include "attribution/timeline.h"
#include "loadgen/runner.h"
#include "rules/finding.h"

namespace latdoc::diagnose {

struct LoadCapture {
  loadgen::BenchRun run;
  attribution::LogClock clock;
  std::vector<attribution::HostPoint> host;  // empty without --local
};

// `log_file`: the server log named by --logs (the first), or empty.
void AddAttribution(const LoadCapture& capture, const std::string& log_file,
                    nlohmann::ordered_json& doc, std::vector<rules::Finding>& all);

}  // namespace latdoc::diagnose
