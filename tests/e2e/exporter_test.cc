// End-to-end: `latdoc exporter` watching a real `latdoc sim`, scraped by a real Prometheus
// (Debian's /usr/bin/prometheus) that loads the shipped deploy/prometheus/ configuration: the
// scrape config copied with the ports and intervals substituted, and the alert rules file
// itself, unchanged. The tests ask Prometheus's HTTP API for the series and the alerts.
// Loopback only; ports chosen free; every process is stopped by its destructor (SIGTERM, then
// SIGKILL), also when an assertion fails; each test stays well under 60 s.
#include <unistd.h>

#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "http/testing/blocking_client.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kDeploy = std::string(LATDOC_SOURCE_DIR) + "/deploy/prometheus";
const char* kPrometheus = "/usr/bin/prometheus";
const char* kPromtool = "/usr/bin/promtool";
// A healthy recorded host, so the host checks are real but deterministic.
const std::string kHealthyTree =
    std::string(LATDOC_SOURCE_DIR) + "/tests/data/host/mi300x_built/tree";

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// `latdoc exporter --listen 127.0.0.1:0 ARGS...`; the port from its first output line.
class ExporterProcess {
 public:
  explicit ExporterProcess(std::vector<std::string> args) {
    std::vector<std::string> argv = {LatdocBinary(), "exporter", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), args.begin(), args.end());
    proc_ = std::make_unique<Process>(argv);
    const std::string line = proc_->ReadLine(10000);
    const std::string head = "latdoc exporter: serving http://127.0.0.1:";
    EXPECT_EQ(line.rfind(head, 0), 0u) << line;
    if (line.rfind(head, 0) == 0) port_ = uint16_t(std::stoi(line.substr(head.size())));
  }
  uint16_t port() const { return port_; }
  std::string Page() const { return http::testing::Fetch(port_, "GET", "/metrics").body; }
  Process& process() { return *proc_; }

 private:
  std::unique_ptr<Process> proc_;
  uint16_t port_ = 0;
};

