#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "host/collector.h"
#include "host/gpu/rocm_smi_api.h"
#include "host/test_tree.h"

namespace latdoc::host {
namespace {

const std::string kGpu0 =
    "/sys/devices/pci0000:00/0000:00:01.1/0000:0a:00.0/0000:0b:00.0/0000:0c:00.0";
const std::string kGpu1 =
    "/sys/devices/pci0000:80/0000:80:01.1/0000:8a:00.0/0000:8b:00.0/0000:8c:00.0";

HostFacts Collect(const std::string& root) {
  CollectOptions o;
  o.sysroot = root;
  o.sample_interval_ns = 0;
  return CollectHostFacts(o);
}

// A fake librocm_smi64: device 0 is 0000:8c:00.0, device 1 is 0000:0c:00.0 (not PCI order,
// so matching must go by address).
int RsmiInit(uint64_t) { return 0; }
int RsmiShutDown() { return 0; }
int RsmiCount(uint32_t* n) {
  *n = 2;
  return 0;
}
int RsmiPciId(uint32_t i, uint64_t* id) {
  *id = i == 0 ? (0x8cull << 8) : (0x0cull << 8);
  return 0;
}
int RsmiPerf(uint32_t i, int* level) {
  *level = i == 1 ? 7 : 0x100;  // STABLE_MIN_SCLK for 0000:0c:00.0; UNKNOWN for the other
  return 0;
}
int RsmiBusy(uint32_t, uint32_t* pct) {
  *pct = 88;
  return 0;
}

VendorLibrary FakeRsmi(bool with_pci_id = true) {
  std::map<std::string, void*> t = {
      {"rsmi_init", reinterpret_cast<void*>(&RsmiInit)},
      {"rsmi_shut_down", reinterpret_cast<void*>(&RsmiShutDown)},
      {"rsmi_num_monitor_devices", reinterpret_cast<void*>(&RsmiCount)},
      {"rsmi_dev_perf_level_get", reinterpret_cast<void*>(&RsmiPerf)},
      {"rsmi_dev_busy_percent_get", reinterpret_cast<void*>(&RsmiBusy)}};
  if (with_pci_id) t["rsmi_dev_pci_id_get"] = reinterpret_cast<void*>(&RsmiPciId);
  VendorLibrary lib;
  lib.lookup = [t](const char* s) -> void* {
    auto it = t.find(s);
    return it == t.end() ? nullptr : it->second;
  };
  return lib;
}

TEST(AmdVendorTest, RocmSmiLibraryFillsWhatSysfsDidNotGiveMatchedByAddress) {
  TestTree t("tests/data/host/mi300x_built/tree");
  t.Remove(kGpu0 + "/power_dpm_force_performance_level");
  t.Remove(kGpu0 + "/gpu_busy_percent");
  CollectOptions o;
  o.sysroot = t.root();
  o.sample_interval_ns = 0;
  o.rocm_smi = FakeRsmi();
  HostFacts f = CollectHostFacts(o);
  const GpuFacts& g = f.gpus.at(0);
  EXPECT_EQ(g.perf_level.value_or(""), "profile_min_sclk");
  EXPECT_EQ(g.perf_level.source, "librocm_smi64 (device 1)");
  EXPECT_EQ(g.util_pct.value_or(0), 88);
  EXPECT_EQ(g.vendor_source, "amdgpu-sysfs+rocm-smi");
  EXPECT_EQ(f.gpus.at(1).perf_level.value_or(""), "auto");  // sysfs, untouched

  o.rocm_smi = FakeRsmi(/*with_pci_id=*/false);  // a library of the wrong version
  f = CollectHostFacts(o);
  EXPECT_EQ(f.gpus.at(0).perf_level.source, "amd-smi metric --json");
  EXPECT_THAT(f.gpu_notes, testing::Contains("amd: librocm_smi64 lacks rsmi_dev_pci_id_get"));
}

TEST(AmdVendorTest, RsmiHelpers) {
  EXPECT_EQ(BdfFromRsmiId((1ull << 32) | (0x8c << 8) | (0x1f << 3) | 7), "0001:8c:1f.7");
  EXPECT_EQ(PerfLevelName(0), "auto");
  EXPECT_EQ(PerfLevelName(8), "perf_determinism");
  EXPECT_EQ(PerfLevelName(0x100), std::nullopt);
}

TEST(AmdVendorTest, AmdSmiFillsOnlyWhatSysfsDidNotGive) {
  TestTree t("tests/data/host/mi300x_built/tree");
  t.Remove(kGpu0 + "/power_dpm_force_performance_level");
  t.Remove(kGpu0 + "/gpu_busy_percent");
  HostFacts f = Collect(t.root());
  const GpuFacts& g = f.gpus.at(0);
  EXPECT_EQ(g.perf_level.value_or(""), "auto");
  EXPECT_EQ(g.perf_level.source, "amd-smi metric --json");
  EXPECT_EQ(g.util_pct.value_or(-1), 0);
  EXPECT_EQ(g.vendor_source, "amdgpu-sysfs+amd-smi");
  // GPU 1 kept its sysfs value.
  EXPECT_EQ(f.gpus.at(1).perf_level.source,
            "/sys/bus/pci/devices/0000:8c:00.0/power_dpm_force_performance_level");
}

// amd-smi prints the amdsmi_dev_perf_level_t names (AMDSMI_DEV_PERF_LEVEL_STABLE_MIN_SCLK, or
// without the prefix in some versions); the facts carry the sysfs names the rules know.
TEST(AmdVendorTest, AmdSmiPerfLevelNamesBecomeTheSysfsNames) {
  TestTree t("tests/data/host/mi300x_built/tree");
  t.Remove(kGpu0 + "/power_dpm_force_performance_level");
  t.Remove(kGpu1 + "/power_dpm_force_performance_level");
  const std::pair<const char*, const char*> kLevels[] = {
      {"AUTO", "auto"},
      {"LOW", "low"},
      {"HIGH", "high"},
      {"MANUAL", "manual"},
      {"STABLE_STD", "profile_standard"},
      {"STABLE_PEAK", "profile_peak"},
      {"STABLE_MIN_MCLK", "profile_min_mclk"},
      {"STABLE_MIN_SCLK", "profile_min_sclk"},
      {"DETERMINISM", "perf_determinism"}};
  for (auto [amdsmi, sysfs] : kLevels) {
    t.Write("/.commands/amd-smi.1.out",
            std::string("[{\"gpu\": 0, \"perf_level\": \"AMDSMI_DEV_PERF_LEVEL_") + amdsmi +
                "\"}, {\"gpu\": 1, \"perf_level\": \"" + amdsmi + "\"}]");
    HostFacts f = Collect(t.root());
    EXPECT_EQ(f.gpus.at(0).perf_level.value_or("?"), sysfs) << amdsmi;
    EXPECT_EQ(f.gpus.at(1).perf_level.value_or("?"), sysfs) << amdsmi;
  }
}

// PCI domains wider than 4 hex digits (Intel VMD puts its devices in 10000 and up) still give
// the link path and the KFD architecture; a stray entry that is no PCI address (a hand-made
// --sysroot tree) is not a GPU, and nothing throws.
TEST(AmdVendorTest, LongPciDomainAndOddEntryNamesAreHandled) {
  TestTree t("tests/data/host/mi300x_built/tree");
  const std::string port = "/sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0";
  const std::string dev = port + "/10000:e1:00.0";
  for (const std::string& d : {port, dev}) {
    t.Write(d + "/current_link_speed", "32.0 GT/s PCIe\n");
    t.Write(d + "/max_link_speed", "32.0 GT/s PCIe\n");
    t.Write(d + "/current_link_width", "16\n");
    t.Write(d + "/max_link_width", "16\n");
  }
  t.Write(dev + "/class", "0x120000\n");
  t.Write(dev + "/vendor", "0x1002\n");
  t.Write(dev + "/device", "0x74a1\n");
  std::filesystem::create_directory_symlink("../../../devices/pci0000:00/0000:00:0e.0/"
                                            "pci10000:e0/10000:e0:06.0/10000:e1:00.0",
                                            t.root() + "/sys/bus/pci/devices/10000:e1:00.0");
  t.Write("/sys/class/kfd/kfd/topology/nodes/9/properties",
          "simd_count 1216\nsimd_per_cu 4\ngfx_target_version 90402\nlocation_id 57600\n"
          "domain 65536\n");
  t.Write("/sys/bus/pci/devices/x/class", "0x120000\n");
  t.Write("/sys/bus/pci/devices/x/vendor", "0x1002\n");
  HostFacts f = Collect(t.root());
  ASSERT_EQ(f.gpus.size(), 3u);
  const GpuFacts& g = f.gpus.at(2);
  EXPECT_EQ(g.bdf, "10000:e1:00.0");
  EXPECT_EQ(g.name.value_or(""), "AMD Instinct MI300X (gfx942, 304 CU)");
  ASSERT_EQ(g.pcie_path.size(), 2u);
  EXPECT_EQ(g.pcie_path[0].bdf, "10000:e1:00.0");
  EXPECT_EQ(g.pcie_path[1].bdf, "10000:e0:06.0");
  EXPECT_EQ(g.pcie_path[1].max_width.value_or(0), 16);
}

TEST(AmdVendorTest, WithoutAmdSmiAMissingFileStaysUnknown) {
  TestTree t("tests/data/host/mi300x_built/tree");
  t.Remove(kGpu0 + "/power_dpm_force_performance_level");
  t.Remove("/.commands");
  HostFacts f = Collect(t.root());
  EXPECT_FALSE(f.gpus.at(0).perf_level.known());
  EXPECT_EQ(f.gpus.at(0).perf_level.reason,
            "/sys/bus/pci/devices/0000:0c:00.0/power_dpm_force_performance_level: No such file or "
            "directory");
}

TEST(AmdVendorTest, RunningClockAndUnknownDeviceId) {
  TestTree t("tests/data/host/mi300x_built/tree");
  t.Write(kGpu0 + "/pp_dpm_sclk", "0: 500Mhz\n1: 1300Mhz *\n2: 2100Mhz\n");
  t.Write(kGpu0 + "/device", "0x1234\n");
  t.Remove("/sys/class/kfd");
  HostFacts f = Collect(t.root());
  const GpuFacts& g = f.gpus.at(0);
  EXPECT_EQ(g.sm_clock_mhz.value_or(0), 1300);
  EXPECT_EQ(g.sclk_deep_sleep.value_or(true), false);
  EXPECT_EQ(g.name.value_or(""), "AMD GPU");
}

}  // namespace
}  // namespace latdoc::host

