#include "host/proc_parsers.h"

#include <fstream>
#include <iterator>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::host {
namespace {

using testing::ElementsAre;

TEST(ProcParsersTest, LinkSpeedBothKernelFormsAndUnknown) {
  EXPECT_EQ(ParseLinkSpeedGts("32.0 GT/s PCIe"), 32.0);
  EXPECT_EQ(ParseLinkSpeedGts("8 GT/s"), 8.0);
  EXPECT_EQ(ParseLinkSpeedGts("2.5 GT/s PCIe\n"), 2.5);
  EXPECT_EQ(ParseLinkSpeedGts("Unknown"), std::nullopt);
  EXPECT_EQ(ParseLinkSpeedGts("fast GT/s"), std::nullopt);
  EXPECT_EQ(PcieGenFromGts(32.0), 5);
  EXPECT_EQ(PcieGenFromGts(2.5), 1);
  EXPECT_EQ(PcieGenFromGts(7.0), std::nullopt);
}

TEST(ProcParsersTest, CpuList) {
  EXPECT_THAT(*ParseCpuList("0-3,8,10-11\n"), ElementsAre(0, 1, 2, 3, 8, 10, 11));
  EXPECT_TRUE(ParseCpuList("")->empty());
  EXPECT_EQ(ParseCpuList("3-1"), std::nullopt);
  EXPECT_EQ(ParseCpuList("a-b"), std::nullopt);
  EXPECT_EQ(ParseCpuList("0,,1"), std::nullopt);
}

TEST(ProcParsersTest, SockstatTcpLine) {
  Sockstat s = ParseSockstat("sockets: used 8\nTCP: inuse 1 orphan 0 tw 2 alloc 1 mem 0\nUDP: inuse 0 mem 0\n");
  EXPECT_EQ(s.tcp_inuse, 1);
  EXPECT_EQ(s.tcp_time_wait, 2);
  Sockstat none = ParseSockstat("garbage\n");
  EXPECT_EQ(none.tcp_time_wait, std::nullopt);
}

TEST(ProcParsersTest, TimeWaitOnPortCountsOnlyState06OnThatLocalPort) {
  const std::string tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4711 1\n"
      "   1: 0100007F:1F40 0100007F:A2C4 06 00000000:00000000 03:00000F9A 00000000     0        0 0 3\n"
      "   2: 0100007F:A2C4 0100007F:1F40 06 00000000:00000000 03:00000F9A 00000000     0        0 0 3\n"
      "   3: 0100007F:1F40 0100007F:A2C5 01 00000000:00000000 00:00000000 00000000     0        0 9 1\n"
      "   4: broken\n";
  int64_t bad = 0;
  EXPECT_EQ(CountTimeWaitOnPort(tcp, 8000, &bad), 1);
  EXPECT_EQ(bad, 1);
  const std::string tcp6 =
      "  sl  local_address                         remote_address                        st\n"
      "   0: 00000000000000000000000001000000:1F40 00000000000000000000000001000000:D431 06 0\n";
  EXPECT_EQ(CountTimeWaitOnPort(tcp6, 8000), 1);
}

// Found by fuzz/fuzz_proc_parsers (input tests/data/fuzz/proc_parsers_crash-1bd1ef27): a local
// port field longer than 4 hex digits was flagged bad but still accumulated, and overflowed
// int64_t (undefined behaviour, caught by UBSan). It is a bad line and nothing more.
TEST(ProcParsersTest, FuzzCrash1bd1ef27_LongPortFieldIsABadLine) {
  std::ifstream in("tests/data/fuzz/proc_parsers_crash-1bd1ef27", std::ios::binary);
  const std::string crash((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(crash.empty());
  int64_t bad = 0;
  (void)CountTimeWaitOnPort(crash, 8000, &bad);
  EXPECT_GE(bad, 1);
  const std::string tcp =
      "  sl  local_address rem_address   st\n"
      "   0: 0100007F:00000000000000000000001F40 0100007F:A2C4 06 0\n"
      "   1: 0100007F:1F40 0100007F:A2C4 06 0\n";
  bad = 0;
  EXPECT_EQ(CountTimeWaitOnPort(tcp, 8000, &bad), 1);
  EXPECT_EQ(bad, 1);
}

TEST(ProcParsersTest, CounterPairsFlattenPrefixAndName) {
  auto m = ParseCounterPairs(
      "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 37 38\n"
      "IpExt: InNoRoutes\nIpExt: 4\n"
      "Tcp: RtoAlgorithm OutSegs RetransSegs\nTcp: 1 100000 5000\n");
  EXPECT_EQ(m["TcpExt.ListenOverflows"], 37);
  EXPECT_EQ(m["IpExt.InNoRoutes"], 4);
  EXPECT_EQ(m["Tcp.RetransSegs"], 5000);
  EXPECT_EQ(m.count("TcpExt.TcpExt:"), 0u);
  // A values line with a field count that does not match its names is ignored.
  auto bad = ParseCounterPairs("Tcp: A B\nTcp: 1\n");
  EXPECT_TRUE(bad.empty());
}

TEST(ProcParsersTest, InterruptsKeepNumberedRowsWithTheirAction) {
  const std::string text =
      "           CPU0       CPU1\n"
      "  42:          0        117  PCI-MSIX-0000:00:06.0    0-edge      nvidia\n"
      "  38:         12          0  PCI-MSIX-0000:00:04.0    1-edge      virtio2-input.0\n"
      " LOC:       1386       1428   Local timer interrupts\n"
      " ERR:          0\n"
      "  77:          1\n";
  Interrupts irq = ParseInterrupts(text);
  EXPECT_EQ(irq.cpu_columns, 2);
  ASSERT_EQ(irq.rows.size(), 2u);
  EXPECT_EQ(irq.rows[0].irq, "42");
  EXPECT_THAT(irq.rows[0].per_cpu, ElementsAre(0, 117));
  EXPECT_EQ(irq.rows[0].action, "nvidia");
  EXPECT_EQ(irq.rows[1].action, "virtio2-input.0");
  EXPECT_EQ(irq.bad_lines, 1);  // "77:" has too few columns
  EXPECT_THAT(irq.cpu_ids, ElementsAre(0, 1));

  // Only online CPUs have a column: with CPU1 offline the third column is CPU3.
  Interrupts gap = ParseInterrupts(
      "           CPU0       CPU2       CPU3\n"
      "  42:          1          2          3  PCI-MSIX-0000:00:06.0    0-edge      eth0-rx-0\n");
  EXPECT_EQ(gap.cpu_columns, 3);
  EXPECT_THAT(gap.cpu_ids, ElementsAre(0, 2, 3));
}

TEST(ProcParsersTest, TaskStatCountsFieldsFromTheLastParenthesis) {
  const std::string stat =
      "625 (py thon) (x)) R 618 616 616 0 -1 4194368 4 0 0 0 210 7 0 0 20 0 2 0 4420 99188736 3932 "
      "18446744073709551615 4325376 7352253 140736240478224 0 0 0 0 16781318 0 0 0 0 -1 12 0 0 0 0 0";
  auto t = ParseTaskStat(stat);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->comm, "py thon) (x)");
  EXPECT_EQ(t->state, 'R');
  EXPECT_EQ(t->utime_ticks, 210);
  EXPECT_EQ(t->stime_ticks, 7);
  EXPECT_EQ(t->processor, 12);
  EXPECT_EQ(ParseTaskStat("625 (python3) R 1 2 3"), std::nullopt);
  EXPECT_EQ(ParseTaskStat("no parens"), std::nullopt);
}

TEST(ProcParsersTest, StatusIoAndBracketedChoice) {
  const std::string status = "Name:\tpython3\nCpus_allowed_list:\t0-15\nMems_allowed_list:\t0\n";
  EXPECT_EQ(StatusField(status, "Cpus_allowed_list"), "0-15");
  EXPECT_EQ(StatusField(status, "Cpus_allowed"), std::nullopt);
  EXPECT_EQ(ParseIoWriteBytes("rchar: 1\nwrite_bytes: 4096\n"), 4096);
  EXPECT_EQ(ParseIoWriteBytes("rchar: 1\n"), std::nullopt);
  EXPECT_EQ(BracketedChoice("always [madvise] never\n"), "madvise");
  EXPECT_EQ(BracketedChoice("madvise"), std::nullopt);
}

TEST(ProcParsersTest, DiskIoTicksSkipsPartitionsAndLoopDevices) {
  auto m = ParseDiskIoTicks(
      "   7       0 loop0 0 0 0 0 0 0 0 0 0 5 0 0 0 0 0\n"
      " 259       0 nvme0n1 9121 0 532118 1764 26113 0 1 1 0 24092 31200 0 0 0 0\n"
      " 259       1 nvme0n1p1 9000 0 532000 1700 26000 0 1 1 0 24000 31000 0 0 0 0\n"
      " 253       0 vda 1 0 0 0 0 0 0 0 0 77 0\n"
      " 253       1 vda1 1 0 0 0 0 0 0 0 0 70 0\n"
      " 254       0 dm-0 1 0 0 0 0 0 0 0 0 9 0\n");
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m["nvme0n1"], 24092);
  EXPECT_EQ(m["vda"], 77);
  EXPECT_EQ(m["dm-0"], 9);
}

TEST(ProcParsersTest, PpDpmSclkRunningAndDeepSleep) {
  auto run = ParsePpDpmSclk("0: 500Mhz\n1: 1300Mhz *\n2: 2100Mhz\n");
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->cur_mhz, 1300);
  EXPECT_EQ(run->max_mhz, 2100);
  EXPECT_FALSE(run->deep_sleep);
  auto sleep = ParsePpDpmSclk("S: 19Mhz *\n0: 500Mhz\n1: 2100Mhz\n");
  ASSERT_TRUE(sleep.has_value());
  EXPECT_EQ(sleep->cur_mhz, 19);
  EXPECT_EQ(sleep->max_mhz, 2100);
  EXPECT_TRUE(sleep->deep_sleep);
  EXPECT_EQ(ParsePpDpmSclk("garbage\n"), std::nullopt);
  EXPECT_EQ(ParsePpDpmSclk("0: fastMhz *\n"), std::nullopt);
  EXPECT_EQ(ParsePpDpmSclk(""), std::nullopt);
}

