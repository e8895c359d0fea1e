#include "logs/log_summary.h"

#include <algorithm>

#include <fmt/core.h>

#include "base/units.h"

namespace latdoc::logs {
namespace {

constexpr int64_t kSecNs = 1000LL * 1000 * 1000;

// "1m 40s", "12s", "2h 3m".
std::string Dur(int64_t ns) {
  int64_t s = (ns + kSecNs / 2) / kSecNs;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {}s", s / 60, s % 60);
  return fmt::format("{}h {}m", s / 3600, s / 60 % 60);
}

// 12345 -> "12,345".
std::string Count(uint64_t n) {
  std::string d = std::to_string(n), out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(d[i]);
  }
  return out;
}

std::string Pct(double part, double whole) {
  if (whole <= 0) return "n/a";
  return fmt::format("{:.0f}%", 100.0 * part / whole);
}

std::string Stretches(uint64_t n) { return fmt::format("{} stretch{}", n, n == 1 ? "" : "es"); }

std::string Opt1(const std::optional<double>& v) {
  return v ? fmt::format("{:.1f}", *v) : std::string("n/a");
}

void RenderEngine(const LogFacts& f, const EngineFacts& e, const SummaryOptions& o,
                  std::string& out) {
  std::string name = e.engine < 0 ? std::string("engines aggregated")
                                  : fmt::format("engine {}", e.engine);
  out += fmt::format("Stats series ({}, vLLM {}, {} lines, every {} s{})\n", name,
                     e.v0 ? "V0" : "V1", Count(e.stats_lines), Opt1(e.interval_s),
                     e.interval_assumed ? " assumed" : "");
  out += fmt::format("  {:<15} {:>12} {:>10} {:>8} {:>8} {:>6} {:>11}\n", "time", "prompt tok/s",
                     "gen tok/s", "running", "waiting", "KV %", "prefix hit%");
  const EngineSeries& s = e.series;
  size_t n = s.size();
  size_t rows = std::min(n, o.series_rows);
  for (size_t r = 0; r < rows; ++r) {
    size_t i = rows == 1 ? 0 : r * (n - 1) / (rows - 1);
    out += "  " + RenderStatsRow(f, e, i) + "\n";
  }
  if (s.decimation > 1 || rows < n) {
    out += fmt::format("  ({} of {} points shown{})\n", rows, Count(n),
                       s.decimation > 1 ? fmt::format(", each merging {}", s.decimation) : "");
  }
  out += fmt::format("  throughput: peak prompt {:.1f} tok/s, peak gen {:.1f} tok/s, mean gen "
                     "while busy {} tok/s; max running {}, max waiting {}\n",
                     e.peak_prompt_tps, e.peak_gen_tps, Opt1(e.mean_gen_tps_busy), e.max_running,
                     e.max_waiting);
  if (e.queued_points > 0) {
    out += fmt::format("  queueing: {} with requests waiting ({} of busy time) in {}",
                       Dur(e.queued_ns), Pct(static_cast<double>(e.queued_ns),
                                             static_cast<double>(e.busy_ns)),
                       Stretches(e.queue_stretches));
    if (e.longest_queue) {
      out += fmt::format("; longest {} from {} (peak {} waiting)", Dur(e.longest_queue->dur_ns),
                         e.longest_queue->start_label, e.longest_queue->peak);
    }
    out += "\n";
  } else {
    out += "  queueing: none (waiting was 0 in every stats line)\n";
  }
  if (e.kv_high_points > 0) {
    out += fmt::format("  KV cache >= {:.0f}%: {} in {}, peak {:.1f}%\n", kKvHighPct,
                       Dur(e.kv_high_ns), Stretches(e.kv_high_stretches), e.peak_kv_pct);
  } else {
    out += fmt::format("  KV cache: peak {:.1f}%\n", e.peak_kv_pct);
  }
  if (e.preemptions > 0) {
    out += fmt::format("  preemptions: {} in {} intervals (first {})\n", e.preemptions,
                       e.preemption_points, e.first_preemption_label);
  }
  if (e.saturation_points > 0) {
    out += fmt::format("  throughput fell while the queue grew in {} intervals (first {})\n",
                       e.saturation_points, e.first_saturation_label);
  }
  if (e.gaps_total > 0) {
    const StatsGap& g = e.gaps.front();
    out += fmt::format("  stats gaps: {} (stats line missing while busy), longest {} from {} to "
                       "{}, {} lines logged in between\n",
                       e.gaps_total, Dur(g.gap_ns), g.start_label, g.end_label, g.lines_between);
  }
}

// The inputs, their time range and their lines by format.
void RenderInputs(const LogFacts& f, std::string& out) {
  for (const InputInfo& in : f.inputs) {
    out += fmt::format("Input: {} ({}{}, {} lines)\n", in.path, FormatBytes(static_cast<double>(in.bytes)),
                       in.compression == "none" ? "" : ", " + in.compression,
                       Count(in.lines));
  }
  if (f.duration_ns) {
    out += fmt::format("Time: {} .. {} ({})\n", f.first_label, f.last_label, Dur(*f.duration_ns));
  } else {
    out += "Time: n/a (no timestamped lines)\n";
  }
  std::string formats;
  for (const auto& [name, n] : f.sources) {
    formats += fmt::format("{}{} {}", formats.empty() ? "" : ", ", name, Count(n));
  }
  out += fmt::format("Lines: {} ({})\n\n", Count(f.lines), formats.empty() ? "none" : formats);
}

// One paragraph per other server whose lines were read: llama.cpp, SGLang, TGI.
void RenderOtherServers(const LogFacts& f, std::string& out) {
  if (f.llama.prompt_timings + f.llama.eval_timings > 0) {
    const LlamaFacts& l = f.llama;
    out += fmt::format(
        "llama.cpp: {} requests timed; prompt {} tokens at {} tok/s, generation {} tokens at {} "
        "tok/s (slowest request {} tok/s)\n\n",
        Count(l.eval_timings), Count(static_cast<uint64_t>(l.prompt_tokens)),
        l.prompt_ms > 0 ? fmt::format("{:.1f}", 1000.0 * static_cast<double>(l.prompt_tokens) / l.prompt_ms) : "n/a",
        Count(static_cast<uint64_t>(l.gen_tokens)),
        l.gen_ms > 0 ? fmt::format("{:.1f}", 1000.0 * static_cast<double>(l.gen_tokens) / l.gen_ms) : "n/a",
        Opt1(l.min_gen_tps));
  }

  if (f.sglang.decode_batches + f.sglang.prefill_batches > 0) {
    const SglangFacts& g = f.sglang;
    out += fmt::format(
        "SGLang: {} decode and {} prefill batch lines; up to {} running and {} queued ({} decode "
        "lines with a queue); token usage peak {:.0f}%; generation {} tok/s on average{}\n\n",
        Count(g.decode_batches), Count(g.prefill_batches), g.max_running, g.max_queued,
        Count(g.queued_batches), g.peak_token_usage_pct, Opt1(g.mean_gen_tps),
        g.peak_input_tps ? fmt::format(", prefill up to {:.0f} tok/s", *g.peak_input_tps) : "");
  }
  if (f.tgi.requests > 0) {
    out += fmt::format("TGI: {} requests finished; queue time mean {} ms, max {} ms\n\n",
                       Count(f.tgi.requests), Opt1(f.tgi.mean_queue_ms), Opt1(f.tgi.max_queue_ms));
  }
}

// Lines and bytes per kind of line, per second over the logs' time range.
void RenderVolume(const LogFacts& f, std::string& out) {
  double dur_s = f.duration_ns ? static_cast<double>(*f.duration_ns) / 1e9 : 0;
  out += fmt::format("Volume{}\n", dur_s > 0 ? fmt::format(" (over {})", Dur(*f.duration_ns)) : "");
  out += fmt::format("  {:<12} {:>10} {:>10} {:>9} {:>10} {:>7}\n", "kind", "lines", "bytes",
                     "lines/s", "bytes/s", "peak/s");
  for (size_t k = 0; k < kLineKinds; ++k) {
    const KindVolume& v = f.volume[k];
    if (v.lines == 0) continue;
    std::string lps = dur_s > 0 ? fmt::format("{:.2f}", static_cast<double>(v.lines) / dur_s) : "n/a";
    std::string bps = dur_s > 0 ? FormatBytes(static_cast<double>(v.bytes) / dur_s) : "n/a";
    out += fmt::format("  {:<12} {:>10} {:>10} {:>9} {:>10} {:>7}\n",
                       LineKindName(static_cast<LineKind>(k)), Count(v.lines),
                       FormatBytes(static_cast<double>(v.bytes)), lps, bps,
                       Count(v.peak_lines_per_s));
  }
  out += "\n";
}

// Access and request-logging lines, and the busiest endpoints.
void RenderRequests(const LogFacts& f, std::string& out) {
  if (f.access_lines + f.received_request_lines > 0) {
    out += fmt::format("Requests: {} access lines (2xx {}, 4xx {}, 5xx {}); request logging: {} "
                       "received, {} added, {} aborted\n",
                       Count(f.access_lines), Count(f.access_status_classes[2]),
                       Count(f.access_status_classes[4]), Count(f.access_status_classes[5]),
                       Count(f.received_request_lines), Count(f.added_request_lines),
                       Count(f.aborted_request_lines));
    for (size_t i = 0; i < std::min<size_t>(f.endpoints.size(), 5); ++i) {
      const EndpointCount& ep = f.endpoints[i];
      out += fmt::format("  {:<40} {:>10}{}\n", ep.endpoint, Count(ep.count),
                         ep.errors ? fmt::format("  ({} 5xx)", Count(ep.errors)) : "");
    }
    out += "\n";
  }
}

// Warning and error lines grouped by message template, the most frequent first.
void RenderMessages(const LogFacts& f, const SummaryOptions& o, std::string& out) {
  if (f.messages.empty()) {
    out += "Warnings and errors: none\n";
  } else {
    out += fmt::format("Warnings and errors: {} warning lines, {} error lines, {} tracebacks, {} "
                       "templates\n",
                       Count(f.warning_lines), Count(f.error_lines), Count(f.tracebacks),
                       Count(f.messages.size()));
    out += fmt::format("  {:>7}  {:<8} {:<15} {:<15} {}\n", "count", "level", "first", "last",
                       "message template");
    for (size_t i = 0; i < std::min(f.messages.size(), o.message_rows); ++i) {
      const MessageGroup& m = f.messages[i];
      out += fmt::format("  {:>7}  {:<8} {:<15} {:<15} {}\n", Count(m.count), m.level,
                         m.first_ns ? m.first_label : "n/a", m.last_ns ? m.last_label : "n/a",
                         m.tmpl);
    }
    if (f.messages.size() > o.message_rows) {
      out += fmt::format("  ... {} more templates (see --json)\n", f.messages.size() - o.message_rows);
    }
  }
}

void RenderBadInput(const LogFacts& f, std::string& out) {
  if (f.unknown_lines + f.binary_lines + f.overlong_lines + f.unterminated_last_lines > 0) {
    out += fmt::format("\nBad input (counted, skipped): {} unknown lines, {} binary lines, {} "
                       "over-long lines, {} unterminated last lines\n",
                       Count(f.unknown_lines), Count(f.binary_lines), Count(f.overlong_lines),
                       Count(f.unterminated_last_lines));
    for (const std::string& ex : f.unknown_examples) out += "  " + ex + "\n";
  }
}

}  // namespace

