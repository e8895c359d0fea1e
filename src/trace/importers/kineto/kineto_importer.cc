#include "trace/importers/kineto/kineto_importer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <memory>
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

namespace latdoc::trace {
namespace od = simdjson::ondemand;

std::optional<int64_t> ParseMicrosToNs(std::string_view t) {
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
    if (end != s.c_str() + s.size() || !std::isfinite(us)) return std::nullopt;
    return static_cast<int64_t>(std::llround(us * 1000.0));
  }
  if (i != t.size()) return std::nullopt;
  const int64_t ns = whole * 1000 + frac_ns;
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
        op.kind = gpu_kind;
        if (gpu_kind == GpuOpKind::kKernel) {
          // ROCm 7.1: runtime copies and fills appear as kernels (trace-formats.md 5.4).
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
  std::string buf(chunk, '\0');
  while (from < to) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, to - from));
    const ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(from));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, fmt::format("{}: byte {}", path, from));
    }
    if (n == 0) return DataLoss(fmt::format("{}: byte {}: the file shrank while it was read", path, from));
    RETURN_IF_ERROR(parse.Feed(std::string_view(buf.data(), static_cast<size_t>(n))));
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
  auto append = [&](auto& into, auto& from) {
    into.reserve(into.size() + from.size());
    for (auto e : from) {
      e.name = id[e.name];
      e.source = source;
      into.push_back(e);
    }
    from.clear();
    from.shrink_to_fit();
  };
  append(trace.gpu_ops, part.gpu_ops);
  append(trace.api_calls, part.api_calls);
  append(trace.cpu_ops, part.cpu_ops);
  SourceFile& to = trace.sources[source];
  const SourceFile& from = part.sources[0];
  to.events_read += from.events_read;
  for (const auto& [reason, n] : from.issues.count_by_reason) to.issues.count_by_reason[reason] += n;
  for (const auto& e : from.issues.examples) {
    if (to.issues.examples.size() >= ImportIssues::kMaxExamples) break;
    to.issues.examples.push_back(e);
  }
}

// A part of the document: bytes [begin, end), parsed into its own Trace on its own thread.
struct Part {
  uint64_t begin = 0, end = 0;
  Trace trace;
  std::unique_ptr<KinetoParse> parse;
  Status status;
};

// Reads the file on `parts` threads when it is a plain (uncompressed) file of at least
// `min_bytes`: the first part on this thread from the document's start, the others from a
// seam (FindSeam) each. Each part's end is checked to be a traceEvents element boundary
// before the next part is taken; where it is not, the part goes on to the end of the file on
// its own and the later parts are dropped. So the result is always the one-thread result:
// the same events in the same order, the same name ids, bad records and errors.
// Returns nullopt (nothing read) when the file is not one to split.
std::optional<Status> ImportSplit(const std::string& path, const ImportOptions& options, Trace& trace,
                                  uint16_t source, KinetoParse& main, uint64_t* fed, uint64_t* events,
                                  KinetoSplitStats& stats) {
  const int parts_wanted = options.split_parts > 0
                               ? options.split_parts
                               : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
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
    return std::nullopt;  // compressed: one stream, read the usual way
  }

  // The first slice says whether traceEvents opened (and in which form) before the split.
  const uint64_t first = std::min<uint64_t>(size, options.chunk_bytes);
  Status status = FeedRange(fd, path, 0, first, options.chunk_bytes, main);
  std::vector<std::unique_ptr<Part>> parts;
  if (status.ok() && main.scanner().saw_trace_events()) {
    uint64_t prev = first;
    for (int k = 1; k < parts_wanted; ++k) {
      const uint64_t target = first + (size - first) * static_cast<uint64_t>(k) / static_cast<uint64_t>(parts_wanted);
      auto seam = FindSeam(fd, std::max(target, prev), size);
      if (!seam || *seam <= prev || *seam >= size) continue;
      auto part = std::make_unique<Part>();
      part->begin = *seam;
      parts.push_back(std::move(part));
      prev = *seam;
    }
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    Part& p = *parts[k];
    p.end = k + 1 < parts.size() ? parts[k + 1]->begin : size;
    p.trace.AddSource(path, "kineto");
    p.parse = std::make_unique<KinetoParse>(p.trace, 0);
    p.parse->scanner().StartInsideTraceEvents(p.begin, main.scanner().bare_array());
  }
  std::vector<std::thread> threads;
  for (auto& part : parts) {
    Part* p = part.get();
    threads.emplace_back([p, fd, &path, &options] {
      p->status = FeedRange(fd, path, p->begin, p->end, options.chunk_bytes, *p->parse);
    });
  }
  if (status.ok()) status = FeedRange(fd, path, first, parts.empty() ? size : parts[0]->begin, options.chunk_bytes, main);
  for (auto& t : threads) t.join();

  // Walk the parts in order: each is taken only if the one before ended at an element.
  KinetoParse* last = &main;
  size_t taken = 0;
  while (status.ok() && taken < parts.size()) {
    Part& next = *parts[taken];
    if (!last->scanner().AtTraceEventsElement()) {
      // The seam was not an element boundary: read on from there in one piece.
      stats.fell_back = true;
      status = FeedRange(fd, path, next.begin, size, options.chunk_bytes, *last);
      break;
    }
    status = next.status;
    last = next.parse.get();
    ++taken;
  }
  stats.parts_planned = static_cast<int>(parts.size());
  stats.parts_taken = static_cast<int>(taken);
  uint64_t total_fed = main.fed(), earlier_events = main.scanner().events();
  for (size_t k = 0; k < taken; ++k) {
    MergePart(parts[k]->trace, source, trace);
    main.reader().MergeTopLevelFrom(parts[k]->parse->reader());
    total_fed += parts[k]->parse->fed();
    if (parts[k]->parse.get() != last) earlier_events += parts[k]->parse->scanner().events();
  }
  if (last != &main) last->scanner().AddEarlierEvents(earlier_events);
  if (status.ok()) status = last->scanner().Finish();
  *fed = total_fed;
  *events = last->scanner().events();
  return status;
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
