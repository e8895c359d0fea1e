// latdoc bench: streaming load against an OpenAI-compatible server (loadgen/runner.h).
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "base/strings.h"
#include "base/units.h"
#include "cli/command.h"
#include "cli/flags.h"
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

// --tools FILE into the options: a JSON array, for the chat endpoint.
Status LoadTools(BenchArgs& a) {
  if (a.tools_file.empty()) return Status::Ok();
  if (a.endpoint != "chat") return InvalidArgument("--tools goes with --endpoint chat");
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(a.tools_file));
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array() || j.empty())
    return InvalidArgument(a.tools_file + ": --tools expects a non-empty JSON array of tool definitions");
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
    fmt::print(stderr, "latdoc bench: every request failed: the server could not serve this load\n");
    return kExitCannotRun;
  }
  for (const std::string& p : s.problems) fmt::print(stderr, "latdoc bench: {}\n", p);
  return s.problems.empty() ? kExitOk : kExitFindings;
}

// --shard and --start-at, checked and applied to the options before any prompt is made.
struct ShardPlan {
  bool active = false;                     // --shard given
  loadgen::ShardSpec spec;
  std::optional<int64_t> start_at_unix_ns; // --start-at
  int64_t num_prompts = 0;                 // the whole load's; 0: a --duration run
  nlohmann::ordered_json block;            // the result's "shard", less what the run decides
};

// The whole load as the result's shard.load says it: every shard of one load says the same
// (`latdoc merge` refuses shards whose loads differ). Then `a.o` becomes this shard's part.
StatusOr<ShardPlan> PlanShard(BenchArgs& a) {
  ShardPlan p;
  loadgen::BenchOptions& o = a.o;
  if (!a.start_at.empty()) {
    const int64_t now = WallNowNs();
    ASSIGN_OR_RETURN(int64_t at, loadgen::ParseStartAt(a.start_at, now));
    if (at - now > 24 * 3600 * kNsPerSec) {
      return InvalidArgument(fmt::format("--start-at '{}' is {} ahead: more than 24 h",
                                         a.start_at, FormatDurationNs(at - now)));
    }
    p.start_at_unix_ns = at;
  }
  if (a.shard.empty()) return p;
  ASSIGN_OR_RETURN(p.spec, loadgen::ParseShard(a.shard));
  p.active = true;
  using nlohmann::ordered_json;
  const bool open = o.request_rate > 0;
  ordered_json load;
  load["mode"] = open ? "open" : "closed";
  load["concurrency"] = open ? ordered_json(nullptr) : ordered_json(o.concurrency);
  load["request_rate"] = !open ? ordered_json(nullptr)
                         : std::isfinite(o.request_rate) ? ordered_json(o.request_rate) : ordered_json("inf");
  load["burstiness"] = open ? ordered_json(o.burstiness) : ordered_json(nullptr);
  load["max_concurrency"] = open && o.max_concurrency > 0 ? ordered_json(o.max_concurrency) : ordered_json(nullptr);
  load["num_prompts"] = o.num_requests > 0 ? ordered_json(o.num_requests) : ordered_json(nullptr);
  load["duration_s"] = o.duration_s > 0 ? ordered_json(o.duration_s) : ordered_json(nullptr);
  load["warmup_per_shard"] = o.warmup;
  load["ignore_eos"] = !a.no_ignore_eos;
  load["seed"] = o.seed;
  if (!a.dataset.empty()) {
    load["workload"] = {{"dataset", a.dataset}};
  } else {
    load["workload"] = {{"random", {{"input_len", a.random.input_len}, {"output_len", a.random.output_len},
                                    {"range_ratio", a.random.range_ratio}, {"prefix_len", a.random.prefix_len},
                                    {"token_ids", a.random.token_ids}}}};
  }
  // Counts are dealt: C / N each, one more to each of the lowest C % N shards.
  const loadgen::ShardSpec sp = p.spec;
  auto share = [&](int64_t total, const char* what) -> StatusOr<int> {
    const int64_t n = loadgen::ShareOf(total, sp);
    if (n == 0) {
      return InvalidArgument(fmt::format("--shard {}/{}: {} of {} leaves this shard none: give at least {}",
                                         sp.index, sp.count, what, total, sp.count));
    }
    return int(n);
  };
  ordered_json part;
  if (open) {
    if (std::isfinite(o.request_rate)) o.request_rate /= sp.count;
    if (o.max_concurrency > 0) {
      ASSIGN_OR_RETURN(o.max_concurrency, share(o.max_concurrency, "--max-concurrency"));
    }
    part["request_rate"] = std::isfinite(o.request_rate) ? ordered_json(o.request_rate) : ordered_json("inf");
    part["max_concurrency"] = o.max_concurrency > 0 ? ordered_json(o.max_concurrency) : ordered_json(nullptr);
  } else {
    ASSIGN_OR_RETURN(o.concurrency, share(o.concurrency, "a concurrency"));
    part["concurrency"] = o.concurrency;
  }
  p.num_prompts = o.num_requests;
  if (o.num_requests > 0) {
    ASSIGN_OR_RETURN(o.num_requests, share(o.num_requests, "--num-prompts"));
    part["num_prompts"] = o.num_requests;
  }
  // A shard exists to be merged: its records go into the results file.
  if (a.json_out.empty()) {
    return InvalidArgument(fmt::format("--shard {}/{}: give --json FILE (or --save-result): the "
                                       "shard's requests go there, for latdoc merge", sp.index, sp.count));
  }
  ordered_json& b = p.block;
  b["schema"] = loadgen::kShardSchema;
  b["index"] = sp.index;
  b["count"] = sp.count;
  b["start_at"] = p.start_at_unix_ns ? ordered_json(loadgen::FormatRfc3339Utc(*p.start_at_unix_ns)) : ordered_json(nullptr);
  b["start_at_unix_ns"] = p.start_at_unix_ns ? ordered_json(*p.start_at_unix_ns) : ordered_json(nullptr);
  b["target"] = {{"url", loadgen::ServerLabel(o.url, "")}, {"endpoint", a.endpoint}};
  b["load"] = std::move(load);
  b["part"] = std::move(part);
  b["judge"] = {{"slo", a.slo}, {"max_error_rate", a.max_error_rate >= 0 ? a.max_error_rate : 0.0}};
  b["summary"] = {{"percentile_metrics", o.summary_metrics}, {"metric_percentiles", o.summary_percentiles}};
  return p;
}

