// `latdoc compare`'s outputs: the terminal table and the JSON (schema latdoc.compare/1).
#include <cmath>

#include <fmt/core.h>

#include "compare/compare.h"

namespace latdoc::compare {

using nlohmann::ordered_json;

namespace {

std::string Fmt(std::optional<double> v) {
  if (!v) return "n/a";
  double x = *v;
  if (std::fabs(x) >= 1000) return fmt::format("{:.0f}", x);
  if (std::fabs(x) >= 10) return fmt::format("{:.1f}", x);
  return fmt::format("{:.3g}", x);
}

}  // namespace

std::string RenderCompareText(const CompareResult& r, const CompareOptions& o) {
  std::string out = fmt::format("latdoc compare ({}): A = {}\n{:>{}}B = {}\n\n", KindName(r.kind),
                                r.path_a, "", 18 + KindName(r.kind).size(), r.path_b);
  out += fmt::format("{:<22} {:<26} {:>11} {:>11} {:>11} {:>8}  {}\n", "group", "metric", "A", "B",
                     "B-A", "B/A-1", "verdict (noise test)");
  int hidden = 0;
  for (const auto& m : r.metrics) {
    if (!o.show_all && !m.beyond_noise) {
      ++hidden;
      continue;
    }
    std::string how;
    switch (m.method) {
      case NoiseMethod::kBootstrap:
        how = fmt::format("bootstrap 95% [{}, {}]", Fmt(m.ci_lo), Fmt(m.ci_hi));
        break;
      case NoiseMethod::kThreshold:
        // A floor alone (shares and rates in points) is the test; say it rather than "0%".
        how =
            m.threshold.value_or(0) > 0 ? fmt::format("threshold {:.0f}%", *m.threshold * 100) : "";
        if (m.floor) {
          const std::string unit = m.unit == "%" ? "pt" : m.unit;
          how += fmt::format("{}more than {:g}{}{}", how.empty() ? "" : ", ", *m.floor,
                             unit.empty() ? "" : " ", unit);
        }
        if (how.empty()) how = "threshold 0%";
        break;
      case NoiseMethod::kExact:
        how = "exact";
        break;
      case NoiseMethod::kNone:
        break;
    }
    std::string name = m.name.size() > 26 ? m.name.substr(0, 23) + "..." : m.name;
    out += fmt::format("{:<22} {:<26} {:>11} {:>11} {:>11} {:>8}  {} ({})\n", m.group, name,
                       Fmt(m.a), Fmt(m.b), Fmt(m.diff),
                       m.rel ? fmt::format("{:+.1f}%", *m.rel * 100) : std::string("n/a"),
                       m.verdict, how);
  }
  if (hidden > 0)
    out += fmt::format("({} more within noise, the same, or n/a; --all lists them)\n", hidden);
  if (!r.findings.empty()) {
    out += "\nFindings that changed:\n";
    for (const auto& f : r.findings) {
      if (f.change == "new")
        out += fmt::format("  new       {:<8} {} [{}] {}\n", f.severity_b, f.id, f.layer, f.title);
      else if (f.change == "resolved")
        out += fmt::format("  resolved  {:<8} {} [{}] {}\n", f.severity_a, f.id, f.layer, f.title);
      else
        out += fmt::format("  {:>4} -> {:<4} {} [{}] {}\n", f.severity_a, f.severity_b, f.id,
                           f.layer, f.title);
    }
  }
  for (const auto& n : r.notes) out += "Note: " + n + "\n";
  out += fmt::format("\nBeyond noise: {} better, {} worse.", r.better, r.worse);
  if (r.findings_worse > 0)
    out += fmt::format(" Findings: {} new or more severe.", r.findings_worse);
  out += "\n";
  return out;
}

ordered_json CompareToJson(const CompareResult& r) {
  auto opt = [](std::optional<double> v) { return v ? ordered_json(*v) : ordered_json(nullptr); };
  ordered_json j;
  j["schema"] = "latdoc.compare/1";
  j["kind"] = KindName(r.kind);
  j["a"] = r.path_a;
  j["b"] = r.path_b;
  j["noise"] = {
      {"bootstrap", fmt::format("where both files have per-request samples: {} resamples of each "
                                "side; beyond noise when the 95% interval of B-A excludes 0",
                                kBootstrapResamples)},
      {"threshold", fmt::format("else relative: {:.0f}% mean/median/throughput, {:.0f}% tails and "
                                "kernels, latencies also at least {} ms",
                                kThresholdCentre * 100, kThresholdTail * 100, kLatencyFloorMs)},
      {"exact", "knee, recommendations and severities: any difference"}};
  ordered_json ms = ordered_json::array();
  for (const auto& m : r.metrics) {
    ordered_json e;
    e["group"] = m.group;
    e["metric"] = m.name;
    e["unit"] = m.unit;
    e["better_when"] = m.direction == Direction::kLowerIsBetter    ? "lower"
                       : m.direction == Direction::kHigherIsBetter ? "higher"
                                                                   : nullptr;
    e["a"] = opt(m.a);
    e["b"] = opt(m.b);
    e["diff"] = opt(m.diff);
    e["rel"] = opt(m.rel);
    e["noise_method"] = NoiseMethodName(m.method);
    if (m.method == NoiseMethod::kThreshold) {
      e["threshold"] = opt(m.threshold);
      e["floor"] = opt(m.floor);
    }
    if (m.method == NoiseMethod::kBootstrap) e["ci95"] = {opt(m.ci_lo), opt(m.ci_hi)};
    e["beyond_noise"] = m.beyond_noise;
    e["verdict"] = m.verdict;
    ms.push_back(std::move(e));
  }
  j["metrics"] = std::move(ms);
  ordered_json fs = ordered_json::array();
  for (const auto& f : r.findings)
    fs.push_back(
        {{"id", f.id},
         {"layer", f.layer},
         {"change", f.change},
         {"severity_a", f.severity_a.empty() ? ordered_json(nullptr) : ordered_json(f.severity_a)},
         {"severity_b", f.severity_b.empty() ? ordered_json(nullptr) : ordered_json(f.severity_b)},
         {"title", f.title}});
  j["findings"] = std::move(fs);
  j["notes"] = r.notes;
  j["better"] = r.better;
  j["worse"] = r.worse;
  j["findings_worse"] = r.findings_worse;
  j["loads_differ"] = r.loads_differ;
  j["invalid_runs"] = r.invalid;
  return j;
}

}  // namespace latdoc::compare
