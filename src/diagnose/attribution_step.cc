#include "diagnose/attribution_step.h"

#include <algorithm>
#include <map>

#include "attribution/attribute.h"
#include "attribution/attribution_json.h"
#include "rules/attribution_rules.h"
#include "trace/importers/registry.h"
#include "trace/model/trace.h"

namespace latdoc::diagnose {

std::string PlaceGpuTraces(const std::vector<std::string>& files,
                           const trace::ImportOptions& import, const attribution::LogClock& clock,
                           attribution::Timeline* t) {
  if (files.empty()) return "";
  std::string errors;
  try {
    trace::Trace tr;
    auto results = trace::ImportFiles(files, import, tr);
    for (const auto& r : results)
      if (!r.status.ok()) errors += (errors.empty() ? "" : "; ") + r.status.message();
    auto on_wall_clock = [&](const trace::GpuOp& op) {
      return op.kind == trace::GpuOpKind::kKernel && op.source < tr.sources.size() &&
             tr.sources[op.source].wall_clock_base_ns.has_value();
    };
    std::map<trace::NameId, std::vector<int64_t>> durs;
    tr.gpu_ops.ForEach([&](const trace::GpuOp& op) {
      if (on_wall_clock(op)) durs[op.name].push_back(op.dur_ns);
    });
    std::map<trace::NameId, uint32_t> index;  // into t->gpu_names
    for (auto& [name, v] : durs) {
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      index[name] = uint32_t(t->gpu_names.size());
      t->gpu_names.push_back({std::string(tr.names.Get(name)), v[v.size() / 2], int64_t(v.size())});
    }
    std::vector<bool> placed(tr.sources.size());
    tr.gpu_ops.ForEach([&](const trace::GpuOp& op) {
      if (!on_wall_clock(op)) return;
      const int64_t start = attribution::WallToMono(clock, *tr.sources[op.source].wall_clock_base_ns + op.start_ns);
      const int64_t end = start + op.dur_ns;
      if (end < t->start_ns || start > t->end_ns) return;
      t->gpu.push_back({start, end, index[op.name]});
      placed[op.source] = true;
    });
    for (size_t i = 0; i < placed.size(); ++i)
      if (placed[i]) t->gpu_files.push_back(tr.sources[i].path);
  } catch (const trace::SpillReadError& e) {
    errors += (errors.empty() ? "" : "; ") + std::string(e.what());
  }
  std::sort(t->gpu.begin(), t->gpu.end(),
            [](const attribution::GpuKernel& a, const attribution::GpuKernel& b) { return a.start_ns < b.start_ns; });
  t->have_gpu = !t->gpu.empty();
  return errors;
}

void AddAttribution(const LoadCapture& c, const std::string& log_file,
                    const std::vector<std::string>& gpu_traces, const trace::ImportOptions& import,
                    nlohmann::ordered_json& doc, std::vector<rules::Finding>& all) {
  attribution::Timeline t = attribution::FromBenchRun(c.run);
  t.host = c.host;
  t.server_cpu = c.server_cpu;
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
  const std::string gpu_error = PlaceGpuTraces(gpu_traces, import, c.clock, &t);
  const attribution::Thresholds th;
  attribution::Attribution a = attribution::Attribute(t, th);
  doc["attribution"] = attribution::AttributionJson(a, t, th);
  if (!log_error.empty()) doc["attribution"]["log_error"] = log_error;
  if (!gpu_error.empty()) doc["attribution"]["gpu_trace_error"] = gpu_error;
  std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
  if (!a.causes.empty()) {
    for (rules::Finding& f : all)
      if (f.id == "load.itl_stalls") f.advice = rules::AttributedStallsAdvice(a);
  }
  for (rules::Finding& f : fs) all.push_back(std::move(f));
}

}  // namespace latdoc::diagnose
