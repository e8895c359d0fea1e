#include "net/path_tools.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::net {
namespace {

constexpr char kTracepath[] =
    " 1?: [LOCALHOST]                      pmtu 1500\n"
    " 1:  192.168.1.1                                           0.512ms \n"
    " 1:  192.168.1.1                                           0.433ms \n"
    " 2:  10.20.0.1                                             8.123ms asymm  3 \n"
    " 3:  no reply\n"
    " 4:  10.0.0.5                                             31.007ms reached\n"
    "     Resume: pmtu 1500 hops 4 back 4 \n";

TEST(PathToolsTest, ParsesTracepath) {
  auto hops = ParseTracepath(kTracepath);
  ASSERT_EQ(hops.size(), 4u);
  EXPECT_EQ(hops[0].hop, 1);
  EXPECT_EQ(hops[0].address, "192.168.1.1");
  EXPECT_DOUBLE_EQ(*hops[0].rtt_ms, 0.433);  // the lower of the two probes
  EXPECT_DOUBLE_EQ(*hops[1].rtt_ms, 8.123);
  EXPECT_EQ(hops[2].address, "");
  EXPECT_FALSE(hops[2].rtt_ms);
  EXPECT_EQ(hops[3].address, "10.0.0.5");
  EXPECT_DOUBLE_EQ(*hops[3].rtt_ms, 31.007);
  PathFacts p;
  p.hops = hops;
  FindLatencyJump(p);
  EXPECT_EQ(*p.jump_hop, 4);  // 8.123 -> 31.007 beats 0 -> 0.433 and 0.433 -> 8.123
  EXPECT_NEAR(*p.jump_ms, 31.007 - 8.123, 1e-9);
}

TEST(PathToolsTest, ParsesTraceroute) {
  constexpr char kText[] =
      "traceroute to 10.0.0.5 (10.0.0.5), 30 hops max, 60 byte packets\n"
      " 1  192.168.1.1  0.412 ms  0.389 ms  0.371 ms\n"
      " 2  * * *\n"
      " 3  10.0.0.5  9.812 ms 10.0.0.6  9.790 ms  10.101 ms !H\n";
  auto hops = ParseTraceroute(kText);
  ASSERT_EQ(hops.size(), 3u);
  EXPECT_EQ(hops[0].address, "192.168.1.1");
  EXPECT_DOUBLE_EQ(*hops[0].rtt_ms, 0.371);
  EXPECT_EQ(hops[1].address, "");
  EXPECT_FALSE(hops[1].rtt_ms);
  EXPECT_EQ(hops[2].address, "10.0.0.5");
  EXPECT_DOUBLE_EQ(*hops[2].rtt_ms, 9.790);
}

TEST(PathToolsTest, GarbageGivesNoHops) {
  EXPECT_TRUE(ParseTracepath("tracepath: 10.0.0.5: Name or service not known\n").empty());
  EXPECT_TRUE(ParseTraceroute("\x01\x02 garbage\n 0 x\n").empty());
}

TEST(PathToolsTest, RunPathFallsBackToTracerouteThenSkips) {
  FakeCommandRunner fake;
  fake.Set("traceroute -n -q 3 -w 2 -m 20 10.0.0.5",
           {0, " 1  10.0.0.5  0.5 ms  0.4 ms  0.6 ms\n"});
  PathFacts p = RunPath(fake, "10.0.0.5", 1'000'000'000);
  EXPECT_TRUE(p.ran);
  EXPECT_EQ(p.tool, "traceroute");
  ASSERT_EQ(p.hops.size(), 1u);
  EXPECT_THAT(fake.calls(), testing::ElementsAre("tracepath -n -m 20 10.0.0.5",
                                                 "traceroute -n -q 3 -w 2 -m 20 10.0.0.5"));
  FakeCommandRunner none;
  PathFacts q = RunPath(none, "10.0.0.5", 1'000'000'000);
  EXPECT_FALSE(q.ran);
  EXPECT_EQ(q.skipped_reason,
            "neither tracepath nor traceroute is installed (apt-get install iputils-tracepath)");
  FakeCommandRunner tp;
  tp.Set("tracepath -n -m 20 h", {0, kTracepath});
  PathFacts r = RunPath(tp, "h", 1'000'000'000);
  EXPECT_EQ(r.tool, "tracepath");
  EXPECT_EQ(r.hops.size(), 4u);
  EXPECT_EQ(*r.jump_hop, 4);
}

// Trimmed from a real `iperf3 -J -R -c` run (iperf 3.12).
constexpr char kIperfOk[] = R"({
  "start": {"connected": [{"socket": 5, "local_host": "127.0.0.1", "local_port": 40122,
            "remote_host": "127.0.0.1", "remote_port": 5201}], "version": "iperf 3.12"},
  "intervals": [],
  "end": {"sum_sent": {"start": 0, "end": 5.0, "seconds": 5.0, "bytes": 590000000,
                       "bits_per_second": 944000000.0, "retransmits": 0},
          "sum_received": {"start": 0, "end": 5.0, "seconds": 5.0, "bytes": 588750000,
                           "bits_per_second": 942000000.0}}
})";

TEST(Iperf3Test, ParsesReceivedRate) {
  auto r = ParseIperf3Json(kIperfOk);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->received_mbps, 942.0);
  auto udp = ParseIperf3Json(R"({"end": {"sum": {"bits_per_second": 1000000}}})");
  ASSERT_TRUE(udp.ok());
  EXPECT_DOUBLE_EQ(udp->received_mbps, 1.0);
}

TEST(Iperf3Test, ErrorsAreVerbatim) {
  EXPECT_EQ(ParseIperf3Json(R"({"start": {}, "intervals": [], "end": {},
      "error": "unable to connect to server: Connection refused"})").status().message(),
            "iperf3: unable to connect to server: Connection refused");
  EXPECT_EQ(ParseIperf3Json("iperf3: error").status().message(), "iperf3 -J: output is not JSON");
  EXPECT_EQ(ParseIperf3Json(R"({"start": {}})").status().message(), "iperf3 -J: no \"end\" summary");
  EXPECT_EQ(ParseIperf3Json(R"({"end": {"sum_sent": {}}})").status().message(),
            "iperf3 -J: \"end\" has no sum_received.bits_per_second");
}

TEST(Iperf3Test, RunThroughTheSeam) {
  FakeCommandRunner fake;
  fake.Set("iperf3 -J -R -t 3 -c 127.0.0.1", {0, kIperfOk});
  auto r = RunIperf3(fake, "127.0.0.1", 3, 10'000'000'000);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->received_mbps, 942.0);
  FakeCommandRunner none;
  EXPECT_EQ(RunIperf3(none, "127.0.0.1", 3, 1).status().code(), StatusCode::kNotFound);
  FakeCommandRunner silent;
  silent.Set("iperf3 -J -R -t 3 -c x", {1, ""});
  EXPECT_EQ(RunIperf3(silent, "x", 3, 1).status().message(),
            "iperf3 exited with 1 and printed nothing");
}

}  // namespace
}  // namespace latdoc::net
