// End-to-end: `latdoc fleet` against a real Prometheus (Debian's /usr/bin/prometheus) scraping
// four real `latdoc sim` replicas and a `latdoc exporter` beside each, every second:
//   clean-a, clean-b  the simulator's defaults, one closed-loop stream each;
//   slow              a slow-kernel pathology (every 2nd step 8x slower), one stream;
//   heavy             the defaults, but the test's own balancer gives it three streams.
// `latdoc fleet` must name the slow replica (an ITL outlier, explained by its exporter's
// finding) and the heavy one (load imbalance) first, and give the clean ones no warn or fail.
// Then the bad-input paths against the same Prometheus, and a replica stopped (target down).
// Loopback only; ports chosen free; each process is stopped by its destructor; about 30 s.
#include <signal.h>
#include <unistd.h>

#include <functional>
#include <fstream>
#include <memory>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "http/testing/blocking_client.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const char* kPrometheus = "/usr/bin/prometheus";

// `latdoc exporter --listen 127.0.0.1:0 --target URL`, a cycle a second, no host checks.
class ExporterProcess {
 public:
  explicit ExporterProcess(const std::string& target) {
    proc_ = std::make_unique<Process>(std::vector<std::string>{
        LatdocBinary(), "exporter", "--listen", "127.0.0.1:0", "--target", target, "--interval",
        "1s", "--timeout", "5s", "--no-host"});
    const std::string line = proc_->ReadLine(10000);
    const std::string head = "latdoc exporter: serving http://127.0.0.1:";
    EXPECT_EQ(line.rfind(head, 0), 0u) << line;
    if (line.rfind(head, 0) == 0) port_ = uint16_t(std::stoi(line.substr(head.size())));
  }
  uint16_t port() const { return port_; }

 private:
  std::unique_ptr<Process> proc_;
  uint16_t port_ = 0;
};

std::string Targets(const std::vector<uint16_t>& ports) {
  std::string out;
  for (uint16_t p : ports) out += (out.empty() ? "'127.0.0.1:" : ", '127.0.0.1:") + std::to_string(p) + "'";
  return out;
}

