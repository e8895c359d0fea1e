// Renders a list of findings for the terminal and as Markdown. Pure: strings in, string out.
#pragma once

#include <string>
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

// True when standard output is a terminal and NO_COLOR is unset.
bool StdoutWantsColor();

}  // namespace latdoc::report
