#include "rules/host_rules.h"
#include "rules/vllm_args.h"

#include <map>
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"

namespace latdoc::rules {
namespace {

using host::Fact;
using host::HostFacts;
using ::testing::HasSubstr;

HostFacts Load(const std::string& name) {
  const std::string path = "tests/data/host/facts/" + name + ".json";
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status().message();
  auto f = host::FactsFromJson(text.ok() ? *text : "", path);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? *f : HostFacts();
}

// id -> worst severity among findings with that id.
std::map<std::string, Severity> Worst(const std::vector<Finding>& fs) {
  std::map<std::string, Severity> m;
  for (const auto& f : fs) {
    auto it = m.find(f.id);
    if (it == m.end() || f.severity > it->second) m[f.id] = f.severity;
  }
  return m;
}

const Finding* First(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// The first finding with `id`, copied out of a temporary list (empty id if there is none).
Finding One(const std::vector<Finding>& fs, const std::string& id) {
  const Finding* f = First(fs, id);
  return f ? *f : Finding();
}

// The text of a finding's evidence item `name`, or nullopt when it has none.
std::optional<std::string> EvidenceText(const Finding& f, const std::string& name) {
  for (const auto& e : f.evidence) {
    if (e.name == name) return e.text;
  }
  return std::nullopt;
}

// Each rule fires on the unhealthy fixture and stays quiet on the healthy one.
struct RuleCase {
  const char* id;
  Severity unhealthy;
  Severity healthy;
};

TEST(HostRulesTest, EveryRuleFiresOnTheUnhealthyHostAndNotOnTheHealthyOne) {
  HostRuleOptions opts;
  opts.sweep_knee_concurrency = 64;
  auto bad = Worst(JudgeHost(Load("unhealthy_built"), opts));
  HostRuleOptions good_opts;  // the healthy server's default 1024 sits within 2x this knee
  good_opts.sweep_knee_concurrency = 512;
  auto good = Worst(JudgeHost(Load("mi300x_built"), good_opts));
  const RuleCase cases[] = {
      {"gpu.clock_policy", Severity::kFail, Severity::kOk},
      {"gpu.power_cap", Severity::kWarn, Severity::kOk},
      {"gpu.pcie_link", Severity::kFail, Severity::kOk},
      {"gpu.numa", Severity::kWarn, Severity::kOk},
      {"host.numa_balancing", Severity::kWarn, Severity::kOk},
      {"host.thp", Severity::kInfo, Severity::kOk},
      {"cpu.governor", Severity::kWarn, Severity::kOk},
      {"cpu.saturation", Severity::kWarn, Severity::kOk},
      {"cpu.cgroup_throttle", Severity::kFail, Severity::kOk},
      {"cpu.pressure", Severity::kWarn, Severity::kOk},
      {"host.memory_pressure", Severity::kFail, Severity::kOk},
      {"disk.log_write", Severity::kWarn, Severity::kOk},
      {"net.time_wait", Severity::kWarn, Severity::kOk},
      {"net.conntrack", Severity::kFail, Severity::kOk},
      {"net.listen_overflow", Severity::kWarn, Severity::kOk},
      {"net.socket_drops", Severity::kWarn, Severity::kOk},
      {"net.softnet", Severity::kWarn, Severity::kOk},
      {"net.retrans", Severity::kWarn, Severity::kOk},
      {"net.irq", Severity::kWarn, Severity::kOk},
      {"net.firewall", Severity::kWarn, Severity::kOk},
      {"config.enforce_eager", Severity::kFail, Severity::kOk},
      {"config.gpu_memory_utilization", Severity::kWarn, Severity::kOk},
      {"config.max_num_seqs", Severity::kWarn, Severity::kOk},
      {"config.max_num_batched_tokens", Severity::kWarn, Severity::kOk},
      {"config.block_size", Severity::kInfo, Severity::kOk},
      {"config.logging", Severity::kWarn, Severity::kOk},
      {"config.async_scheduling", Severity::kInfo, Severity::kOk},
      {"config.v1_multiprocessing", Severity::kWarn, Severity::kOk},
      {"config.rocm_aiter", Severity::kWarn, Severity::kOk},
  };
  for (const auto& c : cases) {
    ASSERT_TRUE(bad.count(c.id)) << c.id;
    ASSERT_TRUE(good.count(c.id)) << c.id;
    EXPECT_EQ(SeverityName(bad[c.id]), SeverityName(c.unhealthy)) << c.id;
    EXPECT_EQ(SeverityName(good[c.id]), SeverityName(c.healthy)) << c.id;
  }
  EXPECT_EQ(WorstSeverity(JudgeHost(Load("mi300x_built"), good_opts)), Severity::kOk);
}

// The real idle H200: a low SM clock with reason 0x1, numa_node -1 on one node, no governor
// in a VM. None of it is a fault.
TEST(HostRulesTest, IdleH200IsNotFlagged) {
  for (const char* name : {"h200_recorded", "h200_snapshot"}) {
    auto fs = JudgeHost(Load(name), {});
    auto w = Worst(fs);
    EXPECT_EQ(w["gpu.clock_policy"], Severity::kOk) << name;
    EXPECT_EQ(w["gpu.throttle"], Severity::kOk) << name;
    EXPECT_EQ(w["gpu.pcie_link"], Severity::kOk) << name;
    EXPECT_EQ(w["gpu.power_cap"], Severity::kOk) << name;
    EXPECT_EQ(w["gpu.persistence"], Severity::kOk) << name;
    EXPECT_EQ(w["gpu.numa"], Severity::kOk) << name;
    EXPECT_EQ(w["cpu.governor"], Severity::kSkip) << name;
    EXPECT_EQ(First(fs, "gpu.clock_policy")->title,
              "GPU 0 (0000:00:06.0, NVIDIA H200): idle, low clock is normal power management");
  }
  // The recorded stand-in server carries bad flags: those are judged.
  auto w = Worst(JudgeHost(Load("h200_recorded"), {}));
  EXPECT_EQ(w["config.enforce_eager"], Severity::kFail);
  EXPECT_EQ(w["config.gpu_memory_utilization"], Severity::kWarn);
  EXPECT_EQ(w["config.logging"], Severity::kWarn);
}

// Facts collected live on a real H200 through NVML (tools/capture_host_device.sh with LATDOC
// set) while a stand-in server spun one thread: the only system finding is that thread.
TEST(HostRulesTest, LiveH200ThroughNvml) {
  auto text = ReadFileToString("tests/data/host/h200_live/h200_live_facts.json");
  ASSERT_TRUE(text.ok());
  auto f = host::FactsFromJson(*text, "h200_live_facts.json");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->gpus.at(0).vendor_source, "nvml");
  auto fs = JudgeHost(*f, {});
  auto w = Worst(fs);
  for (const char* id : {"gpu.clock_policy", "gpu.throttle", "gpu.power_cap", "gpu.pcie_link",
                         "gpu.persistence", "gpu.numa", "host.numa_balancing", "net.time_wait",
                         "net.conntrack", "net.listen_overflow"}) {
    EXPECT_EQ(SeverityName(w[id]), "ok") << id;
  }
  EXPECT_EQ(w["cpu.saturation"], Severity::kWarn);
  EXPECT_THAT(One(fs, "cpu.saturation").title,
              testing::StartsWith("server thread 422 (python3) pinned at 100% of a core"));
}

HostFacts OneNvidiaGpu() {
  HostFacts f = Load("h200_recorded");
  f.server.reset();
  f.server_note = "no server process";
  return f;
}

TEST(HostRulesTest, NvidiaClocksUnderLoad) {
  HostFacts f = OneNvidiaGpu();
  auto& g = f.gpus[0];
  g.util_pct = Fact<int64_t>::Known(95);
  g.sm_clock_mhz = Fact<int64_t>::Known(1100);
  g.clocks_event_reasons = Fact<uint64_t>::Known(0x4);
  auto w = Worst(JudgeHost(f, {}));
  EXPECT_EQ(w["gpu.clock_policy"], Severity::kWarn);
  EXPECT_EQ(w["gpu.throttle"], Severity::kWarn);
  g.clocks_event_reasons = Fact<uint64_t>::Known(0x40 | 0x4);
  auto fs = JudgeHost(f, {});
  EXPECT_EQ(Worst(fs)["gpu.throttle"], Severity::kFail);
  EXPECT_EQ(First(fs, "gpu.throttle")->title,
            "GPU 0 (0000:00:06.0, NVIDIA H200): clocks cut by HwThermalSlowdown");
  // Busy at full clock with no reason: fine.
  g.sm_clock_mhz = Fact<int64_t>::Known(1980);
  g.clocks_event_reasons = Fact<uint64_t>::Known(0);
  w = Worst(JudgeHost(f, {}));
  EXPECT_EQ(w["gpu.clock_policy"], Severity::kOk);
  EXPECT_EQ(w["gpu.throttle"], Severity::kOk);
  // SwPowerCap while idle is not a fault.
  g.util_pct = Fact<int64_t>::Known(0);
  g.clocks_event_reasons = Fact<uint64_t>::Known(0x5);
  EXPECT_EQ(Worst(JudgeHost(f, {}))["gpu.throttle"], Severity::kOk);
}

TEST(HostRulesTest, NvidiaPcieSpeedDropIsNormalOnlyWhileIdle) {
  HostFacts f = OneNvidiaGpu();
  auto& link = f.gpus[0].pcie_path[0];
  link.cur_speed_gts = Fact<double>::Known(2.5);
  f.gpus[0].util_pct = Fact<int64_t>::Known(0);
  EXPECT_EQ(Worst(JudgeHost(f, {}))["gpu.pcie_link"], Severity::kOk);
  f.gpus[0].util_pct = Fact<int64_t>::Known(80);
  auto fs = JudgeHost(f, {});
  EXPECT_EQ(Worst(fs)["gpu.pcie_link"], Severity::kWarn);
  EXPECT_EQ(First(fs, "gpu.pcie_link")->title,
            "GPU 0 (0000:00:06.0, NVIDIA H200): PCIe link below its max speed: gpu 0000:00:06.0: "
            "Gen1 x16 of Gen5 x16");
  link.cur_width = Fact<int64_t>::Known(8);
  EXPECT_EQ(Worst(JudgeHost(f, {}))["gpu.pcie_link"], Severity::kFail);
  // A Gen4 slot for a Gen5 GPU.
  link = host::PcieLink{"0000:00:06.0", "gpu", Fact<double>::Known(16), Fact<double>::Known(16),
                        Fact<int64_t>::Known(16), Fact<int64_t>::Known(16)};
  EXPECT_EQ(Worst(JudgeHost(f, {}))["gpu.pcie_link"], Severity::kWarn);
}

// A Gen5 GPU reports its own 32 GT/s max even in a Gen4 slot: the slot's limit is the lowest
// max along the path. A lowered NVIDIA link with no load figure is said, not judged.
TEST(HostRulesTest, PcieSlotLimitAndUnknownLoad) {
  HostFacts f = OneNvidiaGpu();  // NVIDIA H200: built for Gen5
  auto& g = f.gpus[0];
  g.util_pct = Fact<int64_t>::Known(90);
  g.pcie_path = {host::PcieLink{"0000:00:06.0", "gpu", Fact<double>::Known(16), Fact<double>::Known(32),
                                Fact<int64_t>::Known(16), Fact<int64_t>::Known(16)},
                 host::PcieLink{"0000:00:01.0", "bridge", Fact<double>::Known(16), Fact<double>::Known(16),
                                Fact<int64_t>::Known(16), Fact<int64_t>::Known(16)}};
  Finding l = One(JudgeHost(f, {}), "gpu.pcie_link");
  EXPECT_EQ(SeverityName(l.severity), "warn") << l.title;
  EXPECT_EQ(l.title, "GPU 0 (0000:00:06.0, NVIDIA H200): slot allows only 16 GT/s; this GPU is built for 32 GT/s");

  g.pcie_path[1].max_speed_gts = Fact<double>::Known(32);   // Gen5 slot, link down at 2.5 GT/s
  g.pcie_path[0].cur_speed_gts = Fact<double>::Known(2.5);
  g.pcie_path[1].cur_speed_gts = Fact<double>::Known(2.5);
  g.util_pct = Fact<int64_t>::Unknown("nvidia-smi: not found");
  l = One(JudgeHost(f, {}), "gpu.pcie_link");
  EXPECT_EQ(SeverityName(l.severity), "info") << l.title;
  EXPECT_THAT(l.title, HasSubstr("PCIe speed below max, GPU load unknown"));

  // A soft slowdown reason with the load unknown: said, not judged, and not "no reason active".
  g.clocks_event_reasons = Fact<uint64_t>::Known(0x4);
  Finding t = One(JudgeHost(f, {}), "gpu.throttle");
  EXPECT_EQ(SeverityName(t.severity), "info") << t.title;
  EXPECT_EQ(t.title, "GPU 0 (0000:00:06.0, NVIDIA H200): SwPowerCap active (GPU load unknown), not judged");
  g.util_pct = Fact<int64_t>::Known(10);
  t = One(JudgeHost(f, {}), "gpu.throttle");
  EXPECT_EQ(SeverityName(t.severity), "ok") << t.title;
  EXPECT_EQ(t.title, "GPU 0 (0000:00:06.0, NVIDIA H200): SwPowerCap active (GPU at 10%), not judged");
}

// A link trains to the lower max of its two ends (nvtop takes the minimum over the path): a
// Gen4 card under a Gen5 root port, or an x8 card in an x16 slot, runs at full speed. The ends
// pair up from the GPU: the GPU with the port above it, then each switch's upstream port with
// the port above that.
TEST(HostRulesTest, PcieLinkLimitIsTheLowerMaxOfItsTwoEnds) {
  HostFacts f = OneNvidiaGpu();
  auto& g = f.gpus[0];
  g.bdf = "0000:03:00.0";
  g.name = Fact<std::string>::Known("NVIDIA A100-PCIE-40GB");  // built for Gen4
  g.util_pct = Fact<int64_t>::Known(90);                       // busy: a slow link would count
  auto hop = [](const char* bdf, double cur_gts, int64_t cur_w, double max_gts, int64_t max_w) {
    return host::PcieLink{bdf, std::string(bdf) == "0000:03:00.0" ? "gpu" : "bridge",
                          Fact<double>::Known(cur_gts), Fact<double>::Known(max_gts),
                          Fact<int64_t>::Known(cur_w), Fact<int64_t>::Known(max_w)};
  };
  auto judge = [&](std::vector<host::PcieLink> path) {
    g.pcie_path = std::move(path);
    return One(JudgeHost(f, {}), "gpu.pcie_link");
  };
  // Gen4 x16 card in a Gen5 x16 root port.
  Finding l = judge({hop("0000:03:00.0", 16, 16, 16, 16), hop("0000:00:01.0", 16, 16, 32, 16)});
  EXPECT_EQ(SeverityName(l.severity), "ok") << l.title;
  EXPECT_EQ(l.title,
            "GPU 0 (0000:03:00.0, NVIDIA A100-PCIE-40GB): PCIe links at full width and speed");
  // x8 card in an x16 slot.
  l = judge({hop("0000:03:00.0", 16, 8, 16, 8), hop("0000:00:01.0", 16, 8, 16, 16)});
  EXPECT_EQ(SeverityName(l.severity), "ok") << l.title;
  // Behind a switch: the downstream port pairs with the card, the upstream port with the root
  // port; the switch's own x16 uplink trained x8 is a fault even though the card is x8.
  l = judge({hop("0000:03:00.0", 16, 8, 16, 8), hop("0000:02:00.0", 16, 8, 16, 16),
             hop("0000:01:00.0", 16, 16, 16, 16), hop("0000:00:01.0", 16, 16, 32, 16)});
  EXPECT_EQ(SeverityName(l.severity), "ok") << l.title;
  l = judge({hop("0000:03:00.0", 16, 8, 16, 8), hop("0000:02:00.0", 16, 8, 16, 16),
             hop("0000:01:00.0", 16, 8, 16, 16), hop("0000:00:01.0", 16, 8, 32, 16)});
  EXPECT_EQ(SeverityName(l.severity), "fail");
  EXPECT_EQ(l.title, "GPU 0 (0000:03:00.0, NVIDIA A100-PCIE-40GB): PCIe link trained narrower than "
                     "it can: bridge 0000:01:00.0: Gen4 x8 of Gen4 x16");
  // Both ends can do x16 but the link came up x8: still a fault.
  l = judge({hop("0000:03:00.0", 16, 8, 16, 16), hop("0000:00:01.0", 16, 8, 32, 16)});
  EXPECT_EQ(SeverityName(l.severity), "fail");
  EXPECT_EQ(l.title, "GPU 0 (0000:03:00.0, NVIDIA A100-PCIE-40GB): PCIe link trained narrower than "
                     "it can: gpu 0000:03:00.0: Gen4 x8 of Gen4 x16");
}

TEST(HostRulesTest, UnknownFactsGiveSkipWithTheReason) {
  HostFacts f = OneNvidiaGpu();
  f.gpus[0].clocks_event_reasons = Fact<uint64_t>::Unknown("nvidia-smi: not installed");
  f.net.conntrack_count = Fact<int64_t>::Unknown("nf_conntrack is not loaded (no /proc/sys/net/netfilter)");
  auto fs = JudgeHost(f, {});
  const Finding* t = First(fs, "gpu.throttle");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->severity, Severity::kSkip);
  ASSERT_EQ(t->evidence.size(), 1u);
  EXPECT_EQ(t->evidence[0].text, "nvidia-smi: not installed");
  const Finding* c = First(fs, "net.conntrack");
  EXPECT_EQ(c->severity, Severity::kSkip);
  EXPECT_EQ(c->evidence[0].text, "nf_conntrack is not loaded (no /proc/sys/net/netfilter)");
  const Finding* v = First(fs, "config.vllm_flags");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->severity, Severity::kSkip);
}

