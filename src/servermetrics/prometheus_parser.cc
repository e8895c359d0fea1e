// A sample of what this parses, from a vLLM V1 server (prometheus_client output):
//
//   # HELP vllm:num_requests_running Number of requests in model execution batches.
//   # TYPE vllm:num_requests_running gauge
//   vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
//   # TYPE vllm:time_to_first_token_seconds histogram
//   vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="m"} 0.0
//   vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 42.0
//   vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 42.0
//   vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 3.14
//
// and from llama.cpp's server (no labels, no timestamps):
//
//   # TYPE llamacpp:requests_processing gauge
//   llamacpp:requests_processing 2
#include "servermetrics/prometheus_parser.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace latdoc::servermetrics {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

void SkipBlanks(std::string_view s, size_t* i) {
  while (*i < s.size() && IsBlank(s[*i])) ++*i;
}

// A token up to the next blank or end.
std::string_view Token(std::string_view s, size_t* i) {
  const size_t start = *i;
  while (*i < s.size() && !IsBlank(s[*i])) ++*i;
  return s.substr(start, *i - start);
}

std::optional<double> ParseValue(std::string_view t) {
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  if (t.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

std::string UnescapeHelp(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
      out.push_back(s[i + 1] == 'n' ? '\n' : '\\');
      ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::optional<MetricType> ParseType(std::string_view t) {
  if (t == "counter") return MetricType::kCounter;
  if (t == "gauge") return MetricType::kGauge;
  if (t == "histogram") return MetricType::kHistogram;
  if (t == "summary") return MetricType::kSummary;
  if (t == "untyped" || t == "unknown") return MetricType::kUntyped;
  return std::nullopt;
}

}  // namespace

std::string_view MetricTypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kSummary: return "summary";
    case MetricType::kUntyped: break;
  }
  return "untyped";
}

std::optional<std::string_view> Sample::label(std::string_view name) const {
  for (const Label& l : labels) {
    if (l.name == name) return std::string_view(l.value);
  }
  return std::nullopt;
}

MetricType PrometheusPage::TypeOf(std::string_view name) const {
  if (auto it = families.find(name); it != families.end()) return it->second.type;
  for (std::string_view suffix : {"_bucket", "_sum", "_count", "_total", "_created"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      auto it = families.find(name.substr(0, name.size() - suffix.size()));
      if (it != families.end()) return it->second.type;
    }
  }
  return MetricType::kUntyped;
}

std::string PrometheusPage::DebugString() const {
  std::string out;
  for (const auto& [name, f] : families) {
    out += fmt::format("family {} {} {:?}\n", name, MetricTypeName(f.type), f.help);
  }
  for (const Sample& s : samples) {
    out += fmt::format("{}:{}{{", s.line, s.name);
    for (const Label& l : s.labels) out += fmt::format("{}={:?},", l.name, l.value);
    out += fmt::format("}} {}", s.value);
    if (s.timestamp_ms) out += fmt::format(" @{}", *s.timestamp_ms);
    out += "\n";
  }
  out += fmt::format("lines {} bad {}\n", lines, bad_line_count);
  for (const BadLine& b : bad_lines) out += b.message + "\n";
  return out;
}

void PrometheusParser::Feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
    if (nl == nullptr) {
      partial_.append(bytes);
      return;
    }
    const size_t len = static_cast<const char*>(nl) - bytes.data();
    if (partial_.empty()) {
      ParseLine(bytes.substr(0, len));
    } else {
      partial_.append(bytes.substr(0, len));
      ParseLine(partial_);
      partial_.clear();
    }
    bytes.remove_prefix(len + 1);
  }
}

PrometheusPage PrometheusParser::Finish() {
  if (!partial_.empty()) {
    std::string last;
    last.swap(partial_);
    ParseLine(last);
  }
  PrometheusPage out = std::move(page_);
  page_ = PrometheusPage();
  line_no_ = 0;
  return out;
}

void PrometheusParser::Bad(std::string message) {
  ++page_.bad_line_count;
  if (page_.bad_lines.size() < PrometheusPage::kMaxBadLinesKept) {
    page_.bad_lines.push_back(BadLine{line_no_, fmt::format("line {}: {}", line_no_, message)});
  }
}

