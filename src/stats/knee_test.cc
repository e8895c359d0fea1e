#include "stats/knee.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace latdoc::stats {
namespace {

// A continuous-batching engine in closed loop, the shape latdoc sim produces: up to
// `max_num_seqs` requests decode together; a step takes fixed_ms + per_seq_ms * batch; a
// request generates `out_tokens` tokens; requests beyond max_num_seqs wait for a slot, so
// their latency grows in proportion to the load. The true knee is
// min(max_num_seqs, fixed_ms / per_seq_ms) (knee.h).
struct Engine {
  double max_num_seqs;
  double fixed_ms;
  double per_seq_ms;
  double out_tokens = 128;

  SweepPoint At(double c) const {
    const double batch = std::min(c, max_num_seqs);
    const double step_ms = fixed_ms + per_seq_ms * batch;
    const double e2e_ms = out_tokens * step_ms * std::max(1.0, c / max_num_seqs);
    SweepPoint p;
    p.concurrency = c;
    p.tokens_per_s = batch / step_ms * 1000;
    p.p99_latency_ns = static_cast<int64_t>(e2e_ms * 1e6);
    return p;
  }
  double TrueKnee() const { return std::min(max_num_seqs, fixed_ms / per_seq_ms); }
};

std::vector<SweepPoint> Ladder(const Engine& e, double from, double to, double ratio) {
  std::vector<SweepPoint> pts;
  for (double c = from; c <= to * 1.0000001; c *= ratio) pts.push_back(e.At(c));
  return pts;
}

TEST(KneeTest, HardLimitAtMaxNumSeqs) {
  for (double seqs : {16.0, 48.0, 64.0, 200.0}) {
    Engine e{seqs, 20.0, 0.001};  // step time nearly flat: the limit is max_num_seqs
    auto pts = Ladder(e, 1, 1024, 1.05);
    auto k = FindKnee(pts);
    ASSERT_TRUE(k.ok());
    EXPECT_TRUE(k->reached);
    const double c = pts[k->knee_index].concurrency;
    EXPECT_NEAR(c, e.TrueKnee(), 0.10 * e.TrueKnee()) << "max_num_seqs=" << seqs;
  }
}

TEST(KneeTest, ComputeBoundKneeWhereBatchCostEqualsFixedCost) {
  for (auto [fixed_ms, per_seq_ms] : {std::pair{10.0, 0.2}, {8.0, 0.05}, {30.0, 0.1}}) {
    Engine e{1024, fixed_ms, per_seq_ms};
    auto pts = Ladder(e, 1, 1024, 1.05);
    auto k = FindKnee(pts);
    ASSERT_TRUE(k.ok());
    EXPECT_TRUE(k->reached);
    const double c = pts[k->knee_index].concurrency;
    EXPECT_NEAR(c, e.TrueKnee(), 0.10 * e.TrueKnee())
        << "fixed=" << fixed_ms << " per_seq=" << per_seq_ms;
    // Before the knee every segment pays at least 1:1; the one after it does not.
    for (size_t i = 0; i < k->knee_index; ++i) EXPECT_GE(k->elasticity[i], 1.0) << i;
    EXPECT_LT(k->elasticity[k->knee_index], 1.0);
  }
}

// A geometric ladder (x2) lands near the knee; measuring RefineProbes() then finds
// it within 10%, which is what `latdoc sweep` does.
TEST(KneeTest, CoarseLadderThenBisectionConverges) {
  for (double seqs : {24.0, 48.0, 96.0, 300.0}) {
    Engine e{seqs, 25.0, 0.01};
    auto pts = Ladder(e, 1, 1024, 2.0);
    auto k = FindKnee(pts);
    ASSERT_TRUE(k.ok());
    Bracket b = RefineBracket(pts, *k);
    EXPECT_LT(b.lo_concurrency, e.TrueKnee());
    EXPECT_GT(b.hi_concurrency, e.TrueKnee());
    int steps = 0;
    for (auto probes = RefineProbes(pts, *k, 1.05); !probes.empty() && steps < 20;
         probes = RefineProbes(pts, *k, 1.05)) {
      for (double c : probes) pts.push_back(e.At(c));
      std::sort(pts.begin(), pts.end(), [](const SweepPoint& x, const SweepPoint& y) {
        return x.concurrency < y.concurrency;
      });
      k = FindKnee(pts);
      ASSERT_TRUE(k.ok());
      ++steps;
    }
    EXPECT_NEAR(pts[k->knee_index].concurrency, e.TrueKnee(), 0.10 * e.TrueKnee())
        << "max_num_seqs=" << seqs << " after " << steps << " bisection steps";
    EXPECT_LE(steps, 6);
  }
}

// Measurement noise of +-3% on both axes moves the knee by at most one ladder step.
TEST(KneeTest, RobustToSmallNoise) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  Engine e{64, 20.0, 0.01};
  for (int trial = 0; trial < 20; ++trial) {
    auto pts = Ladder(e, 1, 1024, 1.25);
    for (auto& p : pts) {
      p.tokens_per_s *= noise(rng);
      p.p99_latency_ns = static_cast<int64_t>(p.p99_latency_ns * noise(rng));
    }
    auto k = FindKnee(pts);
    ASSERT_TRUE(k.ok());
    EXPECT_NEAR(pts[k->knee_index].concurrency, 64, 64 * 0.3) << "trial " << trial;
  }
}

