#include "whatif/prediction.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>

#include <fmt/core.h>

#include "loadgen/load_facts.h"
namespace latdoc::whatif {

namespace keys = loadgen::keys;

using nlohmann::ordered_json;

namespace {

StatusOr<int> PositiveInt(const std::string& key, const std::string& v) {
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used == v.size() && n >= 1 && n <= (1 << 30)) return int(n);
  } catch (...) {
  }
  return InvalidArgument(fmt::format("--set {}={}: expected an integer >= 1", key, v));
}

StatusOr<double> PositiveNum(const std::string& key, const std::string& v, double max) {
  try {
    size_t used = 0;
    double d = std::stod(v, &used);
    if (used == v.size() && d > 0 && d <= max) return d;
  } catch (...) {
  }
  return InvalidArgument(fmt::format("--set {}={}: expected a number in (0, {:g}]", key, v, max));
}

// The kind of a bench key, for the fit error that widens its interval.
double FitErr(const Calibration& c, std::string_view key) {
  if (key.find("ttft") != std::string_view::npos) return c.rms_ttft;
  if (key.find("itl") != std::string_view::npos || key.find("tpot") != std::string_view::npos) return c.rms_itl;
  if (key.find("throughput") != std::string_view::npos) return c.rms_throughput;
  return std::max({c.rms_ttft, c.rms_itl, c.rms_throughput});  // e2el
}

std::vector<std::pair<std::string, double>> Keys(const RunMetrics& m) {
  return {{keys::kRequestThroughput, m.request_throughput},
          {keys::kOutputThroughput, m.output_throughput},
          {keys::kMeanTtftMs, m.mean_ttft_ms},
          {keys::kMedianTtftMs, m.median_ttft_ms},
          {keys::kP99TtftMs, m.p99_ttft_ms},
          {keys::kMeanTpotMs, m.mean_tpot_ms},
          {keys::kMedianTpotMs, m.median_tpot_ms},
          {keys::kP99TpotMs, m.p99_tpot_ms},
          {keys::kMeanItlMs, m.mean_itl_ms},
          {keys::kMedianItlMs, m.median_itl_ms},
          {keys::kP99ItlMs, m.p99_itl_ms},
          {keys::kMeanE2elMs, m.mean_e2el_ms},
          {keys::kMedianE2elMs, m.median_e2el_ms},
          {keys::kP99E2elMs, m.p99_e2el_ms}};
}

// Lower-triangular L with L L^T = cov (cov's diagonal nudged up when it is not positive
// definite: a parameter the data did not pin down gets no correlation).
std::array<std::array<double, 4>, 4> Cholesky(std::array<std::array<double, 4>, 4> a) {
  std::array<std::array<double, 4>, 4> l{};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j <= i; ++j) {
      double s = a[i][j];
      for (int k = 0; k < j; ++k) s -= l[i][k] * l[j][k];
      if (i == j) {
        l[i][i] = s > 0 ? std::sqrt(s) : 0;
      } else {
        l[i][j] = l[j][j] > 0 ? s / l[j][j] : 0;
      }
    }
  }
  return l;
}

}  // namespace

const std::vector<std::string>& SetKeys() {
  static const std::vector<std::string> keys = {
      "max-num-seqs", "max-num-batched-tokens", "enable-chunked-prefill", "num-gpu-blocks",
      "block-size", "gpu-memory-utilization", "gpu-memory-gib", "non-kv-gib",
      // llama.cpp's names (calibration.h has the mapping).
      "parallel", "ctx-size", "batch-size", "ubatch-size"};
  return keys;
}

