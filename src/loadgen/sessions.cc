#include "loadgen/sessions.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/strings.h"
#include "loadgen/jsonl.h"
#include "loadgen/load_facts.h"
#include "stats/sample_summary.h"

namespace latdoc::loadgen {
namespace {

constexpr const char* kWords[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
                                  "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
                                  "omicron", "pi", "rho", "sigma", "tau", "upsilon"};
constexpr size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

std::string RandomWords(std::mt19937_64& rng, int n) {
  std::uniform_int_distribution<size_t> w(0, kNumWords - 1);
  std::string s;
  s.reserve(size_t(n) * 7);
  for (int i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += kWords[w(rng)];
  }
  return s;
}

int Words(const std::string& s) { return int(SplitWhitespace(s).size()); }

// The turns of one conversation, each with the history before it.
std::vector<Prompt> BuildTurns(const std::string& system, bool system_shared,
                               const std::vector<std::pair<std::string, int>>& user_turns,
                               std::mt19937_64& answer_rng) {
  std::vector<Prompt> out;
  std::vector<std::pair<std::string, std::string>> history;
  if (!system.empty()) history.emplace_back("system", system);
  int history_tokens = system.empty() ? 0 : Words(system);
  int previous_prompt_tokens = system_shared ? history_tokens : 0;
  for (size_t t = 0; t < user_turns.size(); ++t) {
    const auto& [user, output_len] = user_turns[t];
    Prompt p;
    p.turn = int(t);
    p.messages = history;
    p.messages.emplace_back("user", user);
    for (const auto& m : p.messages) {
      if (!p.text.empty()) p.text += ' ';
      p.text += m.second;
    }
    p.input_tokens = history_tokens + Words(user);
    p.output_tokens = output_len;
    p.reused_tokens = previous_prompt_tokens;
    previous_prompt_tokens = p.input_tokens;
    out.push_back(p);
    // The answer stands in as many words as were asked for (the client keeps no answer text).
    std::string answer = RandomWords(answer_rng, output_len);
    history.emplace_back("user", user);
    history.emplace_back("assistant", answer);
    history_tokens = p.input_tokens + output_len;
  }
  return out;
}

void Bad(SessionWorkload& w, const std::string& where, const std::string& why) {
  ++w.bad_lines;
  if (w.bad_line_messages.size() < 10) w.bad_line_messages.push_back(where + ": " + why);
}

}  // namespace

Status ValidateMultiTurnOptions(const MultiTurnOptions& o) {
  if (o.num_sessions < 1) return InvalidArgument("--num-sessions must be at least 1");
  if (o.turns < 1) return InvalidArgument("--turns must be at least 1");
  if (o.input_len < 1) return InvalidArgument("--input-len must be at least 1");
  if (o.output_len < 1) return InvalidArgument("--output-len must be at least 1");
  if (o.system_len < 0) return InvalidArgument("--prefix-len must not be negative");
  // The last turn carries the whole history, built in memory before the run.
  const int64_t last = int64_t(o.system_len) + int64_t(o.turns) * (o.input_len + o.output_len);
  if (last > kMaxTokens || int64_t(o.num_sessions) * o.turns > 1'000'000) {
    return InvalidArgument(fmt::format(
        "multi-turn sessions too large: the last turn would carry {} tokens (at most {}) and "
        "{} requests be sent (at most 1000000)", last, kMaxTokens, int64_t(o.num_sessions) * o.turns));
  }
  return Status::Ok();
}

size_t SessionWorkload::max_turns() const {
  size_t n = 0;
  for (const auto& s : sessions) n = std::max(n, s.size());
  return n;
}

SessionWorkload SyntheticSessions(const MultiTurnOptions& o) {
  SessionWorkload w;
  std::mt19937_64 rng(o.seed ^ 0x2545f4914f6cdd1dULL);
  const std::string system = RandomWords(rng, o.system_len);
  for (int s = 0; s < o.num_sessions; ++s) {
    std::vector<std::pair<std::string, int>> turns;
    for (int t = 0; t < o.turns; ++t) turns.emplace_back(RandomWords(rng, o.input_len), o.output_len);
    std::mt19937_64 answer_rng(rng());
    // The system prompt is shared: from the second session on, it was sent before.
    w.sessions.push_back(BuildTurns(system, s > 0, turns, answer_rng));
  }
  return w;
}

StatusOr<SessionWorkload> LoadSessionFile(const std::string& path, int default_output_len) {
  ASSIGN_OR_RETURN(auto in, OpenInput(path));
  ASSIGN_OR_RETURN(std::string text, ReadAll(*in));
  SessionWorkload w;
  std::vector<std::string> systems_seen;
  std::mt19937_64 answer_rng(0x51ed270b27a5b9d7ULL);
  JsonlObjects lines(text, path,
                     [&w](const std::string& where, const std::string& why) { Bad(w, where, why); });
  nlohmann::json j;
  std::string where;
  while (lines.Next(&j, &where)) {
    std::string system;
    if (auto s = j.find("system"); s != j.end()) {
      if (!s->is_string()) {
        Bad(w, where, "\"system\" must be a string");
        continue;
      }
      system = s->get<std::string>();
    }
    auto turns = j.find("turns");
    if (turns == j.end() || !turns->is_array() || turns->empty()) {
      Bad(w, where, "no \"turns\" list");
      continue;
    }
    std::vector<std::pair<std::string, int>> user_turns;
    std::string why;
    for (size_t t = 0; t < turns->size() && why.empty(); ++t) {
      const auto& e = (*turns)[t];
      if (!e.is_object() || !e.contains("prompt") || !e["prompt"].is_string() ||
          Trim(e["prompt"].get_ref<const std::string&>()).empty()) {
        why = fmt::format("turn {}: no \"prompt\" string", t + 1);
        break;
      }
      int out = default_output_len;
      for (const char* key : {"output_len", "max_tokens"}) {
        if (auto it = e.find(key); it != e.end()) {
          if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxTokens)
            why = fmt::format("turn {}: \"{}\" must be a positive integer up to {}", t + 1, key, kMaxTokens);
          else
            out = int(it->get<int64_t>());
          break;
        }
      }
      user_turns.emplace_back(e["prompt"].get<std::string>(), out);
    }
    if (!why.empty()) {
      Bad(w, where, why);
      continue;
    }
    const bool shared = !system.empty() &&
                        std::find(systems_seen.begin(), systems_seen.end(), system) != systems_seen.end();
    if (!system.empty() && !shared) systems_seen.push_back(system);
    w.sessions.push_back(BuildTurns(system, shared, user_turns, answer_rng));
  }
  if (w.sessions.empty()) {
    return InvalidArgument(fmt::format("{}: no usable session ({} bad lines{}{})", path, w.bad_lines,
                                       w.bad_line_messages.empty() ? "" : "; first: ",
                                       w.bad_line_messages.empty() ? "" : w.bad_line_messages[0]));
  }
  return w;
}