TEST(ProcParsersTest, SplitNulHasNoTrailingEmptyWord) {
  EXPECT_THAT(SplitNul(std::string("a\0b c\0", 6)), ElementsAre("a", "b c"));
  EXPECT_TRUE(SplitNul("").empty());
}

// /proc/PID/cgroup as recorded on this project's build VM (cgroup v1 cpu plus the v2 line) and
// a Kubernetes node on cgroup v2.
TEST(ProcParsersTest, ProcCgroupFindsTheCpuHierarchyAndTheUnifiedLine) {
  ProcCgroup hybrid = ParseProcCgroup(
      "9:name=systemd:/\n4:memory:/process_api/f9423d\n2:cpuacct:/\n1:cpu:/latdoc_capture\n0::/\n");
  EXPECT_EQ(hybrid.v1_cpu.value_or(""), "/latdoc_capture");
  EXPECT_EQ(hybrid.v1_cpu_controllers, "cpu");
  EXPECT_EQ(hybrid.unified.value_or(""), "/");
  ProcCgroup joined = ParseProcCgroup("12:cpuacct,cpu:/docker/3f2a\n");
  EXPECT_EQ(joined.v1_cpu.value_or(""), "/docker/3f2a");
  EXPECT_EQ(joined.v1_cpu_controllers, "cpuacct,cpu");
  EXPECT_FALSE(joined.unified.has_value());
  // "cpuset" and "cpuacct" alone are not the cpu controller; a path may hold ':'.
  ProcCgroup v2 = ParseProcCgroup("3:cpuset:/a\n2:cpuacct:/b\n0::/kubepods.slice/pod:x.scope\n");
  EXPECT_FALSE(v2.v1_cpu.has_value());
  EXPECT_EQ(v2.unified.value_or(""), "/kubepods.slice/pod:x.scope");
  ProcCgroup junk = ParseProcCgroup("garbage\n1:cpu\n1:cpu:relative\n\n");
  EXPECT_FALSE(junk.v1_cpu.has_value());
  EXPECT_FALSE(junk.unified.has_value());
}

