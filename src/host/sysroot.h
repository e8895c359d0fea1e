// SysRoot: every /sys and /proc read of the host module goes through one of these, so tests
// (and `latdoc doctor --sysroot DIR`) can point the whole collector at a recorded tree.
//
// Paths given to SysRoot are host paths ("/sys/bus/pci/devices"); SysRoot prefixes its root.
// Nothing here writes. Reads never throw; errors come back as Status with the host path in the
// message ("/proc/12/environ: Permission denied"). Thread-compatible (no mutable state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace latdoc::host {

class SysRoot {
 public:
  // `root` is "/" for the live host, or a directory holding a recorded tree.
  explicit SysRoot(std::string root);

  const std::string& root() const { return root_; }
  bool live() const { return root_ == "/"; }

  // The host path joined to the root ("/sys/x" -> "tests/data/host/h200/sys/x").
  std::string Resolve(std::string_view host_path) const;

  // Reads a small file (sysfs values, /proc tables). Errors name the host path and the errno
  // reason. Reads at most `max_bytes` (a guard against unexpected huge files).
  StatusOr<std::string> Read(std::string_view host_path, size_t max_bytes = 4 << 20) const;
  // Read() with the result trimmed of blanks and the trailing newline.
  StatusOr<std::string> ReadTrimmed(std::string_view host_path) const;

  bool Exists(std::string_view host_path) const;

  // Entry names in a directory, sorted; "." and ".." left out. Missing directory: error.
  StatusOr<std::vector<std::string>> List(std::string_view host_path) const;

  // The target of a symbolic link, as stored ("../../../bus/pci/drivers/nvidia").
  StatusOr<std::string> ReadLink(std::string_view host_path) const;

  // The host path with every symbolic link resolved (realpath inside the root): for
  // "/sys/bus/pci/devices/0000:00:06.0" gives "/sys/devices/pci0000:00/0000:00:06.0".
  // A link that points outside the root is an error.
  StatusOr<std::string> Canonical(std::string_view host_path) const;

 private:
  std::string root_;  // no trailing '/', except for "/" itself
};

}  // namespace latdoc::host
