// What the files of `latdoc bench` share, private to src/cli: the parsed arguments (BenchArgs),
// the vLLM-compatible flags mapped onto them (BenchFlags) and the steps of the command.
//   cmd_bench.cc        the flags (RegisterBench)
//   cmd_bench_flags.cc  vLLM's flags onto BenchArgs; --save-result's file name
//   cmd_bench_shard.cc  --shard and --start-at
//   cmd_bench_run.cc    the run: prompts, runs, results, exit code; multi-turn sessions
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/status.h"
#include "cli/flags.h"
#include "loadgen/results.h"
#include "loadgen/runner.h"
#include "loadgen/sessions.h"
#include "loadgen/shard.h"
#include "loadgen/workload.h"

namespace latdoc::cli::bench_internal {

struct BenchArgs {
  loadgen::BenchOptions o;
  loadgen::RandomWorkloadOptions random;
  std::string endpoint = "completions";
  std::string dataset;
  std::string api_key_env = "OPENAI_API_KEY";
  std::string slo;
  double max_error_rate = -1;
  std::string json_out, requests_out;
  ClientFlags client;
  bool no_ignore_eos = false;
  bool quiet = false;
  std::string shard, start_at;  // --shard I/N, --start-at TIME (bench.md, "Shards")
  int num_runs = 1;             // --num-runs: the same load N times, run-to-run variation
  // --dataset-name multi-turn (loadgen/sessions.h): synthetic sessions, or a session file.
  bool multi_turn = false;
  std::string session_file;
  loadgen::MultiTurnOptions sessions;
  double think_time_s = 0;
  std::string tools_file;  // --tools FILE: a JSON array of tool definitions (chat)
  // --dataset-name replay (loadgen/replay.h): the trace and --replay-speed.
  bool replay = false;
  double replay_speed = 1.0;
};

// What `vllm bench serve` users type, and the flags every command shares, mapped onto
// BenchArgs before the run. The run itself reads only BenchArgs.
struct BenchFlags {
  ServerFlags server;
  std::string dataset_name = "random", dataset_path;
  std::vector<std::string> goodput;
  bool ignore_eos = false;
  bool save_result = false;
  std::string result_dir, result_filename;
  std::string percentile_metrics, metric_percentiles;
  std::string served_model_name, tokenizer, label;
  bool trust_remote_code = false;
  std::string backend_label;   // vLLM's file name starts with it
  std::string pending_result;  // --save-result without a name: written here, renamed after
  CLI::Option *concurrency = nullptr, *max_concurrency = nullptr, *request_rate = nullptr,
              *dataset_name_opt = nullptr, *num_sessions = nullptr, *turns = nullptr,
              *think_time = nullptr, *replay_speed = nullptr;
};

// --shard and --start-at, checked and applied to the options before any prompt is made.
struct ShardPlan {
  bool active = false;  // --shard given
  loadgen::ShardSpec spec;
  std::optional<int64_t> start_at_unix_ns;  // --start-at
  int64_t num_prompts = 0;                  // the whole load's; 0: a --duration run
  nlohmann::ordered_json block;             // the result's "shard", less what the run decides
};

// Maps BenchFlags onto BenchArgs; an exit code when the flags are bad (the message printed).
std::optional<int> ResolveBenchFlags(BenchArgs& a, BenchFlags& f);

// After the run: the hidden file of --save-result gets vLLM's name. Returns `rc`, or
// kExitCannotRun when the rename failed after a run that exited 0.
int FinishSaveResult(const BenchFlags& f, int rc);

// The whole command after the flags are resolved; returns its exit code.
int RunBenchCommand(BenchArgs& a);

// The whole load as the result's shard.load says it: every shard of one load says the same
// (`latdoc merge` refuses shards whose loads differ). Then `a.o` becomes this shard's part.
StatusOr<ShardPlan> PlanShard(BenchArgs& a);

// Sleeps until the wall clock reads --start-at (CLOCK_REALTIME, absolute: a step of the clock
// moves the wake-up with it), so that shards on other machines start with this one. A time
// already past starts at once, and says so: the shards will overlap less.
void WaitUntil(const ShardPlan& p, bool quiet);

// The shard's additions to the result: when it ran on the wall clock, and every request.
void AddShardResult(ShardPlan& p, const loadgen::BenchRun& run, nlohmann::ordered_json& json);

}  // namespace latdoc::cli::bench_internal
