#include "loadgen/sweep_report.h"

#include <cctype>
#include <cmath>

#include <fmt/core.h>

#include "base/units.h"
#include "loadgen/load_facts.h"

namespace latdoc::loadgen {

using nlohmann::ordered_json;

namespace {

ordered_json Opt(std::optional<double> v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

std::string Num(std::optional<double> v, int prec = 2) {
  return v ? FormatFixed(*v, prec) : std::string("n/a");
}

std::string Csv(std::optional<double> v) { return v ? fmt::format("{:.6g}", *v) : std::string(); }

std::string LoadText(double v) { return fmt::format("{:g}", v); }

const char* LoadKey(const SweepOptions& o) { return o.rate_mode ? "request_rate" : "concurrency"; }

ordered_json StepJson(const SweepStep& s, const SweepOptions& o) {
  ordered_json j;
  j[LoadKey(o)] = s.load;
  j["phase"] = s.phase;
  j["rounds"] = s.rounds;
  j["stable"] = s.stable;
  j["requests_spent"] = s.spent;
  j["requests"] = s.requests;
  j[keys::kCompleted] = s.completed;
  j[keys::kFailed] = s.failed;
  j["error_rate"] = s.error_rate();
  j["failures"] = s.failures;
  if (!s.first_error.empty()) j["first_error"] = s.first_error;
  j["duration"] = s.duration_s;
  j[keys::kMedianTtftMs] = Opt(s.median_ttft_ms);
  j[keys::kP99TtftMs] = Opt(s.p99_ttft_ms);
  j[keys::kP99TpotMs] = Opt(s.p99_tpot_ms);
  j[keys::kMedianItlMs] = Opt(s.median_itl_ms);
  j[keys::kP99ItlMs] = Opt(s.p99_itl_ms);
  j[keys::kP99E2elMs] = Opt(s.p99_e2el_ms);
  j[keys::kOutputThroughput] = s.output_tokens_per_s;
  j[keys::kRequestThroughput] = s.request_throughput;
  j[keys::kRequestGoodput] = Opt(s.goodput);
  j["slo_met"] = s.slo_met ? ordered_json(*s.slo_met) : ordered_json(nullptr);
  const ServerStepMetrics& m = s.server;
  ordered_json sm;
  sm["metrics_available"] = m.available;
  sm[keys::kMaxRunning] = Opt(m.max_running);
  sm[keys::kMaxWaiting] = Opt(m.max_waiting);
  sm[keys::kMaxKvCacheUsage] = Opt(m.max_kv_cache_usage);
  sm[keys::kPreemptions] = Opt(m.preemptions);
  sm[keys::kQueueMeanMs] = Opt(m.queue_mean_ms());
  sm[keys::kPrefillMeanMs] = Opt(m.prefill_mean_ms());
  sm["decode_mean_ms"] = Opt(m.decode_mean_ms());
  sm["step_time_ms"] = Opt(m.step_time_ms());
  j[keys::kServerMetrics] = sm;
  j["bend"] = BendName(s.bend);
  j["bend_evidence"] = s.bend_evidence;
  if (!s.remeasured.empty()) j["remeasured"] = s.remeasured;
  if (s.interrupted) j["interrupted"] = true;
  if (s.validation) j["validation"] = *s.validation;
  return j;
}

}  // namespace

ordered_json SweepJson(const SweepResult& r, const SweepOptions& o, const SweepContext& ctx) {
  ordered_json j;
  j["schema"] = "latdoc.sweep/1";
  j["date"] = ctx.date;
  j["url"] = ctx.url;
  j["model_id"] = r.model;
  j["mode"] = LoadKey(o);
  j["range"] = {{"lo", o.lo}, {"hi", o.hi}};
  j["knee_latency"] = KneeLatencyName(o.knee_latency);
  j["goal"] = o.goal == SweepGoal::kLatency ? "latency" : "throughput";
  if (o.slo.any()) {
    j["slo"] = {{"ttft_ms", Opt(o.slo.ttft_ms)}, {"tpot_ms", Opt(o.slo.tpot_ms)},
                {"e2el_ms", Opt(o.slo.e2el_ms)}, {"percent", o.slo.percent}};
  } else {
    j["slo"] = nullptr;
  }
  j["stability"] = {{"min_requests", o.min_requests}, {"max_requests", o.max_requests},
                    {"tolerance", o.stable_tolerance},
                    {"rule", "p99 of the knee latency over the last half of a step's requests "
                             "within tolerance of the p99 over all of them"}};
  ordered_json steps = ordered_json::array();
  for (size_t i = 0; i < r.steps.size(); ++i) {
    ordered_json sj = StepJson(r.steps[i], o);
    // Elasticity of the segment from this step to the next step the knee was judged on.
    ordered_json e = nullptr;
    for (size_t k = 0; k < r.knee_steps.size() && k < r.elasticity.size(); ++k) {
      if (r.knee_steps[k] == i) {
        double v = r.elasticity[k];
        e = std::isinf(v) ? ordered_json("inf") : ordered_json(v);
      }
    }
    sj["elasticity_to_next"] = e;
    steps.push_back(std::move(sj));
  }
  j["steps"] = steps;
  ordered_json knee = nullptr;
  if (r.knee_index) {
    knee = ordered_json::object();
    knee[LoadKey(o)] = r.steps[*r.knee_index].load;
    knee["reached"] = r.knee_reached;
    // The step past the knee's segment that confirmed the bend (null: nothing measured past it).
    knee["confirmed_by"] = r.knee_confirmed_by ? ordered_json(r.steps[*r.knee_confirmed_by].load)
                                               : ordered_json(nullptr);
    knee["bracket"] = {Opt(r.bracket_lo), Opt(r.bracket_hi)};
    knee["bend"] = BendName(r.knee_bend);
    knee["explanation"] = r.knee_explanation;
    knee["min_elasticity"] = o.min_elasticity;
    knee["definition"] = "the last step before the first segment where ln(tokens/s ratio) / "
                         "ln(p99 latency ratio) < min_elasticity";
  }
  j["knee"] = knee;
  j["highest_meeting_slo"] =
      r.highest_meeting_slo ? ordered_json(r.steps[*r.highest_meeting_slo].load) : ordered_json(nullptr);
  j["max_goodput"] = r.max_goodput ? ordered_json(r.steps[*r.max_goodput].load) : ordered_json(nullptr);
  j["server_max_num_seqs"] = r.server_max_num_seqs ? ordered_json(*r.server_max_num_seqs) : ordered_json(nullptr);
  j["step_time_fit"] = {{"base_ms", Opt(r.step_base_ms)}, {"per_seq_ms", Opt(r.step_per_seq_ms)}};
  ordered_json recs = ordered_json::object();
  for (const Recommendation& rec : r.recommendations) {
    std::string key = rec.flag.substr(2);
    for (char& c : key) if (c == '-') c = '_';
    recs[key] = {{"flag", rec.flag},
                 {"value", rec.value ? ordered_json(*rec.value) : ordered_json(nullptr)},
                 {"reason", rec.reason}};
  }
  recs["regimes"] = {{"low_load", r.low_load_regime}, {"high_load", r.high_load_regime}};
  j["recommendations"] = recs;
  j["requests_spent"] = r.requests_spent;
  j["stop_reason"] = r.stop_reason;
  j["partial"] = r.partial;
  if (r.partial) j["partial_reason"] = r.partial_reason;
  return j;
}

ordered_json SweepWorkloadJson(const RandomWorkloadOptions& w, const std::string& dataset) {
  return {{"dataset", dataset.empty() ? std::string("random") : dataset},
          {"input_len", w.input_len},
          {"output_len", w.output_len},
          {"range_ratio", w.range_ratio},
          {"prefix_len", w.prefix_len}};
}

std::string SweepCsv(const SweepResult& r, const SweepOptions& o) {
  std::string out = fmt::format(
      "{},phase,requests,completed,failed,stable,p99_ttft_ms,p99_tpot_ms,p99_itl_ms,p99_e2el_ms,"
      "output_throughput,request_goodput,slo_met,max_running,max_waiting,max_kv_cache_usage,"
      "preemptions,queue_mean_ms,prefill_mean_ms,decode_mean_ms,step_time_ms,bend,knee\n",
      LoadKey(o));
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const SweepStep& s = r.steps[i];
    const ServerStepMetrics& m = s.server;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{:.6g},{},{},{},{},{},{},{},{},{},{},{},{}\n", LoadText(s.load),
        s.phase, s.requests, s.completed, s.failed, s.stable ? 1 : 0, Csv(s.p99_ttft_ms),
        Csv(s.p99_tpot_ms), Csv(s.p99_itl_ms), Csv(s.p99_e2el_ms), s.output_tokens_per_s,
        Csv(s.goodput), s.slo_met ? (*s.slo_met ? "1" : "0") : "", Csv(m.max_running),
        Csv(m.max_waiting), Csv(m.max_kv_cache_usage), Csv(m.preemptions), Csv(m.queue_mean_ms()),
        Csv(m.prefill_mean_ms()), Csv(m.decode_mean_ms()), Csv(m.step_time_ms()), BendName(s.bend),
        r.knee_index && *r.knee_index == i ? 1 : 0);
  }
  return out;
}

