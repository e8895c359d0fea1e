// End-to-end in network namespaces: `latdoc net` in a client namespace against `latdoc sim` in a
// server namespace, over a path this test builds with a planted cause, which the run must name;
// the same path without the cause must report none. Needs root (ip netns); where namespaces
// cannot be created the tests say why and skip.
//
// The paths:
//   - lossy: client and server namespaces joined by two TUN devices and tests/tools'
//     lossy_forwarder between them, dropping every Nth packet (the kernel here has no netem);
//   - clean: the same without drops.
// Only addresses inside these namespaces (10.242.0.0/16) are ever targeted. Namespace names
// carry the test process's pid, so parallel runs do not collide; they are deleted at the end of
// each test, failed or not.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/file_util.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using ::testing::HasSubstr;

// Runs a shell command; returns its exit status and puts its combined output in `out`.
int Sh(const std::string& cmd, std::string* out = nullptr) {
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return -1;
  std::string text;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) text.append(buf, n);
  int st = ::pclose(f);
  if (out) *out = text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// Process execs without a PATH search.
std::string IpBinary() {
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"})
    if (::access(p, X_OK) == 0) return p;
  return "ip";
}

// Why namespaces cannot be made here, or "" when they can.
std::string NamespacesUnavailable() {
  if (::geteuid() != 0) return "not root: creating network namespaces needs CAP_SYS_ADMIN";
  std::string out;
  const std::string name = fmt::format("ltdprobe{}", ::getpid());
  if (Sh("ip netns add " + name, &out) != 0) return "ip netns add failed: " + out;
  Sh("ip netns del " + name);
  if (::access("/dev/net/tun", R_OK | W_OK) != 0) return "/dev/net/tun is not usable";
  return "";
}

// Namespaces made for one test, deleted (with all their devices) when it ends.
class Namespaces {
 public:
  // `role` becomes part of the name: "ltd<pid><role>".
  std::string Add(const std::string& role) {
    std::string name = fmt::format("ltd{}{}", ::getpid(), role);
    Sh("ip netns del " + name);  // left over from a crashed run of this pid
    std::string out;
    if (Sh("ip netns add " + name, &out) != 0) ADD_FAILURE() << "ip netns add " << name << ": " << out;
    names_.push_back(name);
    Run(name, "ip link set lo up");
    return name;
  }
  // Runs `cmd` in namespace `ns`; a failure fails the test with ip's message.
  void Run(const std::string& ns, const std::string& cmd) {
    std::string out;
    if (Sh("ip netns exec " + ns + " " + cmd, &out) != 0)
      ADD_FAILURE() << "in " << ns << ": " << cmd << ": " << out;
  }
  std::string Output(const std::string& ns, const std::string& cmd) {
    std::string out;
    Sh("ip netns exec " + ns + " " + cmd, &out);
    return out;
  }
  ~Namespaces() {
    for (const auto& n : names_) Sh("ip netns del " + n);
  }

 private:
  std::vector<std::string> names_;
};

// `latdoc sim` in namespace `ns`, listening on `host`.
class NsSim {
 public:
  NsSim(const std::string& ns, const std::string& host)
      : proc_({IpBinary(), "netns", "exec", ns, LatdocBinary(), "sim", "--host", host, "--port", "0",
               "--time-scale", "0.1"},
              "/dev/null") {
    std::string line = proc_.ReadLine();
    auto colon = line.rfind(':');
    if (line.rfind("latdoc sim listening on", 0) != 0 || colon == std::string::npos) {
      ADD_FAILURE() << "latdoc sim did not start in " << ns << ": '" << line << "'";
      return;
    }
    port_ = std::stoi(line.substr(colon + 1));
  }
  int port() const { return port_; }

 private:
  Process proc_;
  int port_ = 0;
};

struct NetRun {
  int exit_code = -1;
  std::string out;
  nlohmann::json doc;
};

