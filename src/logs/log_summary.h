// Terminal summary of LogFacts: inputs, the stats series (sampled rows and what stands out),
// log volume by kind, requests, warnings and errors grouped by template, bad input.
// Findings are rendered separately (report/findings_text.h). Pure: facts in, text out.
#pragma once

#include <string>

#include "logs/log_facts.h"

namespace latdoc::logs {

struct SummaryOptions {
  size_t series_rows = 12;     // rows of the stats table per engine (sampled evenly)
  size_t message_rows = 10;    // warning/error groups shown
};

std::string RenderLogSummary(const LogFacts& facts, const SummaryOptions& opts = {});

// One row for --follow: "06-25 21:51:52  engine 0  prompt 1510.3 tok/s  gen 220.1 tok/s ..."
// for point `i` of `engine`'s series.
std::string RenderStatsRow(const LogFacts& facts, const EngineFacts& engine, size_t i);

}  // namespace latdoc::logs
