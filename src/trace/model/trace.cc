#include "trace/model/trace.h"

#include <algorithm>
#include <future>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

namespace latdoc::trace {

std::string_view GpuOpKindName(GpuOpKind k) {
  switch (k) {
    case GpuOpKind::kKernel: return "kernel";
    case GpuOpKind::kMemcpy: return "memcpy";
    case GpuOpKind::kMemset: return "memset";
  }
  return "?";
}

std::string_view CopyDirectionName(CopyDirection d) {
  switch (d) {
    case CopyDirection::kUnknown: return "unknown";
    case CopyDirection::kHtoD: return "HtoD";
    case CopyDirection::kDtoH: return "DtoH";
    case CopyDirection::kDtoD: return "DtoD";
    case CopyDirection::kHtoH: return "HtoH";
    case CopyDirection::kPtoP: return "PtoP";
  }
  return "?";
}

std::string_view MemKindName(MemKind k) {
  switch (k) {
    case MemKind::kUnknown: return "unknown";
    case MemKind::kPageable: return "pageable";
    case MemKind::kPinned: return "pinned";
    case MemKind::kDevice: return "device";
    case MemKind::kArray: return "array";
    case MemKind::kManaged: return "managed";
  }
  return "?";
}

std::string_view WorkDtypeName(WorkDtype d) {
  switch (d) {
    case WorkDtype::kUnknown: return "unknown";
    case WorkDtype::kFp64: return "fp64";
    case WorkDtype::kFp32: return "fp32";
    case WorkDtype::kBf16: return "bf16";
    case WorkDtype::kFp16: return "fp16";
    case WorkDtype::kFp8: return "fp8";
    case WorkDtype::kInt: return "int";
  }
  return "?";
}

std::string_view WorkKindName(WorkKind k) {
  switch (k) {
    case WorkKind::kGemm: return "gemm";
    case WorkKind::kAttention: return "attention";
    case WorkKind::kElementwise: return "elementwise";
  }
  return "?";
}

std::string_view ApiKindName(ApiKind k) {
  switch (k) {
    case ApiKind::kOther: return "other";
    case ApiKind::kKernelLaunch: return "kernel_launch";
    case ApiKind::kGraphLaunch: return "graph_launch";
    case ApiKind::kMemcpy: return "memcpy";
    case ApiKind::kMemcpyAsync: return "memcpy_async";
    case ApiKind::kMemset: return "memset";
    case ApiKind::kSync: return "sync";
    case ApiKind::kMalloc: return "malloc";
    case ApiKind::kFree: return "free";
  }
  return "?";
}

int64_t ImportIssues::total() const {
  int64_t n = 0;
  for (const auto& [reason, count] : count_by_reason) n += count;
  return n;
}

void ImportIssues::Add(std::string_view reason, std::string where, std::string what) {
  ++count_by_reason[std::string(reason)];
  if (examples.size() < kMaxExamples) {
    std::string text(reason);
    if (!what.empty()) text += ": " + what;
    examples.push_back({std::move(where), std::move(text)});
  }
}

uint16_t Trace::AddSource(std::string path, std::string format) {
  SourceFile s;
  s.path = std::move(path);
  s.format = std::move(format);
  sources.push_back(std::move(s));
  return static_cast<uint16_t>(sources.size() - 1);
}

const DeviceInfo* Trace::FindDevice(uint16_t source, int32_t device) const {
  for (const auto& d : devices) {
    if (d.source == source && d.device == device) return &d;
  }
  return nullptr;
}

namespace {

// (source, correlation) -> the first API call with it (in api_calls order). A flat array per
// source when the ids are dense enough (max - min summed over sources <= 2n + 4096), a hash map
// per source otherwise.
class CorrelationIndex {
 public:
  explicit CorrelationIndex(const std::vector<ApiCall>& calls) {
    struct Range {
      int64_t lo = INT64_MAX, hi = INT64_MIN;
    };
    std::vector<Range> ranges;
    size_t keyed = 0;
    for (const ApiCall& a : calls) {
      if (a.correlation == kNoCorrelation) continue;
      ++keyed;
      if (a.source >= ranges.size()) ranges.resize(size_t{a.source} + 1);
      Range& r = ranges[a.source];
      r.lo = std::min(r.lo, a.correlation);
      r.hi = std::max(r.hi, a.correlation);
    }
    // Spans in unsigned arithmetic: hi - lo of any two int64 fits in a uint64.
    uint64_t slots = 0;
    bool flat = true;
    for (const Range& r : ranges) {
      if (r.lo > r.hi) continue;
      const uint64_t span = static_cast<uint64_t>(r.hi) - static_cast<uint64_t>(r.lo);
      if (span > 2 * uint64_t{keyed} + 4096) flat = false;
      slots += span + 1;
    }
    flat = flat && slots <= 2 * uint64_t{keyed} + 4096;
    if (flat) {
      tables_.resize(ranges.size());
      size_t offset = 0;
      for (size_t s = 0; s < ranges.size(); ++s) {
        if (ranges[s].lo > ranges[s].hi) continue;
        tables_[s] = {ranges[s].lo, ranges[s].hi, offset};
        offset += static_cast<size_t>(static_cast<uint64_t>(ranges[s].hi) -
                                      static_cast<uint64_t>(ranges[s].lo)) + 1;
      }
      first_.assign(offset, kNoLink);
      for (uint32_t i = 0; i < calls.size(); ++i) {
        const ApiCall& a = calls[i];
        if (a.correlation == kNoCorrelation) continue;
        uint32_t& slot = first_[Slot(tables_[a.source], a.correlation)];
        if (slot == kNoLink) slot = i;
      }
      return;
    }
    use_map_ = true;
    by_source_.resize(ranges.size());
    for (uint32_t i = 0; i < calls.size(); ++i) {
      const ApiCall& a = calls[i];
      if (a.correlation == kNoCorrelation) continue;
      by_source_[a.source].emplace(a.correlation, i);  // keeps the first
    }
  }

