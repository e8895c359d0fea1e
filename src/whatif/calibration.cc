#include "whatif/calibration.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "base/units.h"

namespace latdoc::whatif {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// --- reading the documents ---------------------------------------------------------------------

StatusOr<std::optional<double>> OptNum(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number()) return InvalidArgument(fmt::format("{}.{}: expected a number", where, key));
  return std::optional<double>(it->get<double>());
}

StatusOr<double> Num(const json& j, const char* key, const std::string& where) {
  ASSIGN_OR_RETURN(std::optional<double> v, OptNum(j, key, where));
  if (!v) return InvalidArgument(fmt::format("{}.{}: missing", where, key));
  return *v;
}

// Closed loop, latdoc sweep's round size (loadgen/sweep.cc, MeasureStep): the smallest multiple
// of the concurrency >= min_requests / 2; rate mode: min_requests / 2.
int RoundSize(bool rate_mode, double load, int min_requests) {
  const int half = (min_requests + 1) / 2;
  const int c = std::max(1, int(load));
  return rate_mode ? half : c * ((half + c - 1) / c);
}

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

constexpr const char* kMetrics[] = {"median_itl_ms", "median_ttft_ms", "p99_ttft_ms",
                                    "output_throughput"};
// p99 of a few dozen requests is their slowest: it counts half.
constexpr double kWeights[] = {1.0, 1.0, 0.5, 1.0};

std::optional<double> MeasuredMetric(const MeasuredPoint& p, int k) {
  switch (k) {
    case 0: return p.median_itl_ms;
    case 1: return p.median_ttft_ms;
    case 2: return p.p99_ttft_ms;
    default: return p.output_throughput > 0 ? std::optional<double>(p.output_throughput) : std::nullopt;
  }
}

double PredictedMetric(const RunMetrics& m, int k) {
  switch (k) {
    case 0: return m.median_itl_ms;
    case 1: return m.median_ttft_ms;
    case 2: return m.p99_ttft_ms;
    default: return m.output_throughput;
  }
}

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
};

