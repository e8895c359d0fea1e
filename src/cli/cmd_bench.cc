// latdoc bench: streaming load against an OpenAI-compatible server (loadgen/runner.h).
// The flags are here; cmd_bench_flags.cc resolves them and cmd_bench_run.cc runs the command
// (cmd_bench_internal.h).
#include <memory>

#include "cli/cmd_bench_internal.h"
#include "cli/command.h"
#include "cli/flags.h"

namespace latdoc::cli {
namespace {

using bench_internal::BenchArgs;
using bench_internal::BenchFlags;

// Load: the loop, its size and length, shards, and the client.
void AddBenchLoadFlags(CLI::App* app, BenchArgs& a, BenchFlags& f) {
  loadgen::BenchOptions& o = a.o;
  auto* load = "Load";
  f.concurrency =
      app->add_option("--concurrency,-c", o.concurrency, "Requests in flight (closed loop)")
          ->check(Number(Bound::kPositive))
          ->group(load)
          ->capture_default_str();
  f.request_rate = app->add_option("--request-rate", o.request_rate,
                                   "Requests per second (open loop; inf: every request at once)")
                       ->check(Number(Bound::kPositiveOrInf))
                       ->group(load);
  app->add_option("--burstiness", o.burstiness, "Gamma shape of inter-arrivals (1 = Poisson)")
      ->group(load)->capture_default_str();
  f.max_concurrency =
      app->add_option("--max-concurrency", o.max_concurrency,
                      "With --request-rate: cap on requests in flight; without (or with "
                      "inf): the concurrency of a closed loop, as in vLLM")
          ->check(Number(Bound::kPositive))
          ->group(load);
  app->add_option("--num-requests,-n,--num-prompts", o.num_requests, "Requests to send (default: 200)")
      ->check(Number(Bound::kPositive))->group(load);
  app->add_option("--duration", o.duration_s, "How long to send for: 30s, 5m (a bare number is seconds)")
      ->type_name("DURATION")->transform(Seconds(Bound::kPositive))->group(load);
  app->add_option("--warmup", o.warmup, "Requests sent first, not counted")->group(load)->capture_default_str();
  app->add_option("--shard", a.shard,
                  "Send shard I (from 0) of N of the load: 1/N of the concurrency or rate and of "
                  "--num-prompts, its own slice of the prompts; the result keeps every request "
                  "for latdoc merge")
      ->type_name("I/N")
      ->group(load);
  app->add_option("--start-at", a.start_at,
                  "Start at this wall-clock time, as the other shards: RFC 3339 "
                  "(2026-12-05T03:00:00Z), Unix seconds, or now+10s")
      ->type_name("TIME")
      ->group(load);
  AddClientFlags(app, a.client, o.client.insecure, load);
}

// Workload: the prompts (random, a dataset, sessions or a replayed trace).
void AddBenchWorkloadFlags(CLI::App* app, BenchArgs& a, BenchFlags& f) {
  loadgen::BenchOptions& o = a.o;
  auto* wl = "Workload";
  app->add_option("--input-len,--random-input-len", a.random.input_len, "Prompt tokens")
      ->group(wl)
      ->capture_default_str();
  app->add_option("--output-len,--random-output-len", a.random.output_len, "Tokens to generate")
      ->group(wl)
      ->capture_default_str();
  app->add_option("--range-ratio,--random-range-ratio", a.random.range_ratio,
                  "Length spread, [0, 1)")
      ->group(wl)
      ->capture_default_str();
  app->add_option("--prefix-len,--random-prefix-len", a.random.prefix_len, "Shared prefix tokens")
      ->group(wl)
      ->capture_default_str();
  app->add_option("--seed", o.seed, "Seed")->group(wl)->capture_default_str();
  app->add_flag("--token-ids", a.random.token_ids,
                "Send prompts as token ids (exact lengths; completions only)")
      ->group(wl);
  app->add_option("--dataset", a.dataset, "Prompts from a JSONL or ShareGPT JSON file")->group(wl);
  f.dataset_name_opt =
      app->add_option(
             "--dataset-name", f.dataset_name,
             "As vLLM: random, sharegpt or custom (JSONL with \"prompt\"), the last two "
             "with --dataset-path; or multi-turn: sessions that resend their history "
             "(synthetic, or a session file as --dataset-path); or replay: a timed request "
             "log as --dataset-path (docs/workloads.md)")
          ->check(CLI::Validator(
              [](std::string& s) -> std::string {
                if (s == "random" || s == "sharegpt" || s == "custom" || s == "multi-turn" ||
                    s == "replay")
                  return "";
                return s + ": not supported; latdoc reads random, sharegpt, custom, multi-turn or replay";
              },
              ""))
          ->group(wl)
          ->capture_default_str();
  app->add_option("--dataset-path", f.dataset_path,
                  "The file of --dataset-name sharegpt, custom or multi-turn (JSONL of sessions)")
      ->group(wl);
  f.num_sessions = app->add_option("--num-sessions", a.sessions.num_sessions,
                                   "multi-turn: concurrent sessions (one stream each)")
                       ->check(Number(Bound::kPositive))
                       ->group(wl)
                       ->capture_default_str();
  f.turns = app->add_option("--turns", a.sessions.turns, "multi-turn: turns per session")
                ->check(Number(Bound::kPositive))
                ->group(wl)
                ->capture_default_str();
  f.think_time =
      app->add_option("--think-time", a.think_time_s,
                      "multi-turn: pause between a turn's answers and the next turn: 2s, 500ms")
          ->type_name("DURATION")
          ->transform(Seconds(Bound::kNonNegative))
          ->group(wl);
  f.replay_speed =
      app->add_option("--replay-speed", a.replay_speed,
                      "replay: how many times faster than the trace's times to send (2: "
                      "twice as fast)")
          ->group(wl);
  app->add_option("--tools", a.tools_file,
                  "Chat: a JSON file with an array of tool definitions, sent as every request's "
                  "\"tools\" (tool-call streams are counted and timed)")
      ->group(wl);
  app->add_flag("--ignore-eos", f.ignore_eos,
                "Generate --output-len tokens whatever the model says (the default)")
      ->group(wl);
  app->add_flag("--no-ignore-eos", a.no_ignore_eos, "Let the model stop early")->group(wl);
}

// Results: SLOs, the files written, what the summary shows.
void AddBenchResultFlags(CLI::App* app, BenchArgs& a, BenchFlags& f) {
  loadgen::BenchOptions& o = a.o;
  auto* out = "Results";
  app->add_option("--slo", a.slo, "ttft:MS,tpot:MS,e2el:MS[,percent:P] (exit 1 when missed)")
      ->group(out);
  app->add_option("--goodput", f.goodput, "As vLLM: ttft:MS tpot:MS e2el:MS, the same as --slo")
      ->group(out);
  app->add_option("--max-error-rate", a.max_error_rate,
                  "Fraction of failures allowed (exit 1 above)")
      ->group(out);
  app->add_option("--json", a.json_out, "Write the results as JSON")->group(out);
  app->add_option("--num-runs", a.num_runs,
                  "Run the same load N times; the last run's results, with the coefficient of "
                  "variation of each headline metric over the N (JSON \"runs\")")
      ->check(Number(Bound::kPositive))
      ->group(out)
      ->capture_default_str();
  app->add_flag("--save-result", f.save_result,
                "As vLLM: write the JSON to --result-dir, named --result-filename or "
                "BACKEND-RATEqps-MODEL-DATE.json")
      ->group(out);
  app->add_option("--result-dir", f.result_dir,
                  "Folder of --save-result (default: the current one)")
      ->group(out);
  app->add_option("--result-filename", f.result_filename, "File name of --save-result")->group(out);
  app->add_option("--label", f.label,
                  "As vLLM: the start of --save-result's file name (default: the backend)")
      ->group(out);
  app->add_option("--percentile-metrics", f.percentile_metrics,
                  "Metrics shown with percentiles, as vLLM: ttft,tpot,itl,e2el (default: all four)")
      ->group(out);
  app->add_option(
         "--metric-percentiles", f.metric_percentiles,
         "Percentiles shown, as vLLM: e.g. 50,90,99 (default: 99 in the summary; 90,95,99,99.9 "
         "in the JSON)")
      ->group(out);
  app->add_option("--save-requests", a.requests_out, "Write one JSON line per request")->group(out);
  app->add_option("--scrape-interval", o.scrape_interval_s, "Between /metrics scrapes: seconds, or 500ms")
      ->type_name("DURATION")->transform(Seconds(Bound::kAny))->group(out)->capture_default_str();
}

}  // namespace

Command RegisterBench(CLI::App& root) {
  auto* app = root.add_subcommand(
      "bench",
      "Streaming load against an OpenAI-compatible server: exact TTFT/TPOT/ITL/E2EL,\n"
      "throughput, goodput, failures by reason, and TTFT split by the server's /metrics.\n"
      "Takes `vllm bench serve`'s flags too (--base-url, --num-prompts, --random-input-len, ...).");
  auto a = std::make_shared<BenchArgs>();
  auto f = std::make_shared<BenchFlags>();
  loadgen::BenchOptions& o = a->o;
  f->server.url = &o.url;
  f->server.endpoint = &a->endpoint;
  f->server.api_key_env = &a->api_key_env;
  AddServerFlags(app, f->server);
  app->add_option("--metrics-url", o.metrics_url, "Where /metrics is (default: --url)");
  app->add_option("--model", o.model, "Model name (default: the first of /v1/models)");
  app->add_option("--served-model-name", f->served_model_name,
                  "As vLLM: the model the requests name, when --model names the tokenizer's");
  app->add_option("--tokenizer", f->tokenizer,
                  "Accepted for vLLM's command lines; not needed (a note says so)");
  app->add_flag("--trust-remote-code", f->trust_remote_code,
                "Accepted for vLLM's command lines; not needed");
  AddBenchLoadFlags(app, *a, *f);
  AddBenchWorkloadFlags(app, *a, *f);
  AddBenchResultFlags(app, *a, *f);
  AddQuietFlag(app, &a->quiet);
  AddNoColorFlag(app);
  return {app, [a, f] {
            if (auto rc = bench_internal::ResolveBenchFlags(*a, *f)) return *rc;
            return bench_internal::FinishSaveResult(*f, bench_internal::RunBenchCommand(*a));
          }};
}

}  // namespace latdoc::cli
