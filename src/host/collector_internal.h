// What the probes of CollectHostFacts share (private to src/host): the counters sampled twice
// and each probe's entry point. One file per probe: collector_cpu.cc (CPU, NUMA, memory
// pressure, cgroup), collector_net.cc (network stack), collector_server.cc (the server process);
// collector.cc samples the counters, probes the GPUs and disks and runs them all in order.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/command_runner.h"
#include "base/status.h"
#include "host/host_facts.h"
#include "host/proc_parsers.h"
#include "host/sysroot.h"

namespace latdoc::host::collector_internal {

// Everything sampled twice.
struct Counters {
  int64_t t_ns = 0;
  std::map<int64_t, TaskStat> tasks;  // tid -> stat, of the server and its children
  std::map<int64_t, int64_t> task_pid;  // tid -> the process it belongs to
  Status tasks_status;                  // of the server's own task list
  std::optional<int64_t> write_bytes;
  Status io_status;
  std::map<int64_t, int64_t> child_write_bytes;   // pid -> write_bytes, children readable
  std::map<std::string, int64_t> disk_flushes;
  std::map<std::string, int64_t> tcp;  // ParseCounterPairs of netstat + snmp
  Status tcp_status;
  Interrupts irqs;
  Status irq_status;
  std::map<std::string, int64_t> disk_ticks;
  Status disk_status;
  std::vector<std::optional<CgroupCpuStat>> cgroup_stats;  // one per CgroupCpu limit
  std::map<std::string, int64_t> vmstat;
  Status vmstat_status;
  std::optional<SoftnetStat> softnet;
  Status softnet_status;
  std::map<std::string, std::vector<int64_t>> conntrack_stat;  // of /proc/net/stat/nf_conntrack
  Status conntrack_status;
};

template <typename T>
Fact<T> FromOptional(const std::optional<T>& v, const std::string& source,
                     const std::string& missing) {
  return v ? Fact<T>::Known(*v, source) : Fact<T>::Unknown(missing);
}

// A recorded tree is one reading of each file: read twice, every counter moved by nothing, and
// the interval facts would say "nothing happened" where the tree cannot tell. They become
// unknown with this reason (since-boot and since-start figures stay: one reading has those).
inline constexpr const char* kOneReading =
    "a recorded tree is one reading: no interval to count over (run doctor on the live host)";

// collector_cpu.cc
Fact<PsiFacts> ReadPsi(const SysRoot& fs, const std::string& path);
Fact<int64_t> VmstatDelta(const Counters& a, const Counters& b, const std::string& key);
void CollectCpu(const SysRoot& fs, CpuFacts* cpu);
Fact<CgroupCpu> FindCgroupCpu(const SysRoot& fs, int64_t pid);
void CgroupDeltas(const Counters& a, const Counters& b, CgroupCpu* cg);

// collector_net.cc
void CollectNicIrqs(const SysRoot& fs, const Counters& a, const Counters& b, NetFacts* net);
Fact<int64_t> CountFirewallRules(CommandRunner& runner, int64_t timeout_ns);
void CollectNetStatic(const SysRoot& fs, const std::optional<ServerProcess>& server, NetFacts* net);
Fact<int64_t> SoftnetDelta(const Counters& a, const Counters& b, int64_t SoftnetCpu::*field);
Fact<int64_t> ConntrackDelta(const Counters& a, const Counters& b, const std::string& key);
Fact<int64_t> CounterDelta(const Counters& a, const Counters& b, const std::string& key);
Fact<std::vector<NetInterface>> ReadInterfaces(const SysRoot& fs);
void NetDeltas(const SysRoot& fs, const Counters& first, const Counters& second, bool one_reading,
               NetFacts* net);

// collector_server.cc
void CollectServerProcess(const SysRoot& fs, std::optional<int64_t> pid, HostFacts* facts);
void CollectServerStatic(const SysRoot& fs, ServerProcess* s);
Fact<std::vector<std::string>> ReadVllmConfigFile(const SysRoot& fs, int64_t pid,
                                                  const std::vector<std::string>& argv);
Fact<ServerCert> ReadServerCert(const SysRoot& fs, int64_t pid,
                                const std::vector<std::string>& argv);
void ServerDeltas(const Counters& first, const Counters& second, double dt_s, ServerProcess* server);

}  // namespace latdoc::host::collector_internal