double Cost(const std::vector<double>& r) {
  double s = 0;
  for (double v : r) s += v * v;
  return s;
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
  const std::string& src = opt.source_name;
  if (!input.is_object()) return InvalidArgument(fmt::format("{}: expected a JSON object", src));
  const json* doc = &input;
  std::string where = src;
  std::string schema = input.value("schema", std::string());
  const bool diagnosis = schema == "latdoc.diagnose/1";
  if (diagnosis) {
    auto it = input.find("sweep");
    if (it == input.end() || !it->is_object()) {
      return InvalidArgument(fmt::format(
          "{}: no \"sweep\": a diagnosis has two load points (baseline and load), too few to fit "
          "the step time; run `latdoc diagnose --sweep` or `latdoc sweep`", src));
    }
    doc = &*it;
    where = src + ": sweep";
    schema = doc->value("schema", std::string());
  }
  if (schema != "latdoc.sweep/1") {
    return InvalidArgument(fmt::format("{}: schema \"{}\": expected latdoc.sweep/1 or latdoc.diagnose/1",
                                       where, schema));
  }
  Calibration cal;
  cal.source = src;
  cal.flags = opt.flags;
  if (!opt.server.empty()) {
    cal.server = opt.server;
  } else {
    auto recs = doc->find("recommendations");
    const bool llama_sweep = recs != doc->end() && recs->is_object() && recs->contains("parallel");
    bool llama_diag = false;
    if (auto b = input.find("bench"); diagnosis && b != input.end() && b->is_object()) {
      auto k = b->find("server_kind");
      llama_diag = k != b->end() && k->is_object() && k->value("id", std::string()) == kServerLlamaCpp;
    }
    if (llama_sweep || llama_diag) cal.server = kServerLlamaCpp;
  }
  const bool llama = cal.server == kServerLlamaCpp;
  cal.rate_mode = doc->value("mode", std::string()) == "request_rate";
  const char* load_key = cal.rate_mode ? "request_rate" : "concurrency";

  // The workload: the sweep writes it since latdoc.sweep/1 gained "workload"; older documents
  // lack it and cannot be calibrated on (the lengths drive every step time).
  auto wl = doc->find("workload");
  if (wl == doc->end() || !wl->is_object()) {
    return InvalidArgument(fmt::format(
        "{}: no \"workload\" (input and output lengths): written by latdoc sweep since this "
        "version; sweep again", where));
  }
  {
    const std::string w = where + ": workload";
    ASSIGN_OR_RETURN(double in, Num(*wl, "input_len", w));
    ASSIGN_OR_RETURN(double out, Num(*wl, "output_len", w));
    ASSIGN_OR_RETURN(std::optional<double> rr, OptNum(*wl, "range_ratio", w));
    if (in < 1 || out < 1) return InvalidArgument(fmt::format("{}: lengths must be at least 1", w));
    cal.workload.input_len = int(in);
    cal.workload.output_len = int(out);
    cal.workload.range_ratio = std::clamp(rr.value_or(0), 0.0, 0.99);
    if (wl->value("dataset", std::string()) != "random") {
      cal.notes.push_back("the sweep's prompts came from a dataset; the model replays random "
                          "prompts of the dataset's mean lengths");
    }
  }
  int min_requests = 32;
  if (auto st = doc->find("stability"); st != doc->end() && st->is_object()) {
    ASSIGN_OR_RETURN(std::optional<double> mr, OptNum(*st, "min_requests", where + ": stability"));
    if (mr && *mr >= 1) min_requests = int(*mr);
  }
  auto steps = doc->find("steps");
  if (steps == doc->end() || !steps->is_array()) {
    return InvalidArgument(fmt::format("{}: steps: expected an array", where));
  }
  int skipped_failed = 0;
  for (size_t i = 0; i < steps->size(); ++i) {
    const json& s = (*steps)[i];
    const std::string w = fmt::format("{}: steps[{}]", where, i);
    if (!s.is_object()) return InvalidArgument(w + ": expected an object");
    MeasuredPoint p;
    ASSIGN_OR_RETURN(p.load, Num(s, load_key, w));
    ASSIGN_OR_RETURN(double requests, Num(s, "requests", w));
    ASSIGN_OR_RETURN(std::optional<double> failed, OptNum(s, "failed", w));
    ASSIGN_OR_RETURN(p.median_ttft_ms, OptNum(s, "median_ttft_ms", w));
    ASSIGN_OR_RETURN(p.p99_ttft_ms, OptNum(s, "p99_ttft_ms", w));
    ASSIGN_OR_RETURN(p.median_itl_ms, OptNum(s, "median_itl_ms", w));
    ASSIGN_OR_RETURN(p.p99_itl_ms, OptNum(s, "p99_itl_ms", w));
    ASSIGN_OR_RETURN(p.output_throughput, Num(s, "output_throughput", w));
    if (auto sm = s.find("server_metrics"); sm != s.end() && sm->is_object()) {
      const std::string ws = w + ".server_metrics";
      ASSIGN_OR_RETURN(p.max_running, OptNum(*sm, "max_running", ws));
      ASSIGN_OR_RETURN(p.max_kv_cache_usage, OptNum(*sm, "max_kv_cache_usage", ws));
      ASSIGN_OR_RETURN(p.step_time_ms, OptNum(*sm, "step_time_ms", ws));
      ASSIGN_OR_RETURN(p.prefill_mean_ms, OptNum(*sm, "prefill_mean_ms", ws));
      ASSIGN_OR_RETURN(p.queue_mean_ms, OptNum(*sm, "queue_mean_ms", ws));
    }
    if (p.load <= 0 || requests < 1) return InvalidArgument(w + ": load and requests must be positive");
    if (failed.value_or(0) > 0 || p.output_throughput <= 0 || !p.median_itl_ms) {
      ++skipped_failed;
      continue;
    }
    p.requests = int(requests);
    p.round_requests = RoundSize(cal.rate_mode, p.load, min_requests);
    p.rounds = std::max(1, (p.requests + p.round_requests - 1) / p.round_requests);
    if (p.rounds == 1) p.round_requests = p.requests;
    cal.points.push_back(p);
  }
  // A diagnosis's baseline (concurrency 1) and load step: one bench run each, closed loop, of
  // the sweep's workload lengths.
  if (diagnosis && !cal.rate_mode) {
    for (const auto& [key, name] : {std::pair{"baseline", "baseline"}, std::pair{"bench", "load"}}) {
      auto b = input.find(key);
      if (b == input.end() || !b->is_object()) continue;
      const std::string w = src + ": " + key;
      MeasuredPoint p;
      p.from = name;
      ASSIGN_OR_RETURN(std::optional<double> conc, OptNum(*b, "max_concurrency", w));
      ASSIGN_OR_RETURN(std::optional<double> completed, OptNum(*b, "completed", w));
      ASSIGN_OR_RETURN(std::optional<double> failed, OptNum(*b, "failed", w));
      ASSIGN_OR_RETURN(p.median_ttft_ms, OptNum(*b, "median_ttft_ms", w));
      ASSIGN_OR_RETURN(p.p99_ttft_ms, OptNum(*b, "p99_ttft_ms", w));
      ASSIGN_OR_RETURN(p.median_itl_ms, OptNum(*b, "median_itl_ms", w));
      ASSIGN_OR_RETURN(p.p99_itl_ms, OptNum(*b, "p99_itl_ms", w));
      ASSIGN_OR_RETURN(std::optional<double> tput, OptNum(*b, "output_throughput", w));
      if (!conc || *conc < 1 || !completed || *completed < 1 || failed.value_or(0) > 0 || !tput ||
          *tput <= 0 || !p.median_itl_ms) {
        continue;
      }
      p.load = *conc;
      p.output_throughput = *tput;
      p.requests = p.round_requests = int(*completed);
      p.rounds = 1;
      cal.points.push_back(p);
    }
  }
  std::stable_sort(cal.points.begin(), cal.points.end(),
            [](const MeasuredPoint& a, const MeasuredPoint& b) { return a.load < b.load; });
  if (skipped_failed > 0) {
    cal.notes.push_back(fmt::format("{} step(s) left out: failed requests or no ITL", skipped_failed));
  }

  // --- limits and KV, measured or given -------------------------------------------------------
  sim::EngineConfig& e = cal.engine;
  e.block_size = opt.flags.block_size.value_or(16);
  e.enable_chunked_prefill = opt.flags.enable_chunked_prefill.value_or(true);
  double max_running = 0;
  bool queued_at_plateau = false;
  for (const MeasuredPoint& p : cal.points) max_running = std::max(max_running, p.max_running.value_or(0));
  std::optional<double> plateau;
  if (auto v = doc->find("server_max_num_seqs"); v != doc->end() && v->is_number()) plateau = v->get<double>();
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
  if (auto sf = doc->find("server_flags"); sf != doc->end() && sf->is_object()) {
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
  // KV blocks: at the step with the highest KV usage u and R running, each sequence holds about
  // ceil((input + output/2) / block_size) blocks: blocks = R x that / u. The spread of a
  // sequence's length over its life (input .. input + output) is the uncertainty.
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

  if (cal.points.size() < 3) {
    cal.refusal = fmt::format("{} usable step(s): at least 3 are needed to fit the step time",
                              cal.points.size());
    return cal;
  }

  // --- initial guess from the server's step time (or the client's ITL) vs the batch -----------
  // Mean step ~ a + N x (b + c x in / out) at N decoding sequences (a request's prompt is
  // spread over its `out` steps); TTFT at the lowest load ~ a + c x in.
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
  Vec x = {std::log(a0), std::log(b0 * 1e3), std::log(c0 * 1e3), f0};

  // --- Levenberg-Marquardt on the replayed sweep ---------------------------------------------
  Fitter fit{cal};
  ASSIGN_OR_RETURN(std::vector<double> r, fit.Residuals(x));
  double cost = Cost(r);
  double lambda = 1e-2;
  std::vector<std::array<double, 4>> jac;
  auto jacobian = [&](const Vec& at, const std::vector<double>& r0) -> Status {
    jac.assign(r0.size(), {});
    for (int k = 0; k < 4; ++k) {
      Vec xh = at;
      double h = k < 3 ? 0.05 : std::max(0.02 * std::exp(at[0]), 0.05 * at[3]);
      xh[k] += h;
      ASSIGN_OR_RETURN(std::vector<double> rh, fit.Residuals(xh));
      if (rh.size() != r0.size()) return Internal("residual count changed");
      for (size_t i = 0; i < r0.size(); ++i) jac[i][k] = (rh[i] - r0[i]) / h;
    }
    return Status::Ok();
  };
  for (int iter = 0; iter < 12; ++iter) {
    RETURN_IF_ERROR(jacobian(x, r));
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

  // --- uncertainty: s^2 (J^T J)^-1 at the optimum ---------------------------------------------
  RETURN_IF_ERROR(jacobian(x, r));
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
  auto sd = [&](int k) { return std::sqrt(std::max(0.0, cal.cov[k][k])); };
  cal.parameters.insert(cal.parameters.begin(),
                        {{"step_base_ms", e.step_base_ms, e.step_base_ms * sd(0), "fit"},
                         {"step_decode_seq_us", e.step_decode_seq_us, e.step_decode_seq_us * sd(1), "fit"},
                         {"step_prefill_token_us", e.step_prefill_token_us, e.step_prefill_token_us * sd(2), "fit"},
                         {"front_ms", cal.front_ms, sd(3), "fit"}});

  // --- how well the fitted model reproduces each point ----------------------------------------
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
  return cal;
}

// --- the calibration document -----------------------------------------------------------------

ordered_json CalibrationJson(const Calibration& c) {
  ordered_json j;
  j["schema"] = "latdoc.calibration/1";
  j["source"] = c.source;
  j["server"] = c.server;
  j["usable"] = c.usable;
  j["refusal"] = c.usable ? ordered_json(nullptr) : ordered_json(c.refusal);
  j["mode"] = c.rate_mode ? "request_rate" : "concurrency";
  j["workload"] = {{"input_len", c.workload.input_len}, {"output_len", c.workload.output_len},
                   {"range_ratio", c.workload.range_ratio}};
  const sim::EngineConfig& e = c.engine;
  j["model"] = {{"step_base_ms", e.step_base_ms},
                {"step_decode_seq_us", e.step_decode_seq_us},
                {"step_prefill_token_us", e.step_prefill_token_us},
                {"step_context_token_ns", e.step_context_token_ns},
                {"front_ms", c.front_ms},
                {"max_num_seqs", e.max_num_seqs},
                {"max_num_batched_tokens", e.max_num_batched_tokens},
                {"enable_chunked_prefill", e.enable_chunked_prefill},
                {"block_size", e.block_size},
                {"num_gpu_blocks", e.num_gpu_blocks_override},
                {"ctx_size", c.ctx_size ? ordered_json(*c.ctx_size) : ordered_json(nullptr)}};
  ordered_json cov = ordered_json::array();
  for (const auto& row : c.cov) cov.push_back(ordered_json(row));
  j["covariance"] = {{"of", {"ln step_base_ms", "ln step_decode_seq_us", "ln step_prefill_token_us", "front_ms"}},
                     {"matrix", cov}};
  ordered_json params = ordered_json::array();
  for (const Parameter& p : c.parameters) {
    params.push_back({{"name", p.name}, {"value", p.value},
                      {"sigma", p.sigma ? ordered_json(*p.sigma) : ordered_json(nullptr)},
                      {"source", p.source}});
  }
  j["parameters"] = params;
  j["fit"] = {{"rms_rel_err", {{"ttft", c.rms_ttft}, {"itl", c.rms_itl}, {"output_throughput", c.rms_throughput}}},
              {"max_abs_rel_err", c.max_abs_err},
              {"limits", {{"ttft", kMaxTtftRmsErr}, {"itl", kMaxItlRmsErr}, {"output_throughput", kMaxThroughputRmsErr}}}};
  ordered_json errs = ordered_json::array();
  for (const PointError& pe : c.errors) {
    errs.push_back({{"point", pe.point}, {"load", pe.load}, {"metric", pe.metric}, {"measured", pe.measured},
                    {"predicted", pe.predicted}, {"rel_err", pe.rel_err}});
  }
  j["errors"] = errs;
  ordered_json pts = ordered_json::array();
  auto opt = [](const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); };
  for (const MeasuredPoint& p : c.points) {
    pts.push_back({{"from", p.from}, {"load", p.load}, {"requests", p.requests}, {"round_requests", p.round_requests},
                   {"rounds", p.rounds}, {"median_ttft_ms", opt(p.median_ttft_ms)},
                   {"p99_ttft_ms", opt(p.p99_ttft_ms)}, {"median_itl_ms", opt(p.median_itl_ms)},
                   {"p99_itl_ms", opt(p.p99_itl_ms)}, {"output_throughput", p.output_throughput},
                   {"max_running", opt(p.max_running)}, {"max_kv_cache_usage", opt(p.max_kv_cache_usage)}});
  }
  j["points"] = pts;
  j["notes"] = c.notes;
  return j;
}

StatusOr<Calibration> CalibrationFromJson(const json& doc, std::string_view where_sv) {
  const std::string where(where_sv);
  if (!doc.is_object() || doc.value("schema", std::string()) != "latdoc.calibration/1") {
    return InvalidArgument(where + ": schema: expected latdoc.calibration/1 (written by latdoc calibrate --json)");
  }
  Calibration c;
  c.source = doc.value("source", std::string());
  if (auto sv = doc.find("server"); sv != doc.end() && !sv->is_null()) {
    if (!sv->is_string() || (*sv != kServerVllm && *sv != kServerLlamaCpp)) {
      return InvalidArgument(where + ": server: expected \"vllm\" or \"llamacpp\"");
    }
    c.server = sv->get<std::string>();
  }
  if (!doc.contains("usable") || !doc["usable"].is_boolean()) return InvalidArgument(where + ": usable: expected true or false");
  c.usable = doc["usable"].get<bool>();
  if (doc.contains("refusal") && doc["refusal"].is_string()) c.refusal = doc["refusal"].get<std::string>();
  c.rate_mode = doc.value("mode", std::string()) == "request_rate";
  auto wl = doc.find("workload");
  if (wl == doc.end() || !wl->is_object()) return InvalidArgument(where + ": workload: expected an object");
  ASSIGN_OR_RETURN(double in, Num(*wl, "input_len", where + ": workload"));
  ASSIGN_OR_RETURN(double out, Num(*wl, "output_len", where + ": workload"));
  ASSIGN_OR_RETURN(std::optional<double> rr, OptNum(*wl, "range_ratio", where + ": workload"));
  c.workload.input_len = int(in), c.workload.output_len = int(out), c.workload.range_ratio = rr.value_or(0);
  auto m = doc.find("model");
  if (m == doc.end() || !m->is_object()) return InvalidArgument(where + ": model: expected an object");
  const std::string wm = where + ": model";
  sim::EngineConfig& e = c.engine;
  ASSIGN_OR_RETURN(e.step_base_ms, Num(*m, "step_base_ms", wm));
  ASSIGN_OR_RETURN(e.step_decode_seq_us, Num(*m, "step_decode_seq_us", wm));
  ASSIGN_OR_RETURN(e.step_prefill_token_us, Num(*m, "step_prefill_token_us", wm));
  ASSIGN_OR_RETURN(e.step_context_token_ns, Num(*m, "step_context_token_ns", wm));
  ASSIGN_OR_RETURN(c.front_ms, Num(*m, "front_ms", wm));
  ASSIGN_OR_RETURN(double mns, Num(*m, "max_num_seqs", wm));
  ASSIGN_OR_RETURN(double mbt, Num(*m, "max_num_batched_tokens", wm));
  ASSIGN_OR_RETURN(double bs, Num(*m, "block_size", wm));
  ASSIGN_OR_RETURN(double blocks, Num(*m, "num_gpu_blocks", wm));
  if (!m->contains("enable_chunked_prefill") || !(*m)["enable_chunked_prefill"].is_boolean())
    return InvalidArgument(wm + ".enable_chunked_prefill: expected true or false");
  e.enable_chunked_prefill = (*m)["enable_chunked_prefill"].get<bool>();
  e.max_num_seqs = int(mns), e.max_num_batched_tokens = int(mbt), e.block_size = int(bs);
  e.num_gpu_blocks_override = int(blocks);
  ASSIGN_OR_RETURN(std::optional<double> ctx, OptNum(*m, "ctx_size", wm));
  if (ctx) {
    if (*ctx < 1) return InvalidArgument(wm + ".ctx_size: expected an integer >= 1");
    c.ctx_size = int(*ctx);
  }
  if (e.step_base_ms <= 0 || e.step_decode_seq_us < 0 || e.step_prefill_token_us < 0 || c.front_ms < 0 ||
      e.max_num_seqs < 1 || e.max_num_batched_tokens < 1 || e.block_size < 1 || e.num_gpu_blocks_override < 1) {
    return InvalidArgument(wm + ": a step cost is negative or a limit below 1");
  }
  if (auto cv = doc.find("covariance"); cv != doc.end() && cv->is_object() && cv->contains("matrix")) {
    const json& mx = (*cv)["matrix"];
    if (!mx.is_array() || mx.size() != 4) return InvalidArgument(where + ": covariance.matrix: expected 4 rows");
    for (int i = 0; i < 4; ++i) {
      if (!mx[i].is_array() || mx[i].size() != 4) return InvalidArgument(fmt::format("{}: covariance.matrix[{}]: expected 4 numbers", where, i));
      for (int k = 0; k < 4; ++k) {
        if (!mx[i][k].is_number()) return InvalidArgument(fmt::format("{}: covariance.matrix[{}][{}]: expected a number", where, i, k));
        c.cov[i][k] = mx[i][k].get<double>();
      }
    }
  }
  if (auto f = doc.find("fit"); f != doc.end() && f->is_object() && f->contains("rms_rel_err")) {
    const json& r = (*f)["rms_rel_err"];
    c.rms_ttft = r.value("ttft", 0.0), c.rms_itl = r.value("itl", 0.0), c.rms_throughput = r.value("output_throughput", 0.0);
  }
  if (auto pts = doc.find("points"); pts != doc.end() && pts->is_array()) {
    for (size_t i = 0; i < pts->size(); ++i) {
      const json& p = (*pts)[i];
      const std::string wp = fmt::format("{}: points[{}]", where, i);
      if (!p.is_object()) return InvalidArgument(wp + ": expected an object");
      MeasuredPoint mp;
      mp.from = p.value("from", std::string("sweep"));
      ASSIGN_OR_RETURN(mp.load, Num(p, "load", wp));
      ASSIGN_OR_RETURN(mp.median_ttft_ms, OptNum(p, "median_ttft_ms", wp));
      ASSIGN_OR_RETURN(mp.p99_ttft_ms, OptNum(p, "p99_ttft_ms", wp));
      ASSIGN_OR_RETURN(mp.median_itl_ms, OptNum(p, "median_itl_ms", wp));
      ASSIGN_OR_RETURN(mp.p99_itl_ms, OptNum(p, "p99_itl_ms", wp));
      ASSIGN_OR_RETURN(mp.output_throughput, Num(p, "output_throughput", wp));
      c.points.push_back(mp);
    }
  }
  if (auto notes = doc.find("notes"); notes != doc.end() && notes->is_array()) {
    for (const auto& n : *notes)
      if (n.is_string()) c.notes.push_back(n.get<std::string>());
  }
  if (auto ps = doc.find("parameters"); ps != doc.end() && ps->is_array()) {
    for (const auto& p : *ps) {
      if (!p.is_object()) continue;
      Parameter q;
      q.name = p.value("name", std::string());
      q.value = p.value("value", 0.0);
      if (p.contains("sigma") && p["sigma"].is_number()) q.sigma = p["sigma"].get<double>();
      q.source = p.value("source", std::string());
      c.parameters.push_back(q);
    }
  }
  return c;
}

std::string CalibrationText(const Calibration& c) {
  std::string s = fmt::format("Calibration of {} ({}{} steps, input {} / output {} tokens)\n",
                              c.source, c.server == kServerLlamaCpp ? "llama.cpp, " : "",
                              c.points.size(), c.workload.input_len, c.workload.output_len);
  s += "Parameters:\n";
  for (const Parameter& p : c.parameters) {
    std::string sigma = p.sigma ? fmt::format(" ± {:.3g}", *p.sigma) : std::string();
    if (p.sigma && p.value != 0) sigma += fmt::format(" ({:.0f}%)", 100 * *p.sigma / std::fabs(p.value));
    s += fmt::format("  {:<24} {:>10.4g}{:<20} {}\n", p.name, p.value, sigma, p.source);
  }
  if (!c.errors.empty()) {
    s += "How the model reproduces the sweep (predicted vs measured):\n";
    s += fmt::format("  {:>8} {:>22} {:>22} {:>22} {:>22}\n", c.rate_mode ? "rate" : "conc",
                     "median ITL ms", "median TTFT ms", "p99 TTFT ms", "tokens/s");
    for (size_t i = 0; i < c.points.size(); ++i) {
      const MeasuredPoint& p = c.points[i];
      s += fmt::format("  {:>8g}", p.load);
      for (const char* metric : kMetrics) {
        auto e = std::find_if(c.errors.begin(), c.errors.end(), [&](const PointError& pe) {
          return pe.point == i && pe.metric == metric;
        });
        s += fmt::format(" {:>22}", e == c.errors.end()
                                        ? std::string("n/a")
                                        : fmt::format("{:.4g}/{:.4g} {:+.0f}%", e->predicted,
                                                      e->measured, 100 * e->rel_err));
      }
      if (p.from != "sweep") s += " (" + p.from + ")";
      s += "\n";
    }
    s += fmt::format("RMS error: TTFT {:.1f}%, ITL {:.1f}%, tokens/s {:.1f}% (limits {:.0f}%, {:.0f}%, {:.0f}%)\n",
                     100 * c.rms_ttft, 100 * c.rms_itl, 100 * c.rms_throughput, 100 * kMaxTtftRmsErr,
                     100 * kMaxItlRmsErr, 100 * kMaxThroughputRmsErr);
  }
  for (const std::string& n : c.notes) s += "Note: " + n + "\n";
  s += c.usable ? "Usable for prediction (latdoc whatif --calibration ...)\n"
                : "Not usable for prediction: " + c.refusal + "\n";
  return s;
}

}  // namespace latdoc::whatif
