// Renders a list of findings for the terminal and as Markdown. Pure: strings in, string out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rules/finding.h"

namespace latdoc::report {

struct TextOptions {
  bool color = false;        // ANSI colours (the caller decides: TTY and no NO_COLOR)
  bool show_ok = false;      // list `ok` and `skip` findings too
};

// "FAIL  system  gpu.pcie_link_degraded  PCIe link at Gen4 x8 ..." plus evidence and advice.
std::string RenderFindingsText(const std::vector<rules::Finding>& findings,
                               const TextOptions& opts);
std::string RenderFindingsMarkdown(const std::vector<rules::Finding>& findings);

// Text from outside (kernel, model and file names, server messages, log lines) in a Markdown
// table cell: shown literally. HTML is escaped (`<img onerror=...>` stays text), as are the
// characters that start emphasis (*), code, links or a new cell; a line break becomes <br>.
std::string MarkdownText(std::string_view s);
// Advice as the rules write it: `code` spans kept as code (their text literal but for '|'), the
// rest as MarkdownText. A backtick without its pair is shown as a backtick.
std::string MarkdownAdvice(std::string_view s);
// The same text as a code span: a fence longer than any run of backticks inside it, '|'
// escaped (tables split cells before inline parsing), line breaks as spaces.
std::string MarkdownCode(std::string_view s);

// True when standard output is a terminal, NO_COLOR is unset or empty and TERM is not "dumb".
bool StdoutWantsColor();

}  // namespace latdoc::report
