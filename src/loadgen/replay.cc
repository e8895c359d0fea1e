#include "loadgen/replay.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/strings.h"
#include "loadgen/jsonl.h"

namespace latdoc::loadgen {
namespace {

constexpr const char* kWords[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
                                  "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
                                  "omicron", "pi", "rho", "sigma", "tau", "upsilon"};
constexpr size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

// The first n words of the stream named by `seed`.
std::string Words(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> w(0, kNumWords - 1);
  std::string s;
  s.reserve(size_t(n) * 7);
  for (int i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += kWords[w(rng)];
  }
  return s;
}

std::optional<int64_t> Int(const nlohmann::json& j, std::initializer_list<const char*> keys,
                           std::string* key_found) {
  for (const char* k : keys) {
    auto it = j.find(k);
    if (it == j.end()) continue;
    *key_found = k;
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxTokens) return -1;
    return it->get<int64_t>();
  }
  return std::nullopt;
}

}  // namespace

StatusOr<ReplayWorkload> LoadReplayFile(const std::string& path, int default_output_len) {
  ASSIGN_OR_RETURN(auto in, OpenInput(path));
  ASSIGN_OR_RETURN(std::string text, ReadAll(*in));
  ReplayWorkload w;
  struct Entry { double t_ms; Prompt p; };
  std::vector<Entry> entries;
  std::unordered_map<std::string, uint64_t> session_seed;
  auto bad = [&](const std::string& where, const std::string& why) {
    ++w.bad_lines;
    if (w.bad_line_messages.size() < 10) w.bad_line_messages.push_back(where + ": " + why);
  };
  JsonlObjects lines(text, path, bad);
  nlohmann::json j;
  std::string where;
  while (lines.Next(&j, &where)) {
    double t_ms = -1;
    if (auto it = j.find("timestamp"); it != j.end() && it->is_number()) t_ms = it->get<double>();
    else if (auto s = j.find("arrival_time_s"); s != j.end() && s->is_number()) t_ms = s->get<double>() * 1e3;
    if (!(t_ms >= 0) || !std::isfinite(t_ms) || t_ms > 1e12) {
      bad(where, "no \"timestamp\" (ms) or \"arrival_time_s\": a non-negative number");
      continue;
    }
    Prompt p;
    std::string key;
    auto out = Int(j, {"output_length", "output_tokens", "max_tokens"}, &key);
    if (out && *out < 0) {
      bad(where, fmt::format("\"{}\" must be a positive integer up to {}", key, kMaxTokens));
      continue;
    }
    p.output_tokens = out ? int(*out) : default_output_len;
    if (auto pr = j.find("prompt"); pr != j.end()) {
      if (!pr->is_string() || Trim(pr->get_ref<const std::string&>()).empty()) {
        bad(where, "\"prompt\" must be a non-empty string");
        continue;
      }
      p.text = pr->get<std::string>();
      p.input_tokens = int(SplitWhitespace(p.text).size());
    } else {
      auto n = Int(j, {"input_length", "prompt_tokens", "input_tokens"}, &key);
      if (!n) {
        bad(where, "no \"prompt\" or \"input_length\"");
        continue;
      }
      if (*n < 0) {
        bad(where, fmt::format("\"{}\" must be a positive integer up to {}", key, kMaxTokens));
        continue;
      }
      uint64_t seed = 0x9e3779b97f4a7c15ULL * (lines.line_no() + 1);  // a stream of its own
      if (auto s = j.find("session_id"); s != j.end() && !s->is_null()) {
        const std::string id = s->is_string() ? s->get<std::string>() : s->dump();
        seed = session_seed.emplace(id, 0xd1b54a32d192ed03ULL ^ std::hash<std::string>{}(id)).first->second;
      }
      p.input_tokens = int(*n);
      p.text = Words(seed, p.input_tokens);
    }
    entries.push_back({t_ms, std::move(p)});
  }
  if (entries.empty()) {
    return InvalidArgument(fmt::format("{}: no usable request ({} bad lines{}{})", path, w.bad_lines,
                                       w.bad_line_messages.empty() ? "" : "; first: ",
                                       w.bad_line_messages.empty() ? "" : w.bad_line_messages[0]));
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.t_ms < b.t_ms; });
  const double t0 = entries.front().t_ms;
  for (Entry& e : entries) {
    w.offsets_ns.push_back(std::llround((e.t_ms - t0) * 1e6));
    w.prompts.push_back(std::move(e.p));
  }
  return w;
}

std::vector<int64_t> ScaleOffsets(const std::vector<int64_t>& offsets_ns, double speed) {
  std::vector<int64_t> out;
  out.reserve(offsets_ns.size());
  for (int64_t o : offsets_ns) out.push_back(std::llround(double(o) / speed));
  return out;
}

}  // namespace latdoc::loadgen
