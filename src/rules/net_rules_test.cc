#include "rules/net_rules.h"

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::rules {
namespace {

using net::FailureReason;
using net::NetFacts;
using net::ProbeSample;

const Finding* Find(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

std::optional<double> Ev(const Finding& f, const std::string& name) {
  for (const auto& e : f.evidence)
    if (e.name == name) return e.value;
  return std::nullopt;
}

ProbeSample Ok(int i, double connect, double ttfb, double ttft_new, double ttft_reused) {
  ProbeSample s;
  s.index = i;
  s.dns_ms = 0.05;
  s.connect_ms = connect;
  s.ttfb_ms = ttfb;
  s.ttft_new_ms = ttft_new;
  s.ttft_reused_ms = ttft_reused;
  return s;
}

NetFacts Healthy() {
  NetFacts f;
  f.probe.url = "http://a:8000";
  for (int i = 0; i < 10; ++i) f.probe.samples.push_back(Ok(i, 0.1, 1.0, 100.3, 100.0));
  net::SummarizeProbe(f.probe);
  return f;
}

TEST(NetRulesTest, HealthyProbeIsOk) {
  auto fs = EvaluateNetRules(Healthy());
  ASSERT_NE(Find(fs, "net.no_keepalive"), nullptr);
  EXPECT_EQ(Find(fs, "net.no_keepalive")->severity, Severity::kOk);
  EXPECT_EQ(Find(fs, "net.loss")->severity, Severity::kOk);
  EXPECT_EQ(Find(fs, "net.jitter")->severity, Severity::kOk);
  EXPECT_EQ(Find(fs, "net.gateway_delay"), nullptr);  // nothing to compare
  EXPECT_EQ(WorstSeverity(fs), Severity::kOk);
}

TEST(NetRulesTest, NoKeepaliveTitleAndShare) {
  NetFacts f;
  f.probe.url = "http://a";
  for (int i = 0; i < 5; ++i) f.probe.samples.push_back(Ok(i, 19, 1, 140, 102));
  net::SummarizeProbe(f.probe);
  auto fs = EvaluateNetRules(f);
  const Finding* k = Find(fs, "net.no_keepalive");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->severity, Severity::kFail);  // 27% >= 20%
  EXPECT_EQ(k->title, "No keep-alive: +38.0 ms per request (27% of TTFT)");
  EXPECT_NEAR(*k->latency_share, 38.0 / 140.0, 1e-12);
  EXPECT_THAT(k->advice, testing::HasSubstr("keepalive 32;"));

  NetFacts noise;  // kept-alive slower than new connections: sampling noise, not a cost
  noise.probe.url = "http://a";
  for (int i = 0; i < 5; ++i) noise.probe.samples.push_back(Ok(i, 0.1, 1, 15, 23));
  net::SummarizeProbe(noise.probe);
  auto nf = EvaluateNetRules(noise);
  const Finding* n = Find(nf, "net.no_keepalive");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->severity, Severity::kOk);
  EXPECT_EQ(n->title,
            "New connections cost no measurable time over kept-alive ones (-8.0 ms, within noise)");
}

// The healthy direct path and a gateway path "http://gw" whose ten samples have these first-byte
// and TTFT times (connect 0.1 ms), compared.
NetFacts ThroughGateway(double ttfb, double ttft_new, double ttft_reused) {
  NetFacts f = Healthy();
  net::ProbeFacts b;
  b.url = "http://gw";
  for (int i = 0; i < 10; ++i) b.samples.push_back(Ok(i, 0.1, ttfb, ttft_new, ttft_reused));
  net::SummarizeProbe(b);
  f.compare = net::ComparePhases(f.probe, b);
  f.compare_probe = b;
  return f;
}

TEST(NetRulesTest, GatewayDelayAttributesPerPhase) {
  auto fs = EvaluateNetRules(ThroughGateway(42.0, 141.3, 141.0));
  const Finding* g = Find(fs, "net.gateway_delay");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->severity, Severity::kFail);
  EXPECT_EQ(g->title, "http://gw adds 41.0 ms at first byte over http://a:8000");
  EXPECT_DOUBLE_EQ(*Ev(*g, "ttfb_p50_added"), 41.0);
  EXPECT_DOUBLE_EQ(*Ev(*g, "connect_p50_added"), 0.0);
  EXPECT_DOUBLE_EQ(*Ev(*g, "ttft_new_p50_added"), 41.0);
}

