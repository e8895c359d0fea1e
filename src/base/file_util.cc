#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <isa-l/igzip_lib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/core.h>

namespace latdoc {
namespace {

// Reads from a file descriptor; owns it unless it is stdin.
class FdReader {
 public:
  FdReader(int fd, bool owned) : fd_(fd), owned_(owned) {}
  ~FdReader() {
    if (owned_ && fd_ >= 0) ::close(fd_);
  }
  FdReader(const FdReader&) = delete;
  FdReader& operator=(const FdReader&) = delete;

  // Returns bytes read, 0 at end, or -errno.
  ssize_t Read(char* buf, size_t n) {
    for (;;) {
      ssize_t r = ::read(fd_, buf, n);
      if (r >= 0) {
        offset_ += static_cast<uint64_t>(r);
        return r;
      }
      if (errno != EINTR) return -errno;
    }
  }
  uint64_t offset() const { return offset_; }

 private:
  int fd_;
  bool owned_;
  uint64_t offset_ = 0;
};

// The first bytes of the input are peeked to detect the compression, then replayed.
class Source {
 public:
  virtual ~Source() = default;
  virtual ssize_t Read(char* buf, size_t n) = 0;  // bytes, 0 at end, -errno on error
  virtual uint64_t offset() const = 0;
};

class FdSource : public Source {
 public:
  FdSource(int fd, bool owned) : r_(fd, owned) {}
  ssize_t Read(char* buf, size_t n) override { return r_.Read(buf, n); }
  uint64_t offset() const override { return r_.offset(); }

 private:
  FdReader r_;
};

class MemSource : public Source {
 public:
  explicit MemSource(std::string_view d) : d_(d) {}
  ssize_t Read(char* buf, size_t n) override {
    size_t k = std::min(n, d_.size() - pos_);
    std::memcpy(buf, d_.data() + pos_, k);
    pos_ += k;
    return static_cast<ssize_t>(k);
  }
  uint64_t offset() const override { return pos_; }

 private:
  std::string_view d_;
  size_t pos_ = 0;
};

constexpr size_t kInBuf = 256 * 1024;

class Stream : public InputStream {
 public:
  Stream(std::unique_ptr<Source> src, std::string path)
      : src_(std::move(src)), path_(std::move(path)), in_(kInBuf) {}
  ~Stream() override {
    if (zs_) ZSTD_freeDStream(zs_);
  }

  Status Init() {
    // Peek the magic number.
    while (in_len_ < 4) {
      ssize_t r = src_->Read(in_.data() + in_len_, in_.size() - in_len_);
      if (r < 0) return ErrnoStatus(static_cast<int>(-r), path_);
      if (r == 0) break;
      in_len_ += static_cast<size_t>(r);
    }
    const auto* b = reinterpret_cast<const unsigned char*>(in_.data());
    if (in_len_ >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
      comp_ = Compression::kGzip;
      StartGzipMember();
    } else if (in_len_ >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) {
      comp_ = Compression::kZstd;
      zs_ = ZSTD_createDStream();
      ZSTD_initDStream(zs_);
    }
    return Status::Ok();
  }

  StatusOr<size_t> Read(char* buf, size_t n) override {
    if (n == 0) return size_t{0};
    switch (comp_) {
      case Compression::kNone: return ReadPlain(buf, n);
      case Compression::kGzip: return ReadGzip(buf, n);
      case Compression::kZstd: return ReadZstd(buf, n);
    }
    return size_t{0};
  }

  uint64_t raw_offset() const override { return src_->offset() - (in_len_ - in_pos_); }
  Compression compression() const override { return comp_; }
  const std::string& path() const override { return path_; }

 private:
  // Refills in_ when it is drained; returns false at end of input.
  StatusOr<bool> Fill() {
    if (in_pos_ < in_len_) return true;
    in_pos_ = in_len_ = 0;
    ssize_t r = src_->Read(in_.data(), in_.size());
    if (r < 0) return ErrnoStatus(static_cast<int>(-r), path_);
    in_len_ = static_cast<size_t>(r);
    return r > 0;
  }

  StatusOr<size_t> ReadPlain(char* buf, size_t n) {
    if (in_pos_ < in_len_) {
      size_t k = std::min(n, in_len_ - in_pos_);
      std::memcpy(buf, in_.data() + in_pos_, k);
      in_pos_ += k;
      return k;
    }
    ssize_t r = src_->Read(buf, n);
    if (r < 0) return ErrnoStatus(static_cast<int>(-r), path_);
    return static_cast<size_t>(r);
  }

  void StartGzipMember() {
    isal_inflate_init(&gz_);
    gz_.crc_flag = ISAL_GZIP;  // parse the gzip header, check the CRC and length trailer
  }

