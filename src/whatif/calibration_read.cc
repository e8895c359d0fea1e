// Reading a measured server into the calibration's points: a sweep's steps (latdoc.sweep/1) and
// a diagnosis's two bench runs, read as loadgen::LoadFacts.
#include <algorithm>

#include <fmt/core.h>

#include "loadgen/load_facts.h"
#include "whatif/calibration_internal.h"

namespace latdoc::whatif::internal {

using nlohmann::json;
namespace keys = loadgen::keys;

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

const char* const kMetrics[kFitMetrics] = {keys::kMedianItlMs, keys::kMedianTtftMs,
                                           keys::kP99TtftMs, keys::kOutputThroughput};

std::optional<double> MeasuredMetric(const MeasuredPoint& p, int k) {
  switch (k) {
    case 0:
      return p.median_itl_ms;
    case 1:
      return p.median_ttft_ms;
    case 2:
      return p.p99_ttft_ms;
    default:
      return p.output_throughput > 0 ? std::optional<double>(p.output_throughput) : std::nullopt;
  }
}

double PredictedMetric(const RunMetrics& m, int k) {
  switch (k) {
    case 0:
      return m.median_itl_ms;
    case 1:
      return m.median_ttft_ms;
    case 2:
      return m.p99_ttft_ms;
    default:
      return m.output_throughput;
  }
}

namespace {

// Closed loop, latdoc sweep's round size (loadgen/sweep.cc, MeasureStep): the smallest multiple
// of the concurrency >= min_requests / 2; rate mode: min_requests / 2.
int RoundSize(bool rate_mode, double load, int min_requests) {
  const int half = (min_requests + 1) / 2;
  const int c = std::max(1, int(load));
  return rate_mode ? half : c * ((half + c - 1) / c);
}

// One step of the sweep; nullopt when it cannot be a point (failed requests, no ITL).
StatusOr<std::optional<MeasuredPoint>> ReadStep(const json& s, const std::string& w,
                                                const char* load_key) {
  if (!s.is_object()) return InvalidArgument(w + ": expected an object");
  MeasuredPoint p;
  ASSIGN_OR_RETURN(p.load, Num(s, load_key, w));
  ASSIGN_OR_RETURN(double requests, Num(s, "requests", w));
  ASSIGN_OR_RETURN(std::optional<double> failed, OptNum(s, keys::kFailed, w));
  ASSIGN_OR_RETURN(p.median_ttft_ms, OptNum(s, keys::kMedianTtftMs, w));
  ASSIGN_OR_RETURN(p.p99_ttft_ms, OptNum(s, keys::kP99TtftMs, w));
  ASSIGN_OR_RETURN(p.median_itl_ms, OptNum(s, keys::kMedianItlMs, w));
  ASSIGN_OR_RETURN(p.p99_itl_ms, OptNum(s, keys::kP99ItlMs, w));
  ASSIGN_OR_RETURN(p.output_throughput, Num(s, keys::kOutputThroughput, w));
  if (auto sm = s.find(keys::kServerMetrics); sm != s.end() && sm->is_object()) {
    const std::string ws = w + "." + keys::kServerMetrics;
    ASSIGN_OR_RETURN(p.max_running, OptNum(*sm, keys::kMaxRunning, ws));
    ASSIGN_OR_RETURN(p.max_kv_cache_usage, OptNum(*sm, keys::kMaxKvCacheUsage, ws));
    ASSIGN_OR_RETURN(p.step_time_ms, OptNum(*sm, "step_time_ms", ws));
    ASSIGN_OR_RETURN(p.prefill_mean_ms, OptNum(*sm, keys::kPrefillMeanMs, ws));
    ASSIGN_OR_RETURN(p.queue_mean_ms, OptNum(*sm, keys::kQueueMeanMs, ws));
  }
  if (p.load <= 0 || requests < 1)
    return InvalidArgument(w + ": load and requests must be positive");
  if (failed.value_or(0) > 0 || p.output_throughput <= 0 || !p.median_itl_ms)
    return std::optional<MeasuredPoint>();
  p.requests = int(requests);
  return std::optional<MeasuredPoint>(p);
}

// The sweep's steps into cal.points; returns how many were left out.
StatusOr<int> ReadSweepSteps(const SweepSource& sweep, Calibration& cal) {
  const json& doc = *sweep.doc;
  int min_requests = 32;
  if (auto st = doc.find("stability"); st != doc.end() && st->is_object()) {
    ASSIGN_OR_RETURN(std::optional<double> mr,
                     OptNum(*st, "min_requests", sweep.where + ": stability"));
    if (mr && *mr >= 1) min_requests = int(*mr);
  }
  auto steps = doc.find("steps");
  if (steps == doc.end() || !steps->is_array()) {
    return InvalidArgument(fmt::format("{}: steps: expected an array", sweep.where));
  }
  const char* load_key = cal.rate_mode ? "request_rate" : "concurrency";
  int skipped_failed = 0;
  for (size_t i = 0; i < steps->size(); ++i) {
    ASSIGN_OR_RETURN(std::optional<MeasuredPoint> p,
                     ReadStep((*steps)[i], fmt::format("{}: steps[{}]", sweep.where, i), load_key));
    if (!p) {
      ++skipped_failed;
      continue;
    }
    p->round_requests = RoundSize(cal.rate_mode, p->load, min_requests);
    p->rounds = std::max(1, (p->requests + p->round_requests - 1) / p->round_requests);
    if (p->rounds == 1) p->round_requests = p->requests;
    cal.points.push_back(*p);
  }
  return skipped_failed;
}

// A diagnosis's baseline (concurrency 1) and load step: one bench run each, closed loop, of the
// sweep's workload lengths.
Status ReadDiagnosisRuns(const json& input, const std::string& src, Calibration& cal) {
  for (const auto& [key, name] : {std::pair{"baseline", "baseline"}, std::pair{"bench", "load"}}) {
    auto b = input.find(key);
    if (b == input.end() || !b->is_object()) continue;
    auto facts = loadgen::LoadFactsFromJson(nlohmann::ordered_json(*b));
    if (!facts.ok())
      return InvalidArgument(fmt::format("{}: {}.{}", src, key, facts.status().message()));
    const loadgen::LoadFacts& f = *facts;
    auto stat = [](const std::optional<loadgen::LatencyStats>& s,
                   bool median) -> std::optional<double> {
      if (!s) return std::nullopt;
      return median ? s->median_ms : s->p99_ms();
    };
    MeasuredPoint p;
    p.from = name;
    p.median_ttft_ms = stat(f.ttft, true);
    p.p99_ttft_ms = stat(f.ttft, false);
    p.median_itl_ms = stat(f.itl, true);
    p.p99_itl_ms = stat(f.itl, false);
    if (!f.max_concurrency || *f.max_concurrency < 1 || f.completed < 1 || f.failed > 0 ||
        !f.output_throughput || *f.output_throughput <= 0 || !p.median_itl_ms) {
      continue;
    }
    p.load = double(*f.max_concurrency);
    p.output_throughput = *f.output_throughput;
    p.requests = p.round_requests = int(f.completed);
    p.rounds = 1;
    cal.points.push_back(p);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<SweepSource> FindSweep(const json& input, const std::string& src) {
  if (!input.is_object()) return InvalidArgument(fmt::format("{}: expected a JSON object", src));
  SweepSource s{&input, src, false};
  std::string schema = input.value("schema", std::string());
  s.diagnosis = schema == "latdoc.diagnose/1";
  if (s.diagnosis) {
    auto it = input.find("sweep");
    if (it == input.end() || !it->is_object()) {
      return InvalidArgument(fmt::format(
          "{}: no \"sweep\": a diagnosis has two load points (baseline and load), too few to fit "
          "the step time; run `latdoc diagnose --sweep` or `latdoc sweep`",
          src));
    }
    s.doc = &*it;
    s.where = src + ": sweep";
    schema = s.doc->value("schema", std::string());
  }
  if (schema != "latdoc.sweep/1") {
    return InvalidArgument(fmt::format(
        "{}: schema \"{}\": expected latdoc.sweep/1 or latdoc.diagnose/1", s.where, schema));
  }
  return s;
}

std::string DetectServer(const json& input, const SweepSource& sweep, const CalibrateOptions& opt) {
  if (!opt.server.empty()) return opt.server;
  auto recs = sweep.doc->find("recommendations");
  const bool llama_sweep =
      recs != sweep.doc->end() && recs->is_object() && recs->contains("parallel");
  bool llama_diag = false;
  if (auto b = input.find("bench"); sweep.diagnosis && b != input.end() && b->is_object()) {
    // Tolerant here: a bench block that does not read is reported by ReadPoints, if it is used.
    auto facts = loadgen::LoadFactsFromJson(nlohmann::ordered_json(*b));
    llama_diag = facts.ok() && facts->server_kind && facts->server_kind->id == kServerLlamaCpp;
  }
  return llama_sweep || llama_diag ? kServerLlamaCpp : kServerVllm;
}

Status ReadWorkload(const SweepSource& sweep, Calibration& cal) {
  // The sweep writes it since latdoc.sweep/1 gained "workload"; older documents lack it and
  // cannot be calibrated on (the lengths drive every step time).
  auto wl = sweep.doc->find("workload");
  if (wl == sweep.doc->end() || !wl->is_object()) {
    return InvalidArgument(fmt::format(
        "{}: no \"workload\" (input and output lengths): written by latdoc sweep since this "
        "version; sweep again",
        sweep.where));
  }
  const std::string w = sweep.where + ": workload";
  ASSIGN_OR_RETURN(double in, Num(*wl, "input_len", w));
  ASSIGN_OR_RETURN(double out, Num(*wl, "output_len", w));
  ASSIGN_OR_RETURN(std::optional<double> rr, OptNum(*wl, "range_ratio", w));
  if (in < 1 || out < 1) return InvalidArgument(fmt::format("{}: lengths must be at least 1", w));
  cal.workload.input_len = int(in);
  cal.workload.output_len = int(out);
  cal.workload.range_ratio = std::clamp(rr.value_or(0), 0.0, 0.99);
  if (wl->value("dataset", std::string()) != "random") {
    cal.notes.push_back(
        "the sweep's prompts came from a dataset; the model replays random "
        "prompts of the dataset's mean lengths");
  }
  return Status::Ok();
}

Status ReadPoints(const json& input, const SweepSource& sweep, const std::string& src,
                  Calibration& cal) {
  ASSIGN_OR_RETURN(int skipped_failed, ReadSweepSteps(sweep, cal));
  if (sweep.diagnosis && !cal.rate_mode) RETURN_IF_ERROR(ReadDiagnosisRuns(input, src, cal));
  std::stable_sort(cal.points.begin(), cal.points.end(),
                   [](const MeasuredPoint& a, const MeasuredPoint& b) { return a.load < b.load; });
  if (skipped_failed > 0) {
    cal.notes.push_back(
        fmt::format("{} step(s) left out: failed requests or no ITL", skipped_failed));
  }
  return Status::Ok();
}

}  // namespace latdoc::whatif::internal
