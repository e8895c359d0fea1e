// Stall attribution (docs/attribution.md): finds the server-wide pauses in a load run's token
// stream and tests each candidate cause against the other layers on the same clock (timeline.h).
//
// A stall: a cluster of token gaps, each longer than stall_gap_factor times the run's median gap,
// starting together (within two median gaps), that hit at least stall_min_streams streams and at
// least stall_wide_share of the streams live across it (a pause of the whole engine, not one slow
// stream). Its window is the cluster's median gap start to median gap end.
//
// Each cause has one rule, tested on the window widened by the series' own resolution:
//   log         the server log file grew >= log_burst_bytes in the window (host samples, --local);
//               without host samples, log lines of that many bytes within the log clock's +-0.5 s
//   preemption  the /metrics preemption counter stepped between the scrapes around the window
//   swap        pswpin or >= major_faults_min major faults, or PSI memory "some" >= psi_share of
//               the window
//   host_cpu    one thread of the server (or of a process it started) on a CPU >=
//               thread_busy_share of the stall, or on a CPU >= thread_min_on_cpu_share and
//               runnable (on a CPU or waiting on a run queue for one: schedstat, the wait capped
//               at the rest of the window) >= thread_runnable_share (ServerCpu, --local): a
//               spinning thread on a crowded host gets less than a whole CPU and is as busy.
//               The kernel credits a wait when it ends (the thread gets a CPU): a wait in
//               progress at the window's last sample is not counted yet (hence the lower share),
//               and a thread that slept through the window may show one that ended in it
//               (hence the time on a CPU it needs); or the run queue (procs_running, less the
//               sampler) over the online CPUs and >= run_queue_vs_run times its run-wide mean; or
//               PSI cpu "some" >= psi_cpu_share of the window and >= twice the run's average
//               (host-wide run queue and PSI: other tenants count too)
//   prefill     requests with >= prefill_tokens_min prompt tokens in all got their first token
//               at the stall's end (their prefill was the long step)
//   slow_kernel a GPU kernel of the trace recorded during the load (Timeline::gpu) overlapping the
//               window lasted >= slow_kernel_factor times the median of the trace's kernels of
//               its name and >= slow_kernel_min_excess_ns over it, its name seen >=
//               slow_kernel_min_count times, and its excess over that median is at least
//               slow_kernel_excess_share of the excess of all the window's kernels over theirs:
//               one kernel made the step slow, not a bigger batch (a long prefill makes every
//               kernel of its step longer together)
//   host_gap    a GPU trace covers the window (kernels before and after it) and its kernels kept
//               the GPU busy in the stall's own window at most host_gap_busy_vs_run of their
//               busy share over the whole trace, no kernel was slow, and neither log, swap nor
//               host_cpu's thread rule holds (a host-wide run queue or PSI may: it does not say
//               the server's own host waited): a long step whose kernels
//               are all usual, the GPU idle inside it waiting for the host, for a reason the
//               host's series do not show (a lock, an RPC, the GIL held elsewhere)
//   client      none of the above, and a load thread of the client was saturated
// A stall may have several causes; one with none is unexplained. A gap that hits too few streams
// to be the engine's is a single-stream stall, tested for preemption only (at the gap's start).
//
// A throughput dip: a run of bins of dip_bin_ns (from the load's first token) in which streams
// were decoding and the output token rate across streams fell below dip_rate_share of the run's
// median rate (scaled down by the bin's decoding streams over their median count, when fewer:
// the load's ramp and tail are not dips), in bins where the median rate expects at least
// dip_min_tokens (fewer are too few to judge a rate by: long prefills, one stream). A dip that overlaps a stall is that stall's (its
// causes); the others are tested with the same rules as stalls, on the dip's window.
//
// Confidence: each cause is also tested on windows of the same length away from every stall
// (the base rate); a cause present in most stalls and rarely elsewhere is a cause, one present
// everywhere is background. Pure functions; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attribution/timeline.h"