StatusOr<sim::EngineConfig> ApplySets(const Calibration& c,
                                      const std::vector<std::pair<std::string, std::string>>& sets) {
  sim::EngineConfig e = c.engine;
  std::optional<double> util, mem_gib, non_kv_gib;
  std::optional<int> block_size;
  std::optional<int> ctx_size;
  for (const auto& [key, v] : sets) {
    if (key == "max-num-seqs" || key == "parallel") {
      ASSIGN_OR_RETURN(e.max_num_seqs, PositiveInt(key, v));
    } else if (key == "ctx-size") {
      ASSIGN_OR_RETURN(ctx_size, PositiveInt(key, v));
    } else if (key == "batch-size") {
      ASSIGN_OR_RETURN(e.max_num_batched_tokens, PositiveInt(key, v));
    } else if (key == "ubatch-size") {
      // The micro-batch one llama_decode computes at a time: the server still decodes the whole
      // --batch-size batch per step, and the model prices tokens linearly, so nothing changes.
      ASSIGN_OR_RETURN(int unused, PositiveInt(key, v));
      (void)unused;
    } else if (key == "max-num-batched-tokens") {
      ASSIGN_OR_RETURN(e.max_num_batched_tokens, PositiveInt(key, v));
    } else if (key == "num-gpu-blocks") {
      ASSIGN_OR_RETURN(e.num_gpu_blocks_override, PositiveInt(key, v));
    } else if (key == "block-size") {
      ASSIGN_OR_RETURN(block_size, PositiveInt(key, v));
    } else if (key == "enable-chunked-prefill") {
      if (v == "true" || v == "1" || v == "on") {
        e.enable_chunked_prefill = true;
      } else if (v == "false" || v == "0" || v == "off") {
        e.enable_chunked_prefill = false;
      } else {
        return InvalidArgument(fmt::format("--set {}={}: expected true or false", key, v));
      }
    } else if (key == "gpu-memory-utilization") {
      ASSIGN_OR_RETURN(util, PositiveNum(key, v, 1.0));
    } else if (key == "gpu-memory-gib") {
      ASSIGN_OR_RETURN(mem_gib, PositiveNum(key, v, 1e6));
    } else if (key == "non-kv-gib") {
      ASSIGN_OR_RETURN(non_kv_gib, PositiveNum(key, v, 1e6));
    } else {
      std::string known;
      for (const auto& k : SetKeys()) known += (known.empty() ? "" : ", ") + k;
      return InvalidArgument(fmt::format("--set {}={}: unknown key (known: {})", key, v, known));
    }
  }
  if (ctx_size) {
    // The KV cache in tokens (llama.cpp's -c), in the model's blocks.
    e.num_gpu_blocks_override = std::max(1, (*ctx_size + e.block_size - 1) / e.block_size);
  }
  if (block_size) {
    // The same KV memory in blocks of another size.
    e.num_gpu_blocks_override = std::max(1, int(std::floor(double(e.num_gpu_blocks_override) *
                                                           e.block_size / *block_size)));
    e.block_size = *block_size;
  }
  if (util) {
    if (!mem_gib || !non_kv_gib) {
      return Unimplemented(
          "--set gpu-memory-utilization needs the GPU's memory and what the weights and "
          "activations take: add --set gpu-memory-gib=G --set non-kv-gib=W (vLLM's start-up "
          "log says both)");
    }
    // KV memory = memory x utilization - non-KV memory (vLLM's gpu_worker.py, V1); the measured
    // server is taken to run at vLLM's default utilization, 0.9, unless the calibration says.
    const double from_util = c.flags.gpu_memory_utilization.value_or(0.9);
    const double kv_now = *mem_gib * from_util - *non_kv_gib;
    const double kv_new = *mem_gib * *util - *non_kv_gib;
    if (kv_now <= 0 || kv_new <= 0) {
      return InvalidArgument(fmt::format(
          "--set gpu-memory-utilization={:g}: {:g} GiB x utilization leaves no KV memory after "
          "non-kv-gib {:g}", *util, *mem_gib, *non_kv_gib));
    }
    e.num_gpu_blocks_override = std::max(1, int(std::floor(e.num_gpu_blocks_override * kv_new / kv_now)));
  } else if (mem_gib || non_kv_gib) {
    return InvalidArgument("--set gpu-memory-gib and non-kv-gib only go with --set gpu-memory-utilization");
  }
  return e;
}

const Interval* Prediction::Get(std::string_view key) const {
  for (const auto& [k, v] : metrics)
    if (k == key) return &v;
  return nullptr;
}

