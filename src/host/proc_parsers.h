// Parsers for the /proc and /sys text the host collectors read. Pure functions: text in,
// values out; a malformed field gives nullopt (never 0), a malformed line is skipped and
// counted where the format has lines. Each parser's .cc comment pastes a sample of its input.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace latdoc::host {

// "32.0 GT/s PCIe" (kernel >= 5.7) or "8 GT/s" (older) -> 32.0 / 8.0. "Unknown" -> nullopt.
std::optional<double> ParseLinkSpeedGts(std::string_view s);
// 2.5 -> 1, 5 -> 2, 8 -> 3, 16 -> 4, 32 -> 5, 64 -> 6; anything else nullopt.
std::optional<int64_t> PcieGenFromGts(double gts);

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Empty string -> empty list. Garbage -> nullopt.
std::optional<std::vector<int64_t>> ParseCpuList(std::string_view s);

struct Sockstat {
  std::optional<int64_t> tcp_inuse;
  std::optional<int64_t> tcp_time_wait;
};
Sockstat ParseSockstat(std::string_view text);

// TIME_WAIT (st 06) sockets whose local port is `port`, in /proc/net/tcp or tcp6 text.
// `bad_lines` (optional) counts lines that did not parse.
int64_t CountTimeWaitOnPort(std::string_view text, int64_t port, int64_t* bad_lines = nullptr);

// /proc/net/netstat and /proc/net/snmp: "Prefix: names..." / "Prefix: values..." line pairs,
// flattened to {"TcpExt.ListenOverflows": 0, "Tcp.RetransSegs": 12, ...}.
std::map<std::string, int64_t> ParseCounterPairs(std::string_view text);

struct IrqRow {
  std::string irq;               // "42", or "LOC" for the per-CPU rows
  std::vector<int64_t> per_cpu;  // one count per CPU column
  std::string action;            // last field(s): "nvidia", "virtio3-rx", "mlx5_comp3@pci:..."
};
struct Interrupts {
  int64_t cpu_columns = 0;
  // The CPU of each column, from the header's "CPU0 CPU2 ...": online CPUs only, so with one
  // offline the column index is not the CPU number.
  std::vector<int64_t> cpu_ids;
  std::vector<IrqRow> rows;  // numbered IRQs only
  int64_t bad_lines = 0;
};
Interrupts ParseInterrupts(std::string_view text);

struct TaskStat {
  std::string comm;
  char state = '?';
  int64_t utime_ticks = 0;  // field 14
  int64_t stime_ticks = 0;  // field 15
  int64_t processor = -1;   // field 39: CPU last run on
};
std::optional<TaskStat> ParseTaskStat(std::string_view text);

// The value of "Key:\tvalue" in /proc/PID/status ("Cpus_allowed_list" -> "0-15").
std::optional<std::string> StatusField(std::string_view text, std::string_view key);

// "write_bytes: N" from /proc/PID/io.
std::optional<int64_t> ParseIoWriteBytes(std::string_view text);

// /proc/diskstats -> {device: io_ticks_ms}; partitions and loop/ram devices left out.
std::map<std::string, int64_t> ParseDiskIoTicks(std::string_view text);
// /proc/diskstats -> {device: flush requests completed} (field 16, Linux 5.5+; devices whose line
// has fewer fields are left out). The same devices as ParseDiskIoTicks.
std::map<std::string, int64_t> ParseDiskFlushes(std::string_view text);

// "always [madvise] never" -> "madvise".
std::optional<std::string> BracketedChoice(std::string_view text);

// amdgpu pp_dpm_sclk: current and highest level in MHz, and whether the current level is the
// deep-sleep "S:" line.
struct SclkLevels {
  std::optional<int64_t> cur_mhz;
  std::optional<int64_t> max_mhz;
  bool deep_sleep = false;
};
std::optional<SclkLevels> ParsePpDpmSclk(std::string_view text);

// /proc/PID/cgroup (man 7 cgroups): "0::/system.slice/vllm.service" is the cgroup v2 line;
// "4:cpu,cpuacct:/docker/3f2a" is a cgroup v1 hierarchy with its controllers. Lines that do not
// have three ':'-separated fields are skipped.
struct ProcCgroup {
  std::optional<std::string> unified;  // the path on the v2 line ("0::")
  std::optional<std::string> v1_cpu;   // the path in the v1 hierarchy that has the cpu controller
  std::string v1_cpu_controllers;      // that hierarchy's controller list: "cpu,cpuacct"
};
ProcCgroup ParseProcCgroup(std::string_view text);

