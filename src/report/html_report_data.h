// The numbers of a diagnosis report, taken once from the diagnosis's sections (report/diagnosis.h;
// their schema in report/html_report.h) and normalised for the HTML and Markdown renderers: units
// in ms, KV usage in percent, values of the wrong type dropped. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/diagnosis.h"

namespace latdoc::report {

// The chart and table data. Keys, each present only when its data is (null/absent: not
// measured):
//   "sweep":   {"x_name": "concurrency"|"request_rate", "steps": [{"x", and the bench names
//               (loadgen::keys) p99_{ttft,itl,e2el}_ms and output_throughput}],
//               "knee": {"x", "reached"}}
//   "waterfall": {"client_ttft_ms", "segments": [{"key", "label", "ms", "start_ms"}],
//               "source": "diagnose"|"bench"}
//   "bench":   {"completed", "failed", "max_concurrency", "request_throughput",
//               "output_throughput", "{mean,median,p99}_{ttft,tpot,itl,e2el}_ms"}
//   "gpu_time": {"total_ms", "parts": [{"label", "ms"}]}
//   "kernels": {"busy_ms", "items": [{"name", "label", "count", "total_ms", "mean_us",
//               "busy_pct"}] (label: the name shortened from the middle for a chart axis,
//               different for different names),
//               "shown_of": kernel names in the trace}
//   "idle":    {"span_ms", "gaps": [{"device", "at_ms", "dur_us", "next_op"}],
//               "split": [{"label", "ms"}], "histogram": [{"label", "count"}],
//               "histogram_of": "all gaps"|"largest gaps listed"}
//   "steps":   {"method", "count", "p50_ms", "p99_ms", "items": [{"index", "wall_ms",
//               "busy_ms"}] (the first 400 steps)}
//   "server_series": [{"source", "t_s": [], "running": [], "waiting": [], "kv_pct": []}]
//   "layers":  [{"layer", "status"}]
nlohmann::ordered_json ReportData(const Diagnosis& diagnosis);

// The string at `key` of object `j`, or "" (absent or not a string).
std::string StringAt(const nlohmann::ordered_json& j, const char* key);
// The number at `key` of object `j` (nullopt: absent, null or not a number, or not finite).
std::optional<double> NumberAt(const nlohmann::ordered_json& j, const char* key);

// What a report is about, from the document; "" where it does not say.
struct ReportSubject {
  std::string target;  // the server's URL ("target")
  std::string model;   // the model the load ran against (bench, sweep or baseline "model_id")
  // The server's kind and version: "vLLM 0.8.5 (from its log)", or "its /metrics in vLLM's
  // names" when only the metric names say.
  std::string server;
};
ReportSubject SubjectOf(const Diagnosis& diagnosis);

// "12.3", "0.0123", "1.23e-05": 3-4 significant digits; a whole number, or one of 1e6 and
// more, prints whole ("16", "262144", not "16.0"); never "-0"; "n/a" for nullopt.
std::string FormatNumber(std::optional<double> v);
// A count ("39", never "39.0"); "n/a" for nullopt.
std::string FormatCountValue(std::optional<double> v);

// "53%": part / whole as a whole percent; "0%" (never "-0%") when it rounds to zero.
std::string SharePercent(double part, double whole);

}  // namespace latdoc::report
