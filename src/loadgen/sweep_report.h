// Outputs of `latdoc sweep`: the JSON document (schema "latdoc.sweep/1"), one CSV row per step,
// and the terminal text (the table of steps by load, then the knee, its explanation and the
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
// The sweep document's "workload": what every step ran, the input `latdoc calibrate` replays.
// For a dataset (`dataset` its name; empty: the random dataset) the lengths are its mean prompt
// and output lengths.
nlohmann::ordered_json SweepWorkloadJson(const RandomWorkloadOptions& w, const std::string& dataset);
std::string SweepCsv(const SweepResult& r, const SweepOptions& o);
// The header and one row of the per-step table.
std::string SweepTableHeader(const SweepOptions& o);
std::string SweepTableRow(const SweepStep& s, const SweepOptions& o);
// The whole table: the header, then one row per step in ascending load (not in the order the
// steps ran: the ladder, then refinement between its steps), the knee's row marked "<- knee".
std::string SweepTable(const SweepResult& r, const SweepOptions& o);
// One line as a step ends, for progress (`n`: how many steps have ended, this one included):
// "step 7 (refine): 23 concurrent, 46 requests, p99 E2EL 862.29 ms, 1705.7 tokens/s".
std::string SweepProgressLine(const SweepStep& s, int n, const SweepOptions& o);
// Everything after the table: knee, bends, SLO, recommendations, regimes, cost, partial.
std::string SweepSummaryText(const SweepResult& r, const SweepOptions& o);

}  // namespace latdoc::loadgen
