// The simulated server's responses (sim/sim_server.h): a step's tokens as OpenAI SSE chunks in
// vLLM's wire shape (completions, chat, reasoning, tool calls), or one plain body at the end.
#include <algorithm>

#include <fmt/core.h>

#include "base/strings.h"
#include "sim/sim_server_internal.h"

namespace latdoc::sim {

using sim_server_internal::Active;
using sim_server_internal::Escape;
using sim_server_internal::Fault;
using sim_server_internal::kWords;
using sim_server_internal::Mix;

// Appends the `count` words from token `from` on, as a JSON string (quotes included). The
// vocabulary needs no escaping.
void SimServer::Impl::AppendWords(std::string& out, const Active& a, int from, int count) const {
  out += '"';
  for (int i = from; i < from + count; ++i) {
    out += ' ';
    out += kWords[Mix(a.text_seed + uint64_t(i)) % kWords.size()];
  }
  out += '"';
}

void SimServer::Impl::AppendUsage(std::string& out, int prompt_tokens, int completion_tokens) {
  out += R"({"prompt_tokens":)";
  AppendInt(out, prompt_tokens);
  out += R"(,"total_tokens":)";
  AppendInt(out, prompt_tokens + completion_tokens);
  out += R"(,"completion_tokens":)";
  AppendInt(out, completion_tokens);
  out += '}';
}
std::string SimServer::Impl::UsageJson(const Active& a) {
  std::string s;
  AppendUsage(s, a.prompt_tokens, a.generated);
  return s;
}

void SimServer::Impl::AppendChunkHead(std::string& out, const Active& a) const {
  out += R"(data: {"id":")";
  out += a.public_id;
  out += R"(","object":")";
  out += a.chat ? "chat.completion.chunk" : "text_completion";
  out += R"(","created":)";
  AppendInt(out, a.created_s);
  out += R"(,"model":)";
  out += model_json;
  out += ',';
}

// Closes an event whose usage counts `generated` completion tokens.
void SimServer::Impl::AppendUsageTail(std::string& out, const Active& a, int generated) const {
  out += R"(,"stop_reason":null}],"usage":)";
  if (a.continuous_usage) {
    AppendUsage(out, a.prompt_tokens, generated);
  } else {
    out += "null";
  }
  out += "}\n\n";
}

// Sends the tokens of one step. Returns false when the request is over (finished or cut).
bool SimServer::Impl::Emit(Active& a, const TokenEvent& ev, int64_t now) {
  int from = a.generated;
  a.generated = ev.total_tokens;
  CountStep(a, ev, now);
  const char* finish = ev.finish == FinishReason::kStop     ? "\"stop\""
                       : ev.finish == FinishReason::kLength ? "\"length\""
                                                            : "null";
  bool cut = a.fault == Fault::kCut && a.generated >= a.cut_after;
  if (cut) finish = "null";
  if (!a.stream) {
    for (int i = from; i < from + ev.new_tokens; ++i) {
      a.text += ' ';
      a.text += kWords[Mix(a.text_seed + uint64_t(i)) % kWords.size()];
    }
  } else {
    StreamStep(a, ev, from, finish);
  }
  if (a.fault == Fault::kResetAfterFirst) {
    a.out->Abort(/*reset=*/true);
    return Drop(a, "reset_after_first_token");
  }
  if (cut) {
    if (a.stream) {
      a.out->EndChunked();  // a clean HTTP end, but no finish_reason and no [DONE]
    } else {
      a.out->Abort(/*reset=*/false);  // no headers went out: the connection closes unanswered
    }
    return Drop(a, "cut_stream");
  }
  if (ev.finish == FinishReason::kNone) return true;
  Finish(a, ev.finish, now);
  return false;
}

