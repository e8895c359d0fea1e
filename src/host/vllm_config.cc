#include "host/vllm_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/secrets.h"
#include "base/strings.h"

namespace latdoc::host {

namespace {

using Json = nlohmann::ordered_json;

std::string_view Basename(std::string_view p) {
  const size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

struct YamlLine {
  int number = 0;       // 1-based, for messages
  size_t indent = 0;
  std::string_view text;  // without the indentation and the comment
};

// The text of a line without a trailing comment (" #" outside quotes, or "#" first). A quote
// opens a quoted scalar only where one can start (first, or after ':', '-', '[', '{' or ','),
// so the apostrophe in a plain "Bob's model" does not hide the comment after it.
std::string_view StripComment(std::string_view s) {
  char quote = 0;
  char before = 0;  // the last non-blank character outside quotes
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == '\'' && quote == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
        ++i;  // '' is one quote inside '...'
      } else if (c == '\\' && quote == '"') {
        ++i;  // an escape inside "..."
      } else if (c == quote) {
        quote = 0;
        before = c;
      }
      continue;
    }
    if ((c == '\'' || c == '"') &&
        (before == 0 || std::string_view(":-[{,").find(before) != std::string_view::npos)) {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    } else if (c != ' ' && c != '\t') {
      before = c;
    }
  }
  return s;
}

class YamlReader {
 public:
  explicit YamlReader(std::string_view text) {
    int number = 0;
    for (std::string_view raw : Split(text, '\n')) {
      ++number;
      if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
      std::string_view body = StripComment(raw);
      size_t indent = 0;
      while (indent < body.size() && body[indent] == ' ') ++indent;
      std::string_view t = Trim(body);
      if (t.empty()) continue;
      if (indent == 0 && (t == "---" || t.substr(0, 4) == "--- ")) {  // a document's start
        if (!lines_.empty() && second_document_ == 0) second_document_ = number;
        if (t != "---") lines_.push_back({number, 0, Trim(t.substr(4))});  // "--- {a: 1}"
        continue;
      }
      if (indent == 0 && t == "...") break;                                    // document end
      lines_.push_back({number, indent, t});
    }
  }

