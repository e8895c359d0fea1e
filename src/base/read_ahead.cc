#include "base/read_ahead.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace latdoc {
namespace {

class ReadAheadStream final : public InputStream {
 public:
  ReadAheadStream(std::unique_ptr<InputStream> source, size_t slice_bytes, size_t slices)
      : source_(std::move(source)),
        compression_(source_->compression()),
        path_(source_->path()),
        slices_(std::max<size_t>(slices, 2)) {
    for (Slice& s : slices_) {
      // Not zero-filled: a small file touches only the pages it fills.
      s.capacity = std::max<size_t>(slice_bytes, 1);
      s.data = std::make_unique_for_overwrite<char[]>(s.capacity);
    }
    reader_ = std::thread([this] { Fill(); });
  }

  ~ReadAheadStream() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    reader_.join();
  }

  StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t copied = 0;
    while (copied < n) {
      if (!have_slice_) {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock, [&] { return consumed_ < produced_; });
        have_slice_ = true;
      }
      // The slice is the consumer's until it is handed back; the reader does not touch it.
      const Slice& s = slices_[consumed_ % slices_.size()];
      if (pos_ < s.size) {
        const size_t take = std::min(n - copied, s.size - pos_);
        std::memcpy(buf + copied, s.data.get() + pos_, take);
        copied += take;
        pos_ += take;
        raw_offset_ = s.raw_offset;
        continue;
      }
      if (s.last) {
        if (copied > 0) return copied;  // the bytes first; the end or the error on the next call
        raw_offset_ = s.raw_offset;
        if (!s.error.ok()) return s.error;
        return size_t{0};
      }
      pos_ = 0;
      have_slice_ = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++consumed_;
      }
      changed_.notify_all();
    }
    return copied;
  }

  uint64_t raw_offset() const override { return raw_offset_; }
  Compression compression() const override { return compression_; }
  const std::string& path() const override { return path_; }

 private:
  struct Slice {
    std::unique_ptr<char[]> data;
    size_t capacity = 0;
    size_t size = 0;
    bool last = false;        // the source ended (or failed) after these bytes
    Status error;
    uint64_t raw_offset = 0;  // the source's raw offset after this slice
  };

  // The reader thread: fills free slices in order until the end, an error, or stop.
  void Fill() {
    for (uint64_t next = 0;; ++next) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock, [&] { return stop_ || next - consumed_ < slices_.size(); });
        if (stop_) return;
      }
      Slice& s = slices_[next % slices_.size()];
      s.size = 0;
      // A short read is not the end; only a read of 0 bytes is.
      while (s.size < s.capacity && !s.last) {
        StatusOr<size_t> r = source_->Read(s.data.get() + s.size, s.capacity - s.size);
        if (!r.ok()) {
          s.error = r.status();
          s.last = true;
        } else if (*r == 0) {
          s.last = true;
        } else {
          s.size += *r;
        }
      }
      s.raw_offset = source_->raw_offset();
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++produced_;
      }
      changed_.notify_all();
      if (s.last) return;
    }
  }

  std::unique_ptr<InputStream> source_;
  const Compression compression_;
  const std::string path_;
  std::vector<Slice> slices_;
  std::thread reader_;

  std::mutex mu_;
  std::condition_variable changed_;
  uint64_t produced_ = 0;  // slices filled
  uint64_t consumed_ = 0;  // slices handed back by the consumer
  bool stop_ = false;

  // The consumer's own.
  bool have_slice_ = false;  // slices_[consumed_ % size] is ready and being read
  size_t pos_ = 0;
  uint64_t raw_offset_ = 0;
};

}  // namespace

std::unique_ptr<InputStream> ReadAhead(std::unique_ptr<InputStream> source, size_t slice_bytes,
                                       size_t slices) {
  return std::make_unique<ReadAheadStream>(std::move(source), slice_bytes, slices);
}

}  // namespace latdoc
