#include "host/vllm_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <yaml.h>
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

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Digits of `base`, '_' allowed between them, into v; false on any other character, on no
// digit at all, or on overflow.
bool Digits(std::string_view s, int base, int64_t& v) {
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

std::optional<int64_t> PlainInt(std::string_view t) {
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
std::optional<double> PlainFloat(std::string_view t) {
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


// YAML 1.1's plain scalars as PyYAML's safe_load reads them (its resolver's patterns):
// null, booleans, ints in decimal, 0b binary, 0 octal, 0x hex and base 60 (1:30 is 90), '_'
// allowed after the first digit, and floats with a dot. Anything else is a string.
Json Plain(std::string_view t) {
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

// A YAML document read with libyaml's event parser into JSON, as PyYAML's yaml.safe_load reads
// it (PyYAML's own C loader is libyaml too): plain scalars resolved by YAML 1.1's rules above,
// quoted, literal and folded scalars as strings, anchors and aliases expanded, the standard
// tags (!!str, !!int, ...) honoured, one document only.
class YamlReader {
 public:
  explicit YamlReader(std::string_view text) {
    yaml_parser_initialize(&parser_);
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~YamlReader() {
    if (has_event_) yaml_event_delete(&event_);
    yaml_parser_delete(&parser_);
  }
  YamlReader(const YamlReader&) = delete;
  YamlReader& operator=(const YamlReader&) = delete;

  // The first document's root (null for an empty stream or document).
  StatusOr<Json> Document() {
    if (Status s = Next(); !s.ok()) return s;  // STREAM-START
    if (Status s = Next(); !s.ok()) return s;
    if (event_.type == YAML_STREAM_END_EVENT) return Json(nullptr);
    if (event_.type != YAML_DOCUMENT_START_EVENT) return Error("a document was expected");
    if (Status s = Next(); !s.ok()) return s;
    StatusOr<Json> root = Node(0);
    if (!root.ok()) return root;
    if (Status s = Next(); !s.ok()) return s;  // DOCUMENT-END
    if (Status s = Next(); !s.ok()) return s;
    if (event_.type == YAML_DOCUMENT_START_EVENT) {  // yaml.safe_load reads one and refuses more
      return InvalidArgument(fmt::format("line {}: a second document (vLLM reads one)", Line()));
    }
    return root;
  }

 private:
  static constexpr int kMaxDepth = 32;
  static constexpr size_t kMaxAliasedNodes = 100000;

  size_t Line() const { return event_.start_mark.line + 1; }
  Status Error(std::string_view what) const {
    return InvalidArgument(fmt::format("line {}: {}", Line(), what));
  }

  // Moves to the next event; a syntax error names libyaml's line and problem.
  Status Next() {
    if (has_event_) yaml_event_delete(&event_);
    has_event_ = yaml_parser_parse(&parser_, &event_) != 0;
    if (has_event_) return Status::Ok();
    const char* problem = parser_.problem != nullptr ? parser_.problem : "not YAML";
    return InvalidArgument(fmt::format("line {}: {}", parser_.problem_mark.line + 1, problem));
  }

  // The node that starts at the current event; leaves the current event at its last event.
  StatusOr<Json> Node(int depth) {
    if (depth > kMaxDepth) return Error("nested too deep");
    switch (event_.type) {
      case YAML_ALIAS_EVENT: {
        auto it = anchors_.find(reinterpret_cast<const char*>(event_.data.alias.anchor));
        if (it == anchors_.end()) return Error("an alias of no anchor");
        // Aliases of aliases grow exponentially ("billion laughs"): a config file has no need.
        aliased_nodes_ += CountNodes(it->second);
        if (aliased_nodes_ > kMaxAliasedNodes) return Error("aliases expand to too many values");
        return it->second;
      }
      case YAML_SCALAR_EVENT: {
        StatusOr<Json> v = Scalar();
        if (v.ok()) Remember(event_.data.scalar.anchor, *v);
        return v;
      }
      case YAML_SEQUENCE_START_EVENT: {
        std::string anchor = AnchorName(event_.data.sequence_start.anchor);
        Json out = Json::array();
        while (true) {
          if (Status s = Next(); !s.ok()) return s;
          if (event_.type == YAML_SEQUENCE_END_EVENT) break;
          StatusOr<Json> item = Node(depth + 1);
          if (!item.ok()) return item;
          out.push_back(std::move(*item));
        }
        if (!anchor.empty()) anchors_[anchor] = out;
        return out;
      }
      case YAML_MAPPING_START_EVENT: {
        std::string anchor = AnchorName(event_.data.mapping_start.anchor);
        Json out = Json::object();
        while (true) {
          if (Status s = Next(); !s.ok()) return s;
          if (event_.type == YAML_MAPPING_END_EVENT) break;
          StatusOr<Json> key = Node(depth + 1);
          if (!key.ok()) return key;
          if (Status s = Next(); !s.ok()) return s;
          StatusOr<Json> value = Node(depth + 1);
          if (!value.ok()) return value;
          // PyYAML keys may be numbers or booleans; vLLM formats them with str().
          out[key->is_string() ? key->get<std::string>() : key->dump()] = std::move(*value);
        }
        if (!anchor.empty()) anchors_[anchor] = out;
        return out;
      }
      default:
        return Error("unexpected YAML event");
    }
  }

  StatusOr<Json> Scalar() {
    const auto& sc = event_.data.scalar;
    const std::string_view text(reinterpret_cast<const char*>(sc.value), sc.length);
    const std::string_view tag = sc.tag != nullptr ? reinterpret_cast<const char*>(sc.tag) : "";
    constexpr std::string_view kStd = "tag:yaml.org,2002:";
    if (!tag.empty()) {
      const std::string_view kind =
          tag.substr(0, kStd.size()) == kStd ? tag.substr(kStd.size()) : std::string_view();
      if (kind != "str" && kind != "int" && kind != "float" && kind != "bool" && kind != "null") {
        const std::string shown = kind.empty() ? std::string(tag) : fmt::format("!!{}", kind);
        return Error(fmt::format("the tag {} is not one yaml.safe_load reads", shown));
      }
      if (kind == "str") return Json(std::string(text));
      Json v = Plain(text);
      const bool fits = (kind == "int" && v.is_number_integer()) ||
                        (kind == "float" && v.is_number()) || (kind == "bool" && v.is_boolean()) ||
                        (kind == "null" && v.is_null());
      if (!fits) return Error(fmt::format("'{}' is not a valid !!{}", text, kind));
      return kind == "float" ? Json(v.get<double>()) : v;
    }
    // Only a plain scalar is resolved; quoted, literal (|) and folded (>) ones are strings.
    if (sc.style == YAML_PLAIN_SCALAR_STYLE) return Plain(text);
    return Json(std::string(text));
  }

  static size_t CountNodes(const Json& j) {
    size_t n = 1;
    if (j.is_structured()) {
      for (const Json& c : j) n += CountNodes(c);
    }
    return n;
  }

  static std::string AnchorName(const yaml_char_t* a) {
    return a != nullptr ? std::string(reinterpret_cast<const char*>(a)) : std::string();
  }
  void Remember(const yaml_char_t* anchor, const Json& v) {
    if (anchor != nullptr) anchors_[AnchorName(anchor)] = v;
  }

  yaml_parser_t parser_{};
  yaml_event_t event_{};
  bool has_event_ = false;
  std::map<std::string, Json> anchors_;
  size_t aliased_nodes_ = 0;
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
