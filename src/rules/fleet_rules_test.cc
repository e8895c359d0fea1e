#include "rules/fleet_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::rules {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ReplicaFacts Replica(std::string name, double ttft_p99_ms, double itl_p99_ms, double running) {
  ReplicaFacts r;
  r.replica = std::move(name);
  r.up = true;
  r.ttft_p99_s = ttft_p99_ms / 1e3;
  r.itl_p99_s = itl_p99_ms / 1e3;
  r.running_mean = running;
  r.waiting_mean = 0;
  r.queue_share = 0.01;
  r.request_rate_per_s = running;
  return r;
}

std::vector<Finding> With(const std::vector<Finding>& all, std::string_view id) {
  std::vector<Finding> out;
  for (const Finding& f : all)
    if (f.id == id) out.push_back(f);
  return out;
}

const Evidence* Ev(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence)
    if (e.name == name) return &e;
  return nullptr;
}

TEST(FleetRulesTest, MedianAndMad) {
  EXPECT_EQ(Median({}), std::nullopt);
  EXPECT_DOUBLE_EQ(*Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(*Median({10, 10, 12, 40}), 11);
  // Deviations from 11: 1, 1, 1, 29.
  EXPECT_DOUBLE_EQ(*MedianAbsoluteDeviation({10, 10, 12, 40}), 1);
}

// A clean fleet: every check passes, one ok finding each, no per-replica finding.
TEST(FleetRulesTest, CleanFleetIsAllOk) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 20, 4), Replica("b", 105, 21, 4),
                                     Replica("c", 98, 20, 5), Replica("d", 102, 22, 4)};
  auto f = JudgeFleet(fleet);
  std::vector<std::string> ids;
  for (const Finding& x : f) {
    ids.push_back(x.id);
    EXPECT_EQ(x.severity, Severity::kOk) << x.id << ": " << x.title;
  }
  EXPECT_THAT(ids, ElementsAre("fleet.targets", "fleet.outliers", "fleet.load_balance",
                               "fleet.capacity"));
}

// The slow replica's ITL is 4x the median: a fail, named, explained by its exporter's finding;
// the median + 3 MAD bound (11 + 3 * 1.4826 * 1 = 15.4 ms) is below the 1.5x floor (16.5 ms).
TEST(FleetRulesTest, OutlierNamedWithItsExplainingFinding) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 10, 1), Replica("b", 100, 10, 1),
                                     Replica("c", 100, 12, 1), Replica("slow", 110, 40, 1)};
  fleet[3].has_exporter = true;
  fleet[3].exporter_findings = {{"load.queueing", Severity::kWarn}, {"load.itl_stalls", Severity::kFail}};
  auto f = With(JudgeFleet(fleet), "fleet.outlier_itl");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(ReplicaOf(f[0]), "slow");
  EXPECT_EQ(f[0].severity, Severity::kFail);
  EXPECT_EQ(f[0].title, "replica slow: p99 ITL 40.0 ms, 3.6x the fleet's median 11.0 ms (bound 16.5 ms)");
  ASSERT_NE(Ev(f[0], "explained_by"), nullptr);
  EXPECT_EQ(Ev(f[0], "explained_by")->text, "load.itl_stalls (fail)");
  EXPECT_NEAR(*f[0].latency_share, (40.0 - 11) / 40, 1e-9);
  EXPECT_TRUE(With(JudgeFleet(fleet), "fleet.outlier_ttft").empty());
}

// Beyond the bound but under 2x the median: warn; without an exporter finding and without a
// queue, the cause is slow steps.
TEST(FleetRulesTest, ModerateOutlierWarnsAndSaysSlowSteps) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 10, 1), Replica("b", 100, 10, 1),
                                     Replica("c", 101, 10, 1), Replica("d", 180, 10, 1)};
  auto f = With(JudgeFleet(fleet), "fleet.outlier_ttft");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarn);
  EXPECT_EQ(Ev(f[0], "cause")->text, "slow steps without queueing");
}

// A tight fleet does not flag noise: 12 ms against a median of 10 ms with a MAD near 0 is
// beyond median + 3 MAD but under the 1.5x floor.
TEST(FleetRulesTest, TightFleetDoesNotFlagNoise) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 10, 1), Replica("b", 100, 10, 1),
                                     Replica("c", 100, 10, 1), Replica("d", 100, 12, 1)};
  auto f = JudgeFleet(fleet);
  EXPECT_TRUE(With(f, "fleet.outlier_itl").empty());
  ASSERT_EQ(With(f, "fleet.outliers").size(), 1u);
  EXPECT_EQ(With(f, "fleet.outliers")[0].severity, Severity::kOk);
}

TEST(FleetRulesTest, FewerThanThreeReplicasSkipOutliers) {
  auto f = JudgeFleet({Replica("a", 100, 10, 1), Replica("b", 900, 90, 1)});
  ASSERT_EQ(With(f, "fleet.outliers").size(), 1u);
  EXPECT_EQ(With(f, "fleet.outliers")[0].severity, Severity::kSkip);
}