// A gateway that delays only the completions (request buffering, a per-request auth call) adds
// nothing to the cheap GET's first byte: the verdict follows the phase where it adds the most.
TEST(NetRulesTest, GatewayDelayJudgesTheWorstPhase) {
  const NetFacts f = ThroughGateway(1.1, 140.3, 140.0);
  auto fs = EvaluateNetRules(f);
  const Finding* g = Find(fs, "net.gateway_delay");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->severity, Severity::kFail);
  // TTFT grows by 40 ms on both connections; the kept-alive one names it, as it has no
  // handshakes in it.
  EXPECT_EQ(g->title,
            "http://gw adds 40.0 ms to TTFT on a kept-alive connection over http://a:8000");
  EXPECT_NEAR(*Ev(*g, "ttfb_p50_added"), 0.1, 1e-9);
  auto phase = std::find_if(g->evidence.begin(), g->evidence.end(),
                            [](const Evidence& e) { return e.name == "phase"; });
  ASSERT_NE(phase, g->evidence.end());
  EXPECT_EQ(phase->text, "ttft_reused");

  // The other way round every phase is faster: the title says where it saves the most.
  NetFacts back = Healthy();
  back.probe = *f.compare_probe;
  back.compare = net::ComparePhases(back.probe, Healthy().probe);
  back.compare_probe = Healthy().probe;
  auto back_fs = EvaluateNetRules(back);
  const Finding* r = Find(back_fs, "net.gateway_delay");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->severity, Severity::kOk);
  EXPECT_EQ(r->title,
            "http://a:8000 is 40.0 ms faster to TTFT on a kept-alive connection than http://gw");
}

// A delay named at the most specific phase near the extreme is judged by the extreme: first
// byte +1.4 ms and TTFT on a new connection +2.2 ms (within the 1 ms tie) is named at first byte
// and warns, as 2.2 ms is past the 2 ms warning.
TEST(NetRulesTest, GatewayDelayVerdictIsTheLargestPhasesNotTheNamedOnes) {
  auto fs = EvaluateNetRules(ThroughGateway(2.4, 102.5, 101.4));
  const Finding* g = Find(fs, "net.gateway_delay");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->severity, Severity::kWarn);
  EXPECT_EQ(g->title,
            "http://gw adds 1.4 ms at first byte over http://a:8000 (up to 2.2 ms to TTFT on a new connection)");
  ASSERT_TRUE(g->latency_share.has_value());
  EXPECT_NEAR(*g->latency_share, 2.2 / 102.5, 1e-9);
}

TEST(NetRulesTest, JitterNamesTheWorstPhase) {
  NetFacts f;
  f.probe.url = "http://a";
  for (int i = 0; i < 10; ++i) f.probe.samples.push_back(Ok(i, i == 9 ? 31.0 : 1.0, 1, 50, 50));
  net::SummarizeProbe(f.probe);
  auto fs = EvaluateNetRules(f);
  const Finding* j = Find(fs, "net.jitter");
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->severity, Severity::kWarn);
  // np.percentile([1]*9 + [31], 99) = 1 + 0.91 * 30 = 28.3; p50 = 1.
  EXPECT_EQ(j->title, "p99 jitter 27.3 ms on connect (p99 - p50 over 10 samples)");
}

// TTFT on a kept-alive connection spreads with the server's queue and batching, not the
// network: a spread there must not make a network jitter verdict.
TEST(NetRulesTest, JitterLeavesTtftSpreadOutOfTheNetworkVerdict) {
  NetFacts f;
  f.probe.url = "http://a";
  for (int i = 0; i < 10; ++i) f.probe.samples.push_back(Ok(i, 1.0, 1.0, 50, i == 9 ? 150.0 : 50));
  net::SummarizeProbe(f.probe);
  ASSERT_GT(*f.probe.ttft_reused.jitter_ms, kJitterFailMs);
  auto fs = EvaluateNetRules(f);
  const Finding* j = Find(fs, "net.jitter");
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->severity, Severity::kOk);
  EXPECT_THAT(j->title, testing::Not(testing::HasSubstr("ttft")));
  for (const auto& e : j->evidence) EXPECT_THAT(e.name, testing::Not(testing::HasSubstr("ttft")));
}

