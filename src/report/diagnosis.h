// One diagnosis: what `latdoc diagnose` found, as every renderer shows it. The terminal summary
// (RenderDiagnosisText), the JSON document (ToJson, schema latdoc.diagnose/1), the Markdown and
// the HTML report (markdown_report.h, html_report.h) all render this one value, so they agree on
// the ranking and on what to change first: `change_first` is a field here, not a choice each
// renderer makes.
//
// The findings, their ranking, the layers' statuses and the run's state are typed. Each layer's
// own document (the load run's `latdoc bench --json`, the sweep's, the trace's, the logs', the
// host's) travels in `sections` under its key, as its module wrote it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/load_facts.h"
#include "loadgen/sweep_curve.h"
#include "rules/finding.h"

namespace latdoc::report {

// One layer of the checklist and what became of it: "measured ...", "skipped: why",
// "failed: why", "inferred ...".
struct LayerStatus {
  std::string layer;  // "network", "load", "system", "kernel", "config", "logs"
  std::string status;
  bool operator==(const LayerStatus&) const = default;
};

struct Diagnosis {
  std::optional<std::string> target;     // the server's URL; nullopt: files and host only
  std::string generated_at;              // UTC, "2026-12-05T09:00:00Z"
  std::optional<bool> target_reachable;  // nullopt: no live target
  std::vector<LayerStatus> layers;       // in the order the checklist ran them
  std::vector<rules::Finding> findings;  // ranked (rules::RankFindings), most important first
  // What to change first: an index into `findings` (rules::ChangeFirst), nullopt when nothing
  // is worth changing. Every renderer shows this finding first.
  std::optional<size_t> change_first;
  bool partial = false;        // a signal ended the run early
  std::string partial_reason;  // "interrupted by SIGINT"
  // Read back from a document (DiagnosisFromJson): findings that did not parse, left out.
  int unreadable_findings = 0;
  // Each layer's own document under its key, in the order the layers ran: "baseline" and "bench"
  // (latdoc.bench/1), "ttft_waterfall", "sweep" (latdoc.sweep/1), "multi_turn", "net",
  // "profile_at", "profile_load", "trace" (latdoc.trace/1), "logs" (latdoc.logs/1), "doctor",
  // "attribution". An object; a key that is absent was not measured.
  nlohmann::ordered_json sections = nlohmann::ordered_json::object();
  // The sections the renderers read as values, read from `sections` by ReadSectionFacts:
  // nullopt where the section is absent or does not read.
  std::optional<loadgen::LoadFacts> bench, baseline;  // the target load; the low-load baseline
  std::optional<loadgen::SweepCurve> sweep;

  const rules::Finding* ChangeFirst() const {
    return change_first && *change_first < findings.size() ? &findings[*change_first] : nullptr;
  }
  // The section under `key`, or null when absent.
  const nlohmann::ordered_json& Section(const char* key) const;
  // The model the load ran against (the bench's, else the sweep's, else the baseline's), or "".
  std::string Model() const;
  // The server whose metric names the target's /metrics answered in ("vllm"...), or "".
  std::string MetricsServer() const;
  // The status of `layer`, or "" when the diagnosis does not say.
  std::string LayerStatusOf(std::string_view layer) const;
};

// (Re)reads bench, baseline and sweep from their sections (loadgen::LoadFactsFromJson,
// loadgen::SweepCurveFromJson).
void ReadSectionFacts(Diagnosis& d);

// Sets the findings (ranked as they are) and what to change first from them.
void SetFindings(Diagnosis& d, std::vector<rules::Finding> ranked);

// The document of `latdoc diagnose --json`: schema, target, generated_at, the sections,
// target_reachable, partial, layers, findings, worst_severity and change_first ({id, layer,
// title} or null).
nlohmann::ordered_json ToJson(const Diagnosis& d);

// A document ToJson wrote, read back (the browser test, reports of a saved diagnosis), with
// its section facts read (ReadSectionFacts). Never fails: a finding without an id or a known layer
// and severity is counted in unreadable_findings; a key of the wrong type reads as absent. A
// document without a change_first takes rules::ChangeFirst of its findings; one whose change_first
// names no finding has none.
Diagnosis DiagnosisFromJson(const nlohmann::ordered_json& doc);

}  // namespace latdoc::report
