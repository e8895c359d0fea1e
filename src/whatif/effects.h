// Predicted effects: the "predicted effect" line of each config finding whose advice changes a
// flag the engine model has (--max-num-seqs, --max-num-batched-tokens, --gpu-memory-utilization,
// chunked prefill), from a calibration on the diagnosis's own sweep (calibration.h), at the
// diagnosis's target load. Used by `latdoc diagnose --sweep`. Not thread-safe.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "rules/finding.h"

namespace latdoc::whatif {

// Adds to each such finding an Evidence named "predicted_effect" whose text is either
// "at 64 concurrent: p99 TTFT 812 -> 305 ms [270, 350], output 2400 -> 2310 tokens/s
// [2200, 2420]" or "not predictable: REASON". Findings without such advice are left alone.
// `sweep` is a latdoc.sweep/1 document; `target_concurrency` the load the prediction is for,
// `requests` how many requests the prediction runs (0: whatif's default), so that "before" is
// comparable with a load step of that many.
void AddPredictedEffects(const nlohmann::json& sweep, int target_concurrency,
                         std::vector<rules::Finding>& findings, int requests = 0);

}  // namespace latdoc::whatif
