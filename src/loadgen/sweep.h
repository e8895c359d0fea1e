// The load sweep behind `latdoc sweep`: steps load up a geometric ladder, then refines only
// around the latency knee (stats/knee.h), and explains the knee with the server's metrics.
//
// A STEP is one load level (a concurrency, or a request rate in rate mode). It is measured in
// ROUNDS (one RunBench each, through a StepRunner) until it is STABLE:
//   the WINDOW (the most recent whole rounds holding at least max(min_requests,
//   2 x concurrency) requests) has a p99 of the knee latency whose last half is within
//   `stable_tolerance` (default 10%) of the p99 of the whole window;
// or until max_requests (default max(400, 8 x concurrency)) were spent; the step then says
// stable=false. The step's statistics come from the window; earlier rounds were a transient
// (warm-up), counted in `spent` only. Round size: the smallest multiple of the concurrency
// >= min_requests / 2 (closed loop; no round ends on a partial wave).
//
// THE SWEEP:
//   1. Ladder: lo, lo*f, lo*f^2, ... up to hi (f = ladder_factor, default 2; hi is the last
//      step). After each step the sweep stops climbing early when
//        - the step's error rate is above max_error_rate ("errors climb"), or
//        - an SLO is given and the step misses it ("SLO broken"), or
//        - the knee is reached and confirmed: a second step past it agreed (stats/knee.h),
//          or the step past it shows requests queueing or the KV cache filling in the
//          server's metrics. A p99 that merely doubled, or tokens/s that stayed flat, is not
//          enough: one stalled step on a loaded host does that.
//   2. Refinement: RefineProbes() around the knee, repeated until both halves of the bracket
//      are narrower than refine_ratio (default 1.1, i.e. 10%) or no new integer concurrency is
//      left, or max_steps is reached.
// The knee is FindKnee() over the steps with an acceptable error rate, judged on the p99 of
// `knee_latency` (default E2EL: E2EL = TTFT + (n-1) x TPOT bends both when requests queue and
// when each step slows) against output tokens/s.
//
// Ctrl-C: the StepRunner reports an interrupted round; the sweep stops and returns the steps
// measured so far, marked partial.
// Not thread-safe; one sweep at a time per process (the runner installs signal handlers).
//
// Where it is: the plan (RunSweep) in sweep.cc, measuring a step in sweep_measure.cc, the
// analysis (AnalyzeSweep) in sweep_analyse.cc, the real StepRunner in sweep_runner.cc, the
// output in sweep_report.h. The advice (--max-num-seqs and its kin) is a judgment: it is made
// by rules/sweep_rules.h from SweepFacts (sweep_facts.h), which the commands call after RunSweep.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "loadgen/results.h"
#include "loadgen/runner.h"
#include "loadgen/validation.h"
#include "loadgen/workload.h"
#include "stats/knee.h"

namespace latdoc::loadgen {

enum class KneeLatency { kTtft, kTpot, kItl, kE2el };
std::string_view KneeLatencyName(KneeLatency k);
StatusOr<KneeLatency> ParseKneeLatency(std::string_view text);

enum class SweepGoal { kLatency, kThroughput };

// One request's outcome, as the sweep needs it.
struct RequestSample {
  bool ok = false;
  int64_t ttft_ns = 0, e2el_ns = 0;
  std::optional<int64_t> tpot_ns;
  int output_tokens = 0;
  std::string failure;  // OutcomeName when !ok
  std::string error;    // the first words of the error, when !ok
};

// Server metrics over a step (summed over its rounds). nullopt: not exposed or not scraped.
struct ServerStepMetrics {
  bool available = false;
  std::string error;                // why not available (the first round's reason)
  std::string server;               // whose metric names /metrics answered in ("vllm"), or ""
  std::optional<double> max_running, max_waiting, max_kv_cache_usage, preemptions;
  // Histogram sums and counts (seconds), from /metrics deltas.
  double queue_sum_s = 0, queue_count = 0;
  double prefill_sum_s = 0, prefill_count = 0;
  double decode_sum_s = 0, decode_count = 0;
  double itl_sum_s = 0, itl_count = 0;  // vLLM's ITL is one engine step