// One step whose p99 caught a stall (a loaded host: 1.8x its true value) is not a knee: the
// step after it does not confirm the bend, so the knee stays where the engine puts it. Every
// step below the knee is tried as the odd one.
TEST(KneeTest, OneStalledStepIsNotAKnee) {
  Engine e{48, 6.0, 0.08, 16};
  auto clean = Ladder(e, 1, 256, 1.1);
  auto k0 = FindKnee(clean);
  ASSERT_TRUE(k0.ok());
  ASSERT_TRUE(k0->confirmed_by.has_value());
  EXPECT_EQ(*k0->confirmed_by, k0->knee_index + 2);
  const double truth = clean[k0->knee_index].concurrency;
  EXPECT_NEAR(truth, e.TrueKnee(), 0.10 * e.TrueKnee());
  for (size_t odd = 1; odd < k0->knee_index; ++odd) {
    auto pts = clean;
    pts[odd].p99_latency_ns = static_cast<int64_t>(pts[odd].p99_latency_ns * 1.8);
    auto k = FindKnee(pts);
    ASSERT_TRUE(k.ok());
    EXPECT_LT(k->elasticity[odd - 1], 1.0) << "the stalled step bends its own segment";
    EXPECT_EQ(pts[k->knee_index].concurrency, truth) << "stalled step " << pts[odd].concurrency;
  }
}

// A bend on the last segment has no step after it: reported, but not confirmed.
TEST(KneeTest, BendOnTheLastSegmentIsUnconfirmed) {
  std::vector<SweepPoint> pts = {{1, 100, 10, {}}, {2, 105, 20, {}}, {4, 300, 22, {}}};
  auto k = FindKnee(pts);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(k->reached);
  EXPECT_EQ(k->knee_index, 1u);
  EXPECT_FALSE(k->confirmed_by.has_value());
  pts.push_back({8, 110, 40, {}});  // the step after says step 4 was the odd one
  k = FindKnee(pts);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->reached);
  EXPECT_EQ(k->knee_index, 3u);
}

TEST(KneeTest, NotReachedWhenThroughputScalesFreely) {
  Engine e{4096, 20.0, 0.0001};
  auto pts = Ladder(e, 1, 256, 2.0);
  auto k = FindKnee(pts);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->reached);
  EXPECT_EQ(k->knee_index, pts.size() - 1);
  for (double el : k->elasticity) EXPECT_GE(el, 1.0);
}

TEST(KneeTest, SinglePointAndBadInput) {
  std::vector<SweepPoint> one = {{1, 1000, 10, {}}};
  auto k = FindKnee(one);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->knee_index, 0u);
  EXPECT_FALSE(k->reached);
  EXPECT_TRUE(k->elasticity.empty());

  EXPECT_EQ(FindKnee(std::vector<SweepPoint>{}).status().message(), "knee: no sweep steps");
  std::vector<SweepPoint> unsorted = {{4, 1000, 10, {}}, {2, 1000, 10, {}}};
  EXPECT_EQ(FindKnee(unsorted).status().message(),
            "knee: step 1: concurrency must be strictly increasing");
  std::vector<SweepPoint> zero = {{1, 0, 10, {}}};
  EXPECT_EQ(FindKnee(zero).status().message(), "knee: step 0: p99 latency must be > 0");
}

TEST(KneeTest, ThroughputDropIsPastTheKnee) {
  std::vector<SweepPoint> pts = {{1, 100, 10, {}}, {2, 100, 20, {}}, {4, 150, 15, {}}};
  auto k = FindKnee(pts);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(std::isinf(k->elasticity[0]));
  EXPECT_EQ(k->elasticity[1], 0.0);
  EXPECT_EQ(k->knee_index, 1u);
}

TEST(KneeTest, SloAndGoodput) {
  std::vector<SweepPoint> pts = {{1, 100, 10, 1.0}, {2, 200, 20, 2.0}, {4, 300, 30, 2.5},
                                 {8, 600, 35, 1.5}};
  EXPECT_EQ(HighestMeetingSlo(pts, 300), 2u);  // inclusive
  EXPECT_EQ(HighestMeetingSlo(pts, 299), 1u);
  EXPECT_FALSE(HighestMeetingSlo(pts, 50).has_value());
  EXPECT_EQ(MaxGoodput(pts), 2u);
  pts[3].goodput_per_s = 2.5;  // tie: the lower concurrency wins
  EXPECT_EQ(MaxGoodput(pts), 2u);
  std::vector<SweepPoint> none = {{1, 100, 10, {}}};
  EXPECT_FALSE(MaxGoodput(none).has_value());
}

}  // namespace
}  // namespace latdoc::stats