TEST(NetRulesTest, LossCountsReasonsAndAdvisesOnTheFirst) {
  NetFacts f;
  f.probe.url = "http://nosuch.invalid";
  for (int i = 0; i < 3; ++i) {
    ProbeSample s;
    s.index = i;
    s.failure = FailureReason::kDns;
    s.failed_phase = "cheap";
    s.error = "resolve nosuch.invalid: Host not found (authoritative)";
    f.probe.samples.push_back(s);
  }
  net::SummarizeProbe(f.probe);
  auto fs = EvaluateNetRules(f);
  const Finding* l = Find(fs, "net.loss");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->severity, Severity::kFail);
  EXPECT_EQ(l->title, "3 of 3 samples failed (100%)");
  EXPECT_DOUBLE_EQ(*Ev(*l, "dns"), 3);
  EXPECT_THAT(l->advice, testing::HasSubstr("getent hosts"));
  EXPECT_EQ(Find(fs, "net.no_keepalive"), nullptr);
}

// An HTTP error is the server's answer: the advice points at what the user gave, not the network.
TEST(NetRulesTest, LossAdvisesOnHttpErrors) {
  NetFacts f;
  f.probe.url = "http://a";
  for (int i = 0; i < 2; ++i) {
    ProbeSample s = Ok(i, 0.1, 1.0, 0, 0);
    s.ttft_new_ms.reset();
    s.ttft_reused_ms.reset();
    s.failure = FailureReason::kHttpStatus;
    s.failed_phase = "ttft_new";
    s.error = "HTTP 404";
    f.probe.samples.push_back(s);
  }
  net::SummarizeProbe(f.probe);
  const std::vector<Finding> fs = EvaluateNetRules(f);  // Find points into it
  const Finding* l = Find(fs, "net.loss");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->severity, Severity::kFail);
  EXPECT_THAT(l->advice, testing::HasSubstr("--model"));
  EXPECT_THAT(l->advice, testing::HasSubstr("--cheap-path"));

  // The advice follows the status of the first HTTP error: a refused key is no naming problem,
  // nor is load shedding or a failing server.
  const std::pair<int, const char*> cases[] = {
      {401, "--api-key-env"}, {403, "--api-key-env"}, {429, "rate-limited or overloaded"},
      {503, "no healthy upstream"}, {500, "HTTP 500"}, {400, "--model"}};
  for (const auto& [status, want] : cases) {
    NetFacts h = f;
    for (ProbeSample& s : h.probe.samples) {
      s.error = "HTTP " + std::to_string(status);
      s.http_status = status;
    }
    const std::vector<Finding> hs = EvaluateNetRules(h);
    const Finding* hl = Find(hs, "net.loss");
    ASSERT_NE(hl, nullptr);
    EXPECT_THAT(hl->advice, testing::HasSubstr(want)) << status;
    if (status != 400) {
      EXPECT_THAT(hl->advice, testing::Not(testing::HasSubstr("--model"))) << status;
    }
  }
  // An error inside a 200 stream has no status: the first answer that has one decides.
  NetFacts mixed = f;
  mixed.probe.samples[0].error = "error in the stream: boom";
  mixed.probe.samples[0].http_status = 0;
  mixed.probe.samples[1].error = "HTTP 401";
  mixed.probe.samples[1].http_status = 401;
  const std::vector<Finding> ms = EvaluateNetRules(mixed);
  EXPECT_THAT(Find(ms, "net.loss")->advice, testing::HasSubstr("--api-key-env"));
}