  // The first API call of `source` with `correlation`, or kNoLink.
  uint32_t Find(uint16_t source, int64_t correlation) const {
    if (use_map_) {
      if (source >= by_source_.size()) return kNoLink;
      const auto& m = by_source_[source];
      auto it = m.find(correlation);
      return it == m.end() ? kNoLink : it->second;
    }
    if (source >= tables_.size()) return kNoLink;
    const Table& t = tables_[source];
    if (correlation < t.lo || correlation > t.hi) return kNoLink;
    return first_[Slot(t, correlation)];
  }

 private:
  struct Table {
    int64_t lo = 1, hi = 0;   // empty
    size_t offset = 0;
  };
  // REQUIRES: t.lo <= correlation <= t.hi.
  static size_t Slot(const Table& t, int64_t correlation) {
    return t.offset + static_cast<size_t>(static_cast<uint64_t>(correlation) -
                                          static_cast<uint64_t>(t.lo));
  }

  bool use_map_ = false;
  std::vector<Table> tables_;
  std::vector<uint32_t> first_;
  std::vector<std::unordered_map<int64_t, uint32_t>> by_source_;
};

Launch LaunchOf(const ApiCall& a) {
  Launch l;
  l.start_ns = a.start_ns;
  l.dur_ns = a.dur_ns;
  l.name = a.name;
  l.pid = a.pid;
  l.tid = a.tid;
  l.kind = a.kind;
  return l;
}

// Start order, stably; the order every analysis reads the tables in.
struct ByStart {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns < b.dur_ns;
  }
};

// The tables of a trace whose tables are all in memory: sorted there, linked through an index.
void LinkInMemory(std::vector<GpuOp>& ops, std::vector<ApiCall>& calls, std::launch policy) {
  // GPU ops sort on a second thread (when there is a second core) while this one sorts the API
  // calls and indexes them.
  std::future<void> gpu_sorted = std::async(policy, [&ops] { StableSortRuns(ops, ByStart{}); });
  StableSortRuns(calls, ByStart{});
  const CorrelationIndex index(calls);
  gpu_sorted.get();
  for (GpuOp& op : ops) {
    op.api = op.correlation == kNoCorrelation ? kNoLink : index.Find(op.source, op.correlation);
    op.launch = op.api == kNoLink ? Launch{} : LaunchOf(calls[op.api]);
  }
}

// The same for spilled tables, in a few blocks of memory: the calls with a correlation, sorted
// by (source, correlation), and the ops, sorted the same way, are merged; then the ops go back
// to start order (ties in the order they were added, as the stable in-memory sort leaves them).
void LinkSpilled(SpillTable<GpuOp>& ops, SpillTable<ApiCall>& calls, std::launch policy) {
  struct KeyedCall {
    int64_t correlation;
    uint32_t pos;        // in `calls` once sorted
    uint16_t source;
    Launch launch;
  };
  struct SeqOp {
    GpuOp op;
    uint64_t seq;        // position in the table as added
  };
  auto key_less = [](uint16_t sa, int64_t ca, uint16_t sb, int64_t cb) { return sa != sb ? sa < sb : ca < cb; };
  const size_t block = ops.block_rows();
  std::future<SpillTable<KeyedCall>> keyed_calls = std::async(policy, [&calls, key_less] {
    calls = SortTable(std::move(calls), ByStart{});
    SpillTable<KeyedCall> keyed(calls.block_rows());
    uint32_t pos = 0;
    calls.ForEach([&](const ApiCall& a) {
      if (a.correlation != kNoCorrelation) keyed.push_back({a.correlation, pos, a.source, LaunchOf(a)});
      ++pos;
    });
    // Stable: the first call of a key (in start order) comes first.
    return SortTable(std::move(keyed), [key_less](const KeyedCall& a, const KeyedCall& b) {
      return key_less(a.source, a.correlation, b.source, b.correlation);
    });
  });
  SpillTable<SeqOp> by_key(block);
  {
    uint64_t seq = 0;
    ops.ForEach([&](const GpuOp& op) { by_key.push_back({op, seq++}); });
    ops.clear();
    by_key = SortTable(std::move(by_key), [key_less](const SeqOp& a, const SeqOp& b) {
      return key_less(a.op.source, a.op.correlation, b.op.source, b.op.correlation);
    });
  }
  const SpillTable<KeyedCall> keyed = keyed_calls.get();
  SpillTable<SeqOp> linked(block);
  spill::RunReader<KeyedCall> call(keyed, 0, keyed.size(), 4096);
  by_key.ForEach([&](SeqOp s) {
    s.op.api = kNoLink;
    s.op.launch = Launch{};
    if (s.op.correlation != kNoCorrelation) {
      while (!call.done() && key_less(call.head().source, call.head().correlation, s.op.source, s.op.correlation)) {
        call.Next();
      }
      if (!call.done() && call.head().source == s.op.source && call.head().correlation == s.op.correlation) {
        s.op.api = call.head().pos;
        s.op.launch = call.head().launch;
      }
    }
    linked.push_back(s);
  });
  by_key.clear();
  linked = SortTable(std::move(linked), [](const SeqOp& a, const SeqOp& b) {
    if (a.op.start_ns != b.op.start_ns) return a.op.start_ns < b.op.start_ns;
    if (a.op.dur_ns != b.op.dur_ns) return a.op.dur_ns < b.op.dur_ns;
    return a.seq < b.seq;
  });
  ops = SpillTable<GpuOp>(block);
  linked.ForEach([&](const SeqOp& s) { ops.push_back(s.op); });
}

}  // namespace

