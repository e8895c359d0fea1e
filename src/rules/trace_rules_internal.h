// What the trace rule files (trace_rules.cc, trace_step_rules.cc, trace_roofline_rules.cc,
// trace_rank_rules.cc) share: a kernel-layer finding and an evidence line. Private to rules/.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "rules/finding.h"

namespace latdoc::rules::trace_internal {

inline Evidence Num(std::string name, std::optional<double> v, std::string unit,
                    std::string text = "") {
  return Evidence{std::move(name), v, std::move(unit), std::move(text)};
}

// A finding of the kernel layer.
inline Finding Make(std::string id, Severity sev, std::string title, std::string advice) {
  Finding f;
  f.id = std::move(id);
  f.layer = Layer::kKernel;
  f.severity = sev;
  f.title = std::move(title);
  f.advice = std::move(advice);
  return f;
}

}  // namespace latdoc::rules::trace_internal
