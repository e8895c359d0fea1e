// The fleet report: the per-replica table for the terminal, Markdown, and the JSON document
// (schema latdoc.fleet/1). Pure: facts and ranked findings in, text out.
//
// JSON, latdoc.fleet/1:
//   {"schema": "latdoc.fleet/1", "prometheus": URL, "selector": "{job=\"vllm\"}",
//    "replica_label": "instance", "window_s": 900, "at_unix_s": 1733350000.0,
//    "query_ms": 41.2,
//    "replicas": [{"replica": "10.0.0.7:8000", "up": true, "stale": false,
//                  "worst_severity": "fail", "request_rate_per_s": 2.1,
//                  "ttft_p50_ms": .., "ttft_p99_ms": .., "itl_p50_ms": .., "itl_p99_ms": ..,
//                  "queue_share": 0.02, "running_mean": 1.0, "waiting_mean": 0,
//                  "kv_usage_ratio": 0.1, "preemptions": 0, "exporter": true,
//                  "exporter_findings": [{"rule": "load.itl_stalls", "severity": "warn"}],
//                  "ttft_p99_ms_over_time": [..], "itl_p99_ms_over_time": [..]}],
//    "times_unix_s": [...], "heat_rate_window_s": 90,
//    "findings": [Finding...], "worst_severity": "fail"}
// A value Prometheus did not give is null.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/fleet.h"
#include "rules/finding.h"

namespace latdoc::fleet {

// The replica's worst severity among the per-replica findings (kOk when none).
rules::Severity ReplicaSeverity(const std::string& replica,
                                const std::vector<rules::Finding>& findings);

// The replicas in the order of the report: the worst first (fail, warn, ...), then by the
// position of their first finding in `findings` (ranked), then by name.
std::vector<const rules::ReplicaFacts*> ReplicasInReportOrder(
    const FleetFacts& facts, const std::vector<rules::Finding>& findings);

// A heading line and the per-replica table, for the terminal (no colour).
std::string RenderFleetSummary(const FleetFacts& facts, const std::vector<rules::Finding>& findings);

nlohmann::ordered_json FleetToJson(const FleetFacts& facts,
                                   const std::vector<rules::Finding>& findings);

std::string RenderFleetMarkdown(const FleetFacts& facts,
                                const std::vector<rules::Finding>& findings);

// One self-contained HTML page (no script, no external resource): the heading, the replica
// table, two heat maps (p99 TTFT and p99 ITL, a row per replica in report order, a column per
// step of the window; a cell's colour is its value over the fleet's median at that step:
// green at or under it, yellow at 1.5x, red at 3x and beyond, grey without traffic; its title
// gives the value), and the findings. Replica names and all text are HTML-escaped.
std::string RenderFleetHtml(const FleetFacts& facts, const std::vector<rules::Finding>& findings);

}  // namespace latdoc::fleet