// Prometheus scraping job "vllm" (the replicas) and job "latdoc" (the exporters) every second.
class PrometheusProcess {
 public:
  PrometheusProcess(const std::vector<uint16_t>& replicas, const std::vector<uint16_t>& exporters,
                    const TempDir& dir)
      : port_(FreeLoopbackPort()) {
    const std::string config_path = dir / "prometheus.yml";
    std::ofstream(config_path)
        << "global: {scrape_interval: 1s, evaluation_interval: 1s, scrape_timeout: 1s}\n"
        << "scrape_configs:\n"
        << "  - job_name: vllm\n    static_configs: [{targets: [" << Targets(replicas) << "]}]\n"
        << "  - job_name: latdoc\n    static_configs: [{targets: [" << Targets(exporters) << "]}]\n";
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
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The number of series of `up{instance="127.0.0.1:PORT"} == value`.
  size_t UpIs(uint16_t port, int value) const {
    const std::string q = "/api/v1/query?query=up%7Binstance%3D%22127.0.0.1%3A" +
                          std::to_string(port) + "%22%7D%3D%3D" + std::to_string(value);
    auto j = nlohmann::json::parse(http::testing::Fetch(port_, "GET", q).body, nullptr, false);
    if (j.is_discarded() || !j.contains("data")) return 0;
    return j["data"]["result"].size();
  }

 private:
  uint16_t port_;
  std::unique_ptr<Process> proc_;
};

template <typename F>
bool WaitFor(int timeout_ms, F pred) {
  const int64_t end = MonoNowNs() + int64_t(timeout_ms) * kNsPerMs;
  while (MonoNowNs() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return pred();
}

std::string Instance(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

// The replica a finding's evidence names ("" for a fleet-wide finding).
std::string ReplicaOf(const nlohmann::json& f) {
  for (const auto& e : f["evidence"])
    if (e.value("name", "") == "replica") return e.value("text", "");
  return "";
}

std::string EvidenceText(const nlohmann::json& f, const std::string& name) {
  for (const auto& e : f["evidence"])
    if (e.value("name", "") == name) return e.value("text", "");
  return "";
}

bool IsProblem(const nlohmann::json& f) {
  return f["severity"] == "warn" || f["severity"] == "fail";
}

TEST(FleetE2eTest, NamesTheSickAndTheOverloadedReplicaFirst) {
  if (::access(kPrometheus, X_OK) != 0) GTEST_SKIP() << "no " << kPrometheus << " (scripts/install-deps.sh)";
  TempDir dir("fleet_e2e");
  const std::vector<std::string> quiet = {"--log-file", "/dev/null"};
  SimProcess clean_a(quiet), clean_b(quiet), heavy(quiet);
  SimProcess slow({"--log-file", "/dev/null", "--sim-slow-kernel-factor", "8",
                   "--sim-slow-kernel-every", "2"});
  std::vector<SimProcess*> sims = {&clean_a, &clean_b, &slow, &heavy};
  std::vector<std::unique_ptr<ExporterProcess>> exporters;
  std::vector<uint16_t> sim_ports, exporter_ports;
  for (SimProcess* s : sims) {
    ASSERT_NE(s->port(), 0);
    sim_ports.push_back(s->port());
    exporters.push_back(std::make_unique<ExporterProcess>(s->url()));
    ASSERT_NE(exporters.back()->port(), 0);
    exporter_ports.push_back(exporters.back()->port());
  }
  PrometheusProcess prom(sim_ports, exporter_ports, dir);
  ASSERT_TRUE(WaitFor(10000, [&] {
    for (uint16_t p : sim_ports)
      if (prom.UpIs(p, 1) != 1) return false;
    return true;
  }));

  // The test's balancer: one closed-loop stream to each replica, three to `heavy`, for 20 s.
  const auto bench = [&](SimProcess& s, int streams) {
    return std::make_unique<Process>(std::vector<std::string>{
        LatdocBinary(), "bench", "--url", s.url(), "--concurrency", std::to_string(streams),
        "--duration", "20s", "--input-len", "256", "--output-len", "64", "--quiet"});
  };
  std::vector<std::unique_ptr<Process>> load;
  load.push_back(bench(clean_a, 1));
  load.push_back(bench(clean_b, 1));
  load.push_back(bench(slow, 1));
  load.push_back(bench(heavy, 3));
  for (auto& p : load) EXPECT_EQ(p->Wait(60000), 0);

  const std::string json_path = dir / "fleet.json";
  const std::string md_path = dir / "fleet.md";
  const std::string html_path = dir / "fleet.html";
  RunResult r = RunLatdoc({"fleet", "--prometheus", prom.url(), "--selector", "{job=\"vllm\"}",
                           "--window", "20s", "--json", json_path, "--markdown", md_path,
                           "--html", html_path});
  // The slow replica's ITL is far beyond the bound and 2x the median: a fail finding.
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = nlohmann::json::parse(ReadFileOrEmpty(json_path), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  EXPECT_EQ(doc["schema"], "latdoc.fleet/1");
  ASSERT_EQ(doc["replicas"].size(), 4u) << doc.dump(1);

  // The problems, in rank order, are about the slow and the heavy replica only, and the first
  // is the slow one's ITL.
  std::vector<nlohmann::json> problems;
  for (const auto& f : doc["findings"])
    if (IsProblem(f)) problems.push_back(f);
  ASSERT_GE(problems.size(), 2u) << r.out;
  EXPECT_EQ(problems[0]["severity"], "fail") << r.out;
  EXPECT_EQ(ReplicaOf(problems[0]), Instance(slow.port())) << r.out;
  for (const auto& f : problems)
    EXPECT_THAT((std::vector<std::string>{Instance(slow.port()), Instance(heavy.port())}),
                ::testing::Contains(ReplicaOf(f)))
        << f.dump() << "\n" << r.out;
  bool slow_itl = false, heavy_imbalance = false;
  for (const auto& f : problems) {
    if (f["id"] == "fleet.outlier_itl" && ReplicaOf(f) == Instance(slow.port())) {
      slow_itl = true;
      // Its exporter saw the stalls: the finding names the exporter's rule.
      EXPECT_EQ(EvidenceText(f, "explained_by").rfind("load.itl_stalls", 0), 0u) << f.dump();
    }
    if (f["id"] == "fleet.load_imbalance" && ReplicaOf(f) == Instance(heavy.port()))
      heavy_imbalance = true;
  }
  EXPECT_TRUE(slow_itl) << r.out;
  EXPECT_TRUE(heavy_imbalance) << r.out;

  // The replica table: the slow one first, the heavy one second, the clean ones ok.
  EXPECT_EQ(doc["replicas"][0]["replica"], Instance(slow.port()));
  EXPECT_EQ(doc["replicas"][1]["replica"], Instance(heavy.port()));
  for (const auto& x : doc["replicas"]) {
    if (x["replica"] == Instance(clean_a.port()) || x["replica"] == Instance(clean_b.port())) {
      EXPECT_EQ(x["worst_severity"], "ok") << x.dump();
    }
    EXPECT_EQ(x["up"], true);
    EXPECT_EQ(x["exporter"], true);
  }
  // Ground truth: three streams against one give `heavy` well over 1.5x a clean replica's
  // request rate, and the slow-kernel replica's ITL p99 is several times a clean one's.
  auto by = [&](uint16_t port) {
    for (const auto& x : doc["replicas"])
      if (x["replica"] == Instance(port)) return x;
    return nlohmann::json();
  };
  EXPECT_GT(by(heavy.port())["request_rate_per_s"].get<double>(),
            1.5 * by(clean_a.port())["request_rate_per_s"].get<double>());
  EXPECT_GT(by(slow.port())["itl_p99_ms"].get<double>(),
            3 * by(clean_a.port())["itl_p99_ms"].get<double>());
  EXPECT_THAT(r.out, StartsWith("Fleet: 4 replicas matching {job=\"vllm\"} at " + prom.url() +
                                ", last 20s"));
  EXPECT_THAT(ReadFileOrEmpty(md_path), HasSubstr("| " + Instance(slow.port()) + " | fail | up |"));
  // The heat map: 21 steps (20 s at 1 s), the slow replica's ITL row first and, at most
  // steps, red or orange (at least 2x the fleet's median then).
  ASSERT_EQ(doc["times_unix_s"].size(), 21u);
  const auto& slow_itl_row = doc["replicas"][0]["itl_p99_ms_over_time"];
  ASSERT_EQ(slow_itl_row.size(), 21u);
  const std::string html = ReadFileOrEmpty(html_path);
  EXPECT_THAT(html, HasSubstr("<h2>p99 ITL over time</h2>"));
  const size_t itl_at = html.find("<h2>p99 ITL over time</h2>");
  const size_t row_at = html.find("<tr><th>" + Instance(slow.port()) + "</th>", itl_at);
  ASSERT_NE(row_at, std::string::npos);
  const std::string row = html.substr(row_at, html.find("</tr>", row_at) - row_at);
  int hot = 0, cells = 0;
  for (size_t at = row.find("<td"); at != std::string::npos; at = row.find("<td", at + 1)) {
    ++cells;
    const size_t x = row.find("x median", at);
    const size_t open = row.rfind('(', x);
    if (x != std::string::npos && x < row.find("</td>", at) && std::stod(row.substr(open + 1)) >= 2)
      ++hot;
  }
  EXPECT_EQ(cells, 21);
  EXPECT_GE(hot, 10) << row;

  // A PromQL error: exit 2, Prometheus's message quoted.
  r = RunLatdoc({"fleet", "--prometheus", prom.url(), "--selector", "{job=~\"(\"}"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, StartsWith("latdoc fleet: Prometheus at " + prom.url() + " refused the query '"));
  EXPECT_THAT(r.err, HasSubstr("bad_data: "));
  EXPECT_THAT(r.err, HasSubstr("error parsing regexp"));
  // A selector that matches nothing: exit 2, and the query that lists the targets.
  r = RunLatdoc({"fleet", "--prometheus", prom.url(), "--selector", "{job=\"nope\"}", "--window", "1m"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "latdoc fleet: no vLLM, SGLang or TGI series match {job=\"nope\"} at " +
                       prom.url() +
                       " in the last 1m (is Prometheus scraping the replicas' /metrics? the "
                       "query up{job=\"nope\"} lists the targets)\n");

  // A replica stops: once Prometheus says so, it is a target down (fail), named.
  const uint16_t gone = clean_b.port();
  clean_b.process().Signal(SIGKILL);
  clean_b.process().Wait(10000);
  ASSERT_TRUE(WaitFor(10000, [&] { return prom.UpIs(gone, 0) == 1; }));
  r = RunLatdoc({"fleet", "--prometheus", prom.url(), "--selector", "{job=\"vllm\"}", "--window",
                 "30s", "--json", json_path});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  doc = nlohmann::json::parse(ReadFileOrEmpty(json_path), nullptr, false);
  bool down = false;
  for (const auto& f : doc["findings"])
    down = down || (f["id"] == "fleet.target_down" && ReplicaOf(f) == Instance(gone) &&
                    f["severity"] == "fail");
  EXPECT_TRUE(down) << r.out;
}

// SGLang's dialect, from series made with Prometheus's own tooling: four replicas' metrics over
// 10 min written as OpenMetrics, turned into TSDB blocks by `promtool tsdb create-blocks-from
// openmetrics`, served by Prometheus. The series are built so that every number has an exact
// answer: constant gauges, counters rising linearly, histogram buckets whose quantiles fall on
// or between known bounds.
TEST(FleetE2eTest, SglangFleetFromPromtoolBlocks) {
  const char* kPromtool = "/usr/bin/promtool";
  if (::access(kPrometheus, X_OK) != 0 || ::access(kPromtool, X_OK) != 0)
    GTEST_SKIP() << "no " << kPrometheus;
  TempDir dir("fleet_sglang");
  // The series run 2 min past now, so the 5 min window ending now is covered to both ends and
  // rate() of a linear counter is its slope exactly (Prometheus extrapolates to the window's
  // edges only over gaps shorter than 1.1 scrape intervals).
  const int64_t end_s = WallNowNs() / 1'000'000'000 + 120;
  const int kSteps = 48;  // 12 min at 15 s
  const auto labels = [](int i) {
    return "instance=\"10.0.0." + std::to_string(i + 1) + ":30000\",job=\"sglang\",model_name=\"m\"";
  };
  std::string om;
  // A histogram with `requests_per_s` observations a second, the fractions `cdf` at `les`.
  const auto hist = [&](const std::string& name, const std::vector<std::string>& les,
                        const std::function<std::vector<double>(int)>& cdf, double requests_per_s) {
    om += "# TYPE " + name + " histogram\n";
    for (int i = 0; i < 4; ++i) {
      const std::vector<double> c = cdf(i);
      for (size_t b = 0; b < les.size(); ++b)
        for (int k = 0; k <= kSteps; ++k)
          om += fmt::format("{}_bucket{{{},le=\"{}\"}} {} {}\n", name, labels(i), les[b],
                            requests_per_s * 15 * k * c[b], end_s - (kSteps - k) * 15);
      for (int k = 0; k <= kSteps; ++k)
        om += fmt::format("{}_count{{{}}} {} {}\n", name, labels(i), requests_per_s * 15 * k,
                          end_s - (kSteps - k) * 15);
      for (int k = 0; k <= kSteps; ++k)
        om += fmt::format("{}_sum{{{}}} {} {}\n", name, labels(i), requests_per_s * 15 * k * 0.05,
                          end_s - (kSteps - k) * 15);
    }
  };
  const auto series = [&](const std::string& type, const std::string& family,
                          const std::string& sample, const std::function<double(int, int)>& v) {
    om += "# TYPE " + family + " " + type + "\n";
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k <= kSteps; ++k)
        om += fmt::format("{}{{{}}} {} {}\n", sample, labels(i), v(i, k), end_s - (kSteps - k) * 15);
  };
  // TTFT: half under 0.1 s, all under 0.25 s, on every replica.
  hist("sglang:time_to_first_token_seconds", {"0.05", "0.1", "0.25", "+Inf"},
       [](int) { return std::vector<double>{0, 0.5, 1, 1}; }, 2);
  // ITL: half under 20 ms, all under 50 ms; replica 4 (10.0.0.4) ten times slower.
  hist("sglang:inter_token_latency_seconds", {"0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "+Inf"},
       [](int i) {
         return i == 3 ? std::vector<double>{0, 0, 0, 0, 0.5, 1, 1}
                       : std::vector<double>{0, 0.5, 1, 1, 1, 1, 1};
       },
       100);
  series("counter", "sglang:num_requests", "sglang:num_requests_total",
         [](int, int k) { return 2.0 * 15 * k; });
  series("gauge", "sglang:num_running_reqs", "sglang:num_running_reqs", [](int, int) { return 6; });
  series("gauge", "sglang:num_queue_reqs", "sglang:num_queue_reqs", [](int, int) { return 0; });
  series("gauge", "sglang:token_usage", "sglang:token_usage", [](int, int) { return 0.3; });
  om += "# EOF\n";
  const std::string om_path = dir / "fleet.om";
  std::ofstream(om_path) << om;
  Process blocks({kPromtool, "tsdb", "create-blocks-from", "openmetrics", om_path,
                  dir / "data"});
  const std::string blocks_out = blocks.ReadToEnd(60000);
  ASSERT_EQ(blocks.Wait(60000), 0) << blocks_out;
  PrometheusProcess prom({}, {}, dir);

  const std::string json_path = dir / "fleet.json";
  RunResult r = RunLatdoc({"fleet", "--prometheus", prom.url(), "--selector", "{job=\"sglang\"}",
                           "--window", "5m", "--json", json_path, "--over-time"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = nlohmann::json::parse(ReadFileOrEmpty(json_path), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out << r.err;
  ASSERT_EQ(doc["replicas"].size(), 4u) << doc.dump(1);
  EXPECT_EQ(doc["replicas"][0]["replica"], "10.0.0.4:30000");
  for (const auto& x : doc["replicas"]) {
    const bool slow = x["replica"] == "10.0.0.4:30000";
    EXPECT_NEAR(x["request_rate_per_s"].get<double>(), 2, 1e-6) << x.dump();
    EXPECT_NEAR(x["running_mean"].get<double>(), 6, 1e-9);
    EXPECT_NEAR(x["kv_usage_ratio"].get<double>(), 0.3, 1e-9);
    EXPECT_NEAR(x["ttft_p50_ms"].get<double>(), 100, 1e-6);
    // p50 on a bucket's bound; p99 interpolated: 20 + (0.99 - 0.5) / 0.5 * 30 = 49.4 ms.
    EXPECT_NEAR(x["itl_p50_ms"].get<double>(), slow ? 200 : 20, 1e-6);
    EXPECT_NEAR(x["itl_p99_ms"].get<double>(), slow ? 494 : 49.4, 1e-6);
    EXPECT_EQ(x["worst_severity"], slow ? "fail" : "ok") << r.out;
    // --over-time: a point every 5 s (5 min / 60), each p99 the same as the window's.
    ASSERT_EQ(x["itl_p99_ms_over_time"].size(), 61u);
    for (const auto& v : x["itl_p99_ms_over_time"]) EXPECT_NEAR(v.get<double>(), slow ? 494 : 49.4, 1e-6);
  }
  const auto& first = doc["findings"][0];
  EXPECT_EQ(first["id"], "fleet.outlier_itl");
  EXPECT_EQ(first["severity"], "fail");
  EXPECT_EQ(ReplicaOf(first), "10.0.0.4:30000");
}

// Nothing listens where --prometheus points: exit 3, and the message says so.
TEST(FleetE2eTest, UnreachablePrometheusExitsThree) {
  const std::string url = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  RunResult r = RunLatdoc({"fleet", "--prometheus", url, "--timeout", "5s"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, StartsWith("latdoc fleet: Prometheus unreachable: connect " + url + ": "));
  EXPECT_EQ(r.out, "");
}

// A selector that is not one: exit 2 before any query.
TEST(FleetE2eTest, BadSelectorExitsTwo) {
  RunResult r = RunLatdoc({"fleet", "--prometheus", "http://127.0.0.1:1", "--selector", "job=\"vllm\""});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc fleet: --selector 'job=\"vllm\"': must start with '{' and end with '}' "
                   "(a PromQL label selector in braces, e.g. '{job=\"vllm\"}')\n");
}

// A token variable that is not set: exit 2 before any query, naming the variable.
TEST(FleetE2eTest, UnsetTokenVariableExitsTwo) {
  RunResult r = RunLatdoc({"fleet", "--prometheus", "http://127.0.0.1:1", "--prometheus-token-env",
                           "LATDOC_FLEET_TEST_UNSET_TOKEN"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc fleet: --prometheus-token-env LATDOC_FLEET_TEST_UNSET_TOKEN: the "
                   "variable is not set, or empty\n");
}

}  // namespace
}  // namespace latdoc::testing