void Trace::Finalize() {
  const auto policy = std::thread::hardware_concurrency() > 1
                          ? std::launch::async | std::launch::deferred
                          : std::launch::deferred;
  std::vector<GpuOp>* ops = gpu_ops.unspilled();
  std::vector<ApiCall>* calls = api_calls.unspilled();
  if (ops != nullptr && calls != nullptr) {
    LinkInMemory(*ops, *calls, policy);
  } else {
    LinkSpilled(gpu_ops, api_calls, policy);
  }
}

namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool Contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string_view StripVersionSuffix(std::string_view name) {
  const size_t u = name.rfind("_v");
  if (u == std::string_view::npos || u + 2 >= name.size()) return name;
  for (size_t i = u + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, u);
}

}  // namespace

ApiKind ClassifyApi(std::string_view raw) {
  const std::string_view name = StripVersionSuffix(raw);
  const bool cuda = StartsWith(name, "cuda") || StartsWith(name, "cu");
  const bool hip = StartsWith(name, "hip");
  if (!cuda && !hip) return ApiKind::kOther;
  if (Contains(name, "GraphLaunch")) return ApiKind::kGraphLaunch;
  if (Contains(name, "LaunchKernel") || Contains(name, "LaunchCooperativeKernel") ||
      name == "cuLaunchKernelEx" || name == "hipModuleLaunchKernel") {
    return ApiKind::kKernelLaunch;
  }
  // A stream waiting on an event does not block the host: not a synchronisation here.
  if (Contains(name, "Synchronize")) return ApiKind::kSync;
  if (Contains(name, "Memcpy") || Contains(name, "MemcpyHtoD") || Contains(name, "MemcpyDtoH")) {
    return Contains(name, "Async") ? ApiKind::kMemcpyAsync : ApiKind::kMemcpy;
  }
  if (Contains(name, "Memset")) return ApiKind::kMemset;
  if (Contains(name, "Malloc") || Contains(name, "MemAlloc") || Contains(name, "HostRegister") ||
      Contains(name, "HostAlloc")) {
    return ApiKind::kMalloc;
  }
  if (Contains(name, "Free") || Contains(name, "HostUnregister")) return ApiKind::kFree;
  return ApiKind::kOther;
}

