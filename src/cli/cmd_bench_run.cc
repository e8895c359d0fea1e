// latdoc bench's run (cmd_bench_internal.h): the prompts, the runs, the results written and
// the exit code; and bench --dataset-name multi-turn.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include <fmt/core.h>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/cmd_bench_internal.h"
#include "cli/command.h"
#include "loadgen/replay.h"
#include "loadgen/results.h"
#include "loadgen/runner.h"
#include "loadgen/sessions.h"
#include "loadgen/shard.h"
#include "loadgen/stream_kinds.h"
#include "loadgen/validation.h"
#include "loadgen/workload.h"
#include "rules/finding.h"
#include "rules/workload_rules.h"

namespace latdoc::cli::bench_internal {
namespace {

// --tools FILE into the options: a JSON array, for the chat endpoint.
Status LoadTools(BenchArgs& a) {
  if (a.tools_file.empty()) return Status::Ok();
  if (a.endpoint != "chat") return InvalidArgument("--tools goes with --endpoint chat");
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(a.tools_file));
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array() || j.empty())
    return InvalidArgument(a.tools_file +
                           ": --tools expects a non-empty JSON array of tool definitions");
  a.o.tools_json = j.dump();
  return Status::Ok();
}

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
    fmt::print(stderr,
               "latdoc bench: every request failed: the server could not serve this load\n");
    return kExitCannotRun;
  }
  for (const std::string& p : s.problems) fmt::print(stderr, "latdoc bench: {}\n", p);
  return s.problems.empty() ? kExitOk : kExitFindings;
}

// The checks of BenchArgs the flags do not make; --num-requests' default (200 without
// --duration).
Status CheckBenchArgs(BenchArgs& a) {
  loadgen::BenchOptions& o = a.o;
  if (a.endpoint == "completions")
    o.endpoint = loadgen::Endpoint::kCompletions;
  else if (a.endpoint == "chat")
    o.endpoint = loadgen::Endpoint::kChat;
  else
    return InvalidArgument("--endpoint must be completions or chat");
  if (o.num_requests < 0) return InvalidArgument("--num-requests must not be negative");
  if (o.warmup < 0) return InvalidArgument("--warmup must not be negative");
  if (a.max_error_rate != -1 && !(a.max_error_rate >= 0 && a.max_error_rate <= 1))
    return InvalidArgument("--max-error-rate must be in [0, 1]");
  if (o.num_requests == 0 && o.duration_s <= 0) o.num_requests = 200;
  return Status::Ok();
}

// The API key, the client's flags, the threads, EOS and the progress line into the options.
void ApplyRunOptions(BenchArgs& a) {
  loadgen::BenchOptions& o = a.o;
  if (const char* key = std::getenv(a.api_key_env.c_str())) o.api_key = key;
  a.client.Apply(o.client);
  o.threads = a.client.threads;
  o.ignore_eos = !a.no_ignore_eos;
  o.progress = !a.quiet && ::isatty(2);
}

// bench --dataset-name replay: the trace's requests and times into the options, and the
// result's "replay" block (less the send lag, known after the run).
std::optional<int> LoadReplay(BenchArgs& a, const ShardPlan& shard,
                              std::optional<nlohmann::ordered_json>& replay_block) {
  loadgen::BenchOptions& o = a.o;
  auto refuse = [](const std::string& what) {
    return Fail("bench", InvalidArgument(what + " is not used with --dataset-name replay: the "
                                                "trace's times set the load"));
  };
  if (shard.active || shard.start_at_unix_ns)
    return refuse(shard.active ? "--shard" : "--start-at");
  if (o.warmup > 0) return refuse("--warmup");
  if (o.duration_s > 0) return refuse("--duration");
  if (!(a.replay_speed > 0) || !std::isfinite(a.replay_speed))
    return Fail("bench", InvalidArgument("--replay-speed must be a positive number"));
  auto w = loadgen::LoadReplayFile(a.dataset, a.random.output_len);
  if (!w.ok()) return Fail("bench", w.status());
  for (const auto& m : w->bad_line_messages) fmt::print(stderr, "latdoc bench: skipped {}\n", m);
  if (w->bad_lines > w->bad_line_messages.size())
    fmt::print(stderr, "latdoc bench: ... {} bad lines skipped in all\n", w->bad_lines);
  o.arrival_offsets_ns = loadgen::ScaleOffsets(w->offsets_ns, a.replay_speed);
  o.prompts = std::move(w->prompts);
  o.num_requests = int(o.prompts.size());
  o.first_prompt = 0;
  o.request_rate = std::numeric_limits<double>::infinity();
  replay_block = nlohmann::ordered_json{{"file", a.dataset},
                                        {"speed", a.replay_speed},
                                        {"requests", o.prompts.size()},
                                        {"span_s", double(o.arrival_offsets_ns.back()) / 1e9}};
  return std::nullopt;
}

