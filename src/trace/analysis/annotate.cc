#include "trace/analysis/annotate.h"
#include "base/json_text.h"

#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace latdoc::trace {
namespace {

// "1234.567" µs from ns, exact.
std::string Us(int64_t ns) {
  const bool neg = ns < 0;
  const uint64_t a = neg ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", neg ? "-" : "", a / 1000, a % 1000);
}

std::string Q(std::string_view s) { return JsonText(nlohmann::json(std::string(s))); }

}  // namespace

std::string RenderAnnotatedTrace(const Trace& trace, const std::vector<Annotation>& annotations,
                                 const AnnotateOptions& options) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto add = [&](const std::string& ev) {
    if (!first) out += ",\n";
    first = false;
    out += ev;
  };
  constexpr int kFindingsPid = 999999;
  add(fmt::format("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": {{\"name\": \"latdoc findings\"}}}}",
                  kFindingsPid));
  std::map<std::string, int> tids;
  for (const Annotation& a : annotations) {
    auto [it, inserted] = tids.emplace(a.track, static_cast<int>(tids.size()) + 1);
    if (inserted) {
      add(fmt::format("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": {}}}}}",
                      kFindingsPid, it->second, Q(a.track)));
    }
    add(fmt::format("{{\"ph\": \"X\", \"cat\": \"latdoc\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"finding\": {}, \"detail\": {}}}}}",
                    Q(a.name), kFindingsPid, it->second, Us(a.start_ns), Us(a.dur_ns), Q(a.track), Q(a.detail)));
  }
  if (trace.gpu_ops.size() + trace.api_calls.size() <= options.max_events) {
    trace.gpu_ops.ForEach([&](const GpuOp& op) {
      add(fmt::format("{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": \"GPU {}:{}\", \"tid\": \"stream {}\", \"ts\": {}, \"dur\": {}, \"args\": {{\"correlation\": {}}}}}",
                      GpuOpKindName(op.kind), Q(trace.Name(op.name)), op.source, op.device, op.stream,
                      Us(op.start_ns), Us(op.dur_ns), op.correlation));
    });
    // Several files (ranks) may share pids (containers): their calls get a track per file, as
    // their GPU ops do, or Perfetto would stack two ranks' calls on one thread.
    const bool per_file = trace.sources.size() > 1;
    trace.api_calls.ForEach([&](const ApiCall& a) {
      const std::string pid = per_file ? fmt::format("\"host {}:{}\"", a.source, a.pid) : std::to_string(a.pid);
      add(fmt::format("{{\"ph\": \"X\", \"cat\": \"api\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"correlation\": {}}}}}",
                      Q(trace.Name(a.name)), pid, a.tid, Us(a.start_ns), Us(a.dur_ns), a.correlation));
    });
  }
  out += "\n]}\n";
  return out;
}

}  // namespace latdoc::trace