std::string DumpTrace(const Trace& t) {
  std::string out;
  for (size_t i = 0; i < t.names.size(); ++i) {
    out += fmt::format("name {} {}\n", i, t.names.Get(static_cast<NameId>(i)));
  }
  t.gpu_ops.ForEach([&out](const GpuOp& o) {
    out += fmt::format("gpu {} {} {} {} {} {} {} {} {} {} {} {} {} {}\n", o.start_ns, o.dur_ns, o.correlation,
                       o.bytes, o.name, o.device, o.stream, o.source, GpuOpKindName(o.kind),
                       CopyDirectionName(o.direction), MemKindName(o.src_kind), MemKindName(o.dst_kind), o.api,
                       o.external_id);
  });
  t.api_calls.ForEach([&out](const ApiCall& a) {
    out += fmt::format("api {} {} {} {} {} {} {} {}\n", a.start_ns, a.dur_ns, a.correlation, a.name, a.pid,
                       a.tid, a.source, ApiKindName(a.kind));
  });
  t.cpu_ops.ForEach([&out](const CpuOp& c) {
    out += fmt::format("cpu {} {} {} {} {} {} {}\n", c.start_ns, c.dur_ns, c.name, c.pid, c.tid, c.source,
                       static_cast<int>(c.kind));
  });
  for (const OpWork& w : t.op_work) {
    out += fmt::format("work {} {} {} {} {} {} {}\n", w.source, w.external_id, w.op, WorkKindName(w.kind),
                       WorkDtypeName(w.dtype), w.flops, w.bytes);
  }
  for (const DeviceInfo& d : t.devices) {
    out += fmt::format("device {} {} {} {}\n", d.source, d.device, d.name, d.arch);
  }
  for (const SourceFile& s : t.sources) {
    out += fmt::format("source {} {} {} {} {} rank {} of {}\n", s.path, s.format, s.events_read,
                       s.fatal_error.value_or("-"), s.issues.total(), s.rank.value_or(-1), s.world_size.value_or(-1));
    for (const auto& [reason, n] : s.issues.count_by_reason) out += fmt::format("  issue {} {}\n", reason, n);
    for (const auto& e : s.issues.examples) out += fmt::format("  example {} | {}\n", e.where, e.what);
  }
  return out;
}

std::optional<WallClockWindow> GpuWorkWallClockWindow(const Trace& trace) {
  std::vector<bool> on_wall_clock(trace.sources.size());
  bool any = false;
  for (size_t i = 0; i < trace.sources.size(); ++i)
    any |= on_wall_clock[i] = trace.sources[i].wall_clock_base_ns.has_value();
  if (!any) return std::nullopt;
  std::optional<WallClockWindow> w;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (op.source >= on_wall_clock.size() || !on_wall_clock[op.source]) return;
    const int64_t base = *trace.sources[op.source].wall_clock_base_ns;
    const int64_t start = base + op.start_ns, end = start + op.dur_ns;
    if (!w) w = WallClockWindow{start, end};
    w->start_ns = std::min(w->start_ns, start);
    w->end_ns = std::max(w->end_ns, end);
  });
  return w;
}

}  // namespace latdoc::trace
