#include "rules/log_rules.h"

#include <algorithm>
#include <string>

#include <fmt/core.h>

#include "rules/host_rules.h"
#include "rules/log_verdicts.h"

namespace latdoc::rules {
namespace {

using logs::EngineFacts;
using logs::LogFacts;

constexpr double kNsPerSec = 1e9;

Evidence Num(std::string name, double value, std::string unit) {
  return Evidence{std::move(name), value, std::move(unit), ""};
}
Evidence Text(std::string name, std::string text) {
  return Evidence{std::move(name), std::nullopt, "", std::move(text)};
}
double Sec(int64_t ns) { return static_cast<double>(ns) / kNsPerSec; }

std::optional<double> DurationS(const LogFacts& f) {
  if (!f.duration_ns || *f.duration_ns <= 0) return std::nullopt;
  return Sec(*f.duration_ns);
}

// The engines whose stats the rules judge: per-engine lines when present, else the
// data-parallel aggregate line.
std::vector<const EngineFacts*> Engines(const LogFacts& f) {
  std::vector<const EngineFacts*> out;
  for (const auto& e : f.engines) {
    if (e.engine >= 0) out.push_back(&e);
  }
  if (out.empty()) {
    for (const auto& e : f.engines) out.push_back(&e);
  }
  return out;
}

// " on the busiest of N engines" for a time that is one engine's of several; "" for one.
std::string OnOneOf(size_t engines) {
  return engines > 1 ? fmt::format(" on the busiest of {} engines", engines) : "";
}

std::string EngineName(const EngineFacts& e) {
  return e.engine < 0 ? std::string("aggregated engines") : fmt::format("engine {}", e.engine);
}

// Why requests waited, and what to change: the scheduler not admitting (a finding in `out`
// says so), the KV cache full at `peak_kv` percent, or the batch at `max_running`.
std::string QueueingAdvice(const std::vector<Finding>& out, double peak_kv, int64_t max_running) {
  const bool not_admitting = std::any_of(out.begin(), out.end(), [](const Finding& x) {
    return x.id == "logs.admission_stalled" || x.id == "logs.no_progress";
  });
  if (not_admitting) {
    return "Requests waited because the scheduler was not admitting them, not for lack of "
           "batch room: see logs.admission_stalled / logs.no_progress (raising "
           "--max-num-seqs will not help)";
  } else if (peak_kv >= logs::kKvHighPct) {
    return fmt::format(
        "The KV cache was full ({:.1f}%) while requests waited: give it more memory "
        "(--gpu-memory-utilization 0.95, --kv-cache-dtype fp8) or admit fewer sequences "
        "(--max-num-seqs); see logs.kv_pressure",
        peak_kv);
  } else {
    return fmt::format(
        "Requests waited while the KV cache had room: if {} running is your --max-num-seqs, "
        "raise it (e.g. --max-num-seqs {}); otherwise the server is past its capacity: add "
        "replicas or lower the request rate (latdoc sweep finds the knee)",
        max_running, std::max<int64_t>(2 * max_running, 1));
  }
}

void Queueing(const LogFacts& f, std::vector<Finding>& out) {
  auto engines = Engines(f);
  if (engines.empty()) return;
  // Engines of one server queue at the same time: a time is the most queued engine's own (a
  // sum over engines could exceed the log); the share is of all engines' busy time.
  int64_t queued = 0, busy = 0, queued_one = 0;
  uint64_t points = 0, stretches = 0, saturation = 0;
  int64_t max_waiting = 0, max_running = 0;
  double peak_kv = 0;
  const EngineFacts* worst = nullptr;
  for (const EngineFacts* e : engines) {
    queued += e->queued_ns;
    queued_one = std::max(queued_one, e->queued_ns);
    busy += e->busy_ns;
    points += e->queued_points;
    stretches += e->queue_stretches;
    saturation += e->saturation_points;
    max_waiting = std::max(max_waiting, e->max_waiting);
    max_running = std::max(max_running, e->max_running);
    peak_kv = std::max(peak_kv, e->peak_kv_pct);
    if (e->longest_queue &&
        (!worst || e->longest_queue->dur_ns > worst->longest_queue->dur_ns)) {
      worst = e;
    }
  }
  Finding fi;
  fi.id = "logs.queueing";
  fi.layer = Layer::kLoad;
  if (points == 0) {
    fi.severity = Severity::kOk;
    fi.title = "No request waited for admission in any stats line";
    fi.evidence.push_back(Num("max_running", static_cast<double>(max_running), ""));
    out.push_back(std::move(fi));
    return;
  }
  double share = busy > 0 ? static_cast<double>(queued) / static_cast<double>(busy) : 1.0;
  fi.severity = share >= kQueueFailShare ? Severity::kFail
                : share >= kQueueWarnShare ? Severity::kWarn
                                           : Severity::kInfo;
  fi.title = fmt::format("Requests queued for {:.0f} s{} ({:.0f}% of busy time), up to {} waiting",
                         Sec(queued_one), OnOneOf(engines.size()), 100 * share, max_waiting);
  fi.evidence.push_back(Num("queued_time", Sec(queued_one), "s"));
  if (engines.size() > 1) fi.evidence.push_back(Num("queued_engine_seconds", Sec(queued), "s"));
  fi.evidence.push_back(Num("queued_share_of_busy", 100 * share, "%"));
  fi.evidence.push_back(Num("queue_stretches", static_cast<double>(stretches), ""));
  if (worst) {
    const auto& q = *worst->longest_queue;
    fi.evidence.push_back(Text(
        "longest_queue", fmt::format("{:.0f} s from {} to {} ({}), peak {:.0f} waiting",
                                     Sec(q.dur_ns), q.start_label, q.end_label, EngineName(*worst),
                                     q.peak)));
  }
  fi.evidence.push_back(Num("max_waiting", static_cast<double>(max_waiting), ""));
  fi.evidence.push_back(Num("max_running", static_cast<double>(max_running), ""));
  fi.evidence.push_back(Num("peak_kv_cache_usage", peak_kv, "%"));
  if (saturation > 0) {
    fi.evidence.push_back(Num("throughput_fell_while_queue_grew", static_cast<double>(saturation),
                              "intervals"));
  }
  fi.advice = QueueingAdvice(out, peak_kv, max_running);
  out.push_back(std::move(fi));
}

void KvPressure(const LogFacts& f, std::vector<Finding>& out) {
  auto engines = Engines(f);
  if (engines.empty()) return;
  int64_t high = 0, busy = 0, preemptions = 0, high_one = 0;   // as Queueing's times
  uint64_t points = 0, stretches = 0;
  double peak = 0;
  const EngineFacts* worst = nullptr;
  for (const EngineFacts* e : engines) {
    high += e->kv_high_ns;
    high_one = std::max(high_one, e->kv_high_ns);
    busy += e->busy_ns;
    points += e->kv_high_points;
    stretches += e->kv_high_stretches;
    preemptions += e->preemptions;
    peak = std::max(peak, e->peak_kv_pct);
    if (e->longest_kv_high &&
        (!worst || e->longest_kv_high->dur_ns > worst->longest_kv_high->dur_ns)) {
      worst = e;
    }
  }
  preemptions += f.v0_cumulative_preemptions.value_or(0);
  Finding fi;
  fi.id = "logs.kv_pressure";
  fi.layer = Layer::kConfig;
  if (points == 0) {
    fi.severity = Severity::kOk;
    fi.title = fmt::format("GPU KV cache usage stayed below {:.0f}% (peak {:.1f}%)",
                           logs::kKvHighPct, peak);
    fi.evidence.push_back(Num("peak_kv_cache_usage", peak, "%"));
    out.push_back(std::move(fi));
    return;
  }
  fi.severity = preemptions > 0 ? Severity::kFail : Severity::kWarn;
  fi.title = fmt::format("GPU KV cache at or above {:.0f}% for {:.0f} s{} (peak {:.1f}%)",
                         logs::kKvHighPct, Sec(high_one), OnOneOf(engines.size()), peak);
  fi.evidence.push_back(Num("kv_high_time", Sec(high_one), "s"));
  if (engines.size() > 1) fi.evidence.push_back(Num("kv_high_engine_seconds", Sec(high), "s"));
  if (busy > 0) {
    fi.evidence.push_back(
        Num("kv_high_share_of_busy", 100.0 * static_cast<double>(high) / static_cast<double>(busy), "%"));
  }
  fi.evidence.push_back(Num("peak_kv_cache_usage", peak, "%"));
  fi.evidence.push_back(Num("kv_high_stretches", static_cast<double>(stretches), ""));
  if (worst) {
    const auto& s = *worst->longest_kv_high;
    fi.evidence.push_back(Text("longest_kv_high", fmt::format("{:.0f} s from {} to {} ({})",
                                                              Sec(s.dur_ns), s.start_label,
                                                              s.end_label, EngineName(*worst))));
  }
  fi.evidence.push_back(Num("preemptions", static_cast<double>(preemptions), ""));
  fi.advice =
      "Give the KV cache more memory: raise --gpu-memory-utilization (e.g. 0.90 -> 0.95) if the "
      "GPU has headroom, or --kv-cache-dtype fp8; or admit fewer sequences at once: lower "
      "--max-num-seqs; or spread the model: raise --tensor-parallel-size";
  out.push_back(std::move(fi));
}

void Preemptions(const LogFacts& f, std::vector<Finding>& out) {
  auto engines = Engines(f);
  int64_t v1 = 0;
  uint64_t intervals = 0;
  std::string first;
  for (const EngineFacts* e : engines) {
    v1 += e->preemptions;
    intervals += e->preemption_points;
    if (first.empty() && e->preemption_points > 0) first = e->first_preemption_label;
  }
  int64_t v0 = f.v0_cumulative_preemptions.value_or(0);
  if (v0 == 0 && f.v0_preemption_warnings > 0) v0 = static_cast<int64_t>(f.v0_preemption_warnings);
  Finding fi;
  fi.id = "logs.preemptions";
  fi.layer = Layer::kConfig;
  int64_t total = v1 + v0;
  if (total == 0) {
    if (engines.empty()) return;
    fi.severity = Severity::kOk;
    fi.title = "No preemptions logged";
    fi.evidence.push_back(Text("note", "V1 logs \"Preemptions: N\" only in vLLM >= 0.12; older V1 "
                                       "versions show preemptions only in "
                                       "vllm:num_preemptions_total"));
    out.push_back(std::move(fi));
    return;
  }
  fi.severity = total >= kPreemptionFailCount ? Severity::kFail : Severity::kWarn;
  // Preemptions, not requests (one request can be preempted again); V0 warns only at the 1st,
  // 51st, 101st... of a run, so its count is a floor.
  fi.title = fmt::format("{}{} preemption{} for lack of KV cache (requests recomputed from scratch)",
                         v0 > 0 ? "at least " : "", total, total == 1 ? "" : "s");
  if (v1 > 0) {
    fi.evidence.push_back(Num("preemptions_v1", static_cast<double>(v1), ""));
    fi.evidence.push_back(Num("intervals_with_preemptions", static_cast<double>(intervals), ""));
    fi.evidence.push_back(Text("first_preemption", first));
  }
  if (f.v0_preemption_warnings > 0) {
    fi.evidence.push_back(Num("v0_preemption_warnings", static_cast<double>(f.v0_preemption_warnings), ""));
    if (f.v0_cumulative_preemptions) {
      fi.evidence.push_back(Num("v0_total_num_cumulative_preemption",
                                static_cast<double>(*f.v0_cumulative_preemptions), ""));
    }
  }
  fi.advice =
      "Keep the running batch inside the KV cache: raise --gpu-memory-utilization (e.g. 0.95) "
      "or lower --max-num-seqs (and --max-num-batched-tokens); each preemption throws away the "
      "request's KV and recomputes its prefill, adding its whole prefill time to its latency";
  out.push_back(std::move(fi));
}

void StatsGaps(const LogFacts& f, std::vector<Finding>& out) {
  auto engines = Engines(f);
  if (engines.empty()) return;
  uint64_t gaps = 0;
  int64_t missing = 0;
  const logs::StatsGap* longest = nullptr;
  const EngineFacts* at = nullptr;
  for (const EngineFacts* e : engines) {
    gaps += e->gaps_total;
    missing += e->gaps_missing_ns;
    if (!e->gaps.empty() && (!longest || e->gaps.front().gap_ns > longest->gap_ns)) {
      longest = &e->gaps.front();
      at = e;
    }
  }
  Finding fi;
  fi.id = "logs.stats_gap";
  fi.layer = Layer::kSystem;
  if (gaps == 0 || !longest) {
    fi.severity = Severity::kOk;
    fi.title = "Stats lines came on time while the engine was busy";
    out.push_back(std::move(fi));
    return;
  }
  fi.severity = longest->gap_ns >= kStallFailNs ? Severity::kFail : Severity::kWarn;
  fi.title = fmt::format("The server stalled: {} stats line gap{} while busy, longest {:.0f} s "
                         "(due every {:.0f} s)",
                         gaps, gaps == 1 ? "" : "s", Sec(longest->gap_ns),
                         at->interval_s.value_or(10));
  fi.evidence.push_back(Num("gaps", static_cast<double>(gaps), ""));
  fi.evidence.push_back(Num("missing_time", Sec(missing), "s"));
  fi.evidence.push_back(Text(
      "longest_gap",
      fmt::format("{:.0f} s from {} to {} ({}), {} running and {} waiting before",
                  Sec(longest->gap_ns), longest->start_label,
                  longest->open_ended ? "the end of the log at " + longest->end_label
                                      : longest->end_label,
                  EngineName(*at), longest->running_before, longest->waiting_before)));
  fi.evidence.push_back(Evidence{"lines_logged_during_longest_gap",
                                 static_cast<double>(longest->lines_between), "",
                                 "lines other than stats lines"});
  fi.evidence.push_back(Num("stats_interval", at->interval_s.value_or(10), "s"));
  // The stats line is written by a task on the API server's own event loop; vLLM V1 writes it
  // at DEBUG when every throughput is 0. So other lines logged meanwhile (access lines, request
  // logs) mean that loop ran, and the engine made no progress.
  if (longest->lines_between > 0) {
    fi.advice =
        "The API server kept logging, so its loop ran while the engine produced no tokens (vLLM "
        "V1 logs the stats line at DEBUG when throughput is 0): look for a hung engine core or "
        "GPU (a stuck collective across tensor-parallel ranks, an XID error in `dmesg`, "
        "`py-spy dump` of the EngineCore process), and for a blocked worker (host swapping, "
        "vmstat si/so); run `latdoc doctor` on the host";
  } else {
    fi.advice =
        "Nothing at all was logged during the gap, so the whole serving process was stopped: "
        "synchronous log writes (turn off --enable-log-requests, log to a local disk, not a "
        "network file system), host swapping (vmstat si/so), CPU starvation or a long GC "
        "pause; run `latdoc doctor` on the host";
  }
  if (longest->open_ended) {
    fi.advice += "; the log ends inside the gap: if the server still runs, it may be hung now";
  }
  out.push_back(std::move(fi));
}

void Errors(const LogFacts& f, std::vector<Finding>& out) {
  uint64_t critical = 0;
  std::vector<const logs::MessageGroup*> errs;
  for (const auto& m : f.messages) {
    if (m.level == "ERROR" || m.level == "CRITICAL") errs.push_back(&m);
    if (m.level == "CRITICAL") critical += m.count;
  }
  uint64_t http5xx = f.access_status_classes[5];
  if (f.error_lines == 0 && f.tracebacks == 0 && http5xx == 0) return;
  Finding fi;
  fi.id = "logs.errors";
  fi.layer = Layer::kSystem;
  fi.severity = critical > 0 || f.tracebacks > 0 ? Severity::kFail : Severity::kWarn;
  fi.title = fmt::format("{} error lines, {} tracebacks, {} HTTP 5xx responses in the log",
                         f.error_lines, f.tracebacks, http5xx);
  fi.evidence.push_back(Num("error_lines", static_cast<double>(f.error_lines), ""));
  fi.evidence.push_back(Num("tracebacks", static_cast<double>(f.tracebacks), ""));
  fi.evidence.push_back(Num("http_5xx", static_cast<double>(http5xx), ""));
  if (critical > 0) fi.evidence.push_back(Num("critical_lines", static_cast<double>(critical), ""));
  for (size_t i = 0; i < std::min<size_t>(errs.size(), 3); ++i) {
    const auto& m = *errs[i];
    fi.evidence.push_back(Text(fmt::format("error_{}", i + 1),
                               fmt::format("{} x {} (first {}, last {})", m.count, m.tmpl,
                                           m.first_ns ? m.first_label : "n/a",
                                           m.last_ns ? m.last_label : "n/a")));
  }
  const logs::MessageGroup* first = nullptr;
  for (const auto* m : errs) {
    if (m->first_ns && (!first || *m->first_ns < *first->first_ns)) first = m;
  }
  // The quoted message is the log's text: a backtick in it would pair with the advice's own,
  // which Markdown reads as code.
  std::string quoted = first ? first->example.substr(0, 120) : "";
  std::replace(quoted.begin(), quoted.end(), '`', '\'');
  fi.advice = first ? fmt::format("Start from the earliest error, \"{}\" at {}{}; `latdoc logs "
                                  "--json` lists every template with first and last time",
                                  quoted, first->first_label,
                                  first->where.empty() ? "" : " (" + first->where + ")")
                    : "Look at the failing requests in the access log and the server's stderr; "
                      "`latdoc logs --json` lists every message template";
  out.push_back(std::move(fi));
}

void RequestLogging(const LogFacts& f, std::vector<Finding>& out) {
  const auto& v = f.volume[static_cast<size_t>(logs::LineKind::kRequestLog)];
  if (v.lines == 0) return;
  auto dur = DurationS(f);
  Finding fi;
  fi.id = "logs.request_logging_on";
  fi.layer = Layer::kConfig;
  double lps = dur ? static_cast<double>(v.lines) / *dur : 0;
  double share = f.bytes ? static_cast<double>(v.bytes) / static_cast<double>(f.bytes) : 0;
  fi.severity = (dur && lps >= kRequestLogWarnLinesPerS) || share >= 0.5 ? Severity::kWarn
                                                                          : Severity::kInfo;
  fi.title = fmt::format("Request logging is on: {} lines, {:.0f}% of the log's bytes",
                         v.lines, 100 * share);
  fi.evidence.push_back(Num("request_log_lines", static_cast<double>(v.lines), ""));
  fi.evidence.push_back(Num("request_log_bytes", static_cast<double>(v.bytes) / 1024, "KiB"));
  fi.evidence.push_back(Num("share_of_log_bytes", 100 * share, "%"));
  fi.evidence.push_back(dur ? Num("lines_per_s", lps, "/s") : Evidence{"lines_per_s", {}, "/s", ""});
  fi.evidence.push_back(Num("peak_lines_per_s", static_cast<double>(v.peak_lines_per_s), "/s"));
  fi.evidence.push_back(Num("received_request_lines", static_cast<double>(f.received_request_lines), ""));
  if (f.generated_response_lines > 0) {
    fi.evidence.push_back(Num("generated_response_lines",
                              static_cast<double>(f.generated_response_lines), ""));
  }
  fi.advice =
      "Turn request logging off: drop --enable-log-requests (vLLM >= 0.10; also "
      "--enable-log-outputs), or add --disable-log-requests on older versions where it is on by "
      "default; each request writes its full SamplingParams synchronously on the serving loop";
  out.push_back(std::move(fi));
}

void AccessLog(const LogFacts& f, std::vector<Finding>& out) {
  if (f.uvicorn_access_lines == 0) return;
  const auto& v = f.volume[static_cast<size_t>(logs::LineKind::kAccess)];
  auto dur = DurationS(f);
  double lps = dur ? static_cast<double>(f.uvicorn_access_lines) / *dur : 0;
  Finding fi;
  fi.id = "logs.access_log_on";
  fi.layer = Layer::kConfig;
  fi.severity = (dur && lps >= kAccessLogWarnLinesPerS) ? Severity::kWarn : Severity::kInfo;
  fi.title = fmt::format("uvicorn access logging is on: {} lines", f.uvicorn_access_lines);
  fi.evidence.push_back(Num("access_lines", static_cast<double>(f.uvicorn_access_lines), ""));
  fi.evidence.push_back(dur ? Num("lines_per_s", lps, "/s") : Evidence{"lines_per_s", {}, "/s", ""});
  fi.evidence.push_back(Num("peak_lines_per_s", static_cast<double>(v.peak_lines_per_s), "/s"));
  uint64_t probes = 0;
  for (const auto& e : f.endpoints) {
    if (e.endpoint.find("/health") != std::string::npos ||
        e.endpoint.find("/metrics") != std::string::npos) {
      probes += e.count;
    }
  }
  if (probes > 0) fi.evidence.push_back(Num("health_and_metrics_lines", static_cast<double>(probes), ""));
  fi.advice =
      "Start vLLM with --disable-uvicorn-access-log (or --disable-access-log-for-endpoints "
      "/health,/metrics to drop only the probes); one line per request is written on the API "
      "server's event loop";
  out.push_back(std::move(fi));
}

void DebugLogging(const LogFacts& f, std::vector<Finding>& out) {
  if (f.debug_lines == 0 && !f.debug_file_paths) return;
  double share = f.lines ? static_cast<double>(f.debug_lines) / static_cast<double>(f.lines) : 0;
  Finding fi;
  fi.id = "logs.debug_logging";
  fi.layer = Layer::kConfig;
  fi.severity = share >= kDebugWarnShare ? Severity::kWarn : Severity::kInfo;
  fi.title = fmt::format("DEBUG logging is on: {} DEBUG lines ({:.0f}% of lines)", f.debug_lines,
                         100 * share);
  fi.evidence.push_back(Num("debug_lines", static_cast<double>(f.debug_lines), ""));
  fi.evidence.push_back(Num("debug_bytes", static_cast<double>(f.debug_bytes) / 1024, "KiB"));
  fi.evidence.push_back(Num("share_of_lines", 100 * share, "%"));
  if (f.debug_file_paths) {
    fi.evidence.push_back(Text("file_paths", "source paths in [file:line] (vLLM prints them at DEBUG)"));
  }
  fi.advice =
      "Set VLLM_LOGGING_LEVEL=INFO (the default) and --uvicorn-log-level info; for llama.cpp "
      "drop -v/--verbose. DEBUG writes lines per engine step and per request";
  out.push_back(std::move(fi));
}

void StatsMissing(const LogFacts& f, std::vector<Finding>& out) {
  if (!f.engines.empty()) return;
  uint64_t vllm = 0;
  for (const auto& [name, n] : f.sources) {
    if (name == "vllm") vllm = n;
  }
  if (vllm == 0 && f.stats_disabled_warnings == 0) return;
  Finding fi;
  fi.id = "logs.stats_missing";
  fi.layer = Layer::kConfig;
  fi.severity = Severity::kInfo;
  fi.evidence.push_back(Num("vllm_lines", static_cast<double>(vllm), ""));
  if (f.stats_disabled_warnings > 0) {
    fi.title = "No vLLM stats lines: stats logging was disabled because api_server_count > 1";
    fi.advice = "Read queue and KV-cache numbers from /metrics instead (latdoc bench attributes "
                "them), or run with --api-server-count 1 while diagnosing";
  } else {
    fi.title = "No vLLM stats lines in the log: queueing and KV-cache pressure cannot be judged";
    fi.advice = "Remove --disable-log-stats (the stats line is logged every "
                "VLLM_LOG_STATS_INTERVAL=10 s while busy, at DEBUG when idle), or read /metrics";
  }
  out.push_back(std::move(fi));
}

}  // namespace

std::vector<Finding> EvaluateLogRules(const logs::LogFacts& facts,
                                      std::optional<int64_t> sweep_knee_concurrency) {
  std::vector<Finding> out;
  EvaluateLogVerdicts(facts, out);
  Queueing(facts, out);
  KvPressure(facts, out);
  Preemptions(facts, out);
  StatsGaps(facts, out);
  Errors(facts, out);
  RequestLogging(facts, out);
  AccessLog(facts, out);
  DebugLogging(facts, out);
  StatsMissing(facts, out);
  if (facts.vllm_args) {
    HostRuleOptions options;
    options.sweep_knee_concurrency = sweep_knee_concurrency;
    const std::string who = "vLLM (" + facts.vllm_args->where + ", non-default args)";
    for (auto& f : JudgeVllmArgv(facts.vllm_args->argv, who, options)) out.push_back(std::move(f));
  }
  RankFindings(out);
  return out;
}

}  // namespace latdoc::rules
