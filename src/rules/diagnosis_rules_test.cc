#include "rules/diagnosis_rules.h"

#include <gtest/gtest.h>

namespace latdoc::rules {
namespace {

Finding FrontEndWarn() {
  Finding f;
  f.id = "load.network_front_end";
  f.layer = Layer::kLoad;
  f.severity = Severity::kWarn;
  f.title = "40.0 ms of TTFT is spent outside the engine";
  return f;
}

// The probe measured most of the time outside the engine as network: what is left for the front
// end is small, so the front-end warning becomes information, its share the front end's alone.
TEST(DiagnosisRulesTest, FrontEndLeftSmallByTheProbeIsInfo) {
  std::vector<Finding> all = {FrontEndWarn()};
  LoadRuleOptions lo;
  ReweighFrontEnd(all, FrontEndSplit{40, 39, 1, 100}, 200, lo);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].severity, Severity::kInfo);
  EXPECT_EQ(all[0].title,
            "40.0 ms of TTFT is spent outside the engine; the network probe measured 39.0 ms of "
            "it (see the net.* findings), leaving 1.0 ms for the front end");
  ASSERT_TRUE(all[0].latency_share.has_value());
  EXPECT_DOUBLE_EQ(*all[0].latency_share, 1.0 / 200);
  ASSERT_EQ(all[0].evidence.size(), 2u);
  EXPECT_EQ(all[0].evidence[0].name, "network_measured");
  EXPECT_EQ(all[0].evidence[1].value, 1);
}

// A large front end stays a warning; other findings are left alone.
TEST(DiagnosisRulesTest, LargeFrontEndStaysAWarning) {
  Finding other;
  other.id = "load.queueing";
  other.severity = Severity::kWarn;
  std::vector<Finding> all = {other, FrontEndWarn()};
  LoadRuleOptions lo;
  ReweighFrontEnd(all, FrontEndSplit{80, 5, 75, 100}, 300, lo);
  EXPECT_EQ(all[0].evidence.size(), 0u);
  EXPECT_EQ(all[1].severity, Severity::kWarn);
  EXPECT_DOUBLE_EQ(*all[1].latency_share, 75.0 / 300);
}

TEST(DiagnosisRulesTest, LoadFailuresAreFailsOfTheLoadLayerWithTheError) {
  const Finding u = LoadUnreachable("http://h:1", "connection refused");
  EXPECT_EQ(u.id, "load.unreachable");
  EXPECT_EQ(u.layer, Layer::kLoad);
  EXPECT_EQ(u.severity, Severity::kFail);
  EXPECT_EQ(u.title, "the target http://h:1 could not be reached");
  ASSERT_EQ(u.evidence.size(), 1u);
  EXPECT_EQ(u.evidence[0].text, "connection refused");
  const Finding s = LoadStoppedAnswering("http://h:1", 16, "EOF");
  EXPECT_EQ(s.title, "the target http://h:1 stopped answering after 16 requests");
  ASSERT_EQ(s.evidence.size(), 2u);
  EXPECT_EQ(s.evidence[1].value, 16);
  EXPECT_EQ(LoadRefused("http://h:1", "HTTP 401").id, "load.refused");
}

}  // namespace
}  // namespace latdoc::rules
