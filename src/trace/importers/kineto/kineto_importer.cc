#include "trace/importers/kineto/kineto_importer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "base/file_util.h"
#include "base/read_ahead.h"
#include "trace/importers/kineto/json_event_scanner.h"
#include "trace/importers/kineto/kineto_event.h"
#include "trace/importers/common/gpu_names.h"
#include "trace/importers/common/op_work.h"

namespace latdoc::trace {
namespace od = simdjson::ondemand;

std::optional<int64_t> ParseMicrosToNs(std::string_view t) {
  // 2^62 ns (146 years) at most either way, so that a start plus a duration, or an end less a
  // start, never overflows; an epoch time in microseconds is about 1.8e15 today.
  constexpr int64_t kMaxMicros = (int64_t{1} << 62) / 1000;
  if (t.empty()) return std::nullopt;
  size_t i = 0;
  bool neg = false;
  if (t[0] == '-') {
    neg = true;
    i = 1;
  }
  int64_t whole = 0;
  size_t digits = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    if (whole > (INT64_MAX / 10 - 10) / 1000) return std::nullopt;
    whole = whole * 10 + (t[i] - '0');
    ++i;
    ++digits;
  }
  int64_t frac_ns = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    int n = 0;
    bool round_up = false;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (n < 3) {
        frac_ns = frac_ns * 10 + (t[i] - '0');
      } else if (n == 3) {
        round_up = t[i] >= '5';
      }
      ++n;
      ++i;
      ++digits;
    }
    for (int k = n; k < 3; ++k) frac_ns *= 10;
    if (round_up) ++frac_ns;
  }
  if (digits == 0) return std::nullopt;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    // Rare (exponent form): fall back to double arithmetic.
    char* end = nullptr;
    const std::string s(t);
    const double us = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !(std::fabs(us) <= kMaxMicros)) return std::nullopt;
    return static_cast<int64_t>(std::llround(us * 1000.0));
  }
  if (i != t.size()) return std::nullopt;
  const int64_t ns = whole * 1000 + frac_ns;
  if (ns > kMaxMicros * 1000) return std::nullopt;
  return neg ? -ns : ns;
}

namespace {

// Sample events (Kineto, CUDA; ROCm differs as noted):
//   {"ph": "X", "cat": "kernel", "name": "void at::native::...(...)", "pid": 0, "tid": 7,
//    "ts": 5139252745624.543, "dur": 2.272, "args": {"External id": 17, "device": 0,
//    "stream": 7, "correlation": 38, "grid": [1, 1, 1], "block": [128, 1, 1], ...}}
//   {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
//    "tid": 7, "ts": ..., "dur": 0.736, "args": {"device": 0, "stream": 7,
//    "correlation": 15, "bytes": 1024, "memory bandwidth (GB/s)": 1.39}}
//      ROCm 6: "Memcpy HtoD (Host -> Device)", args {"kind": "HtoD"} and no bytes.
//   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 488, "tid": 488,
//    "ts": ..., "dur": 11.4, "args": {"External id": 7, "cbid": 317, "correlation": 13}}
//      ROCm: the HIP runtime also uses cat "cuda_runtime" ("hipLaunchKernel").
//   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 488, "tid": 488, ...}
// Fields: ts/dur are microseconds with 3 decimals (ns resolution); pid/tid of GPU events are
// the device and stream; "correlation" links a runtime call to the GPU work it launched.
// Flow ("s"/"f"), metadata ("M"), instant ("i") and counter ("C") events are not needed: the
// correlation is in args.
// "Memcpy HtoD (Pageable -> Device)" -> direction and memory kinds.
void ParseMemcpyName(std::string_view name, CopyDirection& dir, MemKind& src, MemKind& dst) {
  auto kind_of = [](std::string_view s) {
    if (s == "Pageable") return MemKind::kPageable;
    if (s == "Pinned") return MemKind::kPinned;
    if (s == "Device") return MemKind::kDevice;
    if (s == "Array") return MemKind::kArray;
    if (s == "Managed") return MemKind::kManaged;
    return MemKind::kUnknown;
  };
  dir = ParseCopyDirection(name);
  const size_t open = name.find('(');
  const size_t arrow = name.find(" -> ");
  const size_t close = name.rfind(')');
  if (open != std::string_view::npos && arrow != std::string_view::npos &&
      close != std::string_view::npos && open < arrow && arrow < close) {
    src = kind_of(name.substr(open + 1, arrow - open - 1));
    dst = kind_of(name.substr(arrow + 4, close - arrow - 4));
  }
}

class KinetoReader {
 public:
  KinetoReader(Trace& trace, uint16_t source) : trace_(trace), source_(source) {}

