// HostFacts: everything `latdoc doctor` reads from a host, as plain typed structs (DESIGN.md:
// collect -> facts -> rules). Collectors (collector.h) fill them; rules (rules/host_rules.h)
// read them; FactsToJson/FactsFromJson let facts be collected on the server and judged
// anywhere. Every field a probe may fail to read is a Fact<T> ("unknown" with a reason).
//
// Units are in the names. Counter deltas are over `sample_interval_ns` (two samples).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "host/fact.h"

namespace latdoc::host {

inline constexpr const char* kFactsSchema = "latdoc.host_facts/1";

// One PCIe link: the GPU function itself or a bridge / switch port above it.
struct PcieLink {
  std::string bdf;   // "0000:00:06.0"
  std::string role;  // "gpu" or "bridge"
  Fact<double> cur_speed_gts;  // from current_link_speed ("32.0 GT/s PCIe")
  Fact<double> max_speed_gts;
  Fact<int64_t> cur_width;
  Fact<int64_t> max_width;
};

struct GpuFacts {
  int64_t index = 0;         // position among GPUs sorted by PCI address (CUDA_DEVICE_ORDER=PCI_BUS_ID)
  std::string vendor;        // "nvidia" or "amd"
  std::string bdf;           // "0000:00:06.0"
  Fact<std::string> name;    // "NVIDIA H200", "AMD MI300X (gfx942)"
  Fact<std::string> driver;  // sysfs driver link name: "nvidia", "amdgpu"
  Fact<int64_t> numa_node;   // -1: the platform gave no NUMA information (normal on one node)
  Fact<std::string> local_cpulist;
  std::vector<PcieLink> pcie_path;  // the GPU first, then each bridge up to the root port

  Fact<int64_t> util_pct;            // NVML utilization.gpu / amdgpu gpu_busy_percent
  Fact<int64_t> sm_clock_mhz;        // current graphics/SM clock
  Fact<int64_t> max_sm_clock_mhz;
  Fact<int64_t> memory_total_mib;
  Fact<double> power_limit_w;        // enforced limit / hwmon power1_cap
  Fact<double> power_default_limit_w;

  // NVIDIA only.
  Fact<uint64_t> clocks_event_reasons;  // nvmlClocksEventReasons bitmask; 0x1 = GpuIdle
  Fact<bool> persistence_mode;
  Fact<int64_t> pcie_gen_cur;           // the driver's view of the link (NVML / nvidia-smi)
  Fact<int64_t> pcie_gen_max;
  Fact<int64_t> pcie_width_cur;
  Fact<int64_t> pcie_width_max;

  // AMD only.
  Fact<std::string> perf_level;  // power_dpm_force_performance_level: auto, manual, low, ...
  Fact<bool> sclk_deep_sleep;    // pp_dpm_sclk shows an "S:" line marked current
  // `amd-smi metric --json` power.throttle_status: "THROTTLED" / "UNTHROTTLED" (set when the
  // SMU's throttler status bitmask is nonzero; amdsmi_cli metric.py), and the names of the
  // violation kinds it reports ACTIVE (MI300 and later: "ppt", "socket_thermal", "prochot",
  // "vr_thermal", "hbm_thermal"), "" when none.
  Fact<std::string> throttle_status;
  Fact<std::string> throttle_active;