TEST(NetRulesTest, IdleClose) {
  NetFacts f = Healthy();
  f.probe.idle.checked = true;
  f.probe.idle.closed = true;
  f.probe.idle.closed_after_s = 5.002;
  f.probe.idle.waited_s = 8;
  auto fs = EvaluateNetRules(f);
  const Finding* i = Find(fs, "net.idle_close");
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->severity, Severity::kWarn);
  EXPECT_EQ(i->title,
            "The server closes idle connections after 5.0 s: clients idle longer pay the "
            "handshake again");
  EXPECT_THAT(i->advice, testing::HasSubstr("VLLM_HTTP_TIMEOUT_KEEP_ALIVE"));
  EXPECT_THAT(i->advice, testing::HasSubstr("keepalive_expiry=4"));
  f.probe.idle.closed = false;
  f.probe.idle.closed_after_s.reset();
  auto open = EvaluateNetRules(f);
  EXPECT_EQ(Find(open, "net.idle_close")->severity, Severity::kOk);
}

TEST(NetRulesTest, BandwidthHeadroom) {
  NetFacts f = Healthy();
  net::BandwidthFacts& b = f.probe.bandwidth;
  b.bytes_per_token = 250;
  b.stream_tokens_per_s = 50;
  b.peak_tokens_per_s = 40000;  // 250 B * 8 * 40000 = 80 Mbit/s
  b.link_mbps = 100;
  b.link_source = "--link-mbps";
  b.rate_source = "given";
  b.required_mbps = 80;
  b.headroom = 1.25;
  auto fs = EvaluateNetRules(f);
  const Finding* h = Find(fs, "net.bandwidth_headroom");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->severity, Severity::kWarn);
  EXPECT_EQ(h->title,
            "The token stream needs 80.00 Mbit/s at 40000 tokens/s (given): 80.0% of the 100 "
            "Mbit/s link");
  b.headroom.reset();
  b.link_mbps.reset();
  b.link_note = "iperf3 is not installed (apt-get install iperf3)";
  auto again = EvaluateNetRules(f);
  h = Find(again, "net.bandwidth_headroom");
  EXPECT_EQ(h->severity, Severity::kSkip);
  EXPECT_EQ(h->title,
            "Bandwidth headroom unknown: 250 bytes per streamed token, iperf3 is not installed "
            "(apt-get install iperf3)");
}

// net.round_trip: a delay every request pays (here the server's writes are late by 20 ms) is
// network time per request, on kept-alive connections too.
TEST(NetRulesTest, RoundTripCountsDelayEveryRequestPays) {
  NetFacts f;
  f.probe.url = "http://a";
  f.probe.cheap_path = "/health";
  for (int i = 0; i < 5; ++i) f.probe.samples.push_back(Ok(i, 0.1, 20.0, 26.2, 26.0));
  net::SummarizeProbe(f.probe);
  // 20 ms, less the 0.05 ms a new connection paid beyond its name lookup and TCP connect
  // (26.2 - 26.0 - 0.05 - 0.1).
  EXPECT_NEAR(*PerRequestNetworkMs(f.probe), 19.95, 1e-9);
  auto fs = EvaluateNetRules(f);
  const Finding* r = Find(fs, "net.round_trip");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->severity, Severity::kFail);  // 19.95 ms is 77% of a 26 ms one-token TTFT
  EXPECT_NEAR(*r->latency_share, 19.95 / 26.0, 1e-9);
  EXPECT_EQ(Find(fs, "net.no_keepalive")->severity, Severity::kOk);
}

// What only a new connection pays (a gateway's backend connect on the first chunk: the cheap
// request's first byte is 30 ms late, a kept-alive TTFT is not) is not per-request time.
TEST(NetRulesTest, RoundTripLeavesPerConnectionCostToNoKeepalive) {
  NetFacts f;
  f.probe.url = "http://a";
  for (int i = 0; i < 5; ++i) f.probe.samples.push_back(Ok(i, 0.1, 30.2, 36.5, 6.3));
  net::SummarizeProbe(f.probe);
  // 30.2 less the 30.05 ms only a new connection paid (36.5 - 6.3 - 0.05 DNS - 0.1 connect).
  EXPECT_NEAR(*PerRequestNetworkMs(f.probe), 0.15, 1e-9);
  auto fs = EvaluateNetRules(f);
  EXPECT_EQ(Find(fs, "net.round_trip")->severity, Severity::kOk);
  EXPECT_EQ(Find(fs, "net.no_keepalive")->severity, Severity::kFail);
}

