// latdoc sweep: steps up load, finds the latency knee and recommends batch limits
// (loadgen/sweep.h).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <ctime>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "base/strings.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "loadgen/results.h"
#include "diagnose/profile_at.h"
#include "loadgen/runner.h"
#include "loadgen/sweep.h"
#include "loadgen/sweep_report.h"
#include "loadgen/workload.h"
#include "report/svg_chart.h"
#include "rules/sweep_rules.h"

namespace latdoc::cli {
namespace {

// The sweep's document, with the workload it ran when known.
nlohmann::ordered_json SweepDocument(const loadgen::SweepResult& r, const loadgen::SweepOptions& s,
                                     const loadgen::SweepContext& ctx,
                                     const std::optional<loadgen::RandomWorkloadOptions>& workload,
                                     const std::string& dataset) {
  nlohmann::ordered_json j = loadgen::SweepJson(r, s, ctx);
  if (workload) j["workload"] = loadgen::SweepWorkloadJson(*workload, dataset);
  return j;
}

struct SweepArgs {
  loadgen::BenchOptions o;
  loadgen::SweepOptions s;
  loadgen::RandomWorkloadOptions random;
  std::string concurrency, request_rate;
  std::string endpoint = "completions";
  std::string dataset;
  std::string api_key_env = "OPENAI_API_KEY";
  std::string slo, goal = "latency", knee_latency = "e2el";
  std::string json_out, csv_out, svg_out;
  ClientFlags client;
  bool quiet = false;
  std::string profile_at, profile_dir;  // --profile-at knee|N (docs/profile-at.md)
  double profile_seconds = 2;
};

// --profile-at after the sweep: the server profiled at the knee (no knee: the highest step) or
// N running requests, and the trace analysed (diagnose/profile_at.h). Fills the document's
// "profile_at" and "trace"; says on the terminal what it recorded and found.
void ProfileAfterSweep(const SweepArgs& a, const loadgen::SweepResult& r,
                       nlohmann::ordered_json* profile, nlohmann::ordered_json* trace) {
  diagnose::ProfileRequest pr;
  pr.url = a.o.url;
  pr.metrics_url = a.o.metrics_url;
  pr.bench = a.o;
  pr.dir = a.profile_dir;
  pr.seconds = a.profile_seconds;
  nlohmann::ordered_json& j = *profile;
  j["at"] = a.profile_at;
  j["dir"] = a.profile_dir;
  if (a.profile_at == "knee") {
    if (r.steps.empty()) {
      j["recorded"] = false;
      j["status"] = "skipped: the sweep has no step";
      j["files"] = nlohmann::ordered_json::array();
      return;
    }
    const double at = r.knee_index ? r.steps[*r.knee_index].load : r.steps.back().load;
    pr.concurrency = std::max(1, int(at));
    pr.running_at = std::max(1, int(std::ceil(0.9 * at)));
    pr.why = r.knee_index ? fmt::format("at the knee (concurrency {})", pr.concurrency)
                          : fmt::format("at the sweep's highest load (concurrency {}: no knee reached)",
                                        pr.concurrency);
    j["knee_reached"] = r.knee_index.has_value();
  } else {
    pr.concurrency = pr.running_at = std::max(1, std::atoi(a.profile_at.c_str()));
    pr.why = fmt::format("at {} running requests", pr.running_at);
  }
  j["concurrency"] = pr.concurrency;
  j["running_at"] = pr.running_at;
  pr.requests = std::max(64, 8 * pr.concurrency);
  if (a.dataset.empty()) {
    loadgen::RandomWorkloadOptions w = a.random;
    w.batch = 1000;  // prompts no round of the sweep sent (a repeat would hit the prefix cache)
    pr.bench.prompts = loadgen::RandomPrompts(w, size_t(pr.requests));
  }
  diagnose::ProfileCapture c = diagnose::CaptureProfile(pr);
  const nlohmann::ordered_json cj = c.Json();
  for (const auto& [k, v] : cj.items()) j[k] = v;
  if (!c.recorded) {
    fmt::print(stderr, "latdoc sweep: --profile-at {}: {}\n", a.profile_at, c.status);
    return;
  }
  std::vector<rules::Finding> findings;
  std::string status;
  *trace = diagnose::AnalyseProfileTraces(c.files, &findings, &status);
  j["trace_status"] = status;
  if (a.quiet) return;
  fmt::print("\nProfile: {}\n", c.status);
  if (trace->is_null()) {
    fmt::print("  trace: {}\n", status);
    return;
  }
  for (const rules::Finding& f : findings) {
    if (f.severity == rules::Severity::kOk || f.severity == rules::Severity::kSkip) continue;
    fmt::print("  {:<5} {}  {}\n", rules::SeverityName(f.severity), f.id, f.title);
  }
}

// "LO:HI" (or a single number, which is a range of one point and rejected by validation).
Status ParseRange(const std::string& flag, const std::string& text, double* lo, double* hi) {
  auto parts = Split(text, ':');
  if (parts.size() == 1) parts.push_back(parts[0]);
  if (parts.size() != 2) return InvalidArgument(fmt::format("{} '{}': expected LO:HI", flag, text));
  auto a = ParseDouble(Trim(parts[0])), b = ParseDouble(Trim(parts[1]));
  if (!a || !b) return InvalidArgument(fmt::format("{} '{}': expected LO:HI (numbers)", flag, text));
  *lo = *a;
  *hi = *b;
  return Status();
}

report::LineChart BuildChart(const loadgen::SweepResult& r, const loadgen::SweepOptions& o) {
  report::LineChart c;
  c.title = "latdoc sweep: latency and throughput against load";
  c.x_label = o.rate_mode ? "request rate (req/s, log scale)" : "concurrency (log scale)";
  c.left_label = "p99 latency (ms)";
  c.right_label = "output tokens/s";
  c.log_x = true;
  report::ChartSeries ttft{"p99 TTFT (ms)", "#d62728", false, {}};
  report::ChartSeries itl{"p99 ITL (ms)", "#ff7f0e", false, {}};
  // E2EL: what the knee is judged on by default (--knee-latency).
  report::ChartSeries e2el{"p99 E2EL (ms)", "#8e24aa", false, {}};
  report::ChartSeries tok{"tokens/s", "#1f77b4", true, {}};
  for (const auto& s : r.steps) {
    if (s.p99_ttft_ms) ttft.points.emplace_back(s.load, *s.p99_ttft_ms);
    if (s.p99_itl_ms) itl.points.emplace_back(s.load, *s.p99_itl_ms);
    if (s.p99_e2el_ms) e2el.points.emplace_back(s.load, *s.p99_e2el_ms);
    if (s.completed) tok.points.emplace_back(s.load, s.output_tokens_per_s);
  }
  c.series = {ttft, itl, e2el, tok};
  if (r.knee_index) {
    c.markers.push_back({r.steps[*r.knee_index].load,
                         fmt::format("knee {:g}{}", r.steps[*r.knee_index].load,
                                     r.knee_reached ? "" : " (not reached)")});
  }
  if (r.highest_meeting_slo && (!r.knee_index || *r.highest_meeting_slo != *r.knee_index)) {
    c.markers.push_back({r.steps[*r.highest_meeting_slo].load,
                         fmt::format("SLO {:g}", r.steps[*r.highest_meeting_slo].load)});
  }
  return c;
}

// Says on standard error what went wrong in a sweep that ran, and returns its exit code (as
// bench's):
//   interrupted (SIGINT, SIGTERM)                        128 + the signal
//   a step's failed requests above --max-error-rate      1
//   the server stopped answering mid-sweep                1
//   no step met the SLO                                   1
// Failed requests are counted by reason over the steps in one line, tolerated or not.
int ReportSweepOutcome(const loadgen::SweepResult& r, const loadgen::SweepOptions& s,
                       int stop_signal, const std::string& json_out) {
  const char* unit = s.rate_mode ? "req/s" : "concurrent";
  const char* signal_name = stop_signal == SIGTERM ? "SIGTERM" : "SIGINT";
  if (r.steps.empty() && r.partial && stop_signal != 0) {
    fmt::print(stderr, "latdoc sweep: interrupted by {} before any step completed\n", signal_name);
    return ExitCodeForSignal(stop_signal);
  }
  int rc = kExitOk;
  // The failures of every step's window (the requests its statistics use), and the step where
  // their share was highest.
  loadgen::FailureTally all, worst;
  const loadgen::SweepStep* worst_step = nullptr;
  for (const loadgen::SweepStep& step : r.steps) {
    loadgen::FailureTally t = loadgen::TallyFailures(step.failures, step.requests);
    if (t.failed > 0 && step.first_error.rfind("cancelled", 0) != 0) t.first_error = step.first_error;
    all.Add(t);
    if (t.failed > 0 && (!worst_step || t.rate() > worst.rate())) {
      worst_step = &step;
      worst = t;
    }
  }
  if (all.failed > 0) {
    const bool missed = worst.rate() > s.max_error_rate;
    std::string line = fmt::format("{} over {} step{}; the most at {:g} {}: {} of {}", all.Text(),
                                   r.steps.size(), r.steps.size() == 1 ? "" : "s",
                                   worst_step->load, unit, worst.failed, worst.requests);
    if (!all.first_error.empty()) line += "; first: " + all.first_error.substr(0, 200);
    if (!json_out.empty()) line += "; see \"failures\" in " + json_out;
    if (!missed) line += fmt::format(" (tolerated: --max-error-rate {:g}%)", 100 * s.max_error_rate);
    fmt::print(stderr, "latdoc sweep: {}\n", line);
    if (missed) {
      fmt::print(stderr, "latdoc sweep: {} at {:g} {}\n",
                 loadgen::ErrorRateMissText(worst.rate(), s.max_error_rate), worst_step->load, unit);
      rc = kExitFindings;
    }
  }
  if (stop_signal != 0) {
    fmt::print(stderr, "latdoc sweep: interrupted by {}: partial results ({} step{})\n", signal_name,
               r.steps.size(), r.steps.size() == 1 ? "" : "s");
    return ExitCodeForSignal(stop_signal);
  }
  if (r.partial) {
    // The server went away after some steps: they are written, but the sweep did not finish.
    fmt::print(stderr, "latdoc sweep: the sweep did not finish: {}; the {} step{} before it are "
               "written\n", r.partial_reason, r.steps.size(), r.steps.size() == 1 ? "" : "s");
    rc = kExitFindings;
  }
  if (s.slo.any() && !r.highest_meeting_slo && !r.steps.empty()) {
    const loadgen::SweepStep& lowest = r.steps.front();
    const double good_pct = lowest.requests && lowest.goodput
                                ? std::min(100.0, 100.0 * *lowest.goodput * lowest.duration_s /
                                                      double(lowest.requests))
                                : 0.0;
    fmt::print(stderr, "latdoc sweep: no step met the SLO; at the lowest load ({:g} {}): {}\n",
               lowest.load, unit, loadgen::SloMissText(s.slo, good_pct));
    rc = kExitFindings;
  }
  return rc;
}

// --endpoint, the load axis and its range, --goal, --knee-latency and --slo into the options;
// an exit code when one is bad.
std::optional<int> ResolveSweepArgs(SweepArgs& a) {
  loadgen::BenchOptions& o = a.o;
  loadgen::SweepOptions& s = a.s;
  if (a.endpoint == "completions") o.endpoint = loadgen::Endpoint::kCompletions;
  else if (a.endpoint == "chat") o.endpoint = loadgen::Endpoint::kChat;
  else return Fail("sweep", InvalidArgument("--endpoint must be completions or chat"));
  if (!a.request_rate.empty() && !a.concurrency.empty())
    return Fail("sweep", InvalidArgument("give --concurrency or --request-rate, not both"));
  if (!a.request_rate.empty()) {
    s.rate_mode = true;
    if (Status st = ParseRange("--request-rate", a.request_rate, &s.lo, &s.hi); !st.ok()) {
      return Fail("sweep", st);
    }
  } else {
    if (Status st = ParseRange("--concurrency", a.concurrency.empty() ? "1:1024" : a.concurrency,
                               &s.lo, &s.hi); !st.ok())
      return Fail("sweep", st);
  }
  if (a.goal == "latency") s.goal = loadgen::SweepGoal::kLatency;
  else if (a.goal == "throughput") s.goal = loadgen::SweepGoal::kThroughput;
  else return Fail("sweep", fmt::format("--goal '{}': expected latency or throughput", a.goal), kExitBadInput);
  auto kl = loadgen::ParseKneeLatency(a.knee_latency);
  if (!kl.ok()) return Fail("sweep", kl.status());
  s.knee_latency = *kl;
  auto slo = loadgen::ParseSlo(a.slo);
  if (!slo.ok()) return Fail("sweep", slo.status());
  s.slo = *slo;
  if (Status st = loadgen::ValidateSweepOptions(s); !st.ok()) return Fail("sweep", st);
  return std::nullopt;
}

// --profile-at, when given, with --profile-dir and --profile-seconds, checked before the sweep.
std::optional<int> CheckProfileAt(const SweepArgs& a) {
  if (a.profile_at.empty()) return std::nullopt;
  char* end = nullptr;
  const long n = a.profile_at == "knee" ? 1 : std::strtol(a.profile_at.c_str(), &end, 10);
  if (a.profile_at != "knee" &&
      (end == a.profile_at.c_str() || *end != '\0' || n < 1 || n > 100000))
    return Fail("sweep",
                InvalidArgument(fmt::format(
                    "--profile-at {}: give knee or a number of running requests (1 or more)",
                    a.profile_at)));
  if (a.profile_dir.empty())
    return Fail("sweep", InvalidArgument("--profile-at needs --profile-dir (the server's "
                                         "VLLM_TORCH_PROFILER_DIR, on this host or mounted)"));
  if (a.s.rate_mode)
    return Fail("sweep",
                InvalidArgument("--profile-at profiles at a concurrency: not with --request-rate"));
  if (!(a.profile_seconds > 0 && a.profile_seconds <= 600))
    return Fail("sweep", InvalidArgument("--profile-seconds must be in (0, 600]"));
  return std::nullopt;
}

// The prompts: a dataset file's, or random ones drawn per round (`random`); `described` is the
// JSON's "workload".
std::optional<int> SweepPrompts(SweepArgs& a, std::optional<loadgen::RandomWorkloadOptions>& random,
                                std::optional<loadgen::RandomWorkloadOptions>& described) {
  loadgen::BenchOptions& o = a.o;
  loadgen::SweepOptions& s = a.s;
  if (!a.dataset.empty()) {
    auto w = loadgen::LoadWorkloadFile(a.dataset, a.random.output_len);
    if (!w.ok()) return Fail("sweep", w.status());
    if (w->bad_lines) fmt::print(stderr, "latdoc sweep: {} bad entries skipped in {}\n", w->bad_lines, a.dataset);
    o.prompts = std::move(w->prompts);
    double in = 0;
    for (const auto& p : o.prompts) in += p.input_tokens;
    s.input_len = int(in / double(o.prompts.size()));
    double out = 0;
    for (const auto& p : o.prompts) out += p.output_tokens;
    described = a.random;
    described->input_len = std::max(1, s.input_len);
    described->output_len = std::max(1, int(out / double(o.prompts.size())));
    described->range_ratio = 0;
    described->prefix_len = 0;
  } else {
    if (Status st = loadgen::ValidateRandomOptions(a.random); !st.ok()) return Fail("sweep", st);
    a.random.seed = o.seed;
    a.random.token_ids = a.random.token_ids && o.endpoint == loadgen::Endpoint::kCompletions;
    random = a.random;  // drawn per round by the runner
    described = a.random;
    s.input_len = a.random.input_len;
    s.output_len = a.random.output_len;
  }
  return std::nullopt;
}

// The terminal's table: the model, the server, the steps by load, the summary and the steps
// whose validation failed.
void PrintSweepTable(const SweepArgs& a, const loadgen::SweepResult& r) {
  const loadgen::BenchOptions& o = a.o;
  const loadgen::SweepOptions& s = a.s;
  std::string server_id;
  for (const auto& st : r.steps) {
    if (server_id.empty()) server_id = st.server.server;
  }
  fmt::print("Model: {}\nServer: {}\n\n", r.model.empty() ? "n/a" : ToTerminalText(r.model),
             loadgen::ServerLabel(o.url, server_id));
  fmt::print("{}{}", loadgen::SweepTable(r, s), loadgen::SweepSummaryText(r, s));
  // A step whose rounds did not offer the load asked for (loadgen/validation.h).
  for (const auto& st : r.steps) {
    if (!st.validation || (*st.validation)["status"] != "fail") continue;
    for (const auto& c : (*st.validation)["checks"]) {
      if (c["status"] != "fail") continue;
      fmt::print("Validation FAIL at {:g} {}: {}: {}\n", st.load,
                 s.rate_mode ? "req/s" : "concurrent", c["name"].get<std::string>(),
                 c["message"].get<std::string>());
    }
  }
}

// The document's context: the URL and the local time now (vLLM's date format).
loadgen::SweepContext SweepContextNow(const std::string& url) {
  loadgen::SweepContext ctx;
  ctx.url = url;
  char date[32];
  time_t now = ::time(nullptr);
  tm lt;
  localtime_r(&now, &lt);
  strftime(date, sizeof date, "%Y%m%d-%H%M%S", &lt);
  ctx.date = date;
  return ctx;
}

// Writes --json, --csv and --svg; an exit code when a write fails.
std::optional<int> WriteSweepResults(const SweepArgs& a, const loadgen::SweepResult& r,
                                     const loadgen::SweepContext& ctx,
                                     const std::optional<loadgen::RandomWorkloadOptions>& described,
                                     const nlohmann::ordered_json& profile,
                                     const nlohmann::ordered_json& trace) {
  const loadgen::SweepOptions& s = a.s;
  if (!a.json_out.empty()) {
    nlohmann::ordered_json doc = SweepDocument(r, s, ctx, described, a.dataset);
    if (!profile.is_null()) doc["profile_at"] = profile;
    if (!trace.is_null()) doc["trace"] = trace;
    if (Status st = WriteFileAtomic(a.json_out, JsonText(doc, 2) + "\n"); !st.ok())
      return Fail("sweep", st);
  }
  if (!a.csv_out.empty()) {
    if (Status st = WriteFileAtomic(a.csv_out, loadgen::SweepCsv(r, s)); !st.ok())
      return Fail("sweep", st);
  }
  if (!a.svg_out.empty()) {
    if (Status st = WriteFileAtomic(a.svg_out, report::RenderSvg(BuildChart(r, s))); !st.ok())
      return Fail("sweep", st);
  }
  return std::nullopt;
}

int RunSweepCommand(SweepArgs& a) {
  loadgen::BenchOptions& o = a.o;
  loadgen::SweepOptions& s = a.s;
  if (auto rc = ResolveSweepArgs(a)) return *rc;
  if (auto rc = CheckProfileAt(a)) return *rc;
  if (const char* key = std::getenv(a.api_key_env.c_str())) o.api_key = key;
  a.client.Apply(o.client);
  o.threads = a.client.threads;
  if (s.rate_mode) o.request_rate = s.lo;
  std::optional<loadgen::RandomWorkloadOptions> random;
  std::optional<loadgen::RandomWorkloadOptions> described;  // the JSON's "workload"
  if (auto rc = SweepPrompts(a, random, described)) return *rc;
  // Output paths are checked before any load is sent (no sweep lost to a typo).
  for (const std::string* p : {&a.json_out, &a.csv_out, &a.svg_out}) {
    if (p->empty()) continue;
    if (Status st = CheckOutputPath(*p); !st.ok()) return Fail("sweep", st);
  }

  o.command = "sweep";  // names the command in the stopping line of a Ctrl-C
  auto runner = loadgen::MakeBenchStepRunner(o, random);
  // Progress on stderr as each step ends; the table on stdout at the end, by load (the steps
  // run in another order: the ladder, then refinement between its steps).
  int steps_done = 0;
  auto result = loadgen::RunSweep(*runner, s, [&](const loadgen::SweepStep& step) {
    ++steps_done;
    if (!a.quiet) fmt::print(stderr, "{}", loadgen::SweepProgressLine(step, steps_done, s));
  });
  const int stop_signal = runner->stop_signal();
  runner.reset();
  if (!result.ok()) return Fail("sweep", result.status());
  loadgen::SweepResult& r = *result;
  rules::AddSweepAdvice(s, r);  // the batch-limit advice (rules/sweep_rules.h)
  const bool any_metrics = std::any_of(r.steps.begin(), r.steps.end(),
                                       [](const loadgen::SweepStep& st) { return st.server.available; });
  if (!any_metrics && o.scrape_metrics && !r.steps.empty() && !r.steps.front().server.error.empty()) {
    fmt::print(stderr, "latdoc sweep: the server's metrics were not read ({}): no queue, KV or step-time "
               "evidence for the knee\n", r.steps.front().server.error);
  }
  if (!a.quiet) PrintSweepTable(a, r);

  const loadgen::SweepContext ctx = SweepContextNow(o.url);
  nlohmann::ordered_json profile, trace;
  if (!a.profile_at.empty() && stop_signal == 0) ProfileAfterSweep(a, r, &profile, &trace);
  if (auto rc = WriteSweepResults(a, r, ctx, described, profile, trace)) return *rc;
  return ReportSweepOutcome(r, s, stop_signal, a.json_out);
}

}  // namespace

Command RegisterSweep(CLI::App& root) {
  auto* app = root.add_subcommand(
      "sweep",
      "Steps up load (a geometric ladder, then refinement around the knee), finds the latency\n"
      "knee, explains it with the server's /metrics and recommends --max-num-seqs and\n"
      "--max-num-batched-tokens.");
  auto a = std::make_shared<SweepArgs>();
  loadgen::BenchOptions& o = a->o;
  loadgen::SweepOptions& s = a->s;
  o.scrape_interval_s = 0.1;
  a->random.input_len = 256;
  a->random.output_len = 64;
  auto server = std::make_shared<ServerFlags>();
  server->url = &o.url;
  server->endpoint = &a->endpoint;
  server->api_key_env = &a->api_key_env;
  AddServerFlags(app, *server);
  app->add_option("--metrics-url", o.metrics_url, "Where /metrics is (default: --url)");
  app->add_option("--model", o.model, "Model name (default: the first of /v1/models)");
  auto* sw = "Sweep";
  app->add_option("--concurrency,-c", a->concurrency, "Concurrency range LO:HI (default: 1:1024)")->group(sw);
  app->add_option("--request-rate", a->request_rate, "Request-rate range LO:HI (req/s, open loop)")->group(sw);
  app->add_option("--slo", a->slo, "ttft:MS,tpot:MS,e2el:MS[,percent:P] (exit 1 when no step meets it)")->group(sw);
  app->add_option("--goal", a->goal, "latency | throughput (what the recommendation favours)")
      ->group(sw)->capture_default_str();
  app->add_option("--knee-latency", a->knee_latency, "The p99 the knee is judged on: ttft|tpot|itl|e2el")
      ->group(sw)->capture_default_str();
  app->add_option("--min-elasticity", s.min_elasticity,
                  "Knee threshold: % tokens/s gained per % of p99 added")->check(Number(Bound::kPositive))->group(sw)->capture_default_str();
  app->add_option("--ladder-factor", s.ladder_factor, "Ratio between ladder steps")->check(Number(Bound::kPositive))->group(sw)->capture_default_str();
  app->add_option("--refine-ratio", s.refine_ratio, "Refine until neighbours are this close")
      ->check(Number(Bound::kPositive))->group(sw)->capture_default_str();
  app->add_option("--min-requests", s.min_requests, "Per step, at least (and at least 2x concurrency)")
      ->check(Number(Bound::kPositive))->group(sw)->capture_default_str();
  app->add_option("--max-requests", s.max_requests, "Per step, at most (0: max(400, 8x concurrency))")
      ->check(Number(Bound::kNonNegative))->group(sw)->capture_default_str();
  app->add_option("--stable-tolerance", s.stable_tolerance,
                  "A step is stable when the p99 of its last half is within this fraction of the whole")
      ->check(Number(Bound::kPositive))->group(sw)->capture_default_str();
  app->add_option("--max-error-rate", s.max_error_rate, "Stop climbing above this failed fraction")
      ->check(Number(Bound::kNonNegative))->group(sw)->capture_default_str();
  app->add_option("--max-steps", s.max_steps, "Steps at most")->check(Number(Bound::kPositive))->group(sw)->capture_default_str();
  auto* load = "Client";
  app->add_option("--burstiness", o.burstiness, "Rate mode: gamma shape (1 = Poisson)")
      ->check(Number(Bound::kPositive))->group(load)->capture_default_str();
  AddClientFlags(app, a->client, o.client.insecure, load);
  app->add_option("--scrape-interval", o.scrape_interval_s, "Between /metrics scrapes: seconds, or 500ms")
      ->type_name("DURATION")->transform(Seconds(Bound::kPositive))->group(load)->capture_default_str();
  auto* wl = "Workload";
  app->add_option("--input-len,--random-input-len", a->random.input_len, "Prompt tokens (bench's default is 1024: a sweep runs many steps)")
      ->check(Number(Bound::kPositive))->group(wl)->capture_default_str();
  app->add_option("--output-len,--random-output-len", a->random.output_len, "Tokens to generate (bench's default is 128)")
      ->check(Number(Bound::kPositive))->group(wl)->capture_default_str();
  app->add_option("--range-ratio,--random-range-ratio", a->random.range_ratio, "Length spread, [0, 1)")
      ->check(Number(Bound::kNonNegative))->group(wl)->capture_default_str();
  app->add_option("--prefix-len,--random-prefix-len", a->random.prefix_len, "Shared prefix tokens")
      ->check(Number(Bound::kNonNegative))->group(wl)->capture_default_str();
  app->add_option("--seed", o.seed, "Seed")->group(wl)->capture_default_str();
  app->add_flag("--token-ids", a->random.token_ids, "Send prompts as token ids (completions only)")->group(wl);
  app->add_option("--dataset", a->dataset, "Prompts from a JSONL or ShareGPT JSON file")->group(wl);
  auto* out = "Output";
  app->add_option("--json", a->json_out, "Write the sweep as JSON (schema latdoc.sweep/1)")->group(out);
  app->add_option("--profile-at", a->profile_at,
                  "After the sweep, profile the server (vLLM's /start_profile) at the knee or N "
                  "running requests and analyse the trace (\"profile_at\", \"trace\")")
      ->type_name("knee|N")->group(out);
  app->add_option("--profile-dir", a->profile_dir,
                  "Where the server writes its traces (its VLLM_TORCH_PROFILER_DIR, here or mounted)")
      ->group(out);
  app->add_option("--profile-seconds", a->profile_seconds, "How long the profiler records at most")
      ->group(out)->capture_default_str();
  app->add_option("--csv", a->csv_out, "Write one CSV row per step")->group(out);
  app->add_option("--svg", a->svg_out, "Write the chart (p99 TTFT, ITL and E2EL, tokens/s; knee marked)")->group(out);
  AddQuietFlag(app, &a->quiet, "No progress lines (stderr) and no table or summary (stdout)");
  AddNoColorFlag(app);
  return {app, [a, server] {
            if (auto rc = ResolveServerFlags("sweep", *server, /*required=*/true)) return *rc;
            return RunSweepCommand(*a);
          }};
}

}  // namespace latdoc::cli
