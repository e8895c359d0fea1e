// The report of `latdoc diagnose` as ONE self-contained HTML file: inline CSS, the ranked
// findings checklist, number tables, and charts drawn in the browser by Chart.js (MIT, from
// the npm registry; embedded into the binary at build time by src/report/assets/assets.cmake,
// so the page needs no network at view time). Pure: a Diagnosis in (report/diagnosis.h), a string
// out; no I/O. Thread-safe. The Markdown twin is report/markdown_report.h.
//
// INPUT: a Diagnosis: its typed findings (rendered in their ranked order, change_first first),
// layers and run state, and its sections, as in the document below (schema "latdoc.diagnose/1",
// which ToJson writes). Every section is optional: one that is absent or null means "not
// measured", and each chart whose data is missing is replaced by a short "not measured" note
// (with the reason from `layers` when one is given). Values of an unexpected type are treated
// as absent; nothing in the input can make rendering fail.
//
//   {"schema": "latdoc.diagnose/1", "target": "http://127.0.0.1:8000", "generated_at": "...",
//    "findings": [ rules::ToJson(Finding), ... ],        // already ranked; rendered in order
//    "ttft_waterfall": {"client_ttft_ms": 412.0, "network_and_front_end_ms": 3.1,
//                       "queue_ms": 250.2, "prefill_ms": 120.4, "server_other_ms": 38.3},
//    "bench": <`latdoc bench --json`: mean_ttft_ms, p99_itl_ms, output_throughput, ...,
//              server_metrics.timeline [{t_s, running, waiting, kv_cache_usage (0..1)}],
//              server_metrics.ttft_breakdown (used when ttft_waterfall is absent)>,
//    "sweep": <`latdoc sweep --json` (latdoc.sweep/1): steps [{concurrency | request_rate,
//              p99_ttft_ms, p99_itl_ms, p99_e2el_ms, output_throughput}], knee {concurrency |
//              max_num_seqs | request_rate, reached}; or top-level knee_concurrency>,
//    "trace": <`latdoc trace --json` (latdoc.trace/1): facts.gpu_timeline {computation_ms,
//              exposed_comm_ms, exposed_memcpy_ms, idle_ms, total_ms}, facts.kernels [{name,
//              count, total_ns, mean_ns, busy_share}], facts.span_ns, facts.idle {host_wait_ns,
//              kernel_wait_ns, other_ns, largest_gaps [{device, at_ns, dur_ns, next_op}],
//              gap_histogram [{lo_ns, hi_ns, count}] (optional; else the histogram is of the
//              largest gaps listed)}, facts.steps {method, quantiles.wall_ns {p50, p99},
//              table [{index, wall_ns, gpu_busy_ns}]} (optional: the step-time chart)>,
//    "logs": <`latdoc logs --json` (latdoc.logs/1): facts.engines [{engine, series {t_s [],
//              running [], waiting [], kv_pct []}}]>,
//    "layers": {"network": "measured" | "skipped: why", "system": ..., "kernel": ...,
//               "config": ..., "load": ...}}
//
// OUTPUT: a UTF-8 HTML5 page. Every string taken from the input (target, titles, kernel names,
// evidence) is HTML-escaped in the markup; the chart data travels in a
// <script type="application/json" id="latdoc-data"> block whose '<', '>' and '&' are written
// as \u003c, \u003e, \u0026, so no input can close the block or inject markup or script.
// Chart canvases carry data-chart="<name>"; notes for missing data carry class "not-measured".
#pragma once

#include <string>

#include "report/diagnosis.h"

namespace latdoc::report {

struct HtmlReportOptions {
  // False leaves the Chart.js library out (a placeholder comment instead): for golden tests of
  // the page's structure. Reports written for users always embed it.
  bool embed_chart_library = true;
};

std::string RenderHtmlReport(const Diagnosis& diagnosis);
std::string RenderHtmlReport(const Diagnosis& diagnosis, const HtmlReportOptions& options);

}  // namespace latdoc::report
