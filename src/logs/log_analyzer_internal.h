// LogAnalyzer's state and the types it keeps per engine (internal to src/logs). The analyzer's
// files share it: log_analyzer.cc (a line's kind, time, volume, levels and events),
// log_analyzer_series.cc (each engine's stats series, stretches and gaps) and
// log_analyzer_messages.cc (message groups, fatal lines, access lines).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "logs/line_parser.h"
#include "logs/line_reader.h"
#include "logs/log_analyzer.h"
#include "logs/log_facts.h"
#include "logs/vllm_stats.h"

namespace latdoc::logs {
namespace log_analyzer_internal {

inline constexpr int64_t kSecNs = 1000LL * 1000 * 1000;
inline constexpr int64_t kYearNs = 366LL * 86400 * kSecNs;
inline constexpr int64_t kHalfYearNs = 180LL * 86400 * kSecNs;
inline constexpr int64_t kMaxPointCoverNs = 60 * kSecNs;  // one point never covers more than this
inline constexpr size_t kMaxVolumeBuckets = 2048;
inline constexpr size_t kMaxGapCandidates = 4096;
inline constexpr size_t kMaxEndpointKeys = 256;
inline constexpr size_t kMaxEngines = 64;
inline constexpr uint64_t kBinaryCheckLines = 64;

struct Point {
  int64_t t_ns = 0;
  double prompt_tps = 0, gen_tps = 0, kv_pct = 0;
  int64_t running = 0, waiting = 0, preemptions = 0;
  std::optional<double> prefix_hit_pct;
};

// A point that stands for several merged points (EngineSeries' merge rule).
struct Pending {
  Point p;
  double prompt_sum = 0, gen_sum = 0, hit_sum = 0;
  uint64_t n = 0, hit_n = 0;

  void Add(const Point& q) {
    if (n == 0) {
      p = q;
    } else {
      p.running = std::max(p.running, q.running);
      p.waiting = std::max(p.waiting, q.waiting);
      p.kv_pct = std::max(p.kv_pct, q.kv_pct);
      p.preemptions += q.preemptions;
    }
    prompt_sum += q.prompt_tps;
    gen_sum += q.gen_tps;
    if (q.prefix_hit_pct) {
      hit_sum += *q.prefix_hit_pct;
      ++hit_n;
    }
    ++n;
  }
  void AppendTo(EngineSeries& s) const {
    s.t_ns.push_back(p.t_ns);
    s.prompt_tps.push_back(prompt_sum / static_cast<double>(n));
    s.gen_tps.push_back(gen_sum / static_cast<double>(n));
    s.running.push_back(p.running);
    s.waiting.push_back(p.waiting);
    s.kv_pct.push_back(p.kv_pct);
    s.prefix_hit_pct.push_back(hit_n ? std::optional<double>(hit_sum / static_cast<double>(hit_n))
                                     : std::nullopt);
    s.preemptions.push_back(p.preemptions);
  }
};

// Halves a full series by merging neighbours.
void HalveSeries(EngineSeries& s);

struct StretchTracker {
  std::optional<Stretch> cur;

  // Adds a point at t covering the dt_ns before it; returns true when a new stretch starts. A
  // stretch starts where its first point's time began (t - dt), so that it lasts from its start
  // to its end; `start_label(t)` labels that time, called only then.
  template <typename LabelFn>
  bool Add(bool cond, int64_t t_ns, int64_t dt_ns, double value, const std::string& label,
           const LabelFn& start_label, std::optional<Stretch>* longest) {
    if (!cond) {
      cur.reset();
      return false;
    }
    bool started = !cur;
    if (started) {
      cur = Stretch{};
      cur->start_ns = t_ns - dt_ns;
      cur->start_label = dt_ns > 0 ? start_label(t_ns - dt_ns) : label;
      cur->peak = value;
    }
    cur->end_ns = t_ns;
    cur->dur_ns += dt_ns;
    cur->peak = std::max(cur->peak, value);
    ++cur->points;
    if (!*longest || cur->dur_ns > (*longest)->dur_ns) {
      *longest = *cur;
      (*longest)->end_label = label;
    }
    return started;
  }
};

struct GapCandidate {
  int64_t start_ns, end_ns;
  int64_t running, waiting;
  uint64_t lines_between;      // lines other than stats lines
  bool open_ended = false;     // no stats line after it: end_ns is the log's last time
};

struct EngineState {
  EngineFacts f;
  std::optional<Point> prev;
  uint64_t lines_at_prev = 0;
  uint64_t stats_at_prev = 0;     // State::stats_seen after the previous point
  std::map<int64_t, uint64_t> delta_hist;   // whole seconds between stats lines -> count
  std::vector<GapCandidate> candidates;
  StretchTracker queue, kv, no_progress;
  double gen_busy_sum = 0;
  uint64_t gen_busy_n = 0;
  Pending pending;
  std::vector<std::string> lines_before_stall;   // `recent` when the current stall began
};

}  // namespace log_analyzer_internal

struct LogAnalyzer::State {
  LineParser parser;
  LogFacts f;                                // counters filled as lines come
  std::array<uint64_t, static_cast<size_t>(Source::kCount)> sources{};
  std::array<uint64_t, kLineKinds> cur_second{};
  int64_t cur_sec = INT64_MIN;
  std::optional<int64_t> cur_ts;             // time of the last timestamped line
  std::optional<int64_t> last_wall;
  int64_t year_offset_ns = 0;
  // Wall times come on a leap-year calendar ("MM-DD" has no year). The day of the year of the
  // last line (0-based, on that calendar), and whether this year's Feb 29 had a line.
  std::optional<int64_t> last_day;
  bool saw_feb29 = false;
  bool relative_known = false;
  std::vector<log_analyzer_internal::EngineState> engines;
  uint64_t stats_seen = 0;        // stats lines of every engine so far
  std::vector<std::string> recent;   // the last kLastLinesKept lines other than stats lines
  std::vector<std::string> last;     // the last kLastLinesKept lines
  double sglang_gen_sum = 0, tgi_queue_sum = 0;
  uint64_t sglang_gen_n = 0, tgi_queue_n = 0;
  int64_t v0_run_preemptions = 0;           // V0's cumulative count in this server run
  int64_t v0_earlier_runs_preemptions = 0;  // the last counts of the runs before it
  std::unordered_map<std::string, size_t> group_index;
  std::string key;                           // scratch
  std::string tmpl;                          // scratch
  std::unordered_map<std::string, EndpointCount> endpoints;
  uint64_t endpoint_overflow = 0;
  // The current input (f.inputs[current]) and its counters; those of the others wait in
  // `other_inputs` while another is current.
  struct InputState {
    std::string path;
    uint64_t lines = 0, bytes = 0, recognised = 0, binary_bytes = 0;
    bool in_traceback = false;
  };
  size_t current = 0;
  std::vector<InputState> other_inputs;
  bool in_traceback = false;
  std::string path;
  uint64_t input_lines = 0, input_bytes = 0, input_recognised = 0, input_binary_bytes = 0;

