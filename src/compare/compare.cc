#include "compare/compare.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/core.h>

#include "base/file_util.h"
#include "compare/compare_internal.h"
#include "stats/quantile.h"

namespace latdoc::compare {

using nlohmann::json;
using nlohmann::ordered_json;

namespace internal {

std::optional<double> Num(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

double QuantileOf(std::vector<double>& v, double q) { return stats::QuantileBySelection(v, q); }

double Stat(std::vector<double>& v, std::optional<double> q) {
  if (q) return QuantileOf(v, *q);
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

void Judge(MetricDelta& m) {
  if (!m.a || !m.b) {
    m.verdict = "n/a";
    return;
  }
  m.diff = *m.b - *m.a;
  if (*m.a != 0) m.rel = *m.diff / std::fabs(*m.a);
  if (*m.diff == 0) {
    m.beyond_noise = false;
    m.verdict = "same";
  } else if (!m.beyond_noise) {
    m.verdict = "within noise";
  } else if (m.direction == Direction::kNeither) {
    m.verdict = "changed";
  } else {
    bool up = *m.diff > 0;
    m.verdict = (up == (m.direction == Direction::kHigherIsBetter)) ? "better" : "worse";
  }
}

MetricDelta ByThreshold(std::string group, std::string name, std::string unit, Direction dir,
                        std::optional<double> a, std::optional<double> b, double threshold,
                        double floor_abs) {
  MetricDelta m;
  m.group = std::move(group);
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.direction = dir;
  m.a = a;
  m.b = b;
  m.method = NoiseMethod::kThreshold;
  m.threshold = threshold;
  if (floor_abs > 0) m.floor = floor_abs;
  if (a && b) {
    double d = std::fabs(*b - *a);
    double base = std::max(std::fabs(*a), std::fabs(*b));
    m.beyond_noise = d > floor_abs && (base == 0 || d / std::max(std::fabs(*a), 1e-12) > threshold);
  }
  Judge(m);
  return m;
}

MetricDelta Exact(std::string group, std::string name, std::string unit, Direction dir,
                  std::optional<double> a, std::optional<double> b) {
  MetricDelta m;
  m.group = std::move(group);
  m.name = std::move(name);
  m.unit = std::move(unit);
  m.direction = dir;
  m.a = a;
  m.b = b;
  m.method = NoiseMethod::kExact;
  m.beyond_noise = a && b && *a != *b;
  Judge(m);
  return m;
}

bool IsTail(const std::string& name) {
  return name.rfind("p9", 0) == 0 || name.rfind("max_", 0) == 0;
}

// Severity as a rank: a change to a higher one is worse.
int SeverityRank(const std::string& s) {
  static const char* kOrder[] = {"skip", "ok", "info", "warn", "fail"};
  for (int i = 0; i < 5; ++i)
    if (s == kOrder[i]) return i;
  return -1;
}

}  // namespace internal

namespace {

using namespace internal;  // NOLINT: this file's own helpers

// The newest version of each schema this latdoc writes and reads.
constexpr int kSchemaVersion = 1;

// A bench result's facts (a bench file, or a diagnosis's "bench"): an error names the file and
// the key.
StatusOr<loadgen::LoadFacts> BenchFacts(const json& doc, const std::string& path,
                                        std::string_view prefix) {
  auto f = loadgen::LoadFactsFromJson(ordered_json(doc));
  if (!f.ok()) return InvalidArgument(fmt::format("{}: {}{}", path, prefix, f.status().message()));
  return f;
}

}  // namespace

std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kBench: return "bench";
    case Kind::kSweep: return "sweep";
    case Kind::kTrace: return "trace";
    case Kind::kDiagnose: return "diagnose";
  }
  return "?";
}

std::string_view NoiseMethodName(NoiseMethod m) {
  switch (m) {
    case NoiseMethod::kBootstrap: return "bootstrap";
    case NoiseMethod::kThreshold: return "threshold";
    case NoiseMethod::kExact: return "exact";
    case NoiseMethod::kNone: return "none";
  }
  return "?";
}

StatusOr<Kind> DetectKind(const json& doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string())
    return InvalidArgument(path + ": no \"schema\" field: not a result written by latdoc "
                                  "(bench, sweep, trace or diagnose --json)");
  std::string schema = doc["schema"].get<std::string>();
  static const std::pair<const char*, Kind> kKinds[] = {{"latdoc.bench/", Kind::kBench},
                                                        {"latdoc.sweep/", Kind::kSweep},
                                                        {"latdoc.trace/", Kind::kTrace},
                                                        {"latdoc.diagnose/", Kind::kDiagnose}};
  for (const auto& [prefix, kind] : kKinds) {
    std::string_view p(prefix);
    if (schema.rfind(p, 0) != 0) continue;
    std::string ver = schema.substr(p.size());
    int v = 0;
    try {
      size_t used = 0;
      v = std::stoi(ver, &used);
      if (used != ver.size()) v = 0;
    } catch (const std::exception&) {
      v = 0;
    }
    if (v < 1) return InvalidArgument(fmt::format("{}: schema \"{}\" has no valid version", path, schema));
    if (v > kSchemaVersion)
      return InvalidArgument(fmt::format(
          "{}: schema \"{}\" is newer than this latdoc reads ({}{}); use the latdoc that wrote it",
          path, schema, p, kSchemaVersion));
    return kind;
  }
  return InvalidArgument(fmt::format(
      "{}: schema \"{}\" is not one latdoc compare reads (latdoc.bench, latdoc.sweep, "
      "latdoc.trace, latdoc.diagnose)", path, schema));
}

