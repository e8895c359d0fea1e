// What the parts of the simulated server share (private to src/sim): the request state, the
// log and truth-record writers, and SimServer::Impl with its members. One file per concern:
//   sim_server.cc        the server object: config checks, start/stop, the engine driver
//   sim_server_api.cc    the HTTP API: routes, request parsing and validation, fault draws
//   sim_server_stream.cc the responses: SSE chunks and plain bodies, one step's tokens at a time
//   sim_server_log.cc    the vLLM-style log: startup lines, access lines, periodic stats
//   sim_server_truth.cc  the ground truth: the --trace-requests lines, the profiler routes
// Threading: everything here runs on the server's EventLoop thread (sim/sim_server.h).
#pragma once

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/status.h"
#include "http/server.h"
#include "sim/engine.h"
#include "sim/host_counters.h"
#include "sim/metrics.h"
#include "sim/prefix_cache.h"
#include "sim/profiler_trace.h"
#include "sim/sim_server.h"
#include "sim/stall_record.h"

namespace latdoc::sim::sim_server_internal {

// The simulator's vocabulary: each generated token is one of these words, with a space before.
inline constexpr std::array<std::string_view, 64> kWords = {
    "the",    "of",     "and",   "to",     "in",      "a",      "is",     "that",
    "for",    "it",     "as",    "was",    "with",    "be",     "by",     "on",
    "not",    "he",     "this",  "are",    "or",      "his",    "from",   "at",
    "which",  "but",    "have",  "an",     "had",     "they",   "you",    "were",
    "their",  "one",    "all",   "we",     "can",     "her",    "has",    "there",
    "been",   "if",     "more",  "when",   "will",    "would",  "who",    "so",
    "model",  "token",  "cache", "batch",  "latency", "kernel", "queue",  "memory",
    "stream", "server", "graph", "tensor", "layer",   "prompt", "decode", "prefill"};

inline uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string Escape(std::string_view s);  // as a JSON string, with quotes

// vLLM's startup line (sim_server_log.cc).
std::string NonDefaultArgsMessage(const SimConfig& c);

// vLLM's log line prefix: "(APIServer pid=N) INFO MM-DD HH:MM:SS [file.py:line] message".
// Defined in sim_server_log.cc.
class VllmLog {
 public:
  Status Open(const std::string& path);
  ~VllmLog();
  void Line(std::string_view level, std::string_view where, std::string_view msg);
  // uvicorn's access line: INFO:     127.0.0.1:PORT - "POST /v1/completions HTTP/1.1" 200 OK
  void Access(std::string_view remote, std::string_view method, std::string_view target,
              int status);

 private:
  FILE* f_ = nullptr;
  bool owned_ = false;
  int pid_ = static_cast<int>(::getpid());
};

enum class Fault { kNone, kResetAfterFirst, kCut };

// One request's line of the --trace-requests file, written once the response's last byte has
// reached the kernel: the write receipts (ResponseStream::OnChunkWritten) fill `written_ns`,
// and the line goes out when the last owner (the request, or the connection's receipt
// function) lets go of it. The destructor, which writes the line, is in sim_server_truth.cc.
struct PendingTrace {
  std::shared_ptr<std::FILE> file;
  nlohmann::json fields;            // null until the request is over
  std::vector<int64_t> written_ns;  // per WriteChunk(): when its bytes reached the kernel
  size_t token_chunks = 0;          // the first token_chunks chunks carry tokens

  ~PendingTrace();
};

struct Active {
  uint64_t id = 0;
  std::string public_id;  // cmpl-... / chatcmpl-...
  std::string x_request_id;
  bool chat = false, stream = false, include_usage = false, continuous_usage = false;
  int prompt_tokens = 0, max_tokens = 0, generated = 0, preemptions = 0;
  int cached_tokens = 0;         // found in the prefix cache on admission
  std::string tool_name;         // a chat request with tools: the answer is a call of this
  std::vector<uint64_t> blocks;  // the prompt's block hashes (prefix caching on)
  uint64_t text_seed = 0;
  int64_t created_s = 0;
  int64_t received_ns = 0, arrival_ns = 0, scheduled_ns = -1, first_token_ns = -1,
          last_token_ns = -1;
  Fault fault = Fault::kNone;
  int cut_after = 0;
  std::string text;                     // non-streamed output
  std::vector<int64_t> token_ns;        // when each step's tokens went out...
  std::vector<int> token_counts;        // ...and how many there were
  std::shared_ptr<PendingTrace> trace;  // set when --trace-requests is on
  std::shared_ptr<http::ResponseStream> out;
};

}  // namespace latdoc::sim::sim_server_internal

namespace latdoc::sim {

struct SimServer::Impl {
  using Active = sim_server_internal::Active;
  using Fault = sim_server_internal::Fault;
  using json = nlohmann::json;
  // Route's reply: sends (status, content type, body) and returns the status.
  using SendFn = std::function<int(int, std::string_view, std::string_view)>;

  Impl(http::EventLoop& l, SimConfig c);

  // --- HTTP (sim_server_api.cc) ---------------------------------------------------------------

