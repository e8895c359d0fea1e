#include "diagnose/sessions_step.h"

#include "rules/workload_rules.h"

namespace latdoc::diagnose {

nlohmann::ordered_json SessionsStep(const loadgen::BenchOptions& bench,
                                    const loadgen::MultiTurnOptions& sessions, double think_time_s,
                                    std::vector<rules::Finding>& all, std::string* why) {
  if (Status st = loadgen::ValidateMultiTurnOptions(sessions); !st.ok()) {
    *why = st.message();
    return nullptr;
  }
  const loadgen::SessionWorkload w = loadgen::SyntheticSessions(sessions);
  loadgen::BenchOptions o = bench;
  o.progress = false;
  auto run = loadgen::RunSessions(o, w, think_time_s);
  if (!run.ok()) {
    *why = run.status().message();
    return nullptr;
  }
  loadgen::SessionReport r = loadgen::ReportSessions(w, *run, think_time_s, "synthetic", &sessions);
  nlohmann::ordered_json fj = nlohmann::ordered_json::array();
  for (const auto& f : rules::MultiTurnFindings(r.facts)) {
    fj.push_back(nlohmann::ordered_json::parse(rules::ToJson(f).dump()));
    all.push_back(f);
  }
  r.json["findings"] = std::move(fj);
  return std::move(r.json);
}

}  // namespace latdoc::diagnose