// TTFT on a new connection counts from Send(), so it holds the name lookup; the cheap request's
// first byte counts from the request written and does not. The lookup must not come off ttfb.
TEST(NetRulesTest, RoundTripDoesNotTakeTheNameLookupOffTheFirstByte) {
  NetFacts f;
  f.probe.url = "http://a";
  for (int i = 0; i < 5; ++i) {
    ProbeSample s = Ok(i, 1.0, 30.0, 71.0, 50.0);
    s.dns_ms = 20.0;
    f.probe.samples.push_back(s);
  }
  net::SummarizeProbe(f.probe);
  // 71 - 50 = 21 ms is exactly DNS + connect: a new connection pays nothing else.
  EXPECT_NEAR(*PerRequestNetworkMs(f.probe), 30.0, 1e-9);
}

TEST(NetRulesTest, RoundTripNeedsAnAnsweredRequest) {
  NetFacts f;
  f.probe.url = "http://a";
  ProbeSample s;
  s.failure = FailureReason::kRefused;
  s.failed_phase = "cheap";
  f.probe.samples.push_back(s);
  net::SummarizeProbe(f.probe);
  EXPECT_FALSE(PerRequestNetworkMs(f.probe));
  EXPECT_EQ(Find(EvaluateNetRules(f), "net.round_trip"), nullptr);
}

}  // namespace
net::TcpFacts Tcp(uint64_t segs_out, uint64_t retrans, uint64_t ooo = 0) {
  net::TcpFacts t;
  t.connections = 7;
  t.segs_out = segs_out;
  t.retrans_segs = retrans;
  t.rcv_ooo_packets = ooo;
  t.retrans_share = static_cast<double>(retrans) / static_cast<double>(segs_out);
  t.worst_ca_state = "open";
  return t;
}

// From a handful of segments up, two retransmits are a finding with their count whatever
// their share; one is, only from 1%; 5% fails; none is ok; too few segments is a skip; no
// TCP facts at all is no finding.
TEST(NetRulesTest, RetransmitsJudgedFromAHandfulOfSegments) {
  struct Case { uint64_t segs, retrans; Severity sev; std::string title; };
  const Case cases[] = {
      {400, 0, Severity::kOk, "No TCP retransmits: 0 of 400 segments on 7 connections"},
      {400, 1, Severity::kOk, "1 of 400 TCP segments retransmitted (0.2%) on 7 connections"},
      {80, 1, Severity::kWarn, "1 of 80 TCP segments retransmitted (1.2%) on 7 connections"},
      {1000, 2, Severity::kWarn, "2 of 1000 TCP segments retransmitted (0.2%) on 7 connections"},
      {100, 5, Severity::kFail, "5 of 100 TCP segments retransmitted (5.0%) on 7 connections"},
      {4, 2, Severity::kSkip, "Retransmits not judged: 4 segments sent (fewer than 5)"},
  };
  for (const Case& c : cases) {
    NetFacts f = Healthy();
    f.probe.tcp = Tcp(c.segs, c.retrans);
    auto fs = EvaluateNetRules(f);
    const Finding* r = Find(fs, "net.probe_retransmits");
    ASSERT_NE(r, nullptr) << c.segs << " " << c.retrans;
    EXPECT_EQ(r->severity, c.sev) << c.title;
    EXPECT_EQ(r->title, c.title);
    EXPECT_EQ(r->advice.empty(), c.sev == Severity::kOk || c.sev == Severity::kSkip) << c.title;
  }
  const std::vector<Finding> none = EvaluateNetRules(Healthy());
  EXPECT_EQ(Find(none, "net.probe_retransmits"), nullptr);
}

