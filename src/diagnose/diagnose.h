// `latdoc diagnose`: walks the checklist — network, load, system, kernel, config, logs — runs
// every layer that applies, and ranks what all of them found. No layer's failure stops the
// others: an unreachable target still gets its traces, logs and host judged, and the result
// says which layers were measured, skipped (and why) or failed.
//
// The document it returns (schema latdoc.diagnose/1) is what every renderer reads: findings
// (ranked), ttft_waterfall, and each layer's own document (bench, baseline, trace, logs,
// doctor). Not thread-safe; runs on the calling thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/runner.h"
#include "loadgen/results.h"
#include "rules/finding.h"

namespace latdoc::diagnose {

struct DiagnoseOptions {
  std::string url;                    // empty: no live target (files and host only)
  loadgen::BenchOptions bench;        // template for the load steps (url, model, key, client...)
  int concurrency = 32;               // the target load
  int requests = 200;
  int baseline_requests = 16;         // at concurrency 1
  loadgen::RandomWorkloadOptions workload;
  loadgen::SloSpec slo;
  std::vector<std::string> traces;
  std::string trace_note;             // said with the kernel layer's status (e.g. "example trace")
  std::vector<std::string> logs;
  std::string facts_path;             // judge host facts collected elsewhere
  bool local = false;                 // collect host facts here
  std::string sysroot = "/";
  bool progress = false;              // say which layer runs, on standard error
};

struct DiagnoseResult {
  nlohmann::ordered_json doc;
  std::vector<rules::Finding> findings;  // ranked
};

DiagnoseResult RunDiagnose(const DiagnoseOptions& options);

// The terminal summary: layers, the TTFT waterfall, the ranked findings, what to change first.
std::string RenderDiagnoseText(const DiagnoseResult& result, bool color, bool show_ok);

}  // namespace latdoc::diagnose
