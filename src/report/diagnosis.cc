#include "report/diagnosis.h"

#include <utility>

namespace latdoc::report {

using nlohmann::ordered_json;

namespace {

// The keys ToJson writes itself; everything else of a document is a section.
bool IsTopLevelKey(const std::string& k) {
  for (const char* own : {"schema", "target", "generated_at", "target_reachable", "partial",
                          "partial_reason", "layers", "findings", "worst_severity", "change_first"})
    if (k == own) return true;
  return false;
}

std::string StringOf(const ordered_json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

const ordered_json& Diagnosis::Section(const char* key) const {
  static const ordered_json kNull;
  auto it = sections.find(key);
  return it != sections.end() ? *it : kNull;
}

std::string Diagnosis::Model() const {
  if (bench && bench->model_id) return *bench->model_id;
  if (sweep && sweep->model_id) return *sweep->model_id;
  if (baseline && baseline->model_id) return *baseline->model_id;
  return "";
}

std::string Diagnosis::MetricsServer() const {
  return bench && bench->server.server ? *bench->server.server : "";
}

std::string Diagnosis::LayerStatusOf(std::string_view layer) const {
  for (const LayerStatus& l : layers)
    if (l.layer == layer) return l.status;
  return "";
}

void ReadSectionFacts(Diagnosis& d) {
  auto load = [&](const char* key) -> std::optional<loadgen::LoadFacts> {
    const ordered_json& j = d.Section(key);
    if (!j.is_object()) return std::nullopt;
    auto f = loadgen::LoadFactsFromJson(j);
    return f.ok() ? std::optional(std::move(*f)) : std::nullopt;
  };
  d.bench = load("bench");
  d.baseline = load("baseline");
  d.sweep.reset();
  if (const ordered_json& j = d.Section("sweep"); j.is_object()) {
    auto c = loadgen::SweepCurveFromJson(j, "sweep");
    if (c.ok()) d.sweep = std::move(*c);
  }
}

void SetFindings(Diagnosis& d, std::vector<rules::Finding> ranked) {
  d.findings = std::move(ranked);
  d.change_first.reset();
  if (const rules::Finding* f = rules::ChangeFirst(d.findings))
    d.change_first = static_cast<size_t>(f - d.findings.data());
}

ordered_json ToJson(const Diagnosis& d) {
  ordered_json doc;
  doc["schema"] = "latdoc.diagnose/1";
  doc["target"] = d.target ? ordered_json(*d.target) : ordered_json(nullptr);
  doc["generated_at"] = d.generated_at;
  for (const auto& [k, v] : d.sections.items()) doc[k] = v;
  doc["target_reachable"] =
      d.target_reachable ? ordered_json(*d.target_reachable) : ordered_json(nullptr);
  if (d.partial) {
    doc["partial"] = true;
    doc["partial_reason"] = d.partial_reason;
  }
  ordered_json layers = ordered_json::object();
  for (const LayerStatus& l : d.layers) layers[l.layer] = l.status;
  doc["layers"] = std::move(layers);
  ordered_json findings = ordered_json::array();
  for (const rules::Finding& f : d.findings) findings.push_back(ordered_json(rules::ToJson(f)));
  doc["findings"] = std::move(findings);
  doc["worst_severity"] = rules::SeverityName(rules::WorstSeverity(d.findings));
  if (const rules::Finding* f = d.ChangeFirst()) {
    doc["change_first"] = {
        {"id", f->id}, {"layer", rules::LayerName(f->layer)}, {"title", f->title}};
  } else {
    doc["change_first"] = nullptr;
  }
  return doc;
}

Diagnosis DiagnosisFromJson(const ordered_json& doc) {
  Diagnosis d;
  if (!doc.is_object()) return d;
  if (auto it = doc.find("target"); it != doc.end() && it->is_string())
    d.target = it->get<std::string>();
  d.generated_at = StringOf(doc, "generated_at");
  if (auto it = doc.find("target_reachable"); it != doc.end() && it->is_boolean())
    d.target_reachable = it->get<bool>();
  if (auto it = doc.find("partial"); it != doc.end() && it->is_boolean())
    d.partial = it->get<bool>();
  d.partial_reason = StringOf(doc, "partial_reason");
  if (auto it = doc.find("layers"); it != doc.end() && it->is_object()) {
    for (const auto& [k, v] : it->items())
      if (v.is_string()) d.layers.push_back({k, v.get<std::string>()});
  }
  if (auto it = doc.find("findings"); it != doc.end() && it->is_array()) {
    for (const ordered_json& j : *it) {
      std::optional<rules::Finding> f = rules::FindingFromJson(nlohmann::json(j));
      if (f)
        d.findings.push_back(std::move(*f));
      else
        ++d.unreadable_findings;
    }
  }
  auto cf = doc.find("change_first");
  if (cf == doc.end()) {
    SetFindings(d, std::move(d.findings));
  } else if (cf->is_object()) {
    const std::string id = StringOf(*cf, "id"), layer = StringOf(*cf, "layer");
    for (size_t i = 0; i < d.findings.size(); ++i) {
      if (d.findings[i].id == id && rules::LayerName(d.findings[i].layer) == layer) {
        d.change_first = i;
        break;
      }
    }
  }
  for (const auto& [k, v] : doc.items())
    if (!IsTopLevelKey(k)) d.sections[k] = v;
  ReadSectionFacts(d);
  return d;
}

}  // namespace latdoc::report