  StatusOr<size_t> ReadGzip(char* buf, size_t n) {
    if (done_) return size_t{0};
    gz_.next_out = reinterpret_cast<uint8_t*>(buf);
    gz_.avail_out = static_cast<uint32_t>(std::min<size_t>(n, UINT32_MAX));
    const uint32_t want = gz_.avail_out;
    while (gz_.avail_out == want) {
      if (gz_.block_state == ISAL_BLOCK_FINISH) {
        // Concatenated gzip members are legal (gzip -c a b > c): continue with the next.
        auto more_members = Fill();
        if (!more_members.ok() || !*more_members) {
          done_ = true;
          break;
        }
        StartGzipMember();
        gz_.next_out = reinterpret_cast<uint8_t*>(buf);
        gz_.avail_out = want;
      }
      // At the end of the file inflate still runs once: it may hold decoded bytes that did
      // not fit the last output buffer.
      ASSIGN_OR_RETURN(bool more, Fill());
      gz_.next_in = reinterpret_cast<uint8_t*>(in_.data() + in_pos_);
      gz_.avail_in = static_cast<uint32_t>(in_len_ - in_pos_);
      const int rc = isal_inflate(&gz_);
      in_pos_ = in_len_ - gz_.avail_in;
      if (rc != ISAL_DECOMP_OK) {
        return DataLoss(fmt::format("{}: byte {}: corrupt gzip data ({})", path_, raw_offset(), IsalError(rc)));
      }
      if (!more && gz_.avail_out == want && gz_.block_state != ISAL_BLOCK_FINISH) {
        return DataLoss(fmt::format("{}: byte {}: gzip stream is truncated", path_, raw_offset()));
      }
    }
    return want - gz_.avail_out;
  }

  static const char* IsalError(int rc) {
    switch (rc) {
      case ISAL_INVALID_BLOCK: return "invalid deflate block";
      case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
      case ISAL_INVALID_LOOKBACK: return "invalid distance";
      case ISAL_INVALID_WRAPPER: return "invalid gzip header";
      case ISAL_UNSUPPORTED_METHOD: return "unsupported compression method";
      case ISAL_INCORRECT_CHECKSUM: return "CRC mismatch";
      case ISAL_NAME_OVERFLOW:
      case ISAL_COMMENT_OVERFLOW:
      case ISAL_EXTRA_OVERFLOW: return "gzip header field too long";
      case ISAL_NEED_DICT: return "preset dictionary needed";
      default: return "inflate error";
    }
  }

  StatusOr<size_t> ReadZstd(char* buf, size_t n) {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      ASSIGN_OR_RETURN(bool more, Fill());
      if (!more) {
        if (last_ret_ != 0) {
          return DataLoss(fmt::format("{}: byte {}: zstd stream is truncated", path_, raw_offset()));
        }
        return size_t{0};
      }
      ZSTD_inBuffer in{in_.data() + in_pos_, in_len_ - in_pos_, 0};
      last_ret_ = ZSTD_decompressStream(zs_, &out, &in);
      in_pos_ += in.pos;
      if (ZSTD_isError(last_ret_)) {
        return DataLoss(fmt::format("{}: byte {}: corrupt zstd data ({})", path_, raw_offset(),
                                    ZSTD_getErrorName(last_ret_)));
      }
    }
    return out.pos;
  }

  std::unique_ptr<Source> src_;
  std::string path_;
  std::vector<char> in_;
  size_t in_pos_ = 0, in_len_ = 0;
  Compression comp_ = Compression::kNone;
  inflate_state gz_{};
  bool done_ = false;
  ZSTD_DStream* zs_ = nullptr;
  size_t last_ret_ = 0;
};

}  // namespace

StatusOr<std::string> ReadFileToString(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, path);
  FdReader r(fd, true);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = r.Read(buf, sizeof(buf));
    if (n < 0) return ErrnoStatus(static_cast<int>(-n), path);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view content) {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, path);
  size_t off = 0;
  while (off < content.size()) {
    ssize_t w = ::write(fd, content.data() + off, content.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return ErrnoStatus(err, path);
    }
    off += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus(err, path);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus(err, path);
  }
  return Status::Ok();
}

Status CheckOutputPath(const std::string& path) {
  if (path.empty()) return InvalidArgument("an output path is empty");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return InvalidArgument(fmt::format("{}: is a directory, not a file", path));
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return InvalidArgument(fmt::format("{}: no such directory {}", path, dir));
  if (::access(dir.c_str(), W_OK) != 0)
    return InvalidArgument(fmt::format("{}: directory {} is not writable", path, dir));
  return Status::Ok();
}

StatusOr<std::unique_ptr<InputStream>> OpenInput(const std::string& path) {
  std::unique_ptr<Source> src;
  if (path == "-") {
    src = std::make_unique<FdSource>(0, false);
  } else {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, path);
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      return InvalidArgument(path + ": is a directory, not a file");
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    src = std::make_unique<FdSource>(fd, true);
  }
  auto s = std::make_unique<Stream>(std::move(src), path);
  RETURN_IF_ERROR(s->Init());
  return std::unique_ptr<InputStream>(std::move(s));
}

std::unique_ptr<InputStream> OpenMemoryInput(std::string_view data, std::string name) {
  auto s = std::make_unique<Stream>(std::make_unique<MemSource>(data), std::move(name));
  (void)s->Init();  // memory reads cannot fail
  return s;
}

Status ForEachSlice(InputStream& in, size_t slice_bytes,
                    const std::function<Status(std::string_view)>& feed) {
  // Not zero-filled: a small input touches only the pages it fills.
  const auto buf = std::make_unique_for_overwrite<char[]>(slice_bytes);
  for (;;) {
    ASSIGN_OR_RETURN(size_t n, in.Read(buf.get(), slice_bytes));
    if (n == 0) return Status::Ok();
    RETURN_IF_ERROR(feed(std::string_view(buf.get(), n)));
  }
}

StatusOr<std::string> ReadAll(InputStream& in) {
  std::string out;
  RETURN_IF_ERROR(ForEachSlice(in, 1 << 16, [&](std::string_view bytes) {
    out.append(bytes);
    return Status::Ok();
  }));
  return out;
}

}  // namespace latdoc
