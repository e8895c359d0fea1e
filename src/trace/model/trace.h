// The common event model every trace importer fills and every analysis reads.
//
// One Trace holds the events of one or more profiler files (one per rank or process). Times
// are int64 nanoseconds on the profiler's clock; names are interned. GPU work (kernels,
// copies, fills) is linked to the host API call that launched it through `correlation`,
// scoped by `source` (the file index), because correlation ids are per process.
//
// The event tables hold one block in memory and the rest in temporary files (spill_table.h),
// so a trace of any length takes the same memory: importers append rows and issues;
// Finalize() sorts the tables and resolves the links (copying each launch into its ops);
// analyses read a finalized Trace in passes, in start order. Not thread-safe to write; any
// number of threads may read a finalized Trace.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/model/cpu_op_table.h"
#include "trace/model/string_table.h"

namespace latdoc::trace {

enum class GpuOpKind : uint8_t { kKernel, kMemcpy, kMemset };
enum class CopyDirection : uint8_t { kUnknown, kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };
// Host/device memory kind of a copy's ends, as CUDA reports it (ROCm never does).
enum class MemKind : uint8_t { kUnknown, kPageable, kPinned, kDevice, kArray, kManaged };
enum class ApiKind : uint8_t {
  kOther,
  kKernelLaunch,  // cudaLaunchKernel, cuLaunchKernel, hipLaunchKernel, hipExtModuleLaunchKernel...
  kGraphLaunch,   // cudaGraphLaunch, hipGraphLaunch
  kMemcpy,        // synchronous copy call (cudaMemcpy, hipMemcpy, hipMemcpyWithStream)
  kMemcpyAsync,
  kMemset,
  kSync,          // *Synchronize: the host waits (a stream wait event does not)
  kMalloc,        // cudaMalloc*, hipMalloc*, hipHostMalloc, ...
  kFree,
};

std::string_view GpuOpKindName(GpuOpKind k);
std::string_view CopyDirectionName(CopyDirection d);
std::string_view MemKindName(MemKind k);
std::string_view ApiKindName(ApiKind k);

inline constexpr uint32_t kNoLink = UINT32_MAX;
inline constexpr int64_t kNoCorrelation = -1;

// What the analyses need of the host call that launched a GPU op, copied into the op when
// Finalize() links them, so that a pass over the ops in time order needs no lookup.
struct Launch {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  NameId name = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  ApiKind kind = ApiKind::kOther;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

// A kernel, copy or fill executed on a GPU queue/stream.
struct GpuOp {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = kNoCorrelation;
  int64_t bytes = -1;            // -1: not reported
  NameId name = 0;
  int32_t device = 0;
  int32_t stream = 0;            // stream or queue id as the profiler numbers it
  uint16_t source = 0;           // index into Trace::sources
  GpuOpKind kind = GpuOpKind::kKernel;
  CopyDirection direction = CopyDirection::kUnknown;
  MemKind src_kind = MemKind::kUnknown;
  MemKind dst_kind = MemKind::kUnknown;
  uint32_t api = kNoLink;        // index into Trace::api_calls after Finalize()
  Launch launch;                 // that call, when api != kNoLink
  // Kineto's "External id" of a kernel: the id of the framework op (CPU op) that launched it,
  // the key of Trace::op_work. -1: none recorded.
  int64_t external_id = -1;
  int64_t end_ns() const { return start_ns + dur_ns; }
  bool linked() const { return api != kNoLink; }
};

// The element type of a framework op's work, as far as a roofline needs it.
enum class WorkDtype : uint8_t { kUnknown, kFp64, kFp32, kBf16, kFp16, kFp8, kInt };
enum class WorkKind : uint8_t { kGemm, kAttention, kElementwise };
std::string_view WorkDtypeName(WorkDtype d);
std::string_view WorkKindName(WorkKind k);

// The work of one framework op (a Kineto CPU op with record_shapes=True), computed from its
// input shapes and types when the trace is read (importers/common/op_work.h): the FLOPs it
// must do and the bytes it must move at least (each input read once, the output written
// once). Its kernels carry its external_id.
struct OpWork {
  int64_t external_id = -1;
  double flops = 0;
  double bytes = 0;
  NameId op = 0;                 // "aten::mm"
  uint16_t source = 0;
  WorkDtype dtype = WorkDtype::kUnknown;
  WorkKind kind = WorkKind::kGemm;
};

// A host runtime/driver API call (the launching side).
struct ApiCall {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = kNoCorrelation;
  NameId name = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  uint16_t source = 0;
  ApiKind kind = ApiKind::kOther;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

// One row of a profiler's own summary table (rocprof `*.stats.csv`, rocprofv3 `*_stats.csv`):
// aggregates without per-event times, kept apart from the event tables.
enum class AggregateKind : uint8_t { kKernel, kApi, kCopy };
struct AggregateRow {
  NameId name = 0;
  AggregateKind kind = AggregateKind::kKernel;
  int64_t calls = 0;
  int64_t total_ns = 0;
  std::optional<int64_t> min_ns, max_ns;
  uint16_t source = 0;
};

struct DeviceInfo {
  uint16_t source = 0;
  int32_t device = 0;
  std::string name;                // "NVIDIA H200", "AMD Instinct MI300X VF"; may be empty
  std::string arch;                // "sm90", "gfx942"; empty when unknown
};

// Bad records of one file: counted per reason, with the first few places they occurred.
struct ImportIssues {
  struct Example {
    std::string where;             // "byte 1834221", "row 17", "kernels row id=12"
    std::string what;
  };
  static constexpr size_t kMaxExamples = 10;
  std::map<std::string, int64_t> count_by_reason;
  std::vector<Example> examples;
  int64_t total() const;
  void Add(std::string_view reason, std::string where, std::string what = "");
};

struct SourceFile {
  std::string path;
  std::string format;              // "kineto", "rocpd", "nsys", "rocprof_v1", "rocprofv3_csv"...
  int64_t events_read = 0;         // records accepted from this file
  ImportIssues issues;
  // Set when the file could not be read to its end (truncated gzip, JSON cut short): the
  // events before the break are kept.
  std::optional<std::string> fatal_error;
  // The process's place in a distributed job, where the profiler recorded it (Kineto's
  // top-level "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2, ...}).
  std::optional<int32_t> rank, world_size;
  // The wall-clock time (Unix ns) of the file's timestamp zero, where the format records it:
  // Kineto's top-level "baseTimeNanoseconds" (its ts are microseconds after it; libkineto,
  // output_json.cpp, transToRelativeTime); an Nsight Systems export's
  // TARGET_INFO_SESSION_START_TIME.utcEpochNs (its times are ns after the capture's start).
  // Lets a diagnosis tell whether a trace was recorded while it measured the load.
  std::optional<int64_t> wall_clock_base_ns;
};

// The wall-clock window (Unix ns, first start to last end) of the GPU work of the files that
// record their wall clock (SourceFile::wall_clock_base_ns); nullopt when none does.
struct WallClockWindow {
  int64_t start_ns = 0, end_ns = 0;
};
class Trace;
std::optional<WallClockWindow> GpuWorkWallClockWindow(const Trace& trace);

// Event tables: one block in memory, the rest in a temporary file (spill_table.h).
class Trace {
 public:
  Trace() = default;
  // Tables of `block_rows` rows per block (tests: small blocks make every pass read the file).
  explicit Trace(size_t block_rows)
      : gpu_ops(block_rows), api_calls(block_rows), cpu_ops(block_rows) {}

