#include "loadgen/record.h"

#include <cctype>
#include <string>

#include <fmt/core.h>

#include <cstdint>


namespace latdoc::loadgen {

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPending: return "pending";
    case Outcome::kOk: return "ok";
    case Outcome::kConnect: return "connect";
    case Outcome::kTimeout: return "timeout";
    case Outcome::kHttpStatus: return "http_status";
    case Outcome::kStreamError: return "stream_error";
    case Outcome::kCutShort: return "cut_short";
    case Outcome::kReset: return "reset";
    case Outcome::kProtocol: return "protocol";
    case Outcome::kCancelled: return "cancelled";
    case Outcome::kInvalidOutput: return "invalid_output";
  }
  return "?";
}

bool IsInvalidOutputError(std::string_view message) {
  std::string m(message);
  for (char& c : m) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view needle : {"invalid utf-8", "failed to parse input at pos",
                                  "does not match the expected"}) {
    if (m.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string_view TokenMethodName(TokenMethod m) {
  switch (m) {
    case TokenMethod::kUsagePerChunk: return "usage_per_chunk";
    case TokenMethod::kUsageFinal: return "usage_final";
    case TokenMethod::kChunks: return "chunks";
  }
  return "?";
}

// A payload looks like (vLLM, completions):
//   {"id":"cmpl-..","object":"text_completion","created":1,"model":"m",
//    "choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null}],"usage":null}
// chat: choices[0].delta.{role,content,reasoning_content|reasoning,tool_calls}; the usage chunk
// has "choices":[] and "usage":{"prompt_tokens":P,"completion_tokens":C,...}; an error inside
// the stream is {"error":{"message":...}} (older: {"object":"error","message":...}).
void StreamAccountant::OnPayload(const ChunkInfo& c, int64_t now) {
  if (c.done) {
    done_ = true;
    return;
  }
  if (c.error) {
    error_ = true;
    if (error_message_.empty()) error_message_ = c.error_message.empty() ? "error event" : c.error_message;
    return;
  }
  if (c.usage_prompt_tokens) rec_->prompt_tokens = int(*c.usage_prompt_tokens);
  if (!c.has_choices) {
    if (c.usage_completion_tokens) final_usage_ = *c.usage_completion_tokens;
    return;
  }
  // Usage on chunks that go on (continuous_usage_stats) counts each chunk's tokens, from the
  // first such chunk; chunks before it were counted one each. Usage that first comes on the
  // chunk with the finish_reason (some servers put it there) is the final count, not an
  // increment.
  int k;
  if (c.usage_completion_tokens && (per_chunk_usage_ || !c.finished)) {
    if (!per_chunk_usage_) last_usage_ = counted_;
    per_chunk_usage_ = true;
    k = int(*c.usage_completion_tokens - last_usage_);
    last_usage_ = *c.usage_completion_tokens;
  } else {
    if (c.usage_completion_tokens) final_usage_ = *c.usage_completion_tokens;
    k = c.content ? 1 : 0;
  }
  if (k <= 0 && !c.content) return;  // a role-only or empty chunk
  if (k <= 0) k = 1;                  // content without a usage increase: count it once
  counted_ += k;
  if (rec_->first_token_ns < 0) rec_->first_token_ns = now;
  // A <think> span in the visible text is reasoning, its closing chunk included (tokens after
  // "</think>" in that same chunk count with it).
  const bool think = c.answer && c.tool_calls == 0 && (in_think_ || c.think_open);
  if (c.think_close) in_think_ = false;
  else if (c.think_open) in_think_ = true;
  if (think) {
    rec_->reasoning_tokens += k;
    if (rec_->first_reasoning_ns < 0) rec_->first_reasoning_ns = now;
  } else if (c.answer || !c.reasoning) {  // a chunk with no kind known (usage only) counts as answer
    rec_->answer_tokens += k;
    if (rec_->first_answer_ns < 0) rec_->first_answer_ns = now;
  } else {
    rec_->reasoning_tokens += k;
  }
  if (c.reasoning && rec_->first_reasoning_ns < 0) rec_->first_reasoning_ns = now;
  if (c.tool_calls > 0) {
    rec_->tool_call_deltas += c.tool_calls;
    if (rec_->first_tool_call_ns < 0) rec_->first_tool_call_ns = now;
  }
  rec_->last_token_ns = now;
  rec_->chunks.emplace_back(now, k);
}

void StreamAccountant::Finish(bool body_complete, int64_t now) {
  RequestRecord& r = *rec_;
  r.end_ns = now;
  r.method = per_chunk_usage_ ? TokenMethod::kUsagePerChunk
             : final_usage_   ? TokenMethod::kUsageFinal
                              : TokenMethod::kChunks;
  r.output_tokens = counted_;
  if (final_usage_) {
    if (*final_usage_ != counted_) r.count_mismatch = true;
    r.output_tokens = int(*final_usage_);
  }
  if (r.outcome != Outcome::kPending) return;  // already failed (HTTP status, reset, ...)
  if (error_ && IsInvalidOutputError(error_message_)) {
    r.outcome = Outcome::kInvalidOutput;
    r.error = "the model's output is not valid UTF-8 (a byte token that cuts a character, often "
              "at max_tokens on a small or random-weight model), so the server ended the stream "
              "with an error event: " + error_message_;
  } else if (error_) {
    r.outcome = Outcome::kStreamError;
    r.error = error_message_;
  } else if (!done_ || !body_complete) {
    r.outcome = Outcome::kCutShort;
    r.error = done_ ? "body cut short after [DONE]" : "stream ended without [DONE]";
  } else if (r.first_token_ns < 0) {
    r.outcome = Outcome::kStreamError;
    r.error = "stream carried no generated token";
  } else {
    r.outcome = Outcome::kOk;
  }
}

}  // namespace latdoc::loadgen
