// The report of `latdoc diagnose` as Markdown: the ranked findings checklist and the numbers
// (TTFT decomposition, load run, sweep steps, GPU time, kernel hot list, idle gaps, server
// series peaks) as tables. The same Diagnosis as RenderHtmlReport (report/html_report.h);
// absent data renders as a "not measured" line. Pure; thread-safe.
#pragma once

#include <string>

#include "report/diagnosis.h"

namespace latdoc::report {

std::string RenderMarkdownReport(const Diagnosis& diagnosis);

}  // namespace latdoc::report
