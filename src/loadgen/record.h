// One request of a load test, from scheduling to its end, and the token accounting of its
// stream (DESIGN.md, "Token timing" and "Nothing lost").
//
// TTFT is stamped at the first chunk that carries generated content (a role-only chat chunk
// does not count). A chunk that carries k tokens counts k tokens: its gap since the previous
// content chunk is split into k equal inter-token latencies. Token counts come from the
// server's usage (per chunk with continuous_usage_stats, else the final usage chunk), with
// content-chunk counting as the fallback; the record says which method was used and whether
// the final usage disagreed with the chunks.
//
// Every request sent ends in exactly one outcome: ok, or failed with a reason. A stream that
// ends without [DONE], or breaks after some tokens, is a failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/openai_chunk.h"

namespace latdoc::loadgen {

// kInvalidOutput: the server sent an error event because the model's output was not valid
// UTF-8 (IsInvalidOutputError), a fault of the model's tokens, not of the serving path.
enum class Outcome { kPending, kOk, kConnect, kTimeout, kHttpStatus, kStreamError, kCutShort,
                     kReset, kProtocol, kCancelled, kInvalidOutput };
std::string_view OutcomeName(Outcome o);

// True when an error event's message says the server could not encode or parse the model's
// output as text: llama.cpp's "[json.exception.type_error.316] invalid UTF-8 byte at index N:
// 0xXX" (builds before ggml-org/llama.cpp#9210 replaced such bytes), its chat parser's "Failed
// to parse input at pos N" and "does not match the expected ... format" (ggml-org/llama.cpp
// #24327).
bool IsInvalidOutputError(std::string_view message);

enum class TokenMethod { kUsagePerChunk, kUsageFinal, kChunks };
std::string_view TokenMethodName(TokenMethod m);

struct RequestRecord {
  uint64_t index = 0;
  bool warmup = false;
  int64_t scheduled_ns = 0;      // when it was due (open loop) or dispatched (closed loop)
  int64_t sent_ns = -1;          // handed to the client; -1: never sent (cancelled in the queue)
  int64_t connect_ns = -1, tls_ns = -1, headers_ns = -1;
  int64_t first_token_ns = -1, last_token_ns = -1, end_ns = -1;
  bool reused_connection = false;
  int http_status = 0;
  Outcome outcome = Outcome::kPending;
  std::string error;
  int prompt_tokens = 0;         // from usage when the server gave it, else the workload's
  int output_tokens = 0;
  int requested_output_tokens = 0;
  TokenMethod method = TokenMethod::kChunks;
  bool count_mismatch = false;   // final usage disagreed with the per-chunk count
  std::vector<std::pair<int64_t, int>> chunks;  // content chunks: arrival time, tokens
  int turn = -1;                 // a session's turn, from 0 (loadgen/sessions.h); -1: none
  // Reasoning and tool calls (chat streams; docs/workloads.md). first_token_ns (TTFT) is the
  // first generated token of any kind; first_answer_ns the first visible one (delta.content,
  // text or a tool call), first_reasoning_ns the first reasoning_content/reasoning delta.
  // Tokens of a chunk count as reasoning when it carries reasoning and nothing visible.
  int64_t first_answer_ns = -1, first_reasoning_ns = -1, first_tool_call_ns = -1;
  int reasoning_tokens = 0, answer_tokens = 0;  // as counted (chunks or usage increments)
  int tool_call_deltas = 0;      // tool_calls entries streamed
};

// The chunk parser is http's (http/openai_chunk.h): net's probes read the same streams.
using http::ChunkInfo;
using http::ChunkParser;

// Builds a RequestRecord's token timeline from the stream's payloads.
class StreamAccountant {
 public:
  explicit StreamAccountant(RequestRecord* rec) : rec_(rec) {}
  // Applies one payload that arrived at `now_ns`.
  void OnPayload(const ChunkInfo& c, int64_t now_ns);
  // Settles the outcome once the HTTP exchange ended. `http_ok`: status 200, body complete.
  void Finish(bool body_complete, int64_t now_ns);

  bool saw_done() const { return done_; }

 private:
  RequestRecord* rec_;
  int64_t last_usage_ = 0;
  bool per_chunk_usage_ = false;
  std::optional<int64_t> final_usage_;
  int counted_ = 0;
  bool done_ = false;
  bool in_think_ = false;        // inside a <think> span of the visible text
  bool error_ = false;
  std::string error_message_;
};

}  // namespace latdoc::loadgen