TEST(NetRulesTest, RetransmitsNameTheServersOutOfOrderPackets) {
  NetFacts f = Healthy();
  f.probe.tcp = Tcp(300, 3, 9);
  const std::vector<Finding> fs = EvaluateNetRules(f);
  const Finding* r = Find(fs, "net.probe_retransmits");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->title, "3 of 300 TCP segments retransmitted (1.0%) on 7 connections; "
                      "9 of the server's packets arrived out of order");
  EXPECT_EQ(Ev(*r, "received_out_of_order"), 9);
  EXPECT_EQ(Ev(*r, "retransmitted_segments"), 3);
}

net::RouteFacts Routed(std::optional<uint32_t> path_mtu, bool black_hole = false) {
  net::RouteFacts r;
  r.checked = true;
  r.address = "10.242.2.2";
  r.dev = "vc";
  r.gateway = "10.242.1.1";
  r.src = "10.242.1.2";
  r.iface_mtu_bytes = 1500;
  r.path_mtu_bytes = path_mtu;
  r.pmtu_black_hole = black_hole;
  if (!path_mtu) r.pmtu_note = "not measured: no answer to UDP datagrams to port 8000";
  return r;
}

// Below the interface's MTU with ICMP: warn; silently (a black hole): fail; equal: ok; not
// measured: skip with the probe's reason. The route is said as info: direct or via which gateway.
TEST(NetRulesTest, PathMtuAndRoute) {
  struct Case { std::optional<uint32_t> mtu; bool hole; Severity sev; std::string title; };
  const Case cases[] = {
      {1500, false, Severity::kOk, "Path MTU 1500 equals the interface's (dev vc)"},
      {1400, false, Severity::kWarn,
       "Path MTU 1400 below the interface's 1500 (dev vc): a smaller MTU on the way to 10.242.2.2"},
      {1400, true, Severity::kFail,
       "PMTU black hole: packets above 1400 bytes to 10.242.2.2 vanish without ICMP "
       "'fragmentation needed' (interface MTU 1500)"},
      {std::nullopt, false, Severity::kSkip,
       "Path MTU not measured: not measured: no answer to UDP datagrams to port 8000"},
  };
  for (const Case& c : cases) {
    NetFacts f = Healthy();
    f.route = Routed(c.mtu, c.hole);
    const std::vector<Finding> fs = EvaluateNetRules(f);
    const Finding* m = Find(fs, "net.path_mtu");
    ASSERT_NE(m, nullptr) << c.title;
    EXPECT_EQ(m->severity, c.sev) << c.title;
    EXPECT_EQ(m->title, c.title);
    EXPECT_EQ(m->advice.empty(), c.sev == Severity::kOk || c.sev == Severity::kSkip) << c.title;
    const Finding* r = Find(fs, "net.route");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->severity, Severity::kInfo);
    EXPECT_EQ(r->title, "Server 10.242.2.2 reached via gateway 10.242.1.1 (dev vc)");
  }
  NetFacts direct = Healthy();
  direct.route = Routed(1500);
  direct.route.gateway.clear();
  const std::vector<Finding> fs = EvaluateNetRules(direct);
  ASSERT_NE(Find(fs, "net.route"), nullptr);
  EXPECT_EQ(Find(fs, "net.route")->title, "Server 10.242.2.2 reached directly on the subnet of dev vc");
  const std::vector<Finding> unchecked = EvaluateNetRules(Healthy());
  EXPECT_EQ(Find(unchecked, "net.route"), nullptr);
  EXPECT_EQ(Find(unchecked, "net.path_mtu"), nullptr);
}

