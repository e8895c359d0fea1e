// A finding: what a rule concluded, with its evidence and the change to try (DESIGN.md).
//
// Rules are pure functions from facts to findings; renderers turn findings into text, JSON,
// Markdown and HTML. A finding never carries a secret: evidence holds numbers and short facts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace latdoc::rules {

enum class Layer { kNetwork, kSystem, kKernel, kConfig, kLoad };
// kSkip: the check could not run (a fact was unknown); the reason is in the evidence.
enum class Severity { kSkip, kOk, kInfo, kWarn, kFail };

std::string_view LayerName(Layer l);
std::string_view SeverityName(Severity s);
std::optional<Layer> ParseLayer(std::string_view s);
std::optional<Severity> ParseSeverity(std::string_view s);

// One measured number with its unit, or a short fact as text.
struct Evidence {
  std::string name;               // "ttft_p99", "sm_clock"
  std::optional<double> value;    // nullopt: not measured (renders "n/a")
  std::string unit;               // "ms", "MHz", "%", "" for counts
  std::string text;               // a fact that is not a number ("PCIe Gen4 x8 of Gen5 x16")
};

struct Finding {
  std::string id;                 // stable: "kernel.small_h2d_copies"
  Layer layer = Layer::kSystem;
  Severity severity = Severity::kInfo;
  std::string title;              // one line: what is wrong, with the key number
  std::vector<Evidence> evidence;
  std::string advice;             // the exact flag, setting or command to try
  // Estimated share of the user's latency this finding explains, 0..1 (nullopt: unknown).
  // Used to rank findings; see report/ranking. A trace's share is of the GPU time it recorded
  // (ShareOf).
  std::optional<double> latency_share;
};

// What a finding's latency_share is a share of, for reports: "traced GPU time" for the kernel
// layer (a trace may be of another run), "latency" (the measured end-to-end latency) otherwise.
std::string_view ShareOf(const Finding& f);

nlohmann::json ToJson(const Finding& f);
// Reads a finding written by ToJson; unknown fields are ignored.
std::optional<Finding> FindingFromJson(const nlohmann::json& j);

// Sorts problems (fail, warn) first, by latency share (unknown last), then severity, then id;
// then info, ok and skip, in that order (each by share, then id). A total order.
void RankFindings(std::vector<Finding>& findings);

// The worst severity among `findings` (kOk when empty).
Severity WorstSeverity(const std::vector<Finding>& findings);

}  // namespace latdoc::rules
