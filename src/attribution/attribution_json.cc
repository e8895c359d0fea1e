#include "attribution/attribution_json.h"

#include <algorithm>
#include <vector>

#include "attribution/host_sampler.h"
#include "base/clock.h"

namespace latdoc::attribution {

using nlohmann::ordered_json;

namespace {
ordered_json Opt(const std::optional<int64_t>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }
ordered_json Opt(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }
// The load's first token: before it no stream decodes, so no stall can show.
ordered_json FirstToken(const Timeline& t) {
  std::optional<int64_t> first;
  for (const StreamSeries& s : t.streams)
    if (s.first_token_ns >= 0 && (!first || s.first_token_ns < *first)) first = s.first_token_ns;
  return Opt(first);
}
ordered_json EvidenceJson(const StallEvidence& e) {
  return {{"log_bytes", Opt(e.log_bytes)},
          {"preemptions", Opt(e.preemptions)},
          {"prefill_requests", e.prefill_requests},
          {"prefill_tokens", e.prefill_tokens},
          {"swap_in_pages", Opt(e.swap_in_pages)},
          {"major_faults", Opt(e.major_faults)},
          {"psi_memory_share", Opt(e.psi_memory_share)},
          {"psi_cpu_share", Opt(e.psi_cpu_share)},
          {"thread_busy_share", Opt(e.thread_busy_share)},
          {"thread_wait_share", Opt(e.thread_wait_share)},
          {"thread", e.thread_busy_share ? ordered_json(e.thread_comm) : ordered_json(nullptr)},
          {"thread_tid", e.thread_busy_share ? ordered_json(e.thread_tid) : ordered_json(nullptr)},
          {"run_queue", Opt(e.run_queue)},
          {"kernel", e.kernel_name ? ordered_json(*e.kernel_name) : ordered_json(nullptr)},
          {"kernel_start_ns", e.kernel_name ? ordered_json(e.kernel_start_ns) : ordered_json(nullptr)},
          {"kernel_ms", e.kernel_name ? ordered_json(NsToMs(e.kernel_dur_ns)) : ordered_json(nullptr)},
          {"kernel_median_ms",
           e.kernel_name ? ordered_json(NsToMs(e.kernel_median_ns)) : ordered_json(nullptr)},
          {"kernel_excess_share",
           e.kernel_name ? ordered_json(e.kernel_excess_share) : ordered_json(nullptr)},
          {"gpu_busy_share", Opt(e.gpu_busy_share)}};
}

ordered_json StallsJson(const std::vector<Stall>& list, const Timeline& t) {
  ordered_json stalls = ordered_json::array();
  for (const Stall& s : list) {
    ordered_json causes = ordered_json::array();
    for (Cause c : s.causes) causes.push_back(CauseName(c));
    stalls.push_back({{"start_ns", s.start_ns},
                      {"end_ns", s.end_ns},
                      {"at_s", NsToSec(s.start_ns - t.start_ns)},
                      {"dur_ms", NsToMs(s.end_ns - s.start_ns)},
                      {"streams", s.streams},
                      {"live_streams", s.live_streams},
                      {"cost_ms", NsToMs(s.cost_ns)},
                      {"causes", causes},
                      {"evidence", EvidenceJson(s.evidence)}});
  }
  return stalls;
}

ordered_json DipsJson(const Attribution& a, const Timeline& t) {
  ordered_json out = ordered_json::array();
  for (const Dip& d : a.dips) {
    ordered_json causes = ordered_json::array();
    for (Cause c : d.causes) causes.push_back(CauseName(c));
    ordered_json one = {{"start_ns", d.start_ns},
                        {"end_ns", d.end_ns},
                        {"at_s", NsToSec(d.start_ns - t.start_ns)},
                        {"dur_ms", NsToMs(d.end_ns - d.start_ns)},
                        {"rate_tok_s", d.rate_tok_s},
                        {"median_tok_s", d.median_tok_s},
                        {"expected_tok_s", d.expected_tok_s},
                        {"rate_vs_median", d.median_tok_s > 0 ? ordered_json(d.rate_tok_s / d.median_tok_s)
                                                              : ordered_json(nullptr)},
                        {"live_streams", d.live_streams},
                        {"stall", d.stall >= 0 ? ordered_json(d.stall) : ordered_json(nullptr)},
                        {"causes", causes},
                        {"evidence", EvidenceJson(d.evidence)}};
    out.push_back(std::move(one));
  }
  return out;
}

// The aligned series of the HTML report's timeline chart: per bin of 100 ms (wider when the load
// ran longer than kMaxBins bins), the p99 of the token gaps that ended in it, and the server's
// running and waiting from the last scrape at or before its end. Times from the load's start.
constexpr int64_t kBinNs = 100'000'000;
constexpr size_t kMaxBins = 1200;

// The bins of the timeline chart over [t.start_ns, t.end_ns].
struct SeriesBins {
  const Timeline& t;
  int64_t bin_ns;
  size_t bins;
  // The bin holding `at_ns`, clamped to the first and last.
  int64_t Of(int64_t at_ns) const {
    return std::min<int64_t>(int64_t(bins) - 1,
                             std::max<int64_t>(0, (at_ns - t.start_ns) / bin_ns));
  }
};

// The bin starts, the p99 token gap of each bin, and the server's running and waiting.
ordered_json GapAndQueueSeries(const SeriesBins& sb) {
  const Timeline& t = sb.t;
  const int64_t span_ns = t.end_ns - t.start_ns, bin_ns = sb.bin_ns;
  const size_t bins = sb.bins;
  std::vector<std::vector<int64_t>> gaps(bins);
  for (const StreamSeries& st : t.streams)
    for (size_t i = 1; i < st.token_ns.size(); ++i) {
      const int64_t at = st.token_ns[i] - t.start_ns;
      if (at < 0 || at > span_ns) continue;
      gaps[size_t(at / bin_ns)].push_back(st.token_ns[i] - st.token_ns[i - 1]);
    }
  ordered_json ts = ordered_json::array(), p99 = ordered_json::array(), run = ordered_json::array(),
               wait = ordered_json::array();
  size_t k = 0;
  std::optional<double> running, waiting;
  for (size_t b = 0; b < bins; ++b) {
    const int64_t end_ns = t.start_ns + int64_t(b + 1) * bin_ns;
    for (; k < t.server.size() && t.server[k].t_ns <= end_ns; ++k) {
      running = t.server[k].running;
      waiting = t.server[k].waiting;
    }
    ts.push_back(NsToSec(int64_t(b) * bin_ns));
    std::vector<int64_t>& g = gaps[b];
    if (g.empty()) {
      p99.push_back(nullptr);
    } else {
      const size_t at = std::min(g.size() - 1, size_t(double(g.size()) * 0.99));
      std::nth_element(g.begin(), g.begin() + at, g.end());
      p99.push_back(NsToMs(g[at]));
    }
    run.push_back(Opt(running));
    wait.push_back(Opt(waiting));
  }
  return {{"bin_ms", NsToMs(bin_ns)},
          {"t_s", ts},
          {"itl_p99_ms", p99},
          {"running", run},
          {"waiting", wait}};
}

// The server log's write rate: each pair of consecutive host samples that read the log file's
// size puts its growth in the bin of the later sample. Bins no pair ends in are null.
ordered_json LogWriteSeries(const SeriesBins& sb) {
  const Timeline& t = sb.t;
  std::vector<std::optional<int64_t>> bytes(sb.bins);
  for (size_t i = 1; i < t.host.size(); ++i) {
    const HostPoint &a = t.host[i - 1], &b = t.host[i];
    if (!a.log_bytes || !b.log_bytes || b.t_ns < t.start_ns || b.t_ns > t.end_ns) continue;
    std::optional<int64_t>& slot = bytes[size_t(sb.Of(b.t_ns))];
    slot = slot.value_or(0) + std::max<int64_t>(0, *b.log_bytes - *a.log_bytes);
  }
  ordered_json rate = ordered_json::array();
  for (const auto& v : bytes)
    rate.push_back(v ? ordered_json(double(*v) / 1024 / NsToSec(sb.bin_ns))
                     : ordered_json(nullptr));
  return rate;
}

// The output token rate of each bin (token arrivals across streams), under which the
// throughput dips are marked (attribution.dips).
ordered_json OutputTokenSeries(const SeriesBins& sb) {
  const Timeline& t = sb.t;
  std::vector<int64_t> tokens(sb.bins, 0);
  for (const StreamSeries& st : t.streams)
    for (int64_t at : st.token_ns)
      if (at >= t.start_ns && at <= t.end_ns) ++tokens[size_t(sb.Of(at))];
  ordered_json rate = ordered_json::array();
  for (int64_t n : tokens) rate.push_back(double(n) / NsToSec(sb.bin_ns));
  return rate;
}

// Host CPU and pressure (--local): each pair of consecutive samples that both read a counter
// puts its growth, and the time between them, in the bin of the later sample; a bin's value is
// the growth over that time. Bins no pair ends in are null; null when no bin has a value.
template <typename F>
ordered_json PerBinShare(const SeriesBins& sb, F field, double unit_per_ns) {
  const Timeline& t = sb.t;
  const size_t bins = sb.bins;
  std::vector<double> grow(bins, 0), span(bins, 0);
  for (size_t i = 1; i < t.host.size(); ++i) {
    const HostPoint &a = t.host[i - 1], &b = t.host[i];
    const std::optional<int64_t> u = field(a), v = field(b);
    if (!u || !v || b.t_ns <= a.t_ns || b.t_ns < t.start_ns || b.t_ns > t.end_ns) continue;
    const size_t k = size_t(sb.Of(b.t_ns));
    grow[k] += double(std::max<int64_t>(0, *v - *u));
    span[k] += double(b.t_ns - a.t_ns);
  }
  ordered_json col = ordered_json::array();
  bool any = false;
  for (size_t k = 0; k < bins; ++k) {
    if (span[k] <= 0) {
      col.push_back(nullptr);
      continue;
    }
    any = true;
    col.push_back(100 * grow[k] / (span[k] * unit_per_ns));
  }
  return any ? col : ordered_json(nullptr);
}

// The run queue: the mean of procs_running (less the sampler's own thread) over the samples in
// the bin that read it.
ordered_json RunQueueSeries(const SeriesBins& sb) {
  const Timeline& t = sb.t;
  std::vector<double> sum(sb.bins, 0);
  std::vector<int> n(sb.bins, 0);
  for (const HostPoint& p : t.host) {
    if (!p.procs_running || p.t_ns < t.start_ns || p.t_ns > t.end_ns) continue;
    const size_t k = size_t(sb.Of(p.t_ns));
    sum[k] += double(std::max<int64_t>(0, *p.procs_running - 1));
    ++n[k];
  }
  ordered_json col = ordered_json::array();
  for (size_t k = 0; k < sb.bins; ++k)
    col.push_back(n[k] > 0 ? ordered_json(sum[k] / n[k]) : ordered_json(nullptr));
  return col;
}

// The busiest server thread of each bin: per thread, its CPU time (on a CPU) over the time
// between its consecutive samples ending in the bin, in percent of one CPU; the most of any.
ordered_json ThreadBusySeries(const SeriesBins& sb) {
  const Timeline& t = sb.t;
  const size_t bins = sb.bins;
  std::vector<std::optional<double>> best(bins);
  for (const ServerThread& th : t.server_cpu.threads) {
    std::vector<double> cpu(bins, 0), span(bins, 0);
    for (size_t i = 1; i < th.cpu.size(); ++i) {
      const ThreadCpuPoint &a = th.cpu[i - 1], &b = th.cpu[i];
      if (b.t_ns <= a.t_ns || b.t_ns < t.start_ns || b.t_ns > t.end_ns) continue;
      const size_t k = size_t(sb.Of(b.t_ns));
      cpu[k] += double(std::max<int64_t>(0, b.cpu_ns - a.cpu_ns));
      span[k] += double(b.t_ns - a.t_ns);
    }
    for (size_t k = 0; k < bins; ++k)
      if (span[k] > 0) best[k] = std::max(best[k].value_or(0), 100 * cpu[k] / span[k]);
  }
  ordered_json col = ordered_json::array();
  for (const auto& v : best) col.push_back(Opt(v));
  return col;
}

// The GPU kernel time of each bin: every kernel of the placed trace, clipped to the bins it
// overlaps (kernels on several streams at once add up: more than the bin is possible).
ordered_json GpuKernelSeries(const SeriesBins& sb) {
  const Timeline& t = sb.t;
  std::vector<int64_t> busy(sb.bins, 0);
  for (const GpuKernel& k : t.gpu) {
    const int64_t lo = std::max(k.start_ns, t.start_ns), hi = std::min(k.end_ns, t.end_ns);
    for (int64_t b = sb.Of(lo); hi > lo && b <= sb.Of(hi); ++b) {
      const int64_t b0 = t.start_ns + b * sb.bin_ns;
      busy[size_t(b)] += std::max<int64_t>(0, std::min(hi, b0 + sb.bin_ns) - std::max(lo, b0));
    }
  }
  ordered_json ms = ordered_json::array();
  for (int64_t v : busy) ms.push_back(NsToMs(v));
  return ms;
}

ordered_json SeriesJson(const Timeline& t) {
  if (t.end_ns <= t.start_ns) return nullptr;
  const int64_t span_ns = t.end_ns - t.start_ns;
  const int64_t bin_ns =
      std::max<int64_t>(kBinNs, (span_ns + int64_t(kMaxBins) - 1) / int64_t(kMaxBins));
  const SeriesBins sb{t, bin_ns, static_cast<size_t>(span_ns / bin_ns + 1)};
  ordered_json out = GapAndQueueSeries(sb);
  if (std::any_of(t.host.begin(), t.host.end(),
                  [](const HostPoint& p) { return p.log_bytes.has_value(); }))
    out["log_write_kib_s"] = LogWriteSeries(sb);
  out["output_tok_s"] = OutputTokenSeries(sb);
  // PSI "some" totals are microseconds: a share of the time, in percent.
  const std::pair<const char*, std::optional<int64_t> HostPoint::*> psi[] = {
      {"psi_cpu_pct", &HostPoint::psi_cpu_some_us},
      {"psi_memory_pct", &HostPoint::psi_memory_some_us},
      {"psi_io_pct", &HostPoint::psi_io_some_us}};
  for (const auto& [key, member] : psi) {
    ordered_json col = PerBinShare(
        sb, [m = member](const HostPoint& p) { return p.*m; }, 1e-3);
    if (!col.is_null()) out[key] = std::move(col);
  }
  if (std::any_of(t.host.begin(), t.host.end(),
                  [](const HostPoint& p) { return p.procs_running.has_value(); }))
    out["run_queue"] = RunQueueSeries(sb);
  if (!t.server_cpu.threads.empty()) out["thread_busy_pct"] = ThreadBusySeries(sb);
  if (t.have_gpu) out["gpu_kernel_ms"] = GpuKernelSeries(sb);
  return out;
}

// The clock domain of every time in the JSON, and how the log and GPU trace were mapped onto it.
ordered_json ClockJson(const Attribution& a, const Timeline& t) {
  return {
      {"domain", "client CLOCK_MONOTONIC ns"},
      {"load_start_ns", t.start_ns},
      {"load_end_ns", t.end_ns},
      {"first_token_ns", FirstToken(t)},
      {"log_uncertainty_ms",
       a.have_log ? ordered_json(NsToMs(t.log_uncertainty_ns)) : ordered_json(nullptr)},
      {"log_mapping", a.have_log
                          ? "the log's local 'MM-DD HH:MM:SS' through the client's wall/monotonic "
                            "pair; +-0.5 s (whole seconds; access lines carry no time)"
                          : ""},
      {"gpu_mapping", a.have_gpu
                          ? "the trace's baseTimeNanoseconds + ts (Unix ns) through the client's "
                            "wall/monotonic pair: exact to the microsecond when the server and the "
                            "client share a host's wall clock; across hosts, off by their clocks' "
                            "offset (not measured)"
                          : ""},
      {"gpu_files", t.gpu_files},
  };
}

// The host sampler: what it found of the server and what it cost.
ordered_json HostSamplerJson(const Attribution& a, const ServerCpu& sc) {
  return {
      {"interval_ms", NsToMs(kHostSampleIntervalNs)},
      {"thread_interval_ms", NsToMs(kHostSampleIntervalNs * kThreadSampleEvery)},
      {"server_pid", sc.pid > 0 ? ordered_json(sc.pid) : ordered_json(nullptr)},
      {"server_found_by", sc.found_by},
      {"server_note", sc.note},
      {"child_pids", sc.child_pids},
      {"threads", sc.threads.size()},
      {"online_cpus", sc.online_cpus > 0 ? ordered_json(sc.online_cpus) : ordered_json(nullptr)},
      {"run_queue_mean", Opt(a.run_queue_mean)},
      {"cpu_ms", NsToMs(sc.sampler_cpu_ns)},
      {"cpu_share", sc.sampler_wall_ns > 0
                        ? ordered_json(double(sc.sampler_cpu_ns) / double(sc.sampler_wall_ns))
                        : ordered_json(nullptr)}};
}

// The thresholds the attribution ran with, in the JSON's units.
ordered_json ThresholdsJson(const Thresholds& th) {
  return {{"stall_gap_factor", th.stall_gap_factor},
          {"stall_gap_min_excess_ms", NsToMs(th.stall_gap_min_excess_ns)},
          {"stall_cluster_min_ms", NsToMs(th.stall_cluster_min_ns)},
          {"stall_min_streams", th.stall_min_streams},
          {"stall_wide_share", th.stall_wide_share},
          {"window_slack_ms", NsToMs(th.window_slack_ns)},
          {"log_burst_bytes", th.log_burst_bytes},
          {"major_faults_min", th.major_faults_min},
          {"psi_share", th.psi_share},
          {"psi_cpu_share", th.psi_cpu_share},
          {"thread_busy_share", th.thread_busy_share},
          {"thread_runnable_share", th.thread_runnable_share},
          {"thread_min_on_cpu_share", th.thread_min_on_cpu_share},
          {"run_queue_vs_run", th.run_queue_vs_run},
          {"prefill_tokens_min", th.prefill_tokens_min},
          {"slow_kernel_factor", th.slow_kernel_factor},
          {"slow_kernel_min_excess_ms", NsToMs(th.slow_kernel_min_excess_ns)},
          {"slow_kernel_min_count", th.slow_kernel_min_count},
          {"slow_kernel_excess_share", th.slow_kernel_excess_share},
          {"host_gap_busy_vs_run", th.host_gap_busy_vs_run},
          {"dip_bin_ms", NsToMs(th.dip_bin_ns)},
          {"dip_rate_share", th.dip_rate_share},
          {"dip_min_tokens", th.dip_min_tokens},
          {"ttft_spike_factor", th.ttft_spike_factor},
          {"ttft_spike_min_excess_ms", NsToMs(th.ttft_spike_min_excess_ns)}};
}

// Per cause: its stalls, their cost and share of the decode time, and its base rate.
ordered_json CausesJson(const Attribution& a) {
  ordered_json causes = ordered_json::array();
  for (const CauseSummary& cs : a.causes)
    causes.push_back({{"cause", CauseName(cs.cause)},
                      {"stalls", cs.stalls},
                      {"cost_ms", NsToMs(cs.cost_ns)},
                      {"decode_share", a.decode_ns > 0 ? ordered_json(double(cs.cost_ns) / double(a.decode_ns))
                                                       : ordered_json(nullptr)},
                      {"stream_stalls", cs.stream_stalls},
                      {"dips", cs.dips},
                      {"ttft_spikes", cs.ttft_spikes},
                      {"baseline_windows", cs.baseline_windows},
                      {"baseline_present", cs.baseline_present}});
  return causes;
}

}  // namespace

ordered_json AttributionJson(const Attribution& a, const Timeline& t, const Thresholds& th) {
  ordered_json j;
  j["clock"] = ClockJson(a, t);
  j["layers"] = {{"client_tokens", true},           {"server_metrics", a.have_server},
                 {"host_samples", a.have_host},     {"log_file_size", a.have_log_file_size},
                 {"server_log", a.have_log},        {"gpu_trace", a.have_gpu},
                 {"server_threads", a.have_threads}};
  if (a.have_host) j["host_sampler"] = HostSamplerJson(a, t.server_cpu);
  j["thresholds"] = ThresholdsJson(th);
  j["median_gap_ms"] = NsToMs(a.median_gap_ns);
  j["gpu_busy_share"] = Opt(a.gpu_busy_share);
  j["decode_ms"] = NsToMs(a.decode_ns);
  j["stalls"] = StallsJson(a.stalls, t);
  j["stream_stalls"] = StallsJson(a.stream_stalls, t);
  j["dips"] = DipsJson(a, t);
  j["unexplained_dips"] = a.unexplained_dips;
  j["causes"] = CausesJson(a);
  j["unexplained"] = a.unexplained;
  j["ttft"] = {{"median_ms", NsToMs(a.median_ttft_ns)},
               {"spike_ms", NsToMs(a.ttft_spike_ns)},
               {"spikes", a.ttft_spikes},
               {"spikes_in_attributed_stalls", a.ttft_spikes_in_stalls}};
  j["series"] = SeriesJson(t);
  return j;
}

}  // namespace latdoc::attribution
