// `latdoc merge`: the results of the shards of one load (bench --shard, loadgen/shard.h) as one
// result of bench's schema, computed from the union of their per-request records, never from
// their summaries: every percentile is exactly the one a single client that sent all of those
// requests would report.
//
// The window: from the earliest shard's measured start to the latest one's end (the union of
// their runs, on the wall clock). Counts, tokens and throughputs are over it; the shards'
// overlap is reported beside it (a shard that started late lengthens the window and so lowers
// the throughput, rather than overstating it). Latencies need no common clock: each is a
// difference of one shard's monotonic times.
//
// Refused (kInvalidArgument, naming the file and the field): a file that is not a shard result,
// another schema, shards of different loads or targets or counts, an index given twice or
// missing. Pure: parsed JSON in, a BenchSummary out. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "loadgen/results.h"

namespace latdoc::loadgen {

struct ShardResult {
  std::string path;             // named in messages
  nlohmann::ordered_json json;  // the whole result file
};

struct MergedResult {
  BenchSummary summary;         // json: bench's schema, plus "merged" (shards and window)
  std::vector<std::string> notes;  // for standard error: a short overlap, a partial shard
};

StatusOr<MergedResult> MergeShards(const std::vector<ShardResult>& shards);

}  // namespace latdoc::loadgen
