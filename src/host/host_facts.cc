#include "host/host_facts.h"
#include "base/json_text.h"
#include "host/proc_parsers.h"
#include "host/vllm_config.h"

#include <nlohmann/json.hpp>

namespace latdoc::host {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PcieLink, bdf, role, cur_speed_gts, max_speed_gts,
                                                cur_width, max_width)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuFacts, index, vendor, bdf, name, driver,
                                                numa_node, local_cpulist, pcie_path, util_pct,
                                                sm_clock_mhz, max_sm_clock_mhz, memory_total_mib,
                                                power_limit_w, power_default_limit_w,
                                                clocks_event_reasons, persistence_mode,
                                                pcie_gen_cur, pcie_gen_max, pcie_width_cur,
                                                pcie_width_max, perf_level, sclk_deep_sleep,
                                                throttle_status, throttle_active, vendor_source)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NumaNode, id, cpulist)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PsiFacts, some_avg10, some_avg60, some_avg300,
                                                has_full, full_avg10, full_avg60, full_avg300)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CpuFacts, online_cpus, numa_nodes, governor,
                                                numa_balancing, transparent_hugepage, pressure)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MemoryFacts, pressure, swap_in_pages_delta,
                                                swap_out_pages_delta)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ThreadCpu, tid, comm, cpu_pct, last_cpu, pid,
                                                process)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ServerChild, pid, name)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CgroupCpuLimit, dir, quota_cpus, period_us,
                                                nr_periods, nr_throttled, throttled_s,
                                                periods_delta, throttled_delta, throttled_s_delta,
                                                includes_latdoc)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CgroupCpu, version, cgroup, note, limits, pressure)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ServerCert, path, subject, issuer, sha256_hex)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ServerProcess, pid, kind, argv, config_file_args, env,
                                                cpus_allowed_list, mems_allowed_list, children,
                                                threads,
                                                write_bytes_per_s, cgroup_cpu, tls_cert)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NetInterface, name, mtu_bytes, operstate)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NicIrqs, nic, irq_count, per_cpu, since_boot, cpu_ids)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(NetFacts, tcp_inuse, tcp_time_wait, server_port,
                                                server_port_time_wait, conntrack_count,
                                                conntrack_max, listen_overflows_delta,
                                                listen_drops_delta, backlog_drops_delta,
                                                rcvq_drops_delta, retrans_segs_delta,
                                                out_segs_delta, softnet_dropped_delta,
                                                softnet_squeezed_delta, netdev_max_backlog,
                                                netdev_budget, conntrack_drops_delta,
                                                conntrack_insert_failed_delta, nic_irqs,
                                                firewall_rules, interfaces)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DiskFacts, busiest_util_pct, busiest_device,
                                                flushes_per_s, flush_device)

namespace {

void ToJsonImpl(nlohmann::json& j, const HostFacts& f) {
  j = nlohmann::json{{"schema", f.schema},
                     {"sysroot", f.sysroot},
                     {"sample_interval_ns", f.sample_interval_ns},
                     {"gpus", f.gpus},
                     {"gpu_notes", f.gpu_notes},
                     {"cpu", f.cpu},
                     {"server", nullptr},
                     {"server_note", f.server_note},
                     {"net", f.net},
                     {"disk", f.disk},
                     {"memory", f.memory}};
  if (f.server) j["server"] = *f.server;
}

}  // namespace

std::string FactsToJson(const HostFacts& facts) {
  nlohmann::json j;
  ToJsonImpl(j, facts);
  return JsonText(j, 2) + "\n";
}

StatusOr<HostFacts> FactsFromJson(std::string_view text, std::string_view name) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(std::string(name) + ": not valid JSON");
  if (!j.is_object()) return InvalidArgument(std::string(name) + ": expected a JSON object");
  const std::string schema = j.value("schema", std::string());
  // A newer latdoc's facts: say so, rather than "wrong schema".
  const std::string_view family = "latdoc.host_facts/";
  if (schema != kFactsSchema && schema.rfind(family, 0) == 0 &&
      schema.compare(family.size(), std::string::npos, std::string(kFactsSchema).substr(family.size())) > 0) {
    return InvalidArgument(std::string(name) + ": schema \"" + schema + "\" is newer than this latdoc reads (\"" +
                           kFactsSchema + "\"): collect again with this latdoc's `doctor --collect`, "
                           "or judge the file with the latdoc that wrote it");
  }
  if (schema != kFactsSchema) {
    return InvalidArgument(std::string(name) + ": schema is \"" + schema + "\", expected \"" +
                           kFactsSchema + "\" (write it with latdoc doctor --collect)");
  }
  HostFacts f;
  // Each section is read on its own so an error names the section it came from.
  const char* section = "";
  try {
    section = "sysroot";
    f.sysroot = j.value("sysroot", std::string("/"));
    section = "sample_interval_ns";
    f.sample_interval_ns = j.value("sample_interval_ns", int64_t{0});
    section = "gpus";
    if (j.contains("gpus")) f.gpus = j.at("gpus").get<std::vector<GpuFacts>>();
    section = "gpu_notes";
    if (j.contains("gpu_notes")) f.gpu_notes = j.at("gpu_notes").get<std::vector<std::string>>();
    section = "cpu";
    if (j.contains("cpu")) f.cpu = j.at("cpu").get<CpuFacts>();
    section = "server";
    if (j.contains("server") && !j.at("server").is_null()) {
      f.server = j.at("server").get<ServerProcess>();
    }
    f.server_note = j.value("server_note", std::string());
    section = "net";
    if (j.contains("net")) f.net = j.at("net").get<NetFacts>();
    section = "disk";
    if (j.contains("disk")) f.disk = j.at("disk").get<DiskFacts>();
    section = "memory";
    if (j.contains("memory")) f.memory = j.at("memory").get<MemoryFacts>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string(name) + ": in \"" + section + "\": " + e.what());
  }
  return f;
}

std::optional<std::vector<int64_t>> NumaNode::Cpus() const { return ParseCpuList(cpulist); }

std::optional<std::vector<int64_t>> ServerProcess::CpusAllowed() const {
  return cpus_allowed_list.known() ? ParseCpuList(*cpus_allowed_list) : std::nullopt;
}

std::optional<std::vector<int64_t>> ServerProcess::MemsAllowed() const {
  return mems_allowed_list.known() ? ParseCpuList(*mems_allowed_list) : std::nullopt;
}

std::vector<std::string> ServerProcess::EffectiveArgv() const {
  return config_file_args.known() ? WithConfigFileArgs(argv, *config_file_args) : argv;
}

bool ServerProcess::HasConfigFile() const { return VllmConfigPath(argv).has_value(); }

}  // namespace latdoc::host
