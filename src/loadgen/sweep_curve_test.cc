#include "loadgen/sweep_curve.h"

#include <gtest/gtest.h>

namespace latdoc::loadgen {
namespace {

using nlohmann::ordered_json;

// doctor --sweep: the knee's batch, from every shape of sweep document latdoc has read.
TEST(SweepCurveTest, KneeBatch) {
  EXPECT_EQ(*SweepKneeFromJson(R"({"knee": {"concurrency": 48}})", "s.json"), 48);
  EXPECT_EQ(*SweepKneeFromJson(R"({"recommendation": {"max_num_seqs": 32.4}})", "s.json"), 32);
  EXPECT_EQ(*SweepKneeFromJson(R"({"knee_concurrency": 8})", "s.json"), 8);
  // The shape latdoc sweep writes (loadgen/sweep_report.cc), open-loop: knee by request rate.
  EXPECT_EQ(*SweepKneeFromJson(R"({"knee": {"request_rate": 12.5, "bend": "queueing"},
      "recommendations": {"max_num_seqs": {"flag": "--max-num-seqs", "value": 75}}})",
                               "s.json"),
            75);
  EXPECT_EQ(*SweepKneeFromJson(R"({"knee": {"concurrency": 16},
      "recommendations": {"max_num_seqs": {"flag": "--max-num-seqs", "value": 75}}})",
                               "s.json"),
            16);
  EXPECT_EQ(SweepKneeFromJson("[1]", "s.json").status().message(), "s.json: not a JSON object");
  EXPECT_EQ(SweepKneeFromJson(R"({"knee": {}})", "s.json").status().message(),
            "s.json: no knee found (expected knee.concurrency, knee.max_num_seqs, "
            "recommendations.max_num_seqs.value, recommendation.max_num_seqs or "
            "knee_concurrency)");
}

// The curve the reports draw: steps by load, the knee on the load axis.
TEST(SweepCurveTest, CurveOfASweepDocument) {
  const ordered_json doc = {{"model_id", "m"},
                            {"steps",
                             {{{"concurrency", 8}, {"p99_ttft_ms", 90}, {"output_throughput", 800}},
                              {{"concurrency", 1}, {"p99_ttft_ms", 20}, {"p99_itl_ms", "bad"}},
                              {{"p99_ttft_ms", 5}},  // no load: skipped
                              {{"concurrency", 4}, {"p99_e2el_ms", 300}, {"tokens_per_s", 400}}}},
                            {"knee", {{"concurrency", 4}, {"reached", true}}}};
  auto c = SweepCurveFromJson(doc, "s.json");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->rate_mode);
  EXPECT_EQ(c->model_id, "m");
  ASSERT_EQ(c->steps.size(), 3u);
  EXPECT_EQ(c->steps[0], (SweepCurve::Step{1, 20, std::nullopt, std::nullopt, std::nullopt}));
  EXPECT_EQ(c->steps[1], (SweepCurve::Step{4, std::nullopt, std::nullopt, 300, 400}));
  EXPECT_EQ(c->steps[2], (SweepCurve::Step{8, 90, std::nullopt, std::nullopt, 800}));
  EXPECT_EQ(c->knee, 4);
  EXPECT_EQ(c->knee_reached, true);
  // Open loop: steps and knee by request rate; the batch is the sweep's advice.
  const ordered_json rate = {{"steps", {{{"request_rate", 2.5}}, {{"request_rate", 5}}}},
                             {"knee", {{"request_rate", 5}, {"reached", false}}},
                             {"recommendations", {{"max_num_seqs", {{"value", 75}}}}}};
  c = SweepCurveFromJson(rate, "s.json");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->rate_mode);
  EXPECT_EQ(c->knee, 5);
  EXPECT_EQ(c->knee_reached, false);
  EXPECT_EQ(c->knee_batch, 75);
  EXPECT_EQ(SweepCurveFromJson(ordered_json::array(), "s.json").status().message(),
            "s.json: not a JSON object");
}

}  // namespace
}  // namespace latdoc::loadgen
