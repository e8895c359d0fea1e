// `latdoc compare` of sweeps, traces, findings and stall attributions: documents read by key,
// tolerant of keys they lack (a result of an older latdoc), each number judged by
// compare_internal.h's helpers.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/core.h>

#include "compare/compare_internal.h"
#include "loadgen/load_facts.h"

namespace latdoc::compare::internal {

using nlohmann::json;
namespace keys = loadgen::keys;

void CompareSweep(const json& a, const json& b, CompareResult& r) {
  auto load_key = [](const json& d) { return d.value("mode", std::string("concurrency")); };
  std::string key = load_key(a);
  if (load_key(b) != key) {
    r.notes.push_back(
        fmt::format("the sweeps stepped different loads (A: {}, B: {}); steps are "
                    "not compared",
                    key, load_key(b)));
  }
  auto knee = [&](const json& d) -> std::optional<double> {
    if (!d.contains("knee") || !d["knee"].is_object()) return std::nullopt;
    return Num(d["knee"], key.c_str());
  };
  auto load_at = [](const json& d, const char* k) -> std::optional<double> { return Num(d, k); };
  auto rec = [](const json& d, const char* k) -> std::optional<double> {
    if (!d.contains("recommendations") || !d["recommendations"].is_object()) return std::nullopt;
    const json& rs = d["recommendations"];
    if (!rs.contains(k) || !rs[k].is_object()) return std::nullopt;
    return Num(rs[k], "value");
  };
  r.metrics.push_back(
      Exact("sweep", "knee_" + key, "", Direction::kHigherIsBetter, knee(a), knee(b)));
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
    for (const char* k : {keys::kP99TtftMs, keys::kP99ItlMs, keys::kP99E2elMs})
      r.metrics.push_back(ByThreshold(group, k, "ms", Direction::kLowerIsBetter, Num(*ja, k),
                                      Num(*it->second, k), kThresholdTail, kLatencyFloorMs));
    r.metrics.push_back(ByThreshold(group, keys::kOutputThroughput, "tok/s",
                                    Direction::kHigherIsBetter, Num(*ja, keys::kOutputThroughput),
                                    Num(*it->second, keys::kOutputThroughput), kThresholdCentre,
                                    0));
  }
  if (common == 0) r.notes.push_back("the sweeps have no step at the same load");
  r.notes.push_back(fmt::format(
      "sweep steps carry summaries only: noise is judged by relative thresholds ({:.0f}% for p99, "
      "{:.0f}% for throughput); the knee and recommendations are reported whenever they differ",
      kThresholdTail * 100, kThresholdCentre * 100));
}

namespace {

// Kernels: the union of each side's ten largest by total time, each judged by its time per call
// (a longer capture runs it more often, not slower).
void CompareKernels(const json& fa, const json& fb, const std::string& group, CompareResult& r) {
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
}

}  // namespace

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
    r.metrics.push_back(
        ByThreshold(group, name, "%", Direction::kLowerIsBetter, pct(fa, k), pct(fb, k), 0, 2.0));
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
  CompareKernels(fa, fb, group, r);
  r.notes.push_back(fmt::format(
      "{}: a trace is one run, so noise is judged by relative thresholds ({:.0f}% per kernel's "
      "time per call, 2 points of idle and exposed shares); GPU times themselves grow with the "
      "capture's length and are only reported as changed",
      group, kThresholdKernel * 100));
}

void CompareFindings(const json& a, const json& b, CompareResult& r) {
  struct F {
    std::string id, layer, severity, title;
  };
  auto str = [](const json& f, const char* k) {
    return f.contains(k) && f[k].is_string() ? f[k].get<std::string>() : std::string();
  };
  auto list = [&](const json& d) {
    std::vector<F> v;
    if (d.contains("findings") && d["findings"].is_array())
      for (const auto& f : d["findings"])
        if (f.is_object() && f.contains("id") && f["id"].is_string())
          v.push_back(
              {f["id"].get<std::string>(), str(f, "layer"), str(f, "severity"), str(f, "title")});
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
        if (c.is_object() && c.contains("cause") && c["cause"].is_string())
          m[c["cause"].get<std::string>()] = &c;
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
  r.metrics.push_back(ByThreshold(
      "stalls", "stalls", "", Direction::kLowerIsBetter, count(a["attribution"], "stalls"),
      count(b["attribution"], "stalls"), kThresholdTail, kStallCountFloor));
  r.metrics.push_back(ByThreshold("stalls", "unexplained", "", Direction::kLowerIsBetter,
                                  count(a["attribution"], "unexplained"),
                                  count(b["attribution"], "unexplained"), kThresholdTail,
                                  kStallCountFloor));
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
    r.metrics.push_back(ByThreshold("stalls by cause", n + " decode_share", "%",
                                    Direction::kLowerIsBetter, share(ca), share(cb), kThresholdTail,
                                    kStallShareFloorPct));
  }
}

}  // namespace latdoc::compare::internal
