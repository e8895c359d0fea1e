// GPU time breakdown with AMD TraceLens's `gpu_timeline` definition
// (AMD-AGI/TraceLens@171dd74 TraceLens/TreePerf/gpu_event_analyser.py):
//   GPU events = kernels, copies and fills; only those linked to a host launch (runtime or
//   driver call with the same correlation) present in the trace count, because the others
//   were launched before the profiling window.
//   memcpy bucket = copies (including ROCm rocclr copy kernels); communication = kernels whose
//   name contains "nccl" or "rccl" (any case); computation = everything else, fills included.
//   total = last end − first start; busy = |∪ all|; idle = total − busy;
//   computation = |∪ comp|; exposed_comm = |∪ comm − ∪ comp|;
//   exposed_memcpy = |∪ memcpy − ∪ comp − ∪ comm|.
// Identity: computation + exposed_comm + exposed_memcpy + idle = total.
//
// Two sets of numbers: exact integer nanoseconds (`*_ns`), and TraceLens's own arithmetic
// (`*_ms`): timestamps as double microseconds (the nearest double to the trace's decimal text,
// which is ns / 1000.0 correctly rounded), end = ts + dur in double, union lengths summed in
// double. The `*_ms` values reproduce TraceLens's gpu_timeline.csv to the last digit; the
// exact values differ from them by ~1e-5 ms because doubles near 5e12 µs have a ~1 ns ulp.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "trace/model/trace.h"

namespace latdoc::trace {

struct GpuTimeline {
  // One device of one file (rank, process), or nullopt: all devices of all files together
  // (TraceLens's definition).
  std::optional<uint16_t> source;
  std::optional<int32_t> device;
  int64_t ops = 0;                 // GPU events counted
  int64_t ops_dropped_unlinked = 0;
  int64_t total_ns = 0;
  int64_t busy_ns = 0;
  int64_t idle_ns = 0;
  int64_t computation_ns = 0;
  int64_t exposed_comm_ns = 0;
  int64_t exposed_memcpy_ns = 0;
  int64_t total_comm_ns = 0;
  int64_t total_memcpy_ns = 0;
  // TraceLens-compatible double arithmetic, in ms.
  double total_ms = 0, busy_ms = 0, idle_ms = 0, computation_ms = 0, exposed_comm_ms = 0,
         exposed_memcpy_ms = 0, total_comm_ms = 0, total_memcpy_ms = 0;
};

struct GpuTimelineOptions {
  // TraceLens's rule; off counts every GPU event (needed for formats without host launches).
  bool require_host_launch = true;
  // Sources (by index) whose GPU events all count under the rule: files with no GPU event
  // linked to a launch (kernel-only formats), read beside files that have them.
  std::vector<bool> all_ops_of_source;
};

bool IsCommunicationKernel(std::string_view name);

// One device of one file: device numbers repeat across files (every rank's process may see its
// GPU as device 0), so a device is named with its source.
struct SourceDevice {
  uint16_t source = 0;
  int32_t device = 0;
};

// `device`: restrict to one device of one source (nullopt: all).
GpuTimeline ComputeGpuTimeline(const Trace& trace, const GpuTimelineOptions& options,
                               std::optional<SourceDevice> device = std::nullopt);

}  // namespace latdoc::trace