// `latdoc net ARGS --json FILE` in namespace `ns`.
NetRun RunNetIn(const std::string& ns, std::vector<std::string> args) {
  const std::string json_path = TempPath(fmt::format("netns_{}_{}.json", ::getpid(), std::rand()));
  std::vector<std::string> argv = {IpBinary(), "netns", "exec", ns, LatdocBinary(), "net"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--json", json_path, "--no-color"});
  NetRun r;
  {
    Process p(argv);
    r.out = p.ReadToEnd(120000);
    r.exit_code = p.Wait(5000);
  }
  auto text = ReadFileToString(json_path);
  ::unlink(json_path.c_str());
  if (text.ok()) r.doc = nlohmann::json::parse(*text, nullptr, false);
  return r;
}

// `latdoc ARGS` in namespace `ns`: exit code and standard output.
std::pair<int, std::string> RunIn(const std::string& ns, std::vector<std::string> args) {
  std::vector<std::string> argv = {IpBinary(), "netns", "exec", ns, LatdocBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, "/dev/null");
  std::string out = p.ReadToEnd(120000);
  return {p.Wait(5000), out};
}

const nlohmann::json* FindingById(const nlohmann::json& doc, const std::string& id) {
  if (!doc.contains("findings")) return nullptr;
  for (const auto& f : doc["findings"])
    if (f.value("id", "") == id) return &f;
  return nullptr;
}

// Client 10.242.1.1 on TUN "ta", server 10.242.1.2 on TUN "tb", the forwarder between them.
struct TunPath {
  Namespaces ns;
  std::string client, server;
  std::optional<Process> forwarder;
  explicit TunPath(std::vector<std::string> forwarder_args) {
    client = ns.Add("c");
    server = ns.Add("s");
    ns.Run(client, "ip tuntap add dev ta mode tun");
    ns.Run(server, "ip tuntap add dev tb mode tun");
    std::vector<std::string> argv = {LATDOC_LOSSY_FORWARDER, "--a", client + ":ta", "--b",
                                     server + ":tb"};
    argv.insert(argv.end(), forwarder_args.begin(), forwarder_args.end());
    forwarder.emplace(argv, "/dev/null");
    EXPECT_EQ(forwarder->ReadLine(), "ready");
    ns.Run(client, "ip addr add 10.242.1.1/24 dev ta");
    ns.Run(client, "ip link set ta up");
    ns.Run(server, "ip addr add 10.242.1.2/24 dev tb");
    ns.Run(server, "ip link set tb up");
  }
};

// Client 10.242.1.2 -- gateway (10.242.1.1 | 10.242.2.1, forwarding) -- server 10.242.2.2, on
// veth pairs; the gateway's link to the server has MTU `far_mtu`, and the kernel gateway says
// so with ICMP "fragmentation needed".
struct RoutedPath {
  Namespaces ns;
  std::string client, gateway, server;
  explicit RoutedPath(int far_mtu) {
    client = ns.Add("c");
    gateway = ns.Add("g");
    server = ns.Add("s");
    std::string out;
    if (Sh(fmt::format("ip link add vc netns {} type veth peer name vg1 netns {}", client, gateway), &out) != 0)
      ADD_FAILURE() << "veth: " << out;
    if (Sh(fmt::format("ip link add vs netns {} type veth peer name vg2 netns {}", server, gateway), &out) != 0)
      ADD_FAILURE() << "veth: " << out;
    ns.Run(gateway, "sysctl -qw net.ipv4.ip_forward=1");
    ns.Run(client, "ip addr add 10.242.1.2/24 dev vc");
    ns.Run(client, "ip link set vc up");
    ns.Run(client, "ip route add default via 10.242.1.1");
    ns.Run(gateway, "ip addr add 10.242.1.1/24 dev vg1");
    ns.Run(gateway, "ip link set vg1 up");
    ns.Run(gateway, "ip addr add 10.242.2.1/24 dev vg2");
    ns.Run(gateway, fmt::format("ip link set vg2 mtu {} up", far_mtu));
    ns.Run(server, "ip addr add 10.242.2.2/24 dev vs");
    ns.Run(server, fmt::format("ip link set vs mtu {} up", far_mtu));
    ns.Run(server, "ip route add default via 10.242.2.1");
  }
};

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why = NamespacesUnavailable();
    if (!why.empty()) GTEST_SKIP() << "network namespaces unavailable: " << why;
  }
};

