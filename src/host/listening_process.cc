#include "host/listening_process.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "base/strings.h"

namespace latdoc::host {
namespace {

std::optional<int64_t> ParseHex(std::string_view s) {
  if (s.empty() || s.size() > 8) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

// /proc/net/tcp (Documentation/networking/proc_net_tcp.rst):
//   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
//    0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 51234 ...
// local_address is ADDR:PORT in hex (tcp6: 32 hex digits of address); st 0A is LISTEN; the 10th
// field is the socket's inode.
std::vector<int64_t> ListeningInodes(std::string_view text, int64_t port) {
  std::vector<int64_t> out;
  for (auto line : Split(text, '\n')) {
    auto w = SplitWhitespace(line);
    if (w.size() < 10 || w[3] != "0A") continue;
    const auto colon = w[1].rfind(':');
    if (colon == std::string_view::npos) continue;
    if (ParseHex(w[1].substr(colon + 1)) != port) continue;
    if (auto inode = ParseInt64(w[9]); inode && *inode > 0) out.push_back(*inode);
  }
  return out;
}

StatusOr<int64_t> FindListeningPid(const SysRoot& fs, int64_t port) {
  std::set<std::string> links;
  for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    auto text = fs.Read(f);
    if (!text.ok()) continue;
    for (int64_t inode : ListeningInodes(*text, port)) links.insert(fmt::format("socket:[{}]", inode));
  }
  if (links.empty()) return NotFound(fmt::format("no socket listens on port {} (/proc/net/tcp, tcp6)", port));
  auto pids = fs.List("/proc");
  if (!pids.ok()) return pids.status();
  std::vector<int64_t> sorted;
  for (const auto& p : *pids)
    if (auto pid = ParseInt64(p)) sorted.push_back(*pid);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t pid : sorted) {
    const std::string dir = fmt::format("/proc/{}/fd", pid);
    auto fds = fs.List(dir);
    if (!fds.ok()) continue;  // another user's process, or gone
    for (const auto& fd : *fds) {
      auto target = fs.ReadLink(dir + "/" + fd);
      if (target.ok() && links.count(*target)) return pid;
    }
  }
  return NotFound(fmt::format("port {} listens, but no readable /proc/PID/fd holds its socket "
                              "(another user's process: run as it or root)", port));
}

}  // namespace latdoc::host
