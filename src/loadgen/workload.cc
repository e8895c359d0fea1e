#include "loadgen/workload.h"

#include <cmath>
#include <random>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/strings.h"

namespace latdoc::loadgen {

Status ValidateRandomOptions(const RandomWorkloadOptions& o) {
  if (o.input_len < 1) return InvalidArgument("--input-len must be at least 1");
  if (o.output_len < 1) return InvalidArgument("--output-len must be at least 1");
  if (!(o.range_ratio >= 0 && o.range_ratio < 1)) return InvalidArgument("--range-ratio must be in [0, 1)");
  if (o.prefix_len < 0) return InvalidArgument("--prefix-len must not be negative");
  // Past any model's context; the prompts are built in memory before the run.
  if (o.input_len > kMaxTokens || o.prefix_len > kMaxTokens || o.output_len > kMaxTokens) {
    return InvalidArgument(fmt::format("--input-len, --prefix-len and --output-len must be at most {}", kMaxTokens));
  }
  return Status::Ok();
}

namespace {
// A word per token, drawn from a small vocabulary (the simulator counts one token per word).
constexpr const char* kVocab[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
                                  "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
                                  "omicron", "pi", "rho", "sigma", "tau", "upsilon"};
constexpr size_t kVocabSize = sizeof(kVocab) / sizeof(kVocab[0]);
}  // namespace

std::vector<Prompt> RandomPrompts(const RandomWorkloadOptions& o, size_t count) {
  std::mt19937_64 rng(o.seed);
  auto lo = [&](int l) { return std::max(1, int(std::floor(l * (1 - o.range_ratio)))); };
  auto hi = [&](int l) { return std::max(1, int(std::ceil(l * (1 + o.range_ratio)))); };
  std::uniform_int_distribution<int> in_len(lo(o.input_len), hi(o.input_len));
  std::uniform_int_distribution<int> out_len(lo(o.output_len), hi(o.output_len));
  std::uniform_int_distribution<int> tok(0, o.vocab_size - 1);
  std::vector<int32_t> prefix;
  for (int i = 0; i < o.prefix_len; ++i) prefix.push_back(tok(rng));
  // Text prompts: the shared prefix's words, then words from a stream of their own (so the
  // lengths drawn from `rng` stay those of the token-id form for a seed).
  std::string prefix_text;
  for (size_t k = 0; k < prefix.size(); ++k) {
    if (k) prefix_text += ' ';
    prefix_text += kVocab[size_t(prefix[k]) % kVocabSize];
  }
  if (o.batch != 0) {  // batch 0 is the seed's own stream; a later one draws from its own
    std::seed_seq seq{uint32_t(o.seed), uint32_t(o.seed >> 32), uint32_t(o.batch), uint32_t(o.batch >> 32)};
    rng.seed(seq);
  }
  std::mt19937_64 words_rng((o.batch == 0 ? o.seed : rng()) ^ 0x9e3779b97f4a7c15ULL);
  std::uniform_int_distribution<size_t> word(0, kVocabSize - 1);
  std::vector<Prompt> out;
  out.reserve(count);
  // The prompts before `first` draw what they would have drawn, and build nothing.
  for (size_t i = 0; i < o.first; ++i) {
    int n = in_len(rng);
    out_len(rng);
    tok(rng);
    if (!o.token_ids)
      for (int k = 0; k < n; ++k) word(words_rng);
  }
  for (size_t i = o.first; i < o.first + count; ++i) {
    Prompt p;
    int n = in_len(rng);
    p.output_tokens = out_len(rng);
    p.input_tokens = o.prefix_len + n;
    std::vector<int32_t> ids = prefix;
    // vLLM: (offset + index + arange(n)) % vocab; offset random per request.
    int offset = tok(rng);
    if (o.token_ids) {
      for (int k = 0; k < n; ++k) ids.push_back(int32_t((offset + int(i) + k) % o.vocab_size));
      p.token_ids = std::move(ids);
    } else {
      // Words drawn one by one: the ids' sequence mapped onto 20 words would give only 20
      // distinct prompts of a length, each a prefix-cache hit after the first.
      p.text.reserve(size_t(p.input_tokens) * 7);
      p.text = prefix_text;
      for (int k = 0; k < n; ++k) {
        if (!p.text.empty()) p.text += ' ';
        p.text += kVocab[word(words_rng)];
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

int Words(const std::string& s) { return int(SplitWhitespace(s).size()); }

void Bad(FileWorkload& w, const std::string& where, const std::string& why) {
  ++w.bad_lines;
  if (w.bad_line_messages.size() < 10) w.bad_line_messages.push_back(where + ": " + why);
}

// {"prompt": "...", "output_len"|"max_tokens": N}
void ReadJsonl(const std::string& path, const std::string& text, int default_out, FileWorkload& w) {
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line = Trim(std::string_view(text).substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    std::string where = fmt::format("{}:{}", path, line_no);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      Bad(w, where, "not a JSON object");
      continue;
    }
    auto pr = j.find("prompt");
    if (pr == j.end() || !pr->is_string() || pr->get_ref<const std::string&>().empty()) {
      Bad(w, where, "no \"prompt\" string");
      continue;
    }
    Prompt p;
    p.text = pr->get<std::string>();
    p.input_tokens = Words(p.text);
    p.output_tokens = default_out;
    for (const char* key : {"output_len", "max_tokens"}) {
      if (auto it = j.find(key); it != j.end()) {
        if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxTokens) {
          Bad(w, where, fmt::format("\"{}\" must be a positive integer up to {}", key, kMaxTokens));
          p.output_tokens = -1;
        } else {
          p.output_tokens = int(it->get<int64_t>());
        }
        break;
      }
    }
    if (p.output_tokens > 0) w.prompts.push_back(std::move(p));
  }
}

// [{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", "value": ...}]}, ...]
Status ReadShareGpt(const std::string& path, const std::string& text, int default_out,
                    FileWorkload& w) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(fmt::format("{}: byte {}: not valid JSON", path, e.byte));
  }
  if (!j.is_array()) return InvalidArgument(path + ": expected a ShareGPT JSON array");
  for (size_t i = 0; i < j.size(); ++i) {
    std::string where = fmt::format("{}: entry {}", path, i);
    const auto& e = j[i];
    if (!e.is_object() || !e.contains("conversations") || !e["conversations"].is_array()) {
      Bad(w, where, "no \"conversations\" list");
      continue;
    }
    const auto& conv = e["conversations"];
    Prompt p;
    p.output_tokens = -1;
    for (const auto& turn : conv) {
      if (!turn.is_object() || !turn.contains("value") || !turn["value"].is_string()) continue;
      std::string from = turn.value("from", "");
      if (p.text.empty() && (from == "human" || from == "user")) {
        p.text = turn["value"].get<std::string>();
      } else if (!p.text.empty() && (from == "gpt" || from == "assistant")) {
        p.output_tokens = std::max(1, Words(turn["value"].get<std::string>()));
        break;
      }
    }
    if (p.text.empty()) {
      Bad(w, where, "no human turn");
      continue;
    }
    if (p.output_tokens < 0) p.output_tokens = default_out;
    p.input_tokens = Words(p.text);
    w.prompts.push_back(std::move(p));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<FileWorkload> LoadWorkloadFile(const std::string& path, int default_output_len) {
  ASSIGN_OR_RETURN(auto in, OpenInput(path));
  ASSIGN_OR_RETURN(std::string text, ReadAll(*in));
  FileWorkload w;
  std::string_view head = Trim(text);
  if (!head.empty() && head.front() == '[') {
    RETURN_IF_ERROR(ReadShareGpt(path, text, default_output_len, w));
  } else {
    ReadJsonl(path, text, default_output_len, w);
  }
  if (w.prompts.empty()) {
    return InvalidArgument(fmt::format("{}: no usable prompt ({} bad entries{}{})", path,
                                       w.bad_lines, w.bad_line_messages.empty() ? "" : "; first: ",
                                       w.bad_line_messages.empty() ? "" : w.bad_line_messages[0]));
  }
  return w;
}

}  // namespace latdoc::loadgen