// The prompts of the run (a replayed trace, a dataset file or random ones), and a shard's
// first prompt and arrival seed.
std::optional<int> MakePrompts(BenchArgs& a, ShardPlan& shard,
                               std::optional<nlohmann::ordered_json>& replay_block) {
  loadgen::BenchOptions& o = a.o;
  // Random prompts for a --duration run: 4,096 after the warm-up's, repeated from the first once
  // used up (a repeat may find its blocks still in the server's prefix cache); fewer for long
  // prompts, so that what is built before the run stays under 2^24 tokens (about 100 MB).
  const size_t per_prompt = size_t(std::max(1, a.random.input_len + a.random.prefix_len));
  const size_t for_duration = std::clamp<size_t>((size_t{1} << 24) / per_prompt, 1, 4096);
  const size_t total =
      size_t(o.warmup) + (o.num_requests > 0 ? size_t(o.num_requests) : for_duration);
  // A shard's measured prompts are the unsharded run's from its offset on (loadgen/shard.h).
  const size_t first_prompt = !shard.active ? 0
                              : shard.num_prompts > 0
                                  ? size_t(loadgen::OffsetOf(shard.num_prompts, shard.spec))
                                  : size_t(shard.spec.index) * for_duration;
  if (a.replay) {
    if (auto rc = LoadReplay(a, shard, replay_block)) return rc;
  } else if (!a.dataset.empty()) {
    auto w = loadgen::LoadWorkloadFile(a.dataset, a.random.output_len);
    if (!w.ok()) return Fail("bench", w.status());
    for (const auto& m : w->bad_line_messages) fmt::print(stderr, "latdoc bench: skipped {}\n", m);
    if (w->bad_lines > w->bad_line_messages.size())
      fmt::print(stderr, "latdoc bench: ... {} bad entries skipped in all\n", w->bad_lines);
    o.prompts = std::move(w->prompts);
    o.first_prompt = first_prompt % o.prompts.size();
  } else {
    if (Status st = loadgen::ValidateRandomOptions(a.random); !st.ok()) return Fail("bench", st);
    a.random.seed = o.seed;
    a.random.token_ids = a.random.token_ids && o.endpoint == loadgen::Endpoint::kCompletions;
    a.random.first = first_prompt;
    o.prompts = loadgen::RandomPrompts(a.random, total);
  }
  if (shard.active) {
    shard.block["part"]["first_prompt"] = first_prompt;
    o.seed = loadgen::ShardSeed(o.seed, shard.spec);  // the arrivals' seed; the prompts kept theirs
    shard.block["part"]["arrival_seed"] = o.seed;
  }
  return std::nullopt;
}

