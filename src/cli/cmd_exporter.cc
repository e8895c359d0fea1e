// latdoc exporter [--listen 127.0.0.1:9464] [--target URL] [--interval 15s] ...: continuous
// diagnosis served to Prometheus. Argument parsing, the startup line and exit codes only; the
// work is in exporter/.
#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/exit_codes.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "exporter/exporter.h"
#include "exporter/schedule.h"
#include "http/client.h"
#include "loadgen/results.h"

#ifndef LATDOC_VERSION
#define LATDOC_VERSION "0.0.0"
#endif

namespace latdoc::cli {
namespace {

struct ExporterArgs {
  std::string listen = "127.0.0.1:9464";
  std::string target = "http://127.0.0.1:8000";
  std::string interval = "15s";
  std::string host_interval = "60s";
  std::string timeout;
  std::string model;
  int canary_tokens = 16;
  bool no_canary = false;
  bool no_host = false;
  std::string sysroot = "/";
  int64_t pid = 0;
  bool once = false;
  double max_error_rate = 0;  // --once: the share of failed canary requests tolerated
  std::string api_key_env = "OPENAI_API_KEY";
};

// "127.0.0.1:9464", "[::1]:9464", ":9464" (all interfaces is not the default: say 0.0.0.0).
Status ParseListen(const std::string& text, std::string* host, uint16_t* port) {
  auto bad = [&] {
    return InvalidArgument("--listen '" + text + "': expected HOST:PORT, e.g. 127.0.0.1:9464");
  };
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size()) return bad();
  std::string h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) h = "0.0.0.0";
  if (h == "localhost") h = "127.0.0.1";
  in6_addr addr;
  if (::inet_pton(AF_INET, h.c_str(), &addr) != 1 && ::inet_pton(AF_INET6, h.c_str(), &addr) != 1) {
    return InvalidArgument("--listen '" + text + "': '" + h + "' is not an IP address (or localhost)");
  }
  const std::string p = text.substr(colon + 1);
  if (p.find_first_not_of("0123456789") != std::string::npos || p.size() > 5) return bad();
  const int n = std::stoi(p);
  if (n > 65535) return bad();
  *host = h;
  *port = static_cast<uint16_t>(n);
  return Status::Ok();
}

StatusOr<int64_t> Duration(const std::string& flag, const std::string& text) {
  return DurationNs(flag, text);
}

// The exporter's options from the flags; an InvalidArgument naming the flag when one is bad.
Status ExporterOptionsFrom(const ExporterArgs& a, exporter::ExporterOptions& o) {
  if (Status st = ParseListen(a.listen, &o.listen_host, &o.listen_port); !st.ok()) {
    return st;
  }
  auto interval = Duration("--interval", a.interval);
  if (!interval.ok()) return interval.status();
  // The canary's rate bound: one request per interval, so at most 1 request/s.
  if (*interval < kNsPerSec) return InvalidArgument("--interval must be at least 1s");
  o.interval_ns = *interval;
  auto host_interval = Duration("--host-interval", a.host_interval);
  if (!host_interval.ok()) return host_interval.status();
  if (*host_interval != 0 && *host_interval < o.interval_ns)
    return InvalidArgument("--host-interval must be 0 (off) or at least --interval");
  o.host_period_ns = a.no_host ? 0 : *host_interval;
  o.collector_timeout_ns = std::min<int64_t>(10 * kNsPerSec, o.interval_ns);
  if (!a.timeout.empty()) {
    auto t = Duration("--timeout", a.timeout);
    if (!t.ok()) return t.status();
    if (*t <= 0) return InvalidArgument("--timeout must be positive");
    o.collector_timeout_ns = *t;
  }
  o.target = a.target;
  if (const char* key = std::getenv(a.api_key_env.c_str())) o.api_key = key;
  if (!o.target.empty()) {
    if (auto u = http::ParseUrl(o.target); !u.ok())
      return InvalidArgument("--target " + u.status().message());
  }
  if (a.canary_tokens < 1 || a.canary_tokens > 256)
    return InvalidArgument("--canary-tokens must be between 1 and 256");
  o.canary_output_tokens = a.canary_tokens;
  o.canary = !a.no_canary;
  o.model = a.model;
  o.sysroot = a.sysroot;
  if (a.pid != 0) o.pid = a.pid;
  o.version = LATDOC_VERSION;
  if (o.target.empty() && o.host_period_ns == 0)
    return InvalidArgument("nothing to do: give --target or leave the host checks on");
  return Status::Ok();
}

