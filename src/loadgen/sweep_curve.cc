#include "loadgen/sweep_curve.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "loadgen/load_facts.h"

namespace latdoc::loadgen {
namespace {

using nlohmann::ordered_json;

const ordered_json& Child(const ordered_json& j, const char* key) {
  static const ordered_json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it != j.end() ? *it : kNull;
}

std::optional<double> Number(const ordered_json& j, const char* key) {
  const ordered_json& v = Child(j, key);
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  return std::isfinite(d) ? std::optional(d) : std::nullopt;
}

std::optional<double> Knee(const ordered_json& doc) {
  const ordered_json& knee = Child(doc, "knee");
  for (const char* k : {"concurrency", "request_rate", "max_num_seqs"})
    if (auto v = Number(knee, k)) return v;
  if (auto v = Number(Child(doc, "recommendation"), "max_num_seqs")) return v;
  return Number(doc, "knee_concurrency");
}

std::optional<double> KneeBatch(const ordered_json& doc) {
  const ordered_json& knee = Child(doc, "knee");
  for (const char* k : {"concurrency", "max_num_seqs"})
    if (auto v = Number(knee, k)) return v;
  if (auto v = Number(Child(Child(doc, "recommendations"), "max_num_seqs"), "value")) return v;
  if (auto v = Number(Child(doc, "recommendation"), "max_num_seqs")) return v;
  return Number(doc, "knee_concurrency");
}

}  // namespace

StatusOr<SweepCurve> SweepCurveFromJson(const ordered_json& doc, std::string_view name) {
  if (!doc.is_object()) return InvalidArgument(std::string(name) + ": not a JSON object");
  SweepCurve c;
  if (const ordered_json& m = Child(doc, "model_id"); m.is_string())
    c.model_id = m.get<std::string>();
  const ordered_json& steps = Child(doc, "steps");
  bool rate_named = false, concurrency_named = false;
  if (steps.is_array()) {
    for (const ordered_json& s : steps) {
      SweepCurve::Step st;
      std::optional<double> load = Number(s, "concurrency");
      if (!load) load = Number(s, "max_concurrency");
      if (load) {
        concurrency_named = true;
      } else if ((load = Number(s, "request_rate"))) {
        rate_named = true;
      } else {
        continue;
      }
      st.load = *load;
      st.p99_ttft_ms = Number(s, keys::kP99TtftMs);
      st.p99_itl_ms = Number(s, keys::kP99ItlMs);
      st.p99_e2el_ms = Number(s, keys::kP99E2elMs);
      st.output_throughput = Number(s, keys::kOutputThroughput);
      if (!st.output_throughput) st.output_throughput = Number(s, "tokens_per_s");
      c.steps.push_back(st);
    }
  }
  std::stable_sort(
      c.steps.begin(), c.steps.end(),
      [](const SweepCurve::Step& a, const SweepCurve::Step& b) { return a.load < b.load; });
  c.rate_mode = rate_named && !concurrency_named;
  c.knee = Knee(doc);
  c.knee_batch = KneeBatch(doc);
  if (const ordered_json& r = Child(Child(doc, "knee"), "reached"); r.is_boolean())
    c.knee_reached = r.get<bool>();
  return c;
}

StatusOr<int64_t> SweepKneeFromJson(std::string_view text, std::string_view name) {
  const ordered_json doc = ordered_json::parse(text, nullptr, false);
  auto curve = SweepCurveFromJson(doc.is_discarded() ? ordered_json() : doc, name);
  if (!curve.ok()) return curve.status();
  const int64_t batch = curve->knee_batch ? std::llround(*curve->knee_batch) : 0;
  if (batch < 1) {
    return InvalidArgument(std::string(name) +
                           ": no knee found (expected knee.concurrency, knee.max_num_seqs, "
                           "recommendations.max_num_seqs.value, recommendation.max_num_seqs or "
                           "knee_concurrency)");
  }
  return batch;
}

}  // namespace latdoc::loadgen
