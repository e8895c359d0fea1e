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

// What a finding's latency_share is a share of. One scale ranks every layer: the mean
// end-to-end latency of the load measured. A trace's findings are on it only when the trace was
// recorded from the server under test; `latdoc trace` alone ranks them by the GPU time traced.
enum class ShareBasis {
  kLatency,         // the measured mean end-to-end latency (load, network, system, config)
  kTracedGpuTime,   // the GPU time the trace recorded (a trace judged on its own)
  kOffRequestPath,  // none: a trace not known to be of the server under test (no share)
};

struct Finding {
  std::string id;                 // stable: "kernel.small_h2d_copies"
  Layer layer = Layer::kSystem;
  Severity severity = Severity::kInfo;
  std::string title;              // one line: what is wrong, with the key number
  std::vector<Evidence> evidence;
  std::string advice;             // the exact flag, setting or command to try
  // Estimated share of share_basis this finding explains, 0..1 (nullopt: unknown). Ranks the
  // findings (RankFindings).
  std::optional<double> latency_share;
  ShareBasis share_basis = ShareBasis::kLatency;
};

// What a finding's latency_share is a share of, for reports: "mean end-to-end latency",
// "traced GPU time", or "not on the measured request path".
std::string_view ShareOf(const Finding& f);
// The basis a document's "share_of" names; absent or unknown (a document older than the field):
// the traced GPU time for the kernel layer, the latency otherwise.
ShareBasis ParseShareOf(std::string_view share_of, Layer layer);

// A trace's findings judged as part of a diagnosis. `of_server_under_test`: the trace was
// recorded from the server whose load was measured, so its shares of GPU time estimate shares
// of that latency. Otherwise, when a load was measured, they claim no share (off the measured
// request path) and rank below every problem that has one; with no load measured, they keep
// their shares of the traced GPU time.
void PlaceTraceFindings(std::vector<Finding>& findings, bool of_server_under_test,
                        bool load_measured);

nlohmann::json ToJson(const Finding& f);
// Reads a finding written by ToJson; unknown fields are ignored, a field of the wrong type reads
// as absent. Nullopt without a string id and a known layer and severity. Never throws.
std::optional<Finding> FindingFromJson(const nlohmann::json& j);

// Sorts problems (fail, warn) first, by latency share (unknown last), then severity, then id;
// then info, ok and skip, in that order (each by share, then id). A total order. The one
// ranking rule of every report (README, "How findings are ranked").
void RankFindings(std::vector<Finding>& findings);

// What to change first (the diagnosis's "change_first", shown first by every renderer): the
// top-ranked `fail` with advice, else the top-ranked `warn` with advice; null when there is
// neither. `ranked` as RankFindings left it.
const Finding* ChangeFirst(const std::vector<Finding>& ranked);

// The worst severity among `findings` (kOk when empty).
Severity WorstSeverity(const std::vector<Finding>& findings);

}  // namespace latdoc::rules
