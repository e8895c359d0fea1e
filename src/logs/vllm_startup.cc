#include "logs/vllm_startup.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "base/secrets.h"
#include "base/strings.h"

namespace latdoc::logs {

namespace {

using Json = nlohmann::ordered_json;  // keeps the logged order of the flags

std::string Dump(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Python's repr of plain data: dicts, lists, tuples, strings, numbers, True/False/None, plus
// the two object forms vLLM's namespace holds: a dataclass repr Name(key=value, ...) (read as
// a dict of its keyword fields) and an enum repr <Enum.MEMBER: value> (read as "MEMBER").
class PyRepr {
 public:
  explicit PyRepr(std::string_view s) : s_(s) {}

  std::optional<Json> Whole() {
    std::optional<Json> v = Value(0);
    Space();
    if (!v || p_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  static bool NameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }
  void Space() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  bool Eat(char c) {
    Space();
    if (p_ < s_.size() && s_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }

  std::optional<Json> Value(int depth) {
    Space();
    if (p_ >= s_.size() || depth > kMaxDepth) return std::nullopt;
    const char c = s_[p_];
    if (c == '{') return Dict(depth);
    if (c == '[') return Items(']', depth);
    if (c == '(') return Items(')', depth);
    if (c == '\'' || c == '"') return String();
    if (c == '<') return EnumMember();
    if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) return Number();
    if (NameChar(c)) return Named(depth);
    return std::nullopt;
  }

  std::optional<Json> Dict(int depth) {
    ++p_;  // '{'
    Json out = Json::object();
    while (!Eat('}')) {
      std::optional<Json> key = Value(depth + 1);
      if (!key || !Eat(':')) return std::nullopt;
      std::optional<Json> value = Value(depth + 1);
      if (!value) return std::nullopt;
      out[key->is_string() ? key->get<std::string>() : Dump(*key)] = std::move(*value);
      if (!Eat(',') && !(Space(), p_ < s_.size() && s_[p_] == '}')) return std::nullopt;
    }
    return out;
  }

  std::optional<Json> Items(char close, int depth) {
    ++p_;  // '[' or '('
    Json out = Json::array();
    while (!Eat(close)) {
      std::optional<Json> item = Value(depth + 1);
      if (!item) return std::nullopt;
      out.push_back(std::move(*item));
      if (!Eat(',') && !(Space(), p_ < s_.size() && s_[p_] == close)) return std::nullopt;
    }
    return out;
  }

  // '...' or "..." with Python's escapes; \x, \u and \U become UTF-8.
  std::optional<Json> String() {
    const char quote = s_[p_++];
    std::string out;
    while (p_ < s_.size() && s_[p_] != quote) {
      char c = s_[p_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= s_.size()) return std::nullopt;
      c = s_[p_++];
      const int hex_digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
      if (hex_digits > 0) {
        if (p_ + static_cast<size_t>(hex_digits) > s_.size()) return std::nullopt;
        uint32_t cp = 0;
        for (int i = 0; i < hex_digits; ++i) {
          const char h = s_[p_++];
          if (!std::isxdigit(static_cast<unsigned char>(h))) return std::nullopt;
          cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                   ? h - '0'
                                                   : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
        }
        AppendUtf8(cp, out);
        continue;
      }
      switch (c) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        default: out += c; break;  // \\ \' \" and the rest as written
      }
    }
    if (p_ >= s_.size()) return std::nullopt;
    ++p_;  // the closing quote
    return Json(std::move(out));
  }

  // <CUDAGraphMode.NONE: 0> -> "NONE"; <function f at 0x7f..> -> "function f at 0x7f..".
  std::optional<Json> EnumMember() {
    const size_t close = s_.find('>', p_);
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view inner = s_.substr(p_ + 1, close - p_ - 1);
    p_ = close + 1;
    const size_t colon = inner.find(':');
    if (colon != std::string_view::npos) {
      inner = inner.substr(0, colon);
      const size_t dot = inner.rfind('.');
      if (dot != std::string_view::npos) inner = inner.substr(dot + 1);
    }
    return Json(std::string(Trim(inner)));
  }

  std::optional<Json> Number() {
    const size_t start = p_;
    while (p_ < s_.size() && (NameChar(s_[p_]) || s_[p_] == '-' || s_[p_] == '+')) ++p_;
    const std::string token(s_.substr(start, p_ - start));
    Json j = Json::parse(token, nullptr, false);
    if (!j.is_discarded() && j.is_number()) return j;
    return Json(token);  // 1_000, 0x10, inf: kept as written
  }

  // True, False, None, a bare name, b'bytes', or a dataclass repr Name(key=value, ...).
  std::optional<Json> Named(int depth) {
    const size_t start = p_;
    while (p_ < s_.size() && NameChar(s_[p_])) ++p_;
    const std::string_view name = s_.substr(start, p_ - start);
    if (p_ < s_.size() && (s_[p_] == '\'' || s_[p_] == '"') && (name == "b" || name == "r")) {
      return String();
    }
    if (p_ < s_.size() && s_[p_] == '(') {
      ++p_;
      Json fields = Json::object();
      while (!Eat(')')) {
        Space();
        const size_t key_start = p_;
        while (p_ < s_.size() && NameChar(s_[p_])) ++p_;
        const std::string key(s_.substr(key_start, p_ - key_start));
        const bool keyword = !key.empty() && p_ < s_.size() && s_[p_] == '=';
        if (keyword) {
          ++p_;
        } else {
          p_ = key_start;  // a positional argument: read, not kept
        }
        std::optional<Json> value = Value(depth + 1);
        if (!value) return std::nullopt;
        if (keyword) fields[key] = std::move(*value);
        if (!Eat(',') && !(Space(), p_ < s_.size() && s_[p_] == ')')) return std::nullopt;
      }
      return fields;
    }
    // Python's constants, and JSON's: vLLM logs a config object (CompilationConfig) as the
    // JSON its __repr__ dumps, {"level":0,"cudagraph_mode":0,"use_inductor":false}.
    if (name == "True" || name == "true") return Json(true);
    if (name == "False" || name == "false") return Json(false);
    if (name == "None" || name == "null") return Json(nullptr);
    return Json(std::string(name));
  }

  std::string_view s_;
  size_t p_ = 0;
};

std::string Word(const Json& v) { return v.is_string() ? v.get<std::string>() : Dump(v); }

}  // namespace

std::optional<std::string> VllmVersionFromMessage(std::string_view msg) {
  // "vLLM API server version 0.11.0", or (newer) "vLLM server version 0.11.1, serving model m".
  std::string_view v;
  for (std::string_view prefix : {"vLLM API server version ", "vLLM server version "}) {
    if (msg.substr(0, prefix.size()) == prefix) v = msg.substr(prefix.size());
  }
  v = Trim(v.substr(0, v.find(',')));
  if (v.empty() || v.size() > 64 || v.find(' ') != std::string_view::npos) return std::nullopt;
  return std::string(v);
}

std::optional<std::vector<LoggedFlag>> VllmFlagsFromLoggedArgs(std::string_view msg) {
  constexpr std::string_view kPrefix = "non-default args: ";
  if (msg.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::optional<Json> args = PyRepr(Trim(msg.substr(kPrefix.size()))).Whole();
  if (!args || !args->is_object()) return std::nullopt;
  std::vector<LoggedFlag> flags;
  for (auto& [key, value] : args->items()) {
    if (value.is_null() || IsSecretName(key)) continue;
    RedactSecretValues(value);
    std::string flag = "--" + key;
    for (size_t i = 2; i < flag.size(); ++i) {
      if (flag[i] == '_') flag[i] = '-';
    }
    if (key == "model_tag") flag = "--model";
    if (value.is_boolean()) {
      flags.push_back({value.get<bool>() ? flag : "--no-" + flag.substr(2), {}});
    } else if (value.is_array()) {
      if (value.empty()) continue;
      LoggedFlag f{flag, {}};
      for (const Json& item : value) f.values.push_back(Word(item));
      flags.push_back(std::move(f));
    } else {
      flags.push_back({flag, {Word(value)}});
    }
  }
  return flags;
}

std::optional<std::vector<std::string>> VllmArgvFromLoggedArgs(std::string_view msg) {
  std::optional<std::vector<LoggedFlag>> flags = VllmFlagsFromLoggedArgs(msg);
  if (!flags) return std::nullopt;
  std::vector<std::string> argv = {"vllm", "serve"};
  for (LoggedFlag& f : *flags) {
    argv.push_back(std::move(f.flag));
    for (std::string& v : f.values) argv.push_back(std::move(v));
  }
  return argv;
}

}  // namespace latdoc::logs
