// The text summary against a golden file (tests/data/net/summary.golden.txt). The facts are
// built here, so the output is deterministic. Regenerate after a deliberate change with
// tools/regen_net_golden.sh (it runs this test with LATDOC_UPDATE_GOLDEN=1).
#include "net/net_text.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "base/file_util.h"
#include "net/path_tools.h"

namespace latdoc::net {
namespace {

ProbeSample Ok(int i, double connect, double ttfb, double ttft_new, double ttft_reused) {
  ProbeSample s;
  s.index = i;
  s.dns_ms = 0.04 + 0.01 * i;
  s.connect_ms = connect;
  s.ttfb_ms = ttfb;
  s.ttft_new_ms = ttft_new;
  s.ttft_reused_ms = ttft_reused;
  return s;
}

NetFacts Sample() {
  NetFacts f;
  ProbeFacts& a = f.probe;
  a.url = "http://10.0.0.5:8000";
  a.cheap_path = "/health";
  a.wall_s = 4.25;
  for (int i = 0; i < 4; ++i) a.samples.push_back(Ok(i, 0.2 + 0.1 * i, 1.5 + i, 140 + i, 102 + i));
  ProbeSample t;
  t.index = 4;
  t.failure = FailureReason::kTimeout;
  t.failed_phase = "cheap";
  t.error = "no response before the first-byte timeout";
  t.dns_ms = 0.05;
  t.connect_ms = 0.3;
  a.samples.push_back(t);
  a.keepalive.reused_count = 4;
  a.idle.checked = true;
  a.idle.closed = true;
  a.idle.closed_after_s = 5.002;
  a.idle.waited_s = 8;
  a.bandwidth.stream_bytes = 16000;
  a.bandwidth.stream_tokens = 64;
  a.bandwidth.bytes_per_token = 250;
  a.bandwidth.stream_tokens_per_s = 48.5;
  a.bandwidth.peak_tokens_per_s = 40000;
  a.bandwidth.link_mbps = 100;
  a.bandwidth.link_source = "--link-mbps";
  http::TcpConnInfo c;
  c.segs_out = 12;
  c.total_retrans_segs = 0;
  c.srtt_us = 210;
  c.rttvar_us = 90;
  c.pmtu_bytes = 1500;
  c.ip_mtu_bytes = 1500;
  c.snd_mss_bytes = 1448;
  c.advmss_bytes = 1448;
  c.reordering = 3;
  for (int i = 0; i < 4; ++i) AddConnection(a.tcp, c);
  c.total_retrans_segs = 2;  // sample 1's connection lost its request twice
  c.srtt_us = 1200;
  c.ca_state = 4;
  AddConnection(a.samples[1].tcp, c);
  AddConnection(a.tcp, c);
  SummarizeProbe(a);
  a.clock_resolution_ns = 1;
  ProbeFacts b = a;
  b.url = "https://gw.example:443";
  b.ttfb_unordered = 1;  // one sample's stamps out of order: said, not counted as 0
  for (auto& s : b.samples) {
    if (s.failure != FailureReason::kNone) continue;
    s.tls_ms = 2.5;
    *s.ttfb_ms += 41;
    *s.ttft_new_ms += 45;
    *s.ttft_reused_ms += 41;
  }
  b.idle = IdleCloseFacts{};
  b.idle.skipped_reason = "plain http only; this URL is https";
  SummarizeProbe(b);
  f.compare = ComparePhases(a, b);
  f.compare_probe = b;
  f.path.ran = true;
  f.path.tool = "tracepath";
  f.path.hops = {{1, "192.168.1.1", 0.433}, {2, "", std::nullopt}, {3, "10.0.0.5", 12.0}};
  FindLatencyJump(f.path);
  f.route.checked = true;
  f.route.address = "10.0.0.5";
  f.route.dev = "eth0";
  f.route.gateway = "192.168.1.1";
  f.route.src = "192.168.1.20";
  f.route.iface_mtu_bytes = 1500;
  f.route.cached_mtu_bytes = 1400;
  f.route.path_mtu_bytes = 1400;
  f.route.pmtu_frag_needed_seen = true;
  return f;
}

TEST(NetTextTest, MatchesGolden) {
  NetFacts f = Sample();
  // Headroom as the CLI computes it.
  f.probe.bandwidth.required_mbps = 80;
  f.probe.bandwidth.rate_source = "given";
  f.probe.bandwidth.headroom = 1.25;
  std::string got = RenderNetText(f);
  const std::string path = std::string(LATDOC_SOURCE_DIR) + "/tests/data/net/summary.golden.txt";
  if (std::getenv("LATDOC_UPDATE_GOLDEN")) {
    ASSERT_TRUE(WriteFileAtomic(path, got).ok());
  }
  auto want = ReadFileToString(path);
  ASSERT_TRUE(want.ok()) << want.status().message();
  EXPECT_EQ(got, *want);
}

}  // namespace
}  // namespace latdoc::net
