#include "fleet/fleet.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include <fmt/core.h>

#include "base/clock.h"

namespace latdoc::fleet {
namespace {

bool IsLabelName(std::string_view s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum((unsigned char)c) || c == '_')) return false;
  return true;
}

// The first sample of the series of `answer` whose `label` is `value`.
std::map<std::string, double> ByLabel(const std::vector<PromSeries>& answer,
                                      const std::string& label) {
  std::map<std::string, double> out;
  for (const PromSeries& s : answer) {
    auto it = s.labels.find(label);
    if (it == s.labels.end() || s.samples.empty() || !std::isfinite(s.samples.back().second))
      continue;
    out.emplace(it->second, s.samples.back().second);
  }
  return out;
}

std::optional<double> Get(const std::map<std::string, double>& m, const std::string& key) {
  auto it = m.find(key);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

// The metric names of each server dialect, after src/servermetrics/metric_names.cc (which
// cites each server's source): vLLM V1 (older names second), SGLang, TGI. nullptr: none.
struct Dialect {
  const char* requests[1];      // a counter of finished requests
  const char* ttft[1];          // histograms, without _bucket
  const char* itl[2];
  const char* queue[1];
  const char* running[1];       // gauges
  const char* waiting[1];
  const char* kv[2];            // KV-cache usage, 0..1
  const char* preemptions[1];   // a counter
};
constexpr Dialect kDialects[] = {
    {{"vllm:e2e_request_latency_seconds_count"}, {"vllm:time_to_first_token_seconds"},
     {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
     {"vllm:request_queue_time_seconds"}, {"vllm:num_requests_running"},
     {"vllm:num_requests_waiting"}, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
     {"vllm:num_preemptions_total"}},
    {{"sglang:num_requests_total"}, {"sglang:time_to_first_token_seconds"},
     {"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"},
     {"sglang:queue_time_seconds"}, {"sglang:num_running_reqs"}, {"sglang:num_queue_reqs"},
     {"sglang:token_usage", nullptr}, {"sglang:num_retracted_requests_total"}},
    // TGI has no TTFT histogram, and its per-token histogram holds each request's mean.
    {{"tgi_request_success"}, {nullptr}, {"tgi_request_mean_time_per_token_duration", nullptr},
     {"tgi_request_queue_duration"}, {"tgi_batch_current_size"}, {"tgi_queue_size"},
     {nullptr, nullptr}, {nullptr}},
};

}  // namespace

StatusOr<std::string> SelectorMatchers(std::string_view flag, std::string_view selector) {
  std::string_view s = selector;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.empty()) return std::string();
  const auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("{} '{}': {} (a PromQL label selector in braces, e.g. "
                                       "'{{job=\"vllm\"}}')",
                                       flag, selector, why));
  };
  if (s.front() != '{' || s.back() != '}') return bad("must start with '{' and end with '}'");
  std::string_view inner = s.substr(1, s.size() - 2);
  while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
  while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
  bool in_quote = false;
  char quote = 0;
  for (size_t i = 0; i < inner.size(); ++i) {
    const char c = inner[i];
    if (in_quote) {
      if (c == '\\') ++i;
      else if (c == quote) in_quote = false;
    } else if (c == '"' || c == '\'' || c == '`') {
      in_quote = true;
      quote = c;
    } else if (c == '{' || c == '}') {
      return bad("a brace inside the selector");
    }
  }
  if (in_quote) return bad("a quoted value is not closed");
  return std::string(inner);
}

std::string WithMatchers(std::string_view metric, std::string_view m) {
  return fmt::format("{}{{{}}}", metric, m);
}

std::string WindowText(int64_t window_ns) {
  const int64_t s = window_ns / 1'000'000'000;
  if (s > 0 && s % 3600 == 0) return fmt::format("{}h", s / 3600);
  if (s > 0 && s % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

std::string HostPortOf(std::string_view url) {
  std::string_view s = url;
  size_t scheme = s.find("://");
  bool tls = false;
  if (scheme != std::string_view::npos) {
    tls = s.substr(0, scheme) == "https";
    s.remove_prefix(scheme + 3);
  }
  s = s.substr(0, s.find_first_of("/?#"));
  if (const size_t at = s.rfind('@'); at != std::string_view::npos) s.remove_prefix(at + 1);
  // "[::1]:8000" and "host:8000" have a port; "[::1]" and "host" do not.
  const size_t bracket = s.rfind(']');
  const size_t colon = s.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket))
    return std::string(s);
  return fmt::format("{}:{}", s, tls ? 443 : 80);
}