StatusOr<BenchRun> RunSessions(const BenchOptions& base, const SessionWorkload& w,
                               double think_time_s, BenchRun* unreachable_run) {
  BenchRun all;
  const size_t turns = w.max_turns();
  std::string model = base.model;
  for (size_t t = 0; t < turns; ++t) {
    BenchOptions o = base;
    o.prompts.clear();
    for (const auto& s : w.sessions)
      if (t < s.size()) o.prompts.push_back(s[t]);
    o.first_prompt = 0;
    o.request_rate = 0;
    o.max_concurrency = 0;
    o.concurrency = int(o.prompts.size());
    o.num_requests = int(o.prompts.size());
    o.duration_s = 0;
    o.warmup = 0;
    o.model = model;
    auto run = RunBench(o, unreachable_run);
    if (!run.ok()) return run.status();
    for (RequestRecord& r : run->records) {
      r.turn = int(t);
      r.index = all.records.size();
      all.records.push_back(std::move(r));
    }
    if (t == 0) {
      model = run->model;
      all.model = run->model;
      all.owned_by = run->owned_by;
      all.start_ns = run->start_ns;
      all.before = run->before;
      all.metrics_available = run->metrics_available;
      all.metrics_error = run->metrics_error;
      all.thread_load = run->thread_load;
    } else {
      all.metrics_available = all.metrics_available && run->metrics_available;
      if (all.metrics_error.empty()) all.metrics_error = run->metrics_error;
      for (size_t i = 0; i < run->thread_load.size(); ++i) {
        if (i >= all.thread_load.size()) all.thread_load.push_back({});
        ThreadLoad& l = all.thread_load[i];
        const ThreadLoad& r = run->thread_load[i];
        l.cpu_s += r.cpu_s;
        l.wall_s += r.wall_s;
        l.events += r.events;
        l.reads += r.reads;
        l.late_reads += r.late_reads;
      }
    }
    all.end_ns = run->end_ns;
    all.after = run->after;
    all.timeline.insert(all.timeline.end(), run->timeline.begin(), run->timeline.end());
    all.connections_opened += run->connections_opened;
    all.tcp = run->tcp;  // the last turn's connections
    all.max_in_flight = std::max(all.max_in_flight, run->max_in_flight);
    all.client_cpu_s += run->client_cpu_s;
    if (run->partial) {  // a signal stopped this turn: no later turn is sent
      all.partial = true;
      all.partial_reason = run->partial_reason;
      all.stop_signal = run->stop_signal;
      break;
    }
    if (t + 1 < turns && think_time_s > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(think_time_s));
  }
  return all;
}