// Long on purpose: the hot per-line scanner of the Prometheus text format, one pass over the
// line in the order of its grammar; left whole.
void PrometheusParser::ParseLine(std::string_view line) {
  ++line_no_;
  ++page_.lines;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t i = 0;
  SkipBlanks(line, &i);
  if (i == line.size()) return;  // blank line

  if (line[i] == '#') {
    ++i;
    SkipBlanks(line, &i);
    const std::string_view keyword = Token(line, &i);
    if (keyword != "HELP" && keyword != "TYPE") return;  // a plain comment
    SkipBlanks(line, &i);
    const std::string_view name = Token(line, &i);
    if (name.empty() || !IsNameStart(name[0])) {
      Bad(fmt::format("# {} without a metric name", keyword));
      return;
    }
    SkipBlanks(line, &i);
    MetricFamily& family = page_.families[std::string(name)];
    if (keyword == "HELP") {
      family.help = UnescapeHelp(line.substr(i));
      return;
    }
    const std::string_view type_word = Token(line, &i);
    std::optional<MetricType> type = ParseType(type_word);
    if (!type) {
      Bad(fmt::format("unknown metric type '{}' for {}", type_word, name));
      return;
    }
    family.type = *type;
    return;
  }

  // <name>
  const size_t name_start = i;
  if (!IsNameStart(line[i])) {
    Bad(fmt::format("expected a metric name at column {}", i + 1));
    return;
  }
  while (i < line.size() && IsNameChar(line[i])) ++i;
  Sample s;
  s.name.assign(line.substr(name_start, i - name_start));
  s.line = line_no_;

  // [{labels}]
  SkipBlanks(line, &i);
  if (i < line.size() && line[i] == '{') {
    ++i;
    for (;;) {
      SkipBlanks(line, &i);
      if (i >= line.size()) {
        Bad("unterminated label set");
        return;
      }
      if (line[i] == '}') {
        ++i;
        break;
      }
      const size_t ln_start = i;
      if (!IsNameStart(line[i]) || line[i] == ':') {
        Bad(fmt::format("expected a label name at column {}", i + 1));
        return;
      }
      while (i < line.size() && IsNameChar(line[i]) && line[i] != ':') ++i;
      Label label;
      label.name.assign(line.substr(ln_start, i - ln_start));
      SkipBlanks(line, &i);
      if (i >= line.size() || line[i] != '=') {
        Bad(fmt::format("expected '=' after label name {}", label.name));
        return;
      }
      ++i;
      SkipBlanks(line, &i);
      if (i >= line.size() || line[i] != '"') {
        Bad(fmt::format("expected '\"' to open the value of label {}", label.name));
        return;
      }
      ++i;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (i >= line.size()) break;
          const char e = line[i++];
          if (e == '\\' || e == '"') {
            label.value.push_back(e);
          } else if (e == 'n') {
            label.value.push_back('\n');
          } else {
            Bad(fmt::format("invalid escape '\\{}' in the value of label {}", e, label.name));
            return;
          }
        } else {
          label.value.push_back(c);
        }
      }
      if (!closed) {
        Bad(fmt::format("unterminated value of label {}", label.name));
        return;
      }
      s.labels.push_back(std::move(label));
      SkipBlanks(line, &i);
      if (i < line.size() && line[i] == ',') {
        ++i;
      } else if (i < line.size() && line[i] != '}') {
        Bad(fmt::format("expected ',' or '}}' after the value of label {}",
                        s.labels.back().name));
        return;
      }
    }
  }

  // <value> [<timestamp>]
  SkipBlanks(line, &i);
  const std::string_view value_tok = Token(line, &i);
  if (value_tok.empty()) {
    Bad(fmt::format("{}: missing value", s.name));
    return;
  }
  std::optional<double> value = ParseValue(value_tok);
  if (!value) {
    Bad(fmt::format("{}: bad value '{}'", s.name, value_tok));
    return;
  }
  s.value = *value;
  SkipBlanks(line, &i);
  if (i < line.size() && line[i] == '#') {
    // An OpenMetrics exemplar (" # {trace_id=\"..\"} 1.0"): not ours to read.
    i = line.size();
  }
  if (i < line.size()) {
    const std::string_view ts_tok = Token(line, &i);
    int64_t ts = 0;
    auto [p, ec] = std::from_chars(ts_tok.data(), ts_tok.data() + ts_tok.size(), ts);
    if (ec != std::errc() || p != ts_tok.data() + ts_tok.size()) {
      Bad(fmt::format("{}: bad timestamp '{}'", s.name, ts_tok));
      return;
    }
    s.timestamp_ms = ts;
    SkipBlanks(line, &i);
    if (i < line.size() && line[i] != '#') {
      Bad(fmt::format("{}: unexpected text after the timestamp", s.name));
      return;
    }
  }
  page_.samples.push_back(std::move(s));
}

PrometheusPage ParsePrometheusText(std::string_view text) {
  PrometheusParser p;
  p.Feed(text);
  return p.Finish();
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace latdoc::servermetrics
