#include "whatif/calibration.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "base/units.h"
#include "whatif/calibration_internal.h"

namespace latdoc::whatif {

using nlohmann::json;
using namespace internal;  // NOLINT: the calibration's own parts

namespace {

// --- small dense linear algebra (4 x 4) ---------------------------------------------------------

// --- small dense linear algebra (4 x 4) ---------------------------------------------------------

using Vec = std::array<double, 4>;
using Mat = std::array<std::array<double, 4>, 4>;

// Solves a x = b by Gaussian elimination with partial pivoting; false when singular.
bool Solve(Mat a, Vec b, Vec* x) {
  for (int c = 0; c < 4; ++c) {
    int p = c;
    for (int r = c + 1; r < 4; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    if (std::fabs(a[p][c]) < 1e-300) return false;
    std::swap(a[p], a[c]);
    std::swap(b[p], b[c]);
    for (int r = c + 1; r < 4; ++r) {
      double f = a[r][c] / a[c][c];
      for (int k = c; k < 4; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (int r = 3; r >= 0; --r) {
    double s = b[r];
    for (int k = r + 1; k < 4; ++k) s -= a[r][k] * (*x)[k];
    (*x)[r] = s / a[r][r];
  }
  return true;
}

// --- the fit ------------------------------------------------------------------------------------

// d residual_i / d x_k, one row per residual.
using JacobianRows = std::vector<std::array<double, 4>>;

struct Fitter {
  const Calibration& cal;
  // Residuals w_k x ln(predicted / measured) over every point and metric measured; `runs` gets
  // each point's run. Error when a run cannot run (e.g. KV too small for a request).
  StatusOr<std::vector<double>> Residuals(const Vec& x, std::vector<RunMetrics>* runs = nullptr) const {
    std::vector<double> r;
    sim::EngineConfig e = WithParameters(cal.engine, x);
    for (const MeasuredPoint& p : cal.points) {
      ASSIGN_OR_RETURN(RunMetrics m, VirtualRun(ReplayOptions(cal, p, e, std::max(0.0, x[3]))));
      for (int k = 0; k < 4; ++k) {
        auto meas = MeasuredMetric(p, k);
        if (!meas || *meas <= 0) continue;
        double pred = std::max(PredictedMetric(m, k), 1e-9);
        r.push_back(kWeights[k] * std::log(pred / *meas));
      }
      if (runs) runs->push_back(m);
    }
    return r;
  }

  // The Jacobian at `at` by forward differences, `r0` the residuals there.
  Status Jacobian(const Vec& at, const std::vector<double>& r0, JacobianRows* jac) const {
    jac->assign(r0.size(), {});
    for (int k = 0; k < 4; ++k) {
      Vec xh = at;
      double h = k < 3 ? 0.05 : std::max(0.02 * std::exp(at[0]), 0.05 * at[3]);
      xh[k] += h;
      ASSIGN_OR_RETURN(std::vector<double> rh, Residuals(xh));
      if (rh.size() != r0.size()) return Internal("residual count changed");
      for (size_t i = 0; i < r0.size(); ++i) (*jac)[i][k] = (rh[i] - r0[i]) / h;
    }
    return Status::Ok();
  }
};

double Cost(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) s += v * v;
  return s;
}

// --- the steps of Calibrate ----------------------------------------------------------------------

// The running batch limit (max_num_seqs) and the prefill token budget (max_num_batched_tokens):
// given as flags, measured (the running plateau while requests queued), or assumed.
void SetBatchLimits(const json& doc, const CalibrateOptions& opt, Calibration& cal) {
  const bool llama = cal.server == kServerLlamaCpp;
  sim::EngineConfig& e = cal.engine;
  e.block_size = opt.flags.block_size.value_or(16);
  e.enable_chunked_prefill = opt.flags.enable_chunked_prefill.value_or(true);
  double max_running = 0;
  bool queued_at_plateau = false;
  for (const MeasuredPoint& p : cal.points) max_running = std::max(max_running, p.max_running.value_or(0));
  std::optional<double> plateau;
  if (auto v = doc.find("server_max_num_seqs"); v != doc.end() && v->is_number())
    plateau = v->get<double>();
  if (!plateau && max_running > 0 && !cal.rate_mode) {
    for (const MeasuredPoint& p : cal.points)
      if (p.load > max_running + 0.5 && p.max_running && *p.max_running >= max_running - 0.5) queued_at_plateau = true;
    if (queued_at_plateau) plateau = max_running;
  }
  if (opt.flags.max_num_seqs) {
    e.max_num_seqs = *opt.flags.max_num_seqs;
    cal.parameters.push_back({"max_num_seqs", double(e.max_num_seqs), std::nullopt,
                              llama ? "flag: --parallel" : "flag"});
  } else if (plateau) {
    e.max_num_seqs = int(std::lround(*plateau));
    cal.parameters.push_back({"max_num_seqs", double(e.max_num_seqs), std::nullopt,
                              llama ? "measured: busy slots plateaued there while requests waited "
                                      "(llama.cpp's --parallel)"
                                    : "measured: running requests plateaued there while requests waited"});
  } else {
    e.max_num_seqs = 1 << 20;
    if (llama && max_running == 0) {
      cal.notes.push_back("the running requests were not measured (llama.cpp's metrics the sweep "
                          "samples give none): pass its -np as --parallel; predictions assume no "
                          "batch limit");
    } else {
      cal.notes.push_back(fmt::format(
          "no running-batch limit was reached (most running: {:g}): predictions assume none",
          max_running));
    }
  }
  int sweep_mbt = 0;
  if (auto sf = doc.find("server_flags"); sf != doc.end() && sf->is_object()) {
    if (auto v = sf->find("max_num_batched_tokens"); v != sf->end() && v->is_number_integer()) sweep_mbt = v->get<int>();
  }
  if (opt.flags.max_num_batched_tokens || sweep_mbt > 0) {
    e.max_num_batched_tokens = opt.flags.max_num_batched_tokens.value_or(sweep_mbt);
    cal.parameters.push_back({"max_num_batched_tokens", double(e.max_num_batched_tokens), std::nullopt,
                              llama ? "flag: --batch-size" : "flag"});
  } else if (llama) {
    e.max_num_batched_tokens = 2048;
    cal.parameters.push_back({"max_num_batched_tokens", 2048.0, std::nullopt,
                              "assumed: llama.cpp's default --batch-size (common/common.h)"});
  } else {
    e.max_num_batched_tokens = 8192;
    cal.parameters.push_back({"max_num_batched_tokens", 8192.0, std::nullopt,
                              "assumed: vLLM V1's default for its API server on an H100-class GPU"});
  }
}

// The KV cache's blocks: given (--num-gpu-blocks; llama.cpp's --ctx-size) or measured. At the
// step with the highest KV usage u and R running, each sequence holds about
// ceil((input + output/2) / block_size) blocks: blocks = R x that / u. The spread of a
// sequence's length over its life (input .. input + output) is the uncertainty.
void SetKvBlocks(const CalibrateOptions& opt, Calibration& cal) {
  const bool llama = cal.server == kServerLlamaCpp;
  sim::EngineConfig& e = cal.engine;
  if (llama) {
    // llama.cpp batches a prompt with decodes and splits one longer than --batch-size.
    e.enable_chunked_prefill = true;
  }
  if (llama && opt.flags.ctx_size) {
    cal.ctx_size = *opt.flags.ctx_size;
    e.num_gpu_blocks_override = std::max(1, (*cal.ctx_size + e.block_size - 1) / e.block_size);
    cal.parameters.push_back({"ctx_size", double(*cal.ctx_size), std::nullopt, "flag: --ctx-size"});
    const double slot = double(*cal.ctx_size) / std::max(1, std::min(e.max_num_seqs, *cal.ctx_size));
    if (e.max_num_seqs < (1 << 20) && cal.workload.input_len + cal.workload.output_len > slot) {
      cal.notes.push_back(fmt::format(
          "a request of {} tokens does not fit a slot's {:g} tokens (--ctx-size / --parallel): "
          "llama.cpp rejects it", cal.workload.input_len + cal.workload.output_len, slot));
    }
  } else if (opt.flags.num_gpu_blocks) {
    e.num_gpu_blocks_override = *opt.flags.num_gpu_blocks;
    cal.parameters.push_back({"num_gpu_blocks", double(e.num_gpu_blocks_override), std::nullopt, "flag"});
  } else {
    const MeasuredPoint* best = nullptr;
    for (const MeasuredPoint& p : cal.points)
      if (p.max_kv_cache_usage && *p.max_kv_cache_usage > 0 && p.max_running && *p.max_running > 0 &&
          (!best || *p.max_kv_cache_usage > *best->max_kv_cache_usage))
        best = &p;
    if (best) {
      const double in = cal.workload.input_len, out = cal.workload.output_len;
      double per_seq = std::ceil((in + out / 2) / e.block_size);
      double blocks = *best->max_running * per_seq / *best->max_kv_cache_usage;
      double rel = (out / 2) / (in + out / 2) / std::sqrt(3.0) + 1.0 / std::max(1.0, *best->max_running);
      e.num_gpu_blocks_override = int(std::lround(blocks));
      cal.parameters.push_back({"num_gpu_blocks", blocks, blocks * rel,
                                fmt::format("measured: KV usage {:.3g}% with {:g} running at {:g}",
                                            100 * *best->max_kv_cache_usage, *best->max_running, best->load)});
    } else {
      e.num_gpu_blocks_override = 1 << 24;
      cal.notes.push_back(llama ? "--ctx-size was not given and KV cache usage was not measured: "
                                  "predictions assume every request fits its slot"
                                : "KV cache usage was not measured: predictions assume the KV cache never fills");
    }
  }
}

// The initial guess from the server's step time (or the client's ITL) vs the batch: mean step
// ~ a + N x (b + c x in / out) at N decoding sequences (a request's prompt is spread over its
// `out` steps); TTFT at the lowest load ~ a + c x in. REQUIRES: cal.points non-empty.
Vec InitialGuess(const Calibration& cal) {
  const sim::EngineConfig& e = cal.engine;
  const double in = cal.workload.input_len, out = cal.workload.output_len;
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for (const MeasuredPoint& p : cal.points) {
    double batch = std::min(p.load, double(e.max_num_seqs));
    if (cal.rate_mode) batch = p.max_running.value_or(1);
    double y = p.step_time_ms.value_or(*p.median_itl_ms);
    sx += batch, sy += y, sxx += batch * batch, sxy += batch * y, n += 1;
  }
  double slope = (n * sxx - sx * sx) > 0 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0;
  const MeasuredPoint& low = cal.points.front();
  double low_step = low.step_time_ms.value_or(*low.median_itl_ms);
  double a0 = (sy - slope * sx) / n;
  if (!(a0 > 0.05 * low_step)) a0 = 0.8 * low_step;
  slope = std::max(slope, 1e-4 * a0);
  double ttft_low = low.prefill_mean_ms.value_or(low.median_ttft_ms.value_or(2 * low_step));
  double c0 = std::max(1e-3 * a0, (ttft_low - low_step)) / in;  // ms per token
  double b0 = std::max(0.2 * slope, slope - c0 * in / out);
  double f0 = 0.05 * a0;
  if (low.median_ttft_ms && low.prefill_mean_ms) {
    f0 = std::max(0.0, *low.median_ttft_ms - *low.prefill_mean_ms - low.queue_mean_ms.value_or(0));
  }
  return {std::log(a0), std::log(b0 * 1e3), std::log(c0 * 1e3), f0};
}

// Levenberg-Marquardt on the replayed sweep, from `x`: the optimum, its residuals and cost.
struct FitResult {
  Vec x{};
  std::vector<double> r;
  double cost = 0;
};
StatusOr<FitResult> LevenbergMarquardt(const Fitter& fit, Vec x) {
  ASSIGN_OR_RETURN(std::vector<double> r, fit.Residuals(x));
  double cost = Cost(r);
  double lambda = 1e-2;
  JacobianRows jac;
  for (int iter = 0; iter < 12; ++iter) {
    RETURN_IF_ERROR(fit.Jacobian(x, r, &jac));
    Mat a{};
    Vec g{};
    for (size_t i = 0; i < r.size(); ++i)
      for (int p = 0; p < 4; ++p) {
        g[p] += jac[i][p] * r[i];
        for (int q = 0; q < 4; ++q) a[p][q] += jac[i][p] * jac[i][q];
      }
    bool improved = false;
    for (int tries = 0; tries < 6 && !improved; ++tries) {
      Mat damped = a;
      for (int p = 0; p < 4; ++p) damped[p][p] += lambda * a[p][p] + 1e-9;
      Vec neg_g = {-g[0], -g[1], -g[2], -g[3]};
      Vec dx{};
      if (!Solve(damped, neg_g, &dx)) {
        lambda *= 10;
        continue;
      }
      Vec x1 = x;
      for (int p = 0; p < 3; ++p) x1[p] += std::clamp(dx[p], -1.0, 1.0);
      x1[3] = std::max(0.0, x1[3] + dx[3]);
      auto r1 = fit.Residuals(x1);
      if (r1.ok() && Cost(*r1) < cost) {
        double gain = (cost - Cost(*r1)) / std::max(cost, 1e-12);
        x = x1, r = std::move(*r1), cost = Cost(r);
        lambda = std::max(1e-6, lambda / 3);
        improved = true;
        if (gain < 1e-3) iter = 100;  // converged
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  return FitResult{x, std::move(r), cost};
}

// The fitted parameters into `cal`, with their uncertainty: s^2 (J^T J)^-1 at the optimum.
Status SetFittedParameters(const Fitter& fit, const FitResult& best, Calibration& cal) {
  const Vec& x = best.x;
  const std::vector<double>& r = best.r;
  const double cost = best.cost;
  JacobianRows jac;
  RETURN_IF_ERROR(fit.Jacobian(x, r, &jac));
  Mat a{};
  for (size_t i = 0; i < r.size(); ++i)
    for (int p = 0; p < 4; ++p)
      for (int q = 0; q < 4; ++q) a[p][q] += jac[i][p] * jac[i][q];
  const double dof = std::max(1.0, double(r.size()) - 4);
  const double s2 = cost / dof;
  bool have_cov = true;
  for (int k = 0; k < 4 && have_cov; ++k) {
    Vec unit{};
    unit[k] = 1;
    Vec col{};
    Mat reg = a;
    for (int p = 0; p < 4; ++p) reg[p][p] += 1e-12;
    if (!Solve(reg, unit, &col)) have_cov = false;
    for (int p = 0; p < 4; ++p) cal.cov[p][k] = s2 * col[p];
  }
  if (!have_cov) cal.cov = {};
  cal.engine = WithParameters(cal.engine, x);
  cal.front_ms = x[3];
  const sim::EngineConfig& e = cal.engine;
  auto sd = [&](int k) { return std::sqrt(std::max(0.0, cal.cov[k][k])); };
  cal.parameters.insert(cal.parameters.begin(),
                        {{"step_base_ms", e.step_base_ms, e.step_base_ms * sd(0), "fit"},
                         {"step_decode_seq_us", e.step_decode_seq_us, e.step_decode_seq_us * sd(1), "fit"},
                         {"step_prefill_token_us", e.step_prefill_token_us, e.step_prefill_token_us * sd(2), "fit"},
                         {"front_ms", cal.front_ms, sd(3), "fit"}});
  return Status::Ok();
}

// How well the fitted model reproduces each point: the errors, their RMS, and whether the
// calibration is usable (else the refusal says why).
Status JudgeFit(const Fitter& fit, const Vec& x, Calibration& cal) {
  std::vector<RunMetrics> runs;
  ASSIGN_OR_RETURN(std::vector<double> final_r, fit.Residuals(x, &runs));
  (void)final_r;
  double se[4] = {0, 0, 0, 0};
  int cnt[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < cal.points.size(); ++i) {
    for (int k = 0; k < 4; ++k) {
      auto meas = MeasuredMetric(cal.points[i], k);
      if (!meas || *meas <= 0) continue;
      double pred = PredictedMetric(runs[i], k);
      double rel = pred / *meas - 1;
      cal.errors.push_back({i, cal.points[i].load, kMetrics[k], *meas, pred, rel});
      se[k] += rel * rel;
      ++cnt[k];
      cal.max_abs_err = std::max(cal.max_abs_err, std::fabs(rel));
    }
  }
  auto rms = [&](int k) { return cnt[k] ? std::sqrt(se[k] / cnt[k]) : 0.0; };
  cal.rms_itl = rms(0);
  cal.rms_ttft = std::sqrt((se[1] + se[2]) / std::max(1, cnt[1] + cnt[2]));
  cal.rms_throughput = rms(3);
  std::vector<std::string> why;
  if (cal.rms_throughput > kMaxThroughputRmsErr)
    why.push_back(fmt::format("output tokens/s off by {:.0f}% RMS (limit {:.0f}%)", 100 * cal.rms_throughput, 100 * kMaxThroughputRmsErr));
  if (cal.rms_itl > kMaxItlRmsErr)
    why.push_back(fmt::format("median ITL off by {:.0f}% RMS (limit {:.0f}%)", 100 * cal.rms_itl, 100 * kMaxItlRmsErr));
  if (cal.rms_ttft > kMaxTtftRmsErr)
    why.push_back(fmt::format("TTFT (median and p99) off by {:.0f}% RMS (limit {:.0f}%)", 100 * cal.rms_ttft, 100 * kMaxTtftRmsErr));
  if (why.empty()) {
    cal.usable = true;
  } else {
    std::string s;
    for (const auto& w : why) s += (s.empty() ? "" : "; ") + w;
    cal.refusal = "the fitted model does not reproduce the sweep: " + s +
                  " (a server the model does not describe: a front end that bends, pathologies, "
                  "or a noisy sweep)";
  }
  return Status::Ok();
}

}  // namespace

sim::EngineConfig WithParameters(const sim::EngineConfig& base, const std::array<double, 4>& x) {
  sim::EngineConfig e = base;
  e.step_base_ms = std::exp(x[0]);
  e.step_decode_seq_us = std::exp(x[1]);
  e.step_prefill_token_us = std::exp(x[2]);
  e.step_context_token_ns = 0;
  return e;
}

VirtualRunOptions ReplayOptions(const Calibration& c, const MeasuredPoint& p,
                                const sim::EngineConfig& engine, double front_ms) {
  VirtualRunOptions o;
  o.engine = engine;
  o.workload = c.workload;
  o.rate_mode = c.rate_mode;
  o.load = p.load;
  o.round_requests = std::max(1, p.round_requests);
  o.rounds = std::max(1, p.rounds);
  o.front_ms = front_ms;
  return o;
}

StatusOr<Calibration> Calibrate(const json& input, const CalibrateOptions& opt) {
  ASSIGN_OR_RETURN(SweepSource sweep, FindSweep(input, opt.source_name));
  Calibration cal;
  cal.source = opt.source_name;
  cal.flags = opt.flags;
  cal.server = DetectServer(input, sweep, opt);
  cal.rate_mode = sweep.doc->value("mode", std::string()) == "request_rate";
  RETURN_IF_ERROR(ReadWorkload(sweep, cal));
  RETURN_IF_ERROR(ReadPoints(input, sweep, opt.source_name, cal));
  SetBatchLimits(*sweep.doc, opt, cal);
  SetKvBlocks(opt, cal);
  if (cal.points.size() < 3) {
    cal.refusal = fmt::format("{} usable step(s): at least 3 are needed to fit the step time",
                              cal.points.size());
    return cal;
  }
  const Fitter fit{cal};
  ASSIGN_OR_RETURN(FitResult best, LevenbergMarquardt(fit, InitialGuess(cal)));
  RETURN_IF_ERROR(SetFittedParameters(fit, best, cal));
  RETURN_IF_ERROR(JudgeFit(fit, best.x, cal));
  return cal;
}

}  // namespace latdoc::whatif
