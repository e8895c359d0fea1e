#include "host/collector.h"

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "base/clock.h"
#include "host/test_tree.h"

namespace latdoc::host {
namespace {

CollectOptions Recorded(const std::string& root) {
  CollectOptions o;
  o.sysroot = root;
  o.sample_interval_ns = 0;
  return o;
}

// vLLM's --config file, read as the server sees it: an absolute path through /proc/PID/root
// (its container's file system), a relative one through /proc/PID/cwd; an API key in it
// redacted; a file that is not there, unknown with the reason.
TEST(CollectorTest, VllmConfigFileThroughTheServersOwnView) {
  TestTree t("tests/data/host/mi300x_built/tree");
  using namespace std::string_literals;
  const std::string argv0 = "/usr/bin/python3\0/usr/local/bin/vllm\0serve\0m\0--config\0"s;
  auto cmdline = [&](const std::string& path) {
    std::string s = argv0 + path + std::string(1, '\0');
    t.Write("/proc/4242/cmdline", s);
  };
  t.Write("/proc/4242/root/etc/vllm/serve.yaml", "enforce-eager: true\napi-key: sk-file-secret\n");
  t.Write("/proc/4242/cwd/local.yaml", "max-num-seqs: 128\n");
  cmdline("/etc/vllm/serve.yaml");
  HostFacts f = CollectHostFacts(Recorded(t.root()));
  ASSERT_TRUE(f.server.has_value());
  ASSERT_TRUE(f.server->config_file_args.known()) << f.server->config_file_args.reason;
  EXPECT_EQ(*f.server->config_file_args,
            (std::vector<std::string>{"--enforce-eager", "--api-key", "<redacted>"}));
  EXPECT_EQ(f.server->config_file_args.source, "/proc/4242/root/etc/vllm/serve.yaml");
  cmdline("local.yaml");
  f = CollectHostFacts(Recorded(t.root()));
  ASSERT_TRUE(f.server->config_file_args.known()) << f.server->config_file_args.reason;
  EXPECT_EQ(*f.server->config_file_args, (std::vector<std::string>{"--max-num-seqs", "128"}));
  cmdline("missing.yaml");
  f = CollectHostFacts(Recorded(t.root()));
  EXPECT_FALSE(f.server->config_file_args.known());
  EXPECT_NE(f.server->config_file_args.reason.find("--config missing.yaml: "), std::string::npos)
      << f.server->config_file_args.reason;
}

// A self-signed certificate made for this test (openssl req -x509, EC P-256, 100 years):
// `openssl x509 -noout -fingerprint -sha256 -subject -issuer -nameopt RFC2253` prints the
// values the test expects.
constexpr char kServerCertPem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBuTCCAV+gAwIBAgIUX7mkwj/5ZBgBu2HTaN9nkiJ1CmkwCgYIKoZIzj0EAwIw\n"
    "MTEWMBQGA1UEAwwNdmxsbS5pbnRlcm5hbDEXMBUGA1UECgwOSW5mZXJlbmNlIFRl\n"
    "YW0wIBcNMjYxMjA1MDAyODQ3WhgPMjEyNjExMTEwMDI4NDdaMDExFjAUBgNVBAMM\n"
    "DXZsbG0uaW50ZXJuYWwxFzAVBgNVBAoMDkluZmVyZW5jZSBUZWFtMFkwEwYHKoZI\n"
    "zj0CAQYIKoZIzj0DAQcDQgAEuczIwbkJPDHGufmbua5OtBK2kSvaaSSZTcrMPBD+\n"
    "TUSzvZKatgTnM0ujR92tpdcBnwIx/Zzj7T5YDWIdpxRrTqNTMFEwHQYDVR0OBBYE\n"
    "FHVvtYmXGM0b33CIOpxFv+BhQSMCMB8GA1UdIwQYMBaAFHVvtYmXGM0b33CIOpxF\n"
    "v+BhQSMCMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAN/FSnTa\n"
    "htd3nclDdmSi2F+fHtwIxSbutpwPyftubmDDAiBbI1ngBtTDutwpjjelZUyRpC0D\n"
    "dARca6n7VhwDykfVtg==\n"
    "-----END CERTIFICATE-----\n";

// vLLM's --ssl-certfile, read as the server sees it (through /proc/PID/root or /proc/PID/cwd),
// in either spelling, or from its --config file: the leaf's subject, issuer and SHA-256; a file
// with no certificate is unknown with the reason. The interfaces that are up (IFF_UP in
// /sys/class/net/NAME/flags), loopback and those that are down left out, with their MTU.
TEST(CollectorTest, ServerCertificateAndInterfaceMtus) {
  TestTree t("tests/data/host/mi300x_built/tree");
  using namespace std::string_literals;
  auto cmdline = [&](const std::string& tail) {
    t.Write("/proc/4242/cmdline", "/usr/bin/python3\0/usr/local/bin/vllm\0serve\0m\0"s + tail);
  };
  t.Write("/proc/4242/root/etc/vllm/cert.pem", kServerCertPem);
  t.Write("/proc/4242/cwd/cert.pem", kServerCertPem);
  t.Write("/proc/4242/root/etc/vllm/bad.pem", "not a certificate\n");
  t.Write("/proc/4242/root/etc/vllm/tls.yaml", "ssl-certfile: /etc/vllm/cert.pem\n");
  t.Write("/sys/class/net/eth0/flags", "0x1003\n");
  t.Write("/sys/class/net/eth0/mtu", "9000\n");
  t.Write("/sys/class/net/eth0/operstate", "up\n");
  t.Write("/sys/class/net/tun0/flags", "0x1091\n");
  t.Write("/sys/class/net/tun0/mtu", "1400\n");
  t.Write("/sys/class/net/tun0/operstate", "unknown\n");
  t.Write("/sys/class/net/eth1/flags", "0x1002\n");  // down
  t.Write("/sys/class/net/eth1/mtu", "1500\n");
  t.Write("/sys/class/net/lo/flags", "0x9\n");
  t.Write("/sys/class/net/lo/mtu", "65536\n");
  const std::string kSha = "71fcb1a54c5008d95afa9bc7851db262a48f5c8e4bca05a1bee8ad4bf4941884";
  for (const std::string& tail : {"--ssl-certfile\0/etc/vllm/cert.pem\0"s,
                                 "--ssl_certfile=cert.pem\0"s, "--config\0/etc/vllm/tls.yaml\0"s}) {
    cmdline(tail);
    HostFacts f = CollectHostFacts(Recorded(t.root()));
    ASSERT_TRUE(f.server.has_value());
    ASSERT_TRUE(f.server->tls_cert.known()) << f.server->tls_cert.reason;
    EXPECT_EQ(f.server->tls_cert->sha256_hex, kSha);
    EXPECT_EQ(f.server->tls_cert->subject, "O=Inference Team,CN=vllm.internal");
    EXPECT_EQ(f.server->tls_cert->issuer, "O=Inference Team,CN=vllm.internal");
    ASSERT_TRUE(f.net.interfaces.known()) << f.net.interfaces.reason;
    ASSERT_EQ(f.net.interfaces->size(), 2u);
    EXPECT_EQ((*f.net.interfaces)[0].name, "eth0");
    EXPECT_EQ((*f.net.interfaces)[0].mtu_bytes, 9000);
    EXPECT_EQ((*f.net.interfaces)[1].name, "tun0");
    EXPECT_EQ((*f.net.interfaces)[1].mtu_bytes, 1400);
    EXPECT_EQ((*f.net.interfaces)[1].operstate, "unknown");
    // Through the facts file, as diagnose --facts reads them.
    auto back = FactsFromJson(FactsToJson(f), "facts.json");
    ASSERT_TRUE(back.ok()) << back.status().message();
    ASSERT_TRUE(back->server->tls_cert.known());
    EXPECT_EQ(back->server->tls_cert->sha256_hex, kSha);
    ASSERT_TRUE(back->net.interfaces.known());
    EXPECT_EQ(back->net.interfaces->size(), 2u);
  }
  EXPECT_EQ(CollectHostFacts(Recorded(t.root())).server->tls_cert.source,
            "/proc/4242/root/etc/vllm/cert.pem");
  cmdline("--ssl-certfile\0/etc/vllm/bad.pem\0"s);
  HostFacts f = CollectHostFacts(Recorded(t.root()));
  EXPECT_FALSE(f.server->tls_cert.known());
  EXPECT_EQ(f.server->tls_cert.reason,
            "--ssl-certfile /etc/vllm/bad.pem: no PEM certificate in the file");
  cmdline("--port\08000\0"s);
  EXPECT_EQ(CollectHostFacts(Recorded(t.root())).server->tls_cert.reason, "no --ssl-certfile");
}

// The real H200 host recorded by tools/capture_host_device.sh.
TEST(CollectorTest, RecordedH200) {
  HostFacts f = CollectHostFacts(Recorded("tests/data/host/h200_recorded/tree"));
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.vendor, "nvidia");
  EXPECT_EQ(g.bdf, "0000:00:06.0");
  EXPECT_EQ(g.name.value_or(""), "NVIDIA H200");
  EXPECT_EQ(g.driver.value_or(""), "nvidia");
  EXPECT_EQ(g.vendor_source, "nvidia-smi");
  EXPECT_EQ(g.numa_node.value_or(99), -1);
  EXPECT_EQ(g.local_cpulist.value_or(""), "0-15");
  EXPECT_EQ(g.sm_clock_mhz.value_or(0), 345);
  EXPECT_EQ(g.max_sm_clock_mhz.value_or(0), 1980);
  EXPECT_EQ(g.util_pct.value_or(-1), 0);
  EXPECT_EQ(g.clocks_event_reasons.value_or(0), 0x1u);
  EXPECT_EQ(g.persistence_mode.value_or(false), true);
  EXPECT_EQ(g.memory_total_mib.value_or(0), 143771);
  EXPECT_EQ(g.power_limit_w.value_or(0), 700.0);
  ASSERT_EQ(g.pcie_path.size(), 1u);  // attached straight to the root bus in this VM
  EXPECT_EQ(g.pcie_path[0].cur_speed_gts.value_or(0), 32.0);
  EXPECT_EQ(g.pcie_path[0].max_width.value_or(0), 16);
  EXPECT_THAT(f.gpu_notes, testing::ElementsAre(
                               "nvidia: NVML not consulted for a recorded tree; used nvidia-smi"));
  ASSERT_EQ(f.cpu.numa_nodes.size(), 1u);
  EXPECT_EQ(f.cpu.numa_nodes[0].cpulist, "0-15");
  EXPECT_EQ(f.cpu.online_cpus.value_or(0), 16);
  EXPECT_FALSE(f.cpu.governor.known());
  EXPECT_EQ(f.cpu.governor.reason,
            "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor: No such file or directory");
  ASSERT_TRUE(f.server.has_value());
  EXPECT_EQ(f.server->pid, 623);
  EXPECT_EQ(f.server->kind, "vllm");
  EXPECT_THAT(f.server->argv, testing::Contains("--enforce-eager"));
  EXPECT_THAT(f.server->argv, testing::Contains("<redacted>"));
  ASSERT_TRUE(f.server->env.known());
  EXPECT_EQ(f.server->env->at("VLLM_LOGGING_LEVEL"), "DEBUG");
  EXPECT_EQ(f.server->env->count("VLLM_API_KEY"), 0u);  // the capture left it out
  EXPECT_EQ(f.server->cpus_allowed_list.value_or(""), "0-15");
  // One reading of each file: nothing to count over, so the interval facts are unknown (they
  // would read as "nothing happened"); since-boot figures stay.
  const std::string one_reading =
      "a recorded tree is one reading: no interval to count over (run doctor on the live host)";
  EXPECT_EQ(f.server->threads.reason, one_reading);
  EXPECT_EQ(f.net.retrans_segs_delta.reason, one_reading);
  EXPECT_EQ(f.net.listen_overflows_delta.reason, one_reading);
  EXPECT_EQ(f.disk.busiest_util_pct.reason, one_reading);
  EXPECT_EQ(f.net.tcp_time_wait.value_or(-1), 2);
  EXPECT_EQ(f.net.server_port.value_or(0), 8000);
  EXPECT_EQ(f.net.conntrack_max.value_or(0), 262144);
  ASSERT_TRUE(f.net.nic_irqs.known());
  ASSERT_EQ(f.net.nic_irqs->size(), 1u);
  EXPECT_EQ(f.net.nic_irqs->at(0).nic, "virtio2");
  EXPECT_TRUE(f.net.nic_irqs->at(0).since_boot);  // one reading: the counts since boot
  EXPECT_FALSE(f.net.firewall_rules.known());
}

TEST(CollectorTest, BuiltMi300xWalksTheSwitchAndReadsAmdgpuSysfs) {
  HostFacts f = CollectHostFacts(Recorded("tests/data/host/mi300x_built/tree"));
  ASSERT_EQ(f.gpus.size(), 2u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g.vendor, "amd");
  EXPECT_EQ(g.name.value_or(""), "AMD Instinct MI300X (gfx942, 304 CU)");
  EXPECT_EQ(g.perf_level.value_or(""), "auto");
  EXPECT_EQ(g.sclk_deep_sleep.value_or(false), true);
  EXPECT_EQ(g.sm_clock_mhz.value_or(0), 19);
  EXPECT_EQ(g.max_sm_clock_mhz.value_or(0), 2100);
  EXPECT_EQ(g.power_limit_w.value_or(0), 750.0);
  EXPECT_EQ(g.memory_total_mib.value_or(0), 192 * 1024);
  EXPECT_EQ(g.numa_node.value_or(-5), 0);
  EXPECT_EQ(f.gpus[1].numa_node.value_or(-5), 1);
  std::vector<std::string> hops;
  for (const auto& l : g.pcie_path) hops.push_back(l.role + " " + l.bdf);
  EXPECT_THAT(hops, testing::ElementsAre("gpu 0000:0c:00.0", "bridge 0000:0b:00.0",
                                         "bridge 0000:0a:00.0", "bridge 0000:00:01.1"));
  EXPECT_FALSE(g.clocks_event_reasons.known());
  EXPECT_EQ(f.cpu.numa_nodes.size(), 2u);
  EXPECT_EQ(f.cpu.governor.value_or(""), "performance");
  EXPECT_EQ(f.net.firewall_rules.value_or(-1), 12);
  EXPECT_EQ(f.net.firewall_rules.source, "iptables-save");
  EXPECT_EQ(f.net.server_port_time_wait.value_or(-1), 2);
}

// Counters come from two samples; the hook changes the tree between them.
TEST(CollectorTest, DeltasAreTakenBetweenTheTwoSamples) {
  TestTree t("tests/data/host/mi300x_built/tree");
  CollectOptions o = Recorded(t.root());
  o.sample_interval_ns = 200'000'000;
  const long hz = ::sysconf(_SC_CLK_TCK);
  o.between_samples = [&] {
    // Thread 4242 gains hz/5 ticks (= 0.2 s of CPU: ~100% over a 0.2 s interval).
    t.Write("/proc/4242/task/4242/stat",
            "4242 (python3) R 1 4242 4242 0 -1 4194304 1 0 0 0 " + std::to_string(500 + hz / 5) +
                " 20 0 0 20 0 2 0 100 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 5 0 0 0 0 0\n");
    t.Write("/proc/4242/io", "write_bytes: " + std::to_string(4096 + 2'000'000) + "\n");
    t.Write("/proc/net/netstat", "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPBacklogDrop "
                                 "TCPRcvQDrop\nTcpExt: 0 7 9 4 0\n");
    // CPU 1 drops 5 packets at its backlog; CPUs 0 and 3 run out of softirq budget 2 and 1 times.
    t.Write("/proc/net/softnet_stat",
            "000f4290 00000000 00000003 0 0 0 0 0 0 0 0 0 00000000 0 0\n"
            "000f4291 00000005 00000001 0 0 0 0 0 0 0 0 0 00000001 0 0\n"
            "000f4292 00000000 00000001 0 0 0 0 0 0 0 0 0 00000002 0 0\n"
            "000f4293 00000000 00000002 0 0 0 0 0 0 0 0 0 00000003 0 0\n");
    // conntrack: one more drop on each of two CPUs, one insert_failed, one early drop (an
    // eviction, not a loss: not counted).
    std::string ct = "entries  clashres found new invalid ignore delete chainlength insert insert_failed drop "
                     "early_drop icmp_error  expect_new expect_create expect_delete search_restart\n";
    for (int c = 0; c < 4; ++c) {
      ct += "000003e8  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
            "0000000" + std::to_string(c == 2 ? 1 : 0) + " 0000000" + std::to_string(c < 2 ? 1 : 0) +
            " 0000000" + std::to_string(c == 3 ? 1 : 0) +
            " 00000000  00000000 00000000 00000000 00000000\n";
    }
    t.Write("/proc/net/stat/nf_conntrack", ct);
    t.Write("/proc/vmstat", "nr_free_pages 123456\npswpin 5\npswpout 40\n");
    t.Write("/proc/net/snmp", "Tcp: RtoAlgorithm ActiveOpens PassiveOpens OutSegs RetransSegs\nTcp: 1 10 900 110000 203\n");
    t.Write("/proc/interrupts",
            "           CPU0       CPU1       CPU2       CPU3\n"
            " 120:   20000900   21000000   19000000   20500000  IR-PCI-MSIX-0000:41:00.0    0-edge      eth0-TxRx-0\n"
            " 121:   19000100   20000000   21000000   20000000  IR-PCI-MSIX-0000:41:00.0    1-edge      eth0-TxRx-1\n");
  };
  const int64_t t0 = MonoNowNs();
  HostFacts f = CollectHostFacts(o);
  EXPECT_GE(MonoNowNs() - t0, 200'000'000);
  EXPECT_GE(f.sample_interval_ns, 200'000'000);
  ASSERT_TRUE(f.server.has_value());
  ASSERT_TRUE(f.server->threads.known()) << f.server->threads.reason;
  const ThreadCpu& top = f.server->threads->front();
  EXPECT_EQ(top.tid, 4242);
  EXPECT_EQ(top.last_cpu, 5);
  const double expect_pct = 0.2 / (static_cast<double>(f.sample_interval_ns) / 1e9) * 100;
  EXPECT_NEAR(top.cpu_pct, expect_pct, 0.5);
  EXPECT_EQ(f.server->threads->at(1).cpu_pct, 0.0);
  EXPECT_NEAR(*f.server->write_bytes_per_s, 2e6 / (static_cast<double>(f.sample_interval_ns) / 1e9), 1);
  EXPECT_EQ(f.net.listen_overflows_delta.value_or(-1), 7);
  EXPECT_EQ(f.net.listen_drops_delta.value_or(-1), 9);
  EXPECT_EQ(f.net.backlog_drops_delta.value_or(-1), 4);
  EXPECT_EQ(f.net.rcvq_drops_delta.value_or(-1), 0);
  EXPECT_EQ(f.net.softnet_dropped_delta.value_or(-1), 5);
  EXPECT_EQ(f.net.softnet_squeezed_delta.value_or(-1), 3);  // 7 now, 4 in the built tree
  EXPECT_EQ(f.net.conntrack_drops_delta.value_or(-1), 2);
  EXPECT_EQ(f.net.conntrack_insert_failed_delta.value_or(-1), 1);
  EXPECT_EQ(f.net.netdev_max_backlog.value_or(-1), 1000);
  EXPECT_EQ(f.net.netdev_budget.value_or(-1), 300);
  EXPECT_EQ(f.net.retrans_segs_delta.value_or(-1), 200);
  EXPECT_EQ(f.net.out_segs_delta.value_or(-1), 10000);
  ASSERT_TRUE(f.net.nic_irqs.known());
  ASSERT_EQ(f.net.nic_irqs->size(), 1u);
  EXPECT_THAT(f.net.nic_irqs->at(0).per_cpu, testing::ElementsAre(1000, 0, 0, 0));
  EXPECT_FALSE(f.net.nic_irqs->at(0).since_boot);
  EXPECT_EQ(f.memory.swap_in_pages_delta.value_or(-1), 5);
  EXPECT_EQ(f.memory.swap_out_pages_delta.value_or(-1), 40);
  ASSERT_TRUE(f.memory.pressure.known()) << f.memory.pressure.reason;
  EXPECT_TRUE(f.memory.pressure->has_full);
  ASSERT_TRUE(f.cpu.pressure.known()) << f.cpu.pressure.reason;
  EXPECT_DOUBLE_EQ(f.cpu.pressure->some_avg60, 0.22);
}

// vLLM V1 runs its scheduler in a child process (VLLM::EngineCore): the server's children are
// found by PPid and their threads sampled with the server's, named by their process title.
TEST(CollectorTest, ChildProcessThreadsAreSampledAndNamed) {
  TestTree t("tests/data/host/mi300x_built/tree");
  CollectOptions o = Recorded(t.root());
  o.sample_interval_ns = 200'000'000;
  const long hz = ::sysconf(_SC_CLK_TCK);
  o.between_samples = [&] {
    t.Write("/proc/4300/task/4300/stat",
            "4300 (VLLM::EngineCor) R 4242 4300 4300 0 -1 4194304 1 0 0 0 " +
                std::to_string(900 + hz / 5) +
                " 30 0 0 20 0 1 0 120 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 9 0 0 0 0 0\n");
  };
  HostFacts f = CollectHostFacts(o);
  ASSERT_TRUE(f.server.has_value());
  ASSERT_EQ(f.server->children.size(), 1u);
  EXPECT_EQ(f.server->children[0].pid, 4300);
  EXPECT_EQ(f.server->children[0].name, "VLLM::EngineCore");
  ASSERT_TRUE(f.server->threads.known()) << f.server->threads.reason;
  ASSERT_EQ(f.server->threads->size(), 3u);  // two of the server's, one of the engine core's
  const ThreadCpu& top = f.server->threads->front();
  EXPECT_EQ(top.tid, 4300);
  EXPECT_EQ(top.pid, 4300);
  EXPECT_EQ(top.process, "VLLM::EngineCore");
  EXPECT_GT(top.cpu_pct, 50);
  EXPECT_EQ(f.server->threads->at(1).pid, 4242);
  EXPECT_EQ(f.server->threads->at(1).process, "");
}

TEST(CollectorTest, ProcessThatExitsMidSampleLeavesThreadsUnknown) {
  TestTree t("tests/data/host/mi300x_built/tree");
  CollectOptions o = Recorded(t.root());
  o.between_samples = [&] { t.Remove("/proc/4242"); };
  HostFacts f = CollectHostFacts(o);
  ASSERT_TRUE(f.server.has_value());
  EXPECT_FALSE(f.server->threads.known());
  EXPECT_EQ(f.server->threads.reason, "process 4242 exited during sampling");
  EXPECT_FALSE(f.server->write_bytes_per_s.known());
  EXPECT_EQ(f.server->write_bytes_per_s.reason,
            "/proc/4242/io: No such file or directory (needs same uid or root)");
}

TEST(CollectorTest, GarbageAndMissingSysfsValuesBecomeUnknownWithTheReason) {
  TestTree t("tests/data/host/mi300x_built/tree");
  const std::string dev = "/sys/devices/pci0000:00/0000:00:01.1/0000:0a:00.0/0000:0b:00.0/0000:0c:00.0";
  t.Write(dev + "/numa_node", "banana\n");
  t.Write(dev + "/current_link_speed", "Unknown\n");
  t.Remove(dev + "/max_link_width");
  t.Write(dev + "/pp_dpm_sclk", "\x01\x02 not a table\n");
  t.Remove("/proc/sys/kernel/numa_balancing");
  HostFacts f = CollectHostFacts(Recorded(t.root()));
  const GpuFacts& g = f.gpus.at(0);
  EXPECT_FALSE(g.numa_node.known());
  EXPECT_EQ(g.numa_node.reason, "/sys/bus/pci/devices/0000:0c:00.0/numa_node: not an integer: 'banana'");
  EXPECT_FALSE(g.pcie_path.at(0).cur_speed_gts.known());
  EXPECT_EQ(g.pcie_path.at(0).cur_speed_gts.reason, dev + "/current_link_speed: no link speed in 'Unknown'");
  EXPECT_EQ(g.pcie_path.at(0).max_width.reason, dev + "/max_link_width: No such file or directory");
  EXPECT_EQ(g.sm_clock_mhz.reason, "/sys/bus/pci/devices/0000:0c:00.0/pp_dpm_sclk: unrecognised format");
  EXPECT_EQ(f.cpu.numa_balancing.reason, "/proc/sys/kernel/numa_balancing: No such file or directory");

  t.Remove("/proc/pressure/cpu");
  t.Write("/proc/pressure/memory", "some nothing here\n");
  t.Remove("/proc/vmstat");
  f = CollectHostFacts(Recorded(t.root()));
  EXPECT_EQ(f.cpu.pressure.reason, "/proc/pressure/cpu: No such file or directory (PSI needs kernel "
                                   "4.20+ with CONFIG_PSI, not psi=0)");
  EXPECT_EQ(f.memory.pressure.reason,
            "/proc/pressure/memory: no \"some avg10= avg60= avg300=\" line");
  EXPECT_EQ(f.memory.swap_in_pages_delta.reason, "/proc/vmstat: No such file or directory");
}

TEST(CollectorTest, FirewallPrefersNftAndSaysWhyWhenNeitherAnswers) {
  FakeCommandRunner runner;
  runner.Set("nft -j list ruleset",
             {0, R"({"nftables": [{"metainfo": {}}, {"table": {}}, {"rule": {}}, {"rule": {}}]})"});
  CollectOptions o = Recorded("tests/data/host/h200_snapshot/tree");
  o.runner = &runner;
  HostFacts f = CollectHostFacts(o);
  EXPECT_EQ(f.net.firewall_rules.value_or(-1), 2);
  EXPECT_EQ(f.net.firewall_rules.source, "nft -j list ruleset");

  FakeCommandRunner denied;
  denied.Set("nft -j list ruleset", {1, ""});
  o.runner = &denied;
  f = CollectHostFacts(o);
  EXPECT_FALSE(f.net.firewall_rules.known());
  EXPECT_EQ(f.net.firewall_rules.reason,
            "nft exited with 1 (needs root); iptables-save: not installed");
}

// A real throttled group, recorded on this project's build VM (cgroup v1 cpu controller; the
// stand-in server spun one thread under a quota of a fifth of a CPU for 12 s:
// tools/capture_cgroup_throttle.sh OUT 20000 12).
TEST(CollectorTest, RecordedThrottledCgroupV1) {
  HostFacts f = CollectHostFacts(Recorded("tests/data/host/cgroup_v1_throttled/tree"));
  ASSERT_TRUE(f.server.has_value()) << f.server_note;
  EXPECT_EQ(f.server->pid, 19038);
  ASSERT_TRUE(f.server->cgroup_cpu.known()) << f.server->cgroup_cpu.reason;
  const CgroupCpu& cg = *f.server->cgroup_cpu;
  EXPECT_EQ(cg.version, 1);
  EXPECT_EQ(cg.cgroup, "/latdoc_capture");
  EXPECT_EQ(cg.note, "");  // mountinfo: the cpu hierarchy's root is the host's
  ASSERT_EQ(cg.limits.size(), 1u);  // the root group has no quota (-1)
  const CgroupCpuLimit& l = cg.limits[0];
  EXPECT_EQ(l.dir, "/sys/fs/cgroup/cpu/latdoc_capture");
  EXPECT_DOUBLE_EQ(l.quota_cpus, 0.2);
  EXPECT_EQ(l.period_us, 100000);
  EXPECT_EQ(l.nr_periods, 138);
  EXPECT_EQ(l.nr_throttled, 137);
  EXPECT_DOUBLE_EQ(l.throttled_s, 9.577289);
  // A recording does not move: no interval, but the counts since the group started stand.
  EXPECT_THAT(l.throttled_delta.reason, testing::HasSubstr("a recorded tree is one reading"));
  EXPECT_FALSE(cg.pressure.known());  // v1 has no per-group cpu.pressure
  EXPECT_TRUE(f.cpu.pressure.known()) << f.cpu.pressure.reason;
  EXPECT_THAT(f.memory.swap_in_pages_delta.reason, testing::HasSubstr("a recorded tree is one reading"));
}

// The same capture on the lent H200 machine, which has cgroup v2 only: the group is the stand-in's
// own, the root has no cpu.max.
TEST(CollectorTest, RecordedThrottledCgroupV2) {
  HostFacts f = CollectHostFacts(Recorded("tests/data/host/cgroup_v2_throttled/tree"));
  ASSERT_TRUE(f.server.has_value()) << f.server_note;
  EXPECT_EQ(f.server->pid, 524);
  ASSERT_TRUE(f.server->cgroup_cpu.known()) << f.server->cgroup_cpu.reason;
  const CgroupCpu& cg = *f.server->cgroup_cpu;
  EXPECT_EQ(cg.version, 2);
  EXPECT_EQ(cg.cgroup, "/latdoc_capture");
  ASSERT_EQ(cg.limits.size(), 1u);
  EXPECT_EQ(cg.limits[0].dir, "/sys/fs/cgroup/latdoc_capture");
  EXPECT_DOUBLE_EQ(cg.limits[0].quota_cpus, 0.2);
  EXPECT_EQ(cg.limits[0].nr_periods, 133);
  EXPECT_EQ(cg.limits[0].nr_throttled, 132);
  EXPECT_DOUBLE_EQ(cg.limits[0].throttled_s, 10.544033);
  EXPECT_FALSE(cg.pressure.known());  // not recorded
  EXPECT_EQ(f.gpus.size(), 1u);
}

// cgroup v2 as Kubernetes lays it out: a pod group and a container group each with a quota; the
// counters move between the two samples.
TEST(CollectorTest, CgroupV2LimitsOnThePathAndTheirDeltas) {
  TestTree t("tests/data/host/mi300x_built/tree");
  const std::string pod = "/sys/fs/cgroup/kubepods.slice/kubepods-pod7.slice";
  const std::string ctr = pod + "/cri-containerd-ab12.scope";
  t.Write("/proc/4242/cgroup", "0::/kubepods.slice/kubepods-pod7.slice/cri-containerd-ab12.scope\n");
  t.Write("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
  t.Write("/sys/fs/cgroup/kubepods.slice/cpu.max", "max 100000\n");
  t.Write(pod + "/cpu.max", "400000 100000\n");
  t.Write(pod + "/cpu.stat", "usage_usec 5\nnr_periods 1000\nnr_throttled 3\nthrottled_usec 9000\n");
  t.Write(ctr + "/cpu.max", "250000 50000\n");
  t.Write(ctr + "/cpu.stat", "usage_usec 5\nnr_periods 900\nnr_throttled 100\nthrottled_usec 4000000\n");
  CollectOptions o = Recorded(t.root());
  o.between_samples = [&] {
    t.Write(ctr + "/cpu.stat", "usage_usec 9\nnr_periods 920\nnr_throttled 112\nthrottled_usec 4600000\n");
  };
  HostFacts f = CollectHostFacts(o);
  ASSERT_TRUE(f.server.has_value());
  ASSERT_TRUE(f.server->cgroup_cpu.known()) << f.server->cgroup_cpu.reason;
  const CgroupCpu& cg = *f.server->cgroup_cpu;
  EXPECT_EQ(cg.version, 2);
  ASSERT_EQ(cg.limits.size(), 2u);  // kubepods.slice says "max": no limit there
  EXPECT_EQ(cg.limits[0].dir, ctr);
  EXPECT_DOUBLE_EQ(cg.limits[0].quota_cpus, 5.0);
  EXPECT_EQ(cg.limits[0].period_us, 50000);
  EXPECT_EQ(cg.limits[0].nr_periods, 920);  // as of the second sample
  EXPECT_EQ(cg.limits[0].periods_delta.value_or(-1), 20);
  EXPECT_EQ(cg.limits[0].throttled_delta.value_or(-1), 12);
  EXPECT_DOUBLE_EQ(cg.limits[0].throttled_s_delta.value_or(-1), 0.6);
  EXPECT_EQ(cg.limits[1].dir, pod);
  EXPECT_DOUBLE_EQ(cg.limits[1].quota_cpus, 4.0);
  EXPECT_EQ(cg.limits[1].throttled_delta.value_or(-1), 0);

  // The group's cpu.stat vanishes between the samples (the container was replaced): the delta
  // is unknown with the reason, the quota still stands.
  TestTree gone("tests/data/host/mi300x_built/tree");
  gone.Write("/proc/4242/cgroup", "0::/c\n");
  gone.Write("/sys/fs/cgroup/cgroup.controllers", "cpu\n");
  gone.Write("/sys/fs/cgroup/c/cpu.max", "100000 100000\n");
  gone.Write("/sys/fs/cgroup/c/cpu.stat", "nr_periods 1\nnr_throttled 0\nthrottled_usec 0\n");
  CollectOptions g = Recorded(gone.root());
  g.between_samples = [&] { gone.Remove("/sys/fs/cgroup/c/cpu.stat"); };
  f = CollectHostFacts(g);
  ASSERT_TRUE(f.server->cgroup_cpu.known());
  ASSERT_EQ(f.server->cgroup_cpu->limits.size(), 1u);
  EXPECT_FALSE(f.server->cgroup_cpu->limits[0].throttled_delta.known());
  EXPECT_EQ(f.server->cgroup_cpu->limits[0].throttled_delta.reason,
            "/sys/fs/cgroup/c/cpu.stat: unreadable or without nr_periods");
}

// Where the hierarchy is mounted and which group is the mount's root come from latdoc's own
// mountinfo. In a container without its own cgroup namespace the mount's root is the
// container's group and the server's path is a host path under it; a group outside that view
// (another container's, or "/.." from a private namespace) is unknown, never the view's root.
TEST(CollectorTest, CgroupPathIsMappedThroughTheMountRoot) {
  TestTree t("tests/data/host/mi300x_built/tree");
  t.Write("/proc/self/mountinfo",
          "31 23 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpuacct\n"
          "29 23 0:26 /docker/3f2a /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  t.Write("/proc/4242/cgroup", "0::/docker/3f2a/inner\n");
  t.Write("/sys/fs/cgroup/cpu.max", "400000 100000\n");
  t.Write("/sys/fs/cgroup/inner/cpu.max", "150000 100000\n");
  t.Write("/sys/fs/cgroup/inner/cpu.stat", "nr_periods 10\nnr_throttled 1\nthrottled_usec 100\n");
  t.Write("/sys/fs/cgroup/inner/cpu.pressure",
          "some avg10=12.00 avg60=3.00 avg300=1.00 total=5\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=1\n");
  HostFacts f = CollectHostFacts(Recorded(t.root()));
  ASSERT_TRUE(f.server->cgroup_cpu.known()) << f.server->cgroup_cpu.reason;
  const CgroupCpu& cg = *f.server->cgroup_cpu;
  EXPECT_EQ(cg.note, "/sys/fs/cgroup is group /docker/3f2a (a container's view)");
  ASSERT_EQ(cg.limits.size(), 2u);
  EXPECT_EQ(cg.limits[0].dir, "/sys/fs/cgroup/inner");
  EXPECT_DOUBLE_EQ(cg.limits[0].quota_cpus, 1.5);
  EXPECT_EQ(cg.limits[1].dir, "/sys/fs/cgroup");  // the container's own group
  EXPECT_DOUBLE_EQ(cg.limits[1].quota_cpus, 4.0);
  ASSERT_TRUE(cg.pressure.known()) << cg.pressure.reason;
  EXPECT_DOUBLE_EQ(cg.pressure->some_avg10, 12.0);

  for (const char* outside : {"0::/system.slice/other.scope\n", "0::/../ctr2\n", "0::/docker/3f2ab\n"}) {
    t.Write("/proc/4242/cgroup", outside);
    f = CollectHostFacts(Recorded(t.root()));
    ASSERT_FALSE(f.server->cgroup_cpu.known()) << outside;
    EXPECT_THAT(f.server->cgroup_cpu.reason,
                testing::HasSubstr("is outside the part of the hierarchy this process sees "
                                   "(/sys/fs/cgroup is group /docker/3f2a)"));
  }
  // The host's hierarchy bind-mounted beside the container's own view (a monitoring agent):
  // the mount whose root holds the server's group is used, the shallowest one.
  t.Write("/proc/self/mountinfo",
          "29 23 0:26 /kubepods/agent /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
          "30 23 0:26 / /host/cgroup rw - cgroup2 cgroup2 rw\n"
          "31 23 0:26 /kubepods /host/kp rw - cgroup2 cgroup2 rw\n");
  t.Write("/proc/4242/cgroup", "0::/kubepods/pod9/ctr\n");
  t.Write("/host/cgroup/kubepods/pod9/cpu.max", "300000 100000\n");
  t.Write("/host/cgroup/kubepods/pod9/ctr/cpu.max", "100000 100000\n");
  f = CollectHostFacts(Recorded(t.root()));
  ASSERT_TRUE(f.server->cgroup_cpu.known()) << f.server->cgroup_cpu.reason;
  ASSERT_EQ(f.server->cgroup_cpu->limits.size(), 2u);
  EXPECT_EQ(f.server->cgroup_cpu->limits[0].dir, "/host/cgroup/kubepods/pod9/ctr");
  EXPECT_EQ(f.server->cgroup_cpu->limits[1].dir, "/host/cgroup/kubepods/pod9");
  EXPECT_EQ(f.server->cgroup_cpu->note, "");
  // A server in the true root group: its cpu.pressure is the host's, not read as the group's.
  t.Write("/proc/4242/cgroup", "0::/\n");
  t.Write("/host/cgroup/cpu.pressure", "some avg10=50.00 avg60=50.00 avg300=50.00 total=5\n");
  f = CollectHostFacts(Recorded(t.root()));
  ASSERT_TRUE(f.server->cgroup_cpu.known()) << f.server->cgroup_cpu.reason;
  EXPECT_FALSE(f.server->cgroup_cpu->pressure.known());

  // v1 in mountinfo without the cpu controller: not mounted, says so.
  t.Write("/proc/self/mountinfo",
          "31 23 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpuacct\n"
          "29 23 0:26 /docker/3f2a /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  t.Write("/proc/4242/cgroup", "4:cpu:/x\n");
  f = CollectHostFacts(Recorded(t.root()));
  EXPECT_EQ(f.server->cgroup_cpu.reason, "the cgroup v1 cpu hierarchy (cpu) is not mounted");

  t.Write("/proc/4242/cgroup", "0::/docker/3f2a/gone\n");
  f = CollectHostFacts(Recorded(t.root()));
  EXPECT_EQ(f.server->cgroup_cpu.reason, "/sys/fs/cgroup/gone: no such group");

  t.Remove("/proc/4242/cgroup");
  f = CollectHostFacts(Recorded(t.root()));
  EXPECT_EQ(f.server->cgroup_cpu.reason, "/proc/4242/cgroup: No such file or directory");

  // No mountinfo (a recorded tree without it) and no cgroup2 at the usual places.
  t.Remove("/proc/self/mountinfo");
  t.Write("/proc/4242/cgroup", "0::/x\n");
  t.Remove("/sys/fs/cgroup");
  f = CollectHostFacts(Recorded(t.root()));
  EXPECT_EQ(f.server->cgroup_cpu.reason, "cgroup v2 is not mounted (looked in /proc/self/mountinfo)");
}

// The machine the tests run on: whatever it has, both samples are taken the interval apart and
// every GPU-less, server-less fact is explained rather than zero. (Wall time: doctor_bench.)
TEST(CollectorTest, LiveHost) {
  CollectOptions o;
  o.sample_interval_ns = 300'000'000;
  const int64_t t0 = MonoNowNs();
  HostFacts f = CollectHostFacts(o);
  EXPECT_GE(MonoNowNs() - t0, 300'000'000);
  EXPECT_GE(f.sample_interval_ns, 300'000'000);
  EXPECT_EQ(f.sysroot, "/");
  EXPECT_TRUE(f.cpu.online_cpus.known()) << f.cpu.online_cpus.reason;
  EXPECT_TRUE(f.net.tcp_inuse.known()) << f.net.tcp_inuse.reason;
  if (f.gpus.empty()) {
    EXPECT_THAT(f.gpu_notes, testing::Contains("no NVIDIA or AMD GPU in /sys/bus/pci/devices"));
  }
  if (!f.server) {
    EXPECT_FALSE(f.server_note.empty());
  }
}

}  // namespace
}  // namespace latdoc::host

namespace latdoc::host {
namespace {

// A NIC's interrupts are named by its driver's queues ("virtio2-input.0"); the finding names
// the interface whose /sys/class/net/<if>/device is that virtio device.
TEST(CollectorTest, VirtioQueuesAreNamedByTheirInterface) {
  TestTree t("tests/data/host/h200_recorded/tree");
  std::filesystem::create_directories(t.root() + "/sys/class/net/ens3");
  std::filesystem::create_directory_symlink("../../../devices/pci0000:00/0000:00:03.0/virtio2",
                                            t.root() + "/sys/class/net/ens3/device");
  HostFacts f = CollectHostFacts(Recorded(t.root()));
  ASSERT_TRUE(f.net.nic_irqs.known());
  ASSERT_EQ(f.net.nic_irqs->size(), 1u);
  EXPECT_EQ(f.net.nic_irqs->at(0).nic, "ens3");
  EXPECT_EQ(f.net.nic_irqs->at(0).irq_count, 2);
}

}  // namespace
}  // namespace latdoc::host