namespace latdoc::host {
namespace {

// `amd-smi metric --json` as MI300-class hosts print it (tests/data/host/corpus): the power
// section's throttle_status per GPU becomes the facts gpu.throttle judges; a "throttle" section
// (ROCm 6.4+) names the active violations.
TEST(AmdVendorTest, AmdSmiThrottleStatusIsRead) {
  TestTree t("tests/data/host/mi300x_built/tree");
  std::ifstream in("tests/data/host/corpus/amd_smi_metric_throttle.json");
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(json.empty());
  t.Write("/.commands/amd-smi.1.out", json);
  HostFacts f = Collect(t.root());
  ASSERT_GE(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].throttle_status.value_or("?"), "THROTTLED");
  EXPECT_EQ(f.gpus[0].throttle_status.source, "amd-smi metric --json");
  EXPECT_EQ(f.gpus[1].throttle_status.value_or("?"), "UNTHROTTLED");

  // The newer form: {"gpu_data": [...]}, throttle_status "N/A" on MI300, the violations instead.
  std::ifstream in2("tests/data/host/corpus/amd_smi_metric_gpu_data_violations.json");
  std::string json2((std::istreambuf_iterator<char>(in2)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(json2.empty());
  t.Write("/.commands/amd-smi.1.out", json2);
  f = Collect(t.root());
  EXPECT_EQ(f.gpus[0].throttle_status.value_or("?"), "THROTTLED");
  EXPECT_EQ(f.gpus[0].throttle_active.value_or("?"), "hbm_thermal, ppt");
  EXPECT_EQ(f.gpus[1].throttle_status.value_or("?"), "UNTHROTTLED");
  EXPECT_EQ(f.gpus[1].throttle_active.value_or("?"), "");
}

}  // namespace
}  // namespace latdoc::host

namespace latdoc::host {
namespace {

// A gpu_metrics table of `size` bytes with the given revision, `value` (little-endian, `bytes`
// wide) at byte `at`.
std::string GpuMetrics(size_t size, int content, size_t at, uint64_t value, size_t bytes) {
  std::string b(size, '\0');
  b[0] = static_cast<char>(size & 0xff);
  b[1] = static_cast<char>(size >> 8);
  b[2] = 1;
  b[3] = static_cast<char>(content);
  for (size_t i = 0; i < bytes; ++i) b[at + i] = static_cast<char>(value >> (8 * i) & 0xff);
  return b;
}

// sysfs gpu_metrics' throttle fields (kgd_pp_interface.h): v1.3's ASIC-independent bits by
// name, MI300's v1.4 status as set or not; amd-smi is not needed for them.
TEST(AmdVendorTest, GpuMetricsThrottleFields) {
  TestTree t("tests/data/host/mi300x_built/tree");
  t.Remove("/.commands");
  const uint64_t ppt0_hotspot = (1ULL << 0) | (1ULL << 36);
  t.Write(kGpu0 + "/gpu_metrics", GpuMetrics(120, 3, 112, ppt0_hotspot, 8));
  t.Write(kGpu1 + "/gpu_metrics", GpuMetrics(264, 4, 40, 0, 4));
  HostFacts f = Collect(t.root());
  ASSERT_EQ(f.gpus.size(), 2u);
  EXPECT_EQ(f.gpus[0].throttle_status.value_or("?"), "THROTTLED");
  EXPECT_EQ(f.gpus[0].throttle_active.value_or("?"), "PPT0, TEMP_HOTSPOT");
  EXPECT_EQ(f.gpus[0].throttle_status.source, "/sys/bus/pci/devices/0000:0c:00.0/gpu_metrics (v1.3)");
  EXPECT_EQ(f.gpus[1].throttle_status.value_or("?"), "UNTHROTTLED");
  // MI300's status word is ASIC dependent: set or not, no names.
  t.Write(kGpu1 + "/gpu_metrics", GpuMetrics(264, 4, 40, 0x40, 4));
  f = Collect(t.root());
  EXPECT_EQ(f.gpus[1].throttle_status.value_or("?"), "THROTTLED");
  EXPECT_FALSE(f.gpus[1].throttle_active.known());
  // A table shorter than its header says, or of a revision not read, gives nothing.
  t.Write(kGpu1 + "/gpu_metrics", GpuMetrics(264, 4, 40, 0x40, 4).substr(0, 100));
  EXPECT_FALSE(Collect(t.root()).gpus[1].throttle_status.known());
  t.Write(kGpu1 + "/gpu_metrics", GpuMetrics(300, 9, 40, 0x40, 4));
  EXPECT_FALSE(Collect(t.root()).gpus[1].throttle_status.known());
}

}  // namespace
}  // namespace latdoc::host