std::string SweepTableHeader(const SweepOptions& o) {
  return fmt::format("{:>8} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>5} {:>5} {:>5} {:>8} {}\n",
                     o.rate_mode ? "rate" : "conc", "reqs", "fail", "p99TTFTms", "p99ITLms",
                     "p99E2ELms", "tok/s", "run", "wait", "kv%", "queuems",
                     o.slo.any() ? "slo" : "");
}

std::string SweepTableRow(const SweepStep& s, const SweepOptions& o) {
  const ServerStepMetrics& m = s.server;
  std::string slo = s.slo_met ? (*s.slo_met ? "met" : "MISSED") : "";
  return fmt::format("{:>8} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10.1f} {:>5} {:>5} {:>5} {:>8} {}{}\n",
                     LoadText(s.load), s.spent, s.failed, Num(s.p99_ttft_ms), Num(s.p99_itl_ms),
                     Num(s.p99_e2el_ms), s.output_tokens_per_s, FormatCount(m.max_running),
                     FormatCount(m.max_waiting),
                     m.max_kv_cache_usage ? fmt::format("{:.0f}", *m.max_kv_cache_usage * 100) : "n/a",
                     Num(m.queue_mean_ms()), slo, s.stable ? "" : (o.rate_mode ? " (unstable)" : " (unstable)"));
}

