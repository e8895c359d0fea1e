// One payload ("data: ...") of an OpenAI-compatible completions or chat stream, read for what a
// load test and a probe need: content or not, reasoning, tool calls, finish, usage, errors.
// Shared by loadgen (every request of a load) and net (the TTFT probes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

namespace latdoc::http {

// What one SSE data payload of an OpenAI-compatible stream says.
struct ChunkInfo {
  bool done = false;             // "[DONE]"
  bool json = false;             // parsed as a JSON object
  bool has_choices = false;
  bool content = false;          // non-empty text, delta.content, reasoning or tool_calls
  bool reasoning = false;        // non-empty delta.reasoning_content or delta.reasoning
  bool answer = false;           // non-empty text or delta.content, or tool_calls
  int tool_calls = 0;            // entries of delta.tool_calls
  // The visible text opens or closes a <think> span (a model whose reasoning is not parsed
  // out by the server): the span's chunks count as reasoning.
  bool think_open = false, think_close = false;
  bool finished = false;         // a choice has a finish_reason
  std::optional<int64_t> usage_completion_tokens;
  std::optional<int64_t> usage_prompt_tokens;
  bool error = false;             // an error event, or a payload that is not a JSON object
  std::string error_message;
};

// Parses stream payloads with simdjson; one per worker thread, reused (no allocation after
// warm-up).
class ChunkParser {
 public:
  // A one-pass scan for the common chunk; anything it does not handle exactly goes to
  // ParseWithDom. Both give the same ChunkInfo.
  ChunkInfo Parse(std::string_view data);
  // simdjson's DOM parse: the reference (and the path for errors and unusual chunks).
  ChunkInfo ParseWithDom(std::string_view data);

 private:
  simdjson::dom::parser parser_;
};

}  // namespace latdoc::http