// --num-runs N: runs 1..N-1, summarized into `earlier`; an exit code when one fails or a signal
// stops it.
std::optional<int> RunEarlierRuns(const BenchArgs& a, const ShardPlan& shard,
                                  const loadgen::ResultOptions& ro,
                                  std::vector<loadgen::BenchSummary>& earlier) {
  const loadgen::BenchOptions& o = a.o;
  // --num-runs N: runs 1..N-1 first, summarized; the last run is written out as usual, with the
  // run-to-run variation of its headline metrics (loadgen/validation.h, AddRunVariation).
  if (a.num_runs > 1 && shard.active)
    return Fail("bench", InvalidArgument("--num-runs cannot be combined with --shard"));
  for (int i = 1; i < a.num_runs; ++i) {
    if (!a.quiet) fmt::print(stderr, "latdoc bench: run {} of {}\n", i, a.num_runs);
    auto r = loadgen::RunBench(o);
    if (!r.ok()) {
      return Fail("bench", Status(r.status().code(), fmt::format("run {} of {}: {}", i, a.num_runs,
                                                                 r.status().message())));
    }
    if (r->stop_signal != 0) {
      fmt::print(stderr, "latdoc bench: run {} of {}: {}: no results written\n", i, a.num_runs,
                 r->partial_reason);
      return ExitCodeForSignal(r->stop_signal);
    }
    earlier.push_back(loadgen::SummarizeRun(*r, o, ro));
  }
  if (a.num_runs > 1 && !a.quiet)
    fmt::print(stderr, "latdoc bench: run {} of {}\n", a.num_runs, a.num_runs);
  return std::nullopt;
}

// The target could not be run against (`status`): writes what is known and returns the exit
// code.
int ReportUnreachable(const BenchArgs& a, ShardPlan& shard, const loadgen::ResultOptions& ro,
                      const loadgen::BenchRun& unreachable, const Status& status) {
  const loadgen::BenchOptions& o = a.o;
  if (status.code() == StatusCode::kInvalidArgument) return Fail("bench", status);
  // Nothing could be run against: the results file still says why (and, when requests were
  // sent, how each one failed), and the failure line counts them; exit 3.
  loadgen::BenchSummary s = loadgen::SummarizeRun(unreachable, o, ro);
  s.json["error"] = status.message();
  // A shard whose requests were sent and all failed to connect is still a shard of the load:
  // the merge counts its failures.
  const bool ran = shard.active && !unreachable.records.empty();
  if (ran) AddShardResult(shard, unreachable, s.json);
  if (!a.json_out.empty()) {
    const std::string text = ran ? loadgen::ShardResultText(s.json) : JsonText(s.json, 2) + "\n";
    if (Status st = WriteFileAtomic(a.json_out, text); !st.ok()) return Fail("bench", st);
  }
  if (s.failures.failed > 0) fmt::print(stderr, "latdoc bench: {}\n", s.failures.Text());
  return Fail("bench", status);
}

// The result's "replay" block, with the latest send against the trace's schedule.
void AddReplayResult(const loadgen::BenchRun& run, double replay_speed,
                     nlohmann::ordered_json replay_block, loadgen::BenchSummary& s) {
  // How late the sends were against the trace's schedule (client queue and timer slip).
  int64_t lag = 0;
  for (const auto& r : run.records)
    if (r.sent_ns >= 0) lag = std::max(lag, r.sent_ns - r.scheduled_ns);
  replay_block["max_send_lag_ms"] = double(lag) / 1e6;
  s.text += fmt::format(
      "Replay: {} requests over {:.3f} s of trace at {}x; latest send {:.2f} ms after its time\n",
      replay_block["requests"].get<size_t>(), replay_block["span_s"].get<double>(), replay_speed,
      double(lag) / 1e6);
  s.json["replay"] = std::move(replay_block);
}

// The earlier runs of --num-runs: their problems, and the run-to-run variation of the last.
void AddEarlierRuns(const std::vector<loadgen::BenchSummary>& earlier, int num_runs,
                    loadgen::BenchSummary& s) {
  std::vector<nlohmann::ordered_json> runs;
  for (size_t i = 0; i < earlier.size(); ++i) {
    runs.push_back(earlier[i].json);
    for (const std::string& p : earlier[i].problems)
      s.problems.push_back(fmt::format("run {} of {}: {}", i + 1, num_runs, p));
  }
  runs.push_back(s.json);
  s.text += loadgen::AddRunVariation(runs, &s.json);
  s.json["problems"] = s.problems;
}