std::string SweepTable(const SweepResult& r, const SweepOptions& o) {
  std::string t = SweepTableHeader(o);
  for (size_t i = 0; i < r.steps.size(); ++i) {  // r.steps is in ascending load
    std::string row = SweepTableRow(r.steps[i], o);
    if (r.knee_index && *r.knee_index == i) {
      while (!row.empty() && (row.back() == '\n' || row.back() == ' ')) row.pop_back();
      row += "  <- knee\n";
    }
    t += row;
  }
  return t;
}

std::string SweepProgressLine(const SweepStep& s, int n, const SweepOptions& o) {
  std::string metric(KneeLatencyName(o.knee_latency));  // "e2el" -> "E2EL"
  for (char& c : metric) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::optional<double> p99 = s.KneeP99Ms(o.knee_latency);
  return fmt::format("step {} ({}): {} {}, {} requests{}, p99 {} {}, {:.1f} tokens/s{}\n", n, s.phase,
                     LoadText(s.load), o.rate_mode ? "req/s" : "concurrent", s.spent,
                     s.failed ? fmt::format(" ({} failed)", s.failed) : "", metric,
                     p99 ? Num(p99) + " ms" : "n/a", s.output_tokens_per_s,
                     s.interrupted ? " (interrupted)" : "");
}

std::string SweepSummaryText(const SweepResult& r, const SweepOptions& o) {
  std::string t;
  const char* unit = o.rate_mode ? "req/s" : "concurrent";
  if (r.partial) t += fmt::format("PARTIAL: {} after {} steps\n", r.partial_reason, r.steps.size());
  if (!r.stop_reason.empty()) t += fmt::format("Ladder stopped: {}\n", r.stop_reason);
  if (r.knee_index) {
    t += fmt::format("Knee: {} {}{} (judged on p99 {} vs output tokens/s)\n",
                     r.steps[*r.knee_index].load, unit, r.knee_reached ? "" : " (not reached)",
                     KneeLatencyName(o.knee_latency));
    t += "  " + r.knee_explanation + "\n";
  } else {
    t += fmt::format("Knee: n/a ({})\n",
                     r.knee_explanation.empty() ? "no step usable" : r.knee_explanation);
  }
  if (o.slo.any()) {
    t += fmt::format("Highest {} meeting the SLO: {}\n", o.rate_mode ? "rate" : "concurrency",
                     r.highest_meeting_slo ? LoadText(r.steps[*r.highest_meeting_slo].load)
                                           : "none (no step met it)");
    t += fmt::format("Maximum goodput at: {}\n",
                     r.max_goodput ? LoadText(r.steps[*r.max_goodput].load) : "n/a");
  }
  t += "Recommendations:\n";
  for (const Recommendation& rec : r.recommendations) {
    t += fmt::format("  {} {}\n      {}\n", rec.flag,
                     rec.value ? std::to_string(*rec.value) : "n/a", rec.reason);
  }
  if (!r.low_load_regime.empty()) t += "  " + r.low_load_regime + "\n";
  if (!r.high_load_regime.empty()) t += "  " + r.high_load_regime + "\n";
  t += fmt::format("Requests spent: {} over {} steps\n", r.requests_spent, r.steps.size());
  return t;
}

}  // namespace latdoc::loadgen