namespace {

// llama.cpp splits --ctx-size evenly over its slots: a request longer than a slot's share is
// rejected, not queued.
Status CheckLlamaCppSlot(const Calibration& c, const WhatifRequest& r, const Prediction& p) {
  if (c.server == kServerLlamaCpp && (c.ctx_size || p.engine.num_gpu_blocks_override != c.engine.num_gpu_blocks_override)) {
    // The context as given (--set ctx-size, else the calibration's), else the model's blocks.
    int ctx = c.ctx_size.value_or(p.engine.num_gpu_blocks_override * p.engine.block_size);
    for (const auto& [key, v] : r.sets)
      if (key == "ctx-size") ctx = std::atoi(v.c_str());  // ApplySets checked it
    const int slot = ctx / std::max(1, p.engine.max_num_seqs);
    const int need = p.workload.input_len + p.workload.output_len;
    if (need > slot) {
      return InvalidArgument(fmt::format(
          "a request of {} tokens does not fit a slot's {} tokens (ctx-size {} / parallel {}): "
          "llama.cpp rejects it", need, slot, ctx, p.engine.max_num_seqs));
    }
  }
  return Status::Ok();
}

// The central run's options; a note when the load is above the highest one swept.
VirtualRunOptions RunOptions(const Calibration& c, const WhatifRequest& r, Prediction& p) {
  VirtualRunOptions o;
  o.engine = p.engine;
  o.workload = p.workload;
  o.rate_mode = r.rate_mode;
  o.load = r.load;
  o.front_ms = c.front_ms;
  o.duration_s = r.duration_s;
  o.round_requests = r.requests > 0 ? r.requests : r.rate_mode ? 400 : std::max(400, int(8 * r.load));
  o.rounds = 1;
  if (!r.rate_mode) {
    double most = 0;
    for (const MeasuredPoint& m : c.points) most = std::max(most, m.load);
    if (most > 0 && r.load > most * 1.05) {
      p.notes.push_back(fmt::format("{:g} concurrent is above the highest swept load ({:g}): an extrapolation", r.load, most));
    }
  }
  return o;
}

// The bands: kDraws runs with the fitted parameters drawn from their covariance widen
// [lo, hi] of each key (lo and hi start at the central run's values).
Status DrawBands(const Calibration& c, const WhatifRequest& r, const Prediction& p,
                 const VirtualRunOptions& o, std::vector<double>& lo, std::vector<double>& hi) {
  const auto l = Cholesky(c.cov);
  const std::array<double, 4> x0 = {std::log(c.engine.step_base_ms), std::log(c.engine.step_decode_seq_us),
                                    std::log(std::max(1e-9, c.engine.step_prefill_token_us)), c.front_ms};
  std::mt19937_64 rng(r.seed + 7);
  std::normal_distribution<double> z(0, 1);
  for (int d = 0; d < kDraws; ++d) {
    std::array<double, 4> zs = {z(rng), z(rng), z(rng), z(rng)}, x = x0;
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k <= i; ++k) x[i] += l[i][k] * zs[k];
    VirtualRunOptions od = o;
    od.engine = WithParameters(p.engine, x);
    od.front_ms = std::max(0.0, x[3]);
    od.workload.seed = r.seed + 1000 + uint64_t(d);
    ASSIGN_OR_RETURN(RunMetrics m, VirtualRun(od));
    auto k = Keys(m);
    for (size_t i = 0; i < k.size(); ++i) lo[i] = std::min(lo[i], k[i].second), hi[i] = std::max(hi[i], k[i].second);
  }
  return Status::Ok();
}

// A measured step at this load with the calibrated flags and workload: shown beside.
void FindMeasured(const Calibration& c, const WhatifRequest& r, Prediction& p) {
  const sim::EngineConfig& e = c.engine;
  bool same = p.engine.max_num_seqs == e.max_num_seqs && p.engine.max_num_batched_tokens == e.max_num_batched_tokens &&
              p.engine.enable_chunked_prefill == e.enable_chunked_prefill &&
              p.engine.num_gpu_blocks_override == e.num_gpu_blocks_override &&
              p.workload.input_len == c.workload.input_len && p.workload.output_len == c.workload.output_len &&
              r.rate_mode == c.rate_mode;
  if (same) {
    for (const MeasuredPoint& m : c.points)
      if (!p.measured && std::fabs(m.load - r.load) <= 1e-6 * std::max(1.0, r.load)) p.measured = m;
  }
}

}  // namespace

StatusOr<Prediction> Predict(const Calibration& c, const WhatifRequest& r) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!c.usable) return Unavailable("the calibration is not usable for prediction: " + c.refusal);
  if (!(r.load > 0)) return InvalidArgument("--load: expected concurrency=N or rate=R (positive)");
  Prediction p;
  ASSIGN_OR_RETURN(p.engine, ApplySets(c, r.sets));
  p.workload = c.workload;
  if (r.input_len) p.workload.input_len = *r.input_len;
  if (r.output_len) p.workload.output_len = *r.output_len;
  p.workload.seed = r.seed;
  if (p.workload.input_len != c.workload.input_len ||
      p.workload.output_len != c.workload.output_len) {
    p.notes.push_back(
        "the workload differs from the calibrated one: the per-sequence cost was fitted at "
        "its lengths (attention over longer contexts costs more than the model says)");
  }
  RETURN_IF_ERROR(CheckLlamaCppSlot(c, r, p));
  const VirtualRunOptions o = RunOptions(c, r, p);
  ASSIGN_OR_RETURN(RunMetrics central, VirtualRun(o));
  p.max_running = central.max_running;
  p.max_kv_cache_usage = central.max_kv_cache_usage;
  p.preemptions = central.preemptions;
  std::vector<std::pair<std::string, double>> keys = Keys(central);
  std::vector<double> lo(keys.size()), hi(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) lo[i] = hi[i] = keys[i].second;

  RETURN_IF_ERROR(DrawBands(c, r, p, o, lo, hi));
  for (size_t i = 0; i < keys.size(); ++i) {
    double e = FitErr(c, keys[i].first);
    p.metrics.push_back({keys[i].first, {keys[i].second, lo[i] * (1 - e), hi[i] * (1 + e)}});
  }
  p.metrics.insert(p.metrics.begin(),
                   {"duration", {central.duration_s, central.duration_s, central.duration_s}});
  p.metrics.insert(p.metrics.begin(), {keys::kCompleted,
                                       {double(central.completed), double(central.completed),
                                        double(central.completed)}});

  FindMeasured(c, r, p);
  p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

