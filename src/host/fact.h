// Fact<T>: one value a collector read from the host, or "unknown" with the reason it could not
// be read ("/sys/.../numa_node: Permission denied", "nvidia-smi: not installed"). A value the
// host does not report is never stood in for by 0: rules see `known() == false` and report
// `skip` with the reason.
//
// JSON form (so facts can be collected on one machine and judged on another):
//   known:   {"value": <T>, "source": "/sys/bus/pci/devices/0000:00:06.0/numa_node"}
//   unknown: {"unknown": "<reason>"}
#pragma once

#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace latdoc::host {

template <typename T>
struct Fact {
  std::optional<T> value;
  std::string source;  // where a known value came from (a host path or a command)
  std::string reason;  // why the value is unknown

  static Fact Known(T v, std::string source = {}) {
    Fact f;
    f.value = std::move(v);
    f.source = std::move(source);
    return f;
  }
  static Fact Unknown(std::string why) {
    Fact f;
    f.reason = why.empty() ? std::string("not collected") : std::move(why);
    return f;
  }

  bool known() const { return value.has_value(); }
  // REQUIRES: known().
  const T& operator*() const { return *value; }
  const T* operator->() const { return &*value; }
  T value_or(T fallback) const { return value.value_or(std::move(fallback)); }
};

template <typename T>
void to_json(nlohmann::json& j, const Fact<T>& f) {
  if (f.value) {
    j = nlohmann::json{{"value", *f.value}};
    if (!f.source.empty()) j["source"] = f.source;
  } else {
    j = nlohmann::json{{"unknown", f.reason.empty() ? "not collected" : f.reason}};
  }
}

// Throws nlohmann::json::exception on a wrong type; FactsFromJson catches it and names the key.
template <typename T>
void from_json(const nlohmann::json& j, Fact<T>& f) {
  f = Fact<T>();
  if (j.contains("value")) {
    f.value = j.at("value").get<T>();
    if (j.contains("source")) f.source = j.at("source").get<std::string>();
  } else {
    f.reason = j.value("unknown", std::string("not collected"));
  }
}

}  // namespace latdoc::host