  void OnEvent(std::string_view text, uint64_t offset) {
    // Fast path: Kineto writes "ph" first; flows, instants, counters and metadata are not
    // needed, so skip them without parsing (about a third of a typical trace).
    if (text.size() > 12 && text.substr(0, 8) == "{\"ph\": \"" && text[9] == '"' && text[8] != 'X') {
      return;
    }
    KinetoEventFields f;
    if (const char* why = general_.Parse(text, f)) {
      Bad(why, offset);
      return;
    }
    Store(f, offset);
  }

  void OnValue(std::string_view key, std::string_view value) {
    if (key == "deviceProperties") {
      device_props_.assign(value);
    } else if (key == "hip_runtime_version" || key == "roctracer_version") {
      rocm_ = true;
    } else if (key == "distributedInfo") {
      distributed_info_.assign(value);
    } else if (key == "baseTimeNanoseconds") {
      int64_t ns = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ns);
      if (ec == std::errc() && end == value.data() + value.size() && ns > 0) {
        source().wall_clock_base_ns = ns;
      } else {
        source().issues.Add("bad baseTimeNanoseconds", "top level", "not a positive integer");
      }
    }
  }

  // Sample (PyTorch's profiler, torch/profiler/profiler.py _get_distributed_info):
  //   "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2, "pg_count": 1,
  //                       "pg_config": [...], "nccl_version": "2.21.5"}
  void FinishDistributedInfo() {
    if (distributed_info_.empty()) return;
    simdjson::padded_string json(distributed_info_);
    od::parser parser;
    od::document doc;
    od::object o;
    if (parser.iterate(json).get(doc) || doc.get_object().get(o)) {
      source().issues.Add("bad distributedInfo", "top level", "not an object");
      return;
    }
    for (auto field : o) {
      std::string_view k;
      od::value v;
      if (field.unescaped_key().get(k) || field.value().get(v)) break;
      if (k == "rank" || k == "world_size") {
        const std::optional<int64_t> i = JsonIntValue(v);
        if (!i || *i < 0 || *i > INT32_MAX) {
          source().issues.Add("bad distributedInfo", "top level", fmt::format("{} is not a rank number", k));
          continue;
        }
        (k == "rank" ? source().rank : source().world_size) = static_cast<int32_t>(*i);
      }
    }
  }

  void FinishDevices() {
    if (device_props_.empty()) return;
    simdjson::padded_string json(device_props_);
    od::parser parser;
    od::document doc;
    if (parser.iterate(json).get(doc)) return;
    od::array arr;
    if (doc.get_array().get(arr)) return;
    for (auto elem : arr) {
      od::object o;
      if (elem.get_object().get(o)) continue;
      DeviceInfo d;
      d.source = source_;
      int64_t major = -1, minor = -1;
      for (auto field : o) {
        std::string_view k;
        if (field.unescaped_key().get(k)) break;
        od::value v;
        if (field.value().get(v)) break;
        if (k == "id") {
          if (auto i = JsonIntValue(v)) d.device = static_cast<int32_t>(*i);
        } else if (k == "name") {
          std::string_view s;
          if (!v.get_string().get(s)) d.name = std::string(s);
        } else if (k == "computeMajor") {
          major = JsonIntValue(v).value_or(-1);
        } else if (k == "computeMinor") {
          minor = JsonIntValue(v).value_or(-1);
        }
      }
      const bool amd = rocm_ || d.name.find("AMD") != std::string::npos;
      d.arch = ArchFromComputeCapability(amd, major, minor);
      trace_.devices.push_back(std::move(d));
    }
  }

  SourceFile& source() { return trace_.sources[source_]; }

  // An event the one-pass reader (kineto_event.h) has read.
  void OnFastEvent(const KinetoEventFields& f, uint64_t offset) { Store(f, offset); }

  // Takes over what a reader of a later part of the same document saw at the top level.
  void MergeTopLevelFrom(const KinetoReader& later) {
    if (!later.device_props_.empty()) device_props_ = later.device_props_;
    if (!later.distributed_info_.empty()) distributed_info_ = later.distributed_info_;
    rocm_ = rocm_ || later.rocm_;
  }

 private:
  void Bad(std::string_view reason, uint64_t offset) {
    source().issues.Add(reason, fmt::format("byte {}", offset));
  }

