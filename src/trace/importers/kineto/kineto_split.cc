#include "trace/importers/kineto/kineto_split.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

#include "base/file_util.h"
#include "base/read_ahead.h"
#include "trace/importers/common/split_reader.h"

namespace latdoc::trace::kineto {
namespace {

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

}  // namespace

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

namespace {

// The first slices say whether traceEvents opened (and in which form) before the split.
// Small ones: while this thread parses them alone, the other cores wait. Returns the bytes
// read (or the read's error); `status` gets the parse's.
StatusOr<size_t> FeedFirstSlices(InputStream& in, KinetoParse& main, size_t chunk, Status& status) {
  StatusOr<size_t> got = size_t{0};
  const size_t first_slice = std::min<size_t>(chunk, size_t{64} << 10);
  const auto first = std::make_unique_for_overwrite<char[]>(first_slice);
  size_t total = 0;
  while (status.ok() && !main.scanner().saw_trace_events() && total < chunk) {
    auto n = in.Read(first.get(), first_slice);
    if (!n.ok()) {
      got = n;
      break;
    }
    if (*n == 0) break;
    total += *n;
    got = total;
    status = main.Feed(std::string_view(first.get(), *n));
  }
  return got;
}

// No split (the first slices failed, or traceEvents did not open in them): the rest of the
// stream goes to `main` on this thread.
Status FeedUnsplit(std::unique_ptr<InputStream> in, KinetoParse& main, size_t chunk, Status status,
                   uint64_t* fed, uint64_t* events) {
  if (status.ok()) {
    in = ReadAhead(std::move(in), chunk);
    status = ForEachSlice(*in, chunk, [&](std::string_view bytes) { return main.Feed(bytes); });
  }
  if (status.ok()) status = main.scanner().Finish();
  *fed = main.fed();
  *events = main.scanner().events();
  return status;
}

}  // namespace

// Long on purpose: retire, fresh and dispatch are lambdas over the one stream's state (the
// parts in flight, the spare buffers, the chain); split apart they would share it by pointer.
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

  Status status;
  StatusOr<size_t> got = FeedFirstSlices(*in, main, chunk, status);
  if (!got.ok()) status = got.status();
  if (!status.ok() || !main.scanner().saw_trace_events()) {
    return FeedUnsplit(std::move(in), main, chunk, status, fed, events);
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

}  // namespace latdoc::trace::kineto