std::vector<TurnStats> ComputeTurnStats(const BenchRun& run, const SessionWorkload& w) {
  std::vector<TurnStats> out(w.max_turns());
  std::vector<std::vector<double>> ttfts(out.size());
  std::vector<double> prompt_sum(out.size(), 0);
  for (size_t t = 0; t < out.size(); ++t) {
    out[t].turn = int(t) + 1;
    double reused = 0;
    uint64_t n = 0;
    for (const auto& s : w.sessions)
      if (t < s.size()) {
        reused += s[t].reused_tokens;
        ++n;
      }
    out[t].mean_reused_tokens = n ? reused / double(n) : 0;
  }
  for (const RequestRecord& r : run.records) {
    if (r.turn < 0 || size_t(r.turn) >= out.size()) continue;
    TurnStats& s = out[size_t(r.turn)];
    ++s.requests;
    if (r.outcome != Outcome::kOk) continue;
    ++s.completed;
    prompt_sum[size_t(r.turn)] += r.prompt_tokens;
    ttfts[size_t(r.turn)].push_back(double(r.first_token_ns - r.scheduled_ns) / 1e6);
  }
  for (size_t t = 0; t < out.size(); ++t) {
    auto& v = ttfts[t];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    out[t].mean_ttft_ms = sum / double(v.size());
    out[t].p50_ttft_ms = stats::PercentileOfSorted(v, 50);
    out[t].p99_ttft_ms = stats::PercentileOfSorted(v, 99);
    out[t].mean_prompt_tokens = prompt_sum[t] / double(v.size());
  }
  return out;
}

}  // namespace latdoc::loadgen

namespace latdoc::loadgen {

SessionReport ReportSessions(const SessionWorkload& w, const BenchRun& run, double think_time_s,
                             const std::string& source, const MultiTurnOptions* synthetic) {
  using nlohmann::ordered_json;
  SessionReport out;
  const auto turns = ComputeTurnStats(run, w);
  ordered_json& mt = out.json;
  mt["sessions"] = w.sessions.size();
  mt["turns"] = w.max_turns();
  mt["think_time_s"] = think_time_s;
  mt["source"] = source;
  if (synthetic) {
    mt["shared_prefix_tokens"] = synthetic->system_len;
    mt["input_len"] = synthetic->input_len;
    mt["output_len"] = synthetic->output_len;
  }
  MultiTurnFacts& facts = out.facts;
  ordered_json per_turn = ordered_json::array();
  std::string& text = out.text;
  text += "TTFT by turn (mean / p99, mean prompt tokens, resent):\n";
  for (const auto& t : turns) {
    per_turn.push_back({{"turn", t.turn},
                        {"requests", t.requests},
                        {keys::kCompleted, t.completed},
                        {"mean_prompt_tokens", t.mean_prompt_tokens},
                        {"mean_resent_tokens", t.mean_reused_tokens},
                        {keys::kMeanTtftMs, t.mean_ttft_ms},
                        {keys::kMedianTtftMs, t.p50_ttft_ms},
                        {keys::kP99TtftMs, t.p99_ttft_ms}});
    text += fmt::format("  turn {:>3}: {:>9.2f} / {:>9.2f} ms  {:>8.0f} tokens  {:>8.0f} resent  ({} of {} completed)\n",
                        t.turn, t.mean_ttft_ms, t.p99_ttft_ms, t.mean_prompt_tokens,
                        t.mean_reused_tokens, t.completed, t.requests);
    facts.turns.push_back({t.turn, t.mean_ttft_ms, t.mean_prompt_tokens, t.mean_reused_tokens,
                           static_cast<unsigned long long>(t.completed)});
  }
  mt["per_turn"] = std::move(per_turn);
  if (run.metrics_available) {
    const servermetrics::SnapshotDelta d = servermetrics::Delta(run.before, run.after);
    facts.cache_queries = d.prefix_cache_queries;
    facts.cache_hits = d.prefix_cache_hits;
    if (d.queue_s)
      if (auto m = d.queue_s->mean()) facts.queue_mean_ms = *m * 1e3;
    if (d.prefill_s)
      if (auto m = d.prefill_s->mean()) facts.prefill_mean_ms = *m * 1e3;
  }
  auto opt = [](std::optional<double> v) { return v ? ordered_json(*v) : ordered_json(nullptr); };
  const bool rate = facts.cache_queries && facts.cache_hits && *facts.cache_queries > 0;
  mt["prefix_cache"] = {{"queries_tokens", opt(facts.cache_queries)},
                        {"hits_tokens", opt(facts.cache_hits)},
                        {"hit_rate", rate ? ordered_json(*facts.cache_hits / *facts.cache_queries)
                                          : ordered_json(nullptr)}};
  if (rate) {
    text += fmt::format("Prefix cache (server /metrics): {:.1f}% of {:.0f} prompt tokens hit\n",
                        100 * *facts.cache_hits / *facts.cache_queries, *facts.cache_queries);
  }
  return out;
}

}  // namespace latdoc::loadgen
