// The simulated server's ground truth (sim/sim_server.h): one --trace-requests line per request
// with its true timings, and vLLM's profiler routes, which write a Kineto trace of the engine's
// steps (sim/profiler_trace.h). The slowed steps' record is sim/stall_record.h.
#include <cstdio>
#include <string>

#include "base/clock.h"
#include "base/json_text.h"
#include "sim/sim_server_internal.h"

namespace latdoc::sim {

using sim_server_internal::Active;
using sim_server_internal::PendingTrace;

PendingTrace::~PendingTrace() {
  if (fields.is_null()) return;
  written_ns.resize(token_chunks, -1);
  fields["written_ns"] = std::move(written_ns);
  std::string line = JsonText(fields) + "\n";
  std::fwrite(line.data(), 1, line.size(), file.get());
  std::fflush(file.get());
}

Status SimServer::Impl::OpenTrace() {
  if (!cfg.trace_requests_file.empty()) {
    std::FILE* f = std::fopen(cfg.trace_requests_file.c_str(), "w");
    if (!f) return ErrnoStatus(errno, "--trace-requests " + cfg.trace_requests_file);
    trace = std::shared_ptr<std::FILE>(f, [](std::FILE* p) { std::fclose(p); });
  }
  return Status::Ok();
}

void SimServer::Impl::RecordWrites(Active& a) {
  a.out->OnChunkWritten([t = a.trace](uint64_t n, int64_t ns) {
    if (n >= t->written_ns.size()) t->written_ns.resize(n + 1, -1);
    t->written_ns[n] = ns;
  });
}

// One JSON line per request with its true timings (monotonic ns), for measurement tests:
// token_ns are the engine's emit times (what the server's own metrics see), written_ns when
// each of those chunks reached the kernel (what a client can see, after any network delay).
void SimServer::Impl::Trace(Active& a, std::string_view status) {
  if (!a.trace) return;
  a.trace->fields = {{"id", a.public_id},
                     {"x_request_id", a.x_request_id},
                     {"status", status},
                     {"received_ns", a.received_ns},
                     {"arrival_ns", a.arrival_ns},
                     {"scheduled_ns", a.scheduled_ns},
                     {"first_token_ns", a.first_token_ns},
                     {"last_token_ns", a.last_token_ns},
                     {"end_ns", MonoNowNs()},
                     {"prompt_tokens", a.prompt_tokens},
                     {"cached_tokens", a.cached_tokens},
                     {"completion_tokens", a.generated},
                     {"preemptions", a.preemptions},
                     {"token_ns", a.token_ns},
                     {"token_counts", a.token_counts}};
  a.trace->token_chunks = a.token_ns.size();
  a.trace.reset();  // the line goes out once the connection is done with it too
}

// vLLM's /start_profile and /stop_profile (sim/profiler_trace.h): 200 once done; the trace is
// written when the profiler stops.
int SimServer::Impl::Profile(bool start, const SendFn& send) {
  if (start) {
    log.Line("INFO", "api_server.py:1033", "Starting profiler...");
    profiler.Start(MonoNowNs(), WallNowNs());
    log.Line("INFO", "api_server.py:1035", "Profiler started.");
    return send(200, "", "");
  }
  log.Line("INFO", "api_server.py:1041", "Stopping profiler...");
  auto path = profiler.Stop();
  if (!path.ok()) {
    log.Line("ERROR", "api_server.py:1043",
             "Profiler trace not written: " + path.status().message());
    return send(500, "application/json", R"({"detail":"profiler trace not written"})");
  }
  log.Line("INFO", "api_server.py:1043", "Profiler stopped.");
  return send(200, "", "");
}

}  // namespace latdoc::sim