  void SaveInput() {
    if (other_inputs.size() <= current) other_inputs.resize(current + 1);
    other_inputs[current] = {path, input_lines, input_bytes, input_recognised, input_binary_bytes,
                             in_traceback};
  }
  void LoadInput(size_t i) {
    InputState& in = other_inputs[i];
    current = i;
    path = in.path;
    input_lines = in.lines;
    input_bytes = in.bytes;
    input_recognised = in.recognised;
    input_binary_bytes = in.binary_bytes;
    in_traceback = in.in_traceback;
  }

  // Steps of LogAnalyzer::AddLine (log_analyzer.cc).
  void SetTime(const ParsedLine& pl);
  LineKind TracebackOrUnknown(const Line& line, const ParsedLine& pl, LineKind kind);
  void AddVolume(LineKind kind, uint64_t bytes);
  void KeepLastLines(const Line& line, LineKind kind);
  void CountLevel(const Line& line, const ParsedLine& pl);
  void NoteVllmStartup(const ParsedLine& pl);
  void AddEvent(const ParsedLine& pl);
  void AddSglang(const ParsedLine& pl);

  // The label of a time on this log's timeline: back on the leap-year calendar of the lines
  // (a day for each Feb 29 left out before it) for "MM-DD".
  std::string Label(int64_t t) const { return f.Label(t); }

  // Stats lines: each engine's series, stretches and gaps (log_analyzer_series.cc).
  log_analyzer_internal::EngineState* Engine(int engine, bool v0);
  void AddStats(const VllmStats& st);
  // AddStats's steps: the time since the engine's previous point (and the gaps and saturation
  // seen over it), returning the time the point covers; the stretches (busy, queued, KV high,
  // no progress) the point extends; the peaks and firsts it raises.
  int64_t StepFromPrev(log_analyzer_internal::EngineState& e, const log_analyzer_internal::Point& p,
                       const std::string& label);
  void AddStretches(log_analyzer_internal::EngineState& e, const log_analyzer_internal::Point& p,
                    int64_t dt, const std::string& label);
  void AddPeaks(log_analyzer_internal::EngineState& e, const log_analyzer_internal::Point& p,
                const VllmStats& st, const std::string& label);
  // Lines other than stats lines (of any engine) logged since the engine's previous point, less
  // `this_line` (1: the current line is the engine's next stats line).
  uint64_t LinesSincePrev(const log_analyzer_internal::EngineState& e, uint64_t this_line) const {
    const uint64_t lines = f.lines - e.lines_at_prev - this_line;
    const uint64_t stats = stats_seen - e.stats_at_prev;
    return lines >= stats ? lines - stats : 0;
  }
  static bool Busy(const log_analyzer_internal::Point& q) {
    return q.running > 0 || q.waiting > 0 || q.prompt_tps > 0 || q.gen_tps > 0;
  }
  // V0 logs the prefix-cache hit rate on its own line right after the stats line: it belongs
  // to that stats point.
  void AddV0PrefixHit(double pct);
  // An engine's facts for Snapshot: its series, its usual stats interval and its gaps.
  EngineFacts SnapshotEngine(const log_analyzer_internal::EngineState& e) const;

  // Warnings and errors grouped by template, fatal lines, access lines
  // (log_analyzer_messages.cc).
  void AddMessage(Level level, const ParsedLine& pl);
  // Lines that say the engine died or why (vLLM, PyTorch, ROCm/CUDA, systemd): the first of each
  // kind, at ERROR or above or as an exception.
  void NoteFatal(const ParsedLine& pl);
  void AddAccess(const AccessLine& a);
};

}  // namespace latdoc::logs
