// latdoc net --url URL [--samples N] [--compare URL2] [--link-mbps M] [--iperf3-server HOST]
//            [--insecure] [--json FILE]: the network layer, measured from the client side.
// Argument parsing, output and exit codes only; the work is in net/ and rules/net_rules.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "base/command_runner.h"
#include "http/client.h"
#include "net/net_text.h"
#include "net/path_tools.h"
#include "net/probe.h"
#include "net/route.h"
#include "rules/net_rules.h"

namespace latdoc::cli {
namespace {

struct NetArgs {
  net::ProbeOptions probe;
  std::string compare_url;
  std::string plain_url;
  std::string expect_cert_sha256;
  double link_mbps = 0;
  double peak_tokens_per_s = 0;
  std::string iperf3_server;
  int iperf3_seconds = 5;
  double timeout_s = 10;
  double idle_wait_s = 8;
  bool no_path = false;
  std::string json_path;
  std::string api_key_env = "OPENAI_API_KEY";
  bool show_ok = false;
  bool no_color = false;
};

// Seconds become int64 nanoseconds, which overflow past 292 years; a day is far above any
// useful bound and far below that.
constexpr double kMaxSeconds = 86400;

// A sample reached the server when an HTTP answer came back: to the cheap GET (any status), or
// to a completion after it. A failed name lookup, connect or TLS handshake, a timeout, a reset or
// a reply that is not HTTP before that: nothing reached it.
bool Reached(const net::ProbeSample& s) {
  return s.failed_phase != "cheap" || s.failure == net::FailureReason::kHttpStatus;
}

// What to check when the server answered every sample with an HTTP error to a request the user
// shaped with a flag.
std::string HttpErrorHint(const NetArgs& a, const net::ProbeSample& s) {
  if (s.failure != net::FailureReason::kHttpStatus) return "";
  switch (net::ClassifyHttpError(s.http_status)) {
    case net::HttpErrorCause::kCredentials:
      return a.probe.api_key.empty() ? fmt::format(" (no API key: ${} is not set; see --api-key-env)", a.api_key_env)
                                     : fmt::format(" (check the API key in ${})", a.api_key_env);
    case net::HttpErrorCause::kOverload:
    case net::HttpErrorCause::kServer:
      return " (the server or a gateway is overloaded or failing: see its logs)";
    case net::HttpErrorCause::kRequest:
      break;
  }
  if (s.failed_phase != "cheap") return a.probe.model.empty() ? "" : " (check --model)";
  return a.probe.cheap_path == net::ProbeOptions{}.cheap_path ? "" : " (check --cheap-path)";
}

// The flags' numbers and the JSON path, checked before any traffic.
Status CheckNetArgs(const NetArgs& a) {
  if (!(a.timeout_s > 0 && a.timeout_s <= kMaxSeconds))
    return InvalidArgument(fmt::format(
        "--timeout {:g}: must be more than 0 and at most {:g} seconds", a.timeout_s, kMaxSeconds));
  if (!(a.idle_wait_s >= 0 && a.idle_wait_s <= kMaxSeconds))
    return InvalidArgument(
        fmt::format("--idle-wait {:g}: must be 0 to {:g} seconds", a.idle_wait_s, kMaxSeconds));
  if (a.iperf3_seconds < 1 || a.iperf3_seconds > kMaxSeconds)
    return InvalidArgument(fmt::format("--iperf3-seconds {}: must be 1 to {:g} seconds",
                                       a.iperf3_seconds, kMaxSeconds));
  // 0 is "not given" for both rates.
  if (!(std::isfinite(a.link_mbps) && a.link_mbps >= 0))
    return InvalidArgument(fmt::format("--link-mbps {}: must be a rate above 0", a.link_mbps));
  if (!(std::isfinite(a.peak_tokens_per_s) && a.peak_tokens_per_s >= 0))
    return InvalidArgument(
        fmt::format("--peak-tokens-per-s {}: must be a rate above 0", a.peak_tokens_per_s));
  if (a.probe.stream_tokens < 0)
    return InvalidArgument(
        fmt::format("--stream-tokens {}: must be 0 (skip) or more", a.probe.stream_tokens));
  // Before any traffic: a JSON path that cannot be written would lose the whole run.
  if (!a.json_path.empty()) {
    if (Status st = CheckOutputPath(a.json_path); !st.ok()) return st;
  }
  return Status::Ok();
}

// --compare, --expect-cert-sha256 and --plain-url checked against --url (`url`) before any
// traffic; the expected fingerprint, normalized ("" when not given).
StatusOr<std::string> CheckNetUrls(const NetArgs& a, const http::Url& url) {
  if (!a.compare_url.empty()) {
    if (auto u2 = http::ParseUrl(a.compare_url); !u2.ok())
      return InvalidArgument("--compare " + u2.status().message());
  }
  std::string expected_sha256;
  if (!a.expect_cert_sha256.empty()) {
    if (!url.tls())
      return InvalidArgument(
          fmt::format("--expect-cert-sha256 needs an https --url (got {})", a.probe.url));
    auto n = net::NormalizeSha256Hex(a.expect_cert_sha256);
    if (!n)
      return InvalidArgument(fmt::format(
          "--expect-cert-sha256 '{}': expected 64 hex digits, with or without ':' (openssl x509 "
          "-noout -fingerprint -sha256 -in CERT)",
          a.expect_cert_sha256));
    expected_sha256 = *n;
  }
  if (!a.plain_url.empty()) {
    auto u3 = http::ParseUrl(a.plain_url);
    if (!u3.ok()) return InvalidArgument("--plain-url " + u3.status().message());
    if (u3->tls())
      return InvalidArgument(fmt::format(
          "--plain-url {}: must be http://, the server's plain-HTTP address", a.plain_url));
    if (!url.tls())
      return InvalidArgument(
          fmt::format("--plain-url needs an https --url to compare with (got {})", a.probe.url));
  }
  return expected_sha256;
}

// The probes: --url, then --compare and --plain-url when given.
StatusOr<net::NetFacts> RunProbes(const NetArgs& a, const std::string& expected_sha256) {
  net::NetFacts facts;
  auto p = net::RunProbe(a.probe);
  if (!p.ok()) return p.status();
  facts.probe = std::move(*p);
  if (!a.compare_url.empty()) {
    net::ProbeOptions o2 = a.probe;
    o2.url = a.compare_url;
    auto p2 = net::RunProbe(o2);
    if (!p2.ok()) return p2.status();
    facts.compare_probe = std::move(*p2);
    facts.compare = net::ComparePhases(facts.probe, *facts.compare_probe);
  }
  facts.expected_cert_sha256 = expected_sha256;
  if (!expected_sha256.empty()) facts.expected_cert_source = "--expect-cert-sha256";
  if (!a.plain_url.empty()) {
    net::ProbeOptions o3 = a.probe;
    o3.url = a.plain_url;
    auto p3 = net::RunProbe(o3);
    if (!p3.ok()) return p3.status();
    facts.plain_probe = std::move(*p3);
  }
  return facts;
}

// The link rate (--link-mbps, or iperf3) and the peak rate into `b`, and the headroom.
void MeasureLink(const NetArgs& a, CommandRunner& runner, net::BandwidthFacts& b) {
  if (a.peak_tokens_per_s > 0) b.peak_tokens_per_s = a.peak_tokens_per_s;
  if (a.link_mbps > 0) {
    b.link_mbps = a.link_mbps;
    b.link_source = "--link-mbps";
  } else if (!a.iperf3_server.empty()) {
    auto r =
        net::RunIperf3(runner, a.iperf3_server, a.iperf3_seconds, SecToNs(a.iperf3_seconds + 15.0));
    if (r.ok()) {
      b.link_mbps = r->received_mbps;
      b.link_source = "iperf3 " + a.iperf3_server;
    } else if (r.status().code() == StatusCode::kNotFound) {
      b.link_note = "iperf3 is not installed (apt-get install iperf3)";
    } else {
      b.link_note = r.status().message();
    }
  } else {
    b.link_note = "no --link-mbps or --iperf3-server given";
  }
  net::ComputeHeadroom(b);
}

// Writes --json; an exit code when the write fails.
std::optional<int> WriteNetJson(const NetArgs& a, const net::NetFacts& facts,
                                const std::vector<rules::Finding>& findings) {
  if (!a.json_path.empty()) {
    nlohmann::json doc;
    doc["schema"] = "latdoc.net/1";
    doc["facts"] = net::ToJson(facts);
    nlohmann::json fj = nlohmann::json::array();
    for (const auto& f : findings) fj.push_back(rules::ToJson(f));
    doc["findings"] = std::move(fj);
    if (Status st = WriteFileAtomic(a.json_path, JsonText(doc, 2) + "\n"); !st.ok()) return Fail("net", st);
  }
  return std::nullopt;
}

// The exit code: 3 when no sample reached the server, 1 on a failing finding, else 0; says on
// standard error why every sample failed.
int NetExitCode(const NetArgs& a, const net::NetFacts& facts,
                const std::vector<rules::Finding>& findings) {
  const net::ProbeFacts& probe = facts.probe;
  if (probe.loss.samples > 0 && probe.loss.failed == probe.loss.samples) {
    auto answered = std::find_if(probe.samples.begin(), probe.samples.end(), Reached);
    if (answered == probe.samples.end()) {
      std::fprintf(stderr, "latdoc net: no sample reached %s: %s\n", probe.url.c_str(),
                   probe.samples.front().error.c_str());
      return kExitCannotRun;
    }
    // The server answered, so this is no network failure: net.loss fails (exit 1), and this
    // names the request and what came back.
    std::string request =
        answered->failed_phase == "cheap" ? "GET " + probe.cheap_path : "POST /v1/completions";
    std::fprintf(stderr, "latdoc net: %s answered, but every sample failed: %s: %s%s\n",
                 probe.url.c_str(), request.c_str(), answered->error.c_str(),
                 HttpErrorHint(a, *answered).c_str());
  }
  return rules::WorstSeverity(findings) == rules::Severity::kFail ? kExitFindings : kExitOk;
}

int RunNet(NetArgs& a) {
  if (Status st = CheckNetArgs(a); !st.ok()) return Fail("net", st);
  if (const char* key = std::getenv(a.api_key_env.c_str())) a.probe.api_key = key;
  a.probe.sample_timeout_ns = SecToNs(a.timeout_s);
  a.probe.idle_wait_ns = SecToNs(a.idle_wait_s);
  // Validate both URLs before any traffic.
  auto url = http::ParseUrl(a.probe.url);
  if (!url.ok()) return Fail("net", InvalidArgument("--url " + url.status().message()));
  auto expected_sha256 = CheckNetUrls(a, *url);
  if (!expected_sha256.ok()) return Fail("net", expected_sha256.status());

  auto facts = RunProbes(a, *expected_sha256);
  if (!facts.ok()) return Fail("net", facts.status());
  auto runner = MakeExecCommandRunner();
  MeasureLink(a, *runner, facts->probe.bandwidth);
  facts->route = net::InspectRoute(*runner, url->host, url->port);
  if (a.no_path) {
    facts->path.skipped_reason = "--no-path";
  } else {
    facts->path = net::RunPath(*runner, url->host, SecToNs(60));
  }

  std::vector<rules::Finding> findings = rules::EvaluateNetRules(*facts);
  rules::RankFindings(findings);
  PrintSummaryAndFindings(net::RenderNetText(*facts), findings, a.no_color, a.show_ok);
  // After the report: should the file fail now after all, the results are on the screen.
  if (auto rc = WriteNetJson(a, *facts, findings)) return *rc;
  return NetExitCode(a, *facts, findings);
}

}  // namespace

Command RegisterNet(CLI::App& root) {
  auto a = std::make_shared<NetArgs>();
  CLI::App* app = root.add_subcommand(
      "net", "Network layer from the client side: DNS, connect, TLS, first byte, TTFT, jitter,\n"
             "loss, keep-alive, idle close, gateway delay, bandwidth headroom, path.");
  auto server = std::make_shared<ServerFlags>();
  server->url = &a->probe.url;
  server->api_key_env = &a->api_key_env;
  AddServerFlags(app, *server, {.endpoint = false});
  app->add_option("--samples,-n", a->probe.samples, "Samples per URL")
      ->check(Number(Bound::kPositive))->capture_default_str();
  app->add_option("--compare", a->compare_url,
                  "A second URL to the same server (e.g. through the gateway): the difference "
                  "is attributed per phase");
  app->add_option("--plain-url", a->plain_url,
                  "The same server's plain-HTTP address: first byte and stream rate over HTTPS "
                  "are compared with it (TLS inspection slows them)");
  app->add_option("--expect-cert-sha256", a->expect_cert_sha256,
                  "SHA-256 fingerprint of the server's own certificate: a different one shown "
                  "to the client means TLS is re-signed on the path");
  app->add_option("--link-mbps", a->link_mbps, "Link rate in Mbit/s, for bandwidth headroom");
  app->add_option("--iperf3-server", a->iperf3_server,
                  "Measure the link rate with iperf3 -J -R against this iperf3 server");
  app->add_option("--iperf3-seconds", a->iperf3_seconds, "Length of the iperf3 run, in whole seconds")
      ->capture_default_str();
  app->add_option("--peak-tokens-per-s", a->peak_tokens_per_s,
                  "All streams' output tokens/s at peak (default: one stream's observed rate)");
  app->add_flag("--insecure", a->probe.insecure, "Do not verify TLS certificates");
  app->add_option("--timeout", a->timeout_s, "Bound of each exchange: seconds, or 500ms")
      ->type_name("DURATION")->transform(Seconds(Bound::kAny))->capture_default_str();
  app->add_option("--idle-wait", a->idle_wait_s,
                  "Watch an idle kept-alive connection this long for a server close (0: skip)")
      ->type_name("DURATION")->transform(Seconds(Bound::kAny))->capture_default_str();
  app->add_option("--stream-tokens", a->probe.stream_tokens,
                  "Tokens of the stream that measures bytes per token (0: skip)")
      ->capture_default_str();
  app->add_option("--cheap-path", a->probe.cheap_path,
                  "Path of the cheap GET, from '/' (a 404 on /health falls back to /v1/models)")
      ->capture_default_str();
  app->add_option("--model", a->probe.model, "Model name for the completions (default: server's)");
  app->add_flag("--no-path", a->no_path, "Do not run tracepath/traceroute");
  app->add_option("--json", a->json_path, "Write facts and findings as JSON here");
  app->add_flag("--show-ok", a->show_ok, "List passing checks too");
  AddQuietFlag(app, nullptr, "No terminal summary");
  AddNoColorFlag(app);
  return Command{app, [a, server] {
                   if (auto rc = ResolveServerFlags("net", *server, /*required=*/true)) return *rc;
                   if (!a->compare_url.empty()) {
                     auto u = NormalizeServerUrl("--compare", a->compare_url);
                     if (!u.ok()) return Fail("net", u.status());
                     if (!u->note.empty()) fmt::print(stderr, "latdoc net: note: {}\n", u->note);
                     a->compare_url = u->url;
                   }
                   return RunNet(*a);
                 }};
}

}  // namespace latdoc::cli