StatusOr<LoadedResult> LoadResult(const std::string& path) {
  ASSIGN_OR_RETURN(auto in, OpenInput(path));
  ASSIGN_OR_RETURN(std::string text, ReadAll(*in));
  LoadedResult r;
  r.path = path;
  try {
    r.doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidArgument(fmt::format("{}: byte {}: not valid JSON ({})", path, e.byte,
                                       std::string(e.what()).substr(std::string(e.what()).rfind(':') + 2)));
  }
  ASSIGN_OR_RETURN(r.kind, DetectKind(r.doc, path));
  return r;
}

Interval BootstrapDiff(const std::vector<double>& a, const std::vector<double>& b,
                       std::optional<double> q, int resamples, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> diffs;
  diffs.reserve(size_t(resamples));
  std::vector<double> ra(a.size()), rb(b.size());
  std::uniform_int_distribution<size_t> pa(0, a.size() - 1), pb(0, b.size() - 1);
  for (int i = 0; i < resamples; ++i) {
    for (double& x : ra) x = a[pa(rng)];
    for (double& x : rb) x = b[pb(rng)];
    diffs.push_back(Stat(rb, q) - Stat(ra, q));
  }
  Interval iv;
  iv.lo = QuantileOf(diffs, 0.025);
  iv.hi = QuantileOf(diffs, 0.975);
  return iv;
}