TEST(HostRulesTest, AmdNormalStatesAreNotFlagged) {
  HostFacts f = Load("mi300x_built");
  auto& g = f.gpus[0];
  EXPECT_EQ(*g.perf_level, "auto");
  EXPECT_TRUE(*g.sclk_deep_sleep);
  auto fs = JudgeHost(f, {});
  EXPECT_EQ(First(fs, "gpu.clock_policy")->severity, Severity::kOk);
  g.perf_level = Fact<std::string>::Known("perf_determinism");
  EXPECT_EQ(One(JudgeHost(f, {}), "gpu.clock_policy").severity, Severity::kInfo);
  g.perf_level = Fact<std::string>::Known("profile_min_sclk");
  EXPECT_EQ(One(JudgeHost(f, {}), "gpu.clock_policy").severity, Severity::kFail);
  // Busy at a low clock under `auto` is still suspicious.
  g.perf_level = Fact<std::string>::Known("auto");
  g.sclk_deep_sleep = Fact<bool>::Known(false);
  g.util_pct = Fact<int64_t>::Known(90);
  g.sm_clock_mhz = Fact<int64_t>::Known(800);
  EXPECT_EQ(One(JudgeHost(f, {}), "gpu.clock_policy").severity, Severity::kWarn);
}

TEST(HostRulesTest, NumaNodeMinusOneOnAMultiNodeHostIsInfoNotAFault) {
  HostFacts f = Load("mi300x_built");
  f.gpus[0].numa_node = Fact<int64_t>::Known(-1);
  EXPECT_EQ(One(JudgeHost(f, {}), "gpu.numa").severity, Severity::kInfo);
  // Unbound server on a 2-node host: the advice is the numa-exec command line.
  HostFacts u = Load("unhealthy_built");
  Finding n = One(JudgeHost(u, {}), "gpu.numa");
  EXPECT_EQ(n.advice.rfind("latdoc numa-exec --gpu 0 -- /usr/bin/python3 /usr/local/bin/vllm serve ", 0), 0u)
      << n.advice;
  EXPECT_THAT(n.advice, testing::HasSubstr("--api-key '<redacted>'"));
  EXPECT_THAT(n.advice, testing::Not(testing::HasSubstr("sk-test-secret")));
}

