#include "logs/vllm_stats.h"

#include <charconv>

namespace latdoc::logs {
namespace {

bool Consume(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// Reads a number at the front of `s` and removes it. No leading blanks, no sign.
template <typename T>
bool TakeNumber(std::string_view& s, T* out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || p == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(p - s.data()));
  return true;
}

// Parses the ", "-joined parts after the engine prefix into `st`. Returns false when a known
// key has a malformed value or a required key is missing.
bool ParseParts(std::string_view s, VllmStats* st) {
  bool have_prompt = false, have_gen = false, have_running = false, have_waiting = false,
       have_kv = false;
  while (!s.empty()) {
    size_t comma = s.find(", ");
    std::string_view part = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 2);
    // A trailing '.' ends the V0 line.
    if (s.empty() && !part.empty() && part.back() == '.') part.remove_suffix(1);
    if (Consume(part, "Avg prompt throughput: ")) {
      if (!TakeNumber(part, &st->prompt_tps)) return false;
      have_prompt = true;
    } else if (Consume(part, "Avg generation throughput: ")) {
      if (!TakeNumber(part, &st->gen_tps)) return false;
      have_gen = true;
    } else if (Consume(part, "Running: ")) {
      if (!TakeNumber(part, &st->running)) return false;
      have_running = true;
    } else if (Consume(part, "Waiting: ")) {
      if (!TakeNumber(part, &st->waiting)) return false;
      have_waiting = true;
    } else if (Consume(part, "Pending: ")) {   // V0's name for it
      if (!TakeNumber(part, &st->waiting)) return false;
      have_waiting = true;
      st->v0 = true;
    } else if (Consume(part, "Swapped: ")) {   // V0 only
      int64_t v = 0;
      if (!TakeNumber(part, &v)) return false;
      st->swapped = v;
      st->v0 = true;
    } else if (Consume(part, "Preemptions: ")) {
      int64_t v = 0;
      if (!TakeNumber(part, &v)) return false;
      st->preemptions = v;
    } else if (Consume(part, "GPU KV cache usage: ")) {
      if (!TakeNumber(part, &st->kv_pct)) return false;
      have_kv = true;
    } else if (Consume(part, "CPU KV cache usage: ")) {
      double v = 0;
      if (!TakeNumber(part, &v)) return false;
      st->cpu_kv_pct = v;
    } else if (Consume(part, "Prefix cache hit rate: ")) {
      double v = 0;
      if (!TakeNumber(part, &v)) return false;
      st->prefix_hit_pct = v;
    }
    // Any other part (Corrupted, External prefix cache hit rate, MM cache hit rate) is skipped.
  }
  return have_prompt && have_gen && have_running && have_waiting && have_kv;
}

}  // namespace

std::optional<VllmStats> ParseVllmV1Stats(std::string_view msg) {
  VllmStats st;
  if (Consume(msg, "Engine ")) {
    if (!TakeNumber(msg, &st.engine) || !Consume(msg, ": ")) return std::nullopt;
  } else {
    int n = 0;
    if (!TakeNumber(msg, &n) || !Consume(msg, " Engines Aggregated: ")) return std::nullopt;
    st.engine = -1;
  }
  if (msg.substr(0, 5) != "Avg p") return std::nullopt;
  if (!ParseParts(msg, &st)) return std::nullopt;
  return st;
}

// V0's line, and V1's before it named the engine (about vLLM 0.8: "Avg prompt throughput: ...
// Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: ..."): V0 says Pending and Swapped.
std::optional<VllmStats> ParseVllmV0Stats(std::string_view msg) {
  if (msg.substr(0, 23) != "Avg prompt throughput: ") return std::nullopt;
  VllmStats st;
  if (!ParseParts(msg, &st)) return std::nullopt;
  return st;
}

std::optional<double> ParseVllmV0PrefixHitRate(std::string_view msg) {
  if (!Consume(msg, "Prefix cache hit rate: GPU: ")) return std::nullopt;
  double v = 0;
  if (!TakeNumber(msg, &v) || !Consume(msg, "%")) return std::nullopt;
  return v;
}

}  // namespace latdoc::logs