// Writes --json and --save-requests; an exit code when a write fails.
std::optional<int> WriteBenchResults(const BenchArgs& a, bool shard_active,
                                     const loadgen::BenchRun& run, const loadgen::BenchSummary& s) {
  if (!a.json_out.empty()) {
    const std::string text =
        shard_active ? loadgen::ShardResultText(s.json) : JsonText(s.json, 2) + "\n";
    if (Status st = WriteFileAtomic(a.json_out, text); !st.ok()) {
      return Fail("bench", st);
    }
  }
  if (!a.requests_out.empty()) {
    if (Status st = WriteFileAtomic(a.requests_out, loadgen::RequestsJsonl(run)); !st.ok())
      return Fail("bench", st);
  }
  return std::nullopt;
}

// The result's "multi_turn" block and its findings (loadgen::ReportSessions), for a session
// run; the terminal's lines are appended to `text`.
void AddMultiTurnResult(const BenchArgs& a, const loadgen::SessionWorkload& w,
                        const loadgen::BenchRun& run, nlohmann::ordered_json& json,
                        std::string& text) {
  loadgen::SessionReport r = loadgen::ReportSessions(
      w, run, a.think_time_s, a.session_file.empty() ? "synthetic" : a.session_file,
      a.session_file.empty() ? &a.sessions : nullptr);
  text += r.text;
  json["multi_turn"] = std::move(r.json);
  nlohmann::ordered_json fj = nlohmann::ordered_json::array();
  for (const auto& f : rules::MultiTurnFindings(r.facts)) {
    text += fmt::format("{}: {}: {}\n  advice: {}\n", rules::SeverityName(f.severity), f.id,
                        f.title, f.advice);
    fj.push_back(nlohmann::ordered_json::parse(rules::ToJson(f).dump()));
  }
  json["findings"] = std::move(fj);
}

// bench --dataset-name multi-turn: the sessions turn by turn (loadgen/sessions.h).
int RunSessionsCommand(BenchArgs& a, const loadgen::SloSpec& slo) {
  loadgen::BenchOptions& o = a.o;
  auto refuse = [](const std::string& what) {
    return Fail(
        "bench",
        InvalidArgument(what + " is not used with --dataset-name multi-turn: the "
                               "sessions set the load (one stream per session, turn by turn)"));
  };
  if (!a.shard.empty()) return refuse("--shard");
  if (!a.start_at.empty()) return refuse("--start-at");
  if (o.request_rate > 0) return refuse("--request-rate");
  if (o.duration_s > 0) return refuse("--duration");
  if (o.warmup > 0) return refuse("--warmup");
  loadgen::ResultOptions ro;
  ro.slo = slo;
  ro.max_error_rate = a.max_error_rate >= 0 ? a.max_error_rate : 0.0;
  ApplyRunOptions(a);
  loadgen::SessionWorkload w;
  if (!a.session_file.empty()) {
    auto f = loadgen::LoadSessionFile(a.session_file, a.random.output_len);
    if (!f.ok()) return Fail("bench", f.status());
    for (const auto& m : f->bad_line_messages) fmt::print(stderr, "latdoc bench: skipped {}\n", m);
    if (f->bad_lines > f->bad_line_messages.size())
      fmt::print(stderr, "latdoc bench: ... {} bad lines skipped in all\n", f->bad_lines);
    w = std::move(*f);
  } else {
    a.sessions.system_len = a.random.prefix_len;
    a.sessions.input_len = a.random.input_len;
    a.sessions.output_len = a.random.output_len;
    a.sessions.seed = o.seed;
    if (Status st = loadgen::ValidateMultiTurnOptions(a.sessions); !st.ok())
      return Fail("bench", st);
    w = loadgen::SyntheticSessions(a.sessions);
  }
  for (const std::string* p : {&a.json_out, &a.requests_out}) {
    if (p->empty()) continue;
    if (Status st = CheckOutputPath(*p); !st.ok()) return Fail("bench", st);
  }
  size_t total = 0;
  for (const auto& s : w.sessions) total += s.size();
  o.concurrency = int(w.sessions.size());
  o.num_requests = int(total);
  loadgen::BenchRun unreachable;
  auto run = loadgen::RunSessions(o, w, a.think_time_s, &unreachable);
  if (!run.ok()) {
    if (run.status().code() == StatusCode::kInvalidArgument) return Fail("bench", run.status());
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
  loadgen::AddStreamKinds(*run, s.json, s.text);
  loadgen::AddSpecDecode(*run, s.json, s.text);
  AddMultiTurnResult(a, w, *run, s.json, s.text);
  if (!a.quiet) fmt::print("{}", s.text);
  if (!a.json_out.empty()) {
    if (Status st = WriteFileAtomic(a.json_out, JsonText(s.json, 2) + "\n"); !st.ok())
      return Fail("bench", st);
  }
  if (!a.requests_out.empty()) {
    if (Status st = WriteFileAtomic(a.requests_out, loadgen::RequestsJsonl(*run)); !st.ok())
      return Fail("bench", st);
  }
  return ReportBenchOutcome(*run, s, ro, a.json_out);
}

}  // namespace