// One replica with three times the running sequences of the others: CV 0.58, it alone is
// named, and the least loaded are listed.
TEST(FleetRulesTest, ImbalanceNamesTheOverloadedReplica) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 10, 1), Replica("b", 100, 10, 1),
                                     Replica("c", 100, 10, 1), Replica("heavy", 130, 11, 3)};
  auto f = With(JudgeFleet(fleet), "fleet.load_imbalance");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(ReplicaOf(f[0]), "heavy");
  EXPECT_EQ(f[0].severity, Severity::kWarn);
  EXPECT_EQ(f[0].title, "replica heavy: over-loaded, 3.00 requests/s, 3.0x the fleet's median "
                        "1.00 (CV 0.58)");
  EXPECT_NEAR(*f[0].latency_share, 30.0 / 130, 1e-9);
}

// Without request rates the running sequences are the signal.
TEST(FleetRulesTest, ImbalanceFallsBackToRunning) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 10, 1), Replica("b", 100, 10, 1),
                                     Replica("c", 100, 10, 4)};
  for (auto& r : fleet) r.request_rate_per_s.reset();
  auto f = With(JudgeFleet(fleet), "fleet.load_imbalance");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_THAT(f[0].title, HasSubstr("4.00 running sequences on average"));
}

// A replica that serves more requests with fewer in flight than most is fast, not loaded; a
// slow one (fewer requests, more in flight) is not over-loaded either.
TEST(FleetRulesTest, FastReplicaIsNotOverloaded) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 10, 2), Replica("b", 100, 10, 2),
                                     Replica("c", 100, 10, 2), Replica("fast", 50, 5, 2)};
  fleet[3].request_rate_per_s = 6;
  fleet[3].running_mean = 1.5;
  EXPECT_TRUE(With(JudgeFleet(fleet), "fleet.load_imbalance").empty());
}

// Of the slow replica's exporter findings, the one on ITL that the clean replicas do not share
// explains an ITL outlier, over a worse finding on queueing.
TEST(FleetRulesTest, ExplanationPrefersARelevantDistinctFinding) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 10, 1), Replica("b", 100, 10, 1),
                                     Replica("c", 100, 10, 1), Replica("slow", 100, 40, 1)};
  for (auto& r : fleet) {
    r.has_exporter = true;
    r.exporter_findings = {{"load.network_front_end", Severity::kWarn}};
  }
  fleet[3].exporter_findings = {{"load.queueing", Severity::kFail},
                                {"load.network_front_end", Severity::kWarn},
                                {"load.itl_stalls", Severity::kWarn}};
  auto f = With(JudgeFleet(fleet), "fleet.outlier_itl");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Ev(f[0], "explained_by")->text, "load.itl_stalls (warn)");
}

// Three of four replicas queue: past the knee, with replicas to add (median share 0.4:
// 4 * 0.4 / 0.6 = 2.67, so 3).
TEST(FleetRulesTest, PastKneeWhenMostReplicasQueue) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 10, 8), Replica("b", 100, 10, 8),
                                     Replica("c", 100, 10, 8), Replica("d", 100, 10, 8)};
  for (int i = 0; i < 3; ++i) {
    fleet[i].waiting_mean = 5;
    fleet[i].queue_share = 0.4;
  }
  auto f = With(JudgeFleet(fleet), "fleet.past_knee");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarn);
  EXPECT_EQ(f[0].title, "fleet past its knee: 3 of 4 replicas queue (median queue share of TTFT "
                        "40%); add about 3 replicas");
  EXPECT_EQ(Ev(f[0], "queueing")->text, "a, b, c");
}

// Down and stale replicas are named and left out of the other checks.
TEST(FleetRulesTest, DownAndStaleTargets) {
  std::vector<ReplicaFacts> fleet = {Replica("a", 100, 10, 1), Replica("b", 100, 10, 1),
                                     Replica("c", 100, 10, 1), Replica("down", 900, 90, 9),
                                     Replica("gone", 900, 90, 9)};
  fleet[3].up = false;
  fleet[4].stale = true;
  auto f = JudgeFleet(fleet);
  ASSERT_EQ(With(f, "fleet.target_down").size(), 1u);
  EXPECT_EQ(With(f, "fleet.target_down")[0].severity, Severity::kFail);
  EXPECT_EQ(With(f, "fleet.target_down")[0].title, "replica down: down (Prometheus's up is 0)");
  ASSERT_EQ(With(f, "fleet.target_stale").size(), 1u);
  EXPECT_EQ(ReplicaOf(With(f, "fleet.target_stale")[0]), "gone");
  EXPECT_TRUE(With(f, "fleet.targets").empty());
  EXPECT_TRUE(With(f, "fleet.outlier_itl").empty());
  EXPECT_TRUE(With(f, "fleet.load_imbalance").empty());
}

}  // namespace
}  // namespace latdoc::rules