TEST(ProcParsersTest, CpuQuotaBothVersions) {
  auto limited = ParseCpuMax("250000 100000\n");
  ASSERT_TRUE(limited.has_value());
  EXPECT_EQ(limited->quota_us.value_or(0), 250000);
  EXPECT_EQ(limited->period_us, 100000);
  auto none = ParseCpuMax("max 50000\n");
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->quota_us.has_value());
  EXPECT_EQ(none->period_us, 50000);
  EXPECT_EQ(ParseCpuMax("max")->period_us, 100000);  // the period may be left out
  EXPECT_FALSE(ParseCpuMax("").has_value());
  EXPECT_FALSE(ParseCpuMax("10 0").has_value());
  EXPECT_FALSE(ParseCpuMax("-5 100000").has_value());
  EXPECT_FALSE(ParseCpuMax("lots 100000").has_value());

  auto v1 = ParseCfsQuota("20000\n", "100000\n");
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(v1->quota_us.value_or(0), 20000);
  auto unlimited = ParseCfsQuota("-1\n", "100000\n");
  ASSERT_TRUE(unlimited.has_value());
  EXPECT_FALSE(unlimited->quota_us.has_value());
  EXPECT_FALSE(ParseCfsQuota("-2", "100000").has_value());
  EXPECT_FALSE(ParseCfsQuota("20000", "0").has_value());
  EXPECT_FALSE(ParseCfsQuota("x", "100000").has_value());
}

