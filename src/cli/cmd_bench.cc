// latdoc bench: streaming load against an OpenAI-compatible server (loadgen/runner.h).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "loadgen/results.h"
#include "loadgen/runner.h"
#include "loadgen/workload.h"

namespace latdoc::cli {
namespace {

struct BenchArgs {
  loadgen::BenchOptions o;
  loadgen::RandomWorkloadOptions random;
  std::string endpoint = "completions";
  std::string dataset;
  std::string api_key_env = "OPENAI_API_KEY";
  std::string slo;
  double max_error_rate = -1;
  std::string json_out, requests_out;
  bool no_keepalive = false;
  double connect_timeout_s = 10, first_byte_timeout_s = 600, idle_timeout_s = 60,
         request_timeout_s = 0;
  bool no_ignore_eos = false;
  bool quiet = false;
};

// Says on standard error what went wrong in a finished run, and returns its exit code:
//   interrupted (SIGINT, SIGTERM)       128 + the signal, whatever else happened
//   every request failed                3 (the server could not serve this load at all)
//   an SLO or --max-error-rate missed   1
// Failed requests are counted by reason in one line ("12 of 400 requests failed (10 reset,
// 2 cut short)"), tolerated or not; streams cut by the stop are not failures of the server.
int ReportBenchOutcome(const loadgen::BenchRun& run, const loadgen::BenchSummary& s,
                       const loadgen::ResultOptions& ro, const std::string& json_out) {
  const loadgen::FailureTally& f = s.failures;
  const uint64_t completed = f.requests - f.failed;
  if (f.failed > 0) {
    std::string line = f.Text();
    if (!f.first_error.empty()) line += "; first: " + f.first_error.substr(0, 200);
    if (!json_out.empty()) line += "; see \"failures\" in " + json_out;
    if (!s.error_rate_missed && ro.max_error_rate && completed > 0)
      line += fmt::format(" (tolerated: --max-error-rate {:g}%)", 100 * *ro.max_error_rate);
    fmt::print(stderr, "latdoc bench: {}\n", line);
  }
  if (run.stop_signal != 0) {
    fmt::print(stderr, "latdoc bench: {}: partial results{}\n", run.partial_reason,
               f.cancelled > 0 ? fmt::format(" ({} stream{} cut by the stop)", f.cancelled,
                                             f.cancelled == 1 ? "" : "s")
                               : std::string());
    for (const std::string& p : s.problems) fmt::print(stderr, "latdoc bench: {}\n", p);
    return ExitCodeForSignal(run.stop_signal);
  }
  if (completed == 0 && f.failed > 0) {
    fmt::print(stderr, "latdoc bench: every request failed: the server could not serve this load\n");
    return kExitCannotRun;
  }
  for (const std::string& p : s.problems) fmt::print(stderr, "latdoc bench: {}\n", p);
  return s.problems.empty() ? kExitOk : kExitFindings;
}

int RunBenchCommand(BenchArgs& a) {
  loadgen::BenchOptions& o = a.o;
  if (a.endpoint == "completions") o.endpoint = loadgen::Endpoint::kCompletions;
  else if (a.endpoint == "chat") o.endpoint = loadgen::Endpoint::kChat;
  else return Fail("bench", InvalidArgument("--endpoint must be completions or chat"));
  if (o.num_requests < 0) return Fail("bench", InvalidArgument("--num-requests must not be negative"));
  if (o.warmup < 0) return Fail("bench", InvalidArgument("--warmup must not be negative"));
  if (a.max_error_rate != -1 && !(a.max_error_rate >= 0 && a.max_error_rate <= 1))
    return Fail("bench", InvalidArgument("--max-error-rate must be in [0, 1]"));
  if (o.num_requests == 0 && o.duration_s <= 0) o.num_requests = 200;
  auto slo = loadgen::ParseSlo(a.slo);
  if (!slo.ok()) return Fail("bench", slo.status());
  loadgen::ResultOptions ro;
  ro.slo = *slo;
  // Any failed request fails the run unless --max-error-rate tolerates it.
  ro.max_error_rate = a.max_error_rate >= 0 ? a.max_error_rate : 0.0;
  if (const char* key = std::getenv(a.api_key_env.c_str())) o.api_key = key;
  o.client.keep_alive = !a.no_keepalive;
  o.client.connect_timeout_ns = SecToNs(a.connect_timeout_s);
  o.client.first_byte_timeout_ns = SecToNs(a.first_byte_timeout_s);
  o.client.idle_timeout_ns = SecToNs(a.idle_timeout_s);
  o.client.request_timeout_ns = SecToNs(a.request_timeout_s);
  o.ignore_eos = !a.no_ignore_eos;
  o.progress = !a.quiet && ::isatty(2);
  // Random prompts for a --duration run: 4,096 after the warm-up's, repeated from the first once
  // used up (a repeat may find its blocks still in the server's prefix cache); fewer for long
  // prompts, so that what is built before the run stays under 2^24 tokens (about 100 MB).
  const size_t per_prompt = size_t(std::max(1, a.random.input_len + a.random.prefix_len));
  const size_t for_duration = std::clamp<size_t>((size_t{1} << 24) / per_prompt, 1, 4096);
  const size_t total = size_t(o.warmup) + (o.num_requests > 0 ? size_t(o.num_requests) : for_duration);
  if (!a.dataset.empty()) {
    auto w = loadgen::LoadWorkloadFile(a.dataset, a.random.output_len);
    if (!w.ok()) return Fail("bench", w.status());
    for (const auto& m : w->bad_line_messages) fmt::print(stderr, "latdoc bench: skipped {}\n", m);
    if (w->bad_lines > w->bad_line_messages.size())
      fmt::print(stderr, "latdoc bench: ... {} bad entries skipped in all\n", w->bad_lines);
    o.prompts = std::move(w->prompts);
  } else {
    if (Status st = loadgen::ValidateRandomOptions(a.random); !st.ok()) return Fail("bench", st);
    a.random.seed = o.seed;
    a.random.token_ids = a.random.token_ids && o.endpoint == loadgen::Endpoint::kCompletions;
    o.prompts = loadgen::RandomPrompts(a.random, total);
  }
  // Output paths are checked before any load is sent (no run lost to a typo).
  for (const std::string* p : {&a.json_out, &a.requests_out}) {
    if (p->empty()) continue;
    if (Status st = CheckOutputPath(*p); !st.ok()) return Fail("bench", st);
  }
  loadgen::BenchRun unreachable;
  auto run = loadgen::RunBench(o, &unreachable);
  if (!run.ok()) {
    if (run.status().code() == StatusCode::kInvalidArgument) return Fail("bench", run.status());
    // Nothing could be run against: the results file still says why (and, when requests were
    // sent, how each one failed), and the failure line counts them; exit 3.
    loadgen::BenchSummary s = loadgen::SummarizeRun(unreachable, o, ro);
    s.json["error"] = run.status().message();
    if (!a.json_out.empty()) {
      if (Status st = WriteFileAtomic(a.json_out, JsonText(s.json, 2) + "\n"); !st.ok())
        return Fail("bench", st);
    }
    if (s.failures.failed > 0) fmt::print(stderr, "latdoc bench: {}\n", s.failures.Text());
    return Fail("bench", run.status());
  }
  loadgen::BenchSummary s = loadgen::SummarizeRun(*run, o, ro);
  if (!a.quiet) fmt::print("{}", s.text);
  if (!a.json_out.empty()) {
    if (Status st = WriteFileAtomic(a.json_out, JsonText(s.json, 2) + "\n"); !st.ok()) {
      return Fail("bench", st);
    }
  }
  if (!a.requests_out.empty()) {
    if (Status st = WriteFileAtomic(a.requests_out, loadgen::RequestsJsonl(*run)); !st.ok())
      return Fail("bench", st);
  }
  return ReportBenchOutcome(*run, s, ro, a.json_out);
}

}  // namespace

Command RegisterBench(CLI::App& root) {
  auto* app = root.add_subcommand(
      "bench",
      "Streaming load against an OpenAI-compatible server: exact TTFT/TPOT/ITL/E2EL,\n"
      "throughput, goodput, failures by reason, and TTFT split by the server's /metrics.");
  auto a = std::make_shared<BenchArgs>();
  loadgen::BenchOptions& o = a->o;
  app->add_option("--url", o.url, "Base URL of the server")->required();
  app->add_option("--metrics-url", o.metrics_url, "Where /metrics is (default: --url)");
  app->add_option("--endpoint", a->endpoint, "completions | chat")->capture_default_str();
  app->add_option("--model", o.model, "Model name (default: the first of /v1/models)");
  app->add_option("--api-key-env", a->api_key_env,
                  "Environment variable holding the API key (never printed)")->capture_default_str();
  auto* load = "Load";
  app->add_option("--concurrency", o.concurrency, "Requests in flight (closed loop)")
      ->group(load)->capture_default_str();
  app->add_option("--request-rate", o.request_rate, "Requests per second (open loop)")->group(load);
  app->add_option("--burstiness", o.burstiness, "Gamma shape of inter-arrivals (1 = Poisson)")
      ->group(load)->capture_default_str();
  app->add_option("--max-concurrency", o.max_concurrency, "Open loop: cap on requests in flight")
      ->group(load);
  app->add_option("--num-requests", o.num_requests, "Requests to send (default 200)")->group(load);
  app->add_option("--duration", o.duration_s, "Seconds to send for")->group(load);
  app->add_option("--warmup", o.warmup, "Requests sent first, not counted")->group(load);
  app->add_flag("--no-keepalive", a->no_keepalive, "A new connection per request")->group(load);
  app->add_flag("--insecure", o.client.insecure, "Skip TLS certificate verification")->group(load);
  app->add_option("--connect-timeout", a->connect_timeout_s, "Seconds")
      ->check(CLI::Range(0.001, 864000.0))->group(load)->capture_default_str();
  app->add_option("--first-byte-timeout", a->first_byte_timeout_s, "Seconds")
      ->check(CLI::Range(0.001, 864000.0))->group(load)->capture_default_str();
  app->add_option("--idle-timeout", a->idle_timeout_s, "Seconds between stream reads")
      ->check(CLI::Range(0.001, 864000.0))->group(load)->capture_default_str();
  app->add_option("--request-timeout", a->request_timeout_s, "Seconds for a whole request, stream included (0: none)")
      ->check(CLI::Range(0.0, 864000.0))->group(load)->capture_default_str();
  auto* wl = "Workload";
  app->add_option("--input-len", a->random.input_len, "Prompt tokens")->group(wl)->capture_default_str();
  app->add_option("--output-len", a->random.output_len, "Tokens to generate")->group(wl)->capture_default_str();
  app->add_option("--range-ratio", a->random.range_ratio, "Length spread, [0, 1)")->group(wl)->capture_default_str();
  app->add_option("--prefix-len", a->random.prefix_len, "Shared prefix tokens")->group(wl)->capture_default_str();
  app->add_option("--seed", o.seed, "Seed")->group(wl)->capture_default_str();
  app->add_flag("--token-ids", a->random.token_ids,
                "Send prompts as token ids (exact lengths; completions only)")->group(wl);
  app->add_option("--dataset", a->dataset, "Prompts from a JSONL or ShareGPT JSON file")->group(wl);
  app->add_flag("--no-ignore-eos", a->no_ignore_eos, "Let the model stop early")->group(wl);
  auto* out = "Results";
  app->add_option("--slo", a->slo, "ttft:MS,tpot:MS,e2el:MS[,percent:P] (exit 1 when missed)")->group(out);
  app->add_option("--max-error-rate", a->max_error_rate, "Fraction of failures allowed (exit 1 above)")->group(out);
  app->add_option("--json", a->json_out, "Write the results as JSON")->group(out);
  app->add_option("--save-requests", a->requests_out, "Write one JSON line per request")->group(out);
  app->add_option("--scrape-interval", o.scrape_interval_s, "Seconds between /metrics scrapes")
      ->group(out)->capture_default_str();
  app->add_flag("--quiet", a->quiet, "No terminal summary or progress")->group(out);
  return {app, [a] { return RunBenchCommand(*a); }};
}

}  // namespace latdoc::cli