int RunBenchCommand(BenchArgs& a) {
  loadgen::BenchOptions& o = a.o;
  if (Status st = CheckBenchArgs(a); !st.ok()) return Fail("bench", st);
  auto slo = loadgen::ParseSlo(a.slo);
  if (!slo.ok()) return Fail("bench", slo.status());
  if (Status st = LoadTools(a); !st.ok()) return Fail("bench", st);
  if (a.multi_turn) return RunSessionsCommand(a, *slo);
  auto shard = PlanShard(a);
  if (!shard.ok()) return Fail("bench", shard.status());
  loadgen::ResultOptions ro;
  ro.slo = *slo;
  // Any failed request fails the run unless --max-error-rate tolerates it.
  ro.max_error_rate = a.max_error_rate >= 0 ? a.max_error_rate : 0.0;
  ApplyRunOptions(a);
  std::optional<nlohmann::ordered_json> replay_block;
  if (auto rc = MakePrompts(a, *shard, replay_block)) return *rc;
  // Output paths are checked before any load is sent (no run lost to a typo).
  for (const std::string* p : {&a.json_out, &a.requests_out}) {
    if (p->empty()) continue;
    if (Status st = CheckOutputPath(*p); !st.ok()) return Fail("bench", st);
  }
  if (shard->start_at_unix_ns) WaitUntil(*shard, a.quiet);
  std::vector<loadgen::BenchSummary> earlier;
  if (auto rc = RunEarlierRuns(a, *shard, ro, earlier)) return *rc;
  loadgen::BenchRun unreachable;
  auto run = loadgen::RunBench(o, &unreachable);
  if (!run.ok()) return ReportUnreachable(a, *shard, ro, unreachable, run.status());
  loadgen::BenchSummary s = loadgen::SummarizeRun(*run, o, ro);
  loadgen::AddStreamKinds(*run, s.json, s.text);
  loadgen::AddSpecDecode(*run, s.json, s.text);
  if (replay_block) AddReplayResult(*run, a.replay_speed, std::move(*replay_block), s);
  if (!earlier.empty()) AddEarlierRuns(earlier, a.num_runs, s);
  if (shard->active) AddShardResult(*shard, *run, s.json);
  if (!a.quiet) fmt::print("{}", s.text);
  if (auto rc = WriteBenchResults(a, shard->active, *run, s)) return *rc;
  return ReportBenchOutcome(*run, s, ro, a.json_out);
}

}  // namespace latdoc::cli::bench_internal
