// The sweep's facts as the rules read them (rules/sweep_rules.h): the measured steps, the knee
// the analysis found (loadgen/sweep_analyse.cc) and the options the advice depends on. Typed
// values only; the rules make every judgment and write every advice text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/sweep.h"

namespace latdoc::loadgen {

struct SweepFacts {
  // What the sweep was asked for.
  bool rate_mode = false;          // steps are request rates, not concurrencies
  SweepGoal goal = SweepGoal::kLatency;
  bool slo_given = false;
  KneeLatency knee_latency = KneeLatency::kE2el;
  int input_len = 0;               // the workload's mean prompt length; 0: unknown
  int output_len = 0;              // the workload's output length; 0: unknown
  // The server whose metric names /metrics answered in ("vllm", "llamacpp"...), or "".
  std::string server;

  // What it measured and found (SweepResult's fields of the same names).
  std::vector<SweepStep> steps;    // ascending load
  std::optional<size_t> knee_index;  // into steps
  bool knee_reached = false;
  std::vector<size_t> knee_steps;  // the steps the knee was judged on; nonempty with a knee
  Bend knee_bend = Bend::kNone;
  std::optional<size_t> highest_meeting_slo, max_goodput;  // into steps
  std::optional<int> server_max_num_seqs;  // the server's batch limit, when requests queued
  std::optional<double> step_base_ms, step_per_seq_ms;  // step time fit a + b x batch
};

// The facts of an analysed sweep (AnalyzeSweep ran on `r`).
SweepFacts SweepFactsOf(const SweepOptions& o, const SweepResult& r);

// The batch size the engine actually ran at a step: the running gauge, else (closed loop) the
// concurrency. A request rate is no batch size: in rate mode, without the gauge, nullopt.
std::optional<double> BatchOf(const SweepStep& s, bool rate_mode);

// `v` rounded up to a multiple of `m`.
int64_t RoundUpTo(double v, int64_t m);

}  // namespace latdoc::loadgen
