#include "rules/fleet_rules.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/core.h>

namespace latdoc::rules {
namespace {

// 1.4826 * MAD estimates the standard deviation of normally distributed data.
constexpr double kMadToSigma = 1.4826;

Evidence Ev(std::string name, std::optional<double> v, std::string unit, std::string text = "") {
  return Evidence{std::move(name), v, std::move(unit), std::move(text)};
}

Evidence ReplicaEv(const std::string& replica) { return Ev("replica", {}, "", replica); }

Finding Make(std::string id, Layer layer, Severity sev, std::string title,
             std::vector<Evidence> ev, std::string advice,
             std::optional<double> share = std::nullopt) {
  Finding f;
  f.id = std::move(id);
  f.layer = layer;
  f.severity = sev;
  f.title = std::move(title);
  f.evidence = std::move(ev);
  f.advice = std::move(advice);
  f.latency_share = share;
  return f;
}

Finding Skip(std::string id, Layer layer, std::string why) {
  return Make(std::move(id), layer, Severity::kSkip, "not checked: " + why,
              {Ev("reason", {}, "", why)}, "");
}

std::string Ms(double s) { return fmt::format("{:.1f} ms", s * 1e3); }

bool Live(const ReplicaFacts& r) { return r.up.value_or(true) && !r.stale; }

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Whether an exporter finding speaks to slow tokens (ITL) or a slow first token (TTFT): load
// rules by name; host, kernel and network findings bear on both.
bool Relevant(std::string_view rule, bool itl) {
  if (rule.rfind("load.", 0) != 0) return true;
  if (itl) return rule.find("itl") != std::string_view::npos || rule.find("kv") != std::string_view::npos;
  return rule.find("queue") != std::string_view::npos || rule.find("prefill") != std::string_view::npos ||
         rule.find("ttft") != std::string_view::npos || rule.find("kv") != std::string_view::npos;
}

// Whether at least half of `others` report `rule` too (then it does not tell this replica apart).
bool Common(std::string_view rule, const std::vector<const ReplicaFacts*>& others) {
  size_t n = 0, with = 0;
  for (const ReplicaFacts* o : others) {
    if (!o->has_exporter) continue;
    ++n;
    for (const ExporterFinding& f : o->exporter_findings)
      if (f.rule == rule && f.severity >= Severity::kWarn) {
        ++with;
        break;
      }
  }
  return n > 0 && 2 * with >= n;
}

// The exporter finding that explains a slow replica ("" if none): among its warn and fail
// findings, one that bears on the metric first, then one the other replicas do not share, then
// the worst, then by rule id.
std::string ExplainingFinding(const ReplicaFacts& r, bool itl,
                              const std::vector<const ReplicaFacts*>& others) {
  const ExporterFinding* best = nullptr;
  auto key = [&](const ExporterFinding& f) {
    return std::make_tuple(!Relevant(f.rule, itl), Common(f.rule, others), -int(f.severity),
                           f.rule);
  };
  for (const ExporterFinding& f : r.exporter_findings) {
    if (f.severity < Severity::kWarn) continue;
    if (!best || key(f) < key(*best)) best = &f;
  }
  return best ? fmt::format("{} ({})", best->rule, SeverityName(best->severity)) : "";
}

bool Queueing(const ReplicaFacts& r, const FleetRuleOptions& o) {
  return r.waiting_mean.value_or(0) >= o.queueing_waiting ||
         r.queue_share.value_or(0) >= o.queueing_share;
}

// fleet.outlier_ttft / fleet.outlier_itl for one metric.
void JudgeOutliers(const std::vector<const ReplicaFacts*>& live, const FleetRuleOptions& o,
                   const char* id, const char* label,
                   std::optional<double> ReplicaFacts::*metric, std::vector<Finding>& out,
                   int& judged) {
  std::vector<double> v;
  for (const ReplicaFacts* r : live)
    if (r->*metric) v.push_back(*(r->*metric));
  if (v.size() < 3) return;
  ++judged;
  const double median = *Median(v);
  const double mad = *MedianAbsoluteDeviation(v);
  const double bound = std::max(median + o.outlier_k * kMadToSigma * mad,
                                median * o.outlier_min_ratio);
  for (const ReplicaFacts* r : live) {
    if (!(r->*metric) || *(r->*metric) <= bound) continue;
    const double x = *(r->*metric);
    const Severity sev = x >= median * o.outlier_fail_ratio ? Severity::kFail : Severity::kWarn;
    std::vector<Evidence> ev = {ReplicaEv(r->replica), Ev(std::string(label), x * 1e3, "ms"),
                                Ev("fleet_median", median * 1e3, "ms"),
                                Ev("fleet_bound", bound * 1e3, "ms")};
    if (r->queue_share) ev.push_back(Ev("queue_share", *r->queue_share * 100, "%"));
    std::vector<const ReplicaFacts*> others;
    for (const ReplicaFacts* x : live)
      if (x != r) others.push_back(x);
    const std::string why =
        ExplainingFinding(*r, metric == &ReplicaFacts::itl_p99_s, others);
    std::string advice;
    if (!why.empty()) {
      ev.push_back(Ev("explained_by", {}, "", why));
      advice = fmt::format("its latdoc exporter reports {}: that finding's advice applies to this "
                           "replica (latdoc diagnose against it gives the detail)", why);
    } else if (Queueing(*r, o)) {
      ev.push_back(Ev("cause", {}, "", "it queues"));
      advice = "it queues: give it less load (see fleet.load_imbalance) or more capacity "
               "(--max-num-seqs, KV cache)";
    } else {
      ev.push_back(Ev("cause", {}, "", "slow steps without queueing"));
      advice = "its steps are slow without queueing: compare its host and GPU with a healthy "
               "replica's (latdoc doctor on both nodes: PCIe link, clocks, NUMA placement)";
    }
    out.push_back(Make(id, Layer::kSystem, sev,
                       fmt::format("replica {}: {} {}, {:.1f}x the fleet's median {} (bound {})",
                                   r->replica, label == std::string("ttft_p99") ? "p99 TTFT" : "p99 ITL",
                                   Ms(x), x / median, Ms(median), Ms(bound)),
                       std::move(ev), std::move(advice), (x - median) / x));
  }
}

}  // namespace

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::optional<double> MedianAbsoluteDeviation(const std::vector<double>& v) {
  const std::optional<double> m = Median(v);
  if (!m) return std::nullopt;
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - *m));
  return Median(std::move(dev));
}