  void Handle(const http::Request& req, std::shared_ptr<http::ResponseStream> out);
  // Returns the status sent (or that will be sent), 0 when the connection was reset.
  int Route(const http::Request& req, const std::shared_ptr<http::ResponseStream>& out);
  std::string ModelsJson() const;
  int SendError(const std::shared_ptr<http::ResponseStream>& out, int code, std::string_view type,
                std::string_view message);
  // Reads an optional integer field; a present value of another type is an error.
  static bool OptInt(const json& j, const char* key, std::optional<int64_t>* v, std::string* err);
  static bool OptBool(const json& j, const char* key, bool* v, std::string* err);
  // Counts prompt tokens: text by CountPromptTokens, token ids one each.
  static bool PromptTokens(const json& prompt, int* n, std::string* err);
  static bool MessageTokens(const json& messages, int* n, std::string* err);
  // The block hashes of a request's prompt (sim/prefix_cache.h): its words or token ids, a chat
  // request's message contents in order. Called on a body that PromptTokens or MessageTokens
  // accepted.
  std::vector<uint64_t> PromptBlocks(const json& body, bool chat) const;
  int Generate(const http::Request& req, const std::shared_ptr<http::ResponseStream>& out,
               bool chat);
  // Generate's steps. ReadParams checks the body and fills `a` (its prompt, max_tokens and
  // stream options): 0 when the request is accepted, else the error status sent.
  int ReadParams(const json& body, bool chat, const std::shared_ptr<http::ResponseStream>& out,
                 Active* a, bool* ignore_eos);
  // The request's faults: the status sent (0 for a reset) when the request ends here.
  std::optional<int> DrawFaults(const std::shared_ptr<http::ResponseStream>& out, Active* a,
                                bool* slow);
  // The request's identity, text seed, prompt blocks, tool and truth record.
  void Identify(const http::Request& req, const json& body, bool chat,
                const std::shared_ptr<http::ResponseStream>& out, Active* a);
  // The generated token at which an EOS ends the request, 0 for none.
  int StopAt(const Active* a, bool ignore_eos) const;
  // The request reaches the engine (vLLM's "arrival"): headers go out, the engine queues it.
  void Admit(Active& a, int stop_at);
  void OnClientGone(uint64_t id);

  // --- engine driver (sim_server.cc) -------------------------------------------------------

  int64_t Scaled(double model_ns) const { return std::llround(model_ns * cfg.time_scale); }
  int64_t ModelNs(int64_t wall_ns) const {
    return std::llround(double(wall_ns - start_ns) / cfg.time_scale);
  }
  void Kick();
  void StartStep(int64_t start_ns);
  void EndStep();

  // --- responses (sim_server_stream.cc) ------------------------------------------------------

  // Appends the `count` words from token `from` on, as a JSON string (quotes included). The
  // vocabulary needs no escaping.
  void AppendWords(std::string& out, const Active& a, int from, int count) const;
  static void AppendUsage(std::string& out, int prompt_tokens, int completion_tokens);
  static std::string UsageJson(const Active& a);
  void AppendChunkHead(std::string& out, const Active& a) const;
  // Closes an event whose usage counts `generated` completion tokens.
  void AppendUsageTail(std::string& out, const Active& a, int generated) const;
  // Sends the tokens of one step. Returns false when the request is over (finished or cut).
  bool Emit(Active& a, const TokenEvent& ev, int64_t now);
  // Emit's steps: the step's tokens in the metrics, the stats interval and the truth record;
  // the step's SSE events, written in one chunk; one chat event (reasoning, then the answer).
  void CountStep(Active& a, const TokenEvent& ev, int64_t now);
  void StreamStep(Active& a, const TokenEvent& ev, int from, const char* finish);
  void AppendChatEvent(std::string& chunk, const Active& a, int first, int count, bool last,
                       const char* finish);
  bool Drop(Active& a, const char* why);
  void Finish(Active& a, FinishReason reason, int64_t now);

  // --- ground truth (sim_server_truth.cc) ----------------------------------------------------

  // Opens the --trace-requests file, if one is asked for.
  Status OpenTrace();
  // A streamed request's write receipts go into its truth record.
  void RecordWrites(Active& a);
  void Trace(Active& a, std::string_view status);
  // vLLM's /start_profile and /stop_profile (sim/profiler_trace.h): 200 once done; the trace is
  // written when the profiler stops.
  int Profile(bool start, const SendFn& send);

  // --- log (sim_server_log.cc) ---------------------------------------------------------------

  // The lines vLLM writes once it listens.
  void LogServing(uint16_t port);
  void ArmStats();
  void LogStats();

  http::EventLoop& loop;
  SimConfig cfg;
  Engine engine;
  PrefixCache prefix_cache{cfg.engine.block_size, Engine::TotalBlocks(cfg.engine)};
  SimMetrics metrics;
  std::mt19937_64 rng;  // per-request draws (faults), in arrival order
  // Network jitter draws per write, as many as the responses happen to need: from `rng` they
  // would shift which requests fault for a given seed.
  std::mt19937_64 jitter_rng;
  http::EventLoop::Timer step_timer, stats_timer;
  std::string model_json;
  std::unique_ptr<http::Server> server;
  std::unordered_map<uint64_t, std::unique_ptr<Active>> active;
  sim_server_internal::VllmLog log;
  StallRecorder stalls;
  HostCounters host_counters;        // --sim-host-counters-dir
  std::shared_ptr<std::FILE> trace;  // --trace-requests
  std::string chunk_buf;             // scratch for formatting SSE chunks
  uint64_t next_id = 1;
  int64_t start_ns = MonoNowNs();
  int64_t start_wall_s = ::time(nullptr);
  bool stepping = false;
  int64_t step_start_ns = 0, step_due_ns = 0;
  StepOutput step_out;
  StepPlan step_plan;                       // the step in progress, for the profiler
  StepProfiler profiler{cfg.profiler_dir};  // /start_profile, /stop_profile (profiler_trace.h)
  uint64_t interval_prompt_tokens = 0, interval_generation_tokens = 0, interval_preemptions = 0;
  uint64_t interval_prefix_queries = 0, interval_prefix_hits = 0;
  int64_t last_stats_ns = MonoNowNs();
  double prev_prompt_tput = 0, prev_gen_tput = 0;
};

}  // namespace latdoc::sim