// Without *_VISIBLE_DEVICES vLLM takes the first tensor x pipeline x data-parallel GPUs; an
// unbound server on a two-socket host with a GPU on each socket is then judged against its one
// GPU's node, not "every node holds a GPU". A server whose GPUs cannot be told is skipped.
TEST(HostRulesTest, NumaWithoutVisibleDevicesTakesVllmsFirstGpus) {
  HostFacts f = Load("mi300x_built");  // GPU 0 on node 0, GPU 1 on node 1
  f.server->env = Fact<std::map<std::string, std::string>>::Known({});
  f.server->cpus_allowed_list = Fact<std::string>::Known("0-95");
  f.server->mems_allowed_list = Fact<std::string>::Known("0-1");
  Finding n = One(JudgeHost(f, {}), "gpu.numa");
  EXPECT_EQ(SeverityName(n.severity), "warn") << n.title;
  EXPECT_EQ(n.title, "server pid 4242 may run on 48 CPUs of another NUMA node than its GPUs");
  EXPECT_EQ(EvidenceText(n, "server_gpus"),
            "no *_VISIBLE_DEVICES: vLLM's first 1 GPU (tensor x pipeline x data parallel)");
  EXPECT_EQ(n.advice.rfind("latdoc numa-exec --gpu 0 -- ", 0), 0u) << n.advice;

  f.server->argv.insert(f.server->argv.end(), {"-tp", "2"});
  n = One(JudgeHost(f, {}), "gpu.numa");
  EXPECT_EQ(SeverityName(n.severity), "ok") << n.title;
  EXPECT_EQ(EvidenceText(n, "server_gpus"),
            "no *_VISIBLE_DEVICES: vLLM's first 2 GPUs (tensor x pipeline x data parallel)");

  f.server->argv.resize(f.server->argv.size() - 2);
  // An unreadable environment may name any GPU: unknown across the nodes, for vLLM too.
  f.server->env = Fact<std::map<std::string, std::string>>::Unknown("/proc/4242/environ: Permission denied");
  for (const char* kind : {"vllm", "llama.cpp"}) {
    f.server->kind = kind;
    n = One(JudgeHost(f, {}), "gpu.numa");
    EXPECT_EQ(SeverityName(n.severity), "skip") << kind << ": " << n.title;
    ASSERT_FALSE(n.evidence.empty());
    EXPECT_EQ(n.evidence[0].text,
              "which GPUs the server uses is unknown (the server's environment is unreadable: all GPUs) and "
              "the host's GPUs sit on several NUMA nodes");
  }
}

// Memory bound to nodes without any of the server's GPUs is remote on every page, whatever its
// CPUs; a list holding the GPU's node is fine.
TEST(HostRulesTest, NumaMemoryBoundAwayFromTheGpusWarns) {
  HostFacts f = Load("mi300x_built");  // CUDA_VISIBLE_DEVICES=0 (node 0), CPUs 0-47
  f.server->mems_allowed_list = Fact<std::string>::Known("1");
  Finding n = One(JudgeHost(f, {}), "gpu.numa");
  EXPECT_EQ(SeverityName(n.severity), "warn") << n.title;
  EXPECT_EQ(n.title, "server pid 4242 may allocate memory only on NUMA node(s) 1, none of them its GPUs' (0)");
  f.server->mems_allowed_list = Fact<std::string>::Known("0-1");
  EXPECT_EQ(SeverityName(One(JudgeHost(f, {}), "gpu.numa").severity), "ok");
}

// One CPU taking more than about half of a NIC's interrupts warns (latdoc's threshold: > ~50 %).
TEST(HostRulesTest, NicInterruptsOnOneCpu) {
  HostFacts f = Load("mi300x_built");
  std::vector<int64_t> per_cpu(31, 100);
  per_cpu[4] = 7000;  // 70%
  f.net.nic_irqs = Fact<std::vector<host::NicIrqs>>::Known({host::NicIrqs{"eth0", 2, per_cpu, false, {}}});
  Finding n = One(JudgeHost(f, {}), "net.irq");
  EXPECT_EQ(SeverityName(n.severity), "warn") << n.title;
  EXPECT_EQ(n.title, "eth0: 70% of its interrupts land on CPU 4");
  // The column is not the CPU when one is offline: the header's CPU numbers name it.
  std::vector<int64_t> ids(31);
  for (size_t c = 0; c < ids.size(); ++c) ids[c] = static_cast<int64_t>(c < 2 ? c : c + 1);  // CPU2 offline
  f.net.nic_irqs = Fact<std::vector<host::NicIrqs>>::Known({host::NicIrqs{"eth0", 2, per_cpu, false, ids}});
  EXPECT_EQ(One(JudgeHost(f, {}), "net.irq").title, "eth0: 70% of its interrupts land on CPU 5");
  per_cpu[4] = 2000;  // 40%
  f.net.nic_irqs = Fact<std::vector<host::NicIrqs>>::Known({host::NicIrqs{"eth0", 2, per_cpu, false, {}}});
  EXPECT_EQ(SeverityName(One(JudgeHost(f, {}), "net.irq").severity), "ok");
}

TEST(HostRulesTest, MaxNumSeqsDefaultFollowsGpuMemoryAndTheKnee) {
  HostFacts f = Load("mi300x_built");
  Finding m = One(JudgeHost(f, {}), "config.max_num_seqs");
  EXPECT_EQ(m.title, "vLLM pid 4242: max_num_seqs 1024 (default for >= 70 GiB GPUs); no sweep "
                      "given (latdoc sweep finds the knee)");
  HostRuleOptions o;
  o.sweep_knee_concurrency = 400;
  EXPECT_EQ(One(JudgeHost(f, o), "config.max_num_seqs").severity, Severity::kWarn);
  o.sweep_knee_concurrency = 600;
  EXPECT_EQ(One(JudgeHost(f, o), "config.max_num_seqs").severity, Severity::kOk);
}