// Planted: every 4th packet from the client to the server is dropped. The client's
// retransmits are counted from its own sockets, and net.probe_retransmits names them with their
// count.
TEST_F(NetnsTest, LossyPathIsNamedByItsRetransmits) {
  TunPath path({"--drop-every-a2b", "4"});
  NsSim sim(path.server, "10.242.1.2");
  ASSERT_GT(sim.port(), 0);
  NetRun r = RunNetIn(path.client, {"--url", fmt::format("http://10.242.1.2:{}", sim.port()),
                                    "-n", "3", "--idle-wait", "0", "--no-path"});
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  const nlohmann::json& tcp = r.doc["facts"]["probe"]["tcp"];
  EXPECT_EQ(tcp["connections"], 7) << tcp.dump();  // 3 samples x 2 new + the kept-alive one
  EXPECT_GE(tcp["retrans_segs"].get<int>(), 2) << tcp.dump();
  const nlohmann::json* f = FindingById(r.doc, "net.probe_retransmits");
  ASSERT_NE(f, nullptr) << r.out;
  EXPECT_THAT((*f)["severity"].get<std::string>(), ::testing::AnyOf("warn", "fail")) << r.out;
  EXPECT_THAT((*f)["title"].get<std::string>(),
              HasSubstr(fmt::format("{} of {} TCP segments retransmitted",
                                    tcp["retrans_segs"].get<int>(), tcp["segs_out"].get<int>())));
  EXPECT_THAT(r.out, HasSubstr("TCP segments retransmitted"));
  // The run's total is its samples' and the kept-alive connection's.
  int per_sample = 0;
  for (const auto& s : r.doc["facts"]["probe"]["samples"]) per_sample += s["tcp"]["retrans_segs"].get<int>();
  EXPECT_LE(per_sample, tcp["retrans_segs"].get<int>());
}

// The same path without drops: no retransmit, net.probe_retransmits ok, the TUN's MTU as path MTU.
TEST_F(NetnsTest, CleanPathReportsNoRetransmits) {
  TunPath path({});
  NsSim sim(path.server, "10.242.1.2");
  ASSERT_GT(sim.port(), 0);
  NetRun r = RunNetIn(path.client, {"--url", fmt::format("http://10.242.1.2:{}", sim.port()),
                                    "-n", "3", "--idle-wait", "0", "--no-path"});
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json& tcp = r.doc["facts"]["probe"]["tcp"];
  EXPECT_EQ(tcp["retrans_segs"], 0) << tcp.dump();
  EXPECT_EQ(tcp["pmtu_min_bytes"], 1500) << tcp.dump();
  EXPECT_EQ(tcp["ip_mtu_min_bytes"], 1500) << tcp.dump();
  EXPECT_EQ(tcp["snd_mss_min_bytes"], 1448) << tcp.dump();  // 1500 - 40 - 12 (timestamps)
  // The bandwidth stream (its 4096-byte prompt in full-size segments) comes whole.
  const nlohmann::json& bw = r.doc["facts"]["probe"]["bandwidth"];
  EXPECT_EQ(bw["stalled"], false) << bw.dump();
  EXPECT_EQ(bw["stream_tokens"], 64) << bw.dump();
  EXPECT_EQ(FindingById(r.doc, "net.stream_stall"), nullptr) << r.out;
  const nlohmann::json* f = FindingById(r.doc, "net.probe_retransmits");
  ASSERT_NE(f, nullptr) << r.out;
  EXPECT_EQ((*f)["severity"], "ok") << r.out;
  // Direct on the subnet, and the whole interface MTU gets through.
  const nlohmann::json& route = r.doc["facts"]["route"];
  EXPECT_EQ(route["dev"], "ta") << route.dump();
  EXPECT_EQ(route["direct"], true) << route.dump();
  EXPECT_EQ(route["iface_mtu_bytes"], 1500) << route.dump();
  EXPECT_EQ(route["path_mtu_bytes"], 1500) << route.dump();
  EXPECT_EQ(route["pmtu_black_hole"], false) << route.dump();
  const nlohmann::json* m = FindingById(r.doc, "net.path_mtu");
  ASSERT_NE(m, nullptr) << r.out;
  EXPECT_EQ((*m)["severity"], "ok") << r.out;
  EXPECT_THAT(r.out, HasSubstr("route: 10.242.1.2 directly on the subnet of dev ta"));
}

