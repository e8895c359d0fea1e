// Outputs of `latdoc sweep`: the JSON document (schema "latdoc.sweep/1"), one CSV row per step,
// and the terminal text (one table row per step, then the knee, its explanation and the
// recommendations). Pure: a SweepResult in, text out. Values not measured render "n/a" (text),
// null (JSON) or an empty field (CSV), never 0.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "loadgen/sweep.h"

namespace latdoc::loadgen {

struct SweepContext {
  std::string url;
  std::string date;  // a label only
};

nlohmann::ordered_json SweepJson(const SweepResult& r, const SweepOptions& o,
                                 const SweepContext& ctx);
std::string SweepCsv(const SweepResult& r, const SweepOptions& o);
// The header and one row of the per-step table (printed as each step ends).
std::string SweepTableHeader(const SweepOptions& o);
std::string SweepTableRow(const SweepStep& s, const SweepOptions& o);
// Everything after the table: knee, bends, SLO, recommendations, regimes, cost, partial.
std::string SweepSummaryText(const SweepResult& r, const SweepOptions& o);

}  // namespace latdoc::loadgen