  void Store(const KinetoEventFields& f, uint64_t offset) {
    if (f.ph != "X") return;  // flows, metadata, instants, counters: not needed
    enum class Target { kNone, kGpu, kApi, kCpu } target = Target::kNone;
    GpuOpKind gpu_kind = GpuOpKind::kKernel;
    CpuOpKind cpu_kind = CpuOpKind::kOp;
    if (f.cat == "kernel" || f.cat == "Kernel") {
      target = Target::kGpu;
    } else if (f.cat == "gpu_memcpy" || f.cat == "Memcpy") {
      target = Target::kGpu;
      gpu_kind = GpuOpKind::kMemcpy;
    } else if (f.cat == "gpu_memset" || f.cat == "Memset") {
      target = Target::kGpu;
      gpu_kind = GpuOpKind::kMemset;
    } else if (f.cat == "cuda_runtime" || f.cat == "cuda_driver" || f.cat == "Runtime" ||
               f.cat == "Driver") {
      target = Target::kApi;
    } else if (f.cat == "cpu_op" || f.cat == "Operator") {
      target = Target::kCpu;
    } else if (f.cat == "user_annotation") {
      target = Target::kCpu;
      cpu_kind = CpuOpKind::kAnnotation;
    } else if (f.cat == "python_function") {
      target = Target::kCpu;
      cpu_kind = CpuOpKind::kPython;
    }
    if (target == Target::kNone) return;
    if (!f.ts_ns) {
      Bad("missing or non-numeric ts", offset);
      return;
    }
    const int64_t dur = f.dur_ns.value_or(0);
    if (dur < 0) {
      source().issues.Add("negative duration", fmt::format("byte {}", offset),
                          fmt::format("dur {} ns", dur));
      return;
    }
    const NameId name = trace_.names.Intern(f.name);
    ++source().events_read;
    switch (target) {
      case Target::kGpu: {
        GpuOp op;
        op.start_ns = *f.ts_ns;
        op.dur_ns = dur;
        op.name = name;
        op.source = source_;
        op.correlation = f.correlation.value_or(kNoCorrelation);
        op.device = static_cast<int32_t>(f.device ? *f.device : f.pid.value_or(0));
        op.stream = static_cast<int32_t>(f.stream ? *f.stream : f.tid.value_or(0));
        op.bytes = f.bytes.value_or(-1);
        op.external_id = f.external_id.value_or(-1);
        op.kind = gpu_kind;
        if (gpu_kind == GpuOpKind::kKernel) {
          // ROCm 7.1: runtime copies and fills appear as kernels (TraceLens/util.py,
          // _ROCM_LEGACY_MEMCPY_NAMES).
          op.kind = ClassifyRocmInternalKernel(f.name).value_or(GpuOpKind::kKernel);
          if (op.kind == GpuOpKind::kMemcpy) op.direction = ParseCopyDirection(f.name);
        } else if (gpu_kind == GpuOpKind::kMemcpy) {
          ParseMemcpyName(f.name, op.direction, op.src_kind, op.dst_kind);
          if (op.direction == CopyDirection::kUnknown && !f.kind_arg.empty()) {
            op.direction = ParseCopyDirection(f.kind_arg);
          }
        }
        trace_.gpu_ops.push_back(op);
        break;
      }
      case Target::kApi: {
        ApiCall a;
        a.start_ns = *f.ts_ns;
        a.dur_ns = dur;
        a.name = name;
        a.source = source_;
        a.correlation = f.correlation.value_or(kNoCorrelation);
        a.pid = static_cast<int32_t>(f.pid.value_or(0));
        a.tid = static_cast<int32_t>(f.tid.value_or(0));
        a.kind = ClassifyApi(f.name);
        trace_.api_calls.push_back(a);
        break;
      }
      case Target::kCpu: {
        CpuOp c;
        c.start_ns = *f.ts_ns;
        c.dur_ns = dur;
        c.name = name;
        c.source = source_;
        c.pid = static_cast<int32_t>(f.pid.value_or(0));
        c.tid = static_cast<int32_t>(f.tid.value_or(0));
        c.kind = cpu_kind;
        trace_.cpu_ops.push_back(c);
        if (!f.input_dims.empty() && f.external_id) {
          if (std::optional<OpWork> w = EstimateOpWork(f.name, f.input_dims, f.input_types)) {
            w->external_id = *f.external_id;
            w->op = name;
            w->source = source_;
            trace_.op_work.push_back(*w);
          }
        }
        break;
      }
      case Target::kNone:
        break;
    }
  }

  Trace& trace_;
  uint16_t source_;
  KinetoEventParser general_;
  std::string device_props_;
  std::string distributed_info_;
  bool rocm_ = false;
};