// Planted: a gateway between client and server, and an MTU of 1400 on its far link. The route
// names the gateway, the path MTU is the far link's (learnt from the gateway's ICMP), below the
// client interface's 1500, and the server's MSS follows it.
TEST_F(NetnsTest, RoutedPathWithSmallerFarMtuIsNamed) {
  RoutedPath path(1400);
  NsSim sim(path.server, "10.242.2.2");
  ASSERT_GT(sim.port(), 0);
  NetRun r = RunNetIn(path.client, {"--url", fmt::format("http://10.242.2.2:{}", sim.port()),
                                    "-n", "2", "--idle-wait", "0", "--no-path"});
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  const nlohmann::json& route = r.doc["facts"]["route"];
  EXPECT_EQ(route["gateway"], "10.242.1.1") << route.dump();
  EXPECT_EQ(route["direct"], false) << route.dump();
  EXPECT_EQ(route["dev"], "vc") << route.dump();
  EXPECT_EQ(route["iface_mtu_bytes"], 1500) << route.dump();
  EXPECT_EQ(route["path_mtu_bytes"], 1400) << route.dump();
  EXPECT_EQ(route["pmtu_frag_needed_seen"], true) << route.dump();
  // With ICMP 'fragmentation needed' let through, TCP adapts: the stream does not stall.
  EXPECT_EQ(r.doc["facts"]["probe"]["bandwidth"]["stalled"], false) << r.out;
  EXPECT_EQ(FindingById(r.doc, "net.stream_stall"), nullptr) << r.out;
  EXPECT_EQ(route["pmtu_black_hole"], false) << route.dump();
  // 1400 - 20 (IP) - 20 (TCP) - 12 (timestamps): the server advertised its link's MSS.
  EXPECT_EQ(r.doc["facts"]["probe"]["tcp"]["snd_mss_min_bytes"], 1348);
  const nlohmann::json* m = FindingById(r.doc, "net.path_mtu");
  ASSERT_NE(m, nullptr) << r.out;
  EXPECT_EQ((*m)["severity"], "warn") << r.out;
  EXPECT_EQ((*m)["title"], "Path MTU 1400 below the interface's 1500 (dev vc): a smaller MTU on "
                           "the way to 10.242.2.2");
  const nlohmann::json* rt = FindingById(r.doc, "net.route");
  ASSERT_NE(rt, nullptr) << r.out;
  EXPECT_EQ((*rt)["title"], "Server 10.242.2.2 reached via gateway 10.242.1.1 (dev vc)");
  EXPECT_EQ(r.exit_code, 0) << r.out;  // a warning: the run itself is fine
}

