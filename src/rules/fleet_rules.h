// Fleet rules: verdicts on a fleet of inference-server replicas from the facts Prometheus holds
// about each (`latdoc fleet`, src/fleet/). Pure functions from typed facts to findings, like the
// other rules; nothing here talks to Prometheus.
//
// The verdicts:
//   fleet.outlier_ttft, fleet.outlier_itl  one per replica whose p99 TTFT (ITL) is beyond the
//       fleet's robust bound: median + k * 1.4826 * MAD (k = outlier_k, 3 by default; 1.4826
//       makes the MAD estimate a standard deviation for normal data), and never below
//       outlier_min_ratio (1.5) times the median, so that a tight fleet does not flag noise.
//       `fail` when the replica is also at least outlier_fail_ratio (2) times the median. The
//       finding names the exporter finding that explains it when the replica's exporter reports
//       a warn or fail one, else says whether the replica queues or its steps are slow.
//   fleet.load_imbalance  one per over-loaded replica when the coefficient of variation
//       (population stdev / mean) of the replicas' mean running sequences (the balancer's
//       assignment, independent of a replica's speed; the request rate when no replica reports
//       running) is above imbalance_cv (0.3) and the replica carries at least overloaded_ratio
//       (1.5) times the median.
//   fleet.past_knee  more than knee_fraction (half) of the replicas queue (mean waiting >=
//       queueing_waiting, or queue time >= queueing_share of TTFT), with the replicas to add.
//   fleet.target_down  one per replica whose `up` is 0 (fail); fleet.target_stale one per
//       replica whose series stopped within the window (warn).
// Checks that passed give one `ok` finding each (fleet.outliers, fleet.load_balance,
// fleet.capacity, fleet.targets); checks without enough data give a `skip`.
// Per-replica findings carry the replica in an evidence named "replica" (ReplicaOf()).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/finding.h"

namespace latdoc::rules {

// A warn or fail finding a replica's `latdoc exporter` reported within the window.
struct ExporterFinding {
  std::string rule;       // "load.itl_stalls"
  Severity severity = Severity::kWarn;
};

// What Prometheus says about one replica over the window. nullopt: no series gave it.
struct ReplicaFacts {
  std::string replica;                     // the replica label's value, "10.0.0.7:8000"
  std::optional<bool> up;                  // `up` at the end of the window
  bool stale = false;                      // its series stopped within the window
  std::optional<double> request_rate_per_s;
  std::optional<double> ttft_p50_s, ttft_p99_s;
  std::optional<double> itl_p50_s, itl_p99_s;
  std::optional<double> queue_share;       // mean queue time / mean TTFT, 0..1
  std::optional<double> running_mean;      // mean running sequences
  std::optional<double> waiting_mean;      // mean waiting requests
  std::optional<double> kv_usage_ratio;    // mean KV-cache usage, 0..1
  std::optional<double> preemptions;       // in the window
  bool has_exporter = false;               // a latdoc exporter watches it
  std::vector<ExporterFinding> exporter_findings;
};

struct FleetRuleOptions {
  double outlier_k = 3;
  double outlier_min_ratio = 1.5;
  double outlier_fail_ratio = 2;
  double imbalance_cv = 0.3;
  double overloaded_ratio = 1.5;
  double queueing_waiting = 0.5;
  double queueing_share = 0.2;
  double knee_fraction = 0.5;
};

// The fleet's findings, unranked (RankFindings orders them). Replicas that are down or stale
// take no part in the outlier, imbalance and knee checks.
std::vector<Finding> JudgeFleet(const std::vector<ReplicaFacts>& replicas,
                                const FleetRuleOptions& options = {});

// The replica a per-replica finding is about ("" for a fleet-wide one).
std::string_view ReplicaOf(const Finding& f);

// The median of `v` (nullopt when empty), and the median absolute deviation from it.
std::optional<double> Median(std::vector<double> v);
std::optional<double> MedianAbsoluteDeviation(const std::vector<double>& v);

}  // namespace latdoc::rules