// vLLM's get_batch_defaults (vllm/engine/arg_utils.py, ~v0.11): 1024 only on >= 70 GiB GPUs that
// are not A100s.
TEST(HostRulesTest, MaxNumSeqsDefaultIs256OnA100Even80GB) {
  HostFacts f = Load("mi300x_built");
  for (auto& g : f.gpus) {
    g.name = Fact<std::string>::Known("NVIDIA A100-SXM4-80GB");
    g.memory_total_mib = Fact<int64_t>::Known(81920);
  }
  EXPECT_EQ(One(JudgeHost(f, {}), "config.max_num_seqs").title,
            "vLLM pid 4242: max_num_seqs 256 (default on A100); no sweep given (latdoc sweep finds "
            "the knee)");
  f.gpus[0].name = Fact<std::string>::Known("NVIDIA H100 80GB HBM3");
  f.gpus[1].name = f.gpus[0].name;
  EXPECT_EQ(One(JudgeHost(f, {}), "config.max_num_seqs").title,
            "vLLM pid 4242: max_num_seqs 1024 (default for >= 70 GiB GPUs); no sweep given "
            "(latdoc sweep finds the knee)");
}

// *_VISIBLE_DEVICES naming no GPU of this host (an index past the end, CUDA's -1) leaves no
// GPU to compare the server's CPUs with: skip and say why, never a numactl line without nodes.
TEST(HostRulesTest, VisibleDevicesMatchingNoGpuSkipsTheNumaCheck) {
  for (auto [var, value] : {std::pair{"HIP_VISIBLE_DEVICES", "3"},
                            std::pair{"CUDA_VISIBLE_DEVICES", "-1"}}) {
    HostFacts f = Load("mi300x_built");
    std::map<std::string, std::string> env = {{var, value}};
    f.server->env = Fact<std::map<std::string, std::string>>::Known(env);
    f.server->cpus_allowed_list = Fact<std::string>::Known("0-95");
    Finding n = One(JudgeHost(f, {}), "gpu.numa");
    EXPECT_EQ(SeverityName(n.severity), "skip") << var << ": " << n.title << " / " << n.advice;
    ASSERT_FALSE(n.evidence.empty()) << var;
    EXPECT_EQ(n.evidence[0].text,
              std::string(var) + "=" + value + " names no GPU of this host (2 found)");
    EXPECT_THAT(n.advice, testing::Not(testing::HasSubstr("--cpunodebind=")));
  }
}

TEST(HostRulesTest, LoggingSeverities) {
  HostFacts f = Load("mi300x_built");
  auto env = *f.server->env;
  env["VLLM_TRACE_FUNCTION"] = "1";
  f.server->env = Fact<std::map<std::string, std::string>>::Known(env);
  Finding l = One(JudgeHost(f, {}), "config.logging");
  EXPECT_EQ(l.severity, Severity::kFail);
  EXPECT_EQ(l.title, "vLLM pid 4242: verbose logging on the request path: VLLM_TRACE_FUNCTION=1");
  // The default access log alone is only information.
  HostFacts g = Load("mi300x_built");
  std::erase(g.server->argv, std::string("--disable-uvicorn-access-log"));
  EXPECT_EQ(One(JudgeHost(g, {}), "config.logging").severity, Severity::kInfo);
}

TEST(HostRulesTest, FlagValueForms) {
  const std::vector<std::string> argv = {"vllm", "serve", "m", "--max-num-seqs", "256",
                                         "--enforce-eager", "--block-size=32", "-O", "0",
                                         "--x", "-1"};
  EXPECT_EQ(FlagValue(argv, "--max-num-seqs"), "256");
  EXPECT_EQ(FlagValue(argv, "--block-size"), "32");
  EXPECT_EQ(FlagValue(argv, "--enforce-eager"), "");
  EXPECT_EQ(FlagValue(argv, "-O"), "0");
  EXPECT_EQ(FlagValue(argv, "--x"), "-1");
  EXPECT_EQ(FlagValue(argv, "--port"), std::nullopt);
}

TEST(HostRulesTest, FlagValueTakesTheLastOfARepeatedFlag) {
  const std::vector<std::string> argv = {"--max-num-seqs", "128", "--max-num-seqs=256", "--x"};
  EXPECT_EQ(FlagValue(argv, "--max-num-seqs"), "256");
  EXPECT_EQ(FlagDouble(argv, "--max-num-seqs"), 256.0);
  EXPECT_TRUE(HasFlag(argv, "--x"));
  EXPECT_FALSE(HasFlag(argv, "--max-num"));
}

// vLLM's FlexibleArgumentParser: underscores, aliases, -O3, dotted keys merged into one JSON
// object appended last (after the flag given whole, so it wins), "+" appending to a list.
TEST(HostRulesTest, NormalizeVllmArgvAsVllmReadsIt) {
  using V = std::vector<std::string>;
  EXPECT_EQ(NormalizeVllmArgv({"vllm", "serve", "org/Model-3.1_8B", "--max_num_seqs", "512",
                               "--max_num_batched_tokens=8192", "-tp", "2", "-O3", "--gpu-memory-utilization",
                               "0.9", "--x", "-1.5"}),
            (V{"vllm", "serve", "org/Model-3.1_8B", "--max-num-seqs", "512",
               "--max-num-batched-tokens=8192", "--tensor-parallel-size", "2", "-O", "3",
               "--gpu-memory-utilization", "0.9", "--x", "-1.5"}));
  EXPECT_EQ(NormalizeVllmArgv({"-O=0"}), (V{"-O", "0"}));
  EXPECT_EQ(NormalizeVllmArgv({"--optimization_level", "1"}), (V{"-O", "1"}));
  EXPECT_EQ(NormalizeVllmArgv({"-cc", R"({"level": 3})", "-cc.cudagraph_mode", "NONE",
                               "-cc.pass_config.fuse_norm_quant=true",
                               "-cc.max_cudagraph_capture_size", "1k",
                               "-cc.cudagraph_capture_sizes+", "1,2", "-cc.cudagraph_capture_sizes+=4",
                               "--port", "8000"}),
            (V{"--compilation-config", R"({"level": 3})", "--port", "8000", "--compilation-config",
               R"({"cudagraph_capture_sizes":[1,2,4],"cudagraph_mode":"NONE",)"
               R"("max_cudagraph_capture_size":1000,"pass_config":{"fuse_norm_quant":true}})"}));
  EXPECT_EQ(NormalizeVllmArgv({"-cc.level"}), V{});  // a dotted key without a value is dropped
  EXPECT_EQ(NormalizeVllmArgv({"-cc.sizes", "2K"}), (V{"--compilation-config", R"({"sizes":2048})"}));
  // Grouped by the flag as written, as vLLM does: two objects, the later one wins.
  EXPECT_EQ(NormalizeVllmArgv({"-cc.cudagraph_mode=NONE", "--compilation_config.max_cudagraph_capture_size=64"}),
            (V{"--compilation-config", R"({"cudagraph_mode":"NONE"})", "--compilation-config",
               R"({"max_cudagraph_capture_size":64})"}));
  // Not UTF-8 (argv is bytes): replaced, no exception.
  EXPECT_EQ(NormalizeVllmArgv({"-cc.x=\xff"}), (V{"--compilation-config", "{\"x\":\"\xef\xbf\xbd\"}"}));
  // Human-readable integers that overflow, or that vLLM's pattern rejects, stay strings.
  EXPECT_EQ(NormalizeVllmArgv({"-cc.a=99999999999T", "-cc.b=1e300k", "-cc.c=2.5K", "-cc.d=25.6k"}),
            (V{"--compilation-config", R"({"a":"99999999999T","b":"1e300k","c":"2.5K","d":25600})"}));
}

