// `latdoc compare` of two bench runs (two bench files, or two diagnoses' "bench"), read as
// loadgen::LoadFacts: the load each offered, latency statistics (by bootstrap over their
// per-request samples where both have enough, else by threshold), throughputs, error rate and
// the server's TTFT split.
#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/core.h>

#include "compare/compare_internal.h"

namespace latdoc::compare::internal {
namespace {

using loadgen::LoadFacts;
using nlohmann::ordered_json;
namespace keys = loadgen::keys;

// A value of the load's description as the file writes it (the note quotes it so).
template <typename T>
std::optional<std::string> Quoted(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return ordered_json(*v).dump();
}
std::optional<std::string> RateQuoted(const std::optional<double>& rate) {
  if (!rate) return std::nullopt;
  return std::isfinite(*rate) ? ordered_json(*rate).dump() : ordered_json("inf").dump();
}
// JSON null when the run had no cap: a value the file holds all the same.
std::string ConcurrencyQuoted(const std::optional<int64_t>& c) {
  return c ? ordered_json(*c).dump() : ordered_json(nullptr).dump();
}

// The load each run offered, as its file records it: a different load makes different latency
// whatever the server did, so the comparison says so first.
void NoteWorkloadDifferences(const LoadFacts& a, const LoadFacts& b, const std::string& group,
                             CompareResult& r) {
  std::vector<std::string> diffs;
  const std::pair<const char*, std::optional<std::string>> described[][2] = {
      {{"endpoint_type", Quoted(a.endpoint_type)}, {"", Quoted(b.endpoint_type)}},
      {{"model_id", Quoted(a.model_id)}, {"", Quoted(b.model_id)}},
      {{"request_rate", RateQuoted(a.request_rate)}, {"", RateQuoted(b.request_rate)}},
      {{"max_concurrency", ConcurrencyQuoted(a.max_concurrency)},
       {"", ConcurrencyQuoted(b.max_concurrency)}},
      {{"burstiness", Quoted(a.burstiness)}, {"", Quoted(b.burstiness)}}};
  for (const auto& [in_a, in_b] : described) {
    if (!in_a.second || !in_b.second) continue;
    if (*in_a.second != *in_b.second)
      diffs.push_back(fmt::format("{} {} vs {}", in_a.first, *in_a.second, *in_b.second));
  }
  auto per_request = [](const LoadFacts& d, int64_t total) -> std::optional<double> {
    if (d.completed == 0) return std::nullopt;
    return double(total) / double(d.completed);
  };
  for (auto [ta, tb, name] :
       {std::tuple{per_request(a, a.total_input_tokens), per_request(b, b.total_input_tokens),
                   "input tokens per request"},
        std::tuple{per_request(a, a.total_output_tokens), per_request(b, b.total_output_tokens),
                   "output tokens per request"}}) {
    if (ta && tb && std::fabs(*ta - *tb) > 0.1 * std::max(*ta, *tb)) {
      diffs.push_back(fmt::format("{} {:.0f} vs {:.0f}", name, *ta, *tb));
    }
  }
  if (diffs.empty()) return;
  r.loads_differ = true;
  std::string list;
  for (const auto& d : diffs) list += (list.empty() ? "" : "; ") + d;
  r.notes.push_back(
      fmt::format("{}: the two runs offered different loads ({}), so their latency "
                  "differs for that reason too, not only the server's",
                  group, list));
}

// One latency statistic of the two runs, judged by bootstrap over `sa` and `sb` (the per-request
// samples) when both have enough, else by threshold. Returns whether the bootstrap judged.
bool CompareLatencyStatistic(const std::string& group, const std::string& name,
                             std::optional<double> va, std::optional<double> vb,
                             std::optional<double> q, std::vector<double>& sa,
                             std::vector<double>& sb, const CompareOptions& o, CompareResult& r) {
  // A bootstrap of a few samples a side calls any difference real (with two each, every
  // resample keeps their order): it needs enough of them, more for a tail.
  const size_t need = q && *q > 0.9 ? kMinTailBootstrapSamples : kMinBootstrapSamples;
  if (sa.size() < need || sb.size() < need) {
    r.metrics.push_back(ByThreshold(group, name, "ms", Direction::kLowerIsBetter, va, vb,
                                    IsTail(name) ? kThresholdTail : kThresholdCentre,
                                    kLatencyFloorMs));
    return false;
  }
  MetricDelta m;
  m.group = group;
  m.name = name;
  m.unit = "ms";
  m.direction = Direction::kLowerIsBetter;
  m.a = va ? va : std::optional<double>(Stat(sa, q));
  m.b = vb ? vb : std::optional<double>(Stat(sb, q));
  m.method = NoiseMethod::kBootstrap;
  Interval ci = BootstrapDiff(sa, sb, q, o.resamples, o.seed);
  m.ci_lo = ci.lo;
  m.ci_hi = ci.hi;
  m.beyond_noise =
      (ci.lo > 0 || ci.hi < 0) && m.a && m.b && std::fabs(*m.b - *m.a) > kLatencyFloorMs;
  Judge(m);
  r.metrics.push_back(std::move(m));
  return true;
}

}  // namespace

void CompareBench(const LoadFacts& a, const LoadFacts& b, const std::string& group,
                  const CompareOptions& o, CompareResult& r) {
  NoteWorkloadDifferences(a, b, group, r);
  using Stats = std::optional<loadgen::LatencyStats> LoadFacts::*;
  using Samples = std::vector<double> loadgen::PerRequestSamples::*;
  struct Series {
    const char* metric;
    Stats stats;
    Samples samples;  // null: no per-request samples (ITL)
  };
  const Series series[] = {{"ttft", &LoadFacts::ttft, &loadgen::PerRequestSamples::ttft_ms},
                           {"tpot", &LoadFacts::tpot, &loadgen::PerRequestSamples::tpot_ms},
                           {"itl", &LoadFacts::itl, nullptr},
                           {"e2el", &LoadFacts::e2el, &loadgen::PerRequestSamples::e2el_ms}};
  struct Statistic {
    const char* prefix;
    std::optional<double> q;
  };
  const Statistic statistics[] = {{"mean", std::nullopt}, {"median", 0.5}, {"p99", 0.99}};
  auto value = [](const LoadFacts& f, Stats stats, const Statistic& st) -> std::optional<double> {
    const std::optional<loadgen::LatencyStats>& s = f.*stats;
    if (!s) return std::nullopt;
    if (!st.q) return s->mean_ms;
    return *st.q == 0.5 ? s->median_ms : s->p99_ms();
  };
  auto samples = [](const LoadFacts& f, Samples which) {
    return which && f.per_request ? (*f.per_request).*which : std::vector<double>();
  };
  bool any_bootstrap = false;
  for (const Series& s : series) {
    std::vector<double> sa = samples(a, s.samples), sb = samples(b, s.samples);
    for (const Statistic& st : statistics) {
      any_bootstrap |=
          CompareLatencyStatistic(group, loadgen::StatKey(st.prefix, s.metric),
                                  value(a, s.stats, st), value(b, s.stats, st), st.q, sa, sb, o, r);
    }
  }
  if (!any_bootstrap)
    r.notes.push_back(fmt::format(
        "{}: fewer than {} per-request samples in one file or both, so noise is judged by "
        "relative thresholds ({:.0f}% for means and medians, {:.0f}% for p99, and at least {} ms)",
        group, kMinBootstrapSamples, kThresholdCentre * 100, kThresholdTail * 100,
        kLatencyFloorMs));
  using Rate = std::tuple<const char*, const char*, std::optional<double>, std::optional<double>>;
  for (auto [name, unit, va, vb] :
       {Rate{keys::kRequestThroughput, "req/s", a.request_throughput, b.request_throughput},
        Rate{keys::kOutputThroughput, "tok/s", a.output_throughput, b.output_throughput},
        Rate{keys::kRequestGoodput, "req/s", a.request_goodput, b.request_goodput}}) {
    r.metrics.push_back(
        ByThreshold(group, name, unit, Direction::kHigherIsBetter, va, vb, kThresholdCentre, 0));
  }
  auto error_rate = [](const LoadFacts& d) -> std::optional<double> {
    if (d.completed + d.failed == 0) return std::nullopt;
    return double(d.failed) / double(d.completed + d.failed) * 100;
  };
  r.metrics.push_back(ByThreshold(group, "error_rate", "%", Direction::kLowerIsBetter,
                                  error_rate(a), error_rate(b), 0, kErrorRateFloor * 100));
  // The server's split of TTFT, from /metrics.
  const auto& wa = a.server.ttft_breakdown;
  const auto& wb = b.server.ttft_breakdown;
  if (wa && wb) {
    using Part = std::optional<double> loadgen::TtftSplit::*;
    for (auto [name, part] :
         {std::pair<const char*, Part>{"queue_ms", &loadgen::TtftSplit::queue_ms},
          std::pair<const char*, Part>{"prefill_ms", &loadgen::TtftSplit::prefill_ms},
          std::pair<const char*, Part>{"network_and_front_end_ms",
                                       &loadgen::TtftSplit::network_and_front_end_ms}}) {
      r.metrics.push_back(ByThreshold(group + " ttft split", name, "ms", Direction::kLowerIsBetter,
                                      (*wa).*part, (*wb).*part, kThresholdCentre, kLatencyFloorMs));
    }
  }
}

}  // namespace latdoc::compare::internal