  std::optional<double> queue_mean_ms() const;
  std::optional<double> prefill_mean_ms() const;
  std::optional<double> decode_mean_ms() const;
  std::optional<double> step_time_ms() const;  // server mean ITL
  void Merge(const ServerStepMetrics& o);
};

// One round: a run of `num_requests` at one load level.
struct RoundResult {
  std::vector<RequestSample> requests;  // in send order
  std::vector<int64_t> itl_ns;          // per token
  int64_t dur_ns = 0;
  bool interrupted = false;             // Ctrl-C during the round
  ServerStepMetrics server;
  std::optional<Validation> validation; // the round's run checked (loadgen/validation.h)
};

// Runs rounds. The real one (MakeBenchStepRunner) drives RunBench; tests pass fakes.
// `load` is a concurrency (closed loop) or a request rate (rate mode).
class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // Errors: the target could not be reached (kUnavailable), bad options.
  virtual StatusOr<RoundResult> RunRound(double load, int num_requests) = 0;
  // Called when a step's measurement begins (again, when a step is measured twice).
  virtual void StartStep(double /*load*/) {}
  // True once Ctrl-C was pressed (also between rounds).
  virtual bool interrupted() const = 0;
  // The signal that interrupted it (SIGINT, SIGTERM); 0 when none, or when not known.
  virtual int stop_signal() const { return 0; }
  // The model the rounds ran against ("" before the first round, or when not known).
  virtual std::string model() const { return ""; }
};

struct SweepOptions {
  bool rate_mode = false;          // load = request rate (open loop) instead of concurrency
  double lo = 1, hi = 1024;
  double ladder_factor = 2.0;
  KneeLatency knee_latency = KneeLatency::kE2el;
  double min_elasticity = 1.0;     // stats::KneeOptions
  double refine_ratio = 1.1;
  int min_requests = 32;
  int max_requests = 0;            // per step; 0: max(400, 8 x load)
  double stable_tolerance = 0.10;
  SloSpec slo;
  // A step whose failed share is above it ends the ladder, is left out of the knee, and makes
  // `latdoc sweep` exit 1 (as bench: by default any failed request does).
  double max_error_rate = 0;
  SweepGoal goal = SweepGoal::kLatency;
  int max_steps = 20;
  int input_len = 0;               // the workload's mean prompt length (for the token budget)
  int output_len = 0;              // the workload's output length (for per-request context); 0: unknown
  int max_num_batched_tokens_now = 0;  // the server's current value when known (0: unknown)
};
Status ValidateSweepOptions(const SweepOptions& o);

// The ladder's load levels (concurrency rounded to integers, deduplicated; rates to 3
// significant digits).
std::vector<double> LadderLevels(const SweepOptions& o);

// kFrontEnd: since the lowest step, the client's mean E2EL grew more than twice as much as the
// engine's own time (queue + prefill + decode): what bends is in front of the engine (API
// server, proxy, network).
enum class Bend { kNone, kQueueing, kKvCache, kCompute, kFrontEnd };
std::string_view BendName(Bend b);

struct SweepStep {
  double load = 0;                 // concurrency or request rate
  std::string phase;               // "ladder" or "refine"
  int rounds = 0;
  bool stable = false;
  bool interrupted = false;
  uint64_t spent = 0;               // every request sent for this step, warm-up rounds included
  uint64_t requests = 0, completed = 0, failed = 0;  // over the window the statistics use
  std::map<std::string, uint64_t> failures;
  std::string first_error;
  double duration_s = 0;
  std::optional<double> p99_ttft_ms, median_ttft_ms, p99_tpot_ms, p99_itl_ms, p99_e2el_ms;
  std::optional<double> median_itl_ms;
  std::optional<double> mean_e2el_ms;
  double output_tokens_per_s = 0;
  double request_throughput = 0;
  std::optional<double> goodput;   // requests/s meeting every SLO bound (SLO given)
  std::optional<bool> slo_met;     // good share >= slo.percent (SLO given)
  ServerStepMetrics server;
  Bend bend = Bend::kNone;         // what the server's metrics say bends at this step
  std::string bend_evidence;
  // Set when the step was measured twice because its first measurement looked like a stall of
  // the client's host (RunSweep): what was seen and which measurement was kept.
  std::string remeasured;
  // The window's rounds' validation (MergeValidations); nullopt when no round carried one.
  std::optional<nlohmann::ordered_json> validation;