std::string_view ReplicaOf(const Finding& f) {
  for (const Evidence& e : f.evidence)
    if (e.name == "replica") return e.text;
  return {};
}

namespace {

// Down or stale replicas (they take no part in the other checks): a finding each; how many.
size_t JudgeTargets(const std::vector<ReplicaFacts>& replicas, std::vector<Finding>& out) {
  size_t bad_targets = 0;
  for (const ReplicaFacts& r : replicas) {
    if (r.up && !*r.up) {
      ++bad_targets;
      out.push_back(Make("fleet.target_down", Layer::kSystem, Severity::kFail,
                         fmt::format("replica {}: down (Prometheus's up is 0)", r.replica),
                         {ReplicaEv(r.replica), Ev("up", 0, "")},
                         "Prometheus cannot scrape it: is the server running, and its /metrics "
                         "reachable from Prometheus? (the target's lastError in Prometheus's "
                         "/targets page says why)"));
    } else if (r.stale) {
      ++bad_targets;
      out.push_back(Make("fleet.target_stale", Layer::kSystem, Severity::kWarn,
                         fmt::format("replica {}: its series stopped within the window",
                                     r.replica),
                         {ReplicaEv(r.replica)},
                         "the replica left the scrape targets or was restarted under another "
                         "name; if it should serve, check the service discovery and the pod"));
    }
  }
  return bad_targets;
}

// Replicas whose p99 TTFT or ITL lies far above the fleet's.
void JudgeFleetOutliers(const std::vector<const ReplicaFacts*>& live, const FleetRuleOptions& o,
                        std::vector<Finding>& out) {
  const size_t before = out.size();
  int judged = 0;
  JudgeOutliers(live, o, "fleet.outlier_ttft", "ttft_p99", &ReplicaFacts::ttft_p99_s, out, judged);
  JudgeOutliers(live, o, "fleet.outlier_itl", "itl_p99", &ReplicaFacts::itl_p99_s, out, judged);
  if (judged == 0) {
    out.push_back(Skip("fleet.outliers", Layer::kSystem,
                       "fewer than 3 live replicas report TTFT or ITL histograms"));
  } else if (out.size() == before) {
    out.push_back(Make("fleet.outliers", Layer::kSystem, Severity::kOk,
                       fmt::format("no replica's p99 TTFT or ITL beyond the fleet's bound "
                                   "(median + {} MAD, at least {}x the median)",
                                   o.outlier_k, o.outlier_min_ratio),
                       {Ev("replicas", double(live.size()), "")}, ""));
  }
}

// The finding for replica `r`, over-loaded at `x` of `signal` ("request_rate" or "running").
Finding OverloadedFinding(const ReplicaFacts& r, double x, const std::string& signal, double median,
                          double cv, double ref, const std::vector<std::string>& under,
                          const std::optional<double>& ttft_median) {
  const char* what = signal == "running" ? "running sequences" : "requests/s";
  const char* per = signal == "running" ? " on average" : "";
  std::vector<Evidence> ev = {ReplicaEv(r.replica), Ev(signal, x, ""),
                              Ev("fleet_median", median, ""), Ev("fleet_cv", cv, "")};
  if (signal == "request_rate" && r.running_mean) ev.push_back(Ev("running", *r.running_mean, ""));
  if (signal == "running" && r.request_rate_per_s)
    ev.push_back(Ev("request_rate", *r.request_rate_per_s, "/s"));
  if (!under.empty()) ev.push_back(Ev("least_loaded", {}, "", JoinNames(under)));
  std::optional<double> share;
  if (r.ttft_p99_s && ttft_median && *r.ttft_p99_s > *ttft_median)
    share = (*r.ttft_p99_s - *ttft_median) / *r.ttft_p99_s;
  return Make("fleet.load_imbalance", Layer::kLoad, Severity::kWarn,
              fmt::format("replica {}: over-loaded, {:.2f} {}{}, {:.1f}x the fleet's median "
                          "{:.2f} (CV {:.2f})",
                          r.replica, x, what, per, x / ref, median, cv),
              std::move(ev),
              "the balancer sends it more than its share: use least-outstanding-requests (or "
              "prefix-aware) balancing rather than round-robin or sticky sessions, and check "
              "its weight",
              share);
}

// Load imbalance: the request rate the balancer gives each replica, else (no rates) the
// running sequences.
void JudgeLoadBalance(const std::vector<const ReplicaFacts*>& live, const FleetRuleOptions& o,
                      std::vector<Finding>& out) {
  std::vector<std::pair<const ReplicaFacts*, double>> load;
  std::string signal = "request_rate";
  for (const ReplicaFacts* r : live)
    if (r->request_rate_per_s) load.push_back({r, *r->request_rate_per_s});
  double total = 0;
  for (const auto& [r, x] : load) total += x;
  if (load.size() < 2 || total <= 0) {
    load.clear();
    signal = "running";
    for (const ReplicaFacts* r : live)
      if (r->running_mean) load.push_back({r, *r->running_mean});
    total = 0;
    for (const auto& [r, x] : load) total += x;
  }
  std::vector<double> running;
  for (const ReplicaFacts* r : live)
    if (r->running_mean) running.push_back(*r->running_mean);
  const std::optional<double> running_median = Median(running);
  if (load.size() < 2 || total <= 0) {
    out.push_back(Skip("fleet.load_balance", Layer::kLoad,
                       "fewer than 2 live replicas with requests or running sequences"));
  } else {
    const double mean = total / double(load.size());
    double var = 0;
    std::vector<double> xs;
    for (const auto& [r, x] : load) {
      var += (x - mean) * (x - mean);
      xs.push_back(x);
    }
    const double cv = std::sqrt(var / double(load.size())) / mean;
    const double median = *Median(xs);
    const double ref = median > 0 ? median : mean;
    std::vector<std::string> under;
    for (const auto& [r, x] : load)
      if (x < ref / o.overloaded_ratio) under.push_back(r->replica);
    std::vector<double> ttft;
    for (const ReplicaFacts* r : live)
      if (r->ttft_p99_s) ttft.push_back(*r->ttft_p99_s);
    const std::optional<double> ttft_median = Median(ttft);
    const char* what = signal == "running" ? "running sequences" : "requests/s";
    size_t flagged = 0;
    if (cv > o.imbalance_cv) {
      for (const auto& [r, x] : load) {
        if (x < ref * o.overloaded_ratio) continue;
        // More requests but fewer sequences in flight than most: a fast replica, not a
        // loaded one.
        if (signal == "request_rate" && r->running_mean && running_median &&
            *r->running_mean < *running_median)
          continue;
        ++flagged;
        out.push_back(OverloadedFinding(*r, x, signal, median, cv, ref, under, ttft_median));
      }
    }
    if (flagged == 0)
      out.push_back(Make(
          "fleet.load_balance", Layer::kLoad, Severity::kOk,
          fmt::format("load spread evenly: CV of {} {:.2f} (bound {})", what, cv, o.imbalance_cv),
          {Ev("fleet_cv", cv, ""), Ev("fleet_median", median, "")}, ""));
  }
}

// Past the knee: most replicas queueing.
void JudgeCapacity(const std::vector<const ReplicaFacts*>& live, const FleetRuleOptions& o,
                   std::vector<Finding>& out) {
  std::vector<std::string> queueing;
  std::vector<double> shares;
  size_t known = 0;
  for (const ReplicaFacts* r : live) {
    if (!r->waiting_mean && !r->queue_share) continue;
    ++known;
    if (Queueing(*r, o)) queueing.push_back(r->replica);
    if (r->queue_share) shares.push_back(*r->queue_share);
  }
  if (known < 2) {
    out.push_back(Skip("fleet.capacity", Layer::kLoad,
                       "fewer than 2 live replicas report waiting requests or queue time"));
  } else if (double(queueing.size()) > o.knee_fraction * double(known)) {
    // Queue time q of TTFT t: the replicas serve (t - q) / t of the demand without a
    // queue, so the fleet needs about n * t / (t - q) replicas (a rough, first-order guess).
    const double share = std::min(Median(shares).value_or(o.queueing_share), 0.9);
    const int add = std::max(1, int(std::ceil(double(known) * share / (1 - share))));
    const Severity sev =
        queueing.size() == known && share >= 0.5 ? Severity::kFail : Severity::kWarn;
    out.push_back(Make("fleet.past_knee", Layer::kLoad, sev,
                       fmt::format("fleet past its knee: {} of {} replicas queue (median queue "
                                   "share of TTFT {:.0f}%); add about {} replica{}",
                                   queueing.size(), known, share * 100, add, add == 1 ? "" : "s"),
                       {Ev("queueing", double(queueing.size()), "", JoinNames(queueing)),
                        Ev("replicas", double(known), ""), Ev("queue_share", share * 100, "%"),
                        Ev("replicas_to_add", double(add), "")},
                       fmt::format("add about {} replica{} (or shed load); balancing alone "
                                   "cannot help when most replicas queue",
                                   add, add == 1 ? "" : "s"),
                       share));
  } else {
    out.push_back(
        Make("fleet.capacity", Layer::kLoad, Severity::kOk,
             fmt::format("{} of {} replicas queue: the fleet has headroom", queueing.size(), known),
             {Ev("queueing", double(queueing.size()), "", JoinNames(queueing))}, ""));
  }
}

}  // namespace

std::vector<Finding> JudgeFleet(const std::vector<ReplicaFacts>& replicas,
                                const FleetRuleOptions& o) {
  std::vector<Finding> out;

  // Targets: down or stale replicas first; they take no part in the checks below.
  const size_t bad_targets = JudgeTargets(replicas, out);
  if (replicas.empty()) {
    out.push_back(Skip("fleet.targets", Layer::kSystem, "no replica"));
    return out;
  }
  if (bad_targets == 0)
    out.push_back(Make("fleet.targets", Layer::kSystem, Severity::kOk,
                       fmt::format("all {} replicas up, none stopped reporting", replicas.size()),
                       {Ev("replicas", double(replicas.size()), "")}, ""));

  std::vector<const ReplicaFacts*> live;
  for (const ReplicaFacts& r : replicas)
    if (Live(r)) live.push_back(&r);

  JudgeFleetOutliers(live, o, out);
  JudgeLoadBalance(live, o, out);
  JudgeCapacity(live, o, out);
  return out;
}

}  // namespace latdoc::rules