// One parse of a Kineto document, or of a part of it: the reader that stores events into a
// Trace and the scanner that feeds it, with the one-pass reader tried first for each event.
class KinetoParse {
 public:
  KinetoParse(Trace& trace, uint16_t source)
      : reader_(trace, source),
        scanner_([this](std::string_view text, uint64_t offset) { reader_.OnEvent(text, offset); },
                 [this](std::string_view key, std::string_view value) { reader_.OnValue(key, value); }) {
    scanner_.SetFastElement([this](const char* b, size_t n, uint64_t offset, size_t* length) {
      KinetoEventFields f;
      switch (ReadKinetoEventFast(b, n, f, length)) {
        case FastRead::kDone:
          reader_.OnFastEvent(f, offset);
          return JsonEventScanner::FastResult::kDone;
        case FastRead::kNeedMore:
          return JsonEventScanner::FastResult::kNeedMore;
        case FastRead::kBail:
          break;
      }
      return JsonEventScanner::FastResult::kDecline;
    });
    scanner_.KeepValue("deviceProperties");
    scanner_.KeepValue("hip_runtime_version");
    scanner_.KeepValue("roctracer_version");
    scanner_.KeepValue("distributedInfo");
    scanner_.KeepValue("baseTimeNanoseconds");
  }
  KinetoParse(const KinetoParse&) = delete;
  KinetoParse& operator=(const KinetoParse&) = delete;

  Status Feed(std::string_view bytes) {
    fed_ += bytes.size();
    return scanner_.Feed(bytes);
  }
  KinetoReader& reader() { return reader_; }
  JsonEventScanner& scanner() { return scanner_; }
  uint64_t fed() const { return fed_; }

 private:
  KinetoReader reader_;
  JsonEventScanner scanner_;
  uint64_t fed_ = 0;
};

// Feeds bytes [from, to) of the open file `fd` to `parse`, a slice of `chunk` bytes at a time,
// stopping at the first error.
Status FeedRange(int fd, const std::string& path, uint64_t from, uint64_t to, size_t chunk,
                 KinetoParse& parse) {
  const auto buf = std::make_unique_for_overwrite<char[]>(chunk);
  while (from < to) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, to - from));
    const ssize_t n = ::pread(fd, buf.get(), want, static_cast<off_t>(from));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, fmt::format("{}: byte {}", path, from));
    }
    if (n == 0) return DataLoss(fmt::format("{}: byte {}: the file shrank while it was read", path, from));
    RETURN_IF_ERROR(parse.Feed(std::string_view(buf.get(), static_cast<size_t>(n))));
    from += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// Where a part of the document may start: the first '{' at or after `from` that follows a ','
