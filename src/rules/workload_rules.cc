#include "rules/workload_rules.h"

#include <fmt/core.h>

namespace latdoc::rules {

namespace {

// The sessions' turns summed up: the first and last turns that completed, the prompt tokens
// (all turns), the share resent from earlier turns, TTFT's growth and the cache's hit rate.
struct TurnSummary {
  const TurnFacts* first;
  const TurnFacts* last;
  double prompt, reusable_share, growth;
  std::optional<double> hit_rate;
};

// The evidence both findings carry.
void AddTurnEvidence(const MultiTurnFacts& f, const TurnSummary& c, Finding& x) {
  x.evidence.push_back({"ttft_mean_first_turn", c.first->mean_ttft_ms, "ms", ""});
  x.evidence.push_back({"ttft_mean_last_turn", c.last->mean_ttft_ms, "ms", ""});
  x.evidence.push_back({"prompt_tokens_first_turn", c.first->mean_prompt_tokens, "", ""});
  x.evidence.push_back({"prompt_tokens_last_turn", c.last->mean_prompt_tokens, "", ""});
  x.evidence.push_back({"resent_share", 100 * c.reusable_share, "%", ""});
  x.evidence.push_back({"prefix_cache_hit_rate",
                        c.hit_rate ? std::optional(100 * *c.hit_rate) : std::nullopt, "%", ""});
  if (f.queue_mean_ms) x.evidence.push_back({"server_queue_mean", *f.queue_mean_ms, "ms", ""});
  if (f.prefill_mean_ms)
    x.evidence.push_back({"server_prefill_mean", *f.prefill_mean_ms, "ms", ""});
}

// The server's prefix cache missed much of the history the sessions resent.
Finding PrefixCacheMissFinding(const MultiTurnFacts& f, const TurnSummary& c) {
  Finding x;
  x.id = "load.prefix_cache_misses";
  x.layer = Layer::kConfig;
  x.severity = Severity::kWarn;
  const double missed = (c.reusable_share - *c.hit_rate) * c.prompt;  // tokens prefilled again
  x.title = fmt::format(
      "Prefix-cache misses: the sessions resent {:.0f}% of their prompt tokens but the server's "
      "prefix cache hit {:.1f}%; about {:.0f} tokens of history were prefilled again (TTFT turn "
      "{} {:.1f} ms -> turn {} {:.1f} ms)",
      100 * c.reusable_share, 100 * *c.hit_rate, missed, c.first->turn, c.first->mean_ttft_ms,
      c.last->turn, c.last->mean_ttft_ms);
  AddTurnEvidence(f, c, x);
  x.evidence.push_back({"history_tokens_prefilled_again", missed, "", ""});
  x.advice =
      "Turn prefix caching on (vLLM: --enable-prefix-caching; on by default in V1 unless "
      "--no-enable-prefix-caching); give the cache room (a higher --gpu-memory-utilization, "
      "fewer --max-num-seqs) so that a session's blocks survive its think time; route a "
      "session's turns to one replica (session affinity at the balancer: hash on a session or "
      "user id); and bound the prefill of long histories per step with --max-num-batched-tokens "
      "so that decodes do not stall behind it.";
  x.latency_share =
      c.last->mean_ttft_ms > 0 && c.growth > 1 ? std::optional(1 - 1 / c.growth) : std::nullopt;
  return x;
}

// TTFT grows across turns as the prompts grow.
Finding TtftGrowthFinding(const MultiTurnFacts& f, const TurnSummary& c) {
  Finding x;
  x.id = "load.ttft_grows_across_turns";
  x.layer = Layer::kLoad;
  x.severity = c.hit_rate ? Severity::kInfo : Severity::kWarn;
  std::string why;
  if (f.queue_mean_ms && f.prefill_mean_ms) {
    why = *f.queue_mean_ms > *f.prefill_mean_ms ? "mostly queueing" : "mostly prefill compute";
  } else {
    why = "queueing and prefill of the new tokens";
  }
  x.title = fmt::format(
      "TTFT grows {:.1f}x across turns (turn {} {:.1f} ms -> turn {} {:.1f} ms) as prompts grow "
      "from {:.0f} to {:.0f} tokens: {}{}",
      c.growth, c.first->turn, c.first->mean_ttft_ms, c.last->turn, c.last->mean_ttft_ms,
      c.first->mean_prompt_tokens, c.last->mean_prompt_tokens, why,
      c.hit_rate
          ? fmt::format("; the prefix cache hit {:.1f}% of prompt tokens", 100 * *c.hit_rate)
          : "; the server's /metrics gave no prefix-cache counters, so misses cannot be ruled out");
  AddTurnEvidence(f, c, x);
  x.advice =
      "Queueing: fewer sessions per replica or more replicas; prefill compute: a larger "
      "--max-num-batched-tokens (or chunked prefill) to prefill new tokens in fewer "
      "steps, and shorter histories (summarise or truncate old turns).";
  x.latency_share = std::optional(1 - 1 / c.growth);
  return x;
}

}  // namespace

std::vector<Finding> MultiTurnFindings(const MultiTurnFacts& f) {
  std::vector<Finding> out;
  const TurnFacts* first = nullptr;
  const TurnFacts* last = nullptr;
  double prompt = 0, reused = 0;
  for (const TurnFacts& t : f.turns) {
    if (t.completed == 0) continue;
    if (!first) first = &t;
    last = &t;
    prompt += t.mean_prompt_tokens * double(t.completed);
    reused += t.mean_reused_tokens * double(t.completed);
  }
  if (!first || first == last || prompt <= 0) return out;
  const double reusable_share = reused / prompt;
  const double growth = first->mean_ttft_ms > 0 ? last->mean_ttft_ms / first->mean_ttft_ms : 0;
  std::optional<double> hit_rate;
  if (f.cache_queries && f.cache_hits && *f.cache_queries > 0) hit_rate = *f.cache_hits / *f.cache_queries;
  const TurnSummary c{first, last, prompt, reusable_share, growth, hit_rate};

  if (hit_rate && reusable_share >= 0.2 && *hit_rate < kMissFactor * reusable_share) {
    out.push_back(PrefixCacheMissFinding(f, c));
    return out;
  }
  if (growth >= kGrowthFactor) out.push_back(TtftGrowthFinding(f, c));
  return out;
}

}  // namespace latdoc::rules