// The heat map's rate window: at least 3 steps (so a step sees scrapes), a tenth of the window.
double HeatRateWindowS(double window_s, double step_s) {
  return std::max(3 * step_s, std::floor(window_s / 10));
}

uint32_t DialectsSeen(const std::vector<PromSeries>& seen) {
  uint32_t mask = 0;
  for (const PromSeries& series : seen) {
    auto name = series.labels.find("__name__");
    if (name == series.labels.end()) continue;
    for (size_t i = 0; i < std::size(kDialects); ++i)
      if (name->second == kDialects[i].running[0]) mask |= 1u << i;
  }
  return mask;
}

namespace {

// The PromQL of the fleet's queries: per replica (label `r`), over the window `w`, on the
// series the selector's matchers `m` name, in the dialects whose bit `dialects` sets.
struct Promql {
  std::string r, w, m;
  uint32_t dialects;

  std::string Sel(std::string_view metric) const { return WithMatchers(metric, m); }
  bool Asked(const Dialect& d) const { return (dialects >> (&d - kDialects)) & 1u; }
  // {__name__=~"a|b",S}: several names in one selector (the aggregation drops the name).
  std::string Names(const std::vector<const char*>& list) const {
    if (list.empty()) return std::string();
    std::string re;
    for (const char* n : list) re += (re.empty() ? "" : "|") + std::string(n);
    return fmt::format("{{__name__=~\"{}\"{}}}", re, m.empty() ? "" : "," + m);
  }
  // One expression per dialect that has the metric, joined by `or` (a replica speaks one).
  template <typename PerDialect, typename Field>
  std::string Any(PerDialect per_dialect, Field field) const {
    std::string out;
    for (const Dialect& d : kDialects) {
      if (!Asked(d)) continue;
      for (const char* metric : d.*field) {
        if (!metric) continue;
        out += (out.empty() ? "" : " or ") + per_dialect(metric);
      }
    }
    return out;
  }
  std::string RateOf(std::string_view metric, const std::string& win) const {
    return fmt::format("sum by ({}) (rate({}{}))", r, Sel(metric), win);
  }
  template <typename Field>
  std::string Quantile(double q, Field field, const std::string& win) const {
    const std::string parts = Any(
        [&](const char* hist) {
          return fmt::format("sum by ({}, le) (rate({}{}))", r, Sel(std::string(hist) + "_bucket"),
                             win);
        },
        field);
    return parts.empty() ? parts : fmt::format("histogram_quantile({}, {})", q, parts);
  }
  template <typename Field>
  std::string Avg(Field field) const {
    return Any(
        [&](const char* g) {
          return fmt::format("sum by ({}) (avg_over_time({}{}))", r, Sel(g), w);
        },
        field);
  }
  std::string Mean(const char* hist) const {
    return fmt::format("({} / {})", RateOf(std::string(hist) + "_sum", w),
                       RateOf(std::string(hist) + "_count", w));
  }
};

}  // namespace

