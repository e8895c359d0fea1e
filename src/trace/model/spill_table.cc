#include "trace/model/spill_table.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace latdoc::trace::spill {
namespace {

// $TMPDIR when set, else /var/tmp: where large temporary files go (FHS), on disk where /tmp is
// often tmpfs, whose pages would be memory again. /tmp when there is no /var/tmp.
std::string TempDir() {
  const char* d = std::getenv("TMPDIR");
  if (d != nullptr && *d != '\0') return d;
  return ::access("/var/tmp", W_OK) == 0 ? "/var/tmp" : "/tmp";
}

// An unnamed file in the temporary directory: nothing to clean up, even after a crash. Where
// the file system has no O_TMPFILE, a named one (mkostemp's template) unlinked at once. -1 with
// `error` set on failure.
int OpenSpillFile(std::string& error) {
  const std::string dir = TempDir();
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string path = dir + "/latdoc-spill-XXXXXX";
  fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    error = "cannot make a spill file in " + dir + ": " + std::strerror(errno);
    return -1;
  }
  ::unlink(path.c_str());
  return fd;
}

}  // namespace

File::~File() { Close(); }

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void File::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool File::Write(const void* data, size_t n, uint64_t offset, std::string& error) {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && offset + n > limit.rlim_cur) {
    error = "the file size limit (ulimit -f) is too small for the spill file";
    return false;
  }
  if (fd_ < 0) {
    fd_ = OpenSpillFile(error);
    if (fd_ < 0) return false;
  }
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      error = std::string("cannot write the spill file: ") + (w < 0 ? std::strerror(errno) : "no space");
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return true;
}

bool File::Read(void* data, size_t n, uint64_t offset, std::string& error) const {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = fd_ < 0 ? 0 : ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      error = got < 0 ? std::strerror(errno) : "the spill file is shorter than written";
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

}  // namespace latdoc::trace::spill
