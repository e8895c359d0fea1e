#include "logs/log_analyzer.h"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include <fmt/core.h>

#include "base/secrets.h"
#include "logs/line_parser.h"
#include "logs/message_template.h"
#include "logs/vllm_startup.h"

namespace latdoc::logs {
namespace {

constexpr int64_t kSecNs = 1000LL * 1000 * 1000;
constexpr int64_t kYearNs = 366LL * 86400 * kSecNs;
constexpr int64_t kHalfYearNs = 180LL * 86400 * kSecNs;
constexpr int64_t kMaxPointCoverNs = 60 * kSecNs;   // one point never covers more than this
constexpr size_t kMaxVolumeBuckets = 2048;
constexpr size_t kMaxGapCandidates = 4096;
constexpr size_t kMaxEndpointKeys = 256;
constexpr size_t kMaxEngines = 64;
constexpr uint64_t kBinaryCheckLines = 64;

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
void HalveSeries(EngineSeries& s) {
  size_t n = s.size() / 2;
  for (size_t i = 0; i < n; ++i) {
    size_t a = 2 * i, b = 2 * i + 1;
    s.t_ns[i] = s.t_ns[a];
    s.prompt_tps[i] = (s.prompt_tps[a] + s.prompt_tps[b]) / 2;
    s.gen_tps[i] = (s.gen_tps[a] + s.gen_tps[b]) / 2;
    s.running[i] = std::max(s.running[a], s.running[b]);
    s.waiting[i] = std::max(s.waiting[a], s.waiting[b]);
    s.kv_pct[i] = std::max(s.kv_pct[a], s.kv_pct[b]);
    auto ha = s.prefix_hit_pct[a], hb = s.prefix_hit_pct[b];
    s.prefix_hit_pct[i] = ha && hb ? std::optional<double>((*ha + *hb) / 2) : (ha ? ha : hb);
    s.preemptions[i] = s.preemptions[a] + s.preemptions[b];
  }
  s.t_ns.resize(n);
  s.prompt_tps.resize(n);
  s.gen_tps.resize(n);
  s.running.resize(n);
  s.waiting.resize(n);
  s.kv_pct.resize(n);
  s.prefix_hit_pct.resize(n);
  s.preemptions.resize(n);
  s.decimation *= 2;
}

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

}  // namespace

std::string LogFacts::Label(int64_t t) const {
  if (!relative_time) {
    for (int64_t skip : day_skips) t += t >= skip ? 86400 * kSecNs : 0;
  }
  return TimeLabel(t, relative_time);
}

std::string TimeLabel(int64_t ts_ns, bool relative) {
  return relative ? RelativeLabel(ts_ns) : WallLabel(ts_ns);
}

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
  std::vector<EngineState> engines;
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

  void AddVolume(LineKind kind, uint64_t bytes) {
    auto k = static_cast<size_t>(kind);
    ++f.volume[k].lines;
    f.volume[k].bytes += bytes;
    if (!cur_ts) return;
    int64_t t = *cur_ts;
    int64_t sec = t / kSecNs;
    if (sec != cur_sec) {
      for (size_t i = 0; i < kLineKinds; ++i) {
        f.volume[i].peak_lines_per_s = std::max(f.volume[i].peak_lines_per_s, cur_second[i]);
        cur_second[i] = 0;
      }
      cur_sec = sec;
    }
    ++cur_second[k];
    // Volume series: buckets from first_ns, doubling their width when they run out.
    int64_t rel = std::max<int64_t>(0, t - *f.first_ns);
    if (f.volume_bucket_ns == 0) f.volume_bucket_ns = kSecNs;
    auto idx = static_cast<size_t>(rel / f.volume_bucket_ns);
    while (idx >= kMaxVolumeBuckets) {
      auto& vs = f.volume_series;
      size_t n = (vs.size() + 1) / 2;
      for (size_t i = 0; i < n; ++i) {
        std::array<uint64_t, kLineKinds> m = vs[2 * i];
        if (2 * i + 1 < vs.size()) {
          for (size_t j = 0; j < kLineKinds; ++j) m[j] += vs[2 * i + 1][j];
        }
        vs[i] = m;
      }
      vs.resize(n);
      f.volume_bucket_ns *= 2;
      idx = static_cast<size_t>(rel / f.volume_bucket_ns);
    }
    if (idx >= f.volume_series.size()) f.volume_series.resize(idx + 1);
    ++f.volume_series[idx][k];
  }

