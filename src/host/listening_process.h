// The process listening on a local TCP port: the server a URL on this host points at, found by
// its socket rather than its command line (any server, the simulator included). Read-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "host/sysroot.h"

namespace latdoc::host {

// The inodes of the sockets in state LISTEN (st 0A) on local `port`, from /proc/net/tcp or
// /proc/net/tcp6 text. Lines that do not parse are skipped.
std::vector<int64_t> ListeningInodes(std::string_view proc_net_tcp, int64_t port);

// The lowest pid holding a LISTEN socket on `port` (/proc/net/tcp{,6}, then each
// /proc/PID/fd/* link "socket:[INODE]"). Errors: nothing listens on the port, or the socket's
// process cannot be read (another user's: run as it or root).
StatusOr<int64_t> FindListeningPid(const SysRoot& fs, int64_t port);

}  // namespace latdoc::host