// and whitespace only. That is the start of a traceEvents element when the ',' separates two
// of them, which the parse of the part before verifies (it may be inside an event's args, or a
// string). Looks at most 256 KiB; nullopt if none there.
std::optional<uint64_t> FindSeam(int fd, uint64_t from, uint64_t size) {
  constexpr size_t kWindow = size_t{256} << 10;
  std::string buf(static_cast<size_t>(std::min<uint64_t>(kWindow, size - std::min(from, size))), '\0');
  size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n = ::pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(from + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  for (size_t i = 0; i < got; ++i) {
    if (buf[i] != ',') continue;
    size_t j = i + 1;
    while (j < got && (buf[j] == ' ' || buf[j] == '\n' || buf[j] == '\r' || buf[j] == '\t')) ++j;
    if (j < got && buf[j] == '{') return from + j;
  }
  return std::nullopt;
}

// Appends the events a later part of the document put into its own Trace (source 0, its own
// names) to `trace`: names are interned in the order the part first met them, so ids come out
// as a single pass over the whole document would have given them, and bad records follow
// those of the parts before.
void MergePart(Trace& part, uint16_t source, Trace& trace) {
  std::vector<NameId> id(part.names.size());
  for (NameId i = 0; i < id.size(); ++i) id[i] = trace.names.Intern(part.names.Get(i));
  auto append = [&](auto& into, auto& from, std::string_view what) {
    std::string error;
    if (!from.TryForEach([&](auto e) {
          e.name = id[e.name];
          e.source = source;
          into.push_back(e);
        }, &error)) {
      trace.sources[source].issues.Add(std::string(what) + " lost", "a part's spill file", error);
    }
    from.clear();
  };
  append(trace.gpu_ops, part.gpu_ops, "GPU ops");
  append(trace.api_calls, part.api_calls, "API calls");
  append(trace.cpu_ops, part.cpu_ops, "CPU ops");
  for (OpWork w : part.op_work) {
    w.op = id[w.op];
    w.source = source;
    trace.op_work.push_back(w);
  }
  part.op_work.clear();
  SourceFile& to = trace.sources[source];
  const SourceFile& from = part.sources[0];
  to.events_read += from.events_read;
  for (const auto& [reason, n] : from.issues.count_by_reason) to.issues.count_by_reason[reason] += n;
  for (const auto& e : from.issues.examples) {
    if (to.issues.examples.size() >= ImportIssues::kMaxExamples) break;
    to.issues.examples.push_back(e);
  }
}

// Bytes of a document, not zero-filled before they are written (a std::string's would be:
// for a stream split that is a memset of the whole inflated document).
struct Bytes {
  std::unique_ptr<char[]> data;
  size_t size = 0, capacity = 0;

  // Room for at least `n` bytes, keeping the first `size`.
  void Reserve(size_t n) {
    if (n <= capacity) return;
    auto grown = std::make_unique_for_overwrite<char[]>(n);
    if (size > 0) std::memcpy(grown.get(), data.get(), size);
    data = std::move(grown);
    capacity = n;
  }
  std::string_view view() const { return {data.get(), size}; }
};

// A part of the document, parsed into its own Trace on another thread: bytes [begin, end) of
// a plain file, or `bytes` (starting at `begin`) of an inflated stream.
struct Part {
  uint64_t begin = 0, end = 0;
  Bytes bytes;
  Trace trace;
  std::unique_ptr<KinetoParse> parse;
  Status status;
  std::thread thread;  // the file split's
  bool done = false;   // the stream split's, under PartWorkers' lock
};

// Threads that parse the stream split's parts, in the order they are handed in, with the
// thread that hands them in helping while it waits. One pool for the whole import: a thread
// per part would cost a new stack and a cold heap arena each time.
class PartWorkers {
 public:
  explicit PartWorkers(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Run(); });
  }
  PartWorkers(const PartWorkers&) = delete;
  PartWorkers& operator=(const PartWorkers&) = delete;
  ~PartWorkers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // Feeds `part`'s bytes to `parse` (the part's own, or the head's) on a worker, or on the
  // thread that waits for an earlier part.
  void Parse(Part* part, KinetoParse* parse) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({part, parse});
    }
    work_.notify_one();
  }
  // Waits until `part` is parsed, parsing parts still queued on this thread meanwhile (a
  // thread woken from a wait may sit behind the busy workers for a while; one that helps does
  // not). After this `part`'s status and parse are this thread's.
  void Wait(Part* part) {
    std::unique_lock<std::mutex> lock(mu_);
    while (!part->done && !queue_.empty()) {
      Job job = queue_.front();
      queue_.pop_front();
      lock.unlock();
      RunJob(job);
      lock.lock();
    }
    done_.wait(lock, [&] { return part->done; });
  }

 private:
  struct Job {
    Part* part;
    KinetoParse* parse;
  };
  void Run() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = queue_.front();
        queue_.pop_front();
      }
      RunJob(job);
    }
  }
  void RunJob(const Job& job) {
    // Whole: the scanner reads the part where it lies.
    Status status = job.parse->Feed(job.part->bytes.view());
    {
      std::lock_guard<std::mutex> lock(mu_);
      job.part->status = std::move(status);
      job.part->done = true;
    }
    done_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<Job> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The parts taken so far, in document order, starting with the parse of the document's head.
// A part is taken only when the last taken parse ended exactly at a traceEvents element. The
// last part taken may still read on (when the part after it cannot be taken); its events,
// names and bad records are appended to the trace when the next is taken, or at Close.
class PartChain {
 public:
  PartChain(Trace& trace, uint16_t source, KinetoParse& head)
      : trace_(trace), source_(source), head_(head), last_(&head) {}

  // Takes `part` (parsed from where the last taken parse stopped) when it continues the last
  // one; false, leaving `part` alone, when it does not (the last parse must read on over its
  // bytes itself).
  bool TryTake(std::unique_ptr<Part>& part) {
    if (!last_->scanner().AtTraceEventsElement()) return false;
    earlier_fed_ += last_->fed();
    earlier_events_ += last_->scanner().events();
    MergeLast();
    last_part_ = std::move(part);
    last_ = last_part_->parse.get();
    ++taken_;
    return true;
  }
  KinetoParse& last() { return *last_; }
  int taken() const { return taken_; }

  // Ends the chain: the last parse's messages and counts include the earlier parts' events;
  // Finish()es it when `status` is ok. Sets the bytes and events read in all.
  Status Close(Status status, uint64_t* fed, uint64_t* events) {
    if (last_ != &head_) last_->scanner().AddEarlierEvents(earlier_events_);
    if (status.ok()) status = last_->scanner().Finish();
    *fed = earlier_fed_ + last_->fed();
    *events = last_->scanner().events();
    MergeLast();
    last_ = &head_;
    return status;
  }

 private:
  void MergeLast() {
    if (!last_part_) return;
    MergePart(last_part_->trace, source_, trace_);
    head_.reader().MergeTopLevelFrom(last_part_->parse->reader());
    last_part_.reset();
  }

  Trace& trace_;
  uint16_t source_;
  KinetoParse& head_;
  KinetoParse* last_;
  std::unique_ptr<Part> last_part_;
  uint64_t earlier_fed_ = 0, earlier_events_ = 0;
  int taken_ = 0;
};

int SplitWorkers(const ImportOptions& options) {
  return options.split_parts > 0
             ? options.split_parts
             : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
}

// A fresh parse for a part of the document that starts at byte `begin`, inside traceEvents.
void StartPart(Part& part, const std::string& path, uint64_t begin, bool bare_array) {
  part.begin = begin;
  part.trace.AddSource(path, "kineto");
  part.parse = std::make_unique<KinetoParse>(part.trace, 0);
  part.parse->scanner().StartInsideTraceEvents(begin, bare_array);
}

// Reads the file on `parts` threads when it is a plain (uncompressed) file of at least
// `min_bytes`: the first part on this thread from the document's start, the others from a
// seam (FindSeam) each. Each part's end is checked to be a traceEvents element boundary
// before the next part is taken; where it is not, the part goes on to the end of the file on
// its own and the later parts are dropped. So the result is always the one-thread result:
// the same events in the same order, the same name ids, bad records and errors.
std::optional<Status> ImportSplit(const std::string& path, const ImportOptions& options, Trace& trace,
                                  uint16_t source, KinetoParse& main, uint64_t* fed, uint64_t* events,
                                  KinetoSplitStats& stats) {
  const int parts_wanted = SplitWorkers(options);
  if (parts_wanted < 2) return std::nullopt;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < options.split_min_bytes || size < 4) return std::nullopt;
  unsigned char magic[4] = {};
  if (::pread(fd, magic, 4, 0) != 4) return std::nullopt;
  if ((magic[0] == 0x1f && magic[1] == 0x8b) ||
      (magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd)) {
    return std::nullopt;  // compressed: one stream, ImportSplitStream
  }

  // The first slices say whether traceEvents opened (and in which form) before the split.
  // Small ones: while this thread parses them alone, the other cores wait.
  const uint64_t first_slice = std::min<uint64_t>(options.chunk_bytes, uint64_t{64} << 10);
  uint64_t first = 0;
  Status status;
  while (status.ok() && !main.scanner().saw_trace_events() && first < std::min<uint64_t>(size, options.chunk_bytes)) {
    const uint64_t to = std::min(size, first + first_slice);
    status = FeedRange(fd, path, first, to, options.chunk_bytes, main);
    first = to;
  }
  std::vector<std::unique_ptr<Part>> parts;
  if (status.ok() && main.scanner().saw_trace_events()) {
    uint64_t prev = first;
    for (int k = 1; k < parts_wanted; ++k) {
      const uint64_t target = first + (size - first) * static_cast<uint64_t>(k) / static_cast<uint64_t>(parts_wanted);
      auto seam = FindSeam(fd, std::max(target, prev), size);
      if (!seam || *seam <= prev || *seam >= size) continue;
      parts.push_back(std::make_unique<Part>());
      StartPart(*parts.back(), path, *seam, main.scanner().bare_array());
      prev = *seam;
    }
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    Part* p = parts[k].get();
    p->end = k + 1 < parts.size() ? parts[k + 1]->begin : size;
    p->thread = std::thread([p, fd, &path, &options] {
      p->status = FeedRange(fd, path, p->begin, p->end, options.chunk_bytes, *p->parse);
    });
  }
  if (status.ok()) status = FeedRange(fd, path, first, parts.empty() ? size : parts[0]->begin, options.chunk_bytes, main);
  for (auto& p : parts) p->thread.join();

  // Walk the parts in order: each is taken only if the one before ended at an element.
  PartChain chain(trace, source, main);
  for (auto& p : parts) {
    if (!status.ok()) break;
    const Status part_status = p->status;
    const uint64_t begin = p->begin;
    if (!chain.TryTake(p)) {
      // The seam was not an element boundary: read on from there in one piece.
      stats.fell_back = true;
      status = FeedRange(fd, path, begin, size, options.chunk_bytes, chain.last());
      break;
    }
    status = part_status;
  }
  stats.parts_planned = static_cast<int>(parts.size());
  stats.parts_taken = chain.taken();
  return chain.Close(status, fed, events);
}

