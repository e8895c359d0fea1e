#include "exporter/ttft_decomposition.h"

#include <gtest/gtest.h>

namespace latdoc::exporter {
namespace {

using servermetrics::HistogramData;
using servermetrics::ServerSnapshot;

HistogramData Hist(double sum, double count) {
  HistogramData h;
  h.upper_bounds = {0.1, 1, std::numeric_limits<double>::infinity()};
  h.cumulative_counts = {count, count, count};
  h.sum = sum;
  h.count = count;
  return h;
}

// Two scrapes: 10 requests before; 4 more in the interval with TTFT 0.8 s in all (0.2 s mean),
// queue 0.2 s (0.05 s mean), prefill 0.4 s (0.1 s mean). The canary saw 0.26 s.
TEST(TtftDecompositionTest, MeansOfTheHistogramDeltasAndTheClientRest) {
  ServerSnapshot a, b;
  a.server = b.server = "vllm";
  a.ttft_s = Hist(5.0, 10);
  b.ttft_s = Hist(5.8, 14);
  a.queue_s = Hist(1.0, 10);
  b.queue_s = Hist(1.2, 14);
  a.prefill_s = Hist(2.0, 10);
  b.prefill_s = Hist(2.4, 14);
  TtftDecomposition d = DecomposeTtft(servermetrics::Delta(a, b), 0.26);
  ASSERT_TRUE(d.server_s && d.queue_s && d.prefill_s && d.server_other_s && d.network_front_end_s);
  EXPECT_DOUBLE_EQ(d.server_requests, 4);
  EXPECT_NEAR(*d.server_s, 0.2, 1e-12);
  EXPECT_NEAR(*d.queue_s, 0.05, 1e-12);
  EXPECT_NEAR(*d.prefill_s, 0.1, 1e-12);
  EXPECT_NEAR(*d.server_other_s, 0.05, 1e-12);
  EXPECT_NEAR(*d.network_front_end_s, 0.06, 1e-12);
  // The parts add up to the client's TTFT.
  EXPECT_NEAR(*d.queue_s + *d.prefill_s + *d.server_other_s + *d.network_front_end_s, 0.26, 1e-12);
}

// Nothing finished in the interval: no server-side part is invented (not 0).
TEST(TtftDecompositionTest, NoObservationsInTheIntervalGiveNoParts) {
  ServerSnapshot a;
  a.server = "vllm";
  a.ttft_s = Hist(5.0, 10);
  a.queue_s = Hist(1.0, 10);
  a.prefill_s = Hist(2.0, 10);
  TtftDecomposition d = DecomposeTtft(servermetrics::Delta(a, a), 0.3);
  EXPECT_EQ(d.client_s, 0.3);
  EXPECT_FALSE(d.server_s);
  EXPECT_FALSE(d.queue_s);
  EXPECT_FALSE(d.server_other_s);
  EXPECT_FALSE(d.network_front_end_s);
}

// A server without queue and prefill histograms still gives the network part; no canary
// result gives none.
TEST(TtftDecompositionTest, PartialInputs) {
  ServerSnapshot a, b;
  a.server = b.server = "llamacpp";
  a.ttft_s = Hist(1.0, 1);
  b.ttft_s = Hist(1.5, 2);
  TtftDecomposition with = DecomposeTtft(servermetrics::Delta(a, b), 0.7);
  ASSERT_TRUE(with.network_front_end_s);
  EXPECT_NEAR(*with.network_front_end_s, 0.2, 1e-12);
  EXPECT_FALSE(with.server_other_s);
  TtftDecomposition without = DecomposeTtft(servermetrics::Delta(a, b), std::nullopt);
  EXPECT_FALSE(without.network_front_end_s);
  EXPECT_NEAR(*without.server_s, 0.5, 1e-12);
}

// The same interval from SGLang (a TTFT and a queue histogram, no prefill one) and from
// llama.cpp (no per-request histogram at all): only what each measures is filled.
TEST(TtftDecompositionTest, EachServerGivesWhatItsMetricsMeasure) {
  ServerSnapshot a, b;
  a.ttft_s = Hist(5.0, 10);
  b.ttft_s = Hist(5.8, 14);
  a.queue_s = Hist(1.0, 10);
  b.queue_s = Hist(1.2, 14);
  a.prompt_seconds_total = 1.0;
  b.prompt_seconds_total = 1.4;
  const servermetrics::SnapshotDelta delta = servermetrics::Delta(a, b);

  TtftDecomposition s = DecomposeTtft(delta, 0.26, servermetrics::ServerKind::kSglang);
  ASSERT_TRUE(s.server_s && s.queue_s && s.network_front_end_s);
  EXPECT_NEAR(*s.server_s, 0.2, 1e-12);
  EXPECT_NEAR(*s.queue_s, 0.05, 1e-12);
  EXPECT_FALSE(s.prefill_s);
  EXPECT_FALSE(s.server_other_s);  // needs the prefill part
  EXPECT_NEAR(*s.network_front_end_s, 0.06, 1e-12);

  TtftDecomposition l = DecomposeTtft(delta, 0.26, servermetrics::ServerKind::kLlamaCpp);
  EXPECT_EQ(l.client_s, 0.26);
  EXPECT_FALSE(l.server_s || l.queue_s || l.prefill_s || l.server_other_s || l.network_front_end_s);
  EXPECT_EQ(l.server_requests, 0);
}

}  // namespace
}  // namespace latdoc::exporter