ordered_json PredictionJson(const Calibration& c, const WhatifRequest& r, const Prediction& p) {
  ordered_json j;
  j["schema"] = "latdoc.whatif/1";
  j["calibration"] = c.source;
  ordered_json sets = ordered_json::object();
  for (const auto& [k, v] : r.sets) sets[k] = v;
  j["set"] = sets;
  j["load"] = {{r.rate_mode ? "request_rate" : "concurrency", r.load}};
  j["workload"] = {{"input_len", p.workload.input_len}, {"output_len", p.workload.output_len},
                   {"range_ratio", p.workload.range_ratio}};
  j["config"] = {{"max_num_seqs", p.engine.max_num_seqs},
                 {"max_num_batched_tokens", p.engine.max_num_batched_tokens},
                 {"enable_chunked_prefill", p.engine.enable_chunked_prefill},
                 {"block_size", p.engine.block_size},
                 {"num_gpu_blocks", p.engine.num_gpu_blocks_override}};
  ordered_json pred = ordered_json::object(), iv = ordered_json::object();
  for (const auto& [k, v] : p.metrics) {
    pred[k] = v.value;
    if (k != keys::kCompleted && k != "duration") iv[k] = {v.lo, v.hi};
  }
  pred[keys::kMaxRunning] = p.max_running;
  pred[keys::kMaxKvCacheUsage] = p.max_kv_cache_usage;
  pred[keys::kPreemptions] = p.preemptions;
  j["predicted"] = pred;
  j["intervals"] = iv;
  if (p.measured) {
    auto opt = [](const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); };
    j["measured"] = {{keys::kMedianTtftMs, opt(p.measured->median_ttft_ms)},
                     {keys::kP99TtftMs, opt(p.measured->p99_ttft_ms)},
                     {keys::kMedianItlMs, opt(p.measured->median_itl_ms)},
                     {keys::kP99ItlMs, opt(p.measured->p99_itl_ms)},
                     {keys::kOutputThroughput, p.measured->output_throughput}};
  } else {
    j["measured"] = nullptr;
  }
  j["notes"] = p.notes;
  j["wall_s"] = p.wall_s;
  return j;
}

std::string PredictionText(const Calibration& c, const WhatifRequest& r, const Prediction& p) {
  std::string sets;
  for (const auto& [k, v] : r.sets) sets += fmt::format(" --{} {}", k, v);
  std::string s = fmt::format(
      "What if{} at {:g} {} (input {} / output {} tokens), from {}:\n", sets.empty() ? " nothing changes" : sets,
      r.load, r.rate_mode ? "requests/s" : "concurrent", p.workload.input_len, p.workload.output_len, c.source);
  s += fmt::format("  {:<20} {:>12} {:>26} {:>12}\n", "metric", "predicted", "interval", "measured");
  auto measured = [&](std::string_view key) -> std::string {
    if (!p.measured) return "";
    std::optional<double> v;
    if (key == keys::kMedianTtftMs) v = p.measured->median_ttft_ms;
    if (key == keys::kP99TtftMs) v = p.measured->p99_ttft_ms;
    if (key == keys::kMedianItlMs) v = p.measured->median_itl_ms;
    if (key == keys::kP99ItlMs) v = p.measured->p99_itl_ms;
    if (key == keys::kOutputThroughput) v = p.measured->output_throughput;
    return v ? fmt::format("{:.4g}", *v) : "";
  };
  for (const auto& [k, v] : p.metrics) {
    if (k == keys::kCompleted || k == "duration") continue;
    s += fmt::format("  {:<20} {:>12.4g} {:>26} {:>12}\n", k, v.value,
                     fmt::format("[{:.4g}, {:.4g}]", v.lo, v.hi), measured(k));
  }
  s += fmt::format("  running at most {}, KV cache at most {:.1f}%, {} preemptions; {} requests over {:.1f} s of model time ({:.2f} s to predict)\n",
                   p.max_running, 100 * p.max_kv_cache_usage, p.preemptions,
                   int(p.metrics[0].second.value), p.metrics[1].second.value, p.wall_s);
  for (const auto& n : p.notes) s += "Note: " + n + "\n";
  return s;
}

}  // namespace latdoc::whatif
