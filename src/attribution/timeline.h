// One clock for stall attribution (docs/attribution.md): the series of every layer a load run
// touched, put on the client's CLOCK_MONOTONIC nanoseconds.
//
// - streams: each request's send, first token and every token arrival (loadgen records, stamped
//   by the client when the bytes were read);
// - server: the /metrics scrapes taken during the load (running, waiting, KV usage, the
//   preemption counter), at the runner's scrape interval;
// - host: samples taken here during the load (HostSampler, --local): the server log file's size,
//   PSI totals, swap and major-fault counters, the run queue; and the CPU time of each thread
//   of the server's processes (ServerCpu);
// - gpu: the kernels of a Kineto trace recorded during the load, whose ts are microseconds after
//   its baseTimeNanoseconds (Unix ns), mapped through the same wall/monotonic pair (WallToMono);
// - log: the server log's lines, whose "MM-DD HH:MM:SS" local wall time is mapped through the
//   client's wall/monotonic pair (LogClock); vLLM stamps whole seconds and its access lines
//   carry no time, so a log line is placed at the middle of its second, +-0.5 s.
//
// Plain data; no I/O except ReadLogEvents. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "loadgen/runner.h"

namespace latdoc::attribution {

struct StreamSeries {
  uint64_t index = 0;
  int64_t sent_ns = -1;
  int64_t first_token_ns = -1;
  int64_t end_ns = -1;
  int prompt_tokens = 0;
  std::vector<int64_t> token_ns;  // arrival of each content chunk, in order
};

struct ServerPoint {
  int64_t t_ns = 0;
  std::optional<double> running, waiting, kv_usage, preemptions_total;
};

// Cumulative counters read at `t_ns` (HostSampler). nullopt: not readable here.
struct HostPoint {
  int64_t t_ns = 0;
  std::optional<int64_t> log_bytes;                 // size of the server's log file
  std::optional<int64_t> psi_cpu_some_us, psi_io_some_us, psi_memory_some_us;  // /proc/pressure/*
  std::optional<int64_t> swap_in_pages, swap_out_pages, major_faults;          // /proc/vmstat
  // procs_running of /proc/stat (runnable tasks, the sampler's own thread among them): read on
  // the samples that also read the server's threads (kThreadSampleEvery), nullopt on the others.
  std::optional<int64_t> procs_running;
};

// The CPU time of one thread of the server (or of a process it started) at `t_ns`.
struct ThreadCpuPoint {
  int64_t t_ns = 0;
  int64_t cpu_ns = 0;  // utime + stime since the thread started (schedstat's ns, else stat's ticks)
  // Time it was runnable but waited for a CPU (schedstat's run-queue wait, ns); -1: unknown
  // (no schedstat on this kernel: stat has no such field).
  int64_t wait_ns = -1;
};
struct ServerThread {
  int64_t pid = 0, tid = 0;
  std::string comm;              // /proc/PID/task/TID/comm when first seen
  std::vector<ThreadCpuPoint> cpu;  // by time; from the sample that first saw it
};
// The server's threads as the host sampler saw them (--local, the server's pid known).
struct ServerCpu {
  int64_t pid = 0;               // 0: the server was not found (`note` says why)
  std::string found_by;          // "listening on port 8000", "command line (vllm)"
  std::string note;
  std::vector<int64_t> child_pids;  // its descendants, whose threads are sampled too
  std::vector<ServerThread> threads;
  int64_t thread_interval_ns = 0;
  int online_cpus = 0;           // /sys/devices/system/cpu/online; 0: unknown
  int64_t sampler_cpu_ns = 0;    // the sampler thread's own CPU time over the load
  int64_t sampler_wall_ns = 0;   // ...and the time it ran
};

enum class LogKind { kStats, kPreemption, kRequestLog, kError, kOther };

struct LogPoint {
  int64_t t_ns = 0;   // client clock: the middle of the line's second
  LogKind kind = LogKind::kOther;
  int64_t bytes = 0;  // the line's length
};

// The client's wall/monotonic pair, read together once (WallNowNs, MonoNowNs).
struct LogClock {
  int64_t wall_ns = 0;
  int64_t mono_ns = 0;
};

// One GPU kernel of a trace recorded during the load (Kineto), on the client clock: its wall
// clock (the trace's baseTimeNanoseconds + ts) mapped through LogClock (WallToMono).
struct GpuKernel {
  int64_t start_ns = 0, end_ns = 0;
  uint32_t name = 0;           // index into Timeline::gpu_names
};
// A kernel name of the trace, with the median duration of the trace's kernels of that name.
struct GpuKernelName {
  std::string name;
  int64_t median_ns = 0;
  int64_t count = 0;           // how many the trace holds
};

// A wall-clock time (Unix ns) on the client's monotonic clock, through the pair read together.
inline int64_t WallToMono(const LogClock& c, int64_t wall_ns) { return c.mono_ns + (wall_ns - c.wall_ns); }

struct Timeline {
  int64_t start_ns = 0, end_ns = 0;  // the measured load phase
  std::vector<StreamSeries> streams;
  std::vector<ServerPoint> server;
  std::vector<HostPoint> host;        // empty without --local
  ServerCpu server_cpu;               // empty threads without --local or a server pid
  std::vector<LogPoint> log;          // empty without --logs
  int64_t log_uncertainty_ns = 0;     // +- of each LogPoint's time
  // GPU kernels of a trace whose wall clock overlaps the load (empty without one), by start.
  std::vector<GpuKernel> gpu;
  std::vector<GpuKernelName> gpu_names;  // GpuKernel::name's table
  bool have_gpu = false;              // a trace on the wall clock was placed (even if no kernel fell in the load)
  std::vector<std::string> gpu_files; // the traces placed
  bool client_saturated = false;      // a load thread was busy >= kSaturatedBusy
  double client_busy_max = 0;         // the busiest load thread's CPU share
};

// The client's and the server's series of one run.
Timeline FromBenchRun(const loadgen::BenchRun& run);

// Reads the log lines that fall in [t.start_ns, t.end_ns] (with the uncertainty) into t->log.
// Lines without a time of their own (access lines) are left out. Errors: the file unreadable.
Status ReadLogEvents(const std::string& path, const LogClock& clock, Timeline* t);

}  // namespace latdoc::attribution
