#include "rules/vllm_args.h"

#include <cctype>
#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace latdoc::rules {
namespace {

using nlohmann::json;

// A flag's name in canonical form. A long flag has dashes for underscores (vLLM converts
// everything between "--" and the first '.'); vLLM's short aliases of the flags the rules read
// (vllm/engine/arg_utils.py) become their long names, and --optimization-level becomes -O.
std::string DashName(std::string_view name) {
  std::string out(name);
  if (out.rfind("--", 0) == 0) {
    for (char& c : out) {
      if (c == '_') c = '-';
    }
  }
  return out;
}

std::string CanonicalName(std::string_view name) {
  std::string out = DashName(name);
  static const std::map<std::string_view, std::string_view> kAliases = {
      {"-tp", "--tensor-parallel-size"}, {"-pp", "--pipeline-parallel-size"},
      {"-dp", "--data-parallel-size"},   {"-cc", "--compilation-config"},
      {"-q", "--quantization"},          {"--optimization-level", "-O"},
  };
  auto it = kAliases.find(out);
  return it == kAliases.end() ? out : std::string(it->second);
}

// vLLM's human_readable_int: "25.6k" = 25,600 (decimal suffixes k m g t), "2K" = 2,048 (binary
// suffixes K M G T, integers only), or a plain integer.
std::optional<int64_t> HumanReadableInt(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  const char suffix = s.back();
  const std::string_view number = s.substr(0, s.size() - 1);
  int64_t mult = 0;
  switch (suffix) {
    case 'k': mult = 1000; break;
    case 'm': mult = 1000000; break;
    case 'g': mult = 1000000000; break;
    case 't': mult = 1000000000000; break;
    case 'K': mult = int64_t{1} << 10; break;
    case 'M': mult = int64_t{1} << 20; break;
    case 'G': mult = int64_t{1} << 30; break;
    case 'T': mult = int64_t{1} << 40; break;
    default: return ParseInt64(s);
  }
  // vLLM's pattern: digits, optionally "." and digits (decimals only with a decimal suffix).
  const size_t point = number.find('.');
  auto digits = [](std::string_view d) {
    return !d.empty() && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(number.substr(0, point)) ||
      (point != std::string_view::npos && !digits(number.substr(point + 1)))) {
    return std::nullopt;
  }
  if (std::islower(static_cast<unsigned char>(suffix))) {
    auto v = ParseDouble(number);
    if (!v || *v * static_cast<double>(mult) >= 9.2e18) return std::nullopt;
    return static_cast<int64_t>(*v * static_cast<double>(mult));
  }
  auto v = point == std::string_view::npos ? ParseInt64(number) : std::nullopt;
  int64_t out = 0;
  if (!v || __builtin_mul_overflow(*v, mult, &out)) return std::nullopt;
  return out;
}

// A dotted key's value as vLLM reads it: JSON, else a human-readable integer, else the string.
json DottedValue(std::string_view text) {
  json v = json::parse(text, nullptr, false);
  if (!v.is_discarded()) return v;
  if (auto n = HumanReadableInt(text)) return *n;
  return std::string(text);
}

// vLLM's recursive_dict_update: objects merge, lists extend, anything else is replaced.
void Merge(json& into, const json& update) {
  for (auto it = update.begin(); it != update.end(); ++it) {
    json& slot = into[it.key()];
    if (it->is_object() && slot.is_object()) {
      Merge(slot, *it);
    } else if (it->is_array() && slot.is_array()) {
      slot.insert(slot.end(), it->begin(), it->end());
    } else {
      slot = *it;
    }
  }
}

bool IsNumber(std::string_view w) { return ParseDouble(w).has_value(); }

// A word that names a flag (starts with '-' and is not a negative number).
bool IsFlagWord(std::string_view w) { return w.size() > 1 && w[0] == '-' && !IsNumber(w); }

// "--flag=VALUE" for this flag.
bool IsGluedForm(std::string_view w, std::string_view flag) {
  return w.size() > flag.size() && w.substr(0, flag.size()) == flag && w[flag.size()] == '=';
}

}  // namespace

