// Copies per direction: count, bytes, time, achieved GB/s; small-copy storms (RATELProf
// coalescable_transfers); pageable copies (CUDA: memory kinds from the trace; ROCm: a
// heuristic after RATELProf's hip_memcpy_async report); synchronous copies (launched by a
// blocking call).
#include <algorithm>
#include <map>
#include <tuple>

#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {

namespace {

using Spans = std::vector<std::pair<int64_t, int64_t>>;  // (first start, last end) per source

// Each file's span, host and GPU: rates are per file, over its own span (ranks may run on
// different clocks, or one after another).
Spans SourceSpans(const Trace& trace) {
  Spans spans(trace.sources.size(), {INT64_MAX, INT64_MIN});
  auto widen = [&spans](uint16_t source, int64_t start, int64_t end) {
    if (source >= spans.size()) spans.resize(size_t{source} + 1, {INT64_MAX, INT64_MIN});
    spans[source].first = std::min(spans[source].first, start);
    spans[source].second = std::max(spans[source].second, end);
  };
  trace.gpu_ops.ForEach([&](const GpuOp& op) { widen(op.source, op.start_ns, op.end_ns()); });
  trace.api_calls.ForEach([&](const ApiCall& a) { widen(a.source, a.start_ns, a.end_ns()); });
  return spans;
}

// Small copies per second: per direction, the highest of any file's rate; overall, the highest
// file's rate of all its small copies (0 where some file has a span but none).
void SmallCopyRates(const std::map<std::pair<CopyDirection, uint16_t>, int64_t>& small_of_source,
                    const Spans& spans, std::map<CopyDirection, CopyDirectionStat>& by_dir,
                    CopyStats& s) {
  std::map<uint16_t, int64_t> small_per_source;
  for (const auto& [key, count] : small_of_source) {
    const auto& [first, last] = spans[key.second];
    small_per_source[key.second] += count;
    if (last <= first) continue;
    const double rate = static_cast<double>(count) * 1e9 / static_cast<double>(last - first);
    CopyDirectionStat& d = by_dir[key.first];
    d.small_per_s = std::max(d.small_per_s.value_or(0), rate);
  }
  for (const auto& [first, last] : spans) {
    if (last > first) s.small_copies_per_s = 0.0;  // none, over a span that exists
  }
  for (const auto& [source, count] : small_per_source) {
    const auto& [first, last] = spans[source];
    if (last <= first) continue;
    const double rate = static_cast<double>(count) * 1e9 / static_cast<double>(last - first);
    s.small_copies_per_s = std::max(s.small_copies_per_s.value_or(0), rate);
  }
}

// Each direction's bytes and achieved rate, into s.by_direction in direction order.
void FinishDirections(std::map<CopyDirection, CopyDirectionStat>& by_dir,
                      std::map<CopyDirection, int64_t>& bytes_sum,
                      std::map<CopyDirection, int64_t>& rate_bytes,
                      std::map<CopyDirection, int64_t>& rate_time_ns, CopyStats& s) {
  for (auto& [dir, d] : by_dir) {
    if (bytes_sum.count(dir) != 0) d.bytes = bytes_sum[dir];
    if (rate_time_ns[dir] > 0) {
      d.achieved_gbps =
          static_cast<double>(rate_bytes[dir]) / static_cast<double>(rate_time_ns[dir]);
    }
    s.by_direction.push_back(d);
  }
}

}  // namespace

CopyStats ComputeCopyStats(const Trace& trace, const AnalysisOptions& o) {
  CopyStats s;
  const Spans spans = SourceSpans(trace);
  std::map<std::pair<CopyDirection, uint16_t>, int64_t> small_of_source;
  std::map<CopyDirection, CopyDirectionStat> by_dir;
  std::map<CopyDirection, int64_t> bytes_sum;       // every copy that reported its size
  // Bytes and device time of the copies that reported a size and took time: a copy recorded
  // with no duration (a clock's resolution) would add bytes moved in no time to the rate.
  std::map<CopyDirection, int64_t> rate_bytes, rate_time_ns;
  // Small-copy runs per direction on each device of each file (a storm is one process's copies
  // back to back; copies of other ranks in between do not extend or break it): (length, last end).
  std::map<std::tuple<CopyDirection, uint16_t, int32_t>, std::pair<int64_t, int64_t>> run;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (op.kind == GpuOpKind::kMemset) {
      ++s.memsets;
      s.memset_ns += op.dur_ns;
      return;
    }
    if (op.kind != GpuOpKind::kMemcpy) return;
    CopyDirectionStat& d = by_dir[op.direction];
    d.direction = op.direction;
    ++d.count;
    ++s.copies;
    d.total_ns += op.dur_ns;
    const bool small = op.bytes >= 0 && op.bytes < o.small_copy_bytes;
    if (op.bytes >= 0) {
      ++s.copies_with_bytes;
      ++d.bytes_count;
      bytes_sum[op.direction] += op.bytes;
      if (op.dur_ns > 0) {
        rate_bytes[op.direction] += op.bytes;
        rate_time_ns[op.direction] += op.dur_ns;
      }
    }
    auto& [len, last_end] = run[{op.direction, op.source, op.device}];
    if (small) {
      ++d.small_count;
      ++s.small_copies;
      ++small_of_source[{op.direction, op.source}];
      len = (len > 0 && op.start_ns - last_end < o.storm_max_gap_ns) ? len + 1 : 1;
      if (len == o.storm_min_run) ++d.storm_runs;
      d.longest_storm = std::max(d.longest_storm, len >= o.storm_min_run ? len : 0);
      last_end = op.end_ns();
    } else {
      len = 0;
    }
    const Launch* api = op.linked() ? &op.launch : nullptr;
    const bool sync_call = api != nullptr && api->kind == ApiKind::kMemcpy;
    if (sync_call) ++d.sync_count;
    // Pageable as nsys's cuda_memcpy_async rule counts them: a copy the caller meant to be
    // asynchronous that the staging made synchronous. One from a synchronous call (counted just
    // above) blocks the host either way.
    if ((op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable) && !sync_call) {
      ++d.pageable_count;
      d.pageable_ns += op.dur_ns;
      return;
    }
    // Whether the host end is pageable is known only from CUDA's kinds (Pageable, Pinned). ROCm
    // records none (Kineto on ROCm names the ends "Host -> Device", which says no more): a
    // host<->device copy whose *Async launch call blocked for most of the copy's device time
    // behaved like a staged (pageable) copy.
    const MemKind host_end = op.direction == CopyDirection::kHtoD   ? op.src_kind
                             : op.direction == CopyDirection::kDtoH ? op.dst_kind
                                                                    : MemKind::kPinned;
    if (host_end != MemKind::kUnknown) return;  // CUDA said what it was (pinned, managed...)
    s.pageable_is_heuristic = true;
    if (api != nullptr && api->kind == ApiKind::kMemcpyAsync && op.dur_ns > 0 &&
        static_cast<double>(api->dur_ns) >= o.rocm_pageable_blocking_share * static_cast<double>(op.dur_ns) &&
        api->end_ns() >= op.end_ns()) {
      ++d.pageable_count;
      d.pageable_ns += op.dur_ns;
    }
  });
  SmallCopyRates(small_of_source, spans, by_dir, s);
  FinishDirections(by_dir, bytes_sum, rate_bytes, rate_time_ns, s);
  return s;
}

}  // namespace latdoc::trace
