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

// Adds "spec_decode" when the streams carried more than one token per decode chunk on average
// or the server's /metrics counted speculative drafts:
//   stream_decode_chunks, stream_tokens_per_chunk (tokens per chunk after each request's first:
//   the stream's mean acceptance length), metrics_drafts, metrics_draft_tokens,
//   metrics_accepted_tokens (deltas over the run), metrics_mean_acceptance_length (1 +
//   accepted / drafts, as vLLM logs it), metrics_acceptance_rate (accepted / draft tokens).
// ITL stays per token: a chunk of k tokens gives k equal gaps (loadgen/record.h).
void AddSpecDecode(const BenchRun& run, nlohmann::ordered_json& json, std::string& text);

}  // namespace latdoc::loadgen
