#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "host/collector.h"
#include "host/gpu/rocm_smi_api.h"
#include "host/test_tree.h"

namespace latdoc::host {
namespace {

const std::string kGpu0 =
    "/sys/devices/pci0000:00/0000:00:01.1/0000:0a:00.0/0000:0b:00.0/0000:0c:00.0";

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
