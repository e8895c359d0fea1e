// Parsers for the periodic stats messages of vLLM (the text after the log-line prefix).
//
// V1 (vllm/v1/metrics/loggers.py, LoggingStatLogger.log, ~v0.10 and v0.12+):
//   Engine 000: Avg prompt throughput: 1510.3 tokens/s, Avg generation throughput: 220.1 tokens/s,
//   Running: 12 reqs, Waiting: 3 reqs, Preemptions: 2, GPU KV cache usage: 87.5%,
//   Prefix cache hit rate: 41.2%
//   ("Preemptions: N" only when nonzero in the interval, v0.12+; data-parallel aggregation
//   prefixes "2 Engines Aggregated: " instead of "Engine 000: ").
// V0 (vllm/engine/metrics.py):
//   Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 23.4 tokens/s, Running: 1 reqs,
//   Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.3%, CPU KV cache usage: 0.0%.
//   and, with prefix caching, a second line: "Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%"
// Parts are matched by their key, so parts added by newer versions ("Corrupted: 0 reqs",
// "MM cache hit rate: ...") are skipped rather than breaking the parse. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace latdoc::logs {

struct VllmStats {
  int engine = 0;               // -1: the "N Engines Aggregated" line
  bool v0 = false;
  double prompt_tps = 0;        // Avg prompt throughput, tokens/s
  double gen_tps = 0;           // Avg generation throughput, tokens/s
  int64_t running = 0;
  int64_t waiting = 0;          // V0 "Pending"
  std::optional<int64_t> swapped;       // V0 only
  std::optional<int64_t> preemptions;   // V1 v0.12+: in this interval; absent means none logged
  double kv_pct = 0;            // GPU KV cache usage, percent
  std::optional<double> cpu_kv_pct;     // V0 only
  std::optional<double> prefix_hit_pct; // V1 line; V0 sends it on its own line
};

// Parses a V1 stats message ("Engine 000: Avg prompt throughput: ..."). nullopt if it is not one
// or a required part (throughputs, Running, Waiting, GPU KV cache usage) is missing or malformed.
std::optional<VllmStats> ParseVllmV1Stats(std::string_view msg);

// Parses a stats message without an engine: V0's ("Avg prompt throughput: ..., Pending: ...",
// `v0` set) and V1's before it named the engine (about 0.8: "..., Waiting: ...", `v0` unset).
std::optional<VllmStats> ParseVllmV0Stats(std::string_view msg);

// Parses the V0 "Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%" line; returns the GPU percent.
std::optional<double> ParseVllmV0PrefixHitRate(std::string_view msg);

}  // namespace latdoc::logs