  // Rows a block for a working table of T (an importer's staging, a sort) that spills as this
  // trace's tables do: T's own default, or the small blocks a test gave the trace.
  template <typename T>
  size_t BlockRowsFor() const {
    return gpu_ops.block_rows() == SpillTable<GpuOp>::kDefaultBlockRows
               ? SpillTable<T>::kDefaultBlockRows
               : gpu_ops.block_rows();
  }

  StringTable names;
  SpillTable<GpuOp> gpu_ops;       // by start once finalized
  SpillTable<ApiCall> api_calls;   // by start once finalized
  CpuOpTable cpu_ops;              // in the order added
  std::vector<AggregateRow> aggregates;
  std::vector<OpWork> op_work;     // in the order added
  std::vector<DeviceInfo> devices;
  std::vector<SourceFile> sources;

  // Adds a source file and returns its index (the `source` of its events).
  uint16_t AddSource(std::string path, std::string format);

  // Sorts gpu_ops and api_calls by start time, stably (cpu_ops stay in the order added), and
  // links each GPU op to the first API call with the same (source, correlation): its `api` and
  // `launch`. Call once, after every importer has run. Tables all in memory are sorted there
  // and linked through an index; spilled ones through external sorts and a merge join, in
  // memory of a few blocks. Throws SpillReadError.
  void Finalize();

  std::string_view Name(NameId id) const { return names.Get(id); }
  const DeviceInfo* FindDevice(uint16_t source, int32_t device) const;
};

// Classifies a runtime/driver API name (version suffixes such as "_v7000" are ignored).
ApiKind ClassifyApi(std::string_view name);

// Everything in `trace`, one line per name, event, device and source (with its bad-record
// counts and examples), in storage order: for tests that compare two ways of importing.
std::string DumpTrace(const Trace& trace);

}  // namespace latdoc::trace
