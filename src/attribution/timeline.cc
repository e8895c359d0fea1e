#include "attribution/timeline.h"

#include <ctime>
#include <fstream>

#include "base/clock.h"
#include "logs/line_parser.h"

namespace latdoc::attribution {

Timeline FromBenchRun(const loadgen::BenchRun& run) {
  Timeline t;
  t.start_ns = run.start_ns;
  t.end_ns = run.end_ns;
  t.streams.reserve(run.records.size());
  for (const loadgen::RequestRecord& r : run.records) {
    if (r.warmup || r.sent_ns < 0) continue;
    StreamSeries s;
    s.index = r.index;
    s.sent_ns = r.sent_ns;
    s.first_token_ns = r.first_token_ns;
    s.end_ns = r.end_ns;
    s.prompt_tokens = r.prompt_tokens;
    s.token_ns.reserve(r.chunks.size());
    for (const auto& [at_ns, tokens] : r.chunks) s.token_ns.push_back(at_ns);
    t.streams.push_back(std::move(s));
  }
  for (const loadgen::ServerSample& p : run.timeline)
    t.server.push_back({p.t_ns, p.running, p.waiting, p.kv_cache_usage, p.preemptions_total});
  for (const loadgen::ThreadLoad& l : run.thread_load) {
    t.client_busy_max = std::max(t.client_busy_max, l.busy());
    t.client_saturated = t.client_saturated || l.saturated();
  }
  return t;
}

namespace {

LogKind KindOf(const logs::ParsedLine& p) {
  using logs::Event;
  if (p.event == Event::kStats) return LogKind::kStats;
  if (p.event == Event::kPreemptionV0 || p.msg.find("preempted") != std::string_view::npos)
    return LogKind::kPreemption;
  if (p.event == Event::kReceivedRequest || p.event == Event::kAddedRequest ||
      p.event == Event::kRequestDetails || p.event == Event::kGeneratedResponse)
    return LogKind::kRequestLog;
  if (p.level >= logs::Level::kError || p.event == Event::kTraceback ||
      p.event == Event::kException)
    return LogKind::kError;
  return LogKind::kOther;
}

}  // namespace

Status ReadLogEvents(const std::string& path, const LogClock& clock, Timeline* t) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, path + ": cannot be read");
  // The client's wall time at clock.mono_ns, in the log's domain: local "MM-DD HH:MM:SS" as
  // logs::MonthDayTimeNs counts it (the server runs in the client's time zone: --local, or
  // the sim on this host), plus the sub-second part.
  const time_t wall_s = static_cast<time_t>(clock.wall_ns / kNsPerSec);
  tm lt;
  localtime_r(&wall_s, &lt);
  std::optional<int64_t> anchor =
      logs::MonthDayTimeNs(lt.tm_mon + 1, lt.tm_mday, lt.tm_hour, lt.tm_min, lt.tm_sec);
  if (!anchor) return Status::Ok();
  const int64_t log_to_mono_ns = clock.mono_ns - (*anchor + clock.wall_ns % kNsPerSec);
  t->log_uncertainty_ns = kNsPerSec / 2;
  const int64_t lo = t->start_ns - kNsPerSec, hi = t->end_ns + kNsPerSec;
  logs::LineParser parser;
  std::string line;
  while (std::getline(in, line)) {
    const logs::ParsedLine& p = parser.Parse(line);
    if (!p.ts_ns || p.ts_is_relative) continue;
    const int64_t at = *p.ts_ns + kNsPerSec / 2 + log_to_mono_ns;
    if (at < lo || at > hi) continue;
    t->log.push_back({at, KindOf(p), static_cast<int64_t>(line.size()) + 1});
  }
  return Status::Ok();
}

}  // namespace latdoc::attribution