// The step's tokens in the metrics, the stats interval and (with --trace-requests) the request's
// truth record.
void SimServer::Impl::CountStep(Active& a, const TokenEvent& ev, int64_t now) {
  metrics.generation_tokens += ev.new_tokens;
  interval_generation_tokens += ev.new_tokens;
  if (ev.first || a.first_token_ns < 0) {
    a.first_token_ns = now;
    metrics.ttft.Observe(double(now - a.arrival_ns) / 1e9);
    metrics.prompt_tokens += a.prompt_tokens;
    metrics.prefix_cache_queries += a.prompt_tokens;
    metrics.prefix_cache_hits += uint64_t(a.cached_tokens);
    interval_prefix_queries += uint64_t(a.prompt_tokens);
    interval_prefix_hits += uint64_t(a.cached_tokens);
    if (cfg.enable_prefix_caching) prefix_cache.Insert(a.blocks);  // its prefill is done
    interval_prompt_tokens += a.prompt_tokens;
  } else {
    metrics.itl.Observe(double(now - a.last_token_ns) / 1e9);
  }
  a.last_token_ns = now;
  if (!cfg.trace_requests_file.empty()) {
    a.token_ns.push_back(now);
    a.token_counts.push_back(ev.new_tokens);
  }
}

// The step's SSE events, all in one write.
void SimServer::Impl::StreamStep(Active& a, const TokenEvent& ev, int from, const char* finish) {
  // One reused buffer: a step of thousands of streams formats without allocating.
  std::string& chunk = chunk_buf;
  chunk.clear();
  if (a.chat && ev.first) {
    AppendChunkHead(chunk, a);
    chunk +=
        R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":)";
    if (a.continuous_usage) {
      AppendUsage(chunk, a.prompt_tokens, 0);  // as vLLM: the role precedes every token
    } else {
      chunk += "null";
    }
    chunk += "}\n\n";
  }
  // One event for the step, or one per token; either way one write.
  int events = cfg.event_per_token ? ev.new_tokens : 1;
  int count = cfg.event_per_token ? 1 : ev.new_tokens;
  for (int e = 0; e < events; ++e) {
    int first = from + e * count;
    bool last = e + 1 == events;
    if (!a.chat) {
      AppendChunkHead(chunk, a);
      chunk += R"("choices":[{"index":0,"text":)";
      AppendWords(chunk, a, first, count);
      chunk += R"(,"logprobs":null,"finish_reason":)";
      chunk += last ? finish : "null";
      AppendUsageTail(chunk, a, first + count);
      continue;
    }
    AppendChatEvent(chunk, a, first, count, last, finish);
  }
  a.out->WriteChunk(chunk);
}

// One chat event: the tokens from `first` on, `count` of them; `last`: the step's last event.
void SimServer::Impl::AppendChatEvent(std::string& chunk, const Active& a, int first, int count,
                                      bool last, const char* finish) {
  // Chat: reasoning tokens, then the answer (content or a tool call); an event that
  // would straddle the two goes out as two.
  const int split = std::clamp(cfg.reasoning_tokens - first, 0, count);
  for (int part = 0; part < 2; ++part) {
    const int p0 = part == 0 ? first : first + split;
    const int n = part == 0 ? split : count - split;
    if (n == 0) continue;
    const bool part_last = last && (part == 1 || split == count);
    AppendChunkHead(chunk, a);
    if (part == 0 && cfg.think_tags) {
      // The span's words between the tags: "<think> w1 w2" ... "w5 w6 </think>".
      chunk += R"("choices":[{"index":0,"delta":{"content":")";
      if (p0 == 0) chunk += "<think>";
      std::string words;
      AppendWords(words, a, p0, n);
      chunk += std::string_view(words).substr(1, words.size() - 2);
      if (p0 + n >= cfg.reasoning_tokens) chunk += " </think>";
      chunk += '"';
    } else if (part == 0) {
      chunk += R"("choices":[{"index":0,"delta":{"reasoning_content":)";
      AppendWords(chunk, a, p0, n);
    } else if (!a.tool_name.empty()) {
      chunk += R"("choices":[{"index":0,"delta":{"tool_calls":[{"index":0,)";
      if (p0 == std::max(0, cfg.reasoning_tokens)) {  // the call's first delta names it
        chunk += R"("id":"call_)";
        chunk += a.public_id.substr(a.public_id.size() - 16);
        chunk += R"(","type":"function","function":{"name":)";
        chunk += Escape(a.tool_name);
        chunk += ',';
      } else {
        chunk += R"("function":{)";
      }
      chunk += R"("arguments":)";
      AppendWords(chunk, a, p0, n);
      chunk += "}}]";
    } else {
      chunk += R"("choices":[{"index":0,"delta":{"content":)";
      AppendWords(chunk, a, p0, n);
    }
    chunk += '}';  // closes "delta"
    chunk += R"(,"logprobs":null,"finish_reason":)";
    const bool tool_finish =
        part_last && !a.tool_name.empty() && part == 1 && std::string_view(finish) != "null";
    chunk += !part_last ? "null" : tool_finish ? "\"tool_calls\"" : finish;
    AppendUsageTail(chunk, a, p0 + n);
  }
}

