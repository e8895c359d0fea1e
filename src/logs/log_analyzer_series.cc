// LogAnalyzer: each engine's stats series, its stretches (queue, KV cache, no progress) and
// the gaps between its stats lines.
#include "logs/log_analyzer_internal.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "base/secrets.h"

namespace latdoc::logs {
using namespace log_analyzer_internal;  // the analyzer's own types

void log_analyzer_internal::HalveSeries(EngineSeries& s) {
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

EngineState* LogAnalyzer::State::Engine(int engine, bool v0) {
  for (auto& e : engines) {
    if (e.f.engine == engine) return &e;
  }
  if (engines.size() >= kMaxEngines) return nullptr;
  engines.emplace_back();
  engines.back().f.engine = engine;
  engines.back().f.v0 = v0;
  return &engines.back();
}

// One stats line of an engine: its point, spacing and gap candidate, stretches, peaks and chart
// series. Long on purpose: each step reads the point and the one before it, and writes the
// same engine's facts.
int64_t LogAnalyzer::State::StepFromPrev(EngineState& e, const Point& p, const std::string& label) {
  EngineFacts& ef = e.f;
  int64_t dt = 0;
  if (e.prev) {
    const Point& q = *e.prev;
    int64_t delta = p.t_ns - q.t_ns;
    dt = std::clamp<int64_t>(delta, 0, kMaxPointCoverNs);
    if (delta >= 0) {
      int64_t secs = std::min<int64_t>((delta + kSecNs / 2) / kSecNs, 3600);
      ++e.delta_hist[secs];
    }
    if (Busy(q) && delta >= 2 * kSecNs) {
      e.candidates.push_back({q.t_ns, p.t_ns, q.running, q.waiting, LinesSincePrev(e, 1)});
      if (e.candidates.size() >= kMaxGapCandidates) {
        // Keep the longer half; the short ones are ordinary spacing, not stalls.
        std::sort(e.candidates.begin(), e.candidates.end(), [](const auto& a, const auto& b) {
          return a.end_ns - a.start_ns > b.end_ns - b.start_ns;
        });
        e.candidates.resize(kMaxGapCandidates / 2);
      }
    }
    // Throughput falling while the queue grows: the server is past its capacity.
    if (p.waiting > q.waiting && p.gen_tps < q.gen_tps * 0.9) {
      if (ef.saturation_points++ == 0) ef.first_saturation_label = label;
    }
  }
  return dt;
}

void LogAnalyzer::State::AddStretches(EngineState& e, const Point& p, int64_t dt,
                                      const std::string& label) {
  EngineFacts& ef = e.f;
  bool busy = p.running > 0 || p.waiting > 0;
  if (busy) {
    ef.busy_ns += dt;
    e.gen_busy_sum += p.gen_tps;
    ++e.gen_busy_n;
  }
  if (p.waiting > 0) {
    ++ef.queued_points;
    ef.queued_ns += dt;
  }
  auto label_of = [this](int64_t t) { return Label(t); };
  if (e.queue.Add(p.waiting > 0, p.t_ns, dt, static_cast<double>(p.waiting), label, label_of,
                  &ef.longest_queue)) {
    ++ef.queue_stretches;
  }
  bool kv_high = p.kv_pct >= kKvHighPct;
  if (kv_high) {
    ++ef.kv_high_points;
    ef.kv_high_ns += dt;
  }
  if (e.kv.Add(kv_high, p.t_ns, dt, p.kv_pct, label, label_of, &ef.longest_kv_high)) {
    ++ef.kv_high_stretches;
  }
  // Requests running and not one token made in the interval: the engine did not step.
  const bool stalled = p.running > 0 && p.prompt_tps == 0 && p.gen_tps == 0;
  if (stalled && !e.no_progress.cur) e.lines_before_stall = recent;
  e.no_progress.Add(stalled, p.t_ns, dt, static_cast<double>(p.running), label, label_of,
                    &ef.longest_no_progress);
  if (stalled && ef.longest_no_progress &&
      ef.longest_no_progress->start_ns == e.no_progress.cur->start_ns) {
    ef.lines_before_no_progress = e.lines_before_stall;
  }
}

void LogAnalyzer::State::AddPeaks(EngineState& e, const Point& p, const VllmStats& st,
                                  const std::string& label) {
  EngineFacts& ef = e.f;
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
}

void LogAnalyzer::State::AddStats(const VllmStats& st) {
  if (!cur_ts) return;  // a stats line always has a time; guard anyway
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
  const int64_t dt = StepFromPrev(*e, p, label);
  ++ef.stats_lines;
  AddStretches(*e, p, dt, label);
  AddPeaks(*e, p, st, label);
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

void LogAnalyzer::State::AddV0PrefixHit(double pct) {
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

EngineFacts LogAnalyzer::State::SnapshotEngine(const EngineState& e) const {
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
                          LinesSincePrev(e, 0)});
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
    g.start_label = Label(c.start_ns);
    g.end_label = Label(c.end_ns);
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
  return ef;
}

}  // namespace latdoc::logs