std::string RenderStatsRow(const LogFacts& f, const EngineFacts& e, size_t i) {
  const EngineSeries& s = e.series;
  std::string hit = s.prefix_hit_pct[i] ? fmt::format("{:.1f}", *s.prefix_hit_pct[i]) : "n/a";
  return fmt::format("{:<15} {:>12.1f} {:>10.1f} {:>8} {:>8} {:>6.1f} {:>11}", f.Label(s.t_ns[i]),
                     s.prompt_tps[i], s.gen_tps[i], s.running[i], s.waiting[i], s.kv_pct[i], hit);
}

std::string RenderLogSummary(const LogFacts& f, const SummaryOptions& o) {
  std::string out;
  RenderInputs(f, out);

  if (f.engines.empty()) {
    out += "Stats series: no vLLM stats lines";
    if (f.stats_disabled_warnings > 0) out += " (stats logging was disabled: api_server_count > 1)";
    out += "\n\n";
  }
  for (const EngineFacts& e : f.engines) {
    RenderEngine(f, e, o, out);
    out += "\n";
  }
  RenderOtherServers(f, out);
  RenderVolume(f, out);
  RenderRequests(f, out);
  RenderMessages(f, o, out);
  RenderBadInput(f, out);
  return out;
}

}  // namespace latdoc::logs
