#include "attribution/attribute.h"

#include "base/clock.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace latdoc::attribution {

std::string_view CauseName(Cause c) {
  switch (c) {
    case Cause::kLog: return "log";
    case Cause::kPreemption: return "preemption";
    case Cause::kSwap: return "swap";
    case Cause::kHostCpu: return "host_cpu";
    case Cause::kSlowKernel: return "slow_kernel";
    case Cause::kPrefill: return "prefill";
    case Cause::kHostGap: return "host_gap";
    case Cause::kClient: return "client";
  }
  return "?";
}

double RunnableShare(double on_cpu, std::optional<double> wait, const Thresholds& th) {
  if (!wait || on_cpu < th.thread_min_on_cpu_share) return on_cpu;
  return on_cpu + std::clamp(*wait, 0.0, std::max(0.0, 1 - on_cpu));
}

namespace {

struct Gap {
  int64_t start_ns, end_ns;
  size_t stream;
};

int64_t Median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The samples bracketing [a, b]: the last at or before a, the first at or after b (or the
// series' ends). REQUIRES: `pts` sorted by t_ns, not empty.
template <typename P>
std::pair<const P*, const P*> Bracket(const std::vector<P>& pts, int64_t a, int64_t b) {
  auto lo = std::upper_bound(pts.begin(), pts.end(), a,
                             [](int64_t t, const P& p) { return t < p.t_ns; });
  const P* first = lo == pts.begin() ? &pts.front() : &*(lo - 1);
  auto hi = std::lower_bound(pts.begin(), pts.end(), b,
                             [](const P& p, int64_t t) { return p.t_ns < t; });
  const P* last = hi == pts.end() ? &pts.back() : &*hi;
  return {first, last};
}

template <typename P, typename F>
std::optional<int64_t> Delta(const std::vector<P>& pts, int64_t a, int64_t b, F field) {
  if (pts.empty()) return std::nullopt;
  auto [x, y] = Bracket(pts, a, b);
  std::optional<int64_t> u = field(*x), v = field(*y);
  if (!u || !v) return std::nullopt;
  return *v - *u;
}

class Tester {
 public:
  Tester(const Timeline& t, const Thresholds& th) : t_(t), th_(th) {
    for (const StreamSeries& s : t.streams)
      if (s.first_token_ns >= 0) first_tokens_.push_back({s.first_token_ns, s.prompt_tokens});
    std::sort(first_tokens_.begin(), first_tokens_.end());
    int64_t gpu_end_ns = INT64_MIN;
    for (const GpuKernel& k : t.gpu) {
      max_kernel_ns_ = std::max(max_kernel_ns_, k.end_ns - k.start_ns);
      gpu_end_ns = std::max(gpu_end_ns, k.end_ns);
    }
    if (!t.gpu.empty() && gpu_end_ns > t.gpu.front().start_ns)
      run_gpu_busy_share_ = double(GpuBusyNs(t.gpu.front().start_ns, gpu_end_ns)) /
                            double(gpu_end_ns - t.gpu.front().start_ns);
    if (t.host.size() >= 2) {
      auto d = Delta(t.host, t.host.front().t_ns, t.host.back().t_ns,
                     [](const HostPoint& p) { return p.psi_cpu_some_us; });
      const int64_t span_ns = t.host.back().t_ns - t.host.front().t_ns;
      if (d && span_ns > 0) run_psi_cpu_share_ = double(*d) * 1000 / double(span_ns);
    }
    run_queue_mean_ = RunQueue(INT64_MIN, INT64_MAX);
  }

  std::optional<double> run_queue_mean() const { return run_queue_mean_; }
  std::optional<double> run_gpu_busy_share() const { return run_gpu_busy_share_; }

  // The mean of procs_running, less the sampler's own thread, over the samples in [a, b] (the
  // nearest before a when none is inside).
  std::optional<double> RunQueue(int64_t a, int64_t b) const {
    double sum = 0;
    int n = 0;
    const HostPoint* before = nullptr;
    for (const HostPoint& p : t_.host) {
      if (!p.procs_running) continue;
      if (p.t_ns < a) before = &p;
      if (p.t_ns < a || p.t_ns > b) continue;
      sum += double(std::max<int64_t>(0, *p.procs_running - 1));
      ++n;
    }
    if (n == 0 && before) return double(std::max<int64_t>(0, *before->procs_running - 1));
    if (n == 0) return std::nullopt;
    return sum / n;
  }

  // The busiest server thread over [start, end]: its CPU time between the samples inside the
  // window (the first at or after start, the last at or before end) when they span at least half
  // of it, else between those bracketing it; over the time between them.
  void ThreadBusy(int64_t start, int64_t end, StallEvidence* e) const {
    for (const ServerThread& th : t_.server_cpu.threads) {
      const std::vector<ThreadCpuPoint>& v = th.cpu;
      if (v.size() < 2) continue;
      auto at = [](const ThreadCpuPoint& p, int64_t t) { return p.t_ns < t; };
      auto in_lo = std::lower_bound(v.begin(), v.end(), start, at);
      auto in_hi = std::upper_bound(v.begin(), v.end(), end,
                                    [](int64_t t, const ThreadCpuPoint& p) { return t < p.t_ns; });
      const ThreadCpuPoint *x, *y;
      if (in_hi - in_lo >= 2 && 2 * ((in_hi - 1)->t_ns - in_lo->t_ns) >= end - start) {
        x = &*in_lo;
        y = &*(in_hi - 1);
      } else {
        // The last sample at or before start, the first at or after end (or the series' ends).
        auto lo = std::upper_bound(v.begin(), v.end(), start,
                                   [](int64_t t, const ThreadCpuPoint& p) { return t < p.t_ns; });
        x = lo == v.begin() ? &v.front() : &*(lo - 1);
        auto hi = std::lower_bound(v.begin(), v.end(), end, at);
        y = hi == v.end() ? &v.back() : &*hi;
      }
      if (y->t_ns <= x->t_ns) continue;
      const double span = double(y->t_ns - x->t_ns);
      const double share = double(y->cpu_ns - x->cpu_ns) / span;
      std::optional<double> wait;
      if (x->wait_ns >= 0 && y->wait_ns >= 0) wait = double(y->wait_ns - x->wait_ns) / span;
      if (!e->thread_busy_share ||
          RunnableShare(share, wait, th_) > RunnableShare(*e->thread_busy_share, e->thread_wait_share, th_)) {
        e->thread_busy_share = share;
        e->thread_wait_share = wait;
        e->thread_comm = th.comm;
        e->thread_pid = th.pid;
        e->thread_tid = th.tid;
      }
    }
  }

  // The evidence of every layer over the window [start, end]; `prefill_slack_ns`: how close to
  // `end` a first token counts as released by the step that ended there.
  StallEvidence Measure(int64_t start, int64_t end, int64_t prefill_slack_ns) const {
    StallEvidence e;
    const int64_t a = start - th_.window_slack_ns, b = end + th_.window_slack_ns;
    const double window_us = double(b - a) / 1000;
    if (!t_.host.empty()) {
      e.log_bytes = Delta(t_.host, a, b, [](const HostPoint& p) { return p.log_bytes; });
      e.swap_in_pages = Delta(t_.host, a, b, [](const HostPoint& p) { return p.swap_in_pages; });
      e.major_faults = Delta(t_.host, a, b, [](const HostPoint& p) { return p.major_faults; });
      // PSI totals are shares of the span between the bracketing samples (at least the window).
      auto [x, y] = Bracket(t_.host, a, b);
      const double span_us = std::max(window_us, double(y->t_ns - x->t_ns) / 1000);
      if (auto m = Delta(t_.host, a, b, [](const HostPoint& p) { return p.psi_memory_some_us; }))
        e.psi_memory_share = double(*m) / span_us;
      if (auto c = Delta(t_.host, a, b, [](const HostPoint& p) { return p.psi_cpu_some_us; }))
        e.psi_cpu_share = double(*c) / span_us;
      e.run_queue = RunQueue(a, b);
    }
    ThreadBusy(start, end, &e);
    if (!e.log_bytes && !t_.log.empty()) {
      // Log lines on the 1-second log clock: those whose +-uncertainty reaches the window.
      int64_t bytes = 0;
      for (const LogPoint& l : t_.log)
        if (l.t_ns + t_.log_uncertainty_ns >= start && l.t_ns - t_.log_uncertainty_ns <= end)
          bytes += l.bytes;
      e.log_bytes = bytes;
    }
    if (!t_.server.empty()) {
      auto [x, y] = Bracket(t_.server, a, b);
      if (x->preemptions_total && y->preemptions_total)
        e.preemptions = *y->preemptions_total - *x->preemptions_total;
    }
    auto it = std::lower_bound(first_tokens_.begin(), first_tokens_.end(),
                               std::pair<int64_t, int>{end - prefill_slack_ns, INT32_MIN});
    for (; it != first_tokens_.end() && it->first <= end + prefill_slack_ns; ++it) {
      e.prefill_tokens += it->second;
      ++e.prefill_requests;
    }
    // The GPU kernel overlapping the window that is the most over its name's median (Timeline::gpu
    // is by start: kernels starting before a - the longest kernel cannot reach the window).
    auto k = std::lower_bound(t_.gpu.begin(), t_.gpu.end(), a - max_kernel_ns_,
                              [](const GpuKernel& g, int64_t v) { return g.start_ns < v; });
    int64_t excess_ns = 0;  // of every kernel in the window over its name's median
    for (; k != t_.gpu.end() && k->start_ns <= b; ++k) {
      if (k->end_ns < a || k->name >= t_.gpu_names.size()) continue;
      const GpuKernelName& n = t_.gpu_names[k->name];
      if (n.count < th_.slow_kernel_min_count) continue;
      const int64_t dur = k->end_ns - k->start_ns;
      excess_ns += std::max<int64_t>(0, dur - n.median_ns);
      if (!e.kernel_name || dur - n.median_ns > e.kernel_dur_ns - e.kernel_median_ns) {
        e.kernel_name = n.name;
        e.kernel_start_ns = k->start_ns;
        e.kernel_dur_ns = dur;
        e.kernel_median_ns = n.median_ns;
      }
    }
    if (e.kernel_name && excess_ns > 0)
      e.kernel_excess_share = double(std::max<int64_t>(0, e.kernel_dur_ns - e.kernel_median_ns)) / double(excess_ns);
    e.gpu_busy_share = GpuBusyShare(start, end);
    return e;
  }

  // The time in [start, end] some kernel of the trace ran (the union of the kernels, clipped).
  int64_t GpuBusyNs(int64_t start, int64_t end) const {
    int64_t busy_ns = 0, covered_to = start;  // the union so far reaches covered_to
    auto k = std::lower_bound(t_.gpu.begin(), t_.gpu.end(), start - max_kernel_ns_,
                              [](const GpuKernel& g, int64_t v) { return g.start_ns < v; });
    for (; k != t_.gpu.end() && k->start_ns < end; ++k) {
      const int64_t lo = std::max(k->start_ns, covered_to), hi = std::min(k->end_ns, end);
      if (hi > lo) busy_ns += hi - lo;
      covered_to = std::max(covered_to, hi);
    }
    return busy_ns;
  }

  // The share of [start, end] some kernel ran in, when the trace covers the window: a kernel
  // ended at or before start and one started at or after end.
  std::optional<double> GpuBusyShare(int64_t start, int64_t end) const {
    if (end <= start || t_.gpu.empty()) return std::nullopt;
    // Kernels are by start and none is longer than max_kernel_ns_: one that started by
    // start - max_kernel_ns_ ended by start; of the later ones, only those starting by start can.
    auto k = std::lower_bound(t_.gpu.begin(), t_.gpu.end(), start - max_kernel_ns_,
                              [](const GpuKernel& g, int64_t v) { return g.start_ns < v; });
    bool before = k != t_.gpu.begin();
    for (; !before && k != t_.gpu.end() && k->start_ns <= start; ++k) before = k->end_ns <= start;
    const bool after = t_.gpu.back().start_ns >= end;  // by start
    if (!before || !after) return std::nullopt;
    return double(GpuBusyNs(start, end)) / double(end - start);
  }

  // host_cpu's thread rule: a server thread on a CPU, or runnable, for the stall.
  bool ThreadRule(const StallEvidence& e) const {
    return e.thread_busy_share &&
           (*e.thread_busy_share >= th_.thread_busy_share ||
            (e.thread_wait_share &&  // without schedstat's wait, the time on a CPU alone
             RunnableShare(*e.thread_busy_share, e.thread_wait_share, th_) >= th_.thread_runnable_share));
  }

  bool Present(Cause c, const StallEvidence& e) const {
    switch (c) {
      case Cause::kLog: return e.log_bytes && *e.log_bytes >= th_.log_burst_bytes;
      case Cause::kPreemption: return e.preemptions && *e.preemptions > 0;
      case Cause::kSwap:
        return (e.swap_in_pages && *e.swap_in_pages > 0) ||
               (e.major_faults && *e.major_faults >= th_.major_faults_min) ||
               (e.psi_memory_share && *e.psi_memory_share >= th_.psi_share);
      case Cause::kHostCpu: {
        const bool thread = ThreadRule(e);
        const int cpus = t_.server_cpu.online_cpus;
        const bool queue = e.run_queue && cpus > 0 && *e.run_queue > cpus && run_queue_mean_ &&
                           *e.run_queue >= th_.run_queue_vs_run * *run_queue_mean_;
        const bool psi = e.psi_cpu_share && *e.psi_cpu_share >= th_.psi_cpu_share &&
                         run_psi_cpu_share_ && *e.psi_cpu_share >= 2 * *run_psi_cpu_share_;
        return thread || queue || psi;
      }
      case Cause::kSlowKernel:
        return e.kernel_name &&
               double(e.kernel_dur_ns) >= th_.slow_kernel_factor * double(e.kernel_median_ns) &&
               e.kernel_dur_ns - e.kernel_median_ns >= th_.slow_kernel_min_excess_ns &&
               e.kernel_excess_share >= th_.slow_kernel_excess_share;
      case Cause::kPrefill: return e.prefill_tokens >= th_.prefill_tokens_min;
      case Cause::kHostGap:
        return e.gpu_busy_share && run_gpu_busy_share_ &&
               *e.gpu_busy_share <= th_.host_gap_busy_vs_run * *run_gpu_busy_share_ &&
               !Present(Cause::kSlowKernel, e) && !Present(Cause::kLog, e) && !Present(Cause::kSwap, e) &&
               !ThreadRule(e);  // a host-wide run queue or PSI does not say the server's host waited
      case Cause::kClient: return false;      // decided from the others (Causes)
    }
    return false;
  }

  std::vector<Cause> Causes(const StallEvidence& e) const {
    std::vector<Cause> out;
    for (Cause c : kAllCauses)
      if (Present(c, e)) out.push_back(c);
    if (out.empty() && t_.client_saturated) out.push_back(Cause::kClient);
    return out;
  }

 private:
  const Timeline& t_;
  const Thresholds& th_;
  std::vector<std::pair<int64_t, int>> first_tokens_;  // (time, prompt tokens), sorted
  std::optional<double> run_psi_cpu_share_;
  std::optional<double> run_queue_mean_;
  std::optional<double> run_gpu_busy_share_;  // over the trace's kernels' span in the load
  int64_t max_kernel_ns_ = 0;
};

// What the timeline holds: which sources the attribution can test causes against.
void NoteCoverage(const Timeline& t, Attribution& out) {
  out.have_server = !t.server.empty();
  out.have_host = !t.host.empty();
  out.have_log = !t.log.empty();
  out.have_gpu = t.have_gpu;
  out.have_threads = !t.server_cpu.threads.empty();
  out.have_log_file_size = std::any_of(t.host.begin(), t.host.end(),
                                       [](const HostPoint& p) { return p.log_bytes.has_value(); });
}

// The median token gap of the run (into `out`, with the decode time) and the gaps far above
// it, sorted by start.
std::vector<Gap> BigGaps(const Timeline& t, const Thresholds& th, Attribution& out) {
  std::vector<int64_t> gaps_ns;
  for (const StreamSeries& s : t.streams) {
    for (size_t i = 1; i < s.token_ns.size(); ++i) gaps_ns.push_back(s.token_ns[i] - s.token_ns[i - 1]);
    if (s.token_ns.size() >= 2) out.decode_ns += s.token_ns.back() - s.token_ns.front();
  }
  out.median_gap_ns = Median(gaps_ns);
  const int64_t limit_ns = std::max<int64_t>(
      int64_t(th.stall_gap_factor * double(out.median_gap_ns)), out.median_gap_ns + th.stall_gap_min_excess_ns);
  std::vector<Gap> big;
  for (size_t k = 0; k < t.streams.size(); ++k) {
    const std::vector<int64_t>& ts = t.streams[k].token_ns;
    for (size_t i = 1; i < ts.size(); ++i)
      if (ts[i] - ts[i - 1] > limit_ns) big.push_back({ts[i - 1], ts[i], k});
  }
  std::sort(big.begin(), big.end(), [](const Gap& a, const Gap& b) { return a.start_ns < b.start_ns; });
  return big;
}

// A cluster too narrow to be the whole engine's: each gap big[i0, j) is one stream's stall. The
// one cause that stalls single streams is preemption (the stream waits, then is recomputed):
// tested at the gap's start, where the stream lost its place; the preempted gaps go to
// out.stream_stalls.
void AddStreamStalls(const std::vector<Gap>& big, size_t i0, size_t j, int live_streams,
                     const Tester& tester, int64_t prefill_slack_ns, Attribution& out) {
  for (size_t k = i0; k < j; ++k) {
    StallEvidence e = tester.Measure(big[k].start_ns, big[k].start_ns, prefill_slack_ns);
    if (!tester.Present(Cause::kPreemption, e)) continue;
    Stall one;
    one.start_ns = big[k].start_ns;
    one.end_ns = big[k].end_ns;
    one.streams = 1;
    one.live_streams = live_streams;
    one.cost_ns = big[k].end_ns - big[k].start_ns - out.median_gap_ns;
    one.causes = {Cause::kPreemption};
    one.evidence = e;
    out.stream_stalls.push_back(std::move(one));
  }
}

// Clusters of the big gaps that overlap in time; a cluster hitting enough of the live streams
// is a stall (into out.stalls, with its causes), else its gaps are tested one by one.
void DetectStalls(const Timeline& t, const Thresholds& th, const std::vector<Gap>& big,
                  const Tester& tester, int64_t prefill_slack_ns, Attribution& out) {
  const int64_t cluster_ns = std::max<int64_t>(2 * out.median_gap_ns, th.stall_cluster_min_ns);
  for (size_t i = 0; i < big.size();) {
    // A cluster: gaps that start together (within cluster_ns of the first): the streams a paused
    // step holds all got their last token when the step before it ended. A long gap that merely
    // overlaps (a preempted stream waiting for seconds) starts elsewhere and stays its own.
    const size_t i0 = i;
    size_t j = i + 1;
    while (j < big.size() && big[j].start_ns <= big[i0].start_ns + cluster_ns) ++j;
    std::vector<int64_t> starts, ends;
    std::vector<size_t> streams;
    int64_t cost_ns = 0;
    for (size_t k = i; k < j; ++k) {
      starts.push_back(big[k].start_ns);
      ends.push_back(big[k].end_ns);
      streams.push_back(big[k].stream);
      cost_ns += big[k].end_ns - big[k].start_ns - out.median_gap_ns;
    }
    i = j;
    std::sort(streams.begin(), streams.end());
    const int hit = int(std::unique(streams.begin(), streams.end()) - streams.begin());
    Stall s;
    s.start_ns = Median(starts);
    s.end_ns = Median(ends);
    int live = 0;
    for (const StreamSeries& st : t.streams)
      if (!st.token_ns.empty() && st.token_ns.front() <= s.start_ns && st.token_ns.back() >= s.end_ns) ++live;
    s.streams = hit;
    s.live_streams = std::max(live, hit);
    if (hit < th.stall_min_streams || double(hit) < th.stall_wide_share * double(s.live_streams)) {
      AddStreamStalls(big, i0, j, s.live_streams, tester, prefill_slack_ns, out);
      continue;
    }
    s.cost_ns = cost_ns;
    s.evidence = tester.Measure(s.start_ns, s.end_ns, prefill_slack_ns);
    s.causes = tester.Causes(s.evidence);
    out.stalls.push_back(std::move(s));
  }
}

// A dip's causes: those of the first stall it overlaps (and the evidence of that stall), with
// the causes of every other stall it overlaps; with none, the causes tested over the dip itself.
void ExplainDip(const Tester& tester, int64_t prefill_slack_ns, Dip& d, Attribution& out) {
  for (size_t k = 0; k < out.stalls.size(); ++k) {
    const Stall& s = out.stalls[k];
    if (s.start_ns >= d.end_ns || s.end_ns <= d.start_ns) continue;
    if (d.stall < 0) {
      d.stall = int(k);
      d.evidence = s.evidence;
    }
    for (Cause c : s.causes)
      if (std::find(d.causes.begin(), d.causes.end(), c) == d.causes.end()) d.causes.push_back(c);
  }
  if (d.stall < 0) {
    d.evidence = tester.Measure(d.start_ns, d.end_ns, prefill_slack_ns);
    d.causes = tester.Causes(d.evidence);
    if (d.causes.empty()) ++out.unexplained_dips;
  }
}

// Throughput dips. Plan: bins of dip_bin_ns from the first token; in each, the token arrivals
// and the streams decoding across it (first token at or before its start, last at or after its
// end); the median rate and stream count over bins with streams decoding; a bin far under the
// median rate (scaled by its streams) is a dip's; consecutive dip bins are one dip.
// REQUIRES: out.stalls found (a dip inside a stall is explained by it).
void FindDips(const Timeline& t, const Thresholds& th, const Tester& tester,
              int64_t prefill_slack_ns, Attribution& out) {
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (const StreamSeries& st : t.streams)
    if (!st.token_ns.empty()) {
      t0 = std::min(t0, st.token_ns.front());
      t1 = std::max(t1, st.token_ns.back());
    }
  const int64_t bin_ns = th.dip_bin_ns;
  if (!(t0 < t1 && bin_ns > 0)) return;
  const size_t bins = size_t((t1 - t0) / bin_ns + 1);
  std::vector<int64_t> tokens(bins, 0);
  std::vector<int> live(bins, 0);
  std::vector<int64_t> live_step(bins + 1, 0);
  for (const StreamSeries& st : t.streams) {
    if (st.token_ns.empty()) continue;
    for (int64_t at : st.token_ns) ++tokens[size_t((at - t0) / bin_ns)];
    // The bins [first, last] it spans whole: first token <= the bin's start, last >= its end.
    const int64_t first = (st.token_ns.front() - t0 + bin_ns - 1) / bin_ns;
    const int64_t last = (st.token_ns.back() - t0) / bin_ns - 1;
    if (first > last) continue;
    ++live_step[size_t(first)];
    --live_step[size_t(last + 1)];
  }
  int64_t running = 0;
  for (size_t b = 0; b < bins; ++b) live[b] = int(running += live_step[b]);
  std::vector<int64_t> rates, lives;
  for (size_t b = 0; b < bins; ++b)
    if (live[b] > 0) {
      rates.push_back(tokens[b]);
      lives.push_back(live[b]);
    }
  const double per_s = double(kNsPerSec) / double(bin_ns);
  const double median_tok_s = double(Median(rates)) * per_s;
  const double median_live = double(Median(lives));
  auto expected = [&](size_t b) {
    return median_tok_s * std::min(1.0, double(live[b]) / median_live);
  };
  auto dip = [&](size_t b) {
    return live[b] > 0 && expected(b) / per_s >= th.dip_min_tokens &&
           double(tokens[b]) * per_s < th.dip_rate_share * expected(b);
  };
  for (size_t b = 0; b < bins;) {
    if (!dip(b)) {
      ++b;
      continue;
    }
    size_t e = b;
    int64_t n = 0;
    double exp_sum = 0;
    while (e < bins && dip(e)) {
      n += tokens[e];
      exp_sum += expected(e);
      ++e;
    }
    Dip d;
    d.start_ns = t0 + int64_t(b) * bin_ns;
    d.end_ns = t0 + int64_t(e) * bin_ns;
    d.rate_tok_s = double(n) * double(kNsPerSec) / double(d.end_ns - d.start_ns);
    d.median_tok_s = median_tok_s;
    d.expected_tok_s = exp_sum / double(e - b);
    d.live_streams = live[b];
    ExplainDip(tester, prefill_slack_ns, d, out);
    out.dips.push_back(std::move(d));
    b = e;
  }
}

// Per cause: the stalls, their cost, the dips no stall explains and the streams' own stalls
// it was found in; unexplained stalls counted into `out`.
std::map<Cause, CauseSummary> SummariseCauses(Attribution& out) {
  std::map<Cause, CauseSummary> by_cause;
  for (const Stall& s : out.stalls) {
    if (s.causes.empty()) {
      ++out.unexplained;
      out.unexplained_cost_ns += s.cost_ns;
    }
    for (Cause c : s.causes) {
      CauseSummary& cs = by_cause.try_emplace(c, CauseSummary{c}).first->second;
      ++cs.stalls;
      cs.cost_ns += s.cost_ns;
    }
  }
  for (const Dip& d : out.dips) {
    if (d.stall >= 0) continue;  // the stall's
    for (Cause c : d.causes) ++by_cause.try_emplace(c, CauseSummary{c}).first->second.dips;
  }
  for (const Stall& s : out.stream_stalls) {
    CauseSummary& cs = by_cause.try_emplace(Cause::kPreemption, CauseSummary{Cause::kPreemption}).first->second;
    ++cs.stream_stalls;
    cs.stream_cost_ns += s.cost_ns;
  }
  return by_cause;
}

// Base rates: windows as long as the median stall, ending at token arrivals away from stalls;
// how often each cause of `by_cause` is present in them.
void MeasureBaselines(const Timeline& t, const Thresholds& th, const Tester& tester,
                      int64_t prefill_slack_ns, const Attribution& out,
                      std::map<Cause, CauseSummary>& by_cause) {
  if (by_cause.empty()) return;
  std::vector<int64_t> lens, arrivals;
  for (const Stall& s : out.stalls) lens.push_back(s.end_ns - s.start_ns);
  if (lens.empty())  // dips only
    for (const Dip& d : out.dips) lens.push_back(d.end_ns - d.start_ns);
  const int64_t len_ns = Median(lens);
  for (const StreamSeries& st : t.streams)
    arrivals.insert(arrivals.end(), st.token_ns.begin(), st.token_ns.end());
  std::sort(arrivals.begin(), arrivals.end());
  constexpr size_t kBaselineWindows = 200;
  const size_t step = std::max<size_t>(1, arrivals.size() / kBaselineWindows);
  const int64_t guard_ns = 2 * th.window_slack_ns;
  for (size_t k = 0; k < arrivals.size(); k += step) {
    const int64_t e = arrivals[k], b = e - len_ns;
    bool near = std::any_of(out.stalls.begin(), out.stalls.end(),
                            [&](const Stall& s) {
                              return b < s.end_ns + guard_ns && e > s.start_ns - guard_ns;
                            }) ||
                std::any_of(out.dips.begin(), out.dips.end(), [&](const Dip& d) {
                  return b < d.end_ns + guard_ns && e > d.start_ns - guard_ns;
                });
    if (near) continue;
    StallEvidence ev = tester.Measure(b, e, prefill_slack_ns);
    for (auto& [c, cs] : by_cause) {
      ++cs.baseline_windows;
      if (c == Cause::kClient ? t.client_saturated : tester.Present(c, ev)) ++cs.baseline_present;
    }
  }
}

// TTFT spikes, explained by the causes of the stalls their wait overlapped.
// REQUIRES: out.stalls and out.stream_stalls found.
void CountTtftSpikes(const Timeline& t, const Thresholds& th, Attribution& out,
                     std::map<Cause, CauseSummary>& by_cause) {
  std::vector<int64_t> ttfts;
  for (const StreamSeries& st : t.streams)
    if (st.first_token_ns >= 0 && st.sent_ns >= 0) ttfts.push_back(st.first_token_ns - st.sent_ns);
  out.median_ttft_ns = Median(ttfts);
  const int64_t spike_ns = std::max<int64_t>(int64_t(th.ttft_spike_factor * double(out.median_ttft_ns)),
                                             out.median_ttft_ns + th.ttft_spike_min_excess_ns);
  out.ttft_spike_ns = spike_ns;
  for (const StreamSeries& st : t.streams) {
    if (st.first_token_ns < 0 || st.sent_ns < 0 || st.first_token_ns - st.sent_ns <= spike_ns) continue;
    ++out.ttft_spikes;
    std::vector<Cause> why;
    for (const std::vector<Stall>* list : {&out.stalls, &out.stream_stalls})
      for (const Stall& s : *list)
        if (s.start_ns < st.first_token_ns && s.end_ns > st.sent_ns)
          for (Cause c : s.causes)
            if (std::find(why.begin(), why.end(), c) == why.end()) why.push_back(c);
    if (why.empty()) continue;
    ++out.ttft_spikes_in_stalls;
    for (Cause c : why)
      if (auto it = by_cause.find(c); it != by_cause.end()) ++it->second.ttft_spikes;
  }
}

}  // namespace

Attribution Attribute(const Timeline& t, const Thresholds& th) {
  Attribution out;
  NoteCoverage(t, out);
  // Plan: the median token gap of the run; the gaps far above it; clusters of those that
  // overlap in time; a cluster hitting enough of the live streams is a stall.
  const std::vector<Gap> big = BigGaps(t, th, out);
  Tester tester(t, th);
  out.run_queue_mean = tester.run_queue_mean();
  out.gpu_busy_share = tester.run_gpu_busy_share();
  const int64_t prefill_slack_ns = std::max<int64_t>(out.median_gap_ns / 2, 2'000'000);
  DetectStalls(t, th, big, tester, prefill_slack_ns, out);
  FindDips(t, th, tester, prefill_slack_ns, out);
  std::map<Cause, CauseSummary> by_cause = SummariseCauses(out);
  MeasureBaselines(t, th, tester, prefill_slack_ns, out, by_cause);
  CountTtftSpikes(t, th, out, by_cause);
  for (auto& [c, cs] : by_cause) out.causes.push_back(cs);
  std::stable_sort(out.causes.begin(), out.causes.end(),
                   [](const CauseSummary& a, const CauseSummary& b) { return a.stalls > b.stalls; });
  return out;
}

}  // namespace latdoc::attribution
