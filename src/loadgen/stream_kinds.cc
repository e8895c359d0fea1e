#include "loadgen/stream_kinds.h"

#include <algorithm>
#include <vector>

#include <fmt/core.h>

#include "stats/sample_summary.h"

namespace latdoc::loadgen {
namespace {

void PutMs(nlohmann::ordered_json& j, const std::string& name, std::vector<double> v) {
  if (v.empty()) {
    j["mean_" + name + "_ms"] = nullptr;
    j["median_" + name + "_ms"] = nullptr;
    j["p99_" + name + "_ms"] = nullptr;
    return;
  }
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  j["mean_" + name + "_ms"] = sum / double(v.size());
  j["median_" + name + "_ms"] = stats::PercentileOfSorted(v, 50);
  j["p99_" + name + "_ms"] = stats::PercentileOfSorted(v, 99);
}

std::string Line(const nlohmann::ordered_json& j, const std::string& name, const std::string& label) {
  if (j["mean_" + name + "_ms"].is_null()) return fmt::format("{:<40}{:>12}\n", label + " (ms):", "n/a");
  return fmt::format("{:<40}{:>12.2f}\n{:<40}{:>12.2f}\n", "Mean " + label + " (ms):",
                     j["mean_" + name + "_ms"].get<double>(), "P99 " + label + " (ms):",
                     j["p99_" + name + "_ms"].get<double>());
}

}  // namespace

void AddStreamKinds(const BenchRun& run, nlohmann::ordered_json& json, std::string& text) {
  uint64_t with_reasoning = 0, without_answer = 0, with_tools = 0, tool_deltas = 0;
  uint64_t reasoning_tokens = 0, answer_tokens = 0;
  std::vector<double> ttfr, ttfo, ttftc;
  for (const RequestRecord& r : run.records) {
    if (r.outcome != Outcome::kOk) continue;
    const double t0 = double(r.scheduled_ns);
    if (r.reasoning_tokens > 0) {
      ++with_reasoning;
      reasoning_tokens += uint64_t(r.reasoning_tokens);
      answer_tokens += uint64_t(r.answer_tokens);
      if (r.first_reasoning_ns >= 0) ttfr.push_back((double(r.first_reasoning_ns) - t0) / 1e6);
      if (r.first_answer_ns >= 0) ttfo.push_back((double(r.first_answer_ns) - t0) / 1e6);
      else ++without_answer;
    }
    if (r.tool_call_deltas > 0) {
      ++with_tools;
      tool_deltas += uint64_t(r.tool_call_deltas);
      if (r.first_tool_call_ns >= 0) ttftc.push_back((double(r.first_tool_call_ns) - t0) / 1e6);
    }
  }
  if (with_reasoning > 0) {
    nlohmann::ordered_json j;
    j["requests"] = with_reasoning;
    j["reasoning_tokens"] = reasoning_tokens;
    j["answer_tokens"] = answer_tokens;
    j["requests_without_answer"] = without_answer;
    PutMs(j, "ttfr", std::move(ttfr));
    PutMs(j, "ttfo", std::move(ttfo));
    text += fmt::format("{:-^52}\n", " Reasoning ");
    text += fmt::format("{:<40}{:>12}\n{:<40}{:>12}\n{:<40}{:>12}\n", "Requests with reasoning:",
                        with_reasoning, "Reasoning tokens:", reasoning_tokens, "Answer tokens:", answer_tokens);
    text += Line(j, "ttfr", "time to first reasoning token");
    text += Line(j, "ttfo", "time to first answer token");
    if (without_answer > 0)
      text += fmt::format("{:<40}{:>12}\n", "Requests with no answer token:", without_answer);
    json["reasoning"] = std::move(j);
  }
  if (with_tools > 0) {
    nlohmann::ordered_json j;
    j["requests"] = with_tools;
    j["deltas"] = tool_deltas;
    PutMs(j, "time_to_first_tool_call", std::move(ttftc));
    text += fmt::format("{:-^52}\n", " Tool calls ");
    text += fmt::format("{:<40}{:>12}\n{:<40}{:>12}\n", "Requests with a tool call:", with_tools,
                        "Tool-call deltas:", tool_deltas);
    text += Line(j, "time_to_first_tool_call", "time to first tool call");
    json["tool_calls"] = std::move(j);
  }
}

void AddSpecDecode(const BenchRun& run, nlohmann::ordered_json& json, std::string& text) {
  uint64_t chunks = 0, tokens = 0;
  for (const RequestRecord& r : run.records) {
    if (r.outcome != Outcome::kOk) continue;
    for (size_t i = 1; i < r.chunks.size(); ++i) {
      ++chunks;
      tokens += uint64_t(r.chunks[i].second);
    }
  }
  auto delta = [&](std::optional<double> servermetrics::ServerSnapshot::*f) -> std::optional<double> {
    if (!run.metrics_available || !(run.after.*f)) return std::nullopt;
    return *(run.after.*f) - (run.before.*f).value_or(0);
  };
  const auto drafts = delta(&servermetrics::ServerSnapshot::spec_decode_drafts_total);
  const auto draft_tokens = delta(&servermetrics::ServerSnapshot::spec_decode_draft_tokens_total);
  const auto accepted = delta(&servermetrics::ServerSnapshot::spec_decode_accepted_tokens_total);
  const double per_chunk = chunks ? double(tokens) / double(chunks) : 0;
  if (!(per_chunk > 1.0) && !(drafts && *drafts > 0)) return;
  auto opt = [](std::optional<double> v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr); };
  nlohmann::ordered_json j;
  j["stream_decode_chunks"] = chunks;
  j["stream_tokens_per_chunk"] = chunks ? nlohmann::ordered_json(per_chunk) : nlohmann::ordered_json(nullptr);
  j["metrics_drafts"] = opt(drafts);
  j["metrics_draft_tokens"] = opt(draft_tokens);
  j["metrics_accepted_tokens"] = opt(accepted);
  std::optional<double> mal, rate;
  if (drafts && accepted && *drafts > 0) mal = 1 + *accepted / *drafts;
  if (draft_tokens && accepted && *draft_tokens > 0) rate = *accepted / *draft_tokens;
  j["metrics_mean_acceptance_length"] = opt(mal);
  j["metrics_acceptance_rate"] = opt(rate);
  text += fmt::format("{:-^52}\n", " Speculative decoding ");
  text += fmt::format("{:<40}{:>12.3f}\n", "Tokens per decode chunk (stream):", per_chunk);
  if (mal) text += fmt::format("{:<40}{:>12.3f}\n", "Mean acceptance length (/metrics):", *mal);
  if (rate) text += fmt::format("{:<40}{:>11.1f}%\n", "Draft acceptance rate (/metrics):", 100 * *rate);
  json["spec_decode"] = std::move(j);
}

}  // namespace latdoc::loadgen
