// LogAnalyzer: warnings and errors grouped by template, the lines that say the engine died,
// and the access lines' endpoints.
#include "logs/log_analyzer_internal.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "base/secrets.h"
#include "logs/message_template.h"

namespace latdoc::logs {
using namespace log_analyzer_internal;  // the analyzer's own types

void LogAnalyzer::State::AddMessage(Level level, const ParsedLine& pl) {
  MessageTemplate(pl.msg, &tmpl);
  // A secret in a warning (a token in a URL, "HF_TOKEN=...") is neither shown nor a group of
  // its own. Cheap: one scan of a line that is a warning or an error.
  tmpl = RedactSecretsInText(tmpl);
  key.assign(LevelName(level));
  key.push_back('\x1f');
  key.append(tmpl);
  auto it = group_index.find(key);
  MessageGroup* g;
  if (it == group_index.end()) {
    if (f.messages.size() >= kMaxMessageGroups) {
      ++f.message_groups_dropped;
      return;
    }
    group_index.emplace(key, f.messages.size());
    f.messages.emplace_back();
    g = &f.messages.back();
    g->level = std::string(LevelName(level));
    g->tmpl = tmpl;
    g->example = RedactSecretsInText(pl.msg.substr(0, 300));
    if (!pl.file.empty()) g->where = fmt::format("{}:{}", pl.file, pl.file_line);
  } else {
    g = &f.messages[it->second];
  }
  ++g->count;
  if (cur_ts) {
    if (!g->first_ns) {
      g->first_ns = *cur_ts;
      g->first_label = Label(*cur_ts);
    }
    g->last_ns = *cur_ts;
  }
}

void LogAnalyzer::State::NoteFatal(const ParsedLine& pl) {
  if (pl.level < Level::kError && pl.event != Event::kException) return;
  if (pl.event == Event::kTraceback) return;
  const std::string_view m = pl.msg;
  auto has = [&](std::string_view x) { return m.find(x) != std::string_view::npos; };
  const char* kind = nullptr;
  bool cause = true;
  if (has("out of memory") || has("OutOfMemoryError")) kind = "oom";
  else if (has("Watchdog caught collective operation timeout") ||
           ((has("NCCL") || has("RCCL")) && (has("timeout") || has("timed out"))))
    kind = "collective_timeout";
  else if (has("HIP error") || has("hipError")) kind = "hip_error";
  else if (has("CUDA error") || has("cudaError")) kind = "cuda_error";
  else if (has("EngineDeadError") || has("died unexpectedly")) { kind = "engine_dead"; cause = false; }
  else if (has(" received at time=") || has("Got fatal signal")) { kind = "fatal_signal"; cause = false; }
  else if (pl.source == Source::kSystem && has("Main process exited")) { kind = "process_exited"; cause = false; }
  if (!kind || f.fatal.size() >= 16) return;
  for (const FatalLine& x : f.fatal) {
    if (x.kind == kind) return;
  }
  FatalLine fl;
  fl.kind = kind;
  fl.cause = cause;
  fl.text = RedactSecretsInText(m.substr(0, 300));
  fl.where = fmt::format("{}:{}", path, input_lines);
  fl.t_ns = cur_ts;
  if (cur_ts) fl.label = Label(*cur_ts);
  f.fatal.push_back(std::move(fl));
}

void LogAnalyzer::State::AddAccess(const AccessLine& a) {
  ++f.access_lines;
  int cls = a.status / 100;
  if (cls >= 1 && cls <= 5) ++f.access_status_classes[static_cast<size_t>(cls)];
  key.assign(a.method);
  key.push_back(' ');
  key.append(a.path.substr(0, 80));
  auto it = endpoints.find(key);
  if (it == endpoints.end()) {
    if (endpoints.size() >= kMaxEndpointKeys) {
      ++endpoint_overflow;
      return;
    }
    it = endpoints.emplace(key, EndpointCount{key, 0, 0}).first;
  }
  ++it->second.count;
  if (a.status >= 500) ++it->second.errors;
}

}  // namespace latdoc::logs