bool SimServer::Impl::Drop(Active& a, const char* why) {
  engine.Abort(a.id);
  ++metrics.success_abort;
  Trace(a, why);
  return false;
}

void SimServer::Impl::Finish(Active& a, FinishReason reason, int64_t now) {
  (reason == FinishReason::kStop ? metrics.success_stop : metrics.success_length)++;
  double e2e = double(now - a.arrival_ns) / 1e9;
  metrics.e2e.Observe(e2e);
  if (a.scheduled_ns >= 0) {
    metrics.queue.Observe(double(a.scheduled_ns - a.arrival_ns) / 1e9);
    metrics.prefill.Observe(double(a.first_token_ns - a.scheduled_ns) / 1e9);
    metrics.inference.Observe(double(a.last_token_ns - a.scheduled_ns) / 1e9);
  }
  double decode_s = double(a.last_token_ns - a.first_token_ns) / 1e9;
  metrics.decode.Observe(decode_s);
  metrics.tpot_request.Observe(a.generated > 1 ? decode_s / (a.generated - 1) : 0.0);
  metrics.request_prompt_tokens.Observe(a.prompt_tokens);
  metrics.request_generation_tokens.Observe(a.generated);
  const char* fin = reason == FinishReason::kStop ? "stop" : "length";
  if (a.stream) {
    std::string& tail = chunk_buf;
    tail.clear();
    if (a.include_usage) {
      AppendChunkHead(tail, a);
      tail += R"("choices":[],"usage":)";
      AppendUsage(tail, a.prompt_tokens, a.generated);
      tail += "}\n\n";
    }
    tail += "data: [DONE]\n\n";
    a.out->WriteChunk(tail);
    a.out->EndChunked();
  } else {
    std::string body;
    if (a.chat) {
      body = fmt::format(
          R"({{"id":"{}","object":"chat.completion","created":{},"model":{},"choices":[{{"index":0,"message":{{"role":"assistant","content":{},"tool_calls":[]}},"logprobs":null,"finish_reason":"{}","stop_reason":null}}],"usage":{},"prompt_logprobs":null}})",
          a.public_id, a.created_s, model_json, Escape(a.text), fin, UsageJson(a));
    } else {
      body = fmt::format(
          R"({{"id":"{}","object":"text_completion","created":{},"model":{},"choices":[{{"index":0,"text":{},"logprobs":null,"finish_reason":"{}","stop_reason":null,"prompt_logprobs":null}}],"usage":{}}})",
          a.public_id, a.created_s, model_json, Escape(a.text), fin, UsageJson(a));
    }
    a.out->Send(200, "application/json", body);
  }
  Trace(a, fin);
}

}  // namespace latdoc::sim