namespace {

StatusOr<CompareResult> CompareDocs(const LoadedResult& a, const LoadedResult& b,
                                    const CompareOptions& o) {
  if (a.kind != b.kind)
    return InvalidArgument(fmt::format(
        "{} is a {} result but {} is a {} result: compare two results of the same kind", a.path,
        KindName(a.kind), b.path, KindName(b.kind)));
  CompareResult r;
  r.kind = a.kind;
  r.path_a = a.path;
  r.path_b = b.path;
  switch (a.kind) {
    case Kind::kBench: {
      ASSIGN_OR_RETURN(loadgen::LoadFacts fa, BenchFacts(a.doc, a.path, ""));
      ASSIGN_OR_RETURN(loadgen::LoadFacts fb, BenchFacts(b.doc, b.path, ""));
      CompareBench(fa, fb, "bench", o, r);
      break;
    }
    case Kind::kSweep:
      CompareSweep(a.doc, b.doc, r);
      break;
    case Kind::kTrace: {
      static const json kEmpty = json::object();
      CompareTrace(a.doc.contains("facts") ? a.doc["facts"] : kEmpty,
                   b.doc.contains("facts") ? b.doc["facts"] : kEmpty, "trace", r);
      CompareFindings(a.doc, b.doc, r);
      break;
    }
    case Kind::kDiagnose: {
      bool ba = a.doc.contains("bench") && a.doc["bench"].is_object();
      bool bb = b.doc.contains("bench") && b.doc["bench"].is_object();
      if (ba && bb) {
        ASSIGN_OR_RETURN(loadgen::LoadFacts fa, BenchFacts(a.doc["bench"], a.path, "bench."));
        ASSIGN_OR_RETURN(loadgen::LoadFacts fb, BenchFacts(b.doc["bench"], b.path, "bench."));
        CompareBench(fa, fb, "load", o, r);
      } else {
        r.notes.push_back("the load layer was not measured in both diagnoses");
      }
      bool ta = a.doc.contains("trace") && a.doc["trace"].contains("facts");
      bool tb = b.doc.contains("trace") && b.doc["trace"].contains("facts");
      if (ta && tb) CompareTrace(a.doc["trace"]["facts"], b.doc["trace"]["facts"], "trace", r);
      auto probe = [](const json& d) -> const json* {
        if (!d.contains("net") || !d["net"].contains("facts") || !d["net"]["facts"].contains("probe"))
          return nullptr;
        return &d["net"]["facts"]["probe"];
      };
      const json* pa = probe(a.doc);
      const json* pb = probe(b.doc);
      if (pa && pb) {
        for (const char* ph : {"connect", "ttfb", "ttft_new", "ttft_reused"}) {
          auto p50 = [&](const json& p) -> std::optional<double> {
            return p.contains(ph) ? Num(p[ph], "p50_ms") : std::nullopt;
          };
          r.metrics.push_back(ByThreshold("network", std::string(ph) + "_p50_ms", "ms",
                                          Direction::kLowerIsBetter, p50(*pa), p50(*pb),
                                          kThresholdTail, kLatencyFloorMs));
        }
      }
      CompareStalls(a.doc, b.doc, r);
      CompareFindings(a.doc, b.doc, r);
      break;
    }
  }
  for (const auto& m : r.metrics) {
    if (m.verdict == "better") ++r.better;
    if (m.verdict == "worse") ++r.worse;
  }
  // Worse: a problem (warn, fail) that is new or more severe than in A; skip -> ok is not.
  for (const auto& f : r.findings) {
    const bool problem = f.severity_b == "warn" || f.severity_b == "fail";
    if (problem && (f.change == "new" || SeverityRank(f.severity_b) > SeverityRank(f.severity_a)))
      ++r.findings_worse;
  }
  return r;
}

}  // namespace

StatusOr<CompareResult> Compare(const LoadedResult& a, const LoadedResult& b,
                                const CompareOptions& o) {
  // The files passed their schema check, but a field of the wrong type (a null where a string
  // or object belongs) must be an error that names them, not an abort.
  try {
    return CompareDocs(a, b, o);
  } catch (const json::exception& e) {
    return InvalidArgument(fmt::format("{} / {}: a field has an unexpected type ({})", a.path,
                                       b.path, e.what()));
  }
}

namespace {

void AddFailed(const nlohmann::json& block, const std::string& prefix, std::vector<std::string>* out) {
  if (!block.is_object() || block.value("status", "") != "fail" || !block.contains("checks") ||
      !block["checks"].is_array())
    return;
  for (const auto& c : block["checks"]) {
    if (!c.is_object() || c.value("status", "") != "fail") continue;
    out->push_back(prefix + c.value("name", "?") + ": " + c.value("message", ""));
  }
}

}  // namespace

std::vector<std::string> FailedValidation(const nlohmann::json& doc) {
  std::vector<std::string> out;
  if (!doc.is_object()) return out;
  if (doc.contains("validation")) AddFailed(doc["validation"], "", &out);
  // A block one level down: a diagnose's load run, a sweep step.
  for (const auto& [key, v] : doc.items()) {
    if (v.is_object() && v.contains("validation")) AddFailed(v["validation"], key + ": ", &out);
    if (key == "steps" && v.is_array()) {
      for (const auto& step : v) {
        if (!step.is_object() || !step.contains("validation")) continue;
        std::string label = "step";
        for (const char* k : {"concurrency", "request_rate"})
          if (step.contains(k) && step[k].is_number())
            label += fmt::format(" {}={:g}", k, step[k].get<double>());
        AddFailed(step["validation"], label + ": ", &out);
      }
    }
  }
  return out;
}

}  // namespace latdoc::compare