// Flags written the other ways vLLM accepts are judged as if written the usual way.
TEST(HostRulesTest, VllmFlagsInEveryFormVllmAccepts) {
  HostFacts f = Load("mi300x_built");
  ASSERT_TRUE(f.server.has_value());
  const std::vector<std::string> base = f.server->argv;
  auto judge = [&](std::vector<std::string> extra, const char* id) {
    f.server->argv = base;
    f.server->argv.insert(f.server->argv.end(), extra.begin(), extra.end());
    return One(JudgeHost(f, {}), id);
  };
  EXPECT_EQ(SeverityName(judge({}, "config.cudagraph_capture").severity), "info");
  EXPECT_EQ(SeverityName(judge({"--max_num_seqs", "256"}, "config.cudagraph_capture").severity), "ok");
  EXPECT_THAT(judge({"--max_num_seqs=300"}, "config.max_num_seqs").title, HasSubstr("max_num_seqs 300"));
  EXPECT_EQ(SeverityName(judge({"-cc.max_cudagraph_capture_size=1024"}, "config.cudagraph_capture").severity),
            "ok");
  EXPECT_EQ(SeverityName(judge({"--compilation-config.cudagraph_capture_sizes+", "1,8,2048"},
                               "config.cudagraph_capture").severity),
            "ok");
  for (std::vector<std::string> eager : {std::vector<std::string>{"-cc.cudagraph_mode", "NONE"},
                                         {"-O0"}, {"--optimization-level=0"}, {"-O", "0"}}) {
    EXPECT_EQ(SeverityName(judge(eager, "config.enforce_eager").severity), "fail") << eager.front();
  }
  // The last of a repeated flag wins, as in argparse; a --no- form turns a boolean off.
  EXPECT_EQ(SeverityName(judge({"--max-num-seqs", "1024", "--max-num-seqs", "256"},
                               "config.cudagraph_capture").severity),
            "ok");
  EXPECT_EQ(SeverityName(judge({"--cudagraph-capture-sizes", "1", "1024", "--cudagraph-capture-sizes", "1", "8"},
                               "config.cudagraph_capture").severity),
            "info");
  EXPECT_EQ(SeverityName(judge({"--enforce-eager", "--no-enforce-eager"}, "config.enforce_eager").severity),
            "ok");
  // Older vLLM read -O as the compilation config: -O0 and a dotted -O key together.
  EXPECT_EQ(SeverityName(judge({"-O0", "-O.cudagraph_mode=FULL"}, "config.enforce_eager").severity), "fail");
  EXPECT_EQ(SeverityName(judge({"-O", R"({"level": 0})"}, "config.enforce_eager").severity), "fail");
  // A compilation config as vLLM logs it (its JSON dump: enums as numbers, only what was set):
  // cudagraph_mode 0 is NONE; without a cudagraph_mode, any level or mode but 3 (piecewise
  // compilation) means no graphs; an explicit cudagraph_mode other than NONE keeps them.
  for (const char* cc : {R"({"level":0,"cudagraph_mode":0})", R"({"mode":0})", R"({"level":0})",
                         R"({"cudagraph_mode":"NONE","level":3})", R"({"level":1})",
                         R"({"mode":2})", R"({"cudagraph_mode":"none"})", R"({"mode":"NONE"})",
                         R"({"mode":0,"cudagraph_mode":"PIECEWISE"})", R"({"level":1,"cudagraph_mode":1})",
                         R"({"mode":0,"cudagraph_mode":null})"}) {
    EXPECT_EQ(SeverityName(judge({"--compilation-config", cc}, "config.enforce_eager").severity),
              "fail") << cc;
  }
  for (const char* cc : {R"({"level":0,"cudagraph_mode":"FULL"})", R"({"level":3})", R"({"mode":3})",
                         R"({"mode":"VLLM_COMPILE"})", R"({"pass_config":{}})",
                         R"({"mode":0,"cudagraph_mode":[2,0]})", R"({"mode":3,"cudagraph_mode":"PIECEWISE"})",
                         R"({"cudagraph_mode":[2,1]})",
                         R"({"cudagraph_mode":2,"custom_ops":["none"]})",
                         R"({"cudagraph_mode":"FULL_AND_PIECEWISE"})"}) {
    EXPECT_EQ(SeverityName(judge({"--compilation-config", cc}, "config.enforce_eager").severity),
              "ok") << cc;
  }
  // vLLM's human-readable integers.
  EXPECT_THAT(judge({"--max-num-batched-tokens", "32k"}, "config.max_num_batched_tokens").title,
              HasSubstr("32000"));
}

// A --config YAML file's flags count, under the command line's own (vLLM puts them first); a
// file that could not be read is named in every config finding's evidence.
TEST(HostRulesTest, VllmConfigFileFlagsUnderTheCommandLine) {
  HostFacts f = Load("mi300x_built");
  ASSERT_TRUE(f.server.has_value());
  f.server->argv.insert(f.server->argv.end(), {"--config", "serve.yaml", "--max-num-seqs", "64"});
  f.server->config_file_args = host::Fact<std::vector<std::string>>::Known(
      {"--enforce-eager", "--max-num-seqs", "2048"}, "/proc/4242/cwd/serve.yaml");
  auto all = JudgeHost(f, {});
  EXPECT_EQ(SeverityName(One(all, "config.enforce_eager").severity), "fail");
  EXPECT_THAT(One(all, "config.max_num_seqs").title, HasSubstr("max_num_seqs 64"));
  EXPECT_EQ(EvidenceText(One(all, "config.max_num_seqs"), "config_file"), "read: /proc/4242/cwd/serve.yaml");

  f.server->config_file_args = host::Fact<std::vector<std::string>>::Unknown(
      "--config serve.yaml: /proc/4242/cwd/serve.yaml: Permission denied");
  all = JudgeHost(f, {});
  EXPECT_EQ(SeverityName(One(all, "config.enforce_eager").severity), "ok");
  EXPECT_EQ(EvidenceText(One(all, "config.enforce_eager"), "config_file"),
            "not read (its flags are not judged): --config serve.yaml: /proc/4242/cwd/serve.yaml: "
            "Permission denied");
}

host::CgroupCpuLimit Limit(const std::string& dir, double cpus, int64_t periods,
                           int64_t throttled, int64_t periods_now, int64_t throttled_now) {
  host::CgroupCpuLimit l;
  l.dir = dir;
  l.quota_cpus = cpus;
  l.period_us = 100000;
  l.nr_periods = periods;
  l.nr_throttled = throttled;
  l.throttled_s = static_cast<double>(throttled) * 0.05;
  l.periods_delta = Fact<int64_t>::Known(periods_now);
  l.throttled_delta = Fact<int64_t>::Known(throttled_now);
  l.throttled_s_delta = Fact<double>::Known(static_cast<double>(throttled_now) * 0.05);
  return l;
}

// Throttled now (>= 5% of the sample's periods) fails; throttled since the group started
// (>= 1% of its periods) warns, so a doctor run at idle still sees what load did; a quota that
// never bit is ok. The worst of several limits on the path is the one judged.
TEST(HostRulesTest, CgroupThrottleNowSinceStartAndNever) {
  HostFacts f = Load("h200_recorded");
  ASSERT_TRUE(f.server.has_value());
  host::CgroupCpu cg;
  cg.version = 2;
  cg.cgroup = "/kubepods.slice/pod7/ctr";
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  auto fs = JudgeHost(f, {});
  EXPECT_EQ(Worst(fs)["cpu.cgroup_throttle"], Severity::kOk);
  EXPECT_EQ(One(fs, "cpu.cgroup_throttle").title, "no CPU quota on the server's cgroup (v2)");

  cg.limits = {Limit("/sys/fs/cgroup/kubepods.slice/pod7/ctr", 2.5, 5000, 10, 10, 0),
               Limit("/sys/fs/cgroup/kubepods.slice/pod7", 4, 5000, 0, 10, 0)};
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  fs = JudgeHost(f, {});
  EXPECT_EQ(Worst(fs)["cpu.cgroup_throttle"], Severity::kOk);  // 0.2% of periods
  EXPECT_EQ(One(fs, "cpu.cgroup_throttle").title,
            "server's cgroup has a CPU quota of 2.5 CPUs; rarely throttled (0.20% of periods)");

  cg.limits[1] = Limit("/sys/fs/cgroup/kubepods.slice/pod7", 4, 5000, 600, 10, 0);
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  fs = JudgeHost(f, {});
  Finding warn = One(fs, "cpu.cgroup_throttle");
  EXPECT_EQ(SeverityName(warn.severity), "warn");
  EXPECT_EQ(warn.title, "server's cgroup throttled in 12.0% of CPU periods since it started, "
                        "start-up included (quota 4 CPUs)");
  EXPECT_THAT(warn.advice, testing::HasSubstr("resources.limits.cpu"));
  EXPECT_THAT(warn.advice, testing::HasSubstr("rest of its 100 ms period"));

  cg.limits[0] = Limit("/sys/fs/cgroup/kubepods.slice/pod7/ctr", 1, 5000, 10, 20, 7);
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  fs = JudgeHost(f, {});
  Finding fail = One(fs, "cpu.cgroup_throttle");
  EXPECT_EQ(SeverityName(fail.severity), "fail");
  EXPECT_EQ(fail.title, "server's cgroup throttled in 35% of CPU periods during the sample (quota "
                        "1 CPU): its threads stall until the next period");
  EXPECT_EQ(EvidenceText(fail, "throttled_in_sample").value_or("(none)"),
            "7 of 20 periods (35%), 350.0 ms waiting");

  // One throttled period of the three or four a 300 ms sample holds is not yet a failure; a
  // young group's few periods (start-up) are not judged.
  cg.limits = {Limit("/sys/fs/cgroup/c", 1, 5000, 10, 3, 1)};
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  EXPECT_EQ(Worst(JudgeHost(f, {}))["cpu.cgroup_throttle"], Severity::kOk);
  cg.limits = {Limit("/sys/fs/cgroup/c", 1, 40, 30, 3, 0)};
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  fs = JudgeHost(f, {});
  EXPECT_EQ(SeverityName(One(fs, "cpu.cgroup_throttle").severity), "ok");
  EXPECT_EQ(One(fs, "cpu.cgroup_throttle").title,
            "server's cgroup has a CPU quota of 1 CPU; throttled in 30 of 40 periods since it "
            "started, too few to judge");

  // 100 periods but fewer than ten throttled: not judged, and not called "rarely".
  cg.limits = {Limit("/sys/fs/cgroup/c", 1, 100, 9, 3, 0)};
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  EXPECT_EQ(One(JudgeHost(f, {}), "cpu.cgroup_throttle").title,
            "server's cgroup has a CPU quota of 1 CPU; throttled in 9 of 100 periods since it "
            "started, too few to judge");

  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Unknown("/proc/623/cgroup: Permission denied");
  fs = JudgeHost(f, {});
  EXPECT_EQ(Worst(fs)["cpu.cgroup_throttle"], Severity::kSkip);
  f.server.reset();
  f.server_note = "no server process";
  EXPECT_EQ(Worst(JudgeHost(f, {}))["cpu.cgroup_throttle"], Severity::kSkip);
}

