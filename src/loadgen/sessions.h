// Multi-turn sessions for `latdoc bench --dataset-name multi-turn` (docs/workloads.md).
//
// A session is a conversation: each turn sends the whole history so far (a system prompt, the
// earlier user messages and answers, the new user message) and asks for an answer. Synthetic
// sessions share one system prompt across sessions (--prefix-len words) and add --input-len
// words of user message and --output-len tokens of answer per turn; a session file gives them
// as JSONL, one conversation a line:
//   {"session_id": "a", "system": "...", "turns": [{"prompt": "...", "output_len": 64}, ...]}
//
// The client keeps no answer text: the history resends, for each earlier answer, a stand-in of
// as many words as were asked for. So a server's prefix cache can hold every earlier prompt of
// the session, never the earlier answers as the model wrote them (vLLM caches generated blocks
// too; those cannot match here).
//
// The run goes turn by turn (RunSessions): turn k of every session is sent together, closed
// loop at one stream per session; a session's next turn starts once every session's turn k has
// ended and the think time has passed. Sessions therefore move in step; their requests are
// otherwise those of independent conversations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "loadgen/runner.h"
#include "loadgen/workload.h"

namespace latdoc::loadgen {

struct MultiTurnOptions {
  int num_sessions = 8;
  int turns = 4;
  int system_len = 0;      // words of the system prompt every session shares
  int input_len = 128;     // words of each user message
  int output_len = 128;    // tokens of each answer
  uint64_t seed = 0;
};

Status ValidateMultiTurnOptions(const MultiTurnOptions& o);

struct SessionWorkload {
  // sessions[s][t]: turn t of session s. Each Prompt has `messages` (the history), `text` (the
  // same contents joined by spaces, for the completions endpoint), `turn` and `reused_tokens`.
  std::vector<std::vector<Prompt>> sessions;
  uint64_t bad_lines = 0;
  std::vector<std::string> bad_line_messages;  // the first few, "file:line: why"
  size_t max_turns() const;
};

SessionWorkload SyntheticSessions(const MultiTurnOptions& o);

// Reads a session file (above). Bad lines are counted and skipped; a file with no usable
// session is an error (kInvalidArgument, naming the file).
StatusOr<SessionWorkload> LoadSessionFile(const std::string& path, int default_output_len);

// Runs the sessions turn by turn (above) with `base`'s target, client and summary options;
// `base.prompts`, the load shape and the warm-up are replaced. The records carry their turn.
// The result is one run: records of every turn in send order, the measured phase from the
// first turn's start to the last's end (think times included), /metrics before the first turn
// and after the last. Errors as RunBench's.
StatusOr<BenchRun> RunSessions(const BenchOptions& base, const SessionWorkload& w,
                               double think_time_s, BenchRun* unreachable_run = nullptr);

// Per-turn figures of a session run (the result's "multi_turn.per_turn").
struct TurnStats {
  int turn = 0;                  // from 1
  uint64_t requests = 0, completed = 0;
  double mean_prompt_tokens = 0;
  double mean_reused_tokens = 0; // the workload's: tokens resent from the session's last turn
  double mean_ttft_ms = 0, p50_ttft_ms = 0, p99_ttft_ms = 0;
};
// `w` must be the workload the run ran (reused tokens come from it).
std::vector<TurnStats> ComputeTurnStats(const BenchRun& run, const SessionWorkload& w);

// The facts a session run gives rules/workload_rules.h (MultiTurnFindings): per turn, and the
// server's prefix cache and its queue and prefill over the run.
struct TurnFacts {
  int turn = 0;                     // from 1
  double mean_ttft_ms = 0;
  double mean_prompt_tokens = 0;
  double mean_reused_tokens = 0;    // resent from the session's earlier request (the workload's)
  unsigned long long completed = 0;
};

struct MultiTurnFacts {
  std::vector<TurnFacts> turns;
  // The server's prefix cache over the run, in tokens (vLLM's vllm:prefix_cache_queries and
  // vllm:prefix_cache_hits deltas); nullopt: /metrics did not say.
  std::optional<double> cache_queries, cache_hits;
  // Server means over the run (its queue and prefill histograms), when known.
  std::optional<double> queue_mean_ms, prefill_mean_ms;
};

// What a session run says (docs/workloads.md): the result's "multi_turn" block, its terminal
// lines (TTFT by turn, the server's prefix-cache hit rate) and the facts the workload rules
// judge (the callers run rules::MultiTurnFindings on them).
// `source`: "synthetic" or the session file; `synthetic`: the synthetic sessions' shape, or null.
struct SessionReport {
  nlohmann::ordered_json json;
  std::string text;
  MultiTurnFacts facts;
};
SessionReport ReportSessions(const SessionWorkload& w, const BenchRun& run, double think_time_s,
                             const std::string& source, const MultiTurnOptions* synthetic);

}  // namespace latdoc::loadgen
