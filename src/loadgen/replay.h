// Trace replay for `latdoc bench --dataset-name replay --dataset-path FILE` (docs/workloads.md):
// a request log sent on its own timestamps, open loop, at 1x or --replay-speed X.
//
// One JSON object a line:
//   {"timestamp": 1520.5, "input_length": 812, "output_length": 64, "session_id": "u7"}
// time: "timestamp" (milliseconds, as Mooncake's traces) or "arrival_time_s" (seconds); the
// first line's time is the start. prompt: "prompt" (text) or a token count ("input_length",
// "prompt_tokens" or "input_tokens": as many words). output: "output_length",
// "output_tokens" or "max_tokens" (default --output-len). A count-only prompt with a
// "session_id" is the first N words of that session's own stream of words, so the requests of
// a session share their leading tokens (a prefix cache can hit them) and those of different
// sessions share none.
//
// Lines may come in any order: the requests are sent in time order. Bad lines are counted and
// skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "loadgen/workload.h"

namespace latdoc::loadgen {

struct ReplayWorkload {
  std::vector<Prompt> prompts;            // in send order
  std::vector<int64_t> offsets_ns;        // each one's send time from the first, at 1x
  uint64_t bad_lines = 0;
  std::vector<std::string> bad_line_messages;
};

StatusOr<ReplayWorkload> LoadReplayFile(const std::string& path, int default_output_len);

// The offsets at `speed` (> 0): each divided by it.
std::vector<int64_t> ScaleOffsets(const std::vector<int64_t>& offsets_ns, double speed);

}  // namespace latdoc::loadgen