// The recorded throttled groups (cgroup v1 on the build VM, v2 on the H200 machine; a fifth of
// a CPU, throttled in every period). A recording's two samples are the same, so the counters
// since the group started are what warn.
TEST(HostRulesTest, RecordedThrottledCgroupsWarnFromTheirCounters) {
  for (auto [name, share] : {std::pair{"cgroup_v1_throttled", "99.3"},
                              std::pair{"cgroup_v2_throttled", "99.2"}}) {
    auto fs = JudgeHost(Load(name), {});
    Finding c = One(fs, "cpu.cgroup_throttle");
    EXPECT_EQ(SeverityName(c.severity), "warn") << name;
    EXPECT_EQ(c.title, std::string("server's cgroup throttled in ") + share +
                           "% of CPU periods since it started, start-up included (quota 0.2 CPUs)")
        << name;
  }
}

// PSI: the worst of the 10 s, 60 s and 300 s averages is judged (a run just after the load
// still sees it); swapping during the sample warns on its own; memory "full" stalls fail.
TEST(HostRulesTest, CpuAndMemoryPressure) {
  HostFacts f = Load("h200_recorded");
  host::PsiFacts p;
  p.some_avg10 = 2;
  p.some_avg60 = 3;
  p.some_avg300 = 9.9;
  f.cpu.pressure = Fact<host::PsiFacts>::Known(p);
  f.memory.pressure = Fact<host::PsiFacts>::Known(host::PsiFacts{});
  f.memory.swap_in_pages_delta = Fact<int64_t>::Known(0);
  f.memory.swap_out_pages_delta = Fact<int64_t>::Known(0);
  auto w = Worst(JudgeHost(f, {}));
  EXPECT_EQ(w["cpu.pressure"], Severity::kOk);
  EXPECT_EQ(w["host.memory_pressure"], Severity::kOk);

  p.some_avg300 = 12;
  f.cpu.pressure = Fact<host::PsiFacts>::Known(p);
  auto fs = JudgeHost(f, {});
  EXPECT_EQ(SeverityName(One(fs, "cpu.pressure").severity), "warn");
  EXPECT_EQ(One(fs, "cpu.pressure").title,
            "host CPUs oversubscribed: runnable tasks waited for a CPU 12% of the time (PSI, "
            "whole host)");
  p.some_avg10 = 55;
  f.cpu.pressure = Fact<host::PsiFacts>::Known(p);
  EXPECT_EQ(Worst(JudgeHost(f, {}))["cpu.pressure"], Severity::kFail);

  // The server's own cgroup, when its PSI is known, is what is judged: a quiet server on a
  // busy host is fine.
  host::CgroupCpu cg;
  cg.version = 2;
  cg.pressure = Fact<host::PsiFacts>::Known(host::PsiFacts{});
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  fs = JudgeHost(f, {});
  EXPECT_EQ(SeverityName(One(fs, "cpu.pressure").severity), "ok");
  EXPECT_EQ(One(fs, "cpu.pressure").title,
            "CPU pressure low: the server's tasks waited for a CPU at most 0.0% of the time");
  host::PsiFacts busy;
  busy.some_avg60 = 22;
  cg.pressure = Fact<host::PsiFacts>::Known(busy);
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  EXPECT_EQ(One(JudgeHost(f, {}), "cpu.pressure").title,
            "the server's tasks waited for a CPU 22% of the time (PSI of its cgroup): its CPUs are "
            "oversubscribed");
  // A group's PSI counts the time its own quota throttled it: that is named, not other work.
  host::CgroupCpuLimit quota;
  quota.dir = "/sys/fs/cgroup/c";
  quota.quota_cpus = 0.5;
  quota.period_us = 100000;
  quota.nr_periods = 40;
  quota.nr_throttled = 30;
  cg.limits = {quota};
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);
  Finding held = One(JudgeHost(f, {}), "cpu.pressure");
  EXPECT_EQ(held.title, "the server's tasks waited for a CPU 22% of the time (PSI of its cgroup), "
                        "partly held back by its own CPU quota");
  EXPECT_THAT(held.advice, HasSubstr("see cpu.cgroup_throttle"));
  cg.limits.clear();
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Known(cg);

  // Swapping cold pages out is not a stall; swapping in (major faults) is.
  f.memory.swap_out_pages_delta = Fact<int64_t>::Known(300);
  EXPECT_EQ(Worst(JudgeHost(f, {}))["host.memory_pressure"], Severity::kOk);
  f.memory.swap_in_pages_delta = Fact<int64_t>::Known(300);  // over the recorded 1 s sample
  fs = JudgeHost(f, {});
  EXPECT_EQ(SeverityName(One(fs, "host.memory_pressure").severity), "warn");
  EXPECT_EQ(One(fs, "host.memory_pressure").title,
            "host memory under pressure: swapping in 300 pages/s during the sample");
  host::PsiFacts m;
  m.some_avg60 = 20;
  m.has_full = true;
  m.full_avg60 = 6;
  f.memory.pressure = Fact<host::PsiFacts>::Known(m);
  fs = JudgeHost(f, {});
  EXPECT_EQ(SeverityName(One(fs, "host.memory_pressure").severity), "fail");
  EXPECT_EQ(One(fs, "host.memory_pressure").title,
            "host memory under pressure: every task stalled on memory 6% of the time; swapping "
            "in 300 pages/s during the sample");

  f.cpu.pressure = Fact<host::PsiFacts>::Unknown("/proc/pressure/cpu: No such file or directory");
  f.server->cgroup_cpu = Fact<host::CgroupCpu>::Unknown("/proc/623/cgroup: No such file or directory");
  f.memory = host::MemoryFacts{};
  f.memory.pressure = Fact<host::PsiFacts>::Unknown("/proc/pressure/memory: No such file or directory");
  w = Worst(JudgeHost(f, {}));
  EXPECT_EQ(w["cpu.pressure"], Severity::kSkip);
  EXPECT_EQ(w["host.memory_pressure"], Severity::kSkip);
}

