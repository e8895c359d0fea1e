#include "trace/model/cpu_op_table.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace latdoc::trace {
namespace {

// $TMPDIR when set, else /var/tmp: where large temporary files go (FHS), on disk where /tmp is
// often tmpfs, whose pages would be memory again. /tmp when there is no /var/tmp.
std::string TempDir() {
  const char* d = std::getenv("TMPDIR");
  if (d != nullptr && *d != '\0') return d;
  return ::access("/var/tmp", W_OK) == 0 ? "/var/tmp" : "/tmp";
}

// An unnamed file in the temporary directory: nothing to clean up, even after a crash. Where
// the file system has no O_TMPFILE, a named one unlinked at once. -1 with `error` set on failure.
int OpenSpillFile(std::string& error) {
  const std::string dir = TempDir();
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string path = dir + "/latdoc-cpu-ops-XXXXXX";
  fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    error = "cannot make a spill file in " + dir + ": " + std::strerror(errno);
    return -1;
  }
  ::unlink(path.c_str());
  return fd;
}

}  // namespace

CpuOpTable::CpuOpTable(size_t block_ops) : block_ops_(std::max<size_t>(block_ops, 1)) {}

CpuOpTable::~CpuOpTable() {
  if (fd_ >= 0) ::close(fd_);
}

CpuOpTable::CpuOpTable(CpuOpTable&& other) noexcept
    : block_ops_(other.block_ops_),
      mem_(std::move(other.mem_)),
      spilled_(std::exchange(other.spilled_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      spill_error_(std::move(other.spill_error_)) {
  other.mem_.clear();
}

CpuOpTable& CpuOpTable::operator=(CpuOpTable&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    block_ops_ = other.block_ops_;
    mem_ = std::move(other.mem_);
    other.mem_.clear();
    spilled_ = std::exchange(other.spilled_, 0);
    fd_ = std::exchange(other.fd_, -1);
    spill_error_ = std::move(other.spill_error_);
  }
  return *this;
}

void CpuOpTable::push_back(const CpuOp& op) {
  if (mem_.size() >= block_ops_ && spill_error_.empty()) Spill();
  if (mem_.capacity() == 0 && spill_error_.empty()) mem_.reserve(std::min<size_t>(block_ops_, 4096));
  mem_.push_back(op);
}

void CpuOpTable::clear() {
  mem_.clear();
  mem_.shrink_to_fit();
  spilled_ = 0;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  spill_error_.clear();
}

// Appends the block in memory to the file. A failed or short write leaves `spilled_` where it
// was (what lies past it in the file is never read) and the ops in memory, for good.
void CpuOpTable::Spill() {
  // A write past the file size limit (ulimit -f) would raise SIGXFSZ, which kills the process:
  // stay in memory instead.
  const uint64_t end = uint64_t{spilled_ + mem_.size()} * sizeof(CpuOp);
  struct rlimit limit;
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && end > limit.rlim_cur) {
    spill_error_ = "the file size limit (ulimit -f) is too small for the spill file";
    return;
  }
  if (fd_ < 0) {
    fd_ = OpenSpillFile(spill_error_);
    if (fd_ < 0) return;
  }
  const char* p = reinterpret_cast<const char*>(mem_.data());
  size_t left = mem_.size() * sizeof(CpuOp);
  off_t at = static_cast<off_t>(spilled_ * sizeof(CpuOp));
  while (left > 0) {
    const ssize_t n = ::pwrite(fd_, p, left, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      spill_error_ = std::string("cannot write the spill file: ") + (n < 0 ? std::strerror(errno) : "no space");
      return;
    }
    p += n;
    left -= static_cast<size_t>(n);
    at += n;
  }
  spilled_ += mem_.size();
  mem_.clear();  // keeps its capacity: the next block fills the same memory
}

bool CpuOpTable::ReadSpilled(size_t first, size_t n, std::vector<CpuOp>& out, std::string* error) const {
  out.resize(n);
  char* p = reinterpret_cast<char*>(out.data());
  size_t left = n * sizeof(CpuOp);
  off_t at = static_cast<off_t>(first * sizeof(CpuOp));
  while (left > 0) {
    const ssize_t got = ::pread(fd_, p, left, at);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (error != nullptr) {
        *error = std::string("cannot read back the CPU ops' spill file: ") +
                 (got < 0 ? std::strerror(errno) : "it is shorter than written");
      }
      return false;
    }
    p += got;
    left -= static_cast<size_t>(got);
    at += got;
  }
  return true;
}

CpuOp CpuOpTable::operator[](size_t i) const {
  if (i >= spilled_) return mem_[i - spilled_];
  std::vector<CpuOp> one;
  if (!ReadSpilled(i, 1, one, nullptr)) return CpuOp{};
  return one[0];
}

}  // namespace latdoc::trace
