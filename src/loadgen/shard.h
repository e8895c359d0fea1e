// One load split over N client processes (shards) that run at the same wall-clock instant, on
// one machine or many (a Kubernetes Indexed Job), and whose results `latdoc merge` joins
// exactly (loadgen/merge.h).
//
// What a shard is here: its index I in [0, N), the share of the whole load it sends, the slice
// of the workload it draws its prompts from, the seed of its arrivals, and the per-request
// records it writes so that the merge computes every statistic from the union of the records,
// never from summaries. Pure functions; thread-safe.
//
// The split (bench.md, "Shards"): a count C (--max-concurrency of a closed loop, an open loop's
// cap, --num-prompts) gives shard I C / N, plus one to each of the lowest C % N shards; a rate
// gives each shard rate / N. The measured prompts of shard I are those of an unsharded run from
// index Offset(num_prompts, I) on, so the shards' measured prompts are disjoint and together
// those of the unsharded run (a --duration run: shard I from I x the per-shard count).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "loadgen/runner.h"

namespace latdoc::loadgen {

// The JSON written by bench --shard: the results' "shard" block carries this schema.
inline constexpr std::string_view kShardSchema = "latdoc.shard/1";
// The schema of bench's results (results.cc writes it); a merge writes it too.
inline constexpr std::string_view kBenchSchema = "latdoc.bench/1";

struct ShardSpec {
  int index = 0;  // 0-based, as Kubernetes' JOB_COMPLETION_INDEX
  int count = 1;
};

// "I/N" with 0 <= I < N <= kMaxShards. Errors name the flag: "--shard '3/3': the index must be
// below the count (0-based: 0/3, 1/3, 2/3)".
inline constexpr int kMaxShards = 10000;
StatusOr<ShardSpec> ParseShard(std::string_view text);

// --start-at: an RFC 3339 time ("2026-12-05T03:00:00Z", a fraction of a second and an offset
// such as "+01:00" allowed), Unix seconds ("1764903600", "1764903600.5"), or "now+DURATION"
// ("now+10s", "now+2m"; plain "now" too). Returns Unix nanoseconds; `now_unix_ns` is the wall
// clock now, for "now+".
StatusOr<int64_t> ParseStartAt(std::string_view text, int64_t now_unix_ns);

// "2026-12-05T03:00:00.250Z" (UTC, milliseconds only when not zero).
std::string FormatRfc3339Utc(int64_t unix_ns);

// Shard `s`'s share of `total`, and the sum of the lower shards' shares.
int64_t ShareOf(int64_t total, ShardSpec s);
int64_t OffsetOf(int64_t total, ShardSpec s);

// The seed of shard `s`'s arrivals (open loop): shard 0 keeps `seed` (a 1/1 shard is the
// unsharded run), another shard I gets SplitMix64(seed XOR I), so that no two shards draw the
// same schedule.
uint64_t ShardSeed(uint64_t seed, ShardSpec s);

// Every record of `run` with its times exact to the nanosecond: "scheduled_unix_ns" (the
// monotonic time plus `mono_to_unix_ns`), and every other time as nanoseconds after it:
//   {"outcome": "ok", "error": "...", "http_status": 200, "scheduled_unix_ns": N,
//    "sent_ns": d, "first_token_ns": d, "last_token_ns": d, "end_ns": d,  (null: never)
//    "prompt_tokens": n, "output_tokens": n, "requested_output_tokens": n,
//    "token_count_method": "usage_per_chunk", "count_mismatch": false,
//    "chunks": [[d, tokens], ...]}
nlohmann::ordered_json RecordsJson(const BenchRun& run, int64_t mono_to_unix_ns);

// A result with "requests" as its text: bench's JSON indented by 2, except that each request
// of "requests" (its last key) is written on one line (a stream's chunks would take four lines
// each). Without "requests", JsonText(result, 2).
std::string ShardResultText(const nlohmann::ordered_json& result);

// The inverse: records with their times in Unix nanoseconds. Errors say where:
// "a.json: requests[12].first_token_ns: expected an integer or null".
StatusOr<std::vector<RequestRecord>> RecordsFromJson(const nlohmann::ordered_json& requests,
                                                     std::string_view where);

}  // namespace latdoc::loadgen