// --once: one cycle, its page on standard output, the exit code for what it found.
int RunExporterOnce(const ExporterArgs& a, const exporter::ExporterOptions& o,
                    exporter::Exporter& e) {
  e.RunCycle(MonoNowNs());
  std::fputs(e.page()->c_str(), stdout);
  // As the other commands: a failed canary request is said by reason, as bench says its
  // failures; 3 when the target answered neither the canary nor the scrape, else 1 when the
  // canary failed or a finding fails.
  const exporter::ExporterState& state = e.state();
  std::map<std::string, uint64_t> failed;
  uint64_t sent = 0;
  for (const auto& [outcome, n] : state.canary_outcomes) {
    sent += n;
    if (outcome != loadgen::OutcomeName(loadgen::Outcome::kOk)) failed[outcome] += n;
  }
  loadgen::FailureTally canary = loadgen::TallyFailures(failed, sent);
  const bool canary_failed = canary.failed > 0 && canary.rate() > a.max_error_rate;
  if (canary.failed > 0) {
    std::string line = canary.Text("canary requests");
    if (!state.canary_last_error.empty())
      line += "; last: " + state.canary_last_error.substr(0, 200);
    if (!canary_failed)
      line += fmt::format(" (tolerated: --max-error-rate {:g}%)", 100 * a.max_error_rate);
    std::fprintf(stderr, "latdoc exporter: %s\n", line.c_str());
  }
  const bool canary_ok = state.canary_last_ok.value_or(false);
  if (!o.target.empty() && !canary_ok && !state.server_up.value_or(false)) {
    std::fprintf(stderr,
                 "latdoc exporter: the target %s answered neither the canary nor the "
                 "/metrics scrape\n",
                 state.target.c_str());
    return kExitCannotRun;
  }
  const bool failing =
      std::any_of(state.findings.begin(), state.findings.end(),
                  [](const rules::Finding& f) { return f.severity == rules::Severity::kFail; });
  return failing || canary_failed ? kExitFindings : kExitOk;
}

int RunExporter(const ExporterArgs& a) {
  exporter::ExporterOptions o;
  if (Status st = ExporterOptionsFrom(a, o); !st.ok()) return Fail("exporter", st);

  exporter::Exporter e(o, exporter::DefaultCollectors(o));
  if (a.once) return RunExporterOnce(a, o, e);
  if (Status st = e.Start(); !st.ok()) {
    std::fprintf(stderr, "latdoc exporter: %s\n", st.message().c_str());
    return ExitCodeFor(st) == kExitBadInput ? kExitBadInput : kExitCannotRun;
  }
  std::printf("latdoc exporter: serving http://%s:%u/metrics\n",
              o.listen_host.find(':') != std::string::npos ? ("[" + o.listen_host + "]").c_str()
                                                           : o.listen_host.c_str(),
              unsigned(e.port()));
  std::printf("interval %.3g s; canary %s; host checks %s\n", NsToSec(o.interval_ns),
              o.target.empty() || !o.canary
                  ? "off"
                  : fmt::format("{} tokens to {}, at most {:.3g} request/s", o.canary_output_tokens,
                                o.target, 1.0 / NsToSec(o.interval_ns)).c_str(),
              o.host_period_ns ? fmt::format("every {:.3g} s", NsToSec(o.host_period_ns)).c_str()
                               : "off");
  std::fflush(stdout);
  e.RunUntilStopped();
  return kExitOk;
}

}  // namespace

Command RegisterExporter(CLI::App& root) {
  auto args = std::make_shared<ExporterArgs>();
  CLI::App* app = root.add_subcommand(
      "exporter",
      "Continuous diagnosis for Prometheus: every interval, a canary request (TTFT, ITL), the\n"
      "server's /metrics (TTFT split, load rules) and, less often, the host checks of `doctor`;\n"
      "served as metrics on /metrics. Writes nothing to disk.");
  app->add_option("--listen", args->listen, "HOST:PORT to serve /metrics on")
      ->capture_default_str();
  auto server = std::make_shared<ServerFlags>();
  server->url = &args->target;
  server->api_key_env = &args->api_key_env;
  AddServerFlags(app, *server,
                 {.url = "--target,--url,--base-url",
                  .url_help = "Base URL of the inference server (\"\" for the host checks only)",
                  .host_port = false,
                  .endpoint = false});
  server->url_opt->capture_default_str();
  app->add_option("--interval", args->interval,
                  "Time between cycles (>= 1s; one canary request per cycle)")
      ->type_name("DURATION")->capture_default_str();
  app->add_option("--host-interval", args->host_interval,
                  "Time between host checks (the expensive collectors); 0: off")
      ->type_name("DURATION")->capture_default_str();
  app->add_option("--timeout", args->timeout,
                  "Deadline of each collector run (default: the interval, at most 10s)")
      ->type_name("DURATION");
  app->add_option("--model", args->model, "Model to ask (default: the first of /v1/models)");
  app->add_option("--canary-tokens", args->canary_tokens, "Tokens the canary asks for (1-256)")
      ->capture_default_str();
  app->add_flag("--no-canary", args->no_canary, "Send no canary request");
  app->add_flag("--no-host", args->no_host, "No host checks");
  app->add_option("--sysroot", args->sysroot, "Host checks read this recorded tree instead of /")
      ->capture_default_str();
  app->add_option("--pid", args->pid, "The server process for the host checks");
  app->add_flag("--once", args->once,
                "Run one cycle, print the page and exit (no server); exit 3 when the target did "
                "not answer, 1 with a failing finding or a failed canary request");
  app->add_option("--max-error-rate", args->max_error_rate,
                  "With --once: fraction of failed canary requests allowed (0: any failure exits 1)")
      ->check(Number(Bound::kNonNegative))->check(CLI::Range(0.0, 1.0))->capture_default_str();
  AddNoColorFlag(app);
  return {app, [args, server] {
            if (auto rc = ResolveServerFlags("exporter", *server, /*required=*/false)) return *rc;
            return RunExporter(*args);
          }};
}

}  // namespace latdoc::cli
