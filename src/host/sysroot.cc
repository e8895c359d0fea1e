#include "host/sysroot.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/strings.h"

namespace latdoc::host {

SysRoot::SysRoot(std::string root) {
  // Trailing slashes dropped; "" and "/" (and "//") both mean the live host.
  const size_t end = root.find_last_not_of('/');
  root_ = end == std::string::npos ? std::string(1, '/') : root.substr(0, end + 1);
}

std::string SysRoot::Resolve(std::string_view host_path) const {
  if (live()) return std::string(host_path);
  std::string out = root_;
  if (host_path.empty() || host_path.front() != '/') out.push_back('/');
  out.append(host_path);
  return out;
}

StatusOr<std::string> SysRoot::Read(std::string_view host_path, size_t max_bytes) const {
  const std::string path = Resolve(host_path);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, host_path);
  std::string out;
  char buf[8192];
  while (out.size() < max_bytes) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoStatus(err, host_path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (out.size() > max_bytes) out.resize(max_bytes);
  return out;
}

StatusOr<std::string> SysRoot::ReadTrimmed(std::string_view host_path) const {
  ASSIGN_OR_RETURN(std::string s, Read(host_path, 1 << 20));
  return std::string(Trim(s));
}

bool SysRoot::Exists(std::string_view host_path) const {
  struct stat st;
  return ::stat(Resolve(host_path).c_str(), &st) == 0;
}

StatusOr<std::vector<std::string>> SysRoot::List(std::string_view host_path) const {
  const std::string path = Resolve(host_path);
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return ErrnoStatus(errno, host_path);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<std::string> SysRoot::ReadLink(std::string_view host_path) const {
  const std::string path = Resolve(host_path);
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return ErrnoStatus(errno, host_path);
  return std::string(buf, static_cast<size_t>(n));
}

StatusOr<std::string> SysRoot::Canonical(std::string_view host_path) const {
  const std::string path = Resolve(host_path);
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return ErrnoStatus(errno, host_path);
  std::string resolved = real;
  ::free(real);
  if (live()) return resolved;
  char* real_root = ::realpath(root_.c_str(), nullptr);
  if (real_root == nullptr) return ErrnoStatus(errno, root_);
  std::string r = real_root;
  ::free(real_root);
  if (resolved == r) return std::string("/");
  if (resolved.compare(0, r.size(), r) != 0 || resolved[r.size()] != '/') {
    return InvalidArgument(std::string(host_path) + ": link leads outside the sysroot " + root_);
  }
  return resolved.substr(r.size());
}

}  // namespace latdoc::host
