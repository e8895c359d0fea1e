// Calibration: fits the simulator's engine model (sim/engine.h) to a server that was measured,
// from a `latdoc sweep` document (latdoc.sweep/1) or a `latdoc diagnose --sweep` document
// (its "sweep"), and says how well the fitted model reproduces the measurements.
//
// Fitted (docs/whatif.md has the derivation):
//   step_base_ms           the fixed cost of an engine step
//   step_decode_seq_us     the cost per decoding sequence (it absorbs the per-attended-KV-token
//                          cost at the swept workload: one workload cannot tell them apart)
//   step_prefill_token_us  the cost per prompt token
//   front_ms               the time from the client's send to the engine (HTTP, API server)
// by least squares on the log of each step's median ITL, median and p99 TTFT and output
// tokens/s, every candidate run through the virtual-time runner (virtual_run.h) with the
// step's own round structure. Uncertainties: the square roots of the diagonal of
// s^2 (J^T J)^-1 at the optimum (J: the Jacobian of the residuals; s^2 their variance).
// Measured, not fitted: the KV cache's blocks (KV usage vs running sequences), the running
// batch limit (the running plateau while requests queued). Flags given by the caller override
// both.
//
// A calibration is USABLE for prediction when at least 3 steps completed without failures and
// the fitted model reproduces them: RMS relative error at most 15% for output tokens/s and the
// median ITL, at most 30% for the median and the p99 TTFT (kMax*RmsErr). Otherwise `refusal`
// says why, and prediction refuses.
//
// Pure functions on documents; not thread-safe only in the sense that each call is independent.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "sim/engine.h"
#include "whatif/virtual_run.h"

namespace latdoc::whatif {

inline constexpr double kMaxThroughputRmsErr = 0.15;
inline constexpr double kMaxItlRmsErr = 0.15;
inline constexpr double kMaxTtftRmsErr = 0.30;

// The server's flags, when the caller knows them (they override what the sweep suggests).
// llama.cpp's are mapped on vLLM's: --parallel is max_num_seqs, --batch-size
// max_num_batched_tokens; --ctx-size is the KV cache in tokens (ctx_size).
struct ServerFlags {
  std::optional<int> max_num_seqs, max_num_batched_tokens, num_gpu_blocks, block_size;
  std::optional<int> ctx_size;
  std::optional<bool> enable_chunked_prefill;
  std::optional<double> gpu_memory_utilization;
};

// One step of the sweep, as measured.
struct MeasuredPoint {
  std::string from = "sweep";  // "sweep", or a diagnosis's "baseline" or "load" step
  double load = 0;
  int requests = 0;           // in the step's window
  int round_requests = 0;     // requests per round (bench run), as the sweep ran them
  int rounds = 1;             // rounds in the window
  std::optional<double> median_ttft_ms, p99_ttft_ms, median_itl_ms, p99_itl_ms;
  double output_throughput = 0;
  std::optional<double> max_running, max_kv_cache_usage, step_time_ms, prefill_mean_ms,
      queue_mean_ms;
};

// A fitted or measured quantity.
struct Parameter {
  std::string name;     // "step_base_ms"
  double value = 0;
  std::optional<double> sigma;  // one standard deviation, same unit; nullopt: not estimated
  std::string source;   // "fit", "measured: ...", "flag", "assumed: ..."
};

// How one metric of one measured step is reproduced.
struct PointError {
  size_t point = 0;     // index into Calibration::points
  double load = 0;
  std::string
      metric;  // internal::kMetrics: median_ttft_ms, p99_ttft_ms, median_itl_ms, output_throughput
  double measured = 0, predicted = 0;
  double rel_err = 0;   // predicted / measured - 1
};

// Which server was measured: its scheduler's limits have other names and defaults.
inline constexpr const char* kServerVllm = "vllm";
inline constexpr const char* kServerLlamaCpp = "llamacpp";

struct Calibration {
  std::string source;            // the input's name
  std::string server = kServerVllm;  // kServerVllm or kServerLlamaCpp
  // llama.cpp: its --ctx-size (the KV cache in tokens, split evenly over the --parallel slots:
  // a request must fit ctx_size / parallel); nullopt when not known.
  std::optional<int> ctx_size;
  bool rate_mode = false;
  Workload workload;
  sim::EngineConfig engine;      // the fitted model (limits and KV included)
  double front_ms = 0;
  // Covariance of (ln step_base_ms, ln step_decode_seq_us, ln step_prefill_token_us, front_ms).
  std::array<std::array<double, 4>, 4> cov{};
  std::vector<Parameter> parameters;
  std::vector<MeasuredPoint> points;
  std::vector<PointError> errors;
  double rms_ttft = 0, rms_itl = 0, rms_throughput = 0;  // relative, over the points
  double max_abs_err = 0;
  bool usable = false;
  std::string refusal;           // why not usable
  std::vector<std::string> notes;  // assumptions the fit rests on
  ServerFlags flags;             // as given
};

struct CalibrateOptions {
  ServerFlags flags;
  std::string source_name;       // for messages ("sweep.json")
  // kServerVllm or kServerLlamaCpp; "" detects it from the document (a sweep that advised in
  // llama.cpp's flags, "recommendations.parallel"; a diagnosis whose bench.server_kind.id is
  // "llamacpp").
  std::string server;
};

// llama.cpp's server (tools/server/server.cpp at the pinned release) on the model: its slots are
// the running batch (max_num_seqs = --parallel); each loop iteration is one llama_decode of every
// slot's next token and prompt tokens up to --batch-size (default 2048, common/common.h), so a
// long prompt is split over steps and shares them with decodes (chunked prefill on); the KV
// cache is --ctx-size tokens (blocks of block_size tokens), each slot holding at most
// ctx-size / parallel. No preemption happens while every request fits its slot.
//
// Fits the model to `doc` (latdoc.sweep/1, or latdoc.diagnose/1 with "sweep"; a diagnosis's
// baseline and load steps, bench runs of the same workload, count as two more points). Errors:
// kInvalidArgument naming the file and the key for a document that is not one of these or a
// value of the wrong type; a document with too few points is not an error (the calibration is
// returned, not usable, with the reason).
StatusOr<Calibration> Calibrate(const nlohmann::json& doc, const CalibrateOptions& options);

// The calibration document (schema latdoc.calibration/1) and back. FromJson errors:
// kInvalidArgument "WHERE: KEY: what is wrong".
nlohmann::ordered_json CalibrationJson(const Calibration& c);
StatusOr<Calibration> CalibrationFromJson(const nlohmann::json& doc, std::string_view where);

// The terminal report: parameters with uncertainties, per-point errors, usable or the refusal.
std::string CalibrationText(const Calibration& c);

// The engine config with parameters x = (ln base_ms, ln decode_seq_us, ln prefill_token_us).
sim::EngineConfig WithParameters(const sim::EngineConfig& base, const std::array<double, 4>& x);

// Options for replaying point `p` (its round structure) with `engine` and front delay.
VirtualRunOptions ReplayOptions(const Calibration& c, const MeasuredPoint& p,
                                const sim::EngineConfig& engine, double front_ms);

}  // namespace latdoc::whatif
