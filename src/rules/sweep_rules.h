// Rules of the sweep (`latdoc sweep`, `latdoc diagnose --sweep`): from a sweep's facts
// (loadgen/sweep_facts.h: its steps, knee and bends), the batch-limit advice and the finding
// that compares a target load with the knee. Pure functions of typed facts; thread-safe.
//
// The advice is made in vLLM's terms (a batch of N sequences, a token budget of V per step):
//   --max-num-seqs            what bends at the knee decides it: the server's own batch limit
//                             (raise it when the step-time fit and the KV cache say a larger
//                             batch still pays, else keep it), the KV cache (cap the batch where
//                             it fills), compute (the knee's batch; with goal throughput, where
//                             goodput peaks or tokens/s reach 95% of the highest), the front end
//                             (no batch limit helps), or the SLO (the highest step meeting it,
//                             which also caps every other pick).
//   --max-num-batched-tokens  the decode tokens of a full batch plus the prefill chunk mixed
//                             into the same step, rounded up to 256.
// and then said in the flags of the server the steps' /metrics named
// (servermetrics/server_dialect.h): llama.cpp --parallel, --ctx-size, --batch-size,
// --ubatch-size; SGLang --max-running-requests, --chunked-prefill-size; TGI
// --max-batch-total-tokens, --max-batch-prefill-tokens, --max-concurrent-requests. A flag
// without a value says why in its reason.
#pragma once

#include <string>
#include <vector>

#include "loadgen/sweep.h"
#include "loadgen/sweep_facts.h"
#include "rules/finding.h"

namespace latdoc::rules {

struct SweepAdvice {
  std::vector<loadgen::Recommendation> recommendations;  // the batch limit, then the token budget
  // The two regimes with this server's numbers; both "" without a knee.
  std::string low_load_regime, high_load_regime;
};

SweepAdvice AdviseSweep(const loadgen::SweepFacts& f);

// AdviseSweep over an analysed sweep, written into r.recommendations and r's regimes (where the
// sweep's JSON and text read them).
void AddSweepAdvice(const loadgen::SweepOptions& o, loadgen::SweepResult& r);

// load.sweep_knee for `latdoc diagnose --sweep`: warn when the target concurrency is past the
// knee by more than 10% (the knee is judged on steps about 10% apart), advising the sweep's
// recommended flags (or "Keep concurrency near K per replica." without any); ok at or below
// it; info when no knee was reached up to `sweep_max`. `r` carries its advice (AddSweepAdvice).
Finding SweepKneeFinding(const loadgen::SweepResult& r, int target_concurrency, int sweep_max);

}  // namespace latdoc::rules