TEST(ProcParsersTest, CgroupCpuStatThrottledTimeInMicroseconds) {
  // v1, recorded (tests/data/host/cgroup_v1_throttled): throttled_time is in nanoseconds.
  auto v1 = ParseCgroupCpuStat(
      "nr_periods 25\nnr_throttled 25\nthrottled_time 1683556815\nnr_bursts 0\nburst_time 0\n");
  ASSERT_TRUE(v1.has_value());
  EXPECT_EQ(v1->nr_periods, 25);
  EXPECT_EQ(v1->nr_throttled, 25);
  EXPECT_EQ(v1->throttled_us, 1683556);
  // v2: throttled_usec.
  auto v2 = ParseCgroupCpuStat(
      "usage_usec 9000\nuser_usec 8000\nsystem_usec 1000\nnr_periods 40\nnr_throttled 31\n"
      "throttled_usec 2871342\nnr_bursts 0\nburst_usec 0\n");
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(v2->nr_throttled, 31);
  EXPECT_EQ(v2->throttled_us, 2871342);
  // Without the cpu controller a v2 cpu.stat has only the usage lines.
  EXPECT_FALSE(ParseCgroupCpuStat("usage_usec 9000\nuser_usec 8000\nsystem_usec 1000\n").has_value());
  EXPECT_FALSE(ParseCgroupCpuStat("nr_periods -1\nnr_throttled 0\n").has_value());
}

