// The calibration document (schema latdoc.calibration/1), read back, and its terminal text.
#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "loadgen/load_facts.h"
#include "whatif/calibration.h"
#include "whatif/calibration_internal.h"

namespace latdoc::whatif {

using nlohmann::json;
using nlohmann::ordered_json;
using namespace internal;  // NOLINT: the calibration's own parts
namespace keys = loadgen::keys;

ordered_json CalibrationJson(const Calibration& c) {
  ordered_json j;
  j["schema"] = "latdoc.calibration/1";
  j["source"] = c.source;
  j["server"] = c.server;
  j["usable"] = c.usable;
  j["refusal"] = c.usable ? ordered_json(nullptr) : ordered_json(c.refusal);
  j["mode"] = c.rate_mode ? "request_rate" : "concurrency";
  j["workload"] = {{"input_len", c.workload.input_len},
                   {"output_len", c.workload.output_len},
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
  j["covariance"] = {
      {"of", {"ln step_base_ms", "ln step_decode_seq_us", "ln step_prefill_token_us", "front_ms"}},
      {"matrix", cov}};
  ordered_json params = ordered_json::array();
  for (const Parameter& p : c.parameters) {
    params.push_back({{"name", p.name},
                      {"value", p.value},
                      {"sigma", p.sigma ? ordered_json(*p.sigma) : ordered_json(nullptr)},
                      {"source", p.source}});
  }
  j["parameters"] = params;
  j["fit"] = {
      {"rms_rel_err",
       {{"ttft", c.rms_ttft}, {"itl", c.rms_itl}, {keys::kOutputThroughput, c.rms_throughput}}},
      {"max_abs_rel_err", c.max_abs_err},
      {"limits",
       {{"ttft", kMaxTtftRmsErr},
        {"itl", kMaxItlRmsErr},
        {keys::kOutputThroughput, kMaxThroughputRmsErr}}}};
  ordered_json errs = ordered_json::array();
  for (const PointError& pe : c.errors) {
    errs.push_back({{"point", pe.point},
                    {"load", pe.load},
                    {"metric", pe.metric},
                    {"measured", pe.measured},
                    {"predicted", pe.predicted},
                    {"rel_err", pe.rel_err}});
  }
  j["errors"] = errs;
  ordered_json pts = ordered_json::array();
  auto opt = [](const std::optional<double>& v) {
    return v ? ordered_json(*v) : ordered_json(nullptr);
  };
  for (const MeasuredPoint& p : c.points) {
    pts.push_back({{"from", p.from},
                   {"load", p.load},
                   {"requests", p.requests},
                   {"round_requests", p.round_requests},
                   {"rounds", p.rounds},
                   {keys::kMedianTtftMs, opt(p.median_ttft_ms)},
                   {keys::kP99TtftMs, opt(p.p99_ttft_ms)},
                   {keys::kMedianItlMs, opt(p.median_itl_ms)},
                   {keys::kP99ItlMs, opt(p.p99_itl_ms)},
                   {keys::kOutputThroughput, p.output_throughput},
                   {keys::kMaxRunning, opt(p.max_running)},
                   {keys::kMaxKvCacheUsage, opt(p.max_kv_cache_usage)}});
  }
  j["points"] = pts;
  j["notes"] = c.notes;
  return j;
}

namespace {

// CalibrationFromJson's parts: the fitted model ("model"), the covariance of its parameters and
// the measured points. Errors: kInvalidArgument "WHERE: KEY: what is wrong".
Status ReadModel(const json& m, const std::string& wm, Calibration& c) {
  sim::EngineConfig& e = c.engine;
  ASSIGN_OR_RETURN(e.step_base_ms, Num(m, "step_base_ms", wm));
  ASSIGN_OR_RETURN(e.step_decode_seq_us, Num(m, "step_decode_seq_us", wm));
  ASSIGN_OR_RETURN(e.step_prefill_token_us, Num(m, "step_prefill_token_us", wm));
  ASSIGN_OR_RETURN(e.step_context_token_ns, Num(m, "step_context_token_ns", wm));
  ASSIGN_OR_RETURN(c.front_ms, Num(m, "front_ms", wm));
  ASSIGN_OR_RETURN(double mns, Num(m, "max_num_seqs", wm));
  ASSIGN_OR_RETURN(double mbt, Num(m, "max_num_batched_tokens", wm));
  ASSIGN_OR_RETURN(double bs, Num(m, "block_size", wm));
  ASSIGN_OR_RETURN(double blocks, Num(m, "num_gpu_blocks", wm));
  if (!m.contains("enable_chunked_prefill") || !m["enable_chunked_prefill"].is_boolean())
    return InvalidArgument(wm + ".enable_chunked_prefill: expected true or false");
  e.enable_chunked_prefill = m["enable_chunked_prefill"].get<bool>();
  e.max_num_seqs = int(mns), e.max_num_batched_tokens = int(mbt), e.block_size = int(bs);
  e.num_gpu_blocks_override = int(blocks);
  ASSIGN_OR_RETURN(std::optional<double> ctx, OptNum(m, "ctx_size", wm));
  if (ctx) {
    if (*ctx < 1) return InvalidArgument(wm + ".ctx_size: expected an integer >= 1");
    c.ctx_size = int(*ctx);
  }
  if (e.step_base_ms <= 0 || e.step_decode_seq_us < 0 || e.step_prefill_token_us < 0 ||
      c.front_ms < 0 || e.max_num_seqs < 1 || e.max_num_batched_tokens < 1 || e.block_size < 1 ||
      e.num_gpu_blocks_override < 1) {
    return InvalidArgument(wm + ": a step cost is negative or a limit below 1");
  }
  return Status::Ok();
}

Status ReadCovariance(const json& doc, const std::string& where, Calibration& c) {
  if (auto cv = doc.find("covariance");
      cv != doc.end() && cv->is_object() && cv->contains("matrix")) {
    const json& mx = (*cv)["matrix"];
    if (!mx.is_array() || mx.size() != 4)
      return InvalidArgument(where + ": covariance.matrix: expected 4 rows");
    for (int i = 0; i < 4; ++i) {
      if (!mx[i].is_array() || mx[i].size() != 4)
        return InvalidArgument(
            fmt::format("{}: covariance.matrix[{}]: expected 4 numbers", where, i));
      for (int k = 0; k < 4; ++k) {
        if (!mx[i][k].is_number())
          return InvalidArgument(
              fmt::format("{}: covariance.matrix[{}][{}]: expected a number", where, i, k));
        c.cov[i][k] = mx[i][k].get<double>();
      }
    }
  }
  return Status::Ok();
}

Status ReadCalibrationPoints(const json& doc, const std::string& where, Calibration& c) {
  if (auto pts = doc.find("points"); pts != doc.end() && pts->is_array()) {
    for (size_t i = 0; i < pts->size(); ++i) {
      const json& p = (*pts)[i];
      const std::string wp = fmt::format("{}: points[{}]", where, i);
      if (!p.is_object()) return InvalidArgument(wp + ": expected an object");
      MeasuredPoint mp;
      mp.from = p.value("from", std::string("sweep"));
      ASSIGN_OR_RETURN(mp.load, Num(p, "load", wp));
      ASSIGN_OR_RETURN(mp.median_ttft_ms, OptNum(p, keys::kMedianTtftMs, wp));
      ASSIGN_OR_RETURN(mp.p99_ttft_ms, OptNum(p, keys::kP99TtftMs, wp));
      ASSIGN_OR_RETURN(mp.median_itl_ms, OptNum(p, keys::kMedianItlMs, wp));
      ASSIGN_OR_RETURN(mp.p99_itl_ms, OptNum(p, keys::kP99ItlMs, wp));
      ASSIGN_OR_RETURN(mp.output_throughput, Num(p, keys::kOutputThroughput, wp));
      c.points.push_back(mp);
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Calibration> CalibrationFromJson(const json& doc, std::string_view where_sv) {
  const std::string where(where_sv);
  if (!doc.is_object() || doc.value("schema", std::string()) != "latdoc.calibration/1") {
    return InvalidArgument(
        where + ": schema: expected latdoc.calibration/1 (written by latdoc calibrate --json)");
  }
  Calibration c;
  c.source = doc.value("source", std::string());
  if (auto sv = doc.find("server"); sv != doc.end() && !sv->is_null()) {
    if (!sv->is_string() || (*sv != kServerVllm && *sv != kServerLlamaCpp)) {
      return InvalidArgument(where + ": server: expected \"vllm\" or \"llamacpp\"");
    }
    c.server = sv->get<std::string>();
  }
  if (!doc.contains("usable") || !doc["usable"].is_boolean())
    return InvalidArgument(where + ": usable: expected true or false");
  c.usable = doc["usable"].get<bool>();
  if (doc.contains("refusal") && doc["refusal"].is_string())
    c.refusal = doc["refusal"].get<std::string>();
  c.rate_mode = doc.value("mode", std::string()) == "request_rate";
  auto wl = doc.find("workload");
  if (wl == doc.end() || !wl->is_object())
    return InvalidArgument(where + ": workload: expected an object");
  ASSIGN_OR_RETURN(double in, Num(*wl, "input_len", where + ": workload"));
  ASSIGN_OR_RETURN(double out, Num(*wl, "output_len", where + ": workload"));
  ASSIGN_OR_RETURN(std::optional<double> rr, OptNum(*wl, "range_ratio", where + ": workload"));
  c.workload.input_len = int(in), c.workload.output_len = int(out),
  c.workload.range_ratio = rr.value_or(0);
  auto m = doc.find("model");
  if (m == doc.end() || !m->is_object())
    return InvalidArgument(where + ": model: expected an object");
  RETURN_IF_ERROR(ReadModel(*m, where + ": model", c));
  RETURN_IF_ERROR(ReadCovariance(doc, where, c));
  if (auto f = doc.find("fit"); f != doc.end() && f->is_object() && f->contains("rms_rel_err")) {
    const json& r = (*f)["rms_rel_err"];
    c.rms_ttft = r.value("ttft", 0.0), c.rms_itl = r.value("itl", 0.0),
    c.rms_throughput = r.value(keys::kOutputThroughput, 0.0);
  }
  RETURN_IF_ERROR(ReadCalibrationPoints(doc, where, c));
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
    if (p.sigma && p.value != 0)
      sigma += fmt::format(" ({:.0f}%)", 100 * *p.sigma / std::fabs(p.value));
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
    s += fmt::format(
        "RMS error: TTFT {:.1f}%, ITL {:.1f}%, tokens/s {:.1f}% (limits {:.0f}%, {:.0f}%, "
        "{:.0f}%)\n",
        100 * c.rms_ttft, 100 * c.rms_itl, 100 * c.rms_throughput, 100 * kMaxTtftRmsErr,
        100 * kMaxItlRmsErr, 100 * kMaxThroughputRmsErr);
  }
  for (const std::string& n : c.notes) s += "Note: " + n + "\n";
  s += c.usable ? "Usable for prediction (latdoc whatif --calibration ...)\n"
                : "Not usable for prediction: " + c.refusal + "\n";
  return s;
}

}  // namespace latdoc::whatif
