#include "rules/finding.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace latdoc::rules {

namespace {

std::string_view ShareBasisName(ShareBasis b) {
  switch (b) {
    case ShareBasis::kLatency: return "mean end-to-end latency";
    case ShareBasis::kTracedGpuTime: return "traced GPU time";
    case ShareBasis::kOffRequestPath: return "not on the measured request path";
  }
  return "?";
}

}  // namespace

std::string_view ShareOf(const Finding& f) { return ShareBasisName(f.share_basis); }

ShareBasis ParseShareOf(std::string_view share_of, Layer layer) {
  for (ShareBasis b :
       {ShareBasis::kLatency, ShareBasis::kTracedGpuTime, ShareBasis::kOffRequestPath})
    if (ShareBasisName(b) == share_of) return b;
  return layer == Layer::kKernel ? ShareBasis::kTracedGpuTime : ShareBasis::kLatency;
}

void PlaceTraceFindings(std::vector<Finding>& findings, bool of_server_under_test,
                        bool load_measured) {
  for (Finding& f : findings) {
    if (of_server_under_test) {
      f.share_basis = ShareBasis::kLatency;
    } else if (load_measured) {
      f.share_basis = ShareBasis::kOffRequestPath;
      f.latency_share.reset();
    } else {
      f.share_basis = ShareBasis::kTracedGpuTime;
    }
  }
}

std::string_view LayerName(Layer l) {
  switch (l) {
    case Layer::kNetwork: return "network";
    case Layer::kSystem: return "system";
    case Layer::kKernel: return "kernel";
    case Layer::kConfig: return "config";
    case Layer::kLoad: return "load";
  }
  return "?";
}

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kSkip: return "skip";
    case Severity::kOk: return "ok";
    case Severity::kInfo: return "info";
    case Severity::kWarn: return "warn";
    case Severity::kFail: return "fail";
  }
  return "?";
}

std::optional<Layer> ParseLayer(std::string_view s) {
  for (Layer l : {Layer::kNetwork, Layer::kSystem, Layer::kKernel, Layer::kConfig, Layer::kLoad})
    if (LayerName(l) == s) return l;
  return std::nullopt;
}

std::optional<Severity> ParseSeverity(std::string_view s) {
  for (Severity v : {Severity::kSkip, Severity::kOk, Severity::kInfo, Severity::kWarn,
                     Severity::kFail})
    if (SeverityName(v) == s) return v;
  return std::nullopt;
}

nlohmann::json ToJson(const Finding& f) {
  nlohmann::json ev = nlohmann::json::array();
  for (const Evidence& e : f.evidence) {
    nlohmann::json j = {{"name", ToValidUtf8(e.name)}};
    if (e.value) j["value"] = *e.value; else j["value"] = nullptr;
    if (!e.unit.empty()) j["unit"] = e.unit;
    if (!e.text.empty()) j["text"] = ToValidUtf8(e.text);  // may quote input
    ev.push_back(std::move(j));
  }
  nlohmann::json j = {{"id", f.id},
                      {"layer", LayerName(f.layer)},
                      {"severity", SeverityName(f.severity)},
                      {"title", ToValidUtf8(f.title)},
                      {"evidence", std::move(ev)},
                      {"advice", ToValidUtf8(f.advice)}};
  if (f.latency_share) j["latency_share"] = *f.latency_share;
  if (f.latency_share || f.share_basis == ShareBasis::kOffRequestPath) j["share_of"] = ShareOf(f);
  return j;
}

std::optional<Finding> FindingFromJson(const nlohmann::json& j) {
  // A key of the wrong type reads as absent: a finding read back never throws.
  auto text = [](const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (!j.is_object()) return std::nullopt;
  Finding f;
  f.id = text(j, "id");
  auto layer = ParseLayer(text(j, "layer"));
  auto sev = ParseSeverity(text(j, "severity"));
  if (f.id.empty() || !layer || !sev) return std::nullopt;
  f.layer = *layer;
  f.severity = *sev;
  f.title = text(j, "title");
  f.advice = text(j, "advice");
  if (auto it = j.find("latency_share"); it != j.end() && it->is_number())
    f.latency_share = it->get<double>();
  f.share_basis = ParseShareOf(text(j, "share_of"), f.layer);
  if (auto ev = j.find("evidence"); ev != j.end() && ev->is_array()) {
    for (const auto& e : *ev) {
      if (!e.is_object()) continue;
      Evidence x;
      x.name = text(e, "name");
      if (auto v = e.find("value"); v != e.end() && v->is_number()) x.value = v->get<double>();
      x.unit = text(e, "unit");
      x.text = text(e, "text");
      f.evidence.push_back(std::move(x));
    }
  }
  return f;
}

void RankFindings(std::vector<Finding>& findings) {
  // Problems (fail, warn) come first, ranked by the latency they explain; a passed check that
  // carries a share (the part of TTFT that was fine) explains nothing to change.
  auto problem = [](const Finding& f) {
    return f.severity == Severity::kFail || f.severity == Severity::kWarn;
  };
  std::stable_sort(findings.begin(), findings.end(), [&](const Finding& a, const Finding& b) {
    if (problem(a) != problem(b)) return problem(a);
    if (!problem(a) && a.severity != b.severity) return a.severity > b.severity;
    double sa = a.latency_share.value_or(-1), sb = b.latency_share.value_or(-1);
    if (sa != sb) return sa > sb;
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.id < b.id;
  });
}

const Finding* ChangeFirst(const std::vector<Finding>& ranked) {
  for (Severity level : {Severity::kFail, Severity::kWarn}) {
    auto it = std::find_if(ranked.begin(), ranked.end(), [&](const Finding& f) {
      return f.severity == level && !f.advice.empty();
    });
    if (it != ranked.end()) return &*it;
  }
  return nullptr;
}

Severity WorstSeverity(const std::vector<Finding>& findings) {
  Severity w = Severity::kOk;
  for (const Finding& f : findings)
    if (f.severity > w) w = f.severity;
  return w;
}

}  // namespace latdoc::rules
