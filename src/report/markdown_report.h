// The report of `latdoc diagnose` as Markdown: the ranked findings checklist and the numbers
// (TTFT decomposition, load run, sweep steps, GPU time, kernel hot list, idle gaps, server
// series peaks) as tables. Same input as RenderHtmlReport (schema in report/html_report.h);
// absent data renders as a "not measured" line. Pure; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace latdoc::report {

std::string RenderMarkdownReport(const nlohmann::ordered_json& diagnosis);

}  // namespace latdoc::report