  void SetTime(const ParsedLine& pl) {
    if (!pl.ts_ns) return;
    int64_t t = *pl.ts_ns;
    if (!relative_known) {
      relative_known = true;
      f.relative_time = pl.ts_is_relative;
    }
    if (!pl.ts_is_relative) {
      // "MM-DD" has no year: a jump back by more than half a year is New Year's Eve.
      constexpr int64_t kFeb29 = 31 + 28, kDayNs = 86400 * kSecNs;
      const int64_t day = t / kDayNs;
      t += year_offset_ns;
      if (last_wall && t + kHalfYearNs < *last_wall) {
        year_offset_ns += kYearNs;
        t += kYearNs;
        saw_feb29 = false;
      } else if (last_day && *last_day < kFeb29 && day > kFeb29 && !saw_feb29) {
        // From Feb 28 or before to Mar 1 or after with no line on Feb 29: a year without one
        // (or a leap year's silent day, a day off then), not a day of silence.
        year_offset_ns -= kDayNs;
        t -= kDayNs;
        f.day_skips.push_back(t);
      }
      saw_feb29 = saw_feb29 || day == kFeb29;
      last_day = day;
      last_wall = std::max(last_wall.value_or(t), t);
    }
    cur_ts = t;
    if (!f.first_ns) f.first_ns = t;
    if (!f.last_ns || t > *f.last_ns) f.last_ns = t;
  }

  // The label of a time on this log's timeline: back on the leap-year calendar of the lines
  // (a day for each Feb 29 left out before it) for "MM-DD".
  std::string Label(int64_t t) const { return f.Label(t); }

  EngineState* Engine(int engine, bool v0) {
    for (auto& e : engines) {
      if (e.f.engine == engine) return &e;
    }
    if (engines.size() >= kMaxEngines) return nullptr;
    engines.emplace_back();
    engines.back().f.engine = engine;
    engines.back().f.v0 = v0;
    return &engines.back();
  }

