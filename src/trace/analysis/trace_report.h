// TraceReport: the facts every trace analysis produces from one finalized Trace. Rules
// (rules/trace_rules.h) turn it into findings; cli/cmd_trace.cc renders it. Plain data.
//
// Times are int64 ns; `_at_ns` values are offsets from the trace's first host or GPU event.
// std::optional marks values the trace cannot give (no bytes, no host launches): "n/a".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/analysis/gpu_timeline.h"
#include "trace/model/trace.h"

namespace latdoc::trace {

struct KernelStat {
  std::string name;              // normalised (model/gpu_names.h)
  GpuOpKind kind = GpuOpKind::kKernel;
  int64_t count = 0;
  int64_t total_ns = 0;
  double mean_ns = 0, p50_ns = 0, p99_ns = 0;
  int64_t max_ns = 0;
  double busy_share = 0;         // time it ran (instances on several streams at once counted once) / all_ops_busy_ns
};

struct OutlierInstance {
  std::string name;
  uint16_t source = 0;           // the file (rank) it ran in
  int32_t device = 0, stream = 0;
  int64_t at_ns = 0;             // start, from trace start
  int64_t dur_ns = 0;
  double median_ns = 0;
};

struct CopyDirectionStat {
  CopyDirection direction = CopyDirection::kUnknown;
  int64_t count = 0;
  int64_t total_ns = 0;
  std::optional<int64_t> bytes;           // nullopt: no copy of this direction reported bytes
  std::optional<double> achieved_gbps;    // bytes / device time, over copies with bytes and a duration
  int64_t small_count = 0;                // below AnalysisOptions::small_copy_bytes
  int64_t pageable_count = 0;             // not from a synchronous call: CUDA names/kinds, or the ROCm heuristic
  int64_t pageable_ns = 0;                // their device time
  int64_t sync_count = 0;                 // launched by a synchronous copy call
  int64_t bytes_count = 0;                // copies that reported their size
  std::optional<double> small_per_s;      // small copies per second: the file with most, over its span
  int64_t storm_runs = 0;                 // runs of small copies back to back
  int64_t longest_storm = 0;
};

struct CopyStats {
  std::vector<CopyDirectionStat> by_direction;
  int64_t copies = 0;
  int64_t copies_with_bytes = 0;
  int64_t small_copies = 0;
  // The file with the most small copies per second of its own span (ranks may run apart).
  std::optional<double> small_copies_per_s;
  bool pageable_is_heuristic = false;         // some host<->device copy had no host memory kind: judged by the heuristic
  int64_t memsets = 0;
  int64_t memset_ns = 0;
};

struct StreamIdle {
  uint16_t source = 0;
  int32_t device = 0, stream = 0;
  int64_t span_ns = 0;          // first start to last end of the stream
  int64_t ops = 0;
  int64_t host_wait_ns = 0;     // the next op was launched after the previous one ended
  int64_t kernel_wait_ns = 0;   // short gap, next op already launched
  int64_t other_ns = 0;
};

struct CpuActivity {
  std::string name;
  int64_t overlap_ns = 0;
};

// A gap in a device's GPU work (no op on any stream), with the host side at that time.
struct IdleGap {
  uint16_t source = 0;
  int32_t device = 0;
  int64_t at_ns = 0;
  int64_t dur_ns = 0;
  std::string next_op;                      // the GPU op that ended the gap
  std::optional<std::string> next_launch;   // its launch call, if in the trace
  std::optional<int32_t> launch_tid;
  std::optional<int64_t> launch_wait_ns;    // launch call start − gap start (>0: host late)
  std::optional<int64_t> cpu_busy_ns;       // time the launching thread was inside CPU ops
  std::vector<CpuActivity> cpu_top;         // its longest outermost CPU ops in the gap (nested ones are part of them)
};

struct IdleStats {
  std::vector<StreamIdle> streams;
  std::vector<IdleGap> largest_gaps;
  int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
  // Set when the CPU ops could not be read back from their spill file: the gaps then have no
  // CPU side (cpu_busy_ns, cpu_top).
  std::optional<std::string> cpu_ops_error;
};

struct LaunchStats {
  int64_t kernels = 0;
  int64_t kernels_linked = 0;               // with a launch call in the trace
  int64_t launch_calls = 0;                 // kernel launch API calls
  // Kernel launch calls per second of the file that launches most (each file over its own
  // span: ranks may run on different clocks).
  std::optional<double> launches_per_s;
  std::optional<double> delay_p50_ns, delay_p99_ns, delay_max_ns;   // GPU start − call end
  int64_t delays_rejected = 0;              // negative beyond clock noise or > 1 s
  int64_t tiny_kernels = 0;                 // < tiny_kernel_ns, launched one by one (not by a graph)
  int64_t tiny_kernel_limit_ns = 0;         // that tiny_kernel_ns
  int64_t tiny_kernel_ns_total = 0;
  double tiny_share = 0;                    // of the kernels launched one by one, by count
  int64_t launch_bound_kernels = 0;         // HTA: launch call ≤ 50 µs and GPU time < call time
  int64_t graph_launches = 0;
  int64_t graph_kernels = 0;                // kernels launched by graph launches
  std::optional<double> graph_first_node_p50_ns;   // graph launch end → first node start
  std::optional<double> launch_call_p50_ns;        // host time of a kernel launch call
};

struct ApiUse {
  std::string name;
  int64_t count = 0;
  int64_t total_ns = 0;
};

struct SteadyStateApi {
  // Offset where the steady state starts: each file's warm-up is the first warmup_share of its
  // own API-call span (ranks may start apart or run on different clocks); the earliest cut.
  int64_t steady_from_ns = 0;
  std::vector<ApiUse> syncs;        // sorted by total time
  std::vector<ApiUse> allocs;       // malloc and free calls
  int64_t sync_count = 0, sync_ns = 0, alloc_count = 0, alloc_ns = 0;
  int64_t steady_span_ns = 0;       // the steady states' host time, summed over files
  int64_t sync_copy_count = 0;      // synchronous copy calls (cudaMemcpy, hipMemcpyWithStream)
  // With steps found: the steps' file's steady state is their host window (StepStats), and
  // ends there (what follows the last step's launches, a final synchronize, is not in it).
  std::optional<int64_t> steady_to_ns;
  std::string basis = "warmup_share";   // or "steps"
};

struct OverlapStats {
  int64_t copy_ns = 0;              // copies ≥ overlap_min_copy_ns
  int64_t copy_hidden_ns = 0;       // of which under a kernel on another stream
  std::optional<double> copy_hidden_share;
  int64_t kernel_busy_ns = 0;
  int64_t multi_stream_ns = 0;      // time with kernels on ≥ 2 streams of one device at once
  int64_t multi_stream_busy_ns = 0; // kernel busy time of the devices with ≥ 2 kernel streams
  std::optional<double> concurrency_share;   // multi_stream_ns / multi_stream_busy_ns
  int streams_with_kernels = 0;     // over all devices
  int max_streams_per_device = 0;
};

struct BandwidthCheck {
  int32_t device = 0;
  std::string gpu;                  // spec table row used
  CopyDirection direction = CopyDirection::kUnknown;
  double achieved_gbps = 0;
  double peak_gbps = 0;
  std::string peak_source;
  int64_t copies = 0;             // negative: -(kernels) for a kernel-counter check
};

struct PatternHit {
  std::string pattern, kernel, advice, source, arch;
  // When the pattern is slow; empty when the kernel's name is the whole condition (checked).
  std::string condition;
  bool condition_checked = true;
  int64_t count = 0;
  int64_t total_ns = 0;
  // The time its ops ran / all_ops_busy_ns: a kernel's instances on several streams at once
  // count once (KernelStat::busy_share); different kernels it matches are summed, up to 1.
  double busy_share = 0;
};

// ---- Per-step analysis (steps.cc) ----

// How the steps were found: the profiler's own step ranges, vLLM's model-runner ranges, one
// CUDA/HIP graph launch per step, or the cadence of a repeated launch sequence (a guess).
enum class StepMethod : uint8_t { kNone, kProfilerStep, kVllmRange, kGraphLaunch, kCadence };
std::string_view StepMethodName(StepMethod m);

// One decode (or training) step. A step's ops are those launched inside its host window (GPU
// start where the op has no launch in the trace). Its wall time is GPU-side: from its first
// op's start to the next step's first op's start (the last step: to its last op's end), so a
// step's time holds the host being late before the next one as a user sees it between tokens.
struct StepRow {
  int32_t index = 0;
  int64_t at_ns = 0;               // first op start, from trace start
  int64_t wall_ns = 0;
  int64_t gpu_busy_ns = 0;         // union of its ops on the step's device
  std::optional<int64_t> host_busy_ns;   // union of the launching thread's CPU ops and API calls in its host window (nested ops once)
  // The GPU idle inside the step, split by what the op ending each gap waited for (HTA rule):
  int64_t idle_host_late_ns = 0;   // its launch began after the gap began
  int64_t idle_sync_ns = 0;        // ... while the launching thread had just waited in a sync call
  int64_t idle_kernel_wait_ns = 0; // already launched, gap < kernel_wait_max_ns
  int64_t idle_other_ns = 0;       // already launched and longer, or no launch in the trace
  int64_t ops = 0, kernels = 0, copies = 0, d2h_copies = 0;
  int64_t launches = 0;            // kernel and graph launch calls in its host window
  int64_t syncs = 0;               // *Synchronize calls and synchronous copy calls there
  int64_t sync_wait_ns = 0;        // host time inside those calls
  int64_t allocs = 0;              // malloc/free calls there
  int64_t pageable_copies = 0, pageable_bytes = 0, pageable_ns = 0;
  int64_t small_h2d_copies = 0;    // HtoD copies below AnalysisOptions::small_copy_bytes
};

// p50 and p99 over the steps of one StepRow column.
struct StepQuantile {
  std::string column;
  double p50 = 0, p99 = 0;
};

struct StepKernelExcess {
  std::string name;
  int64_t ns = 0;                  // its time in the step
  double mean_ns_per_step = 0;     // its time over all steps / steps
};

struct SlowStep {
  int32_t index = 0;
  int64_t wall_ns = 0;
  double ratio_to_median = 0;
  std::vector<StepKernelExcess> kernels;   // by excess over their mean, largest first (≤ 3)
};

// A kernel name that runs in only every k-th step.
struct PeriodicKernel {
  std::string name;
  int32_t period_steps = 0;
  int32_t first_step = 0;
  int64_t occurrences = 0;         // steps it ran in
  int64_t count = 0;               // its instances
  int64_t total_ns = 0;            // its device time in the steps
};

struct StepStats {
  StepMethod method = StepMethod::kNone;
  std::string detail;              // the range or anchor op, or why no steps were found
  uint16_t source = 0;
  int32_t device = 0;
  bool host_records = false;       // the steps' ops have launch calls in the trace
  std::vector<StepRow> steps;
  int64_t ops_outside = 0;         // ops of the device before the first or after the last step
  // The steady state: from the first step's first launch (or op) to the last step's last
  // launch end (host) and from its first op's start to its last op's end (GPU), offsets.
  int64_t host_from_ns = 0, host_to_ns = 0, gpu_from_ns = 0, gpu_to_ns = 0;
  std::vector<StepQuantile> quantiles;     // wall_ns, gpu_busy_ns, host_busy_ns, idle_*, launches, copies, syncs...
  std::vector<SlowStep> slowest;           // ≤ 3, slowest first
  std::vector<PeriodicKernel> periodic;    // ≤ 3, by total time
  std::vector<ApiUse> syncs;               // sync calls in the steps' host windows, by total time
  std::vector<ApiUse> allocs;              // malloc/free calls there
  std::string d2h_copy;                    // the most frequent DtoH copy's name in the steps, if any
  // The quantile of `column`, nullopt when absent.
  std::optional<StepQuantile> Quantile(std::string_view column) const;
};

// A row of a profiler's own stats table (no per-event times: p50/p99 are not known).
struct AggregateStat {
  std::string name;
  AggregateKind kind = AggregateKind::kKernel;
  int64_t calls = 0;
  int64_t total_ns = 0;
  std::optional<int64_t> min_ns, max_ns;
};

// One kernel (or kernel family: one normalised name, launched by one framework op in one
// dtype) on a roofline. The analysis (roofline.cc) fills the achieved side from the trace;
// rules (trace_roofline_rules.h) the peaks, the bound and the share of the roof.
struct RooflineKernel {
  std::string name;                         // normalised kernel name
  std::string op;                           // "aten::mm"; empty for counter bytes
  std::string kind;                         // "gemm", "attention", "elementwise", "counters"
  std::string dtype;                        // "bf16", "fp32"...; "unknown" for counters
  uint16_t source = 0;                      // where its first instance ran (spec lookup)
  int32_t device = 0;
  // That device's name and arch as the trace gives them; when the trace lists only other
  // devices of the same file (a Kineto trace lists the GPUs the process saw), the first of them.
  std::string device_name, device_arch;
  int64_t count = 0;
  int64_t total_ns = 0;                     // device time of its instances
  double busy_share = 0;                    // total_ns / all_ops_busy_ns
  std::optional<double> flops, bytes;       // summed over instances; nullopt: not known
  std::optional<double> achieved_tflops, achieved_gbps;
  std::optional<double> intensity;          // FLOP per byte
  // From the spec table (rules):
  std::string gpu;                          // the table row; empty when the GPU is not there
  std::optional<double> peak_tflops, peak_gbps;
  std::string peak_tflops_name;             // "bf16", "fp32", "tf32 (fp32 above the fp32 peak)"
  std::optional<double> ridge;              // FLOP/byte where the roofs meet
  std::string bound;                        // "memory", "compute", "" (no intensity or no peak)
  std::optional<double> roof_share;         // achieved / its roof (0..1; above 1: impossible)
  bool impossible = false;                  // above a peak: a data problem, not a result
  std::string note;
};

struct RooflineStats {
  std::vector<RooflineKernel> kernels;      // by total time, at most AnalysisOptions::roofline_kernels
  int64_t kernels_seen = 0;                 // kernel instances in the trace
  int64_t kernels_with_work = 0;            // of which with FLOPs or bytes known
  int64_t kernel_ns = 0, kernel_ns_with_work = 0;
  int64_t work_ops = 0;                     // framework ops with a work estimate (shapes)
  // Set by rules: the device name that has no row, or "(the trace names no GPU)".
  std::string gpu_not_in_table;
};

// One rank of a distributed job: one device of one file that ran communication kernels
// (NCCL/RCCL). analysis/ranks.cc.
struct RankInfo {
  uint16_t source = 0;
  int32_t device = 0;
  std::optional<int32_t> rank;              // Kineto's distributedInfo; nullopt: not recorded
  std::string label;                        // "rank 1 (device 0, NVIDIA H200, r1.json)"
  int64_t total_ns = 0, busy_ns = 0;        // its own GPU window (per-device timeline)
  int64_t total_comm_ns = 0, exposed_comm_ns = 0;
  int64_t collectives = 0;                  // collective kernels (point-to-point not counted)
  int64_t straggler_count = 0;              // aligned collectives where it came last
  int64_t caused_wait_ns = 0;               // the others' wait in those collectives, summed
  int64_t waited_ns = 0;                    // its own wait (duration above the shortest), summed
};

struct StragglerExample {
  int64_t index = 0;                        // the k-th aligned collective
  std::string collective;                   // "AllReduce"
  size_t straggler = 0;                     // index into RankStats::ranks
  int64_t max_wait_ns = 0;                  // the longest wait it caused
};

struct RankStats {
  std::vector<RankInfo> ranks;              // empty: fewer than two ranks with collectives
  int64_t collectives_aligned = 0;          // k-th collective of every rank, same kind
  int64_t collectives_with_straggler = 0;   // of which the wait spread ≥ AnalysisRanks threshold
  int64_t straggler_min_wait_ns = 0;        // that threshold
  int64_t total_wait_ns = 0;                // every rank's wait over aligned collectives
  std::optional<size_t> usual_straggler;    // the rank last in ≥ usual_share of those collectives
  double usual_share = 0;                   // its share of them
  std::vector<StragglerExample> worst;      // the largest waits, at most 5
  std::vector<std::string> problems;        // rank files that do not fit together
  // A rank in two files or files of different world sizes: not one job's ranks, so the
  // straggler verdict is not trusted.
  bool files_conflict = false;
};

struct TraceReport {
  std::vector<std::string> formats;
  int64_t span_ns = 0;
  int64_t gpu_ops = 0, api_calls = 0, cpu_ops = 0;
  std::vector<DeviceInfo> devices;             // those that ran GPU work (all if none did)
  int idle_devices = 0;                        // devices listed by the profiler without work
  GpuTimeline timeline;                       // all devices, TraceLens rule
  std::vector<GpuTimeline> per_device;        // when more than one device (or file) ran work
  // per_device summed (source and device nullopt): each device judged on its own window, so
  // ranks on different clocks do not read as idle between them. Set with per_device.
  std::optional<GpuTimeline> devices_summed;
  int64_t all_ops_busy_ns = 0;                // BusyOfAllOps: per device, summed, every op
  bool timeline_used_all_ops = false;         // a file without host launches: its ops all counted
  std::vector<KernelStat> hot_kernels;
  // Copies and fills by raw name (count and total only), for the pattern table: ROCm's blit
  // kernels (__amd_rocclr_copyBuffer*) are read as copies, not kernels. Not in the JSON.
  std::vector<KernelStat> other_ops;
  std::vector<OutlierInstance> outliers;
  int64_t outlier_count = 0;
  int64_t outlier_excess_ns = 0;              // over all outliers: time above their medians
  CopyStats copies;
  IdleStats idle;
  LaunchStats launch;
  SteadyStateApi steady;
  OverlapStats overlap;
  std::vector<BandwidthCheck> bandwidth;      // filled by rules' spec table (cli)
  std::vector<PatternHit> patterns;           // filled by rules' pattern table (cli)
  std::vector<AggregateStat> stats_tables;    // from stats CSVs, by total time
  // Kernels with memory counters (rocprof FETCH_SIZE + WRITE_SIZE, KB -> bytes).
  int64_t counter_kernels = 0;
  int64_t counter_bytes = 0;
  int64_t counter_kernel_ns = 0;
  std::optional<double> counter_gbps;         // bytes / kernel time
  RooflineStats roofline;                     // analysis/roofline.cc, peaks from rules
  RankStats ranks;                            // analysis/ranks.cc
  StepStats steps;                            // per-step analysis (steps.cc)
};

}  // namespace latdoc::trace
