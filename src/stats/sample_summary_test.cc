#include "stats/sample_summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace latdoc::stats {
namespace {

// Expected values worked by hand with numpy's definitions (linear percentile: index
// (n-1)*p/100; np.std population).
TEST(SampleSummaryTest, MatchesNumpyOnFiveValues) {
  const std::vector<double> x = {35, 15, 50, 20, 40};  // unsorted on purpose
  auto s = Summarize(x);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->count, 5u);
  EXPECT_DOUBLE_EQ(s->mean, 32.0);
  EXPECT_DOUBLE_EQ(s->median, 35.0);
  EXPECT_DOUBLE_EQ(s->std, std::sqrt(166.0));  // squares 289+144+9+64+324 = 830, /5
  EXPECT_DOUBLE_EQ(s->p90, 46.0);              // index 3.6: 40 + 0.6*10
  EXPECT_DOUBLE_EQ(s->p95, 48.0);              // index 3.8
  EXPECT_DOUBLE_EQ(s->p99, 49.6);              // index 3.96
  EXPECT_DOUBLE_EQ(s->p99_9, 49.96);           // index 3.996
  EXPECT_DOUBLE_EQ(s->min, 15);
  EXPECT_DOUBLE_EQ(s->max, 50);
  const std::vector<double> sorted = {15, 20, 35, 40, 50};
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 40), 29.0);  // the textbook example
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 0), 15.0);
  EXPECT_DOUBLE_EQ(PercentileOfSorted(sorted, 100), 50.0);
}

TEST(SampleSummaryTest, EvenCountMedianAndPercentiles) {
  const std::vector<double> x = {1, 2, 3, 4};
  auto s = Summarize(x);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->median, 2.5);
  EXPECT_DOUBLE_EQ(s->mean, 2.5);
  EXPECT_DOUBLE_EQ(s->std, std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(s->p90, 3.7);
  EXPECT_DOUBLE_EQ(s->p95, 3.85);
  EXPECT_DOUBLE_EQ(s->p99, 3.97);
  EXPECT_DOUBLE_EQ(s->p99_9, 3.997);
}

TEST(SampleSummaryTest, OneValueAndNone) {
  const std::vector<double> one = {7.5};
  auto s = Summarize(one);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->p99_9, 7.5);
  EXPECT_EQ(s->median, 7.5);
  EXPECT_EQ(s->std, 0.0);
  EXPECT_FALSE(Summarize(std::vector<double>{}).has_value());
}

// numpy sums pairwise; over 0..999 the result is exact either way, and over many 0.1s the
// pairwise sum stays far closer to the true value than a running sum.
TEST(SampleSummaryTest, PairwiseMean) {
  std::vector<double> x;
  for (int i = 0; i < 1000; ++i) x.push_back(i);
  EXPECT_EQ(NumpyMean(x), 499.5);
  std::vector<double> tenths(1000000, 0.1);
  double naive = 0;
  for (double v : tenths) naive += v;
  const double exact = 0.1;
  EXPECT_LT(std::fabs(NumpyMean(tenths) - exact), std::fabs(naive / 1e6 - exact));
  EXPECT_NEAR(NumpyMean(tenths), exact, 1e-15);
}

TEST(SampleSummaryTest, PercentileWordFollowsVllm) {
  EXPECT_EQ(PercentileWord(99), "99");
  EXPECT_EQ(PercentileWord(50.0), "50");
  EXPECT_EQ(PercentileWord(99.9), "99.9");
  EXPECT_EQ(PercentileWord(12.5), "12.5");
  EXPECT_EQ(PercentileWord(99.99), "99.99");
}

TEST(SampleSummaryTest, VllmKeyNamesAndMilliseconds) {
  const std::vector<int64_t> ns = {4000000, 1000000, 3000000, 2000000};
  auto got = VllmStatKeys("ttft", ns);
  std::vector<std::string> keys;
  for (const auto& k : got) keys.push_back(k.key);
  EXPECT_THAT(keys, ::testing::ElementsAre("mean_ttft_ms", "median_ttft_ms", "std_ttft_ms",
                                           "p90_ttft_ms", "p95_ttft_ms", "p99_ttft_ms",
                                           "p99.9_ttft_ms", "max_ttft_ms"));
  EXPECT_DOUBLE_EQ(*got[0].value_ms, 2.5);
  EXPECT_DOUBLE_EQ(*got[1].value_ms, 2.5);
  EXPECT_DOUBLE_EQ(*got[2].value_ms, std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(*got[3].value_ms, 3.7);
  EXPECT_DOUBLE_EQ(*got[6].value_ms, 3.997);
  EXPECT_DOUBLE_EQ(*got[7].value_ms, 4.0);

  const double pcts[] = {99, 99.9};
  auto itl = VllmStatKeys("itl", std::vector<int64_t>{}, pcts);
  ASSERT_EQ(itl.size(), 6u);
  EXPECT_EQ(itl[4].key, "p99.9_itl_ms");
  for (const auto& k : itl) EXPECT_FALSE(k.value_ms.has_value()) << k.key;
}

}  // namespace
}  // namespace latdoc::stats
