#include "compare/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include <fmt/core.h>

#include "base/file_util.h"
#include "stats/quantile.h"

namespace latdoc::compare {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// The newest version of each schema this latdoc writes and reads.
constexpr int kSchemaVersion = 1;

std::optional<double> Num(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::vector<double> Samples(const json& doc, const char* key) {
  std::vector<double> v;
  if (!doc.is_object() || !doc.contains("per_request")) return v;
  const json& pr = doc["per_request"];
  if (!pr.is_object() || !pr.contains(key) || !pr[key].is_array()) return v;
  for (const auto& x : pr[key])
    if (x.is_number()) v.push_back(x.get<double>());
  return v;
}

// Linear interpolation between closest ranks (numpy's default). REQUIRES: v non-empty.
double QuantileOf(std::vector<double>& v, double q) { return stats::QuantileBySelection(v, q); }

double Stat(std::vector<double>& v, std::optional<double> q) {
  if (q) return QuantileOf(v, *q);
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

// Fills diff, rel and the verdict from a, b and beyond_noise.
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

// The bench metrics of a latdoc.bench/1 document (also diagnose's "bench").
// The load each run offered, as its file records it: a different load makes different latency
// whatever the server did, so the comparison says so first.
void NoteWorkloadDifferences(const json& a, const json& b, const std::string& group,
                             CompareResult& r) {
  std::vector<std::string> diffs;
  for (const char* k : {"endpoint_type", "model_id", "request_rate", "max_concurrency", "burstiness"}) {
    const bool ha = a.contains(k), hb = b.contains(k);
    if (!ha || !hb) continue;
    if (a[k] != b[k]) diffs.push_back(fmt::format("{} {} vs {}", k, a[k].dump(), b[k].dump()));
  }
  auto per_request = [](const json& d, const char* total) -> std::optional<double> {
    auto t = Num(d, total), n = Num(d, "completed");
    if (!t || !n || *n <= 0) return std::nullopt;
    return *t / *n;
  };
  for (auto [total, name] : {std::pair{"total_input_tokens", "input tokens per request"},
                             std::pair{"total_output_tokens", "output tokens per request"}}) {
    auto ta = per_request(a, total), tb = per_request(b, total);
    if (ta && tb && std::fabs(*ta - *tb) > 0.1 * std::max(*ta, *tb)) {
      diffs.push_back(fmt::format("{} {:.0f} vs {:.0f}", name, *ta, *tb));
    }
  }
  if (diffs.empty()) return;
  r.loads_differ = true;
  std::string list;
  for (const auto& d : diffs) list += (list.empty() ? "" : "; ") + d;
  r.notes.push_back(fmt::format("{}: the two runs offered different loads ({}), so their latency "
                                "differs for that reason too, not only the server's",
                                group, list));
}

void CompareBench(const json& a, const json& b, const std::string& group, const CompareOptions& o,
                  CompareResult& r) {
  NoteWorkloadDifferences(a, b, group, r);
  struct Series { const char* metric; const char* samples; };
  const Series series[] = {{"ttft", "ttft_ms"}, {"tpot", "tpot_ms"}, {"itl", nullptr},
                           {"e2el", "e2el_ms"}};
  struct Statistic { const char* prefix; std::optional<double> q; };
  const Statistic stats[] = {{"mean", std::nullopt}, {"median", 0.5}, {"p99", 0.99}};
  bool any_bootstrap = false;
  for (const Series& s : series) {
    std::vector<double> sa, sb;
    if (s.samples) {
      sa = Samples(a, s.samples);
      sb = Samples(b, s.samples);
    }
    for (const Statistic& st : stats) {
      std::string name = fmt::format("{}_{}_ms", st.prefix, s.metric);
      std::optional<double> va = Num(a, name.c_str()), vb = Num(b, name.c_str());
      // A bootstrap of a few samples a side calls any difference real (with two each, every
      // resample keeps their order): it needs enough of them, more for a tail.
      const size_t need = st.q && *st.q > 0.9 ? kMinTailBootstrapSamples : kMinBootstrapSamples;
      if (sa.size() >= need && sb.size() >= need) {
        any_bootstrap = true;
        MetricDelta m;
        m.group = group;
        m.name = name;
        m.unit = "ms";
        m.direction = Direction::kLowerIsBetter;
        m.a = va ? va : std::optional<double>(Stat(sa, st.q));
        m.b = vb ? vb : std::optional<double>(Stat(sb, st.q));
        m.method = NoiseMethod::kBootstrap;
        Interval ci = BootstrapDiff(sa, sb, st.q, o.resamples, o.seed);
        m.ci_lo = ci.lo;
        m.ci_hi = ci.hi;
        m.beyond_noise = (ci.lo > 0 || ci.hi < 0) && m.a && m.b &&
                         std::fabs(*m.b - *m.a) > kLatencyFloorMs;
        Judge(m);
        r.metrics.push_back(std::move(m));
      } else {
        r.metrics.push_back(ByThreshold(group, name, "ms", Direction::kLowerIsBetter, va, vb,
                                        IsTail(name) ? kThresholdTail : kThresholdCentre,
                                        kLatencyFloorMs));
      }
    }
  }
  if (!any_bootstrap)
    r.notes.push_back(fmt::format(
        "{}: fewer than {} per-request samples in one file or both, so noise is judged by "
        "relative thresholds ({:.0f}% for means and medians, {:.0f}% for p99, and at least {} ms)",
        group, kMinBootstrapSamples, kThresholdCentre * 100, kThresholdTail * 100, kLatencyFloorMs));
  for (const char* k : {"request_throughput", "output_throughput", "request_goodput"}) {
    r.metrics.push_back(ByThreshold(group, k, k[0] == 'o' ? "tok/s" : "req/s",
                                    Direction::kHigherIsBetter, Num(a, k), Num(b, k),
                                    kThresholdCentre, 0));
  }
  auto error_rate = [](const json& d) -> std::optional<double> {
    auto c = Num(d, "completed"), f = Num(d, "failed");
    if (!c || !f || *c + *f <= 0) return std::nullopt;
    return *f / (*c + *f) * 100;
  };
  r.metrics.push_back(ByThreshold(group, "error_rate", "%", Direction::kLowerIsBetter,
                                  error_rate(a), error_rate(b), 0, kErrorRateFloor * 100));
  // The server's split of TTFT, from /metrics.
  auto split = [](const json& d) -> const json* {
    if (!d.is_object() || !d.contains("server_metrics")) return nullptr;
    const json& sm = d["server_metrics"];
    if (!sm.is_object() || !sm.contains("ttft_breakdown")) return nullptr;
    return &sm["ttft_breakdown"];
  };
  const json* wa = split(a);
  const json* wb = split(b);
  if (wa && wb) {
    for (const char* k : {"queue_ms", "prefill_ms", "network_and_front_end_ms"}) {
      r.metrics.push_back(ByThreshold(group + " ttft split", k, "ms", Direction::kLowerIsBetter,
                                      Num(*wa, k), Num(*wb, k), kThresholdCentre, kLatencyFloorMs));
    }
  }
}

void CompareSweep(const json& a, const json& b, CompareResult& r) {
  auto load_key = [](const json& d) { return d.value("mode", std::string("concurrency")); };
  std::string key = load_key(a);
  if (load_key(b) != key) {
    r.notes.push_back(fmt::format("the sweeps stepped different loads (A: {}, B: {}); steps are "
                                  "not compared", key, load_key(b)));
  }
  auto knee = [&](const json& d) -> std::optional<double> {
    if (!d.contains("knee") || !d["knee"].is_object()) return std::nullopt;
    return Num(d["knee"], key.c_str());
  };
  auto load_at = [](const json& d, const char* k) -> std::optional<double> {
    return Num(d, k);
  };
  auto rec = [](const json& d, const char* k) -> std::optional<double> {
    if (!d.contains("recommendations") || !d["recommendations"].is_object()) return std::nullopt;
    const json& rs = d["recommendations"];
    if (!rs.contains(k) || !rs[k].is_object()) return std::nullopt;
    return Num(rs[k], "value");
  };
  r.metrics.push_back(Exact("sweep", "knee_" + key, "", Direction::kHigherIsBetter, knee(a), knee(b)));
  r.metrics.push_back(Exact("sweep", "highest_meeting_slo", "", Direction::kHigherIsBetter,
                            load_at(a, "highest_meeting_slo"), load_at(b, "highest_meeting_slo")));
  r.metrics.push_back(Exact("sweep", "max_goodput_at", "", Direction::kHigherIsBetter,
                            load_at(a, "max_goodput"), load_at(b, "max_goodput")));
  r.metrics.push_back(Exact("sweep", "recommended_max_num_seqs", "", Direction::kNeither,
                            rec(a, "max_num_seqs"), rec(b, "max_num_seqs")));
  r.metrics.push_back(Exact("sweep", "recommended_max_num_batched_tokens", "", Direction::kNeither,
                            rec(a, "max_num_batched_tokens"), rec(b, "max_num_batched_tokens")));
  if (load_key(b) != key) return;
  // Steps at the same load, in A's order.
  auto steps = [&key](const json& d) {
    std::map<double, const json*> m;
    if (d.contains("steps") && d["steps"].is_array())
      for (const auto& s : d["steps"])
        if (auto l = Num(s, key.c_str())) m[*l] = &s;
    return m;
  };
  auto sa = steps(a), sb = steps(b);
  int common = 0;
  for (const auto& [load, ja] : sa) {
    auto it = sb.find(load);
    if (it == sb.end()) continue;
    ++common;
    std::string group = fmt::format("step {}={:g}", key == "concurrency" ? "conc" : "rate", load);
    for (const char* k : {"p99_ttft_ms", "p99_itl_ms", "p99_e2el_ms"})
      r.metrics.push_back(ByThreshold(group, k, "ms", Direction::kLowerIsBetter, Num(*ja, k),
                                      Num(*it->second, k), kThresholdTail, kLatencyFloorMs));
    r.metrics.push_back(ByThreshold(group, "output_throughput", "tok/s", Direction::kHigherIsBetter,
                                    Num(*ja, "output_throughput"), Num(*it->second, "output_throughput"),
                                    kThresholdCentre, 0));
  }
  if (common == 0) r.notes.push_back("the sweeps have no step at the same load");
  r.notes.push_back(fmt::format(
      "sweep steps carry summaries only: noise is judged by relative thresholds ({:.0f}% for p99, "
      "{:.0f}% for throughput); the knee and recommendations are reported whenever they differ",
      kThresholdTail * 100, kThresholdCentre * 100));
}

// A trace document's facts: latdoc.trace/1 has them under "facts".
void CompareTrace(const json& fa, const json& fb, const std::string& group, CompareResult& r) {
  // With several devices or files, their sum, each on its own window (one window over ranks on
  // different clocks would count the time between them as idle); else the one timeline.
  auto tl = [](const json& f) -> const json& {
    static const json kEmpty = json::object();
    for (const char* k : {"gpu_timeline_devices_summed", "gpu_timeline"}) {
      if (f.contains(k) && f[k].is_object()) return f[k];
    }
    return kEmpty;
  };
  // Two captures of one workload differ in length: the times themselves only "changed"; what is
  // judged better or worse is each part's share of the window.
  for (const char* k : {"total_ms", "busy_ms", "computation_ms", "idle_ms", "exposed_memcpy_ms",
                        "exposed_comm_ms"}) {
    r.metrics.push_back(ByThreshold(group, k, "ms", Direction::kNeither, Num(tl(fa), k),
                                    Num(tl(fb), k), kThresholdCentre, 0.01));
  }
  r.metrics.push_back(ByThreshold(group, "idle_pct", "%", Direction::kLowerIsBetter,
                                  Num(tl(fa), "idle_pct"), Num(tl(fb), "idle_pct"), 0, 2.0));
  auto pct = [&](const json& f, const char* k) -> std::optional<double> {
    auto part = Num(tl(f), k), total = Num(tl(f), "total_ms");
    if (!part || !total || *total <= 0) return std::nullopt;
    return *part / *total * 100;
  };
  for (auto [k, name] : {std::pair{"exposed_memcpy_ms", "exposed_memcpy_pct"},
                         std::pair{"exposed_comm_ms", "exposed_comm_pct"}}) {
    r.metrics.push_back(ByThreshold(group, name, "%", Direction::kLowerIsBetter, pct(fa, k),
                                    pct(fb, k), 0, 2.0));
  }
  auto launch = [](const json& f, const char* k) -> std::optional<double> {
    if (!f.contains("launch")) return std::nullopt;
    auto v = Num(f["launch"], k);
    if (v) *v /= 1e6;
    return v;
  };
  r.metrics.push_back(ByThreshold(group, "launch_delay_p50_ms", "ms", Direction::kLowerIsBetter,
                                  launch(fa, "delay_p50_ns"), launch(fb, "delay_p50_ns"),
                                  kThresholdKernel, 0.001));
  // Kernels: the union of each side's ten largest by total time, each judged by its time per
  // call (a longer capture runs it more often, not slower).
  struct KernelTime {
    double total_ms = 0;
    double calls = 0;
  };
  auto kernels = [](const json& f) {
    std::map<std::string, KernelTime> m;
    if (f.contains("kernels") && f["kernels"].is_array())
      for (const auto& k : f["kernels"])
        if (k.contains("name") && k["name"].is_string())
          if (auto t = Num(k, "total_ns")) {
            KernelTime& kt = m[k["name"].get<std::string>()];
            kt.total_ms += *t / 1e6;
            kt.calls += Num(k, "count").value_or(0);
          }
    return m;
  };
  auto ka = kernels(fa), kb = kernels(fb);
  auto top = [](const std::map<std::string, KernelTime>& m) {
    std::vector<std::pair<double, std::string>> v;
    for (const auto& [n, t] : m) v.push_back({-t.total_ms, n});
    std::sort(v.begin(), v.end());
    std::vector<std::string> names;
    for (size_t i = 0; i < v.size() && i < 10; ++i) names.push_back(v[i].second);
    return names;
  };
  std::vector<std::string> names = top(ka);
  for (const auto& n : top(kb))
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  for (const auto& n : names) {
    // Absent from one trace (fused away, renamed): n/a there, not "ran in no time".
    auto per_call = [&](const std::map<std::string, KernelTime>& m) -> std::optional<double> {
      auto it = m.find(n);
      if (it == m.end() || it->second.calls <= 0) return std::nullopt;
      return it->second.total_ms / it->second.calls;
    };
    r.metrics.push_back(ByThreshold(group + " kernel", n, "ms/call", Direction::kLowerIsBetter,
                                    per_call(ka), per_call(kb), kThresholdKernel, 0.0001));
  }
  r.notes.push_back(fmt::format(
      "{}: a trace is one run, so noise is judged by relative thresholds ({:.0f}% per kernel's "
      "time per call, 2 points of idle and exposed shares); GPU times themselves grow with the "
      "capture's length and are only reported as changed",
      group, kThresholdKernel * 100));
}

// Severity as a rank: a change to a higher one is worse.
int SeverityRank(const std::string& s) {
  static const char* kOrder[] = {"skip", "ok", "info", "warn", "fail"};
  for (int i = 0; i < 5; ++i)
    if (s == kOrder[i]) return i;
  return -1;
}

void CompareFindings(const json& a, const json& b, CompareResult& r) {
  struct F { std::string id, layer, severity, title; };
  auto str = [](const json& f, const char* k) {
    return f.contains(k) && f[k].is_string() ? f[k].get<std::string>() : std::string();
  };
  auto list = [&](const json& d) {
    std::vector<F> v;
    if (d.contains("findings") && d["findings"].is_array())
      for (const auto& f : d["findings"])
        if (f.is_object() && f.contains("id") && f["id"].is_string())
          v.push_back({f["id"].get<std::string>(), str(f, "layer"), str(f, "severity"), str(f, "title")});
    return v;
  };
  const std::vector<F> la = list(a), lb = list(b);
  // A rule that judges each GPU or NIC on its own gives one finding per subject under one id,
  // titled "SUBJECT: ..." ("GPU 1 (0000:3b:00.0): power limit ..."). Such ids are matched by
  // id and subject; every other id by id alone (its title carries numbers that change).
  std::map<std::string, int> most;
  for (const auto* l : {&la, &lb}) {
    std::map<std::string, int> n;
    for (const F& f : *l) most[f.id] = std::max(most[f.id], ++n[f.id]);
  }
  auto key = [&](const F& f) {
    if (most[f.id] < 2) return f.id;
    const size_t colon = f.title.find(": ");
    return f.id + " " + (colon == std::string::npos ? f.title : f.title.substr(0, colon));
  };
  std::map<std::string, F> fa, fb;
  for (const F& f : la) fa.emplace(key(f), f);
  for (const F& f : lb) fb.emplace(key(f), f);
  auto counts = [](const std::string& s) { return s == "warn" || s == "fail"; };
  for (const auto& [k, f] : fb) {
    auto it = fa.find(k);
    if (it == fa.end()) {
      if (counts(f.severity)) r.findings.push_back({f.id, f.layer, "new", "", f.severity, f.title});
    } else if (it->second.severity != f.severity) {
      r.findings.push_back({f.id, f.layer, "severity", it->second.severity, f.severity, f.title});
    }
  }
  for (const auto& [k, f] : fa)
    if (!fb.count(k) && counts(f.severity))
      r.findings.push_back({f.id, f.layer, "resolved", f.severity, "", f.title});
}

std::string Fmt(std::optional<double> v) {
  if (!v) return "n/a";
  double x = *v;
  if (std::fabs(x) >= 1000) return fmt::format("{:.0f}", x);
  if (std::fabs(x) >= 10) return fmt::format("{:.1f}", x);
  return fmt::format("{:.3g}", x);
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

// The stalls each cause explained in two diagnoses (their "attribution": diagnose's stall
// attribution, docs/attribution.md), cause by cause: how many stalls and what share of decode
// time, and the stalls no cause explained. What a change did to each cause of the stalls: a
// fix for log writes should take attribution.log's stalls away and leave the others.
void CompareStalls(const json& a, const json& b, CompareResult& r) {
  const bool ha = a.contains("attribution") && a["attribution"].is_object();
  const bool hb = b.contains("attribution") && b["attribution"].is_object();
  if (!ha && !hb) return;
  if (ha != hb) {
    r.notes.push_back("stall attribution in only one diagnosis: stalls not compared by cause");
    return;
  }
  auto causes = [](const json& at) {
    std::map<std::string, const json*> m;
    if (at.contains("causes") && at["causes"].is_array())
      for (const json& c : at["causes"])
        if (c.is_object() && c.contains("cause") && c["cause"].is_string()) m[c["cause"].get<std::string>()] = &c;
    return m;
  };
  const auto ca = causes(a["attribution"]), cb = causes(b["attribution"]);
  std::set<std::string> names;
  for (const auto& [n, _] : ca) names.insert(n);
  for (const auto& [n, _] : cb) names.insert(n);
  auto count = [](const json& at, const char* key) -> std::optional<double> {
    if (!at.contains(key)) return std::nullopt;
    if (at[key].is_array()) return double(at[key].size());
    return Num(at, key);
  };
  r.metrics.push_back(ByThreshold("stalls", "stalls", "", Direction::kLowerIsBetter,
                                  count(a["attribution"], "stalls"), count(b["attribution"], "stalls"),
                                  kThresholdTail, kStallCountFloor));
  r.metrics.push_back(ByThreshold("stalls", "unexplained", "", Direction::kLowerIsBetter,
                                  count(a["attribution"], "unexplained"),
                                  count(b["attribution"], "unexplained"), kThresholdTail, kStallCountFloor));
  for (const std::string& n : names) {
    // A cause absent from one side explained no stall there.
    auto stalls = [&](const std::map<std::string, const json*>& m) -> std::optional<double> {
      auto it = m.find(n);
      return it == m.end() ? std::optional<double>(0) : Num(*it->second, "stalls");
    };
    auto share = [&](const std::map<std::string, const json*>& m) -> std::optional<double> {
      auto it = m.find(n);
      if (it == m.end()) return 0;
      std::optional<double> v = Num(*it->second, "decode_share");
      return v ? std::optional<double>(*v * 100) : std::nullopt;
    };
    r.metrics.push_back(ByThreshold("stalls by cause", n + " stalls", "", Direction::kLowerIsBetter,
                                    stalls(ca), stalls(cb), kThresholdTail, kStallCountFloor));
    r.metrics.push_back(ByThreshold("stalls by cause", n + " decode_share", "%", Direction::kLowerIsBetter,
                                    share(ca), share(cb), kThresholdTail, kStallShareFloorPct));
  }
}

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
    case Kind::kBench:
      CompareBench(a.doc, b.doc, "bench", o, r);
      break;
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
      if (ba && bb) CompareBench(a.doc["bench"], b.doc["bench"], "load", o, r);
      else r.notes.push_back("the load layer was not measured in both diagnoses");
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

std::string RenderCompareText(const CompareResult& r, const CompareOptions& o) {
  std::string out = fmt::format("latdoc compare ({}): A = {}\n{:>{}}B = {}\n\n", KindName(r.kind),
                                r.path_a, "", 18 + KindName(r.kind).size(), r.path_b);
  out += fmt::format("{:<22} {:<26} {:>11} {:>11} {:>11} {:>8}  {}\n", "group", "metric", "A",
                     "B", "B-A", "B/A-1", "verdict (noise test)");
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
        how = m.threshold.value_or(0) > 0 ? fmt::format("threshold {:.0f}%", *m.threshold * 100) : "";
        if (m.floor) {
          const std::string unit = m.unit == "%" ? "pt" : m.unit;
          how += fmt::format("{}more than {:g}{}{}", how.empty() ? "" : ", ", *m.floor,
                             unit.empty() ? "" : " ", unit);
        }
        if (how.empty()) how = "threshold 0%";
        break;
      case NoiseMethod::kExact: how = "exact"; break;
      case NoiseMethod::kNone: break;
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
  if (r.findings_worse > 0) out += fmt::format(" Findings: {} new or more severe.", r.findings_worse);
  out += "\n";
  return out;
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
    e["better_when"] = m.direction == Direction::kLowerIsBetter   ? "lower"
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
    fs.push_back({{"id", f.id}, {"layer", f.layer}, {"change", f.change},
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
