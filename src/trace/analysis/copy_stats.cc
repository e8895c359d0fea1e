// Copies per direction: count, bytes, time, achieved GB/s; small-copy storms (RATELProf
// coalescable_transfers); pageable copies (CUDA: memory kinds from the trace; ROCm: a
// heuristic, trace-formats.md 3.9 b); synchronous copies (launched by a blocking call).
#include <map>
#include <tuple>

#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {

CopyStats ComputeCopyStats(const Trace& trace, const AnalysisOptions& o, int64_t span_ns) {
  CopyStats s;
  std::map<CopyDirection, CopyDirectionStat> by_dir;
  std::map<CopyDirection, int64_t> bytes_time_ns;   // device time of copies with bytes
  std::map<CopyDirection, int64_t> bytes_sum;
  // Small-copy runs per direction on each device of each file (a storm is one process's copies
  // back to back; copies of other ranks in between do not extend or break it): (length, last end).
  std::map<std::tuple<CopyDirection, uint16_t, int32_t>, std::pair<int64_t, int64_t>> run;
  bool any_kind_known = false;
  for (const GpuOp& op : trace.gpu_ops) {
    if (op.kind == GpuOpKind::kMemset) {
      ++s.memsets;
      s.memset_ns += op.dur_ns;
      continue;
    }
    if (op.kind != GpuOpKind::kMemcpy) continue;
    CopyDirectionStat& d = by_dir[op.direction];
    d.direction = op.direction;
    ++d.count;
    ++s.copies;
    d.total_ns += op.dur_ns;
    if (op.src_kind != MemKind::kUnknown || op.dst_kind != MemKind::kUnknown) any_kind_known = true;
    const bool small = op.bytes >= 0 && op.bytes < o.small_copy_bytes;
    if (op.bytes >= 0) {
      ++s.copies_with_bytes;
      bytes_sum[op.direction] += op.bytes;
      bytes_time_ns[op.direction] += op.dur_ns;
    }
    auto& [len, last_end] = run[{op.direction, op.source, op.device}];
    if (small) {
      ++d.small_count;
      ++s.small_copies;
      len = (len > 0 && op.start_ns - last_end < o.storm_max_gap_ns) ? len + 1 : 1;
      if (len == o.storm_min_run) ++d.storm_runs;
      d.longest_storm = std::max(d.longest_storm, len >= o.storm_min_run ? len : 0);
      last_end = op.end_ns();
    } else {
      len = 0;
    }
    const ApiCall* api = op.api != kNoLink ? &trace.api_calls[op.api] : nullptr;
    if (api != nullptr && api->kind == ApiKind::kMemcpy) ++d.sync_count;
    if (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable) {
      ++d.pageable_count;
    }
  }
  s.pageable_is_heuristic = !any_kind_known && s.copies > 0;
  if (s.pageable_is_heuristic) {
    // ROCm: no memory kind recorded. A host<->device copy whose *Async launch call blocked for
    // most of the copy's device time behaved like a staged (pageable) copy.
    for (const GpuOp& op : trace.gpu_ops) {
      if (op.kind != GpuOpKind::kMemcpy || op.api == kNoLink) continue;
      if (op.direction != CopyDirection::kHtoD && op.direction != CopyDirection::kDtoH) continue;
      const ApiCall& api = trace.api_calls[op.api];
      if (api.kind == ApiKind::kMemcpyAsync && op.dur_ns > 0 &&
          static_cast<double>(api.dur_ns) >= o.rocm_pageable_blocking_share * static_cast<double>(op.dur_ns) &&
          api.end_ns() >= op.end_ns()) {
        ++by_dir[op.direction].pageable_count;
      }
    }
  }
  for (auto& [dir, d] : by_dir) {
    if (bytes_time_ns.count(dir) != 0) {
      d.bytes = bytes_sum[dir];
      if (bytes_time_ns[dir] > 0) {
        d.achieved_gbps = static_cast<double>(bytes_sum[dir]) / static_cast<double>(bytes_time_ns[dir]);
      }
    }
    s.by_direction.push_back(d);
  }
  if (span_ns > 0) s.small_copies_per_s = static_cast<double>(s.small_copies) * 1e9 / static_cast<double>(span_ns);
  return s;
}

}  // namespace latdoc::trace
