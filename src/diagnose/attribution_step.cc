#include "diagnose/attribution_step.h"

#include <algorithm>

#include "attribution/attribute.h"
#include "attribution/attribution_json.h"
#include "rules/attribution_rules.h"

namespace latdoc::diagnose {

void AddAttribution(const LoadCapture& c, const std::string& log_file, nlohmann::ordered_json& doc,
                    std::vector<rules::Finding>& all) {
  attribution::Timeline t = attribution::FromBenchRun(c.run);
  t.host = c.host;
  std::string log_error;
  // The log's lines are second-resolution evidence: read (a second pass over the file) only
  // when the host samples give no log file size to time its writes with.
  const bool log_size_sampled = std::any_of(t.host.begin(), t.host.end(), [](const attribution::HostPoint& p) {
    return p.log_bytes.has_value();
  });
  if (!log_file.empty() && !log_size_sampled) {
    Status s = attribution::ReadLogEvents(log_file, c.clock, &t);
    if (!s.ok()) log_error = s.message();  // the logs layer says so too
  }
  const attribution::Thresholds th;
  attribution::Attribution a = attribution::Attribute(t, th);
  doc["attribution"] = attribution::AttributionJson(a, t, th);
  if (!log_error.empty()) doc["attribution"]["log_error"] = log_error;
  std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
  if (!a.causes.empty()) {
    for (rules::Finding& f : all)
      if (f.id == "load.itl_stalls") f.advice = rules::AttributedStallsAdvice(a);
  }
  for (rules::Finding& f : fs) all.push_back(std::move(f));
}

}  // namespace latdoc::diagnose