  void AddStats(const VllmStats& st) {
    if (!cur_ts) return;   // a stats line always has a time; guard anyway
    EngineState* e = Engine(st.engine, st.v0);
    if (!e) return;
    EngineFacts& ef = e->f;
    Point p;
    p.t_ns = *cur_ts;
    p.prompt_tps = st.prompt_tps;
    p.gen_tps = st.gen_tps;
    p.running = st.running;
    p.waiting = st.waiting;
    p.kv_pct = st.kv_pct;
    p.preemptions = st.preemptions.value_or(0);
    p.prefix_hit_pct = st.prefix_hit_pct;
    std::string label = Label(p.t_ns);
    int64_t dt = 0;
    if (e->prev) {
      const Point& q = *e->prev;
      int64_t delta = p.t_ns - q.t_ns;
      dt = std::clamp<int64_t>(delta, 0, kMaxPointCoverNs);
      if (delta >= 0) {
        int64_t secs = std::min<int64_t>((delta + kSecNs / 2) / kSecNs, 3600);
        ++e->delta_hist[secs];
      }
      if (Busy(q) && delta >= 2 * kSecNs) {
        e->candidates.push_back({q.t_ns, p.t_ns, q.running, q.waiting, LinesSincePrev(*e, 1)});
        if (e->candidates.size() >= kMaxGapCandidates) {
          // Keep the longer half; the short ones are ordinary spacing, not stalls.
          std::sort(e->candidates.begin(), e->candidates.end(), [](const auto& a, const auto& b) {
            return a.end_ns - a.start_ns > b.end_ns - b.start_ns;
          });
          e->candidates.resize(kMaxGapCandidates / 2);
        }
      }
      // Throughput falling while the queue grows: the server is past its capacity.
      if (p.waiting > q.waiting && p.gen_tps < q.gen_tps * 0.9) {
        if (ef.saturation_points++ == 0) ef.first_saturation_label = label;
      }
    }
    ++ef.stats_lines;
    bool busy = p.running > 0 || p.waiting > 0;
    if (busy) {
      ef.busy_ns += dt;
      e->gen_busy_sum += p.gen_tps;
      ++e->gen_busy_n;
    }
    if (p.waiting > 0) {
      ++ef.queued_points;
      ef.queued_ns += dt;
    }
    auto label_of = [this](int64_t t) { return Label(t); };
    if (e->queue.Add(p.waiting > 0, p.t_ns, dt, static_cast<double>(p.waiting), label, label_of,
                     &ef.longest_queue)) {
      ++ef.queue_stretches;
    }
    bool kv_high = p.kv_pct >= kKvHighPct;
    if (kv_high) {
      ++ef.kv_high_points;
      ef.kv_high_ns += dt;
    }
    if (e->kv.Add(kv_high, p.t_ns, dt, p.kv_pct, label, label_of, &ef.longest_kv_high)) {
      ++ef.kv_high_stretches;
    }
    // Requests running and not one token made in the interval: the engine did not step.
    const bool stalled = p.running > 0 && p.prompt_tps == 0 && p.gen_tps == 0;
    if (stalled && !e->no_progress.cur) e->lines_before_stall = recent;
    e->no_progress.Add(stalled, p.t_ns, dt, static_cast<double>(p.running), label, label_of,
                       &ef.longest_no_progress);
    if (stalled && ef.longest_no_progress &&
        ef.longest_no_progress->start_ns == e->no_progress.cur->start_ns) {
      ef.lines_before_no_progress = e->lines_before_stall;
    }
    if (p.preemptions > 0) {
      if (ef.preemption_points++ == 0) ef.first_preemption_label = label;
      ef.preemptions += p.preemptions;
    }
    ef.max_running = std::max(ef.max_running, p.running);
    ef.max_waiting = std::max(ef.max_waiting, p.waiting);
    ef.peak_kv_pct = std::max(ef.peak_kv_pct, p.kv_pct);
    ef.peak_gen_tps = std::max(ef.peak_gen_tps, p.gen_tps);
    ef.peak_prompt_tps = std::max(ef.peak_prompt_tps, p.prompt_tps);
    if (p.prefix_hit_pct) ef.last_prefix_hit_pct = p.prefix_hit_pct;
    if (st.swapped) ef.max_swapped = std::max(ef.max_swapped.value_or(0), *st.swapped);
    // Series for charts.
    e->pending.Add(p);
    if (e->pending.n >= ef.series.decimation) {
      e->pending.AppendTo(ef.series);
      e->pending = Pending();
      if (ef.series.size() >= kMaxSeriesPoints) HalveSeries(ef.series);
    }
    e->prev = p;
    e->lines_at_prev = f.lines;
    e->stats_at_prev = ++stats_seen;
  }

  // Lines other than stats lines (of any engine) logged since the engine's previous point, less
  // `this_line` (1: the current line is the engine's next stats line).
  uint64_t LinesSincePrev(const EngineState& e, uint64_t this_line) const {
    const uint64_t lines = f.lines - e.lines_at_prev - this_line;
    const uint64_t stats = stats_seen - e.stats_at_prev;
    return lines >= stats ? lines - stats : 0;
  }
  static bool Busy(const Point& q) {
    return q.running > 0 || q.waiting > 0 || q.prompt_tps > 0 || q.gen_tps > 0;
  }

  // V0 logs the prefix-cache hit rate on its own line right after the stats line: it belongs
  // to that stats point.
  void AddV0PrefixHit(double pct) {
    for (auto& e : engines) {
      if (!e.f.v0 || !e.prev || e.prev->prefix_hit_pct) continue;
      e.prev->prefix_hit_pct = pct;
      e.f.last_prefix_hit_pct = pct;
      if (e.pending.n > 0) {
        e.pending.hit_sum += pct;
        ++e.pending.hit_n;
      } else if (!e.f.series.prefix_hit_pct.empty() && !e.f.series.prefix_hit_pct.back()) {
        e.f.series.prefix_hit_pct.back() = pct;
      }
    }
  }