std::vector<std::string> NormalizeVllmArgv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  // Dotted keys per flag, in the order the flags first appear.
  std::vector<std::pair<std::string, json>> dicts;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (!IsFlagWord(w)) {
      out.push_back(w);
      continue;
    }
    // -O3, -O=3 (not -O.key, a dotted key of -O).
    if (w.size() > 2 && w[0] == '-' && w[1] == 'O' && w[2] != '.') {
      out.push_back("-O");
      out.push_back(w.substr(w[2] == '=' ? 3 : 2));
      continue;
    }
    const size_t eq = w.find('=');
    std::string_view key = std::string_view(w).substr(0, eq);
    const size_t dot = key.find('.');
    if (dot == std::string_view::npos) {
      std::string name = CanonicalName(key);
      out.push_back(eq == std::string::npos ? name : name + w.substr(eq));
      continue;
    }
    // A dotted key: --flag.a.b[+] VALUE or --flag.a.b[+]=VALUE.
    std::string value;
    if (eq != std::string::npos) {
      value = w.substr(eq + 1);
    } else if (i + 1 < argv.size()) {
      value = argv[++i];
    } else {
      continue;  // no value: vLLM itself fails to start
    }
    std::string_view path = key.substr(dot + 1);
    const bool append = !path.empty() && path.back() == '+';
    if (append) path.remove_suffix(1);
    json leaf;
    if (append) {
      leaf = json::array();
      for (auto item : Split(value, ',')) leaf.push_back(DottedValue(Trim(item)));
    } else {
      leaf = DottedValue(value);
    }
    std::vector<std::string_view> keys = Split(path, '.');
    for (auto k = keys.rbegin(); k != keys.rend(); ++k) leaf = json{{std::string(*k), leaf}};
    // vLLM groups dotted keys by the flag as written: "-cc.x" and "--compilation-config.y" make
    // two objects, the later one replacing the earlier. Grouped so, named canonically below.
    const std::string flag = DashName(key.substr(0, dot));
    auto it = std::find_if(dicts.begin(), dicts.end(), [&](const auto& d) { return d.first == flag; });
    if (it == dicts.end()) {
      dicts.emplace_back(flag, json::object());
      it = dicts.end() - 1;
    }
    Merge(it->second, leaf);
  }
  // As vLLM does, the merged objects come last, so they win over the same flag given whole.
  for (const auto& [flag, obj] : dicts) {
    out.push_back(CanonicalName(flag));
    out.push_back(obj.dump(-1, ' ', false, json::error_handler_t::replace));  // argv may not be UTF-8
  }
  return out;
}

std::vector<std::string> FlagValues(const std::vector<std::string>& argv, std::string_view flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w == flag) {
      out.push_back(i + 1 < argv.size() && !IsFlagWord(argv[i + 1]) ? argv[i + 1] : std::string());
    } else if (IsGluedForm(w, flag)) {
      out.push_back(w.substr(flag.size() + 1));
    }
  }
  return out;
}

std::optional<std::string> FlagValue(const std::vector<std::string>& argv, std::string_view flag) {
  std::vector<std::string> all = FlagValues(argv, flag);
  if (all.empty()) return std::nullopt;
  return std::move(all.back());
}

std::optional<double> FlagDouble(const std::vector<std::string>& argv, std::string_view flag) {
  auto v = FlagValue(argv, flag);
  if (!v) return std::nullopt;
  if (auto d = ParseDouble(*v)) return d;
  if (auto n = HumanReadableInt(*v)) return static_cast<double>(*n);
  return std::nullopt;
}

bool HasFlag(const std::vector<std::string>& argv, std::string_view flag) {
  const std::string negated = flag.rfind("--", 0) == 0 ? "--no-" + std::string(flag.substr(2)) : "";
  bool on = false;
  for (const std::string& w : argv) {
    if (w == flag || IsGluedForm(w, flag)) on = true;
    else if (!negated.empty() && w == negated) on = false;
  }
  return on;
}

}  // namespace latdoc::rules