// Drops on the receive path, host-wide: at sockets (SYN drops beyond the accept-queue overflows
// net.listen_overflow reports, backlog and receive-queue drops), at the CPUs' input backlog, and
// in conntrack. Any drop warns (conntrack's fails); a squeezed softirq alone is information.
TEST(HostRulesTest, ReceivePathDrops) {
  HostFacts f = Load("mi300x_built");
  f.sample_interval_ns = 2'000'000'000;
  auto& n = f.net;
  auto known = [](int64_t v) { return Fact<int64_t>::Known(v, "test"); };
  n.listen_overflows_delta = known(5);
  n.listen_drops_delta = known(5);
  n.backlog_drops_delta = known(0);
  n.rcvq_drops_delta = Fact<int64_t>::Unknown("TcpExt.TCPRcvQDrop: not reported");
  n.softnet_dropped_delta = known(0);
  n.softnet_squeezed_delta = known(0);
  n.netdev_max_backlog = known(1000);
  n.netdev_budget = known(300);
  n.conntrack_count = known(1000);
  n.conntrack_max = known(262144);
  n.conntrack_drops_delta = known(0);
  auto fs = JudgeHost(f, {});
  // Overflows alone are net.listen_overflow's; an older kernel's missing counter is left out.
  Finding s = One(fs, "net.socket_drops");
  EXPECT_EQ(s.severity, Severity::kOk);
  std::vector<std::string> names;
  for (const auto& e : s.evidence) names.push_back(e.name + "=" + std::to_string(e.value.value_or(-1)));
  EXPECT_THAT(names, ::testing::ElementsAre("ListenDrops-ListenOverflows_delta=0.000000",
                                            "TCPBacklogDrop_delta=0.000000"));
  EXPECT_EQ(One(fs, "net.softnet").severity, Severity::kOk);
  EXPECT_EQ(One(fs, "net.conntrack").severity, Severity::kOk);

  n.listen_drops_delta = known(8);
  n.backlog_drops_delta = known(40);
  n.softnet_squeezed_delta = known(17);
  fs = JudgeHost(f, {});
  s = One(fs, "net.socket_drops");
  EXPECT_EQ(s.severity, Severity::kWarn);
  EXPECT_EQ(s.title, "43 TCP segments dropped at sockets in 2.0 s, host-wide: 3 by listeners "
                     "besides accept-queue overflows (ListenDrops-ListenOverflows), 40 at a socket "
                     "backlog (TCPBacklogDrop); each waits for a retransmit timeout (about 1 s for "
                     "a SYN)");
  EXPECT_THAT(s.advice, HasSubstr("somaxconn"));
  EXPECT_THAT(s.advice, HasSubstr("cpu.saturation"));
  Finding q = One(fs, "net.softnet");
  EXPECT_EQ(q.severity, Severity::kInfo);
  EXPECT_EQ(q.title, "receive softirq ran out of budget 17 times in 2.0 s (net.core.netdev_budget "
                     "300 packets, or netdev_budget_usecs): packets waited for the next round");
  EXPECT_THAT(q.advice, HasSubstr("sysctl -w net.core.netdev_budget=600"));
  // A conntrack insertion clash is a warning of its own (a race, not a full table).
  n.conntrack_insert_failed_delta = known(4);
  Finding clash = One(JudgeHost(f, {}), "net.conntrack");
  EXPECT_EQ(clash.severity, Severity::kWarn);
  EXPECT_THAT(clash.title, HasSubstr("conntrack insertions failed 4 times in 2.0 s (entry clashes)"));

  n.softnet_dropped_delta = known(9);
  n.conntrack_drops_delta = known(3);
  fs = JudgeHost(f, {});
  q = One(fs, "net.softnet");
  EXPECT_EQ(q.severity, Severity::kWarn);
  EXPECT_THAT(q.title, HasSubstr("9 packets dropped at the CPUs' receive backlog in 2.0 s "
                                 "(net.core.netdev_max_backlog 1000)"));
  EXPECT_THAT(q.advice, HasSubstr("net.core.netdev_max_backlog=2000"));
  Finding c = One(fs, "net.conntrack");
  EXPECT_EQ(c.severity, Severity::kFail);
  EXPECT_THAT(c.title, HasSubstr("conntrack dropped 3 packets in 2.0 s (table 0% full)"));

  // Nothing readable: skipped with the reason.
  n.listen_drops_delta = n.backlog_drops_delta = Fact<int64_t>::Unknown("/proc/net/netstat: Permission denied");
  n.softnet_dropped_delta = Fact<int64_t>::Unknown("/proc/net/softnet_stat: No such file or directory");
  fs = JudgeHost(f, {});
  EXPECT_EQ(One(fs, "net.socket_drops").severity, Severity::kSkip);
  EXPECT_EQ(One(fs, "net.softnet").severity, Severity::kSkip);
}

// vLLM captures CUDA graphs up to min(2 x max_num_seqs, 512) by default: max_num_seqs 1024 (the
// default on >= 70 GiB GPUs) leaves batches 513-1024 without graphs. Info without a sweep,
// warn when the sweep's knee is past the captured size, ok when it is under; the capture size
// is read from each flag form; eager servers are judged by config.enforce_eager alone.
TEST(HostRulesTest, CudaGraphCaptureSizeAgainstMaxNumSeqs) {
  HostFacts f = Load("mi300x_built");  // default max_num_seqs: 1024 on MI300X
  ASSERT_TRUE(f.server.has_value());
  auto fs = JudgeHost(f, {});
  Finding c = One(fs, "config.cudagraph_capture");
  EXPECT_EQ(SeverityName(c.severity), "info");
  EXPECT_EQ(c.title, "vLLM pid 4242: max_num_seqs 1024 is above the largest CUDA-graph capture "
                     "size 512: decode batches of 513-1024 run without graphs (inter-token "
                     "latency jumps past 512); latdoc sweep tells whether the load gets there");
  EXPECT_THAT(c.advice, HasSubstr("\"max_cudagraph_capture_size\": 1024"));
  HostRuleOptions knee;
  knee.sweep_knee_concurrency = 700;
  EXPECT_EQ(SeverityName(One(JudgeHost(f, knee), "config.cudagraph_capture").severity), "warn");
  knee.sweep_knee_concurrency = 300;
  EXPECT_EQ(SeverityName(One(JudgeHost(f, knee), "config.cudagraph_capture").severity), "ok");

  const std::vector<std::string> base = f.server->argv;
  struct Case {
    std::vector<std::string> extra;
    const char* want;
  };
  for (const Case& k : {Case{{"--max-num-seqs", "256"}, "ok"},  // default capture 512
                        Case{{"--max-cudagraph-capture-size", "1024"}, "ok"},
                        Case{{"--max-cudagraph-capture-size=768"}, "info"},
                        Case{{"--cudagraph-capture-sizes", "1", "2", "1024"}, "ok"},
                        Case{{"--cuda-graph-sizes", "2048"}, "ok"},
                        Case{{"--compilation-config", R"({"max_cudagraph_capture_size": 1024})"}, "ok"},
                        Case{{"-cc", R"({"cudagraph_capture_sizes": [1, 8, 64]})"}, "info"},
                        Case{{"-O", R"({"cudagraph_capture_sizes": [1, 2048]})"}, "ok"}}) {
    f.server->argv = base;
    f.server->argv.insert(f.server->argv.end(), k.extra.begin(), k.extra.end());
    EXPECT_EQ(SeverityName(One(JudgeHost(f, {}), "config.cudagraph_capture").severity), k.want)
        << k.extra.front();
  }
  f.server->argv = base;
  f.server->argv.push_back("--enforce-eager");
  fs = JudgeHost(f, {});
  EXPECT_EQ(First(fs, "config.cudagraph_capture"), nullptr);
  EXPECT_EQ(SeverityName(One(fs, "config.enforce_eager").severity), "fail");
}

// The busiest thread may be in one of the server's children: vLLM V1's engine core (the
// scheduler) or a GPU worker. Each gets its own reading and advice, not the front end's.
TEST(HostRulesTest, SaturatedChildProcessThreads) {
  HostFacts f = Load("h200_recorded");
  ASSERT_TRUE(f.server.has_value());
  f.server->children = {{700, "VLLM::EngineCore"}, {701, "VLLM::Worker_TP0"}};
  auto threads = [&](host::ThreadCpu top) {
    f.server->threads = Fact<std::vector<host::ThreadCpu>>::Known({top});
    return One(JudgeHost(f, {}), "cpu.saturation");
  };
  Finding e = threads({700, "VLLM::EngineCor", 99.0, 3, 700, "VLLM::EngineCore"});
  EXPECT_EQ(SeverityName(e.severity), "warn");
  EXPECT_EQ(e.title, "engine core thread 700 (VLLM::EngineCor) pinned at 99% of a core: the "
                     "scheduler and input preparation hold the GPU back");
  EXPECT_THAT(e.advice, HasSubstr("--async-scheduling"));
  EXPECT_EQ(EvidenceText(e, "child_processes").value_or("(none)"),
            "700 (VLLM::EngineCore), 701 (VLLM::Worker_TP0)");
  Finding w = threads({705, "python3", 97.0, 4, 701, "VLLM::Worker_TP0"});
  EXPECT_EQ(w.title, "GPU worker thread 705 (python3, VLLM::Worker_TP0) pinned at 97% of a core: "
                     "kernel launches are host-bound");
  Finding front = threads({623, "python3", 99.0, 4, 623, ""});
  EXPECT_THAT(front.title, HasSubstr("a GIL-bound front end"));
  EXPECT_THAT(front.advice, HasSubstr("--api-server-count"));
  // With --api-server-count the front ends are children titled VLLM::APIServer_N.
  EXPECT_THAT(threads({710, "python3", 99.0, 5, 702, "VLLM::APIServer_1"}).title,
              HasSubstr("a GIL-bound front end"));
  EXPECT_THAT(threads({720, "python3", 99.0, 6, 703, "ray::IDLE"}).title,
              HasSubstr("of the server's child ray::IDLE pinned at 99% of a core"));
  // A child whose name could not be read (it exited, its pid was reused) is still a child.
  EXPECT_THAT(threads({730, "python3", 99.0, 6, 704, ""}).title,
              HasSubstr("of the server's child pid 704 pinned at 99% of a core"));
  EXPECT_EQ(SeverityName(threads({700, "VLLM::EngineCor", 60.0, 3, 700, "VLLM::EngineCore"}).severity),
            "ok");
}

}  // namespace
}  // namespace latdoc::rules