// Sleeps until the wall clock reads --start-at (CLOCK_REALTIME, absolute: a step of the clock
// moves the wake-up with it), so that shards on other machines start with this one. A time
// already past starts at once, and says so: the shards will overlap less.
void WaitUntil(const ShardPlan& p, bool quiet) {
  const int64_t at = *p.start_at_unix_ns, now = WallNowNs();
  const std::string who = p.active ? fmt::format("shard {}/{}", p.spec.index, p.spec.count) : "--start-at";
  if (at <= now) {
    fmt::print(stderr, "latdoc bench: {}: {} passed {} ago: starting now\n", who,
               loadgen::FormatRfc3339Utc(at), FormatDurationNs(now - at));
    return;
  }
  if (!quiet) {
    fmt::print(stderr, "latdoc bench: {}: starting at {} (in {})\n", who, loadgen::FormatRfc3339Utc(at),
               FormatDurationNs(at - now));
  }
  const timespec ts{time_t(at / kNsPerSec), long(at % kNsPerSec)};
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// The shard's additions to the result: when it ran on the wall clock, and every request.
void AddShardResult(ShardPlan& p, const loadgen::BenchRun& run, nlohmann::ordered_json& json) {
  const int64_t mono_to_unix_ns = WallNowNs() - MonoNowNs();
  p.block["started_unix_ns"] = run.start_ns + mono_to_unix_ns;
  p.block["ended_unix_ns"] = run.end_ns + mono_to_unix_ns;
  p.block["target"]["model"] = run.model;
  json["shard"] = p.block;
  json["requests"] = loadgen::RecordsJson(run, mono_to_unix_ns);
}

// The result's "multi_turn" block and its findings (loadgen::ReportSessions), for a session
// run; the terminal's lines are appended to `text`.
void AddMultiTurnResult(const BenchArgs& a, const loadgen::SessionWorkload& w,
                        const loadgen::BenchRun& run, nlohmann::ordered_json& json, std::string& text) {
  loadgen::SessionReport r = loadgen::ReportSessions(
      w, run, a.think_time_s, a.session_file.empty() ? "synthetic" : a.session_file,
      a.session_file.empty() ? &a.sessions : nullptr);
  text += r.text;
  json["multi_turn"] = std::move(r.json);
  nlohmann::ordered_json fj = nlohmann::ordered_json::array();
  for (const auto& f : rules::MultiTurnFindings(r.facts)) {
    text += fmt::format("{}: {}: {}\n  advice: {}\n", rules::SeverityName(f.severity), f.id, f.title, f.advice);
    fj.push_back(nlohmann::ordered_json::parse(rules::ToJson(f).dump()));
  }
  json["findings"] = std::move(fj);
}

// bench --dataset-name multi-turn: the sessions turn by turn (loadgen/sessions.h).
int RunSessionsCommand(BenchArgs& a, const loadgen::SloSpec& slo) {
  loadgen::BenchOptions& o = a.o;
  auto refuse = [](const std::string& what) {
    return Fail("bench", InvalidArgument(what + " is not used with --dataset-name multi-turn: the "
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
  if (const char* key = std::getenv(a.api_key_env.c_str())) o.api_key = key;
  a.client.Apply(o.client);
  o.threads = a.client.threads;
  o.ignore_eos = !a.no_ignore_eos;
  o.progress = !a.quiet && ::isatty(2);
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
    if (Status st = loadgen::ValidateMultiTurnOptions(a.sessions); !st.ok()) return Fail("bench", st);
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
      if (Status st = WriteFileAtomic(a.json_out, JsonText(s.json, 2) + "\n"); !st.ok()) return Fail("bench", st);
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
    if (Status st = WriteFileAtomic(a.json_out, JsonText(s.json, 2) + "\n"); !st.ok()) return Fail("bench", st);
  }
  if (!a.requests_out.empty()) {
    if (Status st = WriteFileAtomic(a.requests_out, loadgen::RequestsJsonl(*run)); !st.ok())
      return Fail("bench", st);
  }
  return ReportBenchOutcome(*run, s, ro, a.json_out);
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
  if (Status st = LoadTools(a); !st.ok()) return Fail("bench", st);
  if (a.multi_turn) return RunSessionsCommand(a, *slo);
  auto shard = PlanShard(a);
  if (!shard.ok()) return Fail("bench", shard.status());
  loadgen::ResultOptions ro;
  ro.slo = *slo;
  // Any failed request fails the run unless --max-error-rate tolerates it.
  ro.max_error_rate = a.max_error_rate >= 0 ? a.max_error_rate : 0.0;
  if (const char* key = std::getenv(a.api_key_env.c_str())) o.api_key = key;
  a.client.Apply(o.client);
  o.threads = a.client.threads;
  o.ignore_eos = !a.no_ignore_eos;
  o.progress = !a.quiet && ::isatty(2);
  // Random prompts for a --duration run: 4,096 after the warm-up's, repeated from the first once
  // used up (a repeat may find its blocks still in the server's prefix cache); fewer for long
  // prompts, so that what is built before the run stays under 2^24 tokens (about 100 MB).
  const size_t per_prompt = size_t(std::max(1, a.random.input_len + a.random.prefix_len));
  const size_t for_duration = std::clamp<size_t>((size_t{1} << 24) / per_prompt, 1, 4096);
  const size_t total = size_t(o.warmup) + (o.num_requests > 0 ? size_t(o.num_requests) : for_duration);
  // A shard's measured prompts are the unsharded run's from its offset on (loadgen/shard.h).
  const size_t first_prompt = !shard->active ? 0
                              : shard->num_prompts > 0
                                  ? size_t(loadgen::OffsetOf(shard->num_prompts, shard->spec))
                                  : size_t(shard->spec.index) * for_duration;
  std::optional<nlohmann::ordered_json> replay_block;
  if (a.replay) {
    auto refuse = [](const std::string& what) {
      return Fail("bench", InvalidArgument(what + " is not used with --dataset-name replay: the "
                                           "trace's times set the load"));
    };
    if (shard->active || shard->start_at_unix_ns) return refuse(shard->active ? "--shard" : "--start-at");
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
    replay_block = nlohmann::ordered_json{{"file", a.dataset}, {"speed", a.replay_speed},
                                          {"requests", o.prompts.size()},
                                          {"span_s", double(o.arrival_offsets_ns.back()) / 1e9}};
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
  if (shard->active) {
    shard->block["part"]["first_prompt"] = first_prompt;
    o.seed = loadgen::ShardSeed(o.seed, shard->spec);  // the arrivals' seed; the prompts kept theirs
    shard->block["part"]["arrival_seed"] = o.seed;
  }
  // Output paths are checked before any load is sent (no run lost to a typo).
  for (const std::string* p : {&a.json_out, &a.requests_out}) {
    if (p->empty()) continue;
    if (Status st = CheckOutputPath(*p); !st.ok()) return Fail("bench", st);
  }
  if (shard->start_at_unix_ns) WaitUntil(*shard, a.quiet);
  // --num-runs N: runs 1..N-1 first, summarized; the last run is written out as usual, with the
  // run-to-run variation of its headline metrics (loadgen/validation.h, AddRunVariation).
  if (a.num_runs > 1 && shard->active)
    return Fail("bench", InvalidArgument("--num-runs cannot be combined with --shard"));
  std::vector<loadgen::BenchSummary> earlier;
  for (int i = 1; i < a.num_runs; ++i) {
    if (!a.quiet) fmt::print(stderr, "latdoc bench: run {} of {}\n", i, a.num_runs);
    auto r = loadgen::RunBench(o);
    if (!r.ok()) {
      return Fail("bench", Status(r.status().code(),
                                  fmt::format("run {} of {}: {}", i, a.num_runs, r.status().message())));
    }
    if (r->stop_signal != 0) {
      fmt::print(stderr, "latdoc bench: run {} of {}: {}: no results written\n", i, a.num_runs,
                 r->partial_reason);
      return ExitCodeForSignal(r->stop_signal);
    }
    earlier.push_back(loadgen::SummarizeRun(*r, o, ro));
  }
  if (a.num_runs > 1 && !a.quiet) fmt::print(stderr, "latdoc bench: run {} of {}\n", a.num_runs, a.num_runs);
  loadgen::BenchRun unreachable;
  auto run = loadgen::RunBench(o, &unreachable);
  if (!run.ok()) {
    if (run.status().code() == StatusCode::kInvalidArgument) return Fail("bench", run.status());
    // Nothing could be run against: the results file still says why (and, when requests were
    // sent, how each one failed), and the failure line counts them; exit 3.
    loadgen::BenchSummary s = loadgen::SummarizeRun(unreachable, o, ro);
    s.json["error"] = run.status().message();
    // A shard whose requests were sent and all failed to connect is still a shard of the load:
    // the merge counts its failures.
    const bool ran = shard->active && !unreachable.records.empty();
    if (ran) AddShardResult(*shard, unreachable, s.json);
    if (!a.json_out.empty()) {
      const std::string text = ran ? loadgen::ShardResultText(s.json) : JsonText(s.json, 2) + "\n";
      if (Status st = WriteFileAtomic(a.json_out, text); !st.ok()) return Fail("bench", st);
    }
    if (s.failures.failed > 0) fmt::print(stderr, "latdoc bench: {}\n", s.failures.Text());
    return Fail("bench", run.status());
  }
  loadgen::BenchSummary s = loadgen::SummarizeRun(*run, o, ro);
  loadgen::AddStreamKinds(*run, s.json, s.text);
  loadgen::AddSpecDecode(*run, s.json, s.text);
  if (replay_block) {
    // How late the sends were against the trace's schedule (client queue and timer slip).
    int64_t lag = 0;
    for (const auto& r : run->records)
      if (r.sent_ns >= 0) lag = std::max(lag, r.sent_ns - r.scheduled_ns);
    (*replay_block)["max_send_lag_ms"] = double(lag) / 1e6;
    s.text += fmt::format("Replay: {} requests over {:.3f} s of trace at {}x; latest send {:.2f} ms after its time\n",
                          (*replay_block)["requests"].get<size_t>(), (*replay_block)["span_s"].get<double>(),
                          a.replay_speed, double(lag) / 1e6);
    s.json["replay"] = std::move(*replay_block);
  }
  if (!earlier.empty()) {
    std::vector<nlohmann::ordered_json> runs;
    for (size_t i = 0; i < earlier.size(); ++i) {
      runs.push_back(earlier[i].json);
      for (const std::string& p : earlier[i].problems)
        s.problems.push_back(fmt::format("run {} of {}: {}", i + 1, a.num_runs, p));
    }
    runs.push_back(s.json);
    s.text += loadgen::AddRunVariation(runs, &s.json);
    s.json["problems"] = s.problems;
  }
  if (shard->active) AddShardResult(*shard, *run, s.json);
  if (!a.quiet) fmt::print("{}", s.text);
  if (!a.json_out.empty()) {
    const std::string text = shard->active ? loadgen::ShardResultText(s.json) : JsonText(s.json, 2) + "\n";
    if (Status st = WriteFileAtomic(a.json_out, text); !st.ok()) {
      return Fail("bench", st);
    }
  }
  if (!a.requests_out.empty()) {
    if (Status st = WriteFileAtomic(a.requests_out, loadgen::RequestsJsonl(*run)); !st.ok())
      return Fail("bench", st);
  }
  return ReportBenchOutcome(*run, s, ro, a.json_out);
}

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

std::optional<int> ResolveBenchFlags(BenchArgs& a, BenchFlags& f) {
  auto fail = [](const std::string& message) {
    fmt::print(stderr, "latdoc bench: {}\n", message);
    return std::optional<int>(kExitBadInput);
  };
  if (auto rc = ResolveServerFlags("bench", f.server, /*required=*/true)) return rc;
  loadgen::BenchOptions& o = a.o;
  // vLLM: --max-concurrency without --request-rate is a closed loop at that concurrency (every
  // request at once, at most N in flight); with a rate it caps the open loop.
  // --request-rate inf with --max-concurrency N is latdoc's open loop at an infinite rate, capped
  // at N: every request scheduled at once, as vLLM does it.
  if (f.dataset_name == "replay") {
    if (f.dataset_path.empty()) return fail("--dataset-name replay reads --dataset-path FILE (JSONL of timed requests)");
    if (f.request_rate->count() > 0) return fail("--request-rate is not used with --dataset-name replay: the trace's times set the load");
    a.replay = true;
  } else if (f.replay_speed->count() > 0) {
    return fail("--replay-speed goes with --dataset-name replay");
  }
  if (a.replay) {
    // --max-concurrency caps the replayed open loop.
  } else if (f.request_rate->count() == 0 && f.max_concurrency->count() > 0) {
    if (f.concurrency->count() > 0 && o.concurrency != o.max_concurrency)
      return fail("--concurrency and --max-concurrency both set the requests in flight when no "
                  "--request-rate is given: give one");
    o.concurrency = o.max_concurrency;
    o.max_concurrency = 0;
    o.request_rate = 0;
  }
  if (f.dataset_name == "multi-turn") {
    // A session file is optional: without one, synthetic sessions.
    if (!a.dataset.empty()) return fail("--dataset-name multi-turn reads its session file from --dataset-path");
    a.multi_turn = true;
    a.session_file = f.dataset_path;
  } else if (f.num_sessions->count() > 0 || f.turns->count() > 0 || f.think_time->count() > 0) {
    return fail("--num-sessions, --turns and --think-time go with --dataset-name multi-turn");
  }
  if (a.multi_turn) {
  } else if (f.dataset_name_opt->count() > 0 && f.dataset_name != "random") {
    if (f.dataset_path.empty())
      return fail(fmt::format("--dataset-name {} reads --dataset-path FILE", f.dataset_name));
  } else if (f.dataset_name_opt->count() > 0 && !f.dataset_path.empty()) {
    return fail("--dataset-path is read with --dataset-name sharegpt, custom, multi-turn or replay; random makes its prompts");
  }
  if (!f.dataset_path.empty() && !a.multi_turn) {
    if (!a.dataset.empty()) return fail("give --dataset or --dataset-path, not both");
    a.dataset = f.dataset_path;
  }
  if (f.ignore_eos && a.no_ignore_eos) return fail("give --ignore-eos or --no-ignore-eos, not both");
  o.backend = f.server.backend;  // written as vLLM writes it
  // vLLM: --model names the tokenizer's model, --served-model-name what the requests ask for.
  if (!f.served_model_name.empty()) o.model = f.served_model_name;
  if (!f.tokenizer.empty() || f.trust_remote_code) {
    fmt::print(stderr, "latdoc bench: note: {} not used: latdoc counts tokens from the server's usage "
               "(or the stream's chunks) and needs no tokenizer\n",
               !f.tokenizer.empty() ? "--tokenizer is" : "--trust-remote-code is");
  }
  if (!f.goodput.empty()) {
    if (!a.slo.empty()) return fail("give --slo or --goodput, not both");
    // vLLM's "ttft:500 tpot:50" is latdoc's "ttft:500,tpot:50".
    for (const std::string& g : f.goodput) a.slo += (a.slo.empty() ? "" : ",") + g;
  }
  if (!f.percentile_metrics.empty()) {
    for (auto m : Split(f.percentile_metrics, ',')) {
      const std::string name(Trim(m));
      if (name != "ttft" && name != "tpot" && name != "itl" && name != "e2el")
        return fail(fmt::format("--percentile-metrics '{}': expected ttft, tpot, itl or e2el", name));
      o.summary_metrics.push_back(name);
    }
  }
  if (!f.metric_percentiles.empty()) {
    for (auto p : Split(f.metric_percentiles, ',')) {
      auto v = ParseDouble(Trim(p));
      if (!v || !(*v > 0 && *v <= 100))
        return fail(fmt::format("--metric-percentiles '{}': expected numbers above 0 and at most 100",
                                Trim(p)));
      o.summary_percentiles.push_back(*v);
    }
  }
  if (!f.result_dir.empty() || !f.result_filename.empty()) {
    if (!f.save_result) return fail("--result-dir and --result-filename go with --save-result");
  }
  if (f.save_result) {
    if (!a.json_out.empty()) return fail("give --json FILE or --save-result, not both");
    const std::string dir = f.result_dir.empty() ? "." : f.result_dir;
    if (!f.result_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(f.result_dir, ec);  // as vLLM: os.makedirs
      if (ec) return fail(fmt::format("--result-dir {}: {}", f.result_dir, ec.message()));
    }
    if (!f.result_filename.empty()) {
      a.json_out = (std::filesystem::path(dir) / f.result_filename).string();
    } else {
      // vLLM's name needs the model, known after the run when --model is not given: the
      // results are written to a hidden name in the same folder and renamed.
      f.backend_label = !f.label.empty()             ? f.label
                        : !f.server.backend.empty() ? f.server.backend
                        : a.endpoint == "chat"      ? "openai-chat"
                                                    : "openai";
      f.pending_result = (std::filesystem::path(dir) / fmt::format(".latdoc-bench-{}.json", ::getpid())).string();
      a.json_out = f.pending_result;
    }
  }
  return std::nullopt;
}

// vLLM's result file name (vllm/benchmarks/serve.py):
// f"{label}-{request_rate}qps{-concurrencyN}-{model's last path part}-{%Y%m%d-%H%M%S}.json",
// with the rate as Python prints a float ("8.0", "inf").
std::string VllmResultName(const std::string& label, const nlohmann::ordered_json& j) {
  std::string rate = "inf";
  if (j.contains("request_rate") && j["request_rate"].is_number()) {
    rate = fmt::format("{}", j["request_rate"].get<double>());
    if (rate.find_first_of(".e") == std::string::npos) rate += ".0";
  }
  std::string conc;
  if (j.contains("max_concurrency") && j["max_concurrency"].is_number())
    conc = fmt::format("-concurrency{}", j["max_concurrency"].get<int64_t>());
  std::string model = j.value("model_id", std::string("model"));
  if (auto slash = model.rfind('/'); slash != std::string::npos) model = model.substr(slash + 1);
  // Shards writing to one shared folder at the same second must not take one name.
  std::string shard;
  if (j.contains("shard") && j["shard"].is_object())
    shard = fmt::format("-shard{}of{}", j["shard"].value("index", 0), j["shard"].value("count", 1));
  return fmt::format("{}-{}qps{}-{}-{}{}.json", label, rate, conc, model, j.value("date", std::string("")), shard);
}

// After the run: the hidden file of --save-result gets vLLM's name.
int FinishSaveResult(const BenchFlags& f, int rc) {
  if (f.pending_result.empty() || ::access(f.pending_result.c_str(), R_OK) != 0) return rc;
  auto text = ReadFileToString(f.pending_result);
  nlohmann::ordered_json j = text.ok() ? nlohmann::ordered_json::parse(*text, nullptr, false)
                                       : nlohmann::ordered_json();
  const std::string path =
      (std::filesystem::path(f.pending_result).parent_path() / VllmResultName(f.backend_label, j)).string();
  std::error_code ec;
  std::filesystem::rename(f.pending_result, path, ec);
  if (ec) {
    fmt::print(stderr, "latdoc bench: {}: {}\n", path, ec.message());
    return rc == kExitOk ? kExitCannotRun : rc;
  }
  if (!QuietRequested()) fmt::print(stderr, "latdoc bench: saved {}\n", path);
  return rc;
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
  app->add_option("--tokenizer", f->tokenizer, "Accepted for vLLM's command lines; not needed (a note says so)");
  app->add_flag("--trust-remote-code", f->trust_remote_code, "Accepted for vLLM's command lines; not needed");
  auto* load = "Load";
  f->concurrency = app->add_option("--concurrency,-c", o.concurrency, "Requests in flight (closed loop)")
      ->check(Number(Bound::kPositive))->group(load)->capture_default_str();
  f->request_rate = app->add_option("--request-rate", o.request_rate,
                                    "Requests per second (open loop; inf: every request at once)")
      ->check(Number(Bound::kPositiveOrInf))->group(load);
  app->add_option("--burstiness", o.burstiness, "Gamma shape of inter-arrivals (1 = Poisson)")
      ->group(load)->capture_default_str();
  f->max_concurrency = app->add_option("--max-concurrency", o.max_concurrency,
                                       "With --request-rate: cap on requests in flight; without (or with "
                                       "inf): the concurrency of a closed loop, as in vLLM")
      ->check(Number(Bound::kPositive))->group(load);
  app->add_option("--num-requests,-n,--num-prompts", o.num_requests, "Requests to send (default: 200)")
      ->check(Number(Bound::kPositive))->group(load);
  app->add_option("--duration", o.duration_s, "How long to send for: 30s, 5m (a bare number is seconds)")
      ->type_name("DURATION")->transform(Seconds(Bound::kPositive))->group(load);
  app->add_option("--warmup", o.warmup, "Requests sent first, not counted")->group(load)->capture_default_str();
  app->add_option("--shard", a->shard,
                  "Send shard I (from 0) of N of the load: 1/N of the concurrency or rate and of "
                  "--num-prompts, its own slice of the prompts; the result keeps every request "
                  "for latdoc merge")->type_name("I/N")->group(load);
  app->add_option("--start-at", a->start_at,
                  "Start at this wall-clock time, as the other shards: RFC 3339 "
                  "(2026-12-05T03:00:00Z), Unix seconds, or now+10s")->type_name("TIME")->group(load);
  AddClientFlags(app, a->client, o.client.insecure, load);
  auto* wl = "Workload";
  app->add_option("--input-len,--random-input-len", a->random.input_len, "Prompt tokens")
      ->group(wl)->capture_default_str();
  app->add_option("--output-len,--random-output-len", a->random.output_len, "Tokens to generate")
      ->group(wl)->capture_default_str();
  app->add_option("--range-ratio,--random-range-ratio", a->random.range_ratio, "Length spread, [0, 1)")
      ->group(wl)->capture_default_str();
  app->add_option("--prefix-len,--random-prefix-len", a->random.prefix_len, "Shared prefix tokens")
      ->group(wl)->capture_default_str();
  app->add_option("--seed", o.seed, "Seed")->group(wl)->capture_default_str();
  app->add_flag("--token-ids", a->random.token_ids,
                "Send prompts as token ids (exact lengths; completions only)")->group(wl);
  app->add_option("--dataset", a->dataset, "Prompts from a JSONL or ShareGPT JSON file")->group(wl);
  f->dataset_name_opt =
      app->add_option("--dataset-name", f->dataset_name,
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
          ->group(wl)->capture_default_str();
  app->add_option("--dataset-path", f->dataset_path,
                  "The file of --dataset-name sharegpt, custom or multi-turn (JSONL of sessions)")->group(wl);
  f->num_sessions = app->add_option("--num-sessions", a->sessions.num_sessions,
                                    "multi-turn: concurrent sessions (one stream each)")
      ->check(Number(Bound::kPositive))->group(wl)->capture_default_str();
  f->turns = app->add_option("--turns", a->sessions.turns, "multi-turn: turns per session")
      ->check(Number(Bound::kPositive))->group(wl)->capture_default_str();
  f->think_time = app->add_option("--think-time", a->think_time_s,
                                  "multi-turn: pause between a turn's answers and the next turn: 2s, 500ms")
      ->type_name("DURATION")->transform(Seconds(Bound::kNonNegative))->group(wl);
  f->replay_speed = app->add_option("--replay-speed", a->replay_speed,
                                    "replay: how many times faster than the trace's times to send (2: "
                                    "twice as fast)")->group(wl);
  app->add_option("--tools", a->tools_file,
                  "Chat: a JSON file with an array of tool definitions, sent as every request's "
                  "\"tools\" (tool-call streams are counted and timed)")->group(wl);
  app->add_flag("--ignore-eos", f->ignore_eos, "Generate --output-len tokens whatever the model says (the default)")
      ->group(wl);
  app->add_flag("--no-ignore-eos", a->no_ignore_eos, "Let the model stop early")->group(wl);
  auto* out = "Results";
  app->add_option("--slo", a->slo, "ttft:MS,tpot:MS,e2el:MS[,percent:P] (exit 1 when missed)")->group(out);
  app->add_option("--goodput", f->goodput, "As vLLM: ttft:MS tpot:MS e2el:MS, the same as --slo")->group(out);
  app->add_option("--max-error-rate", a->max_error_rate, "Fraction of failures allowed (exit 1 above)")->group(out);
  app->add_option("--json", a->json_out, "Write the results as JSON")->group(out);
  app->add_option("--num-runs", a->num_runs,
                  "Run the same load N times; the last run's results, with the coefficient of "
                  "variation of each headline metric over the N (JSON \"runs\")")
      ->check(Number(Bound::kPositive))->group(out)->capture_default_str();
  app->add_flag("--save-result", f->save_result,
                "As vLLM: write the JSON to --result-dir, named --result-filename or "
                "BACKEND-RATEqps-MODEL-DATE.json")->group(out);
  app->add_option("--result-dir", f->result_dir, "Folder of --save-result (default: the current one)")->group(out);
  app->add_option("--result-filename", f->result_filename, "File name of --save-result")->group(out);
  app->add_option("--label", f->label, "As vLLM: the start of --save-result's file name (default: the backend)")
      ->group(out);
  app->add_option("--percentile-metrics", f->percentile_metrics,
                  "Metrics shown with percentiles, as vLLM: ttft,tpot,itl,e2el (default: all four)")->group(out);
  app->add_option("--metric-percentiles", f->metric_percentiles,
                  "Percentiles shown, as vLLM: e.g. 50,90,99 (default: 99 in the summary; 90,95,99,99.9 "
                  "in the JSON)")->group(out);
  app->add_option("--save-requests", a->requests_out, "Write one JSON line per request")->group(out);
  app->add_option("--scrape-interval", o.scrape_interval_s, "Between /metrics scrapes: seconds, or 500ms")
      ->type_name("DURATION")->transform(Seconds(Bound::kAny))->group(out)->capture_default_str();
  AddQuietFlag(app, &a->quiet);
  AddNoColorFlag(app);
  return {app, [a, f] {
            if (auto rc = ResolveBenchFlags(*a, *f)) return *rc;
            return FinishSaveResult(*f, RunBenchCommand(*a));
          }};
}

}  // namespace latdoc::cli