  StatusOr<Json> Document() {
    if (second_document_ != 0) {  // yaml.safe_load reads one document and refuses more
      return InvalidArgument(fmt::format("line {}: a second document (vLLM reads one)", second_document_));
    }
    if (lines_.empty()) return Json::object();  // an empty file: no flags
    const char first = lines_[0].text[0];
    if (first == '{' || first == '[') {  // a flow collection, perhaps over several lines
      std::string all;
      for (const YamlLine& l : lines_) (all += ' ') += l.text;
      i_ = lines_.size();
      return Inline(lines_[0], Trim(all));
    }
    StatusOr<Json> v = Block(lines_[0].indent);
    if (!v.ok()) return v;
    if (i_ < lines_.size()) return Error(lines_[i_], "indentation does not match the lines before");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 32;

  Status Error(const YamlLine& l, std::string_view what) const {
    return InvalidArgument(fmt::format("line {}: {}", l.number, what));
  }

  static bool IsSequenceItem(std::string_view t) { return t == "-" || t.substr(0, 2) == "- "; }

  // The lines from i_ at exactly `indent`, as one mapping or one sequence.
  StatusOr<Json> Block(size_t indent) {
    if (++depth_ > kMaxDepth) return Error(lines_[i_], "nested too deep");
    StatusOr<Json> out = IsSequenceItem(lines_[i_].text) ? Sequence(indent) : Mapping(indent);
    --depth_;
    return out;
  }

  // The value after "key:" or "- ": inline, or the more-indented block on the next lines.
  StatusOr<Json> ValueOf(const YamlLine& l, std::string_view rest, size_t indent) {
    rest = Trim(rest);
    if (!rest.empty()) return Inline(l, rest);
    if (i_ < lines_.size() && lines_[i_].indent > indent) return Block(lines_[i_].indent);
    // PyYAML also takes a block sequence at the key's own indentation.
    if (i_ < lines_.size() && lines_[i_].indent == indent && IsSequenceItem(lines_[i_].text) &&
        !IsSequenceItem(l.text)) {
      return Sequence(indent);
    }
    return Json(nullptr);
  }

  StatusOr<Json> Mapping(size_t indent) {
    Json out = Json::object();
    while (i_ < lines_.size() && lines_[i_].indent == indent && !IsSequenceItem(lines_[i_].text)) {
      const YamlLine l = lines_[i_++];
      auto [key, rest, ok] = SplitKey(l.text);
      if (!ok) return Error(l, "expected 'key: value'");
      StatusOr<Json> v = ValueOf(l, rest, indent);
      if (!v.ok()) return v;
      out[key] = std::move(*v);
    }
    return out;
  }

  StatusOr<Json> Sequence(size_t indent) {
    Json out = Json::array();
    while (i_ < lines_.size() && lines_[i_].indent == indent && IsSequenceItem(lines_[i_].text)) {
      const YamlLine l = lines_[i_++];
      std::string_view rest = l.text.substr(1);
      if (auto [key, value, ok] = SplitKey(Trim(rest)); ok && !Trim(rest).empty() &&
                                                       Trim(rest)[0] != '[' && Trim(rest)[0] != '{' &&
                                                       Trim(rest)[0] != '"' && Trim(rest)[0] != '\'') {
        return Error(l, "a mapping inside a list is not read");
      }
      StatusOr<Json> v = ValueOf(l, rest, indent);
      if (!v.ok()) return v;
      out.push_back(std::move(*v));
    }
    return out;
  }

  struct KeyRest {
    std::string key;
    std::string_view rest;
    bool ok;
  };
  // "key: rest" (the colon followed by a blank or the end); a quoted key is unquoted.
  static KeyRest SplitKey(std::string_view t) {
    size_t colon = std::string_view::npos;
    if (!t.empty() && (t[0] == '"' || t[0] == '\'')) {
      size_t p = 0;
      std::optional<Json> key = Quoted(t, p);  // escapes read as in values: "api\x5fkey"
      if (!key) return {"", "", false};
      colon = p < t.size() && t[p] == ':' ? p : std::string_view::npos;
      if (colon == std::string_view::npos) return {"", "", false};
      if (colon + 1 < t.size() && t[colon + 1] != ' ') return {"", "", false};
      return {key->get<std::string>(), t.substr(colon + 1), true};
    }
    if (!t.empty() && (t[0] == '{' || t[0] == '[')) return {"", "", false};  // not a key
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == ':' && (i + 1 == t.size() || t[i + 1] == ' ' || t[i + 1] == '\t')) {
        colon = i;
        break;
      }
    }
    if (colon == std::string_view::npos || colon == 0) return {"", "", false};
    return {std::string(Trim(t.substr(0, colon))), t.substr(colon + 1), true};
  }

  StatusOr<Json> Inline(const YamlLine& l, std::string_view s) {
    const char c = s[0];
    if (c == '&' || c == '*' || c == '!') return Error(l, "anchors, aliases and tags are not read");
    if (c == '|' || c == '>') return Error(l, "multi-line strings are not read");
    size_t p = 0;
    std::optional<Json> v = Flow(s, p, 0);
    while (p < s.size() && s[p] == ' ') ++p;
    if (!v || p != s.size()) return Error(l, "a value that does not parse");
    return *v;
  }

  // A flow value at s[p]: [a, b], {k: v}, a quoted string, or a plain scalar (in a flow
  // collection it ends at ',', ']' or '}').
  std::optional<Json> Flow(std::string_view s, size_t& p, int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    while (p < s.size() && s[p] == ' ') ++p;
    if (p >= s.size()) return std::nullopt;
    if (s[p] == '[' || s[p] == '{') {
      const bool map = s[p] == '{';
      const char close = map ? '}' : ']';
      ++p;
      Json out = map ? Json::object() : Json::array();
      while (true) {
        while (p < s.size() && s[p] == ' ') ++p;
        if (p < s.size() && s[p] == close) {
          ++p;
          return out;
        }
        if (map) {
          std::optional<Json> key = Flow(s, p, depth + 1);
          while (p < s.size() && s[p] == ' ') ++p;
          if (!key || p >= s.size() || s[p] != ':') return std::nullopt;
          ++p;
          std::optional<Json> value = Flow(s, p, depth + 1);
          if (!value) return std::nullopt;
          out[key->is_string() ? key->get<std::string>() : key->dump()] = std::move(*value);
        } else {
          std::optional<Json> item = Flow(s, p, depth + 1);
          if (!item) return std::nullopt;
          out.push_back(std::move(*item));
        }
        while (p < s.size() && s[p] == ' ') ++p;
        if (p < s.size() && s[p] == ',') {
          ++p;
        } else if (p >= s.size() || s[p] != close) {
          return std::nullopt;
        }
      }
    }
    if (s[p] == '"' || s[p] == '\'') return Quoted(s, p);
    const bool in_flow = depth > 0;
    const size_t start = p;
    while (p < s.size()) {
      const char c = s[p];
      if (in_flow && (c == ',' || c == ']' || c == '}')) break;
      if (in_flow && c == ':' && (p + 1 == s.size() || s[p + 1] == ' ')) break;
      ++p;
    }
    return Plain(Trim(s.substr(start, p - start)));
  }

  static std::optional<Json> Quoted(std::string_view s, size_t& p) {
    const char quote = s[p++];
    std::string out;
    while (p < s.size()) {
      const char c = s[p++];
      if (quote == '\'' && c == '\'') {
        if (p < s.size() && s[p] == '\'') {  // '' is one quote
          out += '\'';
          ++p;
          continue;
        }
        return Json(std::move(out));
      }
      if (quote == '"' && c == '"') return Json(std::move(out));
      if (quote == '"' && c == '\\' && p < s.size()) {
        const char e = s[p++];
        const int hex_digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (hex_digits > 0) {  // \xNN, \uNNNN, \UNNNNNNNN as UTF-8
          int64_t cp = 0;
          if (p + size_t(hex_digits) > s.size() || !Digits(s.substr(p, size_t(hex_digits)), 16, cp) ||
              s.substr(p, size_t(hex_digits)).find('_') != std::string_view::npos) {
            return std::nullopt;
          }
          p += size_t(hex_digits);
          AppendUtf8(uint32_t(std::min<int64_t>(cp, 0x110000)), out);
          continue;
        }
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == '0' ? '\0' : e;
        continue;
      }
      out += c;
    }
    return std::nullopt;  // unterminated
  }

  // YAML 1.1's plain scalars as PyYAML's safe_load reads them (its resolver's patterns):
  // null, booleans, ints in decimal, 0b binary, 0 octal, 0x hex and base 60 (1:30 is 90), '_'
  // allowed after the first digit, and floats with a dot. Anything else is a string.
  static Json Plain(std::string_view t) {
    if (t.empty() || t == "~" || t == "null" || t == "Null" || t == "NULL") return Json(nullptr);
    for (const char* yes : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}) {
      if (t == yes) return Json(true);
    }
    for (const char* no : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}) {
      if (t == no) return Json(false);
    }
    if (std::optional<int64_t> i = PlainInt(t)) return Json(*i);
    if (std::optional<double> d = PlainFloat(t)) return Json(*d);
    return Json(std::string(t));
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  // Digits of `base`, '_' allowed between them, into v; false on any other character, on no
  // digit at all, or on overflow.
  static bool Digits(std::string_view s, int base, int64_t& v) {
    bool any = false;
    for (char c : s) {
      if (c == '_') continue;
      const int lower = std::tolower(static_cast<unsigned char>(c));
      const int d = IsDigit(c) ? c - '0' : (lower >= 'a' && lower <= 'f') ? lower - 'a' + 10 : 99;
      if (d >= base || v > (INT64_MAX - d) / base) return false;
      v = v * base + d;
      any = true;
    }
    return any;
  }

  static std::optional<int64_t> PlainInt(std::string_view t) {
    bool negative = false;
    if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
      negative = t[0] == '-';
      t.remove_prefix(1);
    }
    if (t.empty() || !IsDigit(t[0])) return std::nullopt;
    int64_t v = 0;
    bool ok = false;
    if (t.substr(0, 2) == "0b") {
      ok = Digits(t.substr(2), 2, v);
    } else if (t.substr(0, 2) == "0x") {
      ok = Digits(t.substr(2), 16, v);
    } else if (t[0] == '0') {
      ok = t.find_first_not_of('_', 1) == std::string_view::npos || Digits(t.substr(1), 8, v);
    } else if (t.find(':') != std::string_view::npos) {  // base 60: 1:30:00
      const std::vector<std::string_view> parts = Split(t, ':');
      ok = Digits(parts[0], 10, v);
      for (size_t k = 1; ok && k < parts.size(); ++k) {
        int64_t part = 0;
        ok = !parts[k].empty() && parts[k].size() <= 2 && Digits(parts[k], 10, part) &&
             part < 60 && v <= (INT64_MAX - part) / 60;
        if (ok) v = v * 60 + part;
      }
    } else {
      ok = Digits(t, 10, v);
    }
    if (!ok) return std::nullopt;
    return negative ? -v : v;
  }

  // [-+]?, digits (with '_' after the first) around one dot, and an exponent with its sign:
  // "1.5", ".5", "1.", "1.0e+3". "1e3" is a string to PyYAML.
  static std::optional<double> PlainFloat(std::string_view t) {
    std::string text;
    size_t p = 0;
    if (p < t.size() && (t[p] == '-' || t[p] == '+')) text += t[p++];
    if (p > 0 && p < t.size() && t[p] == '.') return std::nullopt;  // "-.5" is a string to PyYAML
    const size_t mantissa = p;
    bool dot = false, digit = false;
    for (; p < t.size() && (IsDigit(t[p]) || t[p] == '_' || t[p] == '.'); ++p) {
      if (t[p] == '_') {
        if (p == mantissa) return std::nullopt;
        continue;
      }
      if (t[p] == '.') {
        if (dot) return std::nullopt;
        dot = true;
      } else {
        digit = true;
      }
      text += t[p];
    }
    if (!dot || !digit) return std::nullopt;
    if (p < t.size() && (t[p] == 'e' || t[p] == 'E')) {
      if (p + 2 >= t.size() || (t[p + 1] != '-' && t[p + 1] != '+')) return std::nullopt;
      for (size_t k = p + 2; k < t.size(); ++k) {
        if (!IsDigit(t[k])) return std::nullopt;
      }
      text += t.substr(p);
      p = t.size();
    }
    if (p != t.size()) return std::nullopt;
    const char* b = text.data() + (text[0] == '+' ? 1 : 0);
    const char* e = text.data() + text.size();
    double d = 0;
    if (auto r = std::from_chars(b, e, d); r.ec == std::errc() && r.ptr == e && std::isfinite(d)) {
      return d;
    }
    return std::nullopt;
  }

  std::vector<YamlLine> lines_;
  int second_document_ = 0;  // the line of a "---" after content, if any
  size_t i_ = 0;
  int depth_ = 0;
};