  void AddMessage(Level level, const ParsedLine& pl) {
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

  // Lines that say the engine died or why (vLLM, PyTorch, ROCm/CUDA, systemd): the first of each
  // kind, at ERROR or above or as an exception.
  void NoteFatal(const ParsedLine& pl) {
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

  void AddAccess(const AccessLine& a) {
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
};

LogAnalyzer::LogAnalyzer() : s_(std::make_unique<State>()) {}
LogAnalyzer::~LogAnalyzer() = default;

size_t LogAnalyzer::BeginInput(const std::string& path, Compression compression) {
  InputInfo in;
  in.path = path;
  in.compression = compression == Compression::kGzip   ? "gzip"
                   : compression == Compression::kZstd ? "zstd"
                                                       : "none";
  if (!s_->f.inputs.empty()) s_->SaveInput();
  s_->f.inputs.push_back(std::move(in));
  s_->current = s_->f.inputs.size() - 1;
  s_->path = path;
  s_->input_lines = s_->input_bytes = s_->input_recognised = s_->input_binary_bytes = 0;
  s_->in_traceback = false;
  return s_->current;
}

void LogAnalyzer::SelectInput(size_t index) {
  if (index == s_->current || index >= s_->f.inputs.size()) return;
  s_->SaveInput();
  s_->LoadInput(index);
}

void LogAnalyzer::SetInputBytes(uint64_t raw_bytes, uint64_t bytes) {
  if (s_->f.inputs.empty()) return;
  s_->f.inputs[s_->current].raw_bytes = raw_bytes;
  s_->f.inputs[s_->current].bytes = bytes;
}

uint64_t LogAnalyzer::recognised_lines_in_input() const { return s_->input_recognised; }
uint64_t LogAnalyzer::binary_bytes_in_input() const { return s_->input_binary_bytes; }
uint64_t LogAnalyzer::bytes_in_input() const { return s_->input_bytes; }

// Plan: parse; set the current time; pick the line's kind (stats, request log, access, level);
// count volume; then the event's own bookkeeping (stats series, message groups, counters).
void LogAnalyzer::AddLine(const Line& line) {
  State& s = *s_;
  if (s.f.inputs.empty()) BeginInput("<input>", Compression::kNone);
  LogFacts& f = s.f;
  const ParsedLine& pl = s.parser.Parse(line.text);
  ++f.lines;
  f.bytes += line.raw_bytes;
  ++s.input_lines;
  s.input_bytes += line.raw_bytes;
  ++f.inputs[s.current].lines;
  if (line.truncated) ++f.overlong_lines;
  if (line.no_newline) ++f.unterminated_last_lines;
  ++s.sources[static_cast<size_t>(pl.source)];
  if (pl.source != Source::kUnknown && pl.source != Source::kBinary &&
      pl.source != Source::kEmpty) {
    ++s.input_recognised;
  }
  s.SetTime(pl);

  LineKind kind = LineKind::kOther;
  switch (pl.event) {
    case Event::kStats:
    case Event::kPrefixCacheV0:
    case Event::kOtherStats:
    case Event::kSglangDecode:
    case Event::kSglangPrefill:
      kind = LineKind::kStats;
      break;
    case Event::kTgiSuccess:
      kind = LineKind::kRequestLog;
      break;
    case Event::kReceivedRequest:
    case Event::kAddedRequest:
    case Event::kFinishedRequest:
    case Event::kAbortedRequest:
    case Event::kGeneratedResponse:
    case Event::kRequestDetails:
      kind = LineKind::kRequestLog;
      break;
    case Event::kAccess:
      kind = LineKind::kAccess;
      break;
    default:
      switch (pl.level) {
        case Level::kDebug: kind = LineKind::kDebug; break;
        case Level::kWarning: kind = LineKind::kWarning; break;
        case Level::kError:
        case Level::kCritical: kind = LineKind::kError; break;
        default: break;
      }
  }
  // Traceback lines, raw or with vLLM's prefix: the "Traceback" header, frames, and the code
  // lines under them. One traceback per header.
  bool traceback_body = false;
  if (pl.event == Event::kTraceback) {
    kind = LineKind::kError;
    if (pl.msg.substr(0, 10) == "Traceback ") {
      ++f.tracebacks;
      s.in_traceback = true;
    }
    traceback_body = true;
  } else if (s.in_traceback && (pl.source == Source::kUnknown || pl.source == Source::kEmpty) &&
             !pl.msg.empty() && (pl.msg[0] == ' ' || pl.msg[0] == '^')) {
    kind = LineKind::kError;
    traceback_body = true;
  } else if (pl.event == Event::kException) {
    s.in_traceback = false;
  } else if (pl.source != Source::kUnknown) {
    s.in_traceback = false;
  }
  if (pl.source == Source::kBinary) {
    ++f.binary_lines;
    s.input_binary_bytes += line.raw_bytes;
    kind = LineKind::kUnknown;
  } else if (pl.source == Source::kUnknown && !traceback_body) {
    ++f.unknown_lines;
    kind = LineKind::kUnknown;
    if (f.unknown_examples.size() < 5) {
      f.unknown_examples.push_back(
          fmt::format("{}:{}: {}", s.path, s.input_lines, RedactSecretsInText(line.text.substr(0, 120))));
    }
  }
  s.AddVolume(kind, line.raw_bytes);
  {
    std::string text = fmt::format("{}:{}: {}", s.path, s.input_lines,
                                   RedactSecretsInText(line.text.substr(0, 200)));
    auto push = [](std::vector<std::string>& v, const std::string& t) {
      if (v.size() >= kLastLinesKept) v.erase(v.begin());
      v.push_back(t);
    };
    if (kind != LineKind::kStats) push(s.recent, text);
    push(s.last, text);
  }
  s.NoteFatal(pl);

  if (pl.level == Level::kDebug) {
    ++f.debug_lines;
    f.debug_bytes += line.raw_bytes;
    if (!f.debug_file_paths && pl.file.find('/') != std::string_view::npos) {
      f.debug_file_paths = true;
    }
  }
  if (pl.level == Level::kWarning) ++f.warning_lines;
  if (pl.level == Level::kError || pl.level == Level::kCritical) {
    if (pl.event != Event::kTraceback) ++f.error_lines;
  }
  if (pl.level == Level::kWarning || pl.level == Level::kCritical ||
      (pl.level == Level::kError && pl.event != Event::kTraceback)) {
    s.AddMessage(pl.level, pl);
  }

  if (pl.source == Source::kVllm && pl.level == Level::kInfo && pl.event == Event::kNone) {
    if (auto version = VllmVersionFromMessage(pl.msg)) {
      f.vllm_version = std::move(*version);
    } else if (auto argv = VllmArgvFromLoggedArgs(pl.msg)) {
      f.vllm_args = VllmLoggedArgs{std::move(*argv), fmt::format("{}:{}", s.path, s.input_lines)};
    }
  }

  switch (pl.event) {
    case Event::kStats: s.AddStats(pl.stats); break;
    case Event::kPrefixCacheV0: s.AddV0PrefixHit(pl.value); break;
    case Event::kReceivedRequest: ++f.received_request_lines; break;
    case Event::kAddedRequest: ++f.added_request_lines; break;
    case Event::kFinishedRequest: ++f.finished_request_lines; break;
    case Event::kAbortedRequest: ++f.aborted_request_lines; break;
    case Event::kGeneratedResponse: ++f.generated_response_lines; break;
    case Event::kRequestDetails: ++f.request_detail_lines; break;
    case Event::kAccess:
      s.AddAccess(pl.access);
      if (pl.source == Source::kUvicorn) ++f.uvicorn_access_lines;
      break;
    case Event::kStatsDisabled: ++f.stats_disabled_warnings; break;
    case Event::kSglangDecode:
    case Event::kSglangPrefill: {
      SglangFacts& g = f.sglang;
      const SglangBatch& b = pl.sglang;
      if (pl.event == Event::kSglangDecode) {
        ++g.decode_batches;
        if (b.queued > 0) ++g.queued_batches;
        if (b.gen_tps >= 0 && b.running > 0) {
          s.sglang_gen_sum += b.gen_tps;
          g.mean_gen_tps = s.sglang_gen_sum / static_cast<double>(++s.sglang_gen_n);
        }
      } else {
        ++g.prefill_batches;
        if (b.input_tps >= 0) g.peak_input_tps = std::max(g.peak_input_tps.value_or(0), b.input_tps);
      }
      g.max_running = std::max(g.max_running, b.running);
      g.max_queued = std::max(g.max_queued, b.queued);
      if (b.token_usage >= 0) g.peak_token_usage_pct = std::max(g.peak_token_usage_pct, 100 * b.token_usage);
      break;
    }
    case Event::kTgiSuccess:
      ++f.tgi.requests;
      if (pl.value >= 0) {
        s.tgi_queue_sum += pl.value;
        f.tgi.mean_queue_ms = s.tgi_queue_sum / static_cast<double>(++s.tgi_queue_n);
        f.tgi.max_queue_ms = std::max(f.tgi.max_queue_ms.value_or(0), pl.value);
      }
      break;
    case Event::kPreemptionV0:
      ++f.v0_preemption_warnings;
      if (pl.count > 0) {
        // The count is per server process: one that drops is a restart (or the next of two
        // rotated files), whose preemptions add to the earlier run's.
        if (pl.count < s.v0_run_preemptions) s.v0_earlier_runs_preemptions += s.v0_run_preemptions;
        s.v0_run_preemptions = pl.count;
        f.v0_cumulative_preemptions = s.v0_earlier_runs_preemptions + s.v0_run_preemptions;
      }
      break;
    case Event::kLlamaPromptTiming:
      ++f.llama.prompt_timings;
      f.llama.prompt_tokens += pl.count;
      f.llama.prompt_ms += pl.value;
      break;
    case Event::kLlamaEvalTiming:
      ++f.llama.eval_timings;
      f.llama.gen_tokens += pl.count;
      f.llama.gen_ms += pl.value;
      if (pl.value > 0 && pl.count > 0) {
        double tps = 1000.0 * static_cast<double>(pl.count) / pl.value;
        f.llama.min_gen_tps = std::min(f.llama.min_gen_tps.value_or(tps), tps);
        f.llama.max_gen_tps = std::max(f.llama.max_gen_tps.value_or(tps), tps);
      }
      break;
    default: break;
  }
}

LogFacts LogAnalyzer::Snapshot() const {
  const State& s = *s_;
  LogFacts f = s.f;
  f.last_lines = s.last;
  for (size_t i = 0; i < kLineKinds; ++i) {
    f.volume[i].peak_lines_per_s = std::max(f.volume[i].peak_lines_per_s, s.cur_second[i]);
  }
  static constexpr Source kSources[] = {Source::kVllm,   Source::kUvicorn, Source::kLlamaCpp,
                                        Source::kSglang, Source::kTgi,     Source::kTorch,
                                        Source::kSystem, Source::kPython,  Source::kUnknown,
                                        Source::kBinary, Source::kEmpty};
  for (Source src : kSources) {
    uint64_t n = s.sources[static_cast<size_t>(src)];
    if (n > 0) f.sources.emplace_back(std::string(SourceName(src)), n);
  }
  if (f.first_ns && f.last_ns) {
    f.duration_ns = *f.last_ns - *f.first_ns;
    f.first_label = s.Label(*f.first_ns);
    f.last_label = s.Label(*f.last_ns);
  }
  for (const auto& [k, ep] : s.endpoints) f.endpoints.push_back(ep);
  std::sort(f.endpoints.begin(), f.endpoints.end(), [](const auto& a, const auto& b) {
    return a.count != b.count ? a.count > b.count : a.endpoint < b.endpoint;
  });
  if (f.endpoints.size() > 32) f.endpoints.resize(32);
  for (auto& g : f.messages) {
    if (g.last_ns) g.last_label = s.Label(*g.last_ns);
  }
  std::stable_sort(f.messages.begin(), f.messages.end(), [](const auto& a, const auto& b) {
    return a.count > b.count;
  });

  for (const EngineState& e : s.engines) {
    EngineFacts ef = e.f;
    if (e.pending.n > 0) e.pending.AppendTo(ef.series);
    if (e.gen_busy_n > 0) ef.mean_gen_tps_busy = e.gen_busy_sum / static_cast<double>(e.gen_busy_n);
    // The usual interval is the most common spacing (ties: the shorter). With fewer than three
    // spacings, assume vLLM's default VLLM_LOG_STATS_INTERVAL of 10 s.
    uint64_t spacings = 0, best_n = 0;
    int64_t best_s = 0;
    for (const auto& [secs, n] : e.delta_hist) {
      spacings += n;
      if (secs > 0 && n > best_n) {
        best_n = n;
        best_s = secs;
      }
    }
    double interval_s = 10.0;
    if (spacings >= 3 && best_s > 0) {
      interval_s = static_cast<double>(best_s);
    } else {
      ef.interval_assumed = true;
    }
    ef.interval_s = interval_s;
    auto interval_ns = static_cast<int64_t>(interval_s * 1e9);
    // Due lines missing: a spacing past 1.5 intervals (+1 s of timestamp rounding). With an
    // assumed interval, only a spacing of three intervals counts.
    int64_t threshold_ns = ef.interval_assumed ? 3 * interval_ns
                                               : interval_ns + interval_ns / 2 + kSecNs;
    // A busy engine whose stats lines stopped before the log did: a gap still open at the end
    // (a log taken during a hang ends inside one).
    std::vector<GapCandidate> candidates = e.candidates;
    if (e.prev && State::Busy(*e.prev) && f.last_ns && *f.last_ns > e.prev->t_ns) {
      candidates.push_back({e.prev->t_ns, *f.last_ns, e.prev->running, e.prev->waiting,
                            s.LinesSincePrev(e, 0)});
      candidates.back().open_ended = true;
    }
    for (const GapCandidate& c : candidates) {
      int64_t gap = c.end_ns - c.start_ns;
      if (gap <= threshold_ns) continue;
      StatsGap g;
      g.engine = ef.engine;
      g.start_ns = c.start_ns;
      g.end_ns = c.end_ns;
      g.gap_ns = gap;
      g.missing_ns = gap - interval_ns;
      g.start_label = s.Label(c.start_ns);
      g.end_label = s.Label(c.end_ns);
      g.running_before = c.running;
      g.waiting_before = c.waiting;
      g.lines_between = c.lines_between;
      g.open_ended = c.open_ended;
      ++ef.gaps_total;
      ef.gaps_missing_ns += g.missing_ns;
      ef.gaps.push_back(std::move(g));
    }
    std::sort(ef.gaps.begin(), ef.gaps.end(), [](const StatsGap& a, const StatsGap& b) {
      return a.gap_ns != b.gap_ns ? a.gap_ns > b.gap_ns : a.start_ns < b.start_ns;
    });
    if (ef.gaps.size() > kMaxGapsKept) ef.gaps.resize(kMaxGapsKept);
    f.engines.push_back(std::move(ef));
  }
  std::sort(f.engines.begin(), f.engines.end(),
            [](const EngineFacts& a, const EngineFacts& b) { return a.engine < b.engine; });
  return f;
}

StatusOr<uint64_t> FeedLines(LineReader& reader, InputStream& in, LogAnalyzer& analyzer,
                             bool at_end) {
  uint64_t fed = 0;
  Line line;
  // An input is binary when none of its first lines is of a known form and at least half of
  // their bytes are binary. Checked once, at line kBinaryCheckLines or at the end.
  auto check_binary = [&](uint64_t lines_in_input) -> Status {
    if (analyzer.recognised_lines_in_input() > 0) return Status::Ok();
    if (analyzer.binary_bytes_in_input() * 2 <= analyzer.bytes_in_input()) return Status::Ok();
    return InvalidArgument(fmt::format(
        "{}: byte 0: binary data, not a text log (no vLLM, uvicorn or llama.cpp line in the "
        "first {} lines)",
        in.path(), lines_in_input));
  };
  for (;;) {
    ASSIGN_OR_RETURN(bool got, reader.Next(&line));
    if (!got) break;
    analyzer.AddLine(line);
    ++fed;
    if (line.number == kBinaryCheckLines) RETURN_IF_ERROR(check_binary(line.number));
  }
  if (at_end) {
    if (reader.TakePartial(&line)) {
      analyzer.AddLine(line);
      ++fed;
    }
    if (reader.lines() > 0 && reader.lines() < kBinaryCheckLines) {
      RETURN_IF_ERROR(check_binary(reader.lines()));
    }
  }
  analyzer.SetInputBytes(in.raw_offset(), reader.bytes_consumed());
  return fed;
}

StatusOr<LogFacts> AnalyzeInputs(const std::vector<std::string>& paths,
                                 const AnalyzeOptions& opts) {
  LogAnalyzer analyzer;
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
    analyzer.BeginInput(path, in->compression());
    LineReader reader(in.get(), opts.max_line_bytes);
    ASSIGN_OR_RETURN(uint64_t n, FeedLines(reader, *in, analyzer, /*at_end=*/true));
    (void)n;
  }
  return analyzer.Snapshot();
}

}  // namespace latdoc::logs