// The leaf's fingerprint against the server's own: equal is ok, different fails naming the
// issuer; none given is information (the chain, to compare by hand).
TEST(NetRulesTest, TlsInspectionComparesTheLeafAndNamesTheIssuer) {
  NetFacts f = Healthy();
  f.probe.tls_chain = {{"CN=server", "CN=Inspect CA,O=Firewall Inc", std::string(64, 'b')},
                       {"CN=Inspect CA,O=Firewall Inc", "CN=Inspect CA,O=Firewall Inc",
                        std::string(64, 'c')}};
  {
    const std::vector<Finding> fs = EvaluateNetRules(f);
    const Finding* t = Find(fs, "net.tls_inspection");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->severity, Severity::kInfo);
    EXPECT_EQ(t->title, "TLS certificate shown: CN=server, issued by CN=Inspect CA,O=Firewall Inc "
                        "(compare with --expect-cert-sha256)");
  }
  f.expected_cert_sha256 = std::string(64, 'a');
  {
    const std::vector<Finding> fs = EvaluateNetRules(f);
    const Finding* t = Find(fs, "net.tls_inspection");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->severity, Severity::kFail);
    EXPECT_EQ(t->title, "TLS is re-signed on the path: the certificate shown is issued by "
                        "CN=Inspect CA,O=Firewall Inc, not the server's own (SHA-256 "
                        "bbbbbbbbbbbbbbbb... expected aaaaaaaaaaaaaaaa...)");
    EXPECT_FALSE(t->advice.empty());
  }
  f.expected_cert_sha256 = std::string(64, 'b');
  {
    const std::vector<Finding> fs = EvaluateNetRules(f);
    const Finding* t = Find(fs, "net.tls_inspection");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->severity, Severity::kOk);
  }
  NetFacts plain = Healthy();
  const std::vector<Finding> none = EvaluateNetRules(plain);
  EXPECT_EQ(Find(none, "net.tls_inspection"), nullptr);
}

// With the server's interface MTU from `latdoc doctor` on the server host: a path MTU below both
// ends' interfaces warns and names both; one equal to the server's smaller interface MTU is the
// server's own end, ok; a black hole still fails; both MTUs are in the evidence.
TEST(NetRulesTest, PathMtuAgainstBothEndsInterfaces) {
  struct Case { uint32_t server_mtu; std::optional<uint32_t> path; bool hole; Severity sev; std::string title; };
  const Case cases[] = {
      {1500, 1400, false, Severity::kWarn,
       "Path MTU 1400 below both ends' interfaces (client 1500 dev vc, server 1500 eth0): a "
       "smaller MTU on the way to 10.242.2.2"},
      {9000, 1400, false, Severity::kWarn,
       "Path MTU 1400 below both ends' interfaces (client 1500 dev vc, server 9000 eth0): a "
       "smaller MTU on the way to 10.242.2.2"},
      {1400, 1400, false, Severity::kOk,
       "Path MTU 1400 equals the server's interface MTU (eth0 1400), below the client's 1500 "
       "(dev vc): the server's end sets it"},
      {1500, 1500, false, Severity::kOk, "Path MTU 1500 equals the interface's (dev vc)"},
      {1500, 1400, true, Severity::kFail,
       "PMTU black hole: packets above 1400 bytes to 10.242.2.2 vanish without ICMP "
       "'fragmentation needed' (interface MTU 1500)"},
  };
  for (const Case& c : cases) {
    NetFacts f = Healthy();
    f.route = Routed(c.path, c.hole);
    f.server_iface_mtu_bytes = c.server_mtu;
    f.server_iface = "eth0";
    const std::vector<Finding> fs = EvaluateNetRules(f);
    const Finding* m = Find(fs, "net.path_mtu");
    ASSERT_NE(m, nullptr) << c.title;
    EXPECT_EQ(m->severity, c.sev) << c.title;
    EXPECT_EQ(m->title, c.title);
    bool has_server = false;
    for (const auto& e : m->evidence) has_server |= e.name == "server_interface_mtu";
    EXPECT_TRUE(has_server) << c.title;
  }
}