// Where a part may start in `text`, looking from `*from`: the index of the first '{' that
// follows a ',' and whitespace only (as FindSeam). When none is there yet, sets `*from` to
// where the search must go on once more text has been appended.
std::optional<size_t> FindSeamIn(std::string_view text, size_t* from) {
  for (size_t i = *from; i < text.size(); ++i) {
    if (text[i] != ',') continue;
    size_t j = i + 1;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\n' || text[j] == '\r' || text[j] == '\t')) ++j;
    if (j == text.size()) {
      *from = i;
      return std::nullopt;
    }
    if (text[j] == '{') return j;
  }
  *from = text.size();
  return std::nullopt;
}

// The split for compressed input, which is one stream: this thread inflates and cuts the
// document at seams (FindSeamIn) into parts of about ImportOptions::split_part_bytes; each part
// is parsed on its own thread, at most `workers` at once, and joined to the ones before it as
// they finish, in order (PartChain), so memory holds a few parts, not the document. The first
// part continues the parse of the first slice. Where a part cannot be taken, the last taken
// parse reads on over its bytes, the later parts' and the rest of the stream on this thread.
// The result is the one-thread result, as for the file split.
std::optional<Status> ImportSplitStream(const std::string& path, const ImportOptions& options, Trace& trace,
                                        uint16_t source, KinetoParse& main, uint64_t* fed,
                                        uint64_t* events, KinetoSplitStats& stats) {
  const int workers = SplitWorkers(options);
  if (workers < 2) return std::nullopt;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  // Compressed traces shrink about tenfold or more; a small one is not worth the threads.
  if (static_cast<uint64_t>(st.st_size) < options.split_min_bytes / 8) return std::nullopt;
  auto opened = OpenInput(path);
  if (!opened.ok() || (*opened)->compression() == Compression::kNone) return std::nullopt;
  std::unique_ptr<InputStream> in = std::move(*opened);
  const size_t chunk = options.chunk_bytes;
  const size_t part_bytes = std::max<size_t>(options.split_part_bytes, 1);
  // Parts queued beyond the workers: a worker done with one starts the next at once instead
  // of waiting for this thread to wake up and hand it over.
  const size_t in_flight = 2 * static_cast<size_t>(workers);
  const size_t read = std::min(chunk, std::max<size_t>(part_bytes, 4096));  // after the first slice

  // The first slices say whether traceEvents opened (and in which form) before the split.
  // Small ones: while this thread parses them alone, the other cores wait.
  Status status;
  StatusOr<size_t> got = size_t{0};
  {
    const size_t first_slice = std::min<size_t>(chunk, size_t{64} << 10);
    const auto first = std::make_unique_for_overwrite<char[]>(first_slice);
    size_t total = 0;
    while (status.ok() && !main.scanner().saw_trace_events() && total < chunk) {
      auto n = in->Read(first.get(), first_slice);
      if (!n.ok()) {
        got = n;
        break;
      }
      if (*n == 0) break;
      total += *n;
      got = total;
      status = main.Feed(std::string_view(first.get(), *n));
    }
  }
  if (!got.ok()) status = got.status();
  if (!status.ok() || !main.scanner().saw_trace_events()) {
    if (status.ok()) {
      in = ReadAhead(std::move(in), chunk);
      status = ForEachSlice(*in, chunk, [&](std::string_view bytes) { return main.Feed(bytes); });
    }
    if (status.ok()) status = main.scanner().Finish();
    *fed = main.fed();
    *events = main.scanner().events();
    return status;
  }
  const bool bare = main.scanner().bare_array();
  PartChain chain(trace, source, main);
  PartWorkers pool(workers - 1);  // this thread parses too, while it waits
  std::deque<std::unique_ptr<Part>> flight;  // parts being parsed, in document order
  std::vector<Bytes> spare;                  // buffers of parts done with, for the next ones
  bool head_done = false;                    // the head's parse got its continuation
  bool fell_back = false;
  int planned = 0;
  // Waits for the oldest part in flight and takes it, or, when it cannot be taken, feeds its
  // bytes and those of every later part to the last taken parse (fell_back).
  auto retire = [&] {
    std::unique_ptr<Part> p = std::move(flight.front());
    flight.pop_front();
    pool.Wait(p.get());
    Bytes bytes = std::move(p->bytes);
    if (status.ok()) {
      if (fell_back) {
        status = chain.last().Feed(bytes.view());
      } else if (!p->parse) {
        status = p->status;  // the head's continuation
      } else if (Status part_status = p->status; chain.TryTake(p)) {
        status = part_status;
      } else {
        fell_back = true;
        status = chain.last().Feed(bytes.view());
      }
    }
    bytes.size = 0;
    spare.push_back(std::move(bytes));
  };
  auto fresh = [&] {
    Bytes b;
    if (!spare.empty()) {
      b = std::move(spare.back());
      spare.pop_back();
    }
    b.Reserve(part_bytes + read);
    return b;
  };
  // Hands bytes [begin, begin + bytes.size) to a part of their own.
  uint64_t begin = *got;
  auto dispatch = [&](Bytes bytes) {
    auto p = std::make_unique<Part>();
    KinetoParse* parse = &main;
    if (head_done) {
      StartPart(*p, path, begin, bare);
      parse = p->parse.get();
      ++planned;
    }
    head_done = true;
    begin += bytes.size;
    p->bytes = std::move(bytes);
    pool.Parse(p.get(), parse);
    flight.push_back(std::move(p));
  };

  Bytes cur = fresh();
  size_t search = 0;
  Status read_error;
  while (status.ok() && !fell_back) {
    if (cur.capacity - cur.size < read) cur.Reserve(std::max(2 * cur.capacity, cur.size + read));
    got = in->Read(cur.data.get() + cur.size, read);
    cur.size += got.ok() ? *got : 0;
    const bool end = !got.ok() || *got == 0;
    if (!got.ok()) read_error = got.status();
    while (cur.size > part_bytes && status.ok() && !fell_back) {
      search = std::max(search, part_bytes);
      const std::optional<size_t> seam = FindSeamIn(cur.view(), &search);
      if (!seam) break;
      while (flight.size() >= in_flight && status.ok() && !fell_back) retire();
      if (!status.ok() || fell_back) break;
      Bytes rest = fresh();
      rest.Reserve(cur.size - *seam);
      std::memcpy(rest.data.get(), cur.data.get() + *seam, cur.size - *seam);
      rest.size = cur.size - *seam;
      cur.size = *seam;
      dispatch(std::move(cur));
      cur = std::move(rest);
      search = 0;
    }
    if (end) break;
  }
  if (status.ok() && !fell_back && cur.size > 0) {
    dispatch(std::move(cur));
    cur = Bytes();
  }
  while (!flight.empty()) retire();
  if (status.ok() && fell_back) {
    // Read on in one piece: what was not handed to a part yet, then the rest of the stream.
    status = chain.last().Feed(cur.view());
    if (status.ok() && read_error.ok()) {
      status = ForEachSlice(*in, chunk, [&](std::string_view bytes) { return chain.last().Feed(bytes); });
    }
  }
  if (status.ok()) status = read_error;
  stats.parts_planned = planned;
  stats.parts_taken = chain.taken();
  stats.fell_back = fell_back;
  return chain.Close(status, fed, events);
}

}  // namespace