// Python's str() of a scalar.
std::string PyStr(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  if (v.is_number_float()) {
    const double d = v.get<double>();
    std::string s = fmt::format("{}", d);   // shortest round-trip, as Python's repr
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
  }
  // json.dumps separators: ", " and ": ".
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string PyJsonDumps(const Json& v) {
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += Json(k).dump(-1, ' ', false, Json::error_handler_t::replace) + ": " + PyJsonDumps(x);
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + PyJsonDumps(v[i]);
    return out + "]";
  }
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

std::optional<std::string> VllmConfigPath(const std::vector<std::string>& argv) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--config") return argv[i + 1];
  }
  return std::nullopt;
}

StatusOr<std::vector<std::string>> VllmConfigFileArgs(std::string_view yaml) {
  StatusOr<Json> doc = YamlReader(yaml).Document();
  if (!doc.ok()) return doc.status();
  if (doc->is_null()) return std::vector<std::string>{};
  if (!doc->is_object()) return InvalidArgument("the file is not a mapping of flags to values");
  std::vector<std::string> out;
  for (auto& [key, value] : doc->items()) {
    if (IsSecretName(key)) {  // its value is never copied, whatever its form
      out.push_back("--" + key);
      out.emplace_back(kRedacted);
      continue;
    }
    RedactSecretValues(value);
    if (value.is_boolean()) {
      // False gives "--no-key" only where the parser has that option, and vLLM's options are
      // spelled with dashes: "enable_prefix_caching: false" gives nothing.
      if (value.get<bool>()) {
        out.push_back("--" + key);
      } else if (key.find('_') == std::string::npos) {
        out.push_back("--no-" + key);
      }
    } else if (value.is_array()) {
      if (value.empty()) continue;
      out.push_back("--" + key);
      for (const Json& item : value) out.push_back(item.is_object() || item.is_array() ? PyJsonDumps(item) : PyStr(item));
    } else if (value.is_object()) {
      out.push_back("--" + key);
      out.push_back(PyJsonDumps(value));
    } else {
      out.push_back("--" + key);
      out.push_back(PyStr(value));
    }
  }
  return out;
}

std::vector<std::string> WithConfigFileArgs(const std::vector<std::string>& argv,
                                            const std::vector<std::string>& file_args) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--config" && i + 1 < argv.size()) {
      ++i;
      continue;
    }
    rest.push_back(argv[i]);
  }
  // After `serve` and the model (when the command line gives one), else after the entry
  // point's module (python -m vllm.entrypoints.openai.api_server), else after the program.
  size_t at = rest.empty() ? 0 : 1;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == "serve" && i > 0 && Basename(rest[i - 1]) == "vllm") {
      at = i + 1;
      if (at < rest.size() && !rest[at].empty() && rest[at][0] != '-') ++at;
      break;
    }
    if (rest[i].rfind("vllm.entrypoints", 0) == 0) {
      at = i + 1;
      break;
    }
  }
  std::vector<std::string> out(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(at));
  out.insert(out.end(), file_args.begin(), file_args.end());
  out.insert(out.end(), rest.begin() + static_cast<std::ptrdiff_t>(at), rest.end());
  return out;
}

}  // namespace latdoc::host