TEST(ProcParsersTest, PsiSomeAndFullLines) {
  // Recorded on this project's build VM (kernel 6.18).
  auto cpu = ParsePsi("some avg10=4.11 avg60=3.01 avg300=1.27 total=25274890\n"
                      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_DOUBLE_EQ(cpu->some_avg10, 4.11);
  EXPECT_DOUBLE_EQ(cpu->some_avg60, 3.01);
  EXPECT_DOUBLE_EQ(cpu->some_avg300, 1.27);
  EXPECT_EQ(cpu->full_avg60.value_or(-1), 0.0);
  // Before 5.13 the cpu file has no "full" line.
  auto old = ParsePsi("some avg10=0.50 avg60=0.10 avg300=0.00 total=1\n");
  ASSERT_TRUE(old.has_value());
  EXPECT_FALSE(old->full_avg10.has_value());
  EXPECT_FALSE(ParsePsi("").has_value());
  EXPECT_FALSE(ParsePsi("full avg10=1 avg60=1 avg300=1 total=0\n").has_value());
  EXPECT_FALSE(ParsePsi("some avg10=x avg60=1 avg300=1 total=0\n").has_value());
  EXPECT_FALSE(ParsePsi("some avg10=101 avg60=1 avg300=1 total=0\n").has_value());
}

TEST(ProcParsersTest, VmstatCounters) {
  auto v = ParseVmstat("nr_free_pages 123\npswpin 7\npswpout 9\nbroken\nx y\n");
  EXPECT_EQ(v.at("pswpin"), 7);
  EXPECT_EQ(v.at("pswpout"), 9);
  EXPECT_EQ(v.count("x"), 0u);
  EXPECT_EQ(v.count("broken"), 0u);
}

// Recorded on this project's build VM (kernel 6.18): 15 columns, hex, the CPU's number in the
// 13th; the second CPU's dropped and time_squeeze edited to 2 and 0x2a.
TEST(ProcParsersTest, SoftnetStatPerCpu) {
  auto t = ParseSoftnetStat(
      "0017851d 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
      "00000000 00000000 00000000 00000000 00000000\n"
      "00172670 00000002 0000002a 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
      "00000000 00000000 00000001 00000000 00000000\n"
      "zz 1\n"
      "00000010 00000003 00000004\n");  // an old kernel's short line: no CPU number
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->cpus.size(), 3u);
  EXPECT_EQ(t->cpus[0].processed, 0x17851d);
  EXPECT_EQ(t->cpus[0].cpu, 0);
  EXPECT_EQ(t->cpus[1].dropped, 2);
  EXPECT_EQ(t->cpus[1].time_squeeze, 0x2a);
  EXPECT_EQ(t->cpus[1].cpu, 1);
  EXPECT_EQ(t->cpus[2].dropped, 3);
  EXPECT_EQ(t->cpus[2].cpu, -1);
  EXPECT_EQ(t->bad_lines, 1);
  EXPECT_FALSE(ParseSoftnetStat("").has_value());
  EXPECT_FALSE(ParseSoftnetStat("x y z\n").has_value());
  // Counters are 32-bit hex with no sign: a sign, a ninth digit or a "0x" is a bad line, not a
  // value (a negative or 64-bit one would break the wrap arithmetic of Counter32Delta).
  for (const char* bad : {"-0000001 00000000 00000000\n", "+0000001 00000000 00000000\n",
                          "100000000 00000000 00000000\n", "0x1 00000000 00000000\n"}) {
    auto b = ParseSoftnetStat(bad);
    EXPECT_FALSE(b.has_value()) << bad;
  }
  auto top = ParseSoftnetStat("ffffffff 00000000 00000000\n");
  ASSERT_TRUE(top.has_value());
  EXPECT_EQ(top->cpus[0].processed, 0xffffffffLL);
}

