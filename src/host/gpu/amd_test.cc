#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/collector.h"
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
