// latdoc diagnose and latdoc demo: the whole checklist, ranked (diagnose/diagnose.h).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/core.h>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "diagnose/demo.h"
#include "diagnose/diagnose.h"
#include "loadgen/results.h"
#include "report/findings_text.h"
#include "report/html_report.h"
#include "report/markdown_report.h"

namespace latdoc::cli {
namespace {

struct Outputs {
  std::string json, markdown, html;
  bool show_ok = false;
  bool quiet = false;
  double max_error_rate = 0;  // the share of failed load-test requests tolerated (exit 0)
};

void AddOutputs(CLI::App* app, Outputs& o) {
  app->add_option("--json", o.json, "Write the diagnosis as JSON (schema latdoc.diagnose/1)");
  app->add_option("--markdown", o.markdown, "Write the ranked checklist as Markdown");
  app->add_option("--report", o.html, "Write a self-contained HTML report");
  app->add_flag("--show-ok", o.show_ok, "List passed and skipped checks too");
  AddQuietFlag(app, &o.quiet, "No terminal summary");
  AddNoColorFlag(app);
}

// The output paths, checked before anything runs: a typo must not cost a load test, nor leave
// one report written and another not.
Status CheckOutputs(const Outputs& o) {
  for (const std::string* p : {&o.json, &o.markdown, &o.html}) {
    if (p->empty()) continue;
    if (Status st = CheckOutputPath(*p); !st.ok()) return st;
  }
  return Status::Ok();
}

// The exit code of a diagnosis that ran, after saying on standard error why it is not 0:
//   a signal stopped it                                128 + the signal
//   a live target that could not be reached            3
//   no live target, and not one input could be read   2
//   the load tests had failed requests                 1 ("12 of 216 requests failed (...)"),
//     beyond --max-error-rate (default 0: any)
//   the server stopped answering during them           1
//   --slo missed at the target load                    1 ("SLO missed: 93.0% of requests met ...")
//   a `fail` finding                                   1
// The failure line is said whatever the exit, as bench says it.
int Verdict(const diagnose::DiagnoseResult& r, std::string_view command, const std::string& json_out,
            double max_error_rate) {
  const report::Diagnosis& d = r.diagnosis;
  const nlohmann::ordered_json& doc = d.sections;
  const std::string target = d.target.value_or("");
  auto say = [&](const std::string& line) { fmt::print(stderr, "latdoc {}: {}\n", command, line); };
  // Requests cancelled by the stop are the user's doing: TallyFailures leaves them out.
  loadgen::FailureTally failures;
  for (const char* step : {"baseline", "bench"}) {
    if (doc.contains(step)) failures.Add(loadgen::TallyFailures(doc[step]));
  }
  if (failures.failed > 0) {
    std::string line = failures.Text() + " in the load tests";
    if (!failures.first_error.empty()) line += "; first: " + failures.first_error.substr(0, 200);
    if (!json_out.empty()) line += "; see \"failures\" of \"baseline\" and \"bench\" in " + json_out;
    if (failures.rate() <= max_error_rate)
      line += fmt::format(" (tolerated: --max-error-rate {:g}%)", 100 * max_error_rate);
    say(line);
    if (failures.rate() > max_error_rate && max_error_rate > 0)
      say(loadgen::ErrorRateMissText(failures.rate(), max_error_rate));
  }
  if (r.stop_signal != 0) {
    say((d.partial_reason.empty() ? std::string("interrupted") : d.partial_reason) +
        ": partial results; the layers after the stop were skipped");
    return ExitCodeForSignal(r.stop_signal);
  }
  // A live target that could not be reached: the report is written, but latdoc could not run
  // what mattered most (DESIGN.md exit codes).
  if (d.target_reachable == false) {
    say(
        fmt::format("the target {} could not be reached; the report has the layers that could be "
                    "checked",
                    target));
    return kExitCannotRun;
  }
  if (doc.contains("stopped_answering_after")) {
    say(
        fmt::format("the target {} stopped answering after {} requests; the report keeps what was "
                    "measured before",
                    target, doc["stopped_answering_after"].get<uint64_t>()));
    return kExitFindings;
  }
  // Files only: the layers that read an input and could not (a trace with no GPU event, a log
  // with no line of a known format, host facts that do not parse) are said; when nothing at
  // all was measured, that is bad input, not "no problems found".
  if (!d.target) {
    bool measured = false;
    std::vector<std::pair<std::string, std::string>> unreadable;  // layers, why
    for (const auto& [layer, text] : d.layers) {
      if (text.rfind("failed: ", 0) == 0) {
        // One line for layers that failed alike (system and config: the host facts).
        auto same = std::find_if(unreadable.begin(), unreadable.end(),
                                 [&](const auto& u) { return u.second == text.substr(8); });
        if (same != unreadable.end()) same->first += ", " + layer;
        else unreadable.emplace_back(layer, text.substr(8));
      } else if (text.rfind("skipped", 0) != 0) {
        measured = true;
      }
    }
    for (const auto& [layers, why] : unreadable) say(layers + ": " + why);
    if (!measured && !unreadable.empty()) {
      say("no input could be read: nothing was diagnosed");
      return kExitBadInput;
    }
  }
  // --slo, judged at the target load.
  bool missed = false;
  if (doc.contains("bench") && doc["bench"].contains("problems")) {
    for (const auto& p : doc["bench"]["problems"]) {
      say(fmt::format("{} at concurrency {}", p.get<std::string>(),
                      doc["bench"].value("max_concurrency", 0)));
      missed = true;
    }
  }
  if (failures.rate() > max_error_rate || missed) return kExitFindings;
  return rules::WorstSeverity(d.findings) == rules::Severity::kFail ? kExitFindings : kExitOk;
}

// Prints the summary and writes the reports; then the exit code (Verdict). A report that could
// not be written is said and decides the exit code.
int Write(const diagnose::DiagnoseResult& r, const Outputs& o, std::string_view command) {
  if (!o.quiet)
    fmt::print("{}",
               diagnose::RenderDiagnoseText(r.diagnosis, report::StdoutWantsColor(), o.show_ok));
  std::fflush(stdout);
  auto put = [](const std::string& path, const std::string& text) {
    if (path.empty()) return Status::Ok();
    return WriteFileAtomic(path, text);
  };
  Status st = put(o.json, JsonText(report::ToJson(r.diagnosis), 2) + "\n");
  if (st.ok() && !o.markdown.empty())
    st = put(o.markdown, report::RenderMarkdownReport(r.diagnosis));
  if (st.ok() && !o.html.empty()) st = put(o.html, report::RenderHtmlReport(r.diagnosis));
  if (!st.ok()) {
    fmt::print(stderr, "latdoc: {}\n", st.message());
    return ExitCodeFor(st);
  }
  return Verdict(r, command, o.json, o.max_error_rate);
}

struct DiagnoseArgs {
  diagnose::DiagnoseOptions d;
  Outputs out;
  std::string slo, endpoint = "completions", api_key_env = "OPENAI_API_KEY";
  bool no_keepalive = false;
  double net_timeout_s = 5;
};

// The load flags: --slo, --endpoint, the API key, keep-alive, the workload, the network probe
// and the sweep; false (after saying why) when one is bad.
bool ApplyLoadFlags(DiagnoseArgs& a) {
  diagnose::DiagnoseOptions& d = a.d;
  auto slo = loadgen::ParseSlo(a.slo);
  if (!slo.ok()) {
    fmt::print(stderr, "latdoc diagnose: {}\n", slo.status().message());
    return false;
  }
  d.slo = *slo;
  if (a.endpoint == "chat") d.bench.endpoint = loadgen::Endpoint::kChat;
  else if (a.endpoint != "completions") {
    fmt::print(stderr, "latdoc diagnose: --endpoint must be completions or chat\n");
    return false;
  }
  if (const char* key = std::getenv(a.api_key_env.c_str())) d.bench.api_key = key;
  d.bench.client.keep_alive = !a.no_keepalive;
  d.workload.token_ids = d.workload.token_ids && d.bench.endpoint == loadgen::Endpoint::kCompletions;
  if (Status st = loadgen::ValidateRandomOptions(d.workload); !st.ok()) {
    fmt::print(stderr, "latdoc diagnose: {}\n", st.message());
    return false;
  }
  if (a.net_timeout_s <= 0 || d.net_samples < 0) {
    fmt::print(stderr, "latdoc diagnose: --net-samples must be 0 or more and --net-timeout positive\n");
    return false;
  }
  d.net_timeout_ns = int64_t(a.net_timeout_s * 1e9);
  if (d.sweep_max < 2) {
    fmt::print(stderr, "latdoc diagnose: --sweep-max must be at least 2\n");
    return false;
  }
  return true;
}

// --profile-at and --profile-load: their values and the flags they need; false (after saying
// why) when one is bad.
bool CheckProfileFlags(diagnose::DiagnoseOptions& d) {
  // --profile-at knee|N (diagnose/profile_at.h): knee implies the sweep that finds it.
  if (!d.profile_at.empty()) {
    char* end = nullptr;
    const long n = d.profile_at == "knee" ? 1 : std::strtol(d.profile_at.c_str(), &end, 10);
    if (d.profile_at != "knee" && (end == d.profile_at.c_str() || *end != '\0' || n < 1 || n > 100000)) {
      fmt::print(stderr, "latdoc diagnose: --profile-at {}: give knee or a number of running "
                         "requests (1 or more)\n", d.profile_at);
      return false;
    }
    if (d.profile_dir.empty() || d.url.empty()) {
      fmt::print(stderr, "latdoc diagnose: --profile-at needs --url and --profile-dir (the "
                         "server's VLLM_TORCH_PROFILER_DIR, on this host or mounted)\n");
      return false;
    }
    if (!(d.profile_seconds > 0 && d.profile_seconds <= 600)) {
      fmt::print(stderr, "latdoc diagnose: --profile-seconds must be in (0, 600]\n");
      return false;
    }
    if (d.profile_at == "knee") d.sweep = true;
  }
  // --profile-load (diagnose/profile_at.h): the profiler across the target load itself.
  if (d.profile_load && (d.profile_dir.empty() || d.url.empty())) {
    fmt::print(stderr, "latdoc diagnose: --profile-load needs --url and --profile-dir (the "
                       "server's VLLM_TORCH_PROFILER_DIR, on this host or mounted)\n");
    return false;
  }
  return true;
}

// --host-counters-root (attribution/host_sampler.h): the host sampler's swap and PSI files from
// another tree; only with --local, where the sampler runs. False (after saying why) when bad.
bool CheckHostCountersRoot(const diagnose::DiagnoseOptions& d) {
  if (!d.host_counters_root.empty()) {
    struct stat st;
    if (!d.local) {
      fmt::print(stderr, "latdoc diagnose: --host-counters-root needs --local\n");
      return false;
    }
    if (::stat(d.host_counters_root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      fmt::print(stderr, "latdoc diagnose: --host-counters-root {}: not a directory\n", d.host_counters_root);
      return false;
    }
  }
  return true;
}

// Inputs the user named must exist: a misspelt --trace is bad input, not a layer that
// quietly failed under an otherwise clean report. False (after saying why) when one is missing.
bool CheckInputsExist(const diagnose::DiagnoseOptions& d) {
  std::vector<std::pair<const char*, std::string>> inputs;
  for (const auto& t : d.traces) inputs.push_back({"--trace", t});
  for (const auto& l : d.logs)
    if (l != "-") inputs.push_back({"--logs", l});
  if (!d.facts_path.empty()) inputs.push_back({"--facts", d.facts_path});
  for (const auto& [flag, path] : inputs) {
    if (::access(path.c_str(), R_OK) != 0) {
      fmt::print(stderr, "latdoc diagnose: {} {}: {}\n", flag, path, std::strerror(errno));
      return false;
    }
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      fmt::print(stderr, "latdoc diagnose: {} {}: is a directory, not a file\n", flag, path);
      return false;
    }
  }
  return true;
}

int RunDiagnoseCommand(DiagnoseArgs& a) {
  diagnose::DiagnoseOptions& d = a.d;
  if (d.url.empty() && d.traces.empty() && d.logs.empty() && d.facts_path.empty() && !d.local) {
    fmt::print(
        stderr,
        "latdoc diagnose: nothing to diagnose: give --url, --trace, --logs, --facts or --local\n");
    return kExitBadInput;
  }
  if (!ApplyLoadFlags(a)) return kExitBadInput;
  if (!CheckProfileFlags(d)) return kExitBadInput;
  if (!CheckHostCountersRoot(d)) return kExitBadInput;
  if (d.concurrency < 1 || d.requests < 1 || d.baseline_requests < 1) {
    fmt::print(
        stderr,
        "latdoc diagnose: --concurrency, --requests and --baseline-requests must be at least 1\n");
    return kExitBadInput;
  }
  if (!CheckInputsExist(d)) return kExitBadInput;
  if (Status st = CheckOutputs(a.out); !st.ok()) {
    fmt::print(stderr, "latdoc diagnose: {}\n", st.message());
    return kExitBadInput;
  }
  d.progress = !a.out.quiet && ::isatty(2);
  diagnose::DiagnoseResult r = diagnose::RunDiagnose(d);
  return Write(r, a.out, "diagnose");
}

struct DemoArgs {
  diagnose::DemoOptions demo;
  Outputs out;
  std::string dir = "latdoc-demo";
};

// The GPU trace shipped with the sources, when the demo runs from a checkout.
std::string BundledTrace() {
  for (const char* p : {"tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz"}) {
    if (::access(p, R_OK) == 0) return p;
  }
  return "";
}

int RunDemoCommand(DemoArgs& a) {
  std::error_code ec;
  std::filesystem::create_directories(a.dir, ec);
  if (ec) {
    fmt::print(stderr, "latdoc demo: {}: {}\n", a.dir, ec.message());
    return kExitCannotRun;
  }
  a.demo.work_dir = a.dir;
  if (a.demo.trace_file.empty()) a.demo.trace_file = BundledTrace();
  a.demo.progress = !a.out.quiet;
  if (a.out.html.empty()) a.out.html = a.dir + "/report.html";
  if (a.out.json.empty()) a.out.json = a.dir + "/diagnosis.json";
  if (a.out.markdown.empty()) a.out.markdown = a.dir + "/report.md";
  if (Status st = CheckOutputs(a.out); !st.ok()) {
    fmt::print(stderr, "latdoc demo: {}\n", st.message());
    return kExitBadInput;
  }
  auto r = diagnose::RunDemo(a.demo);
  if (!r.ok()) {
    fmt::print(stderr, "latdoc demo: {}\n", r.status().message());
    return ExitCodeFor(r.status());
  }
  int code = Write(*r, a.out, "demo");
  if (!a.out.quiet) {
    fmt::print("\nWrote {}, {} and {}.\n", a.out.html, a.out.json, a.out.markdown);
  }
  // The demo's server is sick on purpose: finding that is success.
  return code == kExitFindings ? kExitOk : code;
}

// The load: the model, the network probe, the gateway, the load and the sweep, the workload,
// the client, the SLO and the failures allowed.
void AddDiagnoseLoadFlags(CLI::App* app, DiagnoseArgs& a) {
  diagnose::DiagnoseOptions& d = a.d;
  app->add_option("--model", d.bench.model, "Model name (default: the first of /v1/models)");
  app->add_option("--metrics-url", d.bench.metrics_url, "Where /metrics is (default: --url)");
  app->add_option("--net-samples", d.net_samples, "Network probe samples (0: no probe)")
      ->check(Number(Bound::kNonNegative))->capture_default_str();
  app->add_option("--net-timeout", a.net_timeout_s,
                  "Bound of each probe exchange: seconds, or 500ms")
      ->type_name("DURATION")
      ->transform(Seconds(Bound::kPositive))
      ->capture_default_str();
  app->add_option("--direct-url", d.direct_url,
                  "The same server bypassing the gateway --url goes through: measures the gateway's delay");
  app->add_option("--concurrency,-c", d.concurrency, "Target load")
      ->check(Number(Bound::kPositive))->capture_default_str();
  app->add_option("--requests,-n,--num-requests,--num-prompts", d.requests, "Requests at the target load")
      ->check(Number(Bound::kPositive))->capture_default_str();
  app->add_option("--baseline-requests", d.baseline_requests, "Requests at concurrency 1")
      ->check(Number(Bound::kPositive))->capture_default_str();
  app->add_flag("--sweep", d.sweep, "Also step up the load to find the latency knee (as latdoc sweep)");
  app->add_option("--sweep-max", d.sweep_max, "Highest concurrency the sweep tries")
      ->check(Number(Bound::kPositive))->capture_default_str();
  app->add_option("--input-len,--random-input-len", d.workload.input_len, "Prompt tokens")
      ->check(Number(Bound::kPositive))->capture_default_str();
  app->add_option("--output-len,--random-output-len", d.workload.output_len, "Tokens to generate")
      ->check(Number(Bound::kPositive))->capture_default_str();
  app->add_flag("--token-ids", d.workload.token_ids, "Send prompts as token ids (exact lengths)");
  app->add_option("--sessions", d.sessions,
                  "Also run N multi-turn sessions (history resent each turn; --prefix-len shared "
                  "system prompt): TTFT by turn and prefix-cache misses (docs/workloads.md)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--turns", d.session_turns, "Turns per session (with --sessions)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app->add_option("--think-time", d.think_time_s, "Pause between turns (with --sessions): seconds")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--prefix-len", d.workload.prefix_len, "Shared prefix tokens (the sessions' system prompt)")
      ->check(CLI::NonNegativeNumber);
  app->add_flag("--no-keepalive", a.no_keepalive, "A new connection per request");
  app->add_flag("--insecure", d.bench.client.insecure, "Skip TLS certificate verification");
  AddThreadsFlag(app, d.bench.threads, nullptr);
  app->add_option("--slo", a.slo, "ttft:MS,tpot:MS,e2el:MS");
  app->add_option("--max-error-rate", a.out.max_error_rate,
                  "Fraction of failed load-test requests allowed (exit 1 above; 0: any failure)")
      ->check(Number(Bound::kNonNegative))
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
}

// The evidence beside the load: traces, logs, host facts, the host itself and the profiler.
void AddDiagnoseEvidenceFlags(CLI::App* app, diagnose::DiagnoseOptions& d) {
  app->add_option("--trace", d.traces, "Profiler trace(s): Kineto JSON, rocprof, rocpd, nsys SQLite");
  app->add_flag("--trace-of-server", d.trace_of_target,
                "The --trace files were recorded from the --url server: their findings claim "
                "shares of its latency (else only when their wall clock overlaps the load)");
  app->add_option("--logs", d.logs, "Server log file(s)");
  app->add_option("--facts", d.facts_path, "Host facts from `latdoc doctor --collect`");
  app->add_flag("--local", d.local, "Check this host (run on the server machine)");
  app->add_option("--host-counters-root", d.host_counters_root,
                  "With --local: read /proc/vmstat and /proc/pressure/* under DIR instead of / (a "
                  "recorded or simulated tree, e.g. latdoc sim --sim-host-counters-dir); the "
                  "server's threads and the run queue still come from this host")
      ->type_name("DIR");
  app->add_option("--profile-at", d.profile_at,
                  "Profile the server (vLLM's /start_profile) once the load reaches the knee "
                  "(implies --sweep) or N running requests, and analyse the trace in this run")
      ->type_name("knee|N");
  app->add_flag("--profile-load", d.profile_load,
                "Profile the server (vLLM's /start_profile, /stop_profile) across the target load "
                "itself, analyse the trace in this run and lay its kernels on the stall attribution "
                "timeline (names slow_kernel stalls); needs --profile-dir");
  app->add_option("--profile-dir", d.profile_dir,
                  "Where the server writes its traces (its VLLM_TORCH_PROFILER_DIR, here or mounted)");
  app->add_option("--profile-seconds", d.profile_seconds, "How long the profiler records at most")
      ->capture_default_str();
}

}  // namespace

Command RegisterDiagnose(CLI::App& root) {
  auto* app = root.add_subcommand(
      "diagnose",
      "Run every layer that applies (load with /metrics, traces, logs, host and server\n"
      "configuration) and rank what they find, with evidence and the change to try.");
  auto a = std::make_shared<DiagnoseArgs>();
  diagnose::DiagnoseOptions& d = a->d;
  auto server = std::make_shared<ServerFlags>();
  server->url = &d.url;
  server->endpoint = &a->endpoint;
  server->api_key_env = &a->api_key_env;
  AddServerFlags(app, *server,
                 {.url_help = "Base URL of the server (omit to judge files and host only)"});
  AddDiagnoseLoadFlags(app, *a);
  AddDiagnoseEvidenceFlags(app, d);
  AddOutputs(app, a->out);
  return {app, [a, server] {
            if (auto rc = ResolveServerFlags("diagnose", *server, /*required=*/false)) return *rc;
            if (!a->d.direct_url.empty()) {
              auto u = NormalizeServerUrl("--direct-url", a->d.direct_url);
              if (!u.ok()) return Fail("diagnose", u.status());
              if (!u->note.empty()) fmt::print(stderr, "latdoc diagnose: note: {}\n", u->note);
              a->d.direct_url = u->url;
            }
            return RunDiagnoseCommand(*a);
          }};
}

Command RegisterDemo(CLI::App& root) {
  auto* app = root.add_subcommand(
      "demo",
      "Start the built-in simulator with a few pathologies, diagnose it, print the ranked\n"
      "checklist and write the HTML report. The first thing to run.");
  auto a = std::make_shared<DemoArgs>();
  app->add_option("--dir", a->dir, "Where to write the report and logs")->capture_default_str();
  app->add_option("--time-scale", a->demo.time_scale, "Simulator speed (0.25: 4x faster)")->capture_default_str();
  app->add_option("--trace", a->demo.trace_file, "A GPU trace to include (default: the bundled one)");
  AddOutputs(app, a->out);
  return {app, [a] { return RunDemoCommand(*a); }};
}

}  // namespace latdoc::cli