namespace latdoc::rules {
namespace {

// AMD: amd-smi's THROTTLED while busy is gpu.throttle warn, naming the active violations; while
// idle it is said, not judged (some firmware sets a thermal bit at idle); without amd-smi
// there is no finding, as before.
TEST(HostRulesTest, AmdThrottleFromAmdSmi) {
  HostFacts f = OneNvidiaGpu();
  auto& g = f.gpus[0];
  g.vendor = "amd";
  g.util_pct = Fact<int64_t>::Known(97);
  EXPECT_FALSE(First(JudgeHost(f, {}), "gpu.throttle"));
  g.throttle_status = Fact<std::string>::Known("THROTTLED", "amd-smi metric --json");
  g.throttle_active = Fact<std::string>::Known("hbm_thermal, ppt", "amd-smi metric --json");
  auto fs = JudgeHost(f, {});
  ASSERT_TRUE(First(fs, "gpu.throttle"));
  EXPECT_EQ(First(fs, "gpu.throttle")->severity, Severity::kWarn);
  EXPECT_THAT(First(fs, "gpu.throttle")->title,
              testing::EndsWith(": clocks throttled while busy (hbm_thermal, ppt)"));
  g.util_pct = Fact<int64_t>::Known(0);
  EXPECT_EQ(First(JudgeHost(f, {}), "gpu.throttle")->severity, Severity::kOk);
  g.util_pct = Fact<int64_t>::Known(97);
  g.throttle_status = Fact<std::string>::Known("UNTHROTTLED", "amd-smi metric --json");
  g.throttle_active = Fact<std::string>::Known("", "amd-smi metric --json");
  EXPECT_EQ(First(JudgeHost(f, {}), "gpu.throttle")->severity, Severity::kOk);
}

}  // namespace
}  // namespace latdoc::rules

namespace latdoc::rules {
namespace {

// net.retrans is judged by the share of segments once retransmits are many, however little was
// sent: the live H200 host's sample with 160 retransmits against 113 segments sent.
TEST(HostRulesTest, RetransmitsJudgedByRateInLittleTraffic) {
  HostFacts f = Load("h200_live_retrans");
  auto fs = JudgeHost(f, {});
  const Finding* r = First(fs, "net.retrans");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->severity, Severity::kFail);
  EXPECT_EQ(r->title, "TCP retransmits 141.6% of segments: each costs at least one RTO");
  f.net.retrans_segs_delta = Fact<int64_t>::Known(3);   // a few in little traffic: not judged
  EXPECT_EQ(First(JudgeHost(f, {}), "net.retrans")->title,
            "too little TCP traffic in the sample to judge retransmits");
  f.net.retrans_segs_delta = Fact<int64_t>::Known(30);
  f.net.out_segs_delta = Fact<int64_t>::Known(2000);   // 1.5%: warn
  EXPECT_EQ(First(JudgeHost(f, {}), "net.retrans")->severity, Severity::kWarn);
}

}  // namespace
}  // namespace latdoc::rules

namespace latdoc::rules {
namespace {

// Flag combinations vLLM refuses to start with are `fail`, citing vLLM's rule: the token
// budget below max_num_seqs; below --max-model-len with chunked prefill off; a --block-size the
// CLI rejects. (mi300x_built's server runs with --max-num-seqs 1024.)
TEST(HostRulesTest, FlagsVllmRefusesAreFail) {
  HostFacts f = Load("mi300x_built");
  ASSERT_TRUE(f.server.has_value());
  const std::vector<std::string> base = f.server->argv;
  auto judge = [&](std::vector<std::string> extra, const char* id) {
    f.server->argv = base;
    f.server->argv.insert(f.server->argv.end(), extra.begin(), extra.end());
    return One(JudgeHost(f, {}), id);
  };
  Finding mbt = judge({"--max-num-batched-tokens", "512"}, "config.max_num_batched_tokens");
  EXPECT_EQ(SeverityName(mbt.severity), "fail");
  EXPECT_THAT(mbt.title, HasSubstr("--max-num-batched-tokens 512 is below max_num_seqs 1024"));
  EXPECT_THAT(mbt.advice, HasSubstr("--max-num-batched-tokens 1024"));
  // Above max_num_seqs, below max_model_len: refused only with chunked prefill off.
  Finding on = judge({"--max-num-batched-tokens", "4096", "--max-model-len", "32k"},
                     "config.max_num_batched_tokens");
  EXPECT_EQ(SeverityName(on.severity), "ok");
  for (std::vector<std::string> off : {std::vector<std::string>{"--no-enable-chunked-prefill"},
                                       std::vector<std::string>{"--enable-chunked-prefill", "False"},
                                       std::vector<std::string>{"--enable-chunked-prefill=false"}}) {
    std::vector<std::string> extra = {"--max-num-batched-tokens", "4096", "--max-model-len", "32k"};
    extra.insert(extra.end(), off.begin(), off.end());
    Finding x = judge(extra, "config.max_num_batched_tokens");
    EXPECT_EQ(SeverityName(x.severity), "fail") << off[0];
    EXPECT_THAT(x.title, HasSubstr("below --max-model-len 32000 with chunked prefill off")) << off[0];
  }
  for (const char* bs : {"24", "512", "0"}) {
    Finding b = judge({"--block-size", bs}, "config.block_size");
    EXPECT_EQ(SeverityName(b.severity), "fail") << bs;
    EXPECT_THAT(b.title, HasSubstr("is not one vLLM accepts")) << bs;
  }
  for (const char* bs : {"1", "8", "64", "128", "256"}) {
    EXPECT_EQ(SeverityName(judge({"--block-size", bs}, "config.block_size").severity), "info") << bs;
  }
}

}  // namespace
}  // namespace latdoc::rules

namespace latdoc::rules {
namespace {

// disk.log_write is judged by the rate the server and its children write and the disk's flush
// rate, not only by a disk 90% busy: the live H200 host's facts with 66 MB/s written and 118
// flushes/s on a disk 35% busy.
TEST(HostRulesTest, LogWritesJudgedByRateAndFlushes) {
  HostFacts f = Load("h200_live_fsync_writes");
  Finding w = One(JudgeHost(f, {}), "disk.log_write");
  EXPECT_EQ(SeverityName(w.severity), "warn");
  EXPECT_EQ(w.title, "server writes 66.0 MB/s with 118 disk flushes/s (fsync): each synced write "
                     "blocks the writer until the disk has it");
  f.disk.flushes_per_s = Fact<double>::Known(0, "/proc/diskstats");
  w = One(JudgeHost(f, {}), "disk.log_write");
  EXPECT_EQ(SeverityName(w.severity), "warn");
  EXPECT_THAT(w.title, HasSubstr("server writes 66.0 MB/s: far more than logs need"));
  f.server->write_bytes_per_s = Fact<double>::Known(5e6, "/proc/623/io");
  EXPECT_EQ(SeverityName(One(JudgeHost(f, {}), "disk.log_write").severity), "ok");
  // Without a disk utilisation, heavy writing is still judged.
  f.disk.busiest_util_pct = Fact<double>::Unknown("no diskstats");
  f.server->write_bytes_per_s = Fact<double>::Known(66e6, "/proc/623/io");
  EXPECT_EQ(SeverityName(One(JudgeHost(f, {}), "disk.log_write").severity), "warn");
}

}  // namespace
}  // namespace latdoc::rules
