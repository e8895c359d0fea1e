// The simulator's answer to vLLM's profiler endpoints: while profiling, each engine step is
// recorded, and at the stop a Kineto-format trace (Chrome trace JSON, as torch.profiler's
// tensorboard_trace_handler writes it) of those steps is written to the profiler directory.
//
// vLLM (vllm/entrypoints/openai/api_server.py, v0.10): with VLLM_TORCH_PROFILER_DIR set, POST
// /start_profile and POST /stop_profile each answer 200 once the engine started or stopped its
// torch profiler; without it the routes do not exist (404). The trace lands in that directory
// as "<worker>.<unix ms>.pt.trace.json[.gz]" when the profiler stops.
//
// What one simulated step becomes in the trace (all on the step's own wall-clock span):
//   "ProfilerStep#N" and "execute_model" user annotations (the engine's step, CPU side);
//   per kernel, a "cudaLaunchKernel" cuda_runtime event on the CPU thread and the kernel on
//   GPU stream 7, both with the same args.correlation (and an "ac2g" flow pair);
//   the kernels share the step: GEMMs, attention (flash prefill or paged decode), norms and
//   activations, in proportions fixed per kind; a step with a slow kernel gets one GEMM that
//   takes most of it. A step with a host stall (StepPlan::host_stall_ns: a log, swap or CPU
//   stall, a host gap) launches nothing for that share of its span first: its kernels keep
//   their usual length after the gap and the GPU idles during it. "baseTimeNanoseconds" is the
//   Unix time of ts 0.
// Not thread-safe: the simulator's event loop thread calls it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/engine.h"

namespace latdoc::sim {

class StepProfiler {
 public:
  // Steps kept per trace; later steps are counted, not written (a bounded file).
  static constexpr size_t kMaxSteps = 2000;

  // `dir`: the directory traces go to; empty: profiling disabled (the endpoints answer 404).
  explicit StepProfiler(std::string dir) : dir_(std::move(dir)) {}

  bool enabled() const { return !dir_.empty(); }
  bool active() const { return active_; }
  // Begins a trace (a second start while active keeps the first).
  void Start(int64_t mono_now_ns, int64_t unix_now_ns);
  // One engine step, CLOCK_MONOTONIC ns; ignored when not active.
  void OnStep(int64_t start_ns, int64_t end_ns, const StepPlan& plan);
  // Ends the trace and writes it (atomically: a reader never sees half a file); returns its
  // path, or "" when no trace was active.
  StatusOr<std::string> Stop();

  // The trace text of `steps` (exposed for tests).
  struct Step {
    int64_t start_ns = 0, end_ns = 0;
    StepPlan plan;
  };
  static std::string TraceJson(const std::vector<Step>& steps, int64_t base_mono_ns,
                               int64_t base_unix_ns, int pid);

 private:
  std::string dir_;
  bool active_ = false;
  int64_t base_mono_ns_ = 0, base_unix_ns_ = 0;
  std::vector<Step> steps_;
  uint64_t dropped_ = 0;
};

}  // namespace latdoc::sim