StatusOr<std::vector<PromQuery>> FleetQueries(const FleetOptions& o, double at_unix_s,
                                              uint32_t dialects) {
  ASSIGN_OR_RETURN(std::string m, SelectorMatchers("--selector", o.selector));
  ASSIGN_OR_RETURN(std::string e, SelectorMatchers("--exporter-selector", o.exporter_selector));
  if (!IsLabelName(o.replica_label))
    return InvalidArgument(fmt::format("--by '{}': not a Prometheus label name", o.replica_label));
  if (o.window_ns < 1'000'000'000) return InvalidArgument("--window: must be at least 1s");
  const std::string r = o.replica_label;
  const std::string w = fmt::format("[{}ms]", o.window_ns / 1'000'000);
  const Promql p{r, w, m, dialects};
  std::vector<const char*> seen, kv, preempt;
  std::string queue_share;
  for (const Dialect& d : kDialects) {
    seen.push_back(d.running[0]);
    if (!p.Asked(d)) continue;
    for (const char* n : d.kv) if (n) kv.push_back(n);
    for (const char* n : d.preemptions) if (n) preempt.push_back(n);
    if (d.queue[0] && d.ttft[0])
      queue_share += (queue_share.empty() ? "" : " or ") +
                     fmt::format("{} / {}", p.Mean(d.queue[0]), p.Mean(d.ttft[0]));
  }

  std::vector<PromQuery> q(kQCount);
  for (PromQuery& x : q) x.time_s = at_unix_s;
  // The range query: points every `step` up to `at` exactly, so a replica present at the end
  // has a point at `at`.
  const double window_s = double(o.window_ns) / 1e9;
  const double step_s = std::max(1.0, std::floor(window_s / 60));
  // By name too: which dialects the fleet speaks (DialectsSeen).
  q[kQSeen].promql = fmt::format("count by ({}, __name__) ({})", r, p.Names(seen));
  q[kQSeen].range = true;
  q[kQSeen].end_s = at_unix_s;
  q[kQSeen].start_s = at_unix_s - std::floor(window_s / step_s) * step_s;
  q[kQSeen].step_s = step_s;
  q[kQUp].promql = p.Sel("up");
  q[kQRate].promql = p.Any([&](const char* c) { return p.RateOf(c, w); }, &Dialect::requests);
  q[kQTtft50].promql = p.Quantile(0.5, &Dialect::ttft, w);
  q[kQTtft99].promql = p.Quantile(0.99, &Dialect::ttft, w);
  q[kQItl50].promql = p.Quantile(0.5, &Dialect::itl, w);
  q[kQItl99].promql = p.Quantile(0.99, &Dialect::itl, w);
  q[kQQueueShare].promql = queue_share;
  q[kQRunning].promql = p.Avg(&Dialect::running);
  q[kQWaiting].promql = p.Avg(&Dialect::waiting);
  if (!kv.empty())
    q[kQKv].promql = fmt::format("max by ({}) (avg_over_time({}{}))", r, p.Names(kv), w);
  if (!preempt.empty())
    q[kQPreemptions].promql = fmt::format("sum by ({}) (increase({}{}))", r, p.Names(preempt), w);
  q[kQExporterInfo].promql = WithMatchers("latdoc_exporter_info", e);
  q[kQExporterFindings].promql = fmt::format(
      "max by (instance, rule, severity) (max_over_time(latdoc_finding{{severity=~\"warn|fail\"{}}}{})) > 0",
      e.empty() ? "" : "," + e, w);
  // The heat map's range queries: the same steps as kQSeen.
  const std::string hw =
      fmt::format("[{}ms]", int64_t(HeatRateWindowS(window_s, step_s) * 1000));
  q[kQTtft99Range] = q[kQSeen];
  q[kQTtft99Range].promql = p.Quantile(0.99, &Dialect::ttft, hw);
  q[kQItl99Range] = q[kQSeen];
  q[kQItl99Range].promql = p.Quantile(0.99, &Dialect::itl, hw);
  if (!o.over_time) q[kQTtft99Range].promql = q[kQItl99Range].promql = "";
  return q;
}

namespace {

// A range answer as one row per replica, aligned on the query's steps.
std::map<std::string, std::vector<std::optional<double>>> Rows(const std::vector<PromSeries>& answer,
                                                                const PromQuery& q,
                                                                const std::string& label,
                                                                size_t steps) {
  std::map<std::string, std::vector<std::optional<double>>> out;
  for (const PromSeries& s : answer) {
    auto it = s.labels.find(label);
    if (it == s.labels.end()) continue;
    auto& row = out[it->second];
    row.resize(steps);
    for (const auto& [t, v] : s.samples) {
      const double k = std::round((t - q.start_s) / q.step_s);
      if (k >= 0 && k < double(steps) && std::isfinite(v)) row[size_t(k)] = v;
    }
  }
  return out;
}

using Answers = std::vector<std::vector<PromSeries>>;
using ReplicaMap = std::map<std::string, rules::ReplicaFacts>;

// The replicas: every one seen in the window, and the targets down (when a selector names
// the replicas' targets; without one, `up` lists every target Prometheus has).
ReplicaMap SeenReplicas(const FleetOptions& o, const PromQuery& seen, const Answers& a) {
  const std::string& r = o.replica_label;
  ReplicaMap replicas;
  for (const PromSeries& s : a[kQSeen]) {
    auto it = s.labels.find(r);
    if (it == s.labels.end() || s.samples.empty()) continue;
    const bool is_new = replicas.find(it->second) == replicas.end();
    rules::ReplicaFacts& f = replicas[it->second];
    f.replica = it->second;
    // A replica with several series (names) is stale when all of them stopped.
    const bool stale = s.samples.back().first < seen.end_s - 1.5 * seen.step_s;
    f.stale = is_new ? stale : f.stale && stale;
  }
  StatusOr<std::string> matchers = SelectorMatchers("--selector", o.selector);
  const std::string m = matchers.ok() ? *matchers : "";
  const bool selector_given = !m.empty();
  for (const auto& [name, up] : ByLabel(a[kQUp], r)) {
    auto it = replicas.find(name);
    if (it == replicas.end()) {
      if (!selector_given || up != 0) continue;
      it = replicas.emplace(name, rules::ReplicaFacts{}).first;
      it->second.replica = name;
    }
    it->second.up = up != 0;
  }
  return replicas;
}

// Exporters: exporter instance -> the replica its target names.
std::map<std::string, std::string> ExporterOf(const std::vector<PromSeries>& info,
                                              const std::string& r) {
  std::map<std::string, std::string> exporter_of;
  for (const PromSeries& s : info) {
    auto inst = s.labels.find("instance");
    auto target = s.labels.find("target");
    if (inst == s.labels.end() || target == s.labels.end()) continue;
    // Joined by the replica label itself when the exporter's series carry it (`--by pod` in
    // Kubernetes, where the sidecar shares the pod), else by its target's host:port.
    auto same = r == "instance" ? s.labels.end() : s.labels.find(r);
    exporter_of[inst->second] = same != s.labels.end() ? same->second : HostPortOf(target->second);
  }
  return exporter_of;
}

// Each replica's instant values: rates, latency quantiles, queue, KV cache, preemptions, and
// whether an exporter watches it.
void FillInstantValues(const Answers& a, const std::string& r,
                       const std::map<std::string, std::string>& exporter_of,
                       ReplicaMap& replicas) {
  const auto rate = ByLabel(a[kQRate], r), t50 = ByLabel(a[kQTtft50], r),
             t99 = ByLabel(a[kQTtft99], r), i50 = ByLabel(a[kQItl50], r),
             i99 = ByLabel(a[kQItl99], r), qs = ByLabel(a[kQQueueShare], r),
             run = ByLabel(a[kQRunning], r), wait = ByLabel(a[kQWaiting], r),
             kv = ByLabel(a[kQKv], r), pre = ByLabel(a[kQPreemptions], r);
  for (auto& [name, f] : replicas) {
    f.request_rate_per_s = Get(rate, name);
    f.ttft_p50_s = Get(t50, name);
    f.ttft_p99_s = Get(t99, name);
    f.itl_p50_s = Get(i50, name);
    f.itl_p99_s = Get(i99, name);
    f.queue_share = Get(qs, name);
    if (f.queue_share) f.queue_share = std::clamp(*f.queue_share, 0.0, 1.0);
    f.running_mean = Get(run, name);
    f.waiting_mean = Get(wait, name);
    f.kv_usage_ratio = Get(kv, name);
    f.preemptions = Get(pre, name);
    for (const auto& [exp, target] : exporter_of)
      if (target == name) f.has_exporter = true;
  }
}

// The warn and fail findings each replica's exporter raised in the window (unsorted).
void AddExporterFindings(const std::vector<PromSeries>& findings,
                         const std::map<std::string, std::string>& exporter_of,
                         ReplicaMap& replicas) {
  for (const PromSeries& s : findings) {
    auto inst = s.labels.find("instance");
    auto rule = s.labels.find("rule");
    auto sev = s.labels.find("severity");
    if (inst == s.labels.end() || rule == s.labels.end() || sev == s.labels.end()) continue;
    auto target = exporter_of.find(inst->second);
    if (target == exporter_of.end()) continue;
    auto replica = replicas.find(target->second);
    if (replica == replicas.end()) continue;
    std::optional<rules::Severity> severity = rules::ParseSeverity(sev->second);
    if (!severity) continue;
    replica->second.exporter_findings.push_back({rule->second, *severity});
  }
}

// The heat map (--over-time): the steps' times and each replica's p99 TTFT and ITL per step.
void AddHeatRows(const FleetOptions& o, const std::vector<PromQuery>& queries, const Answers& a,
                 const ReplicaMap& replicas, FleetFacts& facts) {
  const std::string& r = o.replica_label;
  const PromQuery& seen = queries[kQSeen];
  const size_t steps =
      o.over_time ? size_t(std::llround((seen.end_s - seen.start_s) / seen.step_s)) + 1 : 0;
  for (size_t k = 0; k < steps; ++k) facts.times_unix_s.push_back(seen.start_s + double(k) * seen.step_s);
  facts.heat_rate_window_s = HeatRateWindowS(double(o.window_ns) / 1e9, seen.step_s);
  auto ttft_rows = Rows(a[kQTtft99Range], queries[kQTtft99Range], r, steps);
  auto itl_rows = Rows(a[kQItl99Range], queries[kQItl99Range], r, steps);
  for (const auto& [name, f] : replicas) {
    auto t = ttft_rows.find(name);
    facts.ttft_p99_over_time_s[name] =
        t != ttft_rows.end() ? t->second : std::vector<std::optional<double>>(steps);
    auto i = itl_rows.find(name);
    facts.itl_p99_over_time_s[name] =
        i != itl_rows.end() ? i->second : std::vector<std::optional<double>>(steps);
  }
}

// Worst first; a rule seen at two severities within the window counts at its worst.
void SortAndDedupExporterFindings(rules::ReplicaFacts& f) {
  std::sort(f.exporter_findings.begin(), f.exporter_findings.end(),
            [](const rules::ExporterFinding& x, const rules::ExporterFinding& y) {
              return x.severity != y.severity ? x.severity > y.severity : x.rule < y.rule;
            });
  std::vector<rules::ExporterFinding> unique;
  for (const rules::ExporterFinding& x : f.exporter_findings) {
    bool seen = false;
    for (const rules::ExporterFinding& u : unique) seen = seen || u.rule == x.rule;
    if (!seen) unique.push_back(x);
  }
  f.exporter_findings = std::move(unique);
}

}  // namespace

StatusOr<FleetFacts> AssembleFleet(const FleetOptions& o, double at_unix_s,
                                   const std::vector<PromQuery>& queries,
                                   const std::vector<std::vector<PromSeries>>& a) {
  if (a.size() != size_t(kQCount)) return Internal("AssembleFleet: wrong number of answers");
  const std::string& r = o.replica_label;
  FleetFacts facts;
  facts.prometheus = o.prometheus_url;
  facts.selector = o.selector.empty() ? "{}" : o.selector;
  facts.replica_label = r;
  facts.window_ns = o.window_ns;
  facts.at_unix_s = at_unix_s;
  facts.queries = queries.size();

  ReplicaMap replicas = SeenReplicas(o, queries[kQSeen], a);
  if (replicas.empty()) {
    StatusOr<std::string> matchers = SelectorMatchers("--selector", o.selector);
    const std::string m = matchers.ok() ? *matchers : "";
    return InvalidArgument(fmt::format(
        "no vLLM, SGLang or TGI series match {} at {} in the last {} (is Prometheus scraping "
        "the replicas' /metrics? the query {} lists the targets)",
        facts.selector, o.prometheus_url, WindowText(o.window_ns), WithMatchers("up", m)));
  }
  const std::map<std::string, std::string> exporter_of = ExporterOf(a[kQExporterInfo], r);
  FillInstantValues(a, r, exporter_of, replicas);
  AddExporterFindings(a[kQExporterFindings], exporter_of, replicas);
  AddHeatRows(o, queries, a, replicas, facts);
  for (auto& [name, f] : replicas) {
    SortAndDedupExporterFindings(f);
    facts.replicas.push_back(std::move(f));
  }
  return facts;
}

StatusOr<FleetFacts> CollectFleet(const FleetOptions& o) {
  const double at = o.at_unix_s ? *o.at_unix_s : double(WallNowNs()) / 1e9;
  ASSIGN_OR_RETURN(std::vector<PromQuery> queries, FleetQueries(o, at));
  ASSIGN_OR_RETURN(PrometheusClient client, PrometheusClient::Create(o.prometheus_url, o.timeout_ns, o.bearer_token));
  const int64_t t0 = MonoNowNs();
  // First which replicas, and which dialects they speak; then the rest for those dialects only
  // (a query for a dialect nobody speaks still costs Prometheus a lookup per `or` branch).
  ASSIGN_OR_RETURN(auto seen, client.Run({queries[kQSeen]}));
  ASSIGN_OR_RETURN(queries, FleetQueries(o, at, DialectsSeen(seen[0])));
  queries[kQSeen].promql.clear();
  // Only the queries that are asked (an empty one, the heat map's without over_time, answers
  // nothing).
  std::vector<PromQuery> asked;
  for (const PromQuery& q : queries)
    if (!q.promql.empty()) asked.push_back(q);
  ASSIGN_OR_RETURN(auto asked_answers, client.Run(asked));
  const int64_t dt = MonoNowNs() - t0;
  std::vector<std::vector<PromSeries>> answers(queries.size());
  for (size_t i = 0, k = 0; i < queries.size(); ++i)
    if (!queries[i].promql.empty()) answers[i] = std::move(asked_answers[k++]);
  answers[kQSeen] = std::move(seen[0]);
  ASSIGN_OR_RETURN(queries, FleetQueries(o, at, DialectsSeen(answers[kQSeen])));
  ASSIGN_OR_RETURN(FleetFacts facts, AssembleFleet(o, at, queries, answers));
  facts.query_ns = dt;
  facts.queries = asked.size() + 1;
  return facts;
}

}  // namespace latdoc::fleet