// Prometheus with the shipped scrape config pointed at `exporter_port`, scraping and
// evaluating every second, and the shipped alert rules file.
class PrometheusProcess {
 public:
  PrometheusProcess(uint16_t exporter_port, const TempDir& dir) : port_(FreeLoopbackPort()) {
    std::string config = ReadFileOrEmpty(kDeploy + "/prometheus.yml");
    ReplaceAll(config, "127.0.0.1:9464", "127.0.0.1:" + std::to_string(exporter_port));
    ReplaceAll(config, "scrape_interval: 15s", "scrape_interval: 1s");
    ReplaceAll(config, "evaluation_interval: 15s", "evaluation_interval: 1s");
    ReplaceAll(config, "scrape_timeout: 10s", "scrape_timeout: 1s");
    ReplaceAll(config, "- latdoc-alerts.yml", "- " + kDeploy + "/latdoc-alerts.yml");
    const std::string config_path = dir / "prometheus.yml";
    std::ofstream(config_path) << config;
    proc_ = std::make_unique<Process>(
        std::vector<std::string>{kPrometheus, "--config.file=" + config_path,
                                 "--storage.tsdb.path=" + (dir / "data"),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                 "--log.level=warn"},
        dir / "prometheus.log");
    for (int i = 0; i < 200; ++i) {
      if (http::testing::Fetch(port_, "GET", "/-/ready").status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "Prometheus not ready: " << ReadFileOrEmpty(dir / "prometheus.log");
  }

  nlohmann::json Get(const std::string& path) const {
    auto r = http::testing::Fetch(port_, "GET", path);
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_discarded() ? nlohmann::json() : j;
  }
  // The instant vector of a PromQL query (a query of only [a-z_{}="] characters and spaces).
  nlohmann::json Query(std::string q) const {
    ReplaceAll(q, " ", "%20");
    ReplaceAll(q, "{", "%7B");
    ReplaceAll(q, "}", "%7D");
    ReplaceAll(q, "\"", "%22");
    ReplaceAll(q, "=", "%3D");
    nlohmann::json j = Get("/api/v1/query?query=" + q);
    if (!j.is_object() || j.value("status", "") != "success") return nlohmann::json::array();
    return j["data"]["result"];
  }
  // Alerts named `name`, with their state ("pending" or "firing") and labels.
  std::vector<nlohmann::json> Alerts(const std::string& name) const {
    std::vector<nlohmann::json> out;
    nlohmann::json j = Get("/api/v1/alerts");
    if (!j.is_object() || !j.contains("data")) return out;
    for (const auto& a : j["data"]["alerts"])
      if (a["labels"].value("alertname", "") == name) out.push_back(a);
    return out;
  }

 private:
  uint16_t port_;
  std::unique_ptr<Process> proc_;
};

std::vector<std::string> ExporterArgs(const std::string& target) {
  return {"--target", target, "--interval", "1s", "--timeout", "5s", "--host-interval", "3s",
          "--sysroot", kHealthyTree};
}

bool HaveTools() { return ::access(kPrometheus, X_OK) == 0 && ::access(kPromtool, X_OK) == 0; }

TEST(ExporterE2eTest, PromtoolAcceptsTheShippedFiles) {
  if (!HaveTools()) GTEST_SKIP() << "no " << kPrometheus << " (scripts/install-deps.sh)";
  for (const std::vector<std::string>& cmd :
       {std::vector<std::string>{kPromtool, "check", "rules", kDeploy + "/latdoc-alerts.yml"},
        std::vector<std::string>{kPromtool, "check", "config", kDeploy + "/prometheus.yml"}}) {
    Process p(cmd);
    const std::string out = p.ReadToEnd(20000);
    EXPECT_EQ(p.Wait(20000), 0) << out;
    EXPECT_THAT(out, HasSubstr("SUCCESS")) << out;
  }
  // The exporter's page passes promtool's lint of metric names, units and types.
  Process lint({"/bin/sh", "-c",
                std::string(kPromtool) + " check metrics < " + LATDOC_SOURCE_DIR +
                    "/tests/data/exporter/metrics.golden.prom 2>&1"});
  const std::string lint_out = lint.ReadToEnd(20000);
  EXPECT_EQ(lint.Wait(20000), 0) << lint_out;
  EXPECT_EQ(lint_out, "");
  // The dashboard is JSON with panels that query latdoc's series.
  auto dash = nlohmann::json::parse(ReadFileOrEmpty(kDeploy + "/grafana-dashboard.json"), nullptr, false);
  ASSERT_FALSE(dash.is_discarded());
  ASSERT_TRUE(dash.contains("panels"));
  EXPECT_GE(dash["panels"].size(), 4u);
  EXPECT_THAT(dash.dump(), HasSubstr("latdoc_canary_ttft_seconds_bucket"));
}

// Waits up to `timeout_ms` for `pred`, polling every 250 ms.
template <typename F>
bool WaitFor(int timeout_ms, F pred) {
  const int64_t end = MonoNowNs() + int64_t(timeout_ms) * kNsPerMs;
  while (MonoNowNs() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return pred();
}

// Every canary request fails (HTTP 500 from the simulator): the load rule load.failures is a
// `fail` finding, and the shipped LatdocFailFinding alert fires for it.
TEST(ExporterE2eTest, FailFindingAlertFiresWithThePathologyOn) {
  if (!HaveTools()) GTEST_SKIP() << "no " << kPrometheus;
  TempDir dir("exporter_on");
  SimProcess sim({"--sim-fault-500", "1", "--time-scale", "0.2", "--log-file", "/dev/null"});
  ExporterProcess exporter(ExporterArgs(sim.url()));
  ASSERT_NE(exporter.port(), 0);
  PrometheusProcess prom(exporter.port(), dir);
  const int64_t t0 = MonoNowNs();
  bool firing = WaitFor(40000, [&] {
    for (const auto& a : prom.Alerts("LatdocFailFinding"))
      if (a.value("state", "") == "firing" && a["labels"].value("rule", "") == "load.failures")
        return true;
    return false;
  });
  EXPECT_TRUE(firing) << exporter.Page();
  std::printf("alert fired after %.1f s\n", NsToSec(MonoNowNs() - t0));
  // The series Prometheus stored.
  auto failed = prom.Query("latdoc_canary_requests_total{outcome=\"http_status\"}");
  ASSERT_EQ(failed.size(), 1u) << failed.dump();
  EXPECT_GE(std::stod(failed[0]["value"][1].get<std::string>()), 2);
  EXPECT_EQ(prom.Query("latdoc_canary_requests_total{outcome=\"ok\"}").size(), 0u);
  EXPECT_EQ(prom.Query("latdoc_canary_up == 0").size(), 1u);
  EXPECT_EQ(prom.Query("latdoc_finding{rule=\"load.failures\",severity=\"fail\"}").size(), 1u);
}

// The same set-up without the fault: the series are there (canary histograms, TTFT split,
// host and load findings, collector and self metrics) and no LatdocFailFinding alert.
TEST(ExporterE2eTest, SeriesPresentAndNoAlertWithThePathologyOff) {
  if (!HaveTools()) GTEST_SKIP() << "no " << kPrometheus;
  TempDir dir("exporter_off");
  SimProcess sim({"--time-scale", "0.2", "--log-file", "/dev/null"});
  ExporterProcess exporter(ExporterArgs(sim.url()));
  ASSERT_NE(exporter.port(), 0);
  PrometheusProcess prom(exporter.port(), dir);
  // Long enough for the alert's `for: 15s` to have passed had any fail finding appeared.
  ASSERT_TRUE(WaitFor(30000, [&] {
    auto r = prom.Query("latdoc_canary_ttft_seconds_count > 4");
    return r.size() == 1;
  })) << exporter.Page();
  std::this_thread::sleep_for(std::chrono::seconds(16));
  for (const auto& a : prom.Alerts("LatdocFailFinding")) ADD_FAILURE() << a.dump();
  for (const char* q : {
           "latdoc_canary_requests_total{outcome=\"ok\"}",
           "latdoc_canary_itl_seconds_count",
           "latdoc_ttft_decomposition_seconds{component=\"queue\"}",
           "latdoc_ttft_decomposition_seconds{component=\"prefill\"}",
           "latdoc_ttft_decomposition_seconds{component=\"network_front_end\"}",
           "latdoc_ttft_mean_seconds{side=\"server\"}",
           "latdoc_finding{rule=\"load.failures\",layer=\"load\",severity=\"ok\"}",
           "latdoc_finding{rule=\"gpu.pcie_link\",layer=\"system\",severity=\"ok\"}",
           "latdoc_collector_duration_seconds{collector=\"host\"}",
           "latdoc_collector_runs_total{collector=\"server_metrics\"}",
           "latdoc_exporter_cpu_seconds_total",
           "latdoc_exporter_resident_memory_bytes",
           "latdoc_server_up == 1",
       }) {
    EXPECT_GE(prom.Query(q).size(), 1u) << q;
  }
  // The host checks are the expensive collector: every 3 s, not every 1 s cycle.
  auto host_runs = prom.Query("latdoc_collector_runs_total{collector=\"host\"}");
  auto cycles = prom.Query("latdoc_exporter_cycles_total");
  ASSERT_EQ(host_runs.size(), 1u);
  ASSERT_EQ(cycles.size(), 1u);
  const double h = std::stod(host_runs[0]["value"][1].get<std::string>());
  const double c = std::stod(cycles[0]["value"][1].get<std::string>());
  EXPECT_LE(h, c / 3 + 1) << "host " << h << " cycles " << c;
  EXPECT_GE(h, 2);
}

// The target is down: the canary and the scrape fail as data, the exporter keeps serving.
TEST(ExporterE2eTest, TargetDownIsReportedAndTheExporterKeepsServing) {
  const uint16_t closed = FreeLoopbackPort();
  ExporterProcess exporter({"--target", "http://127.0.0.1:" + std::to_string(closed),
                            "--interval", "1s", "--timeout", "2s", "--no-host"});
  ASSERT_NE(exporter.port(), 0);
  std::string page;
  ASSERT_TRUE(WaitFor(10000, [&] {
    page = exporter.Page();
    return page.find("latdoc_exporter_cycles_total 2\n") != std::string::npos ||
           page.find("latdoc_exporter_cycles_total 3\n") != std::string::npos;
  })) << page;
  EXPECT_THAT(page, HasSubstr("latdoc_canary_requests_total{outcome=\"connect\"}"));
  EXPECT_THAT(page, HasSubstr("latdoc_canary_up 0\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_server_up 0\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_collector_errors_total{collector=\"server_metrics\"}"));
  EXPECT_THAT(page, HasSubstr(
      "latdoc_finding{rule=\"load.failures\",layer=\"load\",severity=\"fail\"} 1\n"));
  EXPECT_EQ(exporter.process().Signal(SIGTERM), 0);
}

// A canary that hangs (the simulator holds the first byte for 8 s) ends at its deadline as a
// failed request (outcome "timeout", a fail finding); scrapes meanwhile are answered at once
// from the last complete cycle, and the /metrics collector goes on.
TEST(ExporterE2eTest, HangingCanaryTimesOutAndScrapesStayFast) {
  SimProcess sim({"--sim-fault-slow-first-byte", "1", "--sim-slow-first-byte-ms", "8000",
                  "--log-file", "/dev/null"});
  ExporterProcess exporter({"--target", sim.url(), "--interval", "1s", "--timeout", "1s",
                            "--no-host"});
  ASSERT_NE(exporter.port(), 0);
  std::string page;
  int64_t slowest_ns = 0;
  ASSERT_TRUE(WaitFor(15000, [&] {
    const int64_t t = MonoNowNs();
    page = exporter.Page();
    slowest_ns = std::max(slowest_ns, MonoNowNs() - t);
    return page.find("latdoc_canary_requests_total{outcome=\"timeout\"} 2\n") !=
           std::string::npos;
  })) << page;
  EXPECT_LT(slowest_ns, 500 * kNsPerMs);
  EXPECT_THAT(page, HasSubstr("latdoc_canary_up 0\n"));
  EXPECT_THAT(page, HasSubstr(
      "latdoc_finding{rule=\"load.failures\",layer=\"load\",severity=\"fail\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_server_up 1\n"));
  // Each cycle waited for the canary no longer than the deadline.
  EXPECT_THAT(page, HasSubstr("latdoc_collector_timeouts_total{collector=\"canary\"} 0\n"));
}

// A canary stream slower than the deadline though no single wait is (a token every 300 ms, 16
// of them, a 1 s deadline): counted as a timed-out canary and canary_up 0, not left stale.
std::optional<double> Value(const std::string& page, const std::string& series);

TEST(ExporterE2eTest, CanaryStreamLongerThanTheDeadlineIsATimeout) {
  SimProcess sim({"--sim-step-base-ms", "300", "--log-file", "/dev/null"});
  ExporterProcess exporter({"--target", sim.url(), "--interval", "1s", "--timeout", "1s",
                            "--canary-tokens", "16", "--no-host"});
  ASSERT_NE(exporter.port(), 0);
  std::string page;
  ASSERT_TRUE(WaitFor(15000, [&] {
    page = exporter.Page();
    return page.find("latdoc_canary_requests_total{outcome=\"timeout\"} ") != std::string::npos;
  })) << page;
  EXPECT_THAT(page, HasSubstr("latdoc_canary_up 0\n"));
  // The canary's own request timeout (0.8 x the deadline) ends the stream: the collector does
  // not time out, and the stream is not left running into the next cycle (which would skip it).
  ASSERT_TRUE(WaitFor(6000, [&] {
    page = exporter.Page();
    return Value(page, "latdoc_canary_requests_total{outcome=\"timeout\"}").value_or(0) >= 3;
  })) << page;
  EXPECT_THAT(page, HasSubstr("latdoc_collector_timeouts_total{collector=\"canary\"} 0\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_collector_skipped_total{collector=\"canary\"} 0\n"));
}

// The value of the series `name` (the text before the value, labels included) on `page`.
std::optional<double> Value(const std::string& page, const std::string& series) {
  const std::string key = "\n" + series + " ";
  size_t at = page.find(key);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(page.substr(at + key.size()));
}

// A known network delay (the simulator delays every write by 100 ms) lands in the TTFT split's
// network and front-end part, not in queue or prefill, and the load rule names it.
TEST(ExporterE2eTest, TtftSplitPutsANetworkDelayInNetworkAndFrontEnd) {
  SimProcess sim({"--sim-network-delay-ms", "100", "--log-file", "/dev/null"});
  ExporterProcess exporter({"--target", sim.url(), "--interval", "1s", "--timeout", "5s",
                            "--no-host"});
  ASSERT_NE(exporter.port(), 0);
  std::string page;
  ASSERT_TRUE(WaitFor(20000, [&] {
    page = exporter.Page();
    return Value(page, "latdoc_ttft_decomposition_seconds{component=\"network_front_end\"}")
        .has_value();
  })) << page;
  auto part = [&](const std::string& c) {
    return Value(page, "latdoc_ttft_decomposition_seconds{component=\"" + c + "\"}").value_or(-1);
  };
  const double net = part("network_front_end");
  const double queue = part("queue");
  const double prefill = part("prefill");
  const double client = Value(page, "latdoc_ttft_mean_seconds{side=\"client\"}").value_or(-1);
  EXPECT_GE(net, 0.095) << page;
  EXPECT_LT(net, 0.3) << page;
  EXPECT_GE(queue, 0);
  EXPECT_LT(queue, 0.05);
  EXPECT_GE(prefill, 0);
  EXPECT_LT(prefill, 0.05);
  EXPECT_GE(client, net);
  EXPECT_THAT(page, HasSubstr(
      "latdoc_finding{rule=\"load.network_front_end\",layer=\"load\",severity=\"warn\"} 1\n"));
}

TEST(ExporterE2eTest, BadFlagsExitTwoWithAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--interval", "fast"},
            "latdoc exporter: --interval 'fast' is not a duration (e.g. 30s, 250ms, 5m)"},
           {{"--interval", "200ms"}, "latdoc exporter: --interval must be at least 1s"},
           {{"--listen", "nowhere"},
            "latdoc exporter: --listen 'nowhere': expected HOST:PORT, e.g. 127.0.0.1:9464"},
           {{"--target", "ftp://x"}, "latdoc exporter: --target "},
           {{"--canary-tokens", "0"},
            "latdoc exporter: --canary-tokens must be between 1 and 256"},
           {{"--host-interval", "1s", "--interval", "2s"},
            "latdoc exporter: --host-interval must be 0 (off) or at least --interval"},
           {{"--listen", "nowhere:9464"},
            "latdoc exporter: --listen 'nowhere:9464': 'nowhere' is not an IP address (or localhost)"},
           {{"--target", "http://user:secret@127.0.0.1:8000"},
            "latdoc exporter: --target 'http://...@127.0.0.1:8000': credentials in the URL are not supported"},
       }) {
    std::vector<std::string> args = {"exporter"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunResult r = RunLatdoc(args, 20000);
    EXPECT_EQ(r.exit_code, 2) << c.args[0];
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  RunResult r = RunLatdoc({"exporter", "--no-such-flag"}, 20000);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(RunLatdoc({"exporter", "--target", "http://u:secret@127.0.0.1:8000"}, 20000).err.find("secret"),
            std::string::npos);
}

// --once exits as the other commands: 3 when the target answered nothing, 1 with a failing
// finding, 0 when all is well (it always exited 0).
TEST(ExporterE2eTest, OnceExitsThreeForADownTargetAndOneForAFailure) {
  const uint16_t closed = FreeLoopbackPort();
  RunResult down = RunLatdoc({"exporter", "--once", "--no-host", "--timeout", "2s", "--target",
                              "http://127.0.0.1:" + std::to_string(closed) + "/v1?token=abc"},
                             20000);
  EXPECT_EQ(down.exit_code, 3) << down.err;
  EXPECT_THAT(down.out, HasSubstr("latdoc_canary_up 0\n"));
  // The target label carries the server, not a query's token (and not the /v1 latdoc adds
  // itself, which --target's note says it dropped).
  EXPECT_THAT(down.out, HasSubstr("target=\"http://127.0.0.1:" + std::to_string(closed) + "\"}"));
  EXPECT_EQ(down.out.find("token=abc"), std::string::npos);
  EXPECT_EQ(down.err.find("token=abc"), std::string::npos);

  SimProcess sim({"--log-file", "/dev/null"});
  RunResult up = RunLatdoc({"exporter", "--once", "--no-host", "--target", sim.url()}, 20000);
  EXPECT_EQ(up.exit_code, 0) << up.err;
  EXPECT_THAT(up.out, HasSubstr("latdoc_canary_up 1\n"));
  SimProcess failing({"--sim-fault-500", "1", "--log-file", "/dev/null"});
  RunResult fail = RunLatdoc({"exporter", "--once", "--no-host", "--target", failing.url()}, 20000);
  EXPECT_EQ(fail.exit_code, 1) << fail.err;
  EXPECT_THAT(fail.out, HasSubstr("severity=\"fail\"} 1\n"));
}

// The canary sends the key of --api-key-env; a refused key is a failed canary (canary_up 0),
// not a silent gap. The served model's name is escaped in the simulator's /metrics, so the
// scrape still reads it.
TEST(ExporterE2eTest, CanarySendsTheApiKeyAndARefusedKeyIsAFailedCanary) {
  SimProcess sim({"--api-key", "sekrit", "--served-model-name", "m\"q\\b", "--log-file", "/dev/null"});
  ::setenv("LATDOC_TEST_KEY", "sekrit", 1);
  RunResult ok = RunLatdoc({"exporter", "--once", "--no-host", "--target", sim.url(), "--api-key-env",
                            "LATDOC_TEST_KEY"}, 20000);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("latdoc_canary_up 1\n"));
  EXPECT_THAT(ok.out, HasSubstr("latdoc_server_up 1\n"));
  ::setenv("LATDOC_TEST_KEY", "wrong", 1);
  RunResult refused = RunLatdoc({"exporter", "--once", "--no-host", "--target", sim.url(), "--api-key-env",
                                 "LATDOC_TEST_KEY"}, 20000);
  ::unsetenv("LATDOC_TEST_KEY");
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_THAT(refused.out, HasSubstr("latdoc_canary_up 0\n"));
  EXPECT_THAT(refused.out, HasSubstr("latdoc_canary_requests_total{outcome=\"http_status\"} 1\n"));
}

// HEAD gets the page's headers and no body; other methods get 405.
TEST(ExporterE2eTest, HeadHasNoBodyAndPostIsNotAllowed) {
  ExporterProcess exporter({"--target", "", "--interval", "1s"});
  ASSERT_NE(exporter.port(), 0);
  const std::string head = http::testing::RawExchange(exporter.port(), "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, HasSubstr("content-length: "));
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n") << head;
  const std::string post = http::testing::RawExchange(exporter.port(), "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(post, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
  EXPECT_THAT(post, HasSubstr("allow: GET, HEAD\r\n"));
  EXPECT_EQ(exporter.process().Signal(SIGTERM), 0);
}

}  // namespace
}  // namespace latdoc::testing