int KinetoImporter::Detect(const std::string& path, std::string_view head) const {
  (void)path;
  size_t i = 0;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' ||
                             head[i] == '\t')) {
    ++i;
  }
  if (i >= head.size() || (head[i] != '{' && head[i] != '[')) return 0;
  if (head.find("\"rocprofiler-sdk-tool\"") != std::string_view::npos) return 0;
  if (head.find("\"traceEvents\"") != std::string_view::npos) return 90;
  if (head.find("\"ph\"") != std::string_view::npos) return 60;
  return 10;
}

Status KinetoImporter::Import(const std::string& path, const ImportOptions& options,
                              Trace& trace, std::vector<std::string>& consumed) const {
  (void)consumed;
  return ImportKineto(path, options, trace, nullptr);
}

Status ImportKineto(const std::string& path, const ImportOptions& options, Trace& trace,
                    KinetoSplitStats* stats) {
  const uint16_t source = trace.AddSource(path, "kineto");
  KinetoParse main(trace, source);
  uint64_t decompressed = 0, events = 0;
  KinetoSplitStats split_stats;
  std::optional<Status> split =
      ImportSplit(path, options, trace, source, main, &decompressed, &events, split_stats);
  if (!split) split = ImportSplitStream(path, options, trace, source, main, &decompressed, &events, split_stats);
  if (stats) *stats = split_stats;
  Status st;
  if (split) {
    st = *split;
  } else {
    ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
    // Read (and inflate) on a second core while this one parses. Even a plain file gains: the
    // kernel's page-cache copy was a sixth of a single-threaded import.
    in = ReadAhead(std::move(in), options.chunk_bytes);
    st = ForEachSlice(*in, options.chunk_bytes, [&](std::string_view bytes) { return main.Feed(bytes); });
    if (st.ok()) st = main.scanner().Finish();
    decompressed = main.fed();
    events = main.scanner().events();
  }
  main.reader().FinishDevices();
  main.reader().FinishDistributedInfo();
  if (st.ok() && !main.scanner().saw_trace_events()) {
    st = InvalidArgument("no \"traceEvents\" array: not a Chrome/Kineto trace");
  }
  if (!st.ok()) {
    // Keep what was read before the break; the caller reports the file as damaged.
    // Stream errors already name the path; scanner errors do not.
    if (st.message().rfind(path, 0) != 0) st = st.WithContext(path);
    main.reader().source().fatal_error = st.message();
    if (decompressed > 0 && events > 0) {
      main.reader().source().issues.Add("file cut short", fmt::format("byte {}", decompressed),
                                        st.message());
    }
  }
  return st;
}

}  // namespace latdoc::trace
