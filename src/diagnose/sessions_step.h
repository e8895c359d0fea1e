// `latdoc diagnose --sessions N`: after the load layer, N multi-turn sessions
// (loadgen/sessions.h) against the target; their figures go into the document's "multi_turn"
// and their findings (prefix-cache misses, TTFT growing across turns) into the ranking.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/runner.h"
#include "loadgen/sessions.h"
#include "rules/finding.h"

namespace latdoc::diagnose {

// Runs the sessions with `bench`'s target and client. Returns the "multi_turn" block (with its
// "findings"), appending the findings to `all`; on failure, null and `why`.
nlohmann::ordered_json SessionsStep(const loadgen::BenchOptions& bench,
                                    const loadgen::MultiTurnOptions& sessions, double think_time_s,
                                    std::vector<rules::Finding>& all, std::string* why);

}  // namespace latdoc::diagnose
