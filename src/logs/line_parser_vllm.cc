// LineParser: vLLM's own messages (multi-line messages, tracebacks, stats) and uvicorn's and
// llama.cpp's access lines.
#include "logs/line_parser.h"

#include <charconv>
#include <cstring>

#include <fmt/core.h>

#include "logs/line_parser_internal.h"

namespace latdoc::logs {
using namespace line_parser_internal;  // the text helpers all four parser files share

// vLLM messages that latdoc reads (vllm-project/vllm: vllm/v1/metrics/loggers.py ~v0.8 to
// ~v0.12, vllm/engine/metrics.py, vllm/core/scheduler.py, vllm/entrypoints/logger.py).
// Dispatch on the first byte to keep the common case (an unrelated INFO line) at one comparison.
bool LineParser::ContinuesMessage(std::string_view m) {
  OpenMessage& o = message_;
  const bool same = o.open && out_.file_line == o.line && own_ts_ == o.ts_ns &&
                    out_.file == o.file && out_.proc == o.proc;
  if (same && o.in_traceback) {
    // Inside a logged traceback: the blank line and the chaining sentence between two
    // tracebacks, and the lines an exception's message goes on with (CUDA's "For debugging
    // consider passing CUDA_LAUNCH_BLOCKING=1"). The message's own first line again is the same
    // call logging anew.
    if (m.empty() || m.substr(0, 39) == "During handling of the above exception" ||
        m.substr(0, 39) == "The above exception was the direct caus") {
      return true;
    }
    if (m.substr(0, 10) == "Traceback " || m[0] == ' ' || LooksLikeException(m)) return false;
    if (o.after_exception && m != o.first) return true;
  }
  if (!same || o.in_traceback) {
    o.open = true;
    o.proc.assign(out_.proc);
    o.file.assign(out_.file);
    o.first.assign(m);
    o.line = out_.file_line;
    o.ts_ns = own_ts_;
    o.in_traceback = o.after_exception = false;
  }
  return false;
}

void LineParser::ClassifyVllm() {
  std::string_view m = out_.msg;
  if (out_.level < Level::kWarning) {   // the common case: no multi-line message to follow
    message_.open = false;
    ClassifyVllmMessage(m);
    return;
  }
  if (ContinuesMessage(m)) {
    out_.event = Event::kTraceback;
    return;
  }
  ClassifyVllmMessage(m);
  if (out_.event == Event::kTraceback) message_.in_traceback = true;
  if (out_.event == Event::kException && message_.in_traceback) message_.after_exception = true;
}

// Long on purpose: one switch on the message's first byte, one case per message family.
void LineParser::ClassifyVllmMessage(std::string_view m) {
  if (m.empty()) return;
  // vLLM's formatter repeats the prefix on every line of a message, so a logged exception's
  // traceback arrives as prefixed lines: the header, then frames and their code lines (indented,
  // at the level it was logged at); its last line, the exception, as raw ones have it.
  if (m.substr(0, 10) == "Traceback ") {
    out_.event = Event::kTraceback;
    return;
  }
  if (m[0] == ' ' && out_.level >= Level::kWarning) {
    out_.event = Event::kTraceback;
    return;
  }
  if (out_.level >= Level::kWarning && LooksLikeException(m)) {
    out_.event = Event::kException;
    return;
  }
  switch (m[0]) {
    case 'E':
      if (m.substr(0, 7) == "Engine ") {
        if (auto st = ParseVllmV1Stats(m)) {
          out_.event = Event::kStats;
          out_.stats = *st;
        }
      }
      return;
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
      if (auto st = ParseVllmV1Stats(m)) {
        out_.event = Event::kStats;
        out_.stats = *st;
      }
      return;
    case 'A':
      if (m.substr(0, 15) == "Avg prompt thro") {
        if (auto st = ParseVllmV0Stats(m)) {
          out_.event = Event::kStats;
          out_.stats = *st;
        }
      } else if (m.substr(0, 14) == "Added request ") {
        out_.event = Event::kAddedRequest;
      } else if (m.substr(0, 15) == "Aborted request") {   // "Aborted request(s) %s."
        out_.event = Event::kAbortedRequest;
      } else if (m.substr(0, 35) == "AsyncLLM created with api_server_co") {
        out_.event = Event::kStatsDisabled;
      }
      return;
    case 'R':
      if (m.substr(0, 17) == "Received request ") {
        out_.event = Event::kReceivedRequest;
      } else if (m.substr(0, 8) == "Request " && m.find(" details: ") != std::string_view::npos) {
        out_.event = Event::kRequestDetails;
      }
      return;
    case 'F':
      if (m.substr(0, 17) == "Finished request ") out_.event = Event::kFinishedRequest;
      return;
    case 'G':
      if (m.substr(0, 19) == "Generated response ") out_.event = Event::kGeneratedResponse;
      return;
    case 'P':
      if (auto v = ParseVllmV0PrefixHitRate(m)) {
        out_.event = Event::kPrefixCacheV0;
        out_.value = *v;
      }
      return;
    case 'S':
      // V0 scheduler, logged on the 1st, 51st, 101st... preemption:
      // "Sequence group 12 is preempted by PreemptionMode.RECOMPUTE mode because there is not
      //  enough KV cache space. ... total_num_cumulative_preemption=51"
      if (m.substr(0, 15) == "Sequence group " && m.find(" is preempted by ") != std::string_view::npos) {
        out_.event = Event::kPreemptionV0;
        size_t p = m.rfind("total_num_cumulative_preemption=");
        if (p != std::string_view::npos) {
          std::string_view n = m.substr(p + 32);
          int64_t v = 0;
          if (TakeInt(n, &v)) out_.count = v;
        }
      } else if (m.substr(0, 13) == "SpecDecoding " || m.substr(0, 20) == "Speculative metrics:") {
        out_.event = Event::kOtherStats;
      }
      return;
    default:
      return;
  }
}

// uvicorn access log (uvicorn.logging.AccessFormatter, default format):
//   127.0.0.1:49152 - "POST /v1/completions HTTP/1.1" 200 OK
// llama.cpp server (log_server_request), after "srv  log_server_r: ":
//   request: POST /completion 127.0.0.1 200
void LineParser::ParseAccess(std::string_view m, bool llama) {
  if (!llama) {
    size_t q = m.find(" - \"");
    if (q == std::string_view::npos) return;
    std::string_view r = m.substr(q + 4);
    size_t sp1 = r.find(' ');
    if (sp1 == std::string_view::npos) return;
    size_t sp2 = r.find(' ', sp1 + 1);
    size_t endq = r.find("\" ", sp1 + 1);
    if (sp2 == std::string_view::npos || endq == std::string_view::npos || sp2 > endq) return;
    std::string_view st = r.substr(endq + 2);
    int status = 0;
    if (!TakeInt(st, &status) || status < 100 || status > 599) return;
    out_.event = Event::kAccess;
    out_.access.method = r.substr(0, sp1);
    out_.access.path = r.substr(sp1 + 1, sp2 - sp1 - 1);
    out_.access.status = status;
    return;
  }
  Consume(m, "done ");   // "done request: POST /infill 10.8.0.9 200" (2025+)
  if (!Consume(m, "request: ")) return;
  size_t sp1 = m.find(' ');
  if (sp1 == std::string_view::npos) return;
  size_t sp2 = m.find(' ', sp1 + 1);
  size_t sp3 = m.rfind(' ');
  if (sp2 == std::string_view::npos || sp3 < sp2) return;
  std::string_view st = m.substr(sp3 + 1);
  int status = 0;
  if (!TakeInt(st, &status) || !st.empty() || status < 100 || status > 599) return;
  out_.event = Event::kAccess;
  out_.access.method = m.substr(0, sp1);
  out_.access.path = m.substr(sp1 + 1, sp2 - sp1 - 1);
  out_.access.status = status;
}

}  // namespace latdoc::logs
