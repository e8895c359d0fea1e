// Knee detection for `latdoc sweep`: given the steps of a load sweep (concurrency, p99
// latency, tokens/s), say where adding load stops paying.
//
// THE KNEE (latdoc's definition). Between consecutive steps i and i+1 take the elasticity of
// throughput with respect to tail latency:
//
//     E_i = ln(tokens_per_s[i+1] / tokens_per_s[i]) / ln(p99[i+1] / p99[i])
//
// "each 1% of added p99 buys E_i % more tokens/s". E_i is +inf while p99 does not grow and
// throughput does (free throughput), and 0 when throughput does not grow. The knee is the
// last step before the first segment whose elasticity falls below `min_elasticity`
// (default 1: past the knee, latency grows faster, in relative terms, than throughput).
// The definition is scale-free (no units, no reference step) and holds for both ways a
// serving engine saturates:
//  - a hard limit (max_num_seqs, KV capacity): throughput flattens, queueing makes p99 grow
//    in proportion to load, E drops to ~0 at the limit;
//  - a compute-bound step time t = a + b*batch: tokens/s = batch/t and p99 ~ t, so
//    E = a / (b*batch), which crosses 1 where the per-sequence cost b*batch equals the
//    fixed cost a: the batch past which a step is mostly spent on the batch itself.
// The true knee lies between the steps before and after the one reported; RefineBracket()
// gives that interval for a bisection.
//
// CONFIRMATION. One step measured on a loaded host can carry a stall (a p99 of a few dozen
// requests is their slowest one) and fake a bend. So a segment i -> i+1 below the threshold
// is the knee only if the step after it agrees: the elasticity from i straight to i+2 is below
// the threshold too. When it is not, step i+1 was the odd one and the search goes on. A
// candidate on the last segment has nothing to confirm it: it is reported (reached) with
// `confirmed_by` empty, and a sweep measures one more step before it trusts it.
//
// Also: the highest concurrency whose p99 meets an SLO, and the step of maximum goodput.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"

namespace latdoc::stats {

struct SweepPoint {
  double concurrency = 0;       // or request rate, for a rate sweep
  int64_t p99_latency_ns = 0;   // the latency the knee is judged on (e.g. p99 TTFT or E2EL)
  double tokens_per_s = 0;      // output tokens/s
  std::optional<double> goodput_per_s;  // requests/s meeting the SLO, when one was given
};

struct KneeOptions {
  double min_elasticity = 1.0;
};

struct KneeResult {
  size_t knee_index = 0;
  // False when no segment fell below the threshold: the knee was not reached inside the
  // range and knee_index is the last step (the sweep should go higher).
  bool reached = false;
  // elasticity[i] belongs to the segment from step i to step i+1 (+inf: free throughput).
  std::vector<double> elasticity;
  // The step (knee_index + 2) whose elasticity from the knee confirmed it; empty when the
  // knee's segment is the last one, or the knee was not reached.
  std::optional<size_t> confirmed_by;
};

// REQUIRES nothing; returns InvalidArgument when `points` is empty, concurrency is not
// strictly increasing, or a p99 is not positive, with the offending step's index.
StatusOr<KneeResult> FindKnee(std::span<const SweepPoint> points, KneeOptions options = {});

// The concurrency interval (exclusive) that holds the true knee: from the step before the
// knee to the step after it (clamped to the range). A bisection refines inside it.
struct Bracket {
  double lo_concurrency = 0;
  double hi_concurrency = 0;
};
Bracket RefineBracket(std::span<const SweepPoint> points, const KneeResult& knee);

// Index of the highest-concurrency step with p99_latency_ns <= slo_p99_ns (inclusive, like
// vLLM's goodput); nullopt when no step meets it.
// The next concurrencies to measure to narrow the knee: the geometric midpoints of
// (step before the knee, knee) and (knee, step after), each only while that half is wider
// than `min_ratio` (e.g. 1.1 for 10%). Empty when the knee is pinned down. The caller rounds
// them (integer concurrency) and drops any already measured.
std::vector<double> RefineProbes(std::span<const SweepPoint> points, const KneeResult& knee,
                                 double min_ratio);

std::optional<size_t> HighestMeetingSlo(std::span<const SweepPoint> points, int64_t slo_p99_ns);

// Index of the step with the largest goodput_per_s (the lowest concurrency on ties);
// nullopt when no step has a goodput.
std::optional<size_t> MaxGoodput(std::span<const SweepPoint> points);

}  // namespace latdoc::stats