  std::string vendor_source;  // "nvml", "nvidia-smi", "amdgpu-sysfs", "amdgpu-sysfs+amd-smi"
};

struct NumaNode {
  int64_t id = 0;
  std::string cpulist;  // "0-15"
  // The CPUs of cpulist as numbers; nullopt when it does not parse.
  std::optional<std::vector<int64_t>> Cpus() const;
};

// Pressure stall information as collected (percent of wall time; proc_parsers.h Psi).
struct PsiFacts {
  double some_avg10 = 0, some_avg60 = 0, some_avg300 = 0;
  bool has_full = false;  // the file had a "full" line
  double full_avg10 = 0, full_avg60 = 0, full_avg300 = 0;
};

struct MemoryFacts {
  Fact<PsiFacts> pressure;             // /proc/pressure/memory
  Fact<int64_t> swap_in_pages_delta;   // /proc/vmstat pswpin over the sample interval
  Fact<int64_t> swap_out_pages_delta;  // pswpout
};

struct CpuFacts {
  Fact<int64_t> online_cpus;
  std::vector<NumaNode> numa_nodes;       // empty when /sys/devices/system/node is absent
  Fact<std::string> governor;             // cpu0 scaling_governor; unknown in most VMs
  Fact<int64_t> numa_balancing;           // /proc/sys/kernel/numa_balancing
  Fact<std::string> transparent_hugepage; // the bracketed choice: "always", "madvise", "never"
  Fact<PsiFacts> pressure;                // /proc/pressure/cpu (kernel >= 4.20 with PSI on)
};

struct ThreadCpu {
  int64_t tid = 0;
  std::string comm;
  double cpu_pct = 0;   // of one core, over the sample interval
  int64_t last_cpu = -1;
  int64_t pid = 0;       // the process it belongs to: the server's or one of its children
  std::string process;   // that process's name when it is a child ("VLLM::EngineCore"); "" for the server
};

// A process the server started, as collected (vLLM V1: VLLM::EngineCore, VLLM::Worker_TP0).
struct ServerChild {
  int64_t pid = 0;
  std::string name;
};

// One cgroup on the path from the server's cgroup up to the root that sets a CPU quota (CFS
// bandwidth control: v2 cpu.max, v1 cpu.cfs_quota_us over cpu.cfs_period_us). When the group
// uses its quota up within a period, every thread in it waits for the next period.
struct CgroupCpuLimit {
  std::string dir;            // the directory read: "/sys/fs/cgroup/kubepods.slice/..."
  double quota_cpus = 0;      // quota / period: 2.5 = two and a half CPUs
  int64_t period_us = 0;
  // cpu.stat since the cgroup was made.
  int64_t nr_periods = 0;
  int64_t nr_throttled = 0;
  double throttled_s = 0;
  // The same counters over the sample interval.
  Fact<int64_t> periods_delta;
  Fact<int64_t> throttled_delta;
  Fact<double> throttled_s_delta;
  bool includes_latdoc = false;  // latdoc itself ran inside this group (its probes use the quota)
};

struct CgroupCpu {
  int64_t version = 0;   // 1 or 2
  std::string cgroup;    // the server's cgroup, as /proc/PID/cgroup names it
  std::string note;      // how the path was mapped, when not directly
  std::vector<CgroupCpuLimit> limits;  // innermost first; empty: no CPU quota on the path
  Fact<PsiFacts> pressure;  // v2: the group's own cpu.pressure (its tasks waiting for a CPU)
};

// The certificate the server serves over TLS: the first certificate (the leaf) of the PEM file
// vLLM was started with (--ssl-certfile), read as the server sees its file system.
struct ServerCert {
  std::string path;        // as the command line gives it
  std::string subject;     // RFC 2253, as `latdoc net` prints the chain the client is shown
  std::string issuer;
  std::string sha256_hex;  // SHA-256 of the DER certificate: lowercase, no separators
};

// The inference server process, found by its command line.
struct ServerProcess {
  int64_t pid = 0;
  std::string kind;                     // "vllm", "llama.cpp", "sglang", "tgi"
  std::vector<std::string> argv;        // --api-key (and similar) values replaced by "<redacted>"
  // vLLM's --config FILE.yaml (host/vllm_config.h): the flags it gives, as vLLM inserts them
  // (secrets redacted as in argv). Unknown when there is no --config, or it could not be read.
  Fact<std::vector<std::string>> config_file_args;
  Fact<std::map<std::string, std::string>> env;  // only variables the lint reads
  Fact<std::string> cpus_allowed_list;
  Fact<std::string> mems_allowed_list;
  std::vector<ServerChild> children;      // its descendants, whose threads are sampled too
  Fact<std::vector<ThreadCpu>> threads;  // busiest first, at most 16, server and children
  Fact<double> write_bytes_per_s;        // /proc/PID/io write_bytes delta of the server and its
                                         // children (vLLM's engine core writes too; same uid)
  Fact<CgroupCpu> cgroup_cpu;            // CPU quota and throttling of its cgroup (container)
  // vLLM's --ssl-certfile (command line or --config file). Unknown: none given, or unreadable.
  Fact<ServerCert> tls_cert;

