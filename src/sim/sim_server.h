// `latdoc sim`: an OpenAI-compatible simulated inference server that behaves like vLLM.
//
// It serves /v1/completions and /v1/chat/completions (SSE and plain), /v1/models, /health and
// /metrics with vLLM's wire shapes, runs requests through the Engine on a real-time step clock,
// writes vLLM-style log lines, and can inject the pathologies latdoc's checks hunt for.
//
// Time: every duration of the model (step times, stalls, network delay, slow first byte) is
// multiplied by `time_scale` on the wall clock, so tests run fast; everything the server
// measures and reports (/metrics, logs, the request trace) is wall-clock time as it happened.
//
// Threading: one EventLoop thread runs the HTTP server, the engine and the logs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "http/event_loop.h"
#include "sim/engine.h"

namespace latdoc::sim {

struct FaultRates {
  double http_429 = 0, http_500 = 0, http_503 = 0;
  double reset_before_first_token = 0;
  double reset_after_first_token = 0;
  // After half its tokens a stream ends without [DONE]; a plain response is never sent (the
  // connection closes).
  double cut_stream = 0;
  double slow_first_byte = 0;     // the front end holds the request for slow_first_byte_ms
  double slow_first_byte_ms = 1000;
};

struct SimConfig {
  EngineConfig engine;
  std::string served_model_name = "latdoc-sim/llama-3-8b";
  std::string api_key;  // vLLM's --api-key: /v1 requests without "Bearer KEY" get 401
  std::string host = "127.0.0.1";
  uint16_t port = 8000;
  uint64_t seed = 0;
  double time_scale = 1.0;
  // Tokens generated before an EOS when ignore_eos is off: geometric with this mean, fixed per
  // prompt and seed. 0: never stop early.
  double mean_output_tokens = 256;
  double network_delay_ms = 0;    // added to every write...
  double network_jitter_ms = 0;   // ...plus uniform [0, jitter)
  // A step's tokens go out as one SSE event each, all in one write, as TGI and llama.cpp stream
  // speculative tokens. Off: one event carries the step's tokens, as vLLM does.
  bool event_per_token = false;
  // vLLM's --enable-prefix-caching (sim/prefix_cache.h): a prompt's leading blocks seen before
  // skip prefill, counted in vllm:prefix_cache_hits. Off by default in the simulator, so that
  // a repeated prompt costs its full prefill unless a test asks for the cache.
  bool enable_prefix_caching = false;
  // Chat streams: the first reasoning_tokens generated tokens go out as
  // delta.reasoning_content (a reasoning model, vLLM's --reasoning-parser), the rest as the
  // answer. A chat request with a non-empty "tools" list gets its answer as one tool call
  // (delta.tool_calls: the first chunk names the first tool's function, the others stream its
  // arguments) and finish_reason "tool_calls", as vLLM's tool parsers stream them.
  int reasoning_tokens = 0;
  // The reasoning goes out in delta.content inside <think>...</think> (a server without a
  // reasoning parser) instead of delta.reasoning_content.
  bool think_tags = false;
  FaultRates faults;
  // Logs (vLLM's format).
  std::string log_file;           // empty: standard error
  double log_stats_interval_s = 10;
  bool disable_log_stats = false;
  bool enable_log_requests = false;
  bool disable_uvicorn_access_log = false;
  std::string trace_requests_file;  // one JSON line per request with its true timings
  std::string stall_record_file;    // the steps slowed on purpose, and why (sim/stall_record.h)
  // A /proc tree of swap counters that swap stalls grow (sim/host_counters.h); empty: none.
  std::string host_counters_dir;
  // vLLM's VLLM_TORCH_PROFILER_DIR: enables POST /start_profile and /stop_profile, which write a
  // Kineto trace of the engine's steps here (sim/profiler_trace.h); empty: the routes are 404.
  std::string profiler_dir;
  size_t max_body_bytes = 8 << 20;
  double keep_alive_timeout_s = 5;
};

// Validates a config the way vLLM does at start-up (e.g. KV cache too small for max_model_len).
Status ValidateSimConfig(const SimConfig& config);

class SimServer {
 public:
  SimServer(http::EventLoop& loop, SimConfig config);
  ~SimServer();
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  // Binds, opens the logs and starts the stats timer.
  Status Start();
  uint16_t port() const;
  // Stops accepting, aborts requests in flight, flushes the logs.
  void Stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The number of prompt tokens the simulator counts for `text` (no tokenizer): one token per
// whitespace-separated word, at least one.
int CountPromptTokens(std::string_view text);

}  // namespace latdoc::sim