  double error_rate() const { return requests ? double(failed) / double(requests) : 0; }
  std::optional<double> KneeP99Ms(KneeLatency k) const;
};

struct Recommendation {
  std::string flag;                // "--max-num-seqs"
  std::optional<int64_t> value;    // nullopt: no recommendation (reason says why)
  std::string reason;
};

struct SweepResult {
  std::string model;
  std::vector<SweepStep> steps;    // ascending load
  std::optional<size_t> knee_index;  // into steps
  bool knee_reached = false;
  std::optional<size_t> knee_confirmed_by;  // into steps: the step that confirmed the bend
  std::vector<double> elasticity;  // per segment of the steps used for the knee
  std::vector<size_t> knee_steps;  // the steps the knee was judged on (indexes into steps)
  std::optional<double> bracket_lo, bracket_hi;
  Bend knee_bend = Bend::kNone;
  std::string knee_explanation;
  std::optional<size_t> highest_meeting_slo;
  std::optional<size_t> max_goodput;
  std::optional<int> server_max_num_seqs;  // the running plateau, when requests queued
  std::optional<double> step_base_ms, step_per_seq_ms;  // step time fit a + b x batch
  // The advice (rules/sweep_rules.h AddSweepAdvice; empty until it ran).
  std::vector<Recommendation> recommendations;
  std::string low_load_regime, high_load_regime;
  uint64_t requests_spent = 0;
  bool partial = false;
  std::string partial_reason;
  std::string stop_reason;         // why the ladder stopped climbing
};

// One RunBench as a round: per-request samples, and the server's metrics over it (gauge maxima
// from the scrapes made while a request was in flight). Exposed for tests.
RoundResult RoundFromRun(const BenchRun& run);

// Measures one step (rounds until stable). Exposed for tests.
StatusOr<SweepStep> MeasureStep(StepRunner& runner, double load, const SweepOptions& o);

// Runs the whole sweep. Errors: bad options (kInvalidArgument), unreachable target before any
// step was measured (kUnavailable), every request of the first step failed (kUnavailable, with
// the reason). An interrupted sweep, or one whose target became unreachable after a step was
// measured, is not an error: the result is marked partial (partial_reason says which).
StatusOr<SweepResult> RunSweep(StepRunner& runner, const SweepOptions& o,
                               std::function<void(const SweepStep&)> on_step = nullptr);

// Knee, SLO, goodput, bends, the step-time fit and the knee's explanation over `r.steps` (pure;
// RunSweep calls it; loadgen/sweep_analyse.cc). The explanation is in the words of the server
// the steps' /metrics named (servermetrics/server_dialect.h). It clears r.recommendations and
// the regimes: the advice is the rules' (rules/sweep_rules.h AddSweepAdvice, which the commands
// call after RunSweep).
void AnalyzeSweep(const SweepOptions& o, SweepResult& r);

// The real StepRunner: RunBench rounds built from `base` (its concurrency / request_rate and
// num_requests are set per round). Keeps SIGINT/SIGTERM caught between rounds. No prompt is
// sent twice: with `random`, each round draws a new batch of that workload (and base.prompts
// is not used); else each round goes on where the last stopped in base.prompts, which cycle
// only once all are sent.
std::unique_ptr<StepRunner> MakeBenchStepRunner(
    BenchOptions base, std::optional<RandomWorkloadOptions> random = std::nullopt);

}  // namespace latdoc::loadgen
