// Copy/compute overlap (RATELProf hidden_transfers: copies > 1e5 ns, share hidden under
// kernels) and cross-stream concurrency (time with kernels on ≥ 2 streams of a device at once;
// RATELProf concurrency, TraceLens overlapping_uids).
#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {

namespace {

// One device's kernels and copies, swept in start order with a little state: each stream's
// kernels merged into an open interval, the copies likewise, and the time up to the last op's
// start measured. Up to an op's start everything is final (later ops start there or after), so
// each op first measures [pos, its start): busy (a stream active), two or more streams active,
// a copy active, and a copy active under a kernel.
class DeviceSweep {
 public:
  void Kernel(int32_t stream, int64_t start, int64_t end) {
    Advance(start);
    auto [it, inserted] = streams_.try_emplace(stream, Span{start, start});
    Extend(it->second, start, end);
  }
  void Copy(int64_t start, int64_t end) {
    Advance(start);
    if (!copy_) copy_ = Span{start, start};
    Extend(*copy_, start, end);
  }
  void Finish() {
    int64_t last = pos_;
    for (const auto& [stream, span] : streams_) last = std::max(last, span.end);
    if (copy_) last = std::max(last, copy_->end);
    Advance(last);
  }
  size_t streams() const { return streams_.size(); }

  int64_t busy_ns = 0, multi_ns = 0, copy_ns = 0, hidden_ns = 0;

 private:
  struct Span {
    int64_t start, end;
  };
  // An interval merged as IntervalSetBuilder merges (touching joins); a later one replaces a
  // closed one, already measured.
  static void Extend(Span& s, int64_t start, int64_t end) {
    if (start <= s.end) {
      s.end = std::max(s.end, end);
    } else {
      s = {start, std::max(start, end)};
    }
  }
  void Advance(int64_t to) {
    if (!started_) {
      pos_ = to;
      started_ = true;
      return;
    }
    if (to <= pos_) return;
    // Only ends fall inside (pos, to): every interval started at or before pos.
    cuts_.assign({pos_, to});
    for (const auto& [stream, span] : streams_) {
      if (span.end > pos_ && span.end < to) cuts_.push_back(span.end);
    }
    if (copy_ && copy_->end > pos_ && copy_->end < to) cuts_.push_back(copy_->end);
    std::sort(cuts_.begin(), cuts_.end());
    for (size_t i = 0; i + 1 < cuts_.size(); ++i) {
      const int64_t a = cuts_[i], len = cuts_[i + 1] - a;
      if (len <= 0) continue;
      int active = 0;
      for (const auto& [stream, span] : streams_) active += span.start <= a && a < span.end;
      const bool copying = copy_ && copy_->start <= a && a < copy_->end;
      if (active >= 1) busy_ns += len;
      if (active >= 2) multi_ns += len;
      if (copying) copy_ns += len;
      if (copying && active >= 1) hidden_ns += len;
    }
    pos_ = to;
  }

  std::map<int32_t, Span> streams_;   // streams with kernels, each with its open interval
  std::optional<Span> copy_;
  int64_t pos_ = 0;
  bool started_ = false;
  std::vector<int64_t> cuts_;
};

}  // namespace

OverlapStats ComputeOverlap(const Trace& trace, const AnalysisOptions& o) {
  OverlapStats s;
  using DevKey = std::pair<uint16_t, int32_t>;
  // Ops of one device come in runs: the last device used is tried before the map (map nodes do
  // not move).
  std::map<DevKey, DeviceSweep> devices;
  DeviceSweep* last = nullptr;
  DevKey last_key;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    const bool copy = op.kind == GpuOpKind::kMemcpy && op.dur_ns >= o.overlap_min_copy_ns;
    if (!copy && op.kind != GpuOpKind::kKernel) return;
    const DevKey key{op.source, op.device};
    if (last == nullptr || key != last_key) {
      last = &devices[key];
      last_key = key;
    }
    if (copy) {
      last->Copy(op.start_ns, op.end_ns());
    } else {
      last->Kernel(op.stream, op.start_ns, op.end_ns());
    }
  });
  for (auto& [dev, d] : devices) {
    d.Finish();
    s.copy_ns += d.copy_ns;
    s.copy_hidden_ns += d.hidden_ns;
    if (d.streams() == 0) continue;
    s.streams_with_kernels += static_cast<int64_t>(d.streams());
    s.max_streams_per_device = std::max(s.max_streams_per_device, static_cast<int>(d.streams()));
    s.kernel_busy_ns += d.busy_ns;
    if (d.streams() >= 2) {
      s.multi_stream_ns += d.multi_ns;
      s.multi_stream_busy_ns += d.busy_ns;
    }
  }
  if (s.copy_ns > 0) s.copy_hidden_share = static_cast<double>(s.copy_hidden_ns) / static_cast<double>(s.copy_ns);
  // Over the devices that have two streams or more: one stream of each of two GPUs (ranks, or
  // tensor parallelism in one file) is no serialisation.
  if (s.multi_stream_busy_ns > 0) {
    s.concurrency_share = static_cast<double>(s.multi_stream_ns) / static_cast<double>(s.multi_stream_busy_ns);
  }
  return s;
}

}  // namespace latdoc::trace
