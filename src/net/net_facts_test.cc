#include "net/net_facts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace latdoc::net {
namespace {

TEST(SummarizePhaseTest, NumpyPercentilesAndJitter) {
  // np.percentile([1..10], 50) = 5.5, np.percentile([1..10], 99) = 9.91, np.std = 2.8722813
  std::vector<double> v = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  PhaseStats s = SummarizePhase(v);
  EXPECT_EQ(s.count, 10u);
  EXPECT_DOUBLE_EQ(*s.p50_ms, 5.5);
  EXPECT_NEAR(*s.p99_ms, 9.91, 1e-9);
  EXPECT_NEAR(*s.jitter_ms, 4.41, 1e-9);
  EXPECT_NEAR(*s.stddev_ms, 2.8722813232690143, 1e-9);
  EXPECT_DOUBLE_EQ(*s.min_ms, 1);
  EXPECT_DOUBLE_EQ(*s.max_ms, 10);
}

TEST(SummarizePhaseTest, EmptyIsNotZero) {
  PhaseStats s = SummarizePhase({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_FALSE(s.p50_ms);
  EXPECT_FALSE(s.jitter_ms);
  nlohmann::json j = ToJson(s);
  EXPECT_TRUE(j["p50_ms"].is_null());
  EXPECT_TRUE(j["jitter_ms"].is_null());
}

ProbeSample Ok(int i, double connect, double ttfb, double ttft_new, double ttft_reused) {
  ProbeSample s;
  s.index = i;
  s.dns_ms = 0.1;
  s.connect_ms = connect;
  s.ttfb_ms = ttfb;
  s.ttft_new_ms = ttft_new;
  s.ttft_reused_ms = ttft_reused;
  return s;
}

TEST(SummarizeProbeTest, LossKeepAliveAndPhases) {
  ProbeFacts p;
  p.samples.push_back(Ok(0, 1, 2, 140, 100));
  p.samples.push_back(Ok(1, 1, 2, 140, 100));
  ProbeSample refused;
  refused.index = 2;
  refused.failure = FailureReason::kRefused;
  refused.failed_phase = "cheap";
  p.samples.push_back(refused);
  ProbeSample timeout;
  timeout.index = 3;
  timeout.failure = FailureReason::kTimeout;
  p.samples.push_back(timeout);
  SummarizeProbe(p);
  EXPECT_EQ(p.loss.samples, 4);
  EXPECT_EQ(p.loss.failed, 2);
  EXPECT_EQ(p.loss.refused, 1);
  EXPECT_EQ(p.loss.timeout, 1);
  EXPECT_EQ(p.connect.count, 2u);
  EXPECT_FALSE(p.tls.p50_ms);  // plain http: no TLS phase at all
  ASSERT_TRUE(p.keepalive.handshake_cost_ms);
  EXPECT_DOUBLE_EQ(*p.keepalive.handshake_cost_ms, 40);
  EXPECT_NEAR(*p.keepalive.share_of_ttft, 40.0 / 140.0, 1e-12);
}

TEST(ComparePhasesTest, BMinusAPerPhase) {
  ProbeFacts a, b;
  a.url = "http://a";
  b.url = "http://b";
  a.samples = {Ok(0, 1, 2, 10, 9), Ok(1, 1, 4, 10, 9)};
  b.samples = {Ok(0, 1.5, 32, 40, 39), Ok(1, 1.5, 44, 40, 39)};
  SummarizeProbe(a);
  SummarizeProbe(b);
  CompareFacts c = ComparePhases(a, b);
  ASSERT_EQ(c.phases.size(), 6u);
  EXPECT_EQ(c.phases[0].phase, "dns");
  EXPECT_DOUBLE_EQ(*c.phases[0].p50_diff_ms, 0);
  EXPECT_DOUBLE_EQ(*c.phases[1].p50_diff_ms, 0.5);
  EXPECT_DOUBLE_EQ(*c.phases[2].p50_diff_ms, 0);  // plain http on both sides: TLS costs 0
  b.url = "https://b";  // https with no TLS time measured: unknown, not 0
  EXPECT_FALSE(ComparePhases(a, b).phases[2].p50_diff_ms);
  EXPECT_EQ(c.phases[3].phase, "ttfb");
  EXPECT_DOUBLE_EQ(*c.phases[3].p50_diff_ms, 38 - 3);
  // jitter a: p99-p50 = 3.98-3 = 0.98; b: 43.88-38 = 5.88
  EXPECT_NEAR(*c.phases[3].jitter_diff_ms, 5.88 - 0.98, 1e-9);
}

// The TLS handshake's jitter is compared like every other phase's; plain http has none (0).
TEST(ComparePhasesTest, TlsJitterIsCompared) {
  ProbeFacts a, b;
  a.url = "https://a";
  b.url = "https://b";
  for (int i = 0; i < 10; ++i) {
    ProbeSample sa = Ok(i, 1, 2, 10, 9);
    sa.tls_ms = 3.0;
    a.samples.push_back(sa);
    ProbeSample sb = Ok(i, 1, 2, 10, 9);
    sb.tls_ms = i == 9 ? 33.0 : 3.0;  // p99 - p50 = 0.91 * 30
    b.samples.push_back(sb);
  }
  SummarizeProbe(a);
  SummarizeProbe(b);
  const PhaseDiff tls = ComparePhases(a, b).phases[2];  // a copy: the result is a temporary
  ASSERT_EQ(tls.phase, "tls");
  ASSERT_TRUE(tls.jitter_diff_ms);
  EXPECT_NEAR(*tls.jitter_diff_ms, 27.3, 1e-9);
  ProbeFacts plain;
  plain.url = "http://a";
  plain.samples = {Ok(0, 1, 2, 10, 9)};
  SummarizeProbe(plain);
  const PhaseDiff added = ComparePhases(plain, b).phases[2];
  ASSERT_TRUE(added.jitter_diff_ms);
  EXPECT_NEAR(*added.jitter_diff_ms, 27.3, 1e-9);
}

TEST(NetFactsJsonTest, FailedSampleCarriesReasonAndNulls) {
  ProbeSample s;
  s.index = 7;
  s.failure = FailureReason::kDns;
  s.failed_phase = "cheap";
  s.error = "resolve nosuchhost.invalid: Host not found (authoritative)";
  nlohmann::json j = ToJson(s);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["failure"], "dns");
  EXPECT_EQ(j["failed_phase"], "cheap");
  EXPECT_TRUE(j["connect_ms"].is_null());
  NetFacts f;
  f.probe.samples.push_back(s);
  SummarizeProbe(f.probe);
  nlohmann::json all = ToJson(f);
  EXPECT_TRUE(all["compare"].is_null());
  EXPECT_EQ(all["probe"]["loss"]["dns"], 1);
  EXPECT_TRUE(all["probe"]["keepalive"]["handshake_cost_ms"].is_null());
}

}  // namespace
// Counters add up over connections; RTT and MTU are ranges; a connection with no RTT sample
// (srtt 0) does not pull the minimum to zero; the worst congestion state wins.
TEST(TcpFactsTest, SumsCountersAndKeepsRanges) {
  TcpFacts f;
  http::TcpConnInfo a;
  a.segs_out = 40;
  a.total_retrans_segs = 1;
  a.rcv_ooo_packets = 2;
  a.srtt_us = 1500;
  a.rttvar_us = 700;
  a.pmtu_bytes = 1500;
  a.ip_mtu_bytes = 1500;
  a.snd_mss_bytes = 1448;
  a.advmss_bytes = 1460;
  a.reordering = 3;
  a.ca_state = 0;
  http::TcpConnInfo b = a;
  b.segs_out = 10;
  b.total_retrans_segs = 3;
  b.rcv_ooo_packets = 0;
  b.srtt_us = 0;  // never measured
  b.pmtu_bytes = 1400;
  b.ip_mtu_bytes = 1400;
  b.snd_mss_bytes = 1348;
  b.ca_state = 4;  // loss
  AddConnection(f, a);
  AddConnection(f, b);
  EXPECT_EQ(f.connections, 2);
  EXPECT_EQ(f.segs_out, 50u);
  EXPECT_EQ(f.retrans_segs, 4u);
  EXPECT_EQ(f.rcv_ooo_packets, 2u);
  EXPECT_DOUBLE_EQ(*f.retrans_share, 0.08);
  EXPECT_DOUBLE_EQ(*f.srtt_min_ms, 1.5);
  EXPECT_DOUBLE_EQ(*f.srtt_max_ms, 1.5);
  EXPECT_DOUBLE_EQ(*f.rttvar_max_ms, 0.7);
  EXPECT_EQ(*f.pmtu_min_bytes, 1400u);
  EXPECT_EQ(*f.ip_mtu_min_bytes, 1400u);
  EXPECT_EQ(*f.snd_mss_min_bytes, 1348u);
  EXPECT_EQ(f.worst_ca_state, "loss");
  nlohmann::json j = ToJson(f);
  EXPECT_EQ(j["retrans_segs"], 4);
  EXPECT_EQ(j["pmtu_min_bytes"], 1400);
  EXPECT_EQ(j["worst_ca_state"], "loss");
  EXPECT_EQ(ToJson(TcpFacts{}), nlohmann::json({{"connections", 0}}));
}

TEST(NormalizeSha256HexTest, ColonsAndCaseAreIgnoredAndLengthChecked) {
  const std::string hex(64, 'a');
  std::string colons;
  for (size_t i = 0; i < 64; i += 2) colons += (i ? ":" : "") + std::string("AA");
  EXPECT_EQ(NormalizeSha256Hex(hex), hex);
  EXPECT_EQ(NormalizeSha256Hex(colons), hex);
  EXPECT_FALSE(NormalizeSha256Hex(std::string(63, 'a')));
  EXPECT_FALSE(NormalizeSha256Hex(std::string(64, 'g')));
  EXPECT_FALSE(NormalizeSha256Hex(""));
}

}  // namespace latdoc::net