// Planted: the middlebox drops every packet above 1400 bytes and sends no ICMP (a PMTU black
// hole). The UDP probe finds 1400 by search and net.path_mtu fails: exit 1. The bandwidth
// stream (its 4096-byte prompt goes in full-size segments) stalls while the small requests pass: a bounded,
// reported event (net.stream_stall names the bytes that came and the quiet time), not a hang.
TEST_F(NetnsTest, BlackHoleBelowTheInterfaceMtuFails) {
  TunPath path({"--mtu", "1400"});
  NsSim sim(path.server, "10.242.1.2");
  ASSERT_GT(sim.port(), 0);
  const int64_t t0 = MonoNowNs();
  NetRun r = RunNetIn(path.client, {"--url", fmt::format("http://10.242.1.2:{}", sim.port()),
                                    "-n", "1", "--idle-wait", "0", "--no-path",
                                    "--stream-tokens", "512", "--timeout", "3"});
  const double wall_s = static_cast<double>(MonoNowNs() - t0) / 1e9;
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  // The stall ends at the sample timeout (3 s) plus the client's grace: the run stays bounded.
  EXPECT_LT(wall_s, 30.0) << r.out;
  const nlohmann::json& bw = r.doc["facts"]["probe"]["bandwidth"];
  EXPECT_EQ(bw["stalled"], true) << bw.dump();
  EXPECT_EQ(bw["stream_tokens_requested"], 512) << bw.dump();
  ASSERT_TRUE(bw["stall_bytes"].is_number()) << bw.dump();
  ASSERT_TRUE(bw["stall_quiet_ms"].is_number()) << bw.dump();
  EXPECT_GE(bw["stall_quiet_ms"].get<double>(), 1000.0) << bw.dump();
  const nlohmann::json* st = FindingById(r.doc, "net.stream_stall");
  ASSERT_NE(st, nullptr) << r.out;
  EXPECT_EQ((*st)["severity"], "fail") << r.out;
  EXPECT_THAT((*st)["title"].get<std::string>(),
              HasSubstr(fmt::format("The 512-token stream (4096-byte prompt) stalled after {:.0f} bytes",
                                    bw["stall_bytes"].get<double>())));
  EXPECT_THAT((*st)["title"].get<std::string>(),
              HasSubstr("while the small requests passed; packets above the path MTU of 1400 "
                        "bytes vanish (PMTU black hole)"));
  EXPECT_THAT(r.out, HasSubstr("stream stalled: "));
  const nlohmann::json& route = r.doc["facts"]["route"];
  EXPECT_EQ(route["path_mtu_bytes"], 1400) << route.dump();
  EXPECT_EQ(route["pmtu_black_hole"], true) << route.dump();
  EXPECT_EQ(route["pmtu_frag_needed_seen"], false) << route.dump();
  const nlohmann::json* m = FindingById(r.doc, "net.path_mtu");
  ASSERT_NE(m, nullptr) << r.out;
  EXPECT_EQ((*m)["severity"], "fail") << r.out;
  EXPECT_EQ((*m)["title"], "PMTU black hole: packets above 1400 bytes to 10.242.1.2 vanish "
                           "without ICMP 'fragmentation needed' (interface MTU 1500)");
  EXPECT_EQ(r.exit_code, 1) << r.out;
}