// The server's own certificate from the doctor's facts (its --ssl-certfile): a different leaf
// fails naming the issuer that re-signed it and where the server's own came from; the same
// leaf is ok.
TEST(NetRulesTest, TlsInspectionAgainstTheServersCertfile) {
  NetFacts f = Healthy();
  f.probe.tls_chain = {{"CN=server", "CN=Inspect CA,O=Firewall Inc", std::string(64, 'b')}};
  f.expected_cert_sha256 = std::string(64, 'a');
  f.expected_cert_source = "the server's --ssl-certfile /etc/vllm/cert.pem";
  f.expected_cert_subject = "CN=server";
  f.expected_cert_issuer = "CN=Server CA";
  {
    const std::vector<Finding> fs = EvaluateNetRules(f);
    const Finding* t = Find(fs, "net.tls_inspection");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->severity, Severity::kFail);
    EXPECT_EQ(t->title, "TLS is re-signed on the path: the certificate shown is issued by "
                        "CN=Inspect CA,O=Firewall Inc, not the server's own (SHA-256 "
                        "bbbbbbbbbbbbbbbb... expected aaaaaaaaaaaaaaaa...); the server's own, "
                        "from the server's --ssl-certfile /etc/vllm/cert.pem, is CN=server "
                        "issued by CN=Server CA");
  }
  f.expected_cert_sha256 = std::string(64, 'b');
  {
    const std::vector<Finding> fs = EvaluateNetRules(f);
    const Finding* t = Find(fs, "net.tls_inspection");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->severity, Severity::kOk);
    EXPECT_EQ(t->title, "The server's own certificate reaches the client (CN=server): nothing "
                        "re-signs TLS on the path");
  }
}

// A bandwidth stream that stalled fails with the bytes that came and the quiet time; with the
// route's black hole known it names the path MTU; a stream that did not stall says nothing.
TEST(NetRulesTest, StreamStallNamesTheSizeAndTheStall) {
  NetFacts f = Healthy();
  EXPECT_EQ(Find(EvaluateNetRules(f), "net.stream_stall"), nullptr);
  f.probe.bandwidth.stream_tokens_requested = 512;
  f.probe.bandwidth.stream_prompt_bytes = 4096;
  f.probe.bandwidth.stalled = true;
  f.probe.bandwidth.stall_bytes = 2896;
  f.probe.bandwidth.stall_tokens = 14;
  f.probe.bandwidth.stall_quiet_ms = 3200;
  f.probe.bandwidth.stall_error = "no answer within 3.0 s (reading the body)";
  const Finding* s = nullptr;
  std::vector<Finding> fs = EvaluateNetRules(f);
  s = Find(fs, "net.stream_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->severity, Severity::kFail);
  EXPECT_EQ(s->title, "The 512-token stream (4096-byte prompt) stalled after 2896 bytes of its answer "
                      "(14 tokens): nothing more for "
                      "3.2 s while the small requests passed; large packets are lost on the path "
                      "(a PMTU black hole or a middlebox)");
  EXPECT_FALSE(s->advice.empty());
  f.route = Routed(1400, /*black_hole=*/true);
  fs = EvaluateNetRules(f);
  s = Find(fs, "net.stream_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->title, "The 512-token stream (4096-byte prompt) stalled after 2896 bytes of its answer "
                      "(14 tokens): nothing more for "
                      "3.2 s while the small requests passed; packets above the path MTU of 1400 "
                      "bytes vanish (PMTU black hole)");
}

// HTTPS against plain HTTP: 2 ms added at first byte warns, 20 fails; a stream at under 80%
// of its plain rate warns, under 50% fails.
TEST(NetRulesTest, TlsOverheadAgainstPlainHttp) {
  struct Case { double https_ttfb, https_rate; Severity sev; };
  const Case cases[] = {{1.5, 100, Severity::kOk},   {3.2, 100, Severity::kWarn},
                        {21.0, 100, Severity::kFail}, {1.0, 70, Severity::kWarn},
                        {1.0, 40, Severity::kFail}};
  for (const Case& c : cases) {
    NetFacts f = Healthy();
    f.probe.ttfb.p50_ms = c.https_ttfb;
    f.probe.bandwidth.stream_tokens_per_s = c.https_rate;
    net::ProbeFacts p;
    p.url = "http://a:8001";
    p.ttfb.p50_ms = 1.0;
    p.bandwidth.stream_tokens_per_s = 100;
    f.plain_probe = p;
    const std::vector<Finding> fs = EvaluateNetRules(f);
    const Finding* t = Find(fs, "net.tls_overhead");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->severity, c.sev) << c.https_ttfb << " " << c.https_rate << ": " << t->title;
    EXPECT_DOUBLE_EQ(*Ev(*t, "ttfb_added"), c.https_ttfb - 1.0);
  }
}

}  // namespace latdoc::rules
