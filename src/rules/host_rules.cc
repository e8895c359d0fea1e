#include "rules/host_rules.h"

#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rules/host_rules_internal.h"

// The public entry points of the host rules, and the helpers every family shares. The rules
// themselves are in host_<family>_rules.cc (host_rules_internal.h lists them).
namespace latdoc::rules {
namespace host_rules_internal {

Evidence Num(std::string name, double v, std::string unit) {
  return Evidence{std::move(name), v, std::move(unit), ""};
}
Evidence Text(std::string name, std::string text) {
  return Evidence{std::move(name), std::nullopt, "", std::move(text)};
}

// The sample interval in seconds, for "N in S s" titles.
double SampleSeconds(const HostFacts& facts) {
  return static_cast<double>(facts.sample_interval_ns) / 1e9;
}

Finding Make(std::string id, Layer layer, Severity sev, std::string title) {
  Finding f;
  f.id = std::move(id);
  f.layer = layer;
  f.severity = sev;
  f.title = std::move(title);
  return f;
}

Finding Skip(std::string id, Layer layer, std::string subject, const std::string& reason) {
  Finding f = Make(std::move(id), layer, Severity::kSkip, subject + ": not checked");
  // A fact an older latdoc's facts file does not have comes back with no reason.
  f.evidence.push_back(Text("reason", reason.empty() ? "not in these facts (collected by an older latdoc)"
                                                     : reason));
  return f;
}

std::string GpuLabel(const GpuFacts& g) {
  return fmt::format("GPU {} ({}{})", g.index, g.bdf,
                     g.name.known() ? ", " + *g.name : std::string());
}

}  // namespace host_rules_internal

using host_rules_internal::Fact;
using host_rules_internal::HostFacts;
using host_rules_internal::JudgeCpu;
using host_rules_internal::JudgeGpus;
using host_rules_internal::JudgeNet;
using host_rules_internal::GpuNuma;
using host_rules_internal::Skip;
using host_rules_internal::VllmLint;

std::vector<Finding> JudgeVllmArgv(const std::vector<std::string>& argv, const std::string& who,
                                   const HostRuleOptions& options) {
  HostFacts facts;
  facts.server.emplace();
  facts.server->kind = "vllm";
  facts.server->argv = argv;
  facts.server->env = Fact<std::map<std::string, std::string>>::Unknown("a log gives no environment");
  return VllmLint(facts, options, who);
}

std::vector<Finding> JudgeHost(const HostFacts& facts, const HostRuleOptions& options) {
  std::vector<Finding> out;
  // The report's order: GPUs, their NUMA locality, CPU and kernel, network, server config.
  for (auto& f : JudgeGpus(facts)) out.push_back(std::move(f));
  out.push_back(GpuNuma(facts));
  for (auto& f : JudgeCpu(facts)) out.push_back(std::move(f));
  for (auto& f : JudgeNet(facts)) out.push_back(std::move(f));
  if (facts.server && facts.server->kind == "vllm") {
    for (auto& f : VllmLint(facts, options, fmt::format("vLLM pid {}", facts.server->pid))) {
      out.push_back(std::move(f));
    }
  } else {
    out.push_back(Skip("config.vllm_flags", Layer::kConfig, "vLLM flags",
                       facts.server ? "server is " + facts.server->kind + ", not vLLM"
                                    : (facts.server_note.empty() ? "no server process" : facts.server_note)));
  }
  return out;
}

}  // namespace latdoc::rules