  // The facts above as the values the rules judge, so no rule parses a raw string:
  // The CPUs of cpus_allowed_list ("0-3,8" -> 0 1 2 3 8); nullopt when unknown or unreadable.
  std::optional<std::vector<int64_t>> CpusAllowed() const;
  // The memory nodes of mems_allowed_list; nullopt when unknown or unreadable.
  std::optional<std::vector<int64_t>> MemsAllowed() const;
  // The flags the server runs with: argv, with the --config file's flags (when read) where vLLM
  // puts them, before the command line's own (host/vllm_config.h).
  std::vector<std::string> EffectiveArgv() const;
  // Whether argv names a --config file (read or not).
  bool HasConfigFile() const;
};

struct NicIrqs {
  std::string nic;                  // interface or queue-name prefix ("eth0", "virtio3")
  int64_t irq_count = 0;            // IRQ lines of this NIC
  std::vector<int64_t> per_cpu;     // interrupts per CPU column over the interval (or since boot)
  bool since_boot = false;          // true when no second sample was taken
  std::vector<int64_t> cpu_ids;     // the CPU of each column (empty in older facts: the index)
};

// A network interface that is up (/sys/class/net/NAME/flags has IFF_UP), loopback left out.
struct NetInterface {
  std::string name;
  int64_t mtu_bytes = 0;   // /sys/class/net/NAME/mtu
  std::string operstate;   // "up", "unknown" (tun, some veth), ...
};

struct NetFacts {
  Fact<int64_t> tcp_inuse;
  Fact<int64_t> tcp_time_wait;                 // sockstat "tw"
  Fact<int64_t> server_port;                   // the server's listen port (from its argv)
  Fact<int64_t> server_port_time_wait;         // TIME_WAIT sockets on that local port
  Fact<int64_t> conntrack_count;
  Fact<int64_t> conntrack_max;
  Fact<int64_t> listen_overflows_delta;
  Fact<int64_t> listen_drops_delta;            // TcpExt.ListenDrops (overflows included)
  Fact<int64_t> backlog_drops_delta;           // TcpExt.TCPBacklogDrop
  Fact<int64_t> rcvq_drops_delta;              // TcpExt.TCPRcvQDrop
  Fact<int64_t> retrans_segs_delta;
  Fact<int64_t> out_segs_delta;
  Fact<int64_t> softnet_dropped_delta;         // /proc/net/softnet_stat, all CPUs
  Fact<int64_t> softnet_squeezed_delta;        // its time_squeeze column, all CPUs
  Fact<int64_t> netdev_max_backlog;            // net.core.netdev_max_backlog
  Fact<int64_t> netdev_budget;                 // net.core.netdev_budget
  Fact<int64_t> conntrack_drops_delta;         // /proc/net/stat/nf_conntrack "drop"
  Fact<int64_t> conntrack_insert_failed_delta; // its "insert_failed" (entry clashes)
  Fact<std::vector<NicIrqs>> nic_irqs;
  Fact<int64_t> firewall_rules;                // nft rules or iptables "-A" lines
  Fact<std::vector<NetInterface>> interfaces;  // up, loopback left out, by name
};

struct DiskFacts {
  Fact<double> busiest_util_pct;  // max over block devices of Δio_ticks / interval
  std::string busiest_device;
  // Cache flushes completed per second on the disk that flushed most (/proc/diskstats field 16,
  // Linux 5.5+): each fsync/fdatasync of a file on it issues one, so a logger that syncs every
  // line shows here; the kernel does not count fsync per process.
  Fact<double> flushes_per_s;
  std::string flush_device;
};

struct HostFacts {
  std::string schema = kFactsSchema;
  std::string sysroot = "/";
  int64_t sample_interval_ns = 0;
  std::vector<GpuFacts> gpus;
  std::vector<std::string> gpu_notes;  // why a vendor found nothing or fell back
  CpuFacts cpu;
  std::optional<ServerProcess> server;
  std::string server_note;             // why no server was found
  NetFacts net;
  DiskFacts disk;
  MemoryFacts memory;
};

std::string FactsToJson(const HostFacts& facts);  // pretty-printed, ends in '\n'
// Errors: not JSON, wrong schema, a field of the wrong type (named with its JSON path).
StatusOr<HostFacts> FactsFromJson(std::string_view text, std::string_view name);

}  // namespace latdoc::host
