// What kinds of tokens a run's streams carried (docs/workloads.md, "Reasoning and tool
// calls"): reasoning before the answer, the visible answer, tool calls. Pure: records in, the
// result's "reasoning" and "tool_calls" blocks and their terminal lines out.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "loadgen/runner.h"

namespace latdoc::loadgen {

// Adds "reasoning" (when a completed request streamed reasoning) and "tool_calls" (when one
// streamed a tool call) to `json`, and their lines to `text`; nothing when neither was seen.
// Times count from each request's scheduled time, as TTFT:
//   reasoning: requests, reasoning_tokens, answer_tokens, requests_without_answer,
//              {mean,median,p99}_ttfr_ms (first reasoning token), {mean,median,p99}_ttfo_ms
//              (first visible answer token: content or tool call)
//   tool_calls: requests, deltas, {mean,median,p99}_time_to_first_tool_call_ms
void AddStreamKinds(const BenchRun& run, nlohmann::ordered_json& json, std::string& text);

}  // namespace latdoc::loadgen
