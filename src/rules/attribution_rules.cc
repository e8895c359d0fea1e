#include "rules/attribution_rules.h"

#include <fmt/core.h>

#include "base/clock.h"

namespace latdoc::rules {
namespace {

using attribution::Attribution;
using attribution::Cause;
using attribution::Stall;

// A cause that also holds in this share of the windows away from stalls is background.
constexpr double kBackgroundShare = 0.5;
// ...judged on at least this many windows (fewer: a run that stalls all the time).
constexpr int kMinBaselineWindows = 5;
// Below this share of decode time, a cause is reported as info.
constexpr double kWarnDecodeShare = 0.02;

const char* What(Cause c) {
  switch (c) {
    case Cause::kLog: return "synchronous writes to the server log (log stall)";
    case Cause::kPreemption: return "preemptions: the KV cache ran out";
    case Cause::kSwap: return "the host swapping or faulting pages in";
    case Cause::kHostCpu: return "CPU contention on the host (a server thread at 100% or a long run queue)";
    case Cause::kSlowKernel: return "a GPU kernel far longer than its usual (slow kernel)";
    case Cause::kPrefill: return "long prefill batches (prefill interference)";
    case Cause::kHostGap: return "a long step whose GPU kernels were all usual: the GPU idled, waiting for the host (host gap)";
    case Cause::kClient: return "the client's own saturated load thread, not the server";
  }
  return "?";
}

Layer LayerOf(Cause c) {
  switch (c) {
    case Cause::kLog: return Layer::kConfig;
    case Cause::kSwap:
    case Cause::kHostCpu: return Layer::kSystem;
    case Cause::kSlowKernel:
    case Cause::kHostGap: return Layer::kKernel;
    default: return Layer::kLoad;
  }
}

const char* Advice(Cause c) {
  switch (c) {
    case Cause::kLog:
      return "Stop logging on the serving path: drop `--enable-log-requests` (vLLM; "
             "`--disable-log-requests` on older versions) and `--enable-log-outputs`, or send "
             "the log to a faster sink; `latdoc logs` shows what the log writes.";
    case Cause::kPreemption:
      return "Lower `--max-num-seqs` so the running batch fits the KV cache, or give the cache "
             "more room: `--gpu-memory-utilization 0.95`, `--kv-cache-dtype fp8`, a shorter "
             "`--max-model-len`.";
    case Cause::kSwap:
      return "Keep the server's memory resident: free host memory, lower `vm.swappiness`, move "
             "memory-hungry processes off the host (`latdoc doctor` checks swap).";
    case Cause::kHostCpu:
      return "A server thread at 100% of a CPU (the examples name it) is the server's own limit, "
             "not the host's: profile that thread (py-spy for vLLM's Python threads). A run queue "
             "longer than the cores, or CPU pressure: give the server cores of its own (`latdoc "
             "numa-exec`, CPU pinning) or move other load off the host.";
    case Cause::kSlowKernel:
      return "The examples name the kernel that made the step slow; see the kernel layer's "
             "findings (`latdoc trace` on the same trace) for its shapes and roofline.";
    case Cause::kHostGap:
      return "The GPU waited for the host inside the step, and the host's series show no log "
             "write, swap or busy thread there: look at what the engine's host thread waits on "
             "(a lock, an RPC to its workers, the GIL held by another thread): py-spy dump of the "
             "engine core during a stall, `latdoc trace` on the same trace for its host gaps.";
    case Cause::kPrefill:
      return "Lower `--max-num-batched-tokens` so chunked prefill splits long prompts into "
             "shorter steps, or serve long prompts on a separate prefill instance.";
    case Cause::kClient:
      return "The client could not keep up: run with more `--threads`, or from a larger "
             "machine, before judging the server's stalls.";
  }
  return "";
}

// The evidence of each layer in a window, appended to `out`.
std::string EvidenceText(std::string out, const attribution::StallEvidence& e, const attribution::Timeline& t);

std::string Example(const Stall& s, const attribution::Timeline& t) {
  return EvidenceText(fmt::format("at +{:.3f} s: {:.1f} ms, {} of {} streams", NsToSec(s.start_ns - t.start_ns),
                                  NsToMs(s.end_ns - s.start_ns), s.streams, s.live_streams),
                      s.evidence, t);
}

std::string DipExample(const attribution::Dip& d, const attribution::Timeline& t) {
  return EvidenceText(fmt::format("at +{:.3f} s: a throughput dip of {:.0f} ms, {:.0f} tokens/s against a "
                                  "median of {:.0f}", NsToSec(d.start_ns - t.start_ns),
                                  NsToMs(d.end_ns - d.start_ns), d.rate_tok_s, d.median_tok_s),
                      d.evidence, t);
}

std::string EvidenceText(std::string out, const attribution::StallEvidence& e, const attribution::Timeline& t) {
  if (e.log_bytes) out += fmt::format("; log +{} B", *e.log_bytes);
  if (e.preemptions) out += fmt::format("; preemptions +{:g}", *e.preemptions);
  out += fmt::format("; first tokens at its end: {} ({} prompt tokens)", e.prefill_requests, e.prefill_tokens);
  if (e.psi_memory_share) out += fmt::format("; PSI memory {:.0f}%", *e.psi_memory_share * 100);
  if (e.psi_cpu_share) out += fmt::format("; PSI cpu {:.0f}%", *e.psi_cpu_share * 100);
  if (e.thread_busy_share)
    out += fmt::format("; busiest server thread {} (tid {}) {:.0f}% of a CPU", e.thread_comm, e.thread_tid,
                       *e.thread_busy_share * 100);
  // Runnable but off a CPU: the thread spun while the host gave it less than a whole CPU.
  if (e.thread_busy_share && e.thread_wait_share && *e.thread_wait_share >= 0.05)
    out += fmt::format(" (+{:.0f}% waiting for one)", *e.thread_wait_share * 100);
  if (e.run_queue && t.server_cpu.online_cpus > 0)
    out += fmt::format("; run queue {:.1f} on {} CPUs", *e.run_queue, t.server_cpu.online_cpus);
  if (e.swap_in_pages) out += fmt::format("; swap-in {} pages", *e.swap_in_pages);
  if (e.major_faults) out += fmt::format("; major faults {}", *e.major_faults);
  if (e.gpu_busy_share) out += fmt::format("; GPU busy {:.0f}% of the stall", *e.gpu_busy_share * 100);
  if (e.kernel_name)
    out += fmt::format("; GPU kernel {} ran {:.1f} ms (its median {:.2f} ms; {:.0f}% of the window's "
                       "kernel time over their medians)", *e.kernel_name, NsToMs(e.kernel_dur_ns),
                       NsToMs(e.kernel_median_ns), e.kernel_excess_share * 100);
  return out;
}

// The share of decode time `cost_ns` is; nullopt without decode time.
std::optional<double> DecodeShare(const Attribution& a, int64_t cost_ns) {
  return a.decode_ns > 0 ? std::optional<double>(double(cost_ns) / double(a.decode_ns))
                         : std::nullopt;
}

// The finding of one cause: the stalls, dips and TTFT spikes it explains, its base rate, and
// up to three examples. `total`: the stalls of the run.
Finding CauseFinding(const Attribution& a, const attribution::Timeline& t,
                     const attribution::CauseSummary& cs, int total) {
  Finding f;
  f.id = fmt::format("attribution.{}", attribution::CauseName(cs.cause));
  f.layer = LayerOf(cs.cause);
  const std::optional<double> sh = DecodeShare(a, cs.cost_ns + cs.stream_cost_ns);
  const double base =
      cs.baseline_windows > 0 ? double(cs.baseline_present) / cs.baseline_windows : 0;
  const bool background = cs.baseline_windows >= kMinBaselineWindows && base >= kBackgroundShare;
  f.severity = background || sh.value_or(0) < kWarnDecodeShare ? Severity::kInfo : Severity::kWarn;
  f.title =
      fmt::format("{} of {} decode stalls coincide with {}", cs.stalls, total, What(cs.cause));
  if (cs.stream_stalls > 0)
    f.title +=
        fmt::format("{} {} single-stream stall{} began at one", cs.stalls > 0 ? "; and" : ":",
                    cs.stream_stalls, cs.stream_stalls == 1 ? "" : "s");
  const bool dips_only = cs.stalls == 0 && cs.stream_stalls == 0;
  if (dips_only)  // a slower rate costs no stall time: no share of decode time to give
    f.title =
        fmt::format("{} throughput dip{} in the output token rate coincide{} with {}", cs.dips,
                    cs.dips == 1 ? "" : "s", cs.dips == 1 ? "s" : "", What(cs.cause));
  else if (cs.dips > 0)
    f.title += fmt::format("; and {} throughput dip{} outside the stalls", cs.dips,
                           cs.dips == 1 ? "" : "s");
  if (sh && !dips_only) f.title += fmt::format(": {:.1f}% of decode time", *sh * 100);
  if (background)
    f.title += fmt::format(
        " (but it is present in {:.0f}% of other windows too: background, not "
        "a proven cause)",
        base * 100);
  f.evidence.push_back({"stalls_explained", double(cs.stalls), "", ""});
  f.evidence.push_back({"stalls_total", double(total), "", ""});
  f.evidence.push_back({"single_stream_stalls_explained", double(cs.stream_stalls), "", ""});
  f.evidence.push_back({"throughput_dips_explained", double(cs.dips), "",
                        "dips in the output token rate that are no stall's"});
  f.evidence.push_back(
      {"ttft_spikes_explained", double(cs.ttft_spikes), "",
       fmt::format("of {} requests with TTFT over {:.1f} ms (median {:.1f} ms)", a.ttft_spikes,
                   NsToMs(a.ttft_spike_ns), NsToMs(a.median_ttft_ns))});
  f.evidence.push_back({"stall_cost", NsToMs(cs.cost_ns + cs.stream_cost_ns), "ms", ""});
  f.evidence.push_back(
      {"decode_time_share", sh ? std::optional<double>(*sh * 100) : std::nullopt, "%", ""});
  f.evidence.push_back({"confidence", std::nullopt, "",
                        fmt::format("present in {} of {} stalls; in {} of {} windows of the same "
                                    "length away from stalls",
                                    cs.stalls, total, cs.baseline_present, cs.baseline_windows)});
  int shown = 0;
  for (const std::vector<Stall>* list : {&a.stalls, &a.stream_stalls}) {
    for (const Stall& s : *list) {
      if (shown == 3) break;
      if (std::find(s.causes.begin(), s.causes.end(), cs.cause) == s.causes.end()) continue;
      f.evidence.push_back({fmt::format("example_{}", ++shown), std::nullopt, "", Example(s, t)});
    }
  }
  for (const attribution::Dip& d : a.dips) {
    if (shown == 3) break;
    if (d.stall >= 0 || std::find(d.causes.begin(), d.causes.end(), cs.cause) == d.causes.end())
      continue;
    f.evidence.push_back({fmt::format("example_{}", ++shown), std::nullopt, "", DipExample(d, t)});
  }
  f.advice = Advice(cs.cause);
  f.latency_share = sh;
  return f;
}

// The stalls no cause explains, with the layers that were on the timeline and examples.
Finding UnexplainedFinding(const Attribution& a, const attribution::Timeline& t, int total) {
  Finding f;
  f.id = "attribution.unexplained";
  f.layer = Layer::kLoad;
  f.severity = Severity::kInfo;
  const std::optional<double> sh = DecodeShare(a, a.unexplained_cost_ns);
  f.title = fmt::format("{} of {} decode stalls have no cause on the timeline{}", a.unexplained,
                        total, sh ? fmt::format(" ({:.1f}% of decode time)", *sh * 100) : "");
  std::string layers = "client tokens";
  if (a.have_server) layers += ", /metrics";
  if (a.have_host) layers += ", host samples";
  if (a.have_threads) layers += ", server threads";
  if (a.have_log) layers += ", server log";
  f.evidence.push_back({"stalls_unexplained", double(a.unexplained), "", ""});
  f.evidence.push_back({"layers_on_the_timeline", std::nullopt, "", layers});
  int shown = 0;
  for (const Stall& s : a.stalls) {
    if (shown == 3) break;
    if (!s.causes.empty()) continue;
    f.evidence.push_back({fmt::format("example_{}", ++shown), std::nullopt, "", Example(s, t)});
  }
  f.advice =
      "Put more layers on the timeline: run diagnose with --local on the server host and "
      "--logs with its log; a GPU trace of the same load (`latdoc trace`) shows slow steps.";
  return f;
}

}  // namespace

std::vector<Finding> EvaluateAttributionRules(const Attribution& a, const attribution::Timeline& t) {
  std::vector<Finding> out;
  if (a.stalls.empty() && a.stream_stalls.empty() && a.causes.empty()) return out;
  const int total = static_cast<int>(a.stalls.size());
  for (const attribution::CauseSummary& cs : a.causes) out.push_back(CauseFinding(a, t, cs, total));
  if (a.unexplained > 0) out.push_back(UnexplainedFinding(a, t, total));
  return out;
}

std::string AttributedStallsAdvice(const Attribution& a) {
  std::string names;
  for (const attribution::CauseSummary& cs : a.causes)
    names += fmt::format("{}attribution.{} ({} stalls)", names.empty() ? "" : ", ",
                         attribution::CauseName(cs.cause), cs.stalls);
  return fmt::format("The stalls were laid against the server's /metrics, log and host on one clock: "
                     "see {}.", names);
}

}  // namespace latdoc::rules