// bench's own load connections over the lossy path, and over the clean one: their TCP_INFO in
// bench's JSON, retransmits counted where the loss was planted and none where not.
TEST_F(NetnsTest, BenchCountsItsLoadConnectionsRetransmits) {
  for (bool lossy : {true, false}) {
    TunPath path(lossy ? std::vector<std::string>{"--drop-every-a2b", "4"}
                       : std::vector<std::string>{});
    NsSim sim(path.server, "10.242.1.2");
    ASSERT_GT(sim.port(), 0);
    const std::string json_path = TempPath(fmt::format("netns_bench_{}.json", ::getpid()));
    auto [code, out] = RunIn(path.client, {"bench", "--url",
                                           fmt::format("http://10.242.1.2:{}", sim.port()),
                                           "--num-prompts", "12", "--concurrency", "2",
                                           "--json", json_path});
    auto text = ReadFileToString(json_path);
    ::unlink(json_path.c_str());
    ASSERT_TRUE(text.ok()) << out;
    nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
    ASSERT_TRUE(doc.is_object() && doc.contains("tcp")) << *text;
    const nlohmann::json& tcp = doc["tcp"];
    EXPECT_GE(tcp["connections"].get<int>(), 2) << tcp.dump();
    EXPECT_GT(tcp["segs_out"].get<int>(), 12) << tcp.dump();
    if (lossy) EXPECT_GE(tcp["retrans_segs"].get<int>(), 2) << tcp.dump();
    else EXPECT_EQ(tcp["retrans_segs"], 0) << tcp.dump();
    EXPECT_EQ(tcp["pmtu_min_bytes"], 1500) << tcp.dump();
  }
}

// The exporter's net collector over the routed path: the path MTU and the interface's as
// gauges, the probe's TCP segments as counters, net.path_mtu's verdict as a finding series.
TEST_F(NetnsTest, ExporterServesPathMtuAndRetransmits) {
  RoutedPath path(1400);
  NsSim sim(path.server, "10.242.2.2");
  ASSERT_GT(sim.port(), 0);
  auto [code, page] = RunIn(path.client, {"exporter", "--url",
                                          fmt::format("http://10.242.2.2:{}", sim.port()),
                                          "--once"});
  EXPECT_THAT(page, HasSubstr("\nlatdoc_net_path_mtu_bytes 1400\n"));
  EXPECT_THAT(page, HasSubstr("\nlatdoc_net_interface_mtu_bytes 1500\n"));
  EXPECT_THAT(page, HasSubstr("\nlatdoc_net_tcp_retransmitted_segments_total 0\n"));
  EXPECT_THAT(page, HasSubstr(
      "latdoc_finding{rule=\"net.path_mtu\",layer=\"network\",severity=\"warn\"} 1\n"));
  EXPECT_THAT(page, HasSubstr(
      "latdoc_finding{rule=\"net.probe_retransmits\",layer=\"network\",severity=\"ok\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_collector_up{collector=\"net\"} 1\n"));
}

// diagnose over the lossy path: the network layer's summary carries the retransmits and the
// route, and net.probe_retransmits is among its findings.
TEST_F(NetnsTest, DiagnoseNetworkLayerCarriesRetransmitsAndRoute) {
  TunPath path({"--drop-every-a2b", "4"});
  NsSim sim(path.server, "10.242.1.2");
  ASSERT_GT(sim.port(), 0);
  const std::string json_path = TempPath(fmt::format("netns_diag_{}.json", ::getpid()));
  auto [code, out] = RunIn(path.client, {"diagnose", "--url",
                                         fmt::format("http://10.242.1.2:{}", sim.port()),
                                         "--requests", "10", "--concurrency", "2", "--json",
                                         json_path, "--no-color"});
  auto text = ReadFileToString(json_path);
  ::unlink(json_path.c_str());
  ASSERT_TRUE(text.ok()) << out;
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << out;
  const std::string layer = doc["layers"]["network"];
  EXPECT_THAT(layer, ::testing::ContainsRegex("[0-9]+ of [0-9]+ TCP segments retransmitted"));
  EXPECT_THAT(layer, HasSubstr("direct on the subnet of ta, path MTU 1500"));
  EXPECT_THAT(layer, ::testing::Not(HasSubstr(" 0 of ")));
  bool found = false;
  for (const auto& f : doc["findings"]) {
    if (f["id"] == "net.probe_retransmits") {
      found = true;
      EXPECT_THAT(f["severity"].get<std::string>(), ::testing::AnyOf("warn", "fail")) << f.dump();
    }
  }
  EXPECT_TRUE(found) << out;
}

}  // namespace
}  // namespace latdoc::testing
