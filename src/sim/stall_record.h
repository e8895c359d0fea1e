// The simulator's ground truth for stall attribution (docs/attribution.md): every step it
// slowed on purpose, with why, as one JSON line per step in a file (--sim-stall-record FILE).
//
// Line: {"start_ns":M,"dur_ns":D,"cause":"log"|"swap"|"host_cpu"|"host_gap"|"slow_kernel"|
//        "preemption"|"prefill","prefill_tokens":N}
// start_ns is CLOCK_MONOTONIC of this host (the clock latdoc's client stamps tokens with, so a
// test on the same host compares the two directly); dur_ns is the step's wall duration. A step
// with several causes gives one line per cause. "prefill" is a step that computed at least
// kGroundTruthPrefillTokens prompt tokens (a long prefill batch the decoding streams wait for).
//
// Also the log write a log stall stands for: vLLM stalls when a synchronous log write blocks
// (e.g. --enable-log-requests logging long prompts); LogStallMessage is that write's text, so
// the log file really grows at the stall's instant. Not thread-safe: the sim's loop thread only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "base/status.h"
#include "sim/engine.h"

namespace latdoc::sim {

constexpr int kGroundTruthPrefillTokens = 1024;
constexpr size_t kLogStallMessageBytes = 8192;

class StallRecorder {
 public:
  StallRecorder() = default;
  ~StallRecorder();
  StallRecorder(const StallRecorder&) = delete;
  StallRecorder& operator=(const StallRecorder&) = delete;

  // Empty path: records nothing.
  Status Open(const std::string& path);
  // One planned step: `start_ns` monotonic, `dur_ns` its wall duration. Flushed per line.
  void OnStep(const StepPlan& plan, int64_t start_ns, int64_t dur_ns);

 private:
  FILE* f_ = nullptr;
};

// The text of the synchronous log write a log stall stands for (kLogStallMessageBytes long).
std::string LogStallMessage(uint64_t step);

}  // namespace latdoc::sim