// /proc/net/stat/nf_conntrack as kernel 6.18 writes it (two spaces after some columns).
TEST(ProcParsersTest, StatTableColumnsByNamePerCpu) {
  auto m = ParseStatTable(
      "entries  clashres found new invalid ignore delete chainlength insert insert_failed drop "
      "early_drop icmp_error  expect_new expect_create expect_delete search_restart\n"
      "00000010  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 "
      "0000000a 00000000 00000000  00000000 00000000 00000000 00000000\n"
      "00000010  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
      "00000005 00000003 00000000  00000000 00000000 00000000 00000000\n"
      "00000010 short\n");
  EXPECT_EQ(m.size(), 17u);
  EXPECT_EQ(m["drop"], (std::vector<int64_t>{10, 5}));
  EXPECT_EQ(m["early_drop"], (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(m["insert_failed"], (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(ParseStatTable("00000001 00000002\n").empty());
  EXPECT_TRUE(ParseStatTable("").empty());
}

// The kernel's per-CPU counters are 32-bit: one that wrapped during the sample still counts
// what it gained; one that fell by more than half the range was reset, not wrapped.
TEST(ProcParsersTest, Counter32DeltaSurvivesAWrap) {
  EXPECT_EQ(Counter32Delta({5, 7}, {8, 7}), 3);
  EXPECT_EQ(Counter32Delta({0xfffffff0, 1}, {0x00000005, 2}), 0x15 + 1);  // 16 to the wrap, 5 after
  EXPECT_EQ(Counter32Delta({}, {}), 0);
  EXPECT_FALSE(Counter32Delta({1, 2}, {1}).has_value());                // a CPU came or went
  EXPECT_FALSE(Counter32Delta({0x00100000}, {0x00000003}).has_value());  // reset: -0xffffd
}

TEST(ProcParsersTest, CgroupMountsFromMountinfo) {
  // Recorded on this project's build VM (hybrid: v1 controllers, v2 at .../unified), plus a
  // container's cgroup2 view and an escaped blank.
  auto m = ParseCgroupMounts(
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
      "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
      "50 23 0:40 /docker/3f2a /mnt/cg\\040x rw shared:5 - cgroup2 cgroup2 rw,nsdelegate\n"
      "bad line\n"
      "60 23 0:41 / /x rw - cgroup\n");
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].version, 1);
  EXPECT_EQ(m[0].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_THAT(m[0].controllers, ElementsAre("cpu"));
  EXPECT_THAT(m[1].controllers, ElementsAre("cpuacct"));
  EXPECT_TRUE(m[2].controllers.empty());  // name=systemd, xattr: no controller
  EXPECT_EQ(m[3].version, 2);
  EXPECT_EQ(m[3].mount_point, "/sys/fs/cgroup/unified");
  EXPECT_EQ(m[4].root, "/docker/3f2a");
  EXPECT_EQ(m[4].mount_point, "/mnt/cg x");  // optional fields before "-" are skipped
}

}  // namespace
}  // namespace latdoc::host

namespace latdoc::host {
namespace {

// Flush requests completed are field 16 (Linux 5.5+: 20 columns with major, minor and name); a
// disk whose line stops at the discard fields (4.18+) or at io_ticks (older) has none.
TEST(ProcParsersTest, DiskFlushesFromField16) {
  const char* text =
      "   8       0 sda 100 0 800 10 200 0 1600 20 0 30 40 0 0 0 0 7 3\n"
      " 252       0 vda 4122 17 310021 1800 98114 2201 8812044 43120 0 51200 47700 0 0 0 0 21011 9410\n"
      " 252       1 vda1 4000 17 300000 1700 98000 2200 8800000 43000 0 51000 47600 0 0 0 0 20000 9000\n"
      " 259       0 nvme0n1 9121 0 532118 1764 26113 0 1 2 0 24092 31200 0 0 0 0\n"
      "   7       0 loop0 1 0 2 0 0 0 0 0 0 0 0 0 0 0 0 5 0\n";
  auto f = ParseDiskFlushes(text);
  EXPECT_EQ(f, (std::map<std::string, int64_t>{{"sda", 7}, {"vda", 21011}}));
  EXPECT_EQ(ParseDiskIoTicks(text).at("nvme0n1"), 24092);
}

}  // namespace
}  // namespace latdoc::host
