// Workloads for `latdoc bench`: the prompts to send and how many tokens to ask for.
//
// Random prompts follow `vllm bench serve --dataset-name random`: lengths drawn uniformly from
// [floor(L*(1-r)), ceil(L*(1+r))], an optional shared prefix, a seed. Without a tokenizer, exact
// prompt lengths come from sending token ids (completions endpoint); as text, each token is one
// word, which latdoc sim counts exactly (sim/sim_server.h) and real servers approximately.
// File workloads: JSONL ({"prompt": "...", "output_len": N} per line) and ShareGPT JSON
// (the first human turn is the prompt, the first gpt turn's word count the output length).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace latdoc::loadgen {

struct Prompt {
  std::string text;                 // used when token_ids is empty
  std::vector<int32_t> token_ids;   // exact-length prompt for the completions endpoint
  int input_tokens = 0;             // what the prompt should count as
  int output_tokens = 0;            // max_tokens to ask for
  // A turn of a multi-turn session (loadgen/sessions.h): the chat messages to send (role,
  // content); the chat endpoint sends these instead of one user message of `text`.
  std::vector<std::pair<std::string, std::string>> messages;
  int turn = -1;                    // from 0; -1: not a session's turn
  int reused_tokens = 0;            // of input_tokens: resent as they were in an earlier request
};

// The most tokens a prompt or an answer may ask for (beyond any model's context).
inline constexpr int kMaxTokens = 10'000'000;

struct RandomWorkloadOptions {
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0.0;   // in [0, 1)
  int prefix_len = 0;
  uint64_t seed = 0;
  bool token_ids = false;     // send token ids instead of text
  int vocab_size = 32000;
  // A later batch of the same workload: the same shared prefix, other prompts (drawn from a
  // stream of their own). A sweep draws one batch per round, so no prompt is sent twice.
  uint64_t batch = 0;
  // The first prompt made is the one at this index of the sequence: RandomPrompts(o with first
  // = k, n) is the last n of RandomPrompts(o, k + n), without building the first k (a shard's
  // slice of the workload, loadgen/shard.h).
  size_t first = 0;
};

Status ValidateRandomOptions(const RandomWorkloadOptions& o);
std::vector<Prompt> RandomPrompts(const RandomWorkloadOptions& o, size_t count);

struct FileWorkload {
  std::vector<Prompt> prompts;
  uint64_t bad_lines = 0;
  std::vector<std::string> bad_line_messages;  // the first few, "file:line: why"
};

// Reads a JSONL file (a .jsonl name or content starting with '{' on its first line) or a
// ShareGPT JSON array. `default_output_len` applies where an entry gives none. Bad entries are
// counted and skipped; a file with no usable entry is an error.
StatusOr<FileWorkload> LoadWorkloadFile(const std::string& path, int default_output_len);

}  // namespace latdoc::loadgen