namespace latdoc::attribution {

enum class Cause { kLog, kPreemption, kSwap, kHostCpu, kSlowKernel, kPrefill, kHostGap, kClient };
constexpr Cause kAllCauses[] = {Cause::kLog,     Cause::kPreemption, Cause::kSwap,
                                Cause::kHostCpu, Cause::kSlowKernel, Cause::kPrefill,
                                Cause::kHostGap, Cause::kClient};
std::string_view CauseName(Cause c);  // "log", "preemption", ...

// Every threshold of detection and attribution, in one place.
struct Thresholds {
  double stall_gap_factor = 4.0;        // a gap this many times the median gap is a stall's
  int64_t stall_gap_min_excess_ns = 2'000'000;  // ...and at least this much over the median
  int64_t stall_cluster_min_ns = 5'000'000;  // gaps starting within max(2 median gaps, this)
                                             // of each other are one stall's
  int stall_min_streams = 2;
  double stall_wide_share = 0.5;        // of the streams live across the window
  int64_t window_slack_ns = 15'000'000; // the host sampler's interval, and then some
  int64_t log_burst_bytes = 4096;
  int64_t major_faults_min = 100;
  double psi_share = 0.2;                // PSI memory "some" share of the window
  double psi_cpu_share = 0.8;            // PSI cpu "some" share of the window
  double thread_busy_share = 0.9;        // one server thread's CPU time, of the stall's window
  double thread_runnable_share = 0.8;    // ...or its runnable time (on a CPU or waiting for one)
  double thread_min_on_cpu_share = 0.25; // ...when it was on a CPU at least this much
  double run_queue_vs_run = 2.0;         // the window's run queue (over the online CPUs), this
                                         // many times the run's mean
  int prefill_tokens_min = 1024;
  double slow_kernel_factor = 3.0;      // a kernel this many times its name's median...
  int64_t slow_kernel_min_excess_ns = 2'000'000;  // ...and this much over it
  int64_t slow_kernel_min_count = 5;    // kernels of a name needed for its median
  double slow_kernel_excess_share = 0.67;  // of the window's kernels' excess over their medians
  double host_gap_busy_vs_run = 0.5;    // GPU busy in a stall under this share of its usual: a gap
  int64_t dip_bin_ns = 100'000'000;     // throughput is counted per bin of this width
  double dip_rate_share = 0.5;          // a bin under this share of the median rate is a dip's
  double dip_min_tokens = 8;            // ...judged only where at least this many were expected
  double ttft_spike_factor = 3.0;
  int64_t ttft_spike_min_excess_ns = 20'000'000;
};

struct StallEvidence {
  std::optional<int64_t> log_bytes;          // written to the server log in the window
  std::optional<double> preemptions;         // counter step around the window
  std::optional<int64_t> swap_in_pages, major_faults;
  std::optional<double> psi_memory_share, psi_cpu_share;  // of the window
  // The busiest server thread over the stall (ServerCpu): the one runnable the longest
  // (RunnableShare); its share of the window on a CPU, waiting on a run queue for one (nullopt:
  // schedstat unreadable), name and ids.
  std::optional<double> thread_busy_share;
  std::optional<double> thread_wait_share;
  std::string thread_comm;
  int64_t thread_pid = 0, thread_tid = 0;
  std::optional<double> run_queue;           // mean procs_running (less the sampler) in the window
  int prefill_tokens = 0;                    // prompt tokens of first tokens at the stall's end
  int prefill_requests = 0;
  // The longest-over-its-median GPU kernel overlapping the window (a trace on the timeline).
  std::optional<std::string> kernel_name;
  int64_t kernel_start_ns = 0, kernel_dur_ns = 0, kernel_median_ns = 0;  // start: client clock
  double kernel_excess_share = 0;  // its excess over its median, of all the window's kernels'
  // The share of the stall's own window (not widened) some kernel of the trace ran in (the union
  // of the kernels, clipped to it); nullopt: no GPU trace covers the window (a kernel before and
  // one after it). Its usual share over the trace is Attribution::gpu_busy_share.
  std::optional<double> gpu_busy_share;
};

struct Stall {
  int64_t start_ns = 0, end_ns = 0;  // client clock
  int streams = 0;                   // streams with a stall gap here
  int live_streams = 0;              // streams decoding across the window
  int64_t cost_ns = 0;               // sum over its streams of (gap - median gap)
  std::vector<Cause> causes;         // empty: unexplained
  StallEvidence evidence;
};

struct Dip {
  int64_t start_ns = 0, end_ns = 0;  // client clock: its bins' edges
  double rate_tok_s = 0;             // output tokens across streams per second in the dip
  double median_tok_s = 0;           // the run's median over bins with streams decoding
  double expected_tok_s = 0;         // the median scaled by the dip's decoding streams (when fewer)
  int live_streams = 0;              // streams decoding across its first bin
  int stall = -1;                    // the stall it overlaps (Attribution::stalls), -1 none
  std::vector<Cause> causes;         // the stall's, or its own; empty: unexplained
  StallEvidence evidence;
};

struct CauseSummary {
  Cause cause;
  int stalls = 0;                    // stalls it is a cause of
  int64_t cost_ns = 0;               // their cost
  int baseline_windows = 0;          // windows away from stalls tested
  int baseline_present = 0;          // ...in which the cause's rule also held
  int ttft_spikes = 0;               // TTFT spikes whose wait overlapped a stall it explains
  int dips = 0;                      // throughput dips it explains that are no stall's
  int stream_stalls = 0;             // single-stream stalls it explains (preemption only)
  int64_t stream_cost_ns = 0;
};

struct Attribution {
  int64_t median_gap_ns = 0;
  int64_t decode_ns = 0;             // sum over streams of last token - first token
  bool have_server = false, have_host = false, have_log = false, have_log_file_size = false;
  bool have_gpu = false;              // a GPU trace on the wall clock was placed on the timeline
  bool have_threads = false;          // the server's threads were sampled (ServerCpu)
  std::optional<double> run_queue_mean;  // over the load (procs_running less the sampler)
  std::optional<double> gpu_busy_share;  // the trace's kernels' union over their span in the load
  std::vector<Stall> stalls;
  // Single-stream stalls (gaps hitting too few streams to be the engine's) that a preemption
  // explains: the preempted stream waits and is recomputed while the others decode on.
  std::vector<Stall> stream_stalls;
  std::vector<Dip> dips;             // throughput dips, by time
  int unexplained_dips = 0;          // dips that are no stall's and have no cause
  std::vector<CauseSummary> causes;  // one per cause with stalls or dips > 0, most stalls first
  int unexplained = 0;
  int64_t unexplained_cost_ns = 0;
  // TTFT spikes: requests whose TTFT exceeded ttft_spike_factor times the run's median TTFT (and
  // the median by ttft_spike_min_excess_ns). One whose wait for its first token overlapped a
  // stall with causes is explained by them; the rest are not (queueing is load.queueing's).
  int64_t median_ttft_ns = 0;
  int64_t ttft_spike_ns = 0;         // the TTFT above which a request's is a spike
  int ttft_spikes = 0;
  int ttft_spikes_in_stalls = 0;
};

Attribution Attribute(const Timeline& t, const Thresholds& th = Thresholds{});

// A thread's runnable share of a window for the host_cpu rule: its time on a CPU, plus its wait
// for one (capped at the rest of the window) when it was on a CPU at least
// th.thread_min_on_cpu_share (a wait credited to a sleeping thread ended in the window but may
// have begun long before it).
double RunnableShare(double on_cpu, std::optional<double> wait, const Thresholds& th);

}  // namespace latdoc::attribution
