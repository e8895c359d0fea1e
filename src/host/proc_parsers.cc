#include "host/proc_parsers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "base/strings.h"

namespace latdoc::host {

// current_link_speed / max_link_speed (drivers/pci/pci-sysfs.c, pci_speed_string):
//   32.0 GT/s PCIe        (kernel >= 5.7)
//   8 GT/s                (older kernels)
//   Unknown
std::optional<double> ParseLinkSpeedGts(std::string_view s) {
  auto words = SplitWhitespace(s);
  if (words.size() < 2 || words[1] != "GT/s") return std::nullopt;
  auto v = ParseDouble(words[0]);
  if (!v || *v <= 0) return std::nullopt;
  return v;
}

std::optional<int64_t> PcieGenFromGts(double gts) {
  static constexpr double kSpeeds[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int i = 0; i < 6; ++i) {
    if (std::fabs(gts - kSpeeds[i]) < 0.01) return i + 1;
  }
  return std::nullopt;
}

// cpulist format (Documentation/admin-guide/cputopology.rst): "0-15", "0-3,8,10-11", "".
std::optional<std::vector<int64_t>> ParseCpuList(std::string_view s) {
  std::vector<int64_t> cpus;
  s = Trim(s);
  if (s.empty()) return cpus;
  for (auto part : Split(s, ',')) {
    auto dash = part.find('-');
    if (dash == std::string_view::npos) {
      auto v = ParseInt64(part);
      if (!v || *v < 0) return std::nullopt;
      cpus.push_back(*v);
      continue;
    }
    auto lo = ParseInt64(part.substr(0, dash));
    auto hi = ParseInt64(part.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi - *lo > 1 << 20) return std::nullopt;
    for (int64_t c = *lo; c <= *hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

// /proc/net/sockstat:
//   sockets: used 8
//   TCP: inuse 1 orphan 0 tw 2 alloc 1 mem 0
Sockstat ParseSockstat(std::string_view text) {
  Sockstat out;
  for (auto line : Split(text, '\n')) {
    auto w = SplitWhitespace(line);
    if (w.empty() || w[0] != "TCP:") continue;
    for (size_t i = 1; i + 1 < w.size(); i += 2) {
      if (w[i] == "inuse") out.tcp_inuse = ParseInt64(w[i + 1]);
      if (w[i] == "tw") out.tcp_time_wait = ParseInt64(w[i + 1]);
    }
  }
  return out;
}

// /proc/net/tcp (Documentation/networking/proc_net_tcp.rst):
//   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid ...
//    0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 ...
//    1: 0100007F:1F40 0100007F:A2C4 06 00000000:00000000 03:00000F9A 00000000     0 ...
// tcp6 has a 32-hex-digit address before the ':'. The port is hex; st 06 is TIME_WAIT.
int64_t CountTimeWaitOnPort(std::string_view text, int64_t port, int64_t* bad_lines) {
  int64_t n = 0;
  bool header = true;
  for (auto line : Split(text, '\n')) {
    if (header) {
      header = false;
      continue;
    }
    auto w = SplitWhitespace(line);
    if (w.empty()) continue;
    if (w.size() < 4) {
      if (bad_lines) ++*bad_lines;
      continue;
    }
    auto colon = w[1].rfind(':');
    if (colon == std::string_view::npos) {
      if (bad_lines) ++*bad_lines;
      continue;
    }
    std::string_view hex = w[1].substr(colon + 1);
    int64_t p = 0;
    bool ok = !hex.empty() && hex.size() <= 4;
    for (size_t i = 0; ok && i < hex.size(); ++i) {  // a longer field is bad, not accumulated
      const char c = hex[i];
      int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (d < 0) ok = false;
      p = p * 16 + std::max(d, 0);
    }
    if (!ok) {
      if (bad_lines) ++*bad_lines;
      continue;
    }
    if (p == port && w[3] == "06") ++n;
  }
  return n;
}

// /proc/net/netstat and /proc/net/snmp:
//   TcpExt: SyncookiesSent SyncookiesRecv ... ListenOverflows ListenDrops ...
//   TcpExt: 0 0 ... 0 0 ...
//   Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens ... OutSegs RetransSegs ...
//   Tcp: 1 200 120000 -1 1071 3 ... 31338 2 ...
std::map<std::string, int64_t> ParseCounterPairs(std::string_view text) {
  std::map<std::string, int64_t> out;
  auto lines = Split(text, '\n');
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    auto names = SplitWhitespace(lines[i]);
    auto values = SplitWhitespace(lines[i + 1]);
    if (names.empty() || values.empty() || names[0] != values[0] || names.size() != values.size() ||
        names[0].back() != ':') {
      continue;
    }
    // A names line is followed by its values line: the values start with a number.
    if (values.size() > 1 && !ParseInt64(values[1])) continue;
    const std::string prefix(names[0].substr(0, names[0].size() - 1));
    for (size_t k = 1; k < names.size(); ++k) {
      if (auto v = ParseInt64(values[k])) out[prefix + "." + std::string(names[k])] = *v;
    }
    ++i;
  }
  return out;
}

// /proc/interrupts:
//              CPU0       CPU1       CPU2
//    42:          0        117          0  PCI-MSIX-0000:00:06.0    0-edge      nvidia
//    38:         12          0       9031  PCI-MSIX-0000:00:04.0    1-edge      virtio3-input.0
//   LOC:       1386       1428        521   Local timer interrupts
// Columns are online CPUs only. The action (last field) names the device or queue.
Interrupts ParseInterrupts(std::string_view text) {
  Interrupts out;
  bool first = true;
  for (auto line : Split(text, '\n')) {
    if (Trim(line).empty()) continue;
    auto w = SplitWhitespace(line);
    if (first) {
      first = false;
      out.cpu_columns = static_cast<int64_t>(w.size());
      for (size_t c = 0; c < w.size(); ++c) {
        std::optional<int64_t> id;
        if (w[c].substr(0, 3) == "CPU") id = ParseInt64(w[c].substr(3));
        out.cpu_ids.push_back(id.value_or(static_cast<int64_t>(c)));
      }
      continue;
    }
    if (w.empty() || w[0].back() != ':') {
      ++out.bad_lines;
      continue;
    }
    std::string_view irq = w[0].substr(0, w[0].size() - 1);
    if (!ParseInt64(irq)) continue;  // LOC, RES, ... are not device interrupts
    IrqRow row;
    row.irq = std::string(irq);
    size_t k = 1;
    for (; k < w.size() && static_cast<int64_t>(row.per_cpu.size()) < out.cpu_columns; ++k) {
      auto v = ParseInt64(w[k]);
      if (!v) break;
      row.per_cpu.push_back(*v);
    }
    if (static_cast<int64_t>(row.per_cpu.size()) != out.cpu_columns || k >= w.size()) {
      ++out.bad_lines;
      continue;
    }
    row.action = std::string(w.back());
    out.rows.push_back(std::move(row));
  }
  return out;
}

// /proc/PID/task/TID/stat (proc(5)): "625 (python3) R 618 616 ... utime stime ... processor ..."
// comm may hold spaces and parentheses, so fields are counted from the last ')'.
std::optional<TaskStat> ParseTaskStat(std::string_view text) {
  auto open = text.find('(');
  auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  TaskStat t;
  t.comm = std::string(text.substr(open + 1, close - open - 1));
  auto w = SplitWhitespace(text.substr(close + 1));
  // w[0] is field 3 (state); field N is w[N - 3].
  if (w.size() < 37) return std::nullopt;
  t.state = w[0].empty() ? '?' : w[0][0];
  auto ut = ParseInt64(w[14 - 3]);
  auto st = ParseInt64(w[15 - 3]);
  auto cpu = ParseInt64(w[39 - 3]);
  if (!ut || !st || !cpu) return std::nullopt;
  t.utime_ticks = *ut;
  t.stime_ticks = *st;
  t.processor = *cpu;
  return t;
}

// /proc/PID/status: "Cpus_allowed_list:\t0-15"
std::optional<std::string> StatusField(std::string_view text, std::string_view key) {
  for (auto line : Split(text, '\n')) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (line.substr(0, colon) == key) return std::string(Trim(line.substr(colon + 1)));
  }
  return std::nullopt;
}

// /proc/PID/io: "rchar: 1605003\nwchar: 0\n...\nwrite_bytes: 0\n"
std::optional<int64_t> ParseIoWriteBytes(std::string_view text) {
  auto v = StatusField(text, "write_bytes");
  if (!v) return std::nullopt;
  return ParseInt64(*v);
}

// /proc/diskstats (Documentation/admin-guide/iostats.rst):
//    259       0 nvme0n1 9121 0 532118 1764 26113 ... 0 24092 31200 ...
// field 13 (1-based, counting major and minor) is io_ticks: ms the device had I/O in flight.
namespace {
// The whole disks' values of one 0-based column of /proc/diskstats.
std::map<std::string, int64_t> DiskColumn(std::string_view text, size_t column) {
  std::map<std::string, int64_t> out;
  for (auto line : Split(text, '\n')) {
    auto w = SplitWhitespace(line);
    if (w.size() <= column) continue;
    std::string name(w[2]);
    if (name.rfind("loop", 0) == 0 || name.rfind("ram", 0) == 0 || name.rfind("zram", 0) == 0) {
      continue;
    }
    // Partitions: sda1, nvme0n1p1, vda2 (a whole disk never ends in a digit after a letter
    // for sd/vd/xvd; nvme whole disks end in n<digit> without 'p').
    bool partition = false;
    if (name.rfind("nvme", 0) == 0 || name.rfind("mmcblk", 0) == 0) {
      partition = name.find('p', 4) != std::string::npos;
    } else if (name.rfind("sd", 0) == 0 || name.rfind("vd", 0) == 0 ||
               name.rfind("xvd", 0) == 0 || name.rfind("hd", 0) == 0) {
      partition = std::isdigit(static_cast<unsigned char>(name.back())) != 0;
    }
    if (partition) continue;
    if (auto v = ParseInt64(w[column])) out[name] = *v;
  }
  return out;
}
}  // namespace

std::map<std::string, int64_t> ParseDiskIoTicks(std::string_view text) { return DiskColumn(text, 12); }

// Fields 16 and 17 (flush requests completed, ms flushing) follow the discard fields 12-15:
// 0-based column 18 counting major, minor and name.
std::map<std::string, int64_t> ParseDiskFlushes(std::string_view text) { return DiskColumn(text, 18); }

std::optional<std::string> BracketedChoice(std::string_view text) {
  auto open = text.find('[');
  auto close = text.find(']', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos) return std::nullopt;
  return std::string(text.substr(open + 1, close - open - 1));
}

// pp_dpm_sclk (drivers/gpu/drm/amd/pm/swsmu/smu13/smu_v13_0_6_ppt.c, fine-grained gfxclk):
//   S: 19Mhz *        <- deep sleep (below 140 MHz), current
//   0: 500Mhz
//   1: 2100Mhz
// or, when running:  0: 500Mhz / 1: 1300Mhz * / 2: 2100Mhz
std::optional<SclkLevels> ParsePpDpmSclk(std::string_view text) {
  SclkLevels out;
  bool any = false;
  for (auto line : Split(text, '\n')) {
    line = Trim(line);
    if (line.empty()) continue;
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string_view level = Trim(line.substr(0, colon));
    std::string_view rest = Trim(line.substr(colon + 1));
    bool current = !rest.empty() && rest.back() == '*';
    if (current) rest = Trim(rest.substr(0, rest.size() - 1));
    std::string lower = ToLower(rest);
    if (lower.size() < 4 || lower.compare(lower.size() - 3, 3, "mhz") != 0) return std::nullopt;
    auto mhz = ParseInt64(lower.substr(0, lower.size() - 3));
    if (!mhz) return std::nullopt;
    any = true;
    bool sleep = level == "S";
    if (!sleep && !ParseInt64(level)) return std::nullopt;
    if (!sleep) out.max_mhz = std::max(out.max_mhz.value_or(0), *mhz);
    if (current) {
      out.cur_mhz = *mhz;
      out.deep_sleep = sleep;
    }
  }
  if (!any) return std::nullopt;
  return out;
}

std::vector<std::string> SplitNul(std::string_view bytes) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\0', start);
    if (end == std::string_view::npos) end = bytes.size();
    out.emplace_back(bytes.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// /proc/PID/cgroup (man 7 cgroups), one hierarchy a line, "ID:CONTROLLERS:PATH":
//   12:cpu,cpuacct:/docker/3f2a9c         (cgroup v1)
//   1:name=systemd:/docker/3f2a9c
//   0::/kubepods.slice/kubepods-pod7.slice/cri-containerd-ab12.scope   (cgroup v2)
// The path may itself hold ':' (it is everything after the second one).
ProcCgroup ParseProcCgroup(std::string_view text) {
  ProcCgroup out;
  for (auto line : Split(text, '\n')) {
    const size_t a = line.find(':');
    if (a == std::string_view::npos) continue;
    const size_t b = line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    std::string_view controllers = line.substr(a + 1, b - a - 1);
    std::string path(line.substr(b + 1));
    if (path.empty() || path[0] != '/') continue;
    if (line.substr(0, a) == "0" && controllers.empty()) {
      out.unified = path;
      continue;
    }
    for (auto c : Split(controllers, ',')) {
      if (c == "cpu") {
        out.v1_cpu = path;
        out.v1_cpu_controllers = std::string(controllers);
      }
    }
  }
  return out;
}

namespace {
// mountinfo escapes blanks, tabs, newlines and backslashes in paths as \ooo (octal).
std::string UnescapeMountPath(std::string_view p) {
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 3 < p.size() && std::isdigit(static_cast<unsigned char>(p[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(p[i + 2])) &&
        std::isdigit(static_cast<unsigned char>(p[i + 3]))) {
      out += static_cast<char>((p[i + 1] - '0') * 64 + (p[i + 2] - '0') * 8 + (p[i + 3] - '0'));
      i += 3;
    } else {
      out += p[i];
    }
  }
  return out;
}
}  // namespace

// /proc/self/mountinfo (man 5 proc): ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] -
// FSTYPE SOURCE SUPER_OPTIONS
//   32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
//   29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate
//   1585 1584 0:31 /docker/3f2a /sys/fs/cgroup/cpu,cpuacct ro,... - cgroup cgroup rw,cpu,cpuacct
std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo) {
  std::vector<CgroupMount> out;
  for (auto line : Split(mountinfo, '\n')) {
    auto w = SplitWhitespace(line);
    size_t dash = 0;
    for (size_t i = 6; i < w.size(); ++i) {
      if (w[i] == "-") {
        dash = i;
        break;
      }
    }
    if (dash == 0 || dash + 2 >= w.size()) continue;  // FSTYPE and SOURCE follow the "-"
    CgroupMount m;
    if (w[dash + 1] == "cgroup2") m.version = 2;
    else if (w[dash + 1] == "cgroup") m.version = 1;
    else continue;
    m.root = UnescapeMountPath(w[3]);
    m.mount_point = UnescapeMountPath(w[4]);
    if (m.version == 1 && dash + 3 < w.size()) {
      for (auto opt : Split(w[dash + 3], ',')) {
        if (opt != "rw" && opt != "ro" && opt.find('=') == std::string_view::npos &&
            opt != "clone_children" && opt != "noprefix" && opt != "xattr") {
          m.controllers.emplace_back(opt);
        }
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

// cgroup v2 cpu.max (Documentation/admin-guide/cgroup-v2.rst): "$MAX $PERIOD", MAX "max" = none.
//   max 100000
//   250000 100000
std::optional<CpuQuota> ParseCpuMax(std::string_view text) {
  auto w = SplitWhitespace(text);
  if (w.empty() || w.size() > 2) return std::nullopt;
  CpuQuota q;
  if (w.size() == 2) {
    auto period = ParseInt64(w[1]);
    if (!period || *period <= 0) return std::nullopt;
    q.period_us = *period;
  }
  if (w[0] == "max") return q;
  auto quota = ParseInt64(w[0]);
  if (!quota || *quota <= 0) return std::nullopt;
  q.quota_us = *quota;
  return q;
}

// cgroup v1 (Documentation/scheduler/sched-bwc.rst): cpu.cfs_quota_us "-1" (no limit) or
// "250000"; cpu.cfs_period_us "100000".
std::optional<CpuQuota> ParseCfsQuota(std::string_view quota_text, std::string_view period_text) {
  auto quota = ParseInt64(Trim(quota_text));
  auto period = ParseInt64(Trim(period_text));
  if (!quota || !period || *period <= 0 || *quota == 0 || *quota < -1) return std::nullopt;
  CpuQuota q;
  q.period_us = *period;
  if (*quota > 0) q.quota_us = *quota;
  return q;
}

// cpu.stat. v2 (cgroup-v2.rst, with the cpu controller enabled):
//   usage_usec 1234 / user_usec / system_usec / nr_periods 40 / nr_throttled 31 /
//   throttled_usec 2871342 / nr_bursts 0 / burst_usec 0
// v1 (sched-bwc.rst): nr_periods 40 / nr_throttled 31 / throttled_time 2871342000 (ns)
std::optional<CgroupCpuStat> ParseCgroupCpuStat(std::string_view text) {
  std::optional<int64_t> periods, throttled, usec, nsec;
  for (auto line : Split(text, '\n')) {
    auto w = SplitWhitespace(line);
    if (w.size() != 2) continue;
    auto v = ParseInt64(w[1]);
    if (!v || *v < 0) continue;
    if (w[0] == "nr_periods") periods = v;
    else if (w[0] == "nr_throttled") throttled = v;
    else if (w[0] == "throttled_usec") usec = v;
    else if (w[0] == "throttled_time") nsec = v;
  }
  if (!periods || !throttled) return std::nullopt;
  CgroupCpuStat s;
  s.nr_periods = *periods;
  s.nr_throttled = *throttled;
  s.throttled_us = usec ? *usec : nsec ? *nsec / 1000 : 0;
  return s;
}

// Pressure stall information (Documentation/accounting/psi.rst):
//   some avg10=4.11 avg60=3.01 avg300=1.27 total=25274890
//   full avg10=0.00 avg60=0.00 avg300=0.00 total=0
std::optional<Psi> ParsePsi(std::string_view text) {
  std::optional<Psi> out;
  for (auto line : Split(text, '\n')) {
    auto w = SplitWhitespace(line);
    if (w.size() < 4 || (w[0] != "some" && w[0] != "full")) continue;
    std::optional<double> avg[3];
    static constexpr std::string_view kKeys[3] = {"avg10=", "avg60=", "avg300="};
    for (size_t i = 1; i < w.size(); ++i) {
      for (int k = 0; k < 3; ++k) {
        if (w[i].substr(0, kKeys[k].size()) == kKeys[k]) {
          auto v = ParseDouble(w[i].substr(kKeys[k].size()));
          if (v && *v >= 0 && *v <= 100) avg[k] = v;
        }
      }
    }
    if (!avg[0] || !avg[1] || !avg[2]) continue;
    if (w[0] == "some") {
      if (!out) out = Psi();
      out->some_avg10 = *avg[0];
      out->some_avg60 = *avg[1];
      out->some_avg300 = *avg[2];
    } else if (out) {  // "full" follows "some"
      out->full_avg10 = avg[0];
      out->full_avg60 = avg[1];
      out->full_avg300 = avg[2];
    }
  }
  return out;
}

// /proc/vmstat: "pswpin 0" / "pswpout 12" / ... one counter a line.
std::map<std::string, int64_t> ParseVmstat(std::string_view text) {
  std::map<std::string, int64_t> out;
  for (auto line : Split(text, '\n')) {
    auto w = SplitWhitespace(line);
    if (w.size() != 2) continue;
    if (auto v = ParseInt64(w[1])) out[std::string(w[0])] = *v;
  }
  return out;
}

namespace {

// A 32-bit counter as the kernel prints it (%08x): 1 to 8 hex digits, no sign.
std::optional<int64_t> ParseHex(std::string_view w) {
  if (w.empty() || w.size() > 8 || !std::isxdigit(static_cast<unsigned char>(w[0]))) return std::nullopt;
  uint32_t v = 0;
  auto r = std::from_chars(w.data(), w.data() + w.size(), v, 16);
  if (r.ec != std::errc() || r.ptr != w.data() + w.size()) return std::nullopt;
  return int64_t{v};
}

}  // namespace

// 0017851d 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 ...
// 00172670 00000002 0000002a 00000000 00000000 00000000 00000000 00000000 00000000 00000000 ...
std::optional<SoftnetStat> ParseSoftnetStat(std::string_view text) {
  SoftnetStat t;
  for (auto line : Split(text, '\n')) {
    auto w = SplitWhitespace(line);
    if (w.empty()) continue;
    std::optional<int64_t> p, d, q, cpu = -1;
    if (w.size() >= 3) {
      p = ParseHex(w[0]);
      d = ParseHex(w[1]);
      q = ParseHex(w[2]);
    }
    if (w.size() >= 13) cpu = ParseHex(w[12]);
    if (!p || !d || !q || !cpu) {
      ++t.bad_lines;
      continue;
    }
    t.cpus.push_back({*p, *d, *q, *cpu});
  }
  if (t.cpus.empty()) return std::nullopt;
  return t;
}

// entries  clashres found new invalid ignore delete chainlength insert insert_failed drop ...
// 00000000  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 ...
std::map<std::string, std::vector<int64_t>> ParseStatTable(std::string_view text) {
  std::map<std::string, std::vector<int64_t>> out;
  std::vector<std::string_view> names;
  std::vector<int64_t> values;
  for (auto line : Split(text, '\n')) {
    auto w = SplitWhitespace(line);
    if (w.empty()) continue;
    if (names.empty()) {
      if (std::all_of(w.begin(), w.end(), [](auto x) { return ParseHex(x).has_value(); })) {
        return out;  // values before any header: not a stat table
      }
      names = w;
      for (auto n : names) out[std::string(n)];
      continue;
    }
    if (w.size() != names.size()) continue;
    values.clear();
    for (auto x : w) {
      if (auto v = ParseHex(x)) values.push_back(*v);
    }
    if (values.size() != names.size()) continue;
    for (size_t i = 0; i < names.size(); ++i) out[std::string(names[i])].push_back(values[i]);
  }
  return out;
}

std::optional<int64_t> Counter32Delta(const std::vector<int64_t>& before,
                                      const std::vector<int64_t>& after) {
  if (before.size() != after.size()) return std::nullopt;
  constexpr int64_t kRange = int64_t{1} << 32;
  int64_t sum = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    int64_t d = after[i] - before[i];
    if (d < 0) d += kRange;
    if (d < 0 || d >= kRange / 2) return std::nullopt;
    sum += d;
  }
  return sum;
}

}  // namespace latdoc::host