// The cgroup mounts in /proc/self/mountinfo (man 5 proc): for each, the group of the hierarchy
// that is the mount's root ("/" on the host; a container without its own cgroup namespace sees
// its own group, "/docker/3f2a", as the root) and where it is mounted.
struct CgroupMount {
  int version = 0;             // 1 ("cgroup") or 2 ("cgroup2")
  std::string root;            // "/", "/docker/3f2a"
  std::string mount_point;     // "/sys/fs/cgroup/cpu,cpuacct"
  std::vector<std::string> controllers;  // v1: the super options that name controllers
};
std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo);

// CFS bandwidth limit. cgroup v2 cpu.max: "200000 100000" (quota and period in us) or
// "max 100000" (no limit). cgroup v1: cpu.cfs_quota_us ("-1" = no limit) and cpu.cfs_period_us.
struct CpuQuota {
  std::optional<int64_t> quota_us;  // nullopt: no limit
  int64_t period_us = 100000;
};
std::optional<CpuQuota> ParseCpuMax(std::string_view text);
std::optional<CpuQuota> ParseCfsQuota(std::string_view quota_text, std::string_view period_text);

// A cgroup's cpu.stat throttling counters, since the cgroup was made. v2: nr_periods,
// nr_throttled, throttled_usec; v1: nr_periods, nr_throttled, throttled_time (ns). nullopt when
// nr_periods or nr_throttled is missing.
struct CgroupCpuStat {
  int64_t nr_periods = 0;
  int64_t nr_throttled = 0;
  int64_t throttled_us = 0;
};
std::optional<CgroupCpuStat> ParseCgroupCpuStat(std::string_view text);

// Pressure stall information (/proc/pressure/{cpu,memory,io}, a cgroup's *.pressure): the share
// of wall time, in percent, that some (at least one) or all non-idle tasks were stalled on the
// resource, averaged over 10, 60 and 300 s. The cpu file has no "full" line before 5.13; at the
// system level it is meaningless (5.13-5.17) or reads 0 (later).
struct Psi {
  double some_avg10 = 0, some_avg60 = 0, some_avg300 = 0;
  std::optional<double> full_avg10, full_avg60, full_avg300;
};
// nullopt without a well-formed "some" line.
std::optional<Psi> ParsePsi(std::string_view text);

// /proc/vmstat "name value" lines -> {name: value}.
std::map<std::string, int64_t> ParseVmstat(std::string_view text);

// /proc/net/softnet_stat: one line per online CPU of hex columns; the first three are the packets
// processed, dropped at the CPU's input backlog (net.core.netdev_max_backlog) and the times the
// receive softirq ran out of budget (time_squeeze). The kernel keeps them as 32-bit counters per
// CPU, so they are kept per CPU (see Counter32Delta). Newer kernels write the CPU's number in
// the 13th column. nullopt when no line parses; lines that do not parse are counted.
struct SoftnetCpu {
  int64_t processed = 0;
  int64_t dropped = 0;
  int64_t time_squeeze = 0;
  int64_t cpu = -1;  // the 13th column; -1 where the kernel writes fewer
};
struct SoftnetStat {
  std::vector<SoftnetCpu> cpus;
  int64_t bad_lines = 0;
};
std::optional<SoftnetStat> ParseSoftnetStat(std::string_view text);

// /proc/net/stat/nf_conntrack (and the other /proc/net/stat tables): a header line of column
// names, then one line of hex values per possible CPU. Each column's values, per CPU, by name
// ({"drop": {0, 3}, ...}); empty when there is no header. Lines of another width are skipped.
std::map<std::string, std::vector<int64_t>> ParseStatTable(std::string_view text);

// The growth of counters the kernel keeps per CPU as 32-bit values, summed over the CPUs: a
// CPU's counter that went down wrapped past 2^32 once. nullopt when the two samples hold a
// different number of CPUs, or when a counter went down by more than half of 2^32 (a reset, as
// when nf_conntrack is reloaded, rather than a wrap).
std::optional<int64_t> Counter32Delta(const std::vector<int64_t>& before,
                                      const std::vector<int64_t>& after);

// NUL-separated /proc/PID/cmdline or environ -> words (a trailing NUL makes no empty word).
std::vector<std::string> SplitNul(std::string_view bytes);

}  // namespace latdoc::host
