// The NVIDIA vendor against a fake NVML symbol table (no GPU or driver needed).
#include <cstring>
#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/collector.h"
#include "host/gpu/nvml_api.h"

namespace latdoc::host {
namespace {

// A fake GPU behind the fake library: what each call returns.
struct FakeGpu {
  int init_rc = 0;
  unsigned sm_mhz = 1755, max_sm_mhz = 1980, util = 97;
  unsigned long long reasons = 0x4;  // SwPowerCap
  unsigned limit_mw = 500000, default_mw = 700000;
  int persistence = 0;
  unsigned gen_cur = 4, gen_max = 5, width_cur = 16, width_max = 16;
  std::string last_bus_id;
};
FakeGpu g_gpu;
int g_fake_device = 0;

int FakeInit() { return g_gpu.init_rc; }
int FakeShutdown() { return 0; }
const char* FakeError(int rc) { return rc == 3 ? "Not Supported" : "Unknown Error"; }
int FakeHandle(const char* bus, NvmlDevice* dev) {
  g_gpu.last_bus_id = bus;
  *dev = &g_fake_device;
  return 0;
}
int FakeName(NvmlDevice, char* out, unsigned n) {
  std::strncpy(out, "NVIDIA H200", n);
  return 0;
}
int FakeClock(NvmlDevice, int type, unsigned* v) {
  *v = g_gpu.sm_mhz;
  return type == kNvmlClockSm ? 0 : 3;
}
int FakeMaxClock(NvmlDevice, int, unsigned* v) {
  *v = g_gpu.max_sm_mhz;
  return 0;
}
int FakeReasons(NvmlDevice, unsigned long long* r) {
  *r = g_gpu.reasons;
  return 0;
}
int FakeUtil(NvmlDevice, NvmlUtilization* u) {
  u->gpu = g_gpu.util;
  u->memory = 10;
  return 0;
}
int FakeLimit(NvmlDevice, unsigned* v) {
  *v = g_gpu.limit_mw;
  return 0;
}
int FakeDefaultLimit(NvmlDevice, unsigned* v) {
  *v = g_gpu.default_mw;
  return 0;
}
int FakePersistence(NvmlDevice, int* m) {
  *m = g_gpu.persistence;
  return 0;
}
int FakeMemory(NvmlDevice, NvmlMemory* m) {
  m->total = 150754820096ull;  // 143771 MiB
  m->free = m->total;
  m->used = 0;
  return 0;
}
int FakeGenCur(NvmlDevice, unsigned* v) { *v = g_gpu.gen_cur; return 0; }
int FakeGenMax(NvmlDevice, unsigned* v) { *v = g_gpu.gen_max; return 0; }
int FakeWidthCur(NvmlDevice, unsigned* v) { *v = g_gpu.width_cur; return 0; }
int FakeWidthMax(NvmlDevice, unsigned*) { return 3; }  // NOT_SUPPORTED

std::map<std::string, void*> FullTable() {
  return {{"nvmlInit_v2", reinterpret_cast<void*>(&FakeInit)},
          {"nvmlShutdown", reinterpret_cast<void*>(&FakeShutdown)},
          {"nvmlErrorString", reinterpret_cast<void*>(&FakeError)},
          {"nvmlDeviceGetHandleByPciBusId_v2", reinterpret_cast<void*>(&FakeHandle)},
          {"nvmlDeviceGetName", reinterpret_cast<void*>(&FakeName)},
          {"nvmlDeviceGetClockInfo", reinterpret_cast<void*>(&FakeClock)},
          {"nvmlDeviceGetMaxClockInfo", reinterpret_cast<void*>(&FakeMaxClock)},
          // Only the older name: the binder must fall back to it.
          {"nvmlDeviceGetCurrentClocksThrottleReasons", reinterpret_cast<void*>(&FakeReasons)},
          {"nvmlDeviceGetUtilizationRates", reinterpret_cast<void*>(&FakeUtil)},
          {"nvmlDeviceGetEnforcedPowerLimit", reinterpret_cast<void*>(&FakeLimit)},
          {"nvmlDeviceGetPowerManagementDefaultLimit", reinterpret_cast<void*>(&FakeDefaultLimit)},
          {"nvmlDeviceGetPersistenceMode", reinterpret_cast<void*>(&FakePersistence)},
          {"nvmlDeviceGetMemoryInfo", reinterpret_cast<void*>(&FakeMemory)},
          {"nvmlDeviceGetCurrPcieLinkGeneration", reinterpret_cast<void*>(&FakeGenCur)},
          {"nvmlDeviceGetMaxPcieLinkGeneration", reinterpret_cast<void*>(&FakeGenMax)},
          {"nvmlDeviceGetCurrPcieLinkWidth", reinterpret_cast<void*>(&FakeWidthCur)},
          {"nvmlDeviceGetMaxPcieLinkWidth", reinterpret_cast<void*>(&FakeWidthMax)}};
}

VendorLibrary FromTable(std::map<std::string, void*> table) {
  VendorLibrary lib;
  lib.lookup = [table](const char* sym) -> void* {
    auto it = table.find(sym);
    return it == table.end() ? nullptr : it->second;
  };
  return lib;
}

HostFacts CollectWith(VendorLibrary lib) {
  CollectOptions o;
  o.sysroot = "tests/data/host/h200_recorded/tree";
  o.sample_interval_ns = 0;
  o.nvml = std::move(lib);
  return CollectHostFacts(o);
}

TEST(NvidiaVendorTest, FillsEveryFactFromNvml) {
  g_gpu = FakeGpu();
  HostFacts f = CollectWith(FromTable(FullTable()));
  ASSERT_EQ(f.gpus.size(), 1u);
  const GpuFacts& g = f.gpus[0];
  EXPECT_EQ(g_gpu.last_bus_id, "0000:00:06.0");
  EXPECT_EQ(g.vendor_source, "nvml");
  EXPECT_EQ(g.name.value_or(""), "NVIDIA H200");
  EXPECT_EQ(g.sm_clock_mhz.value_or(0), 1755);
  EXPECT_EQ(g.util_pct.value_or(0), 97);
  EXPECT_EQ(g.clocks_event_reasons.value_or(0), 0x4u);
  EXPECT_EQ(g.power_limit_w.value_or(0), 500.0);
  EXPECT_EQ(g.power_default_limit_w.value_or(0), 700.0);
  EXPECT_EQ(g.persistence_mode.value_or(true), false);
  EXPECT_EQ(g.memory_total_mib.value_or(0), 143771);
  EXPECT_EQ(g.pcie_gen_cur.value_or(0), 4);
  EXPECT_FALSE(g.pcie_width_max.known());
  EXPECT_EQ(g.pcie_width_max.reason, "nvmlDeviceGetMaxPcieLinkWidth: Not Supported (3)");
  EXPECT_TRUE(f.gpu_notes.empty());
}

TEST(NvidiaVendorTest, LibraryOfTheWrongVersionFallsBackToNvidiaSmi) {
  auto table = FullTable();
  table.erase("nvmlDeviceGetHandleByPciBusId_v2");
  HostFacts f = CollectWith(FromTable(table));
  const GpuFacts& g = f.gpus.at(0);
  EXPECT_EQ(g.vendor_source, "nvidia-smi");
  EXPECT_EQ(g.sm_clock_mhz.value_or(0), 345);  // the recorded nvidia-smi answer
  EXPECT_THAT(f.gpu_notes, testing::ElementsAre(
                               "nvidia: libnvidia-ml lacks nvmlDeviceGetHandleByPciBusId_v2 "
                               "(driver too old?); used nvidia-smi"));
}

TEST(NvidiaVendorTest, InitFailureFallsBackAndSaysWhy) {
  g_gpu = FakeGpu();
  g_gpu.init_rc = 9;
  HostFacts f = CollectWith(FromTable(FullTable()));
  EXPECT_EQ(f.gpus.at(0).vendor_source, "nvidia-smi");
  EXPECT_THAT(f.gpu_notes, testing::ElementsAre(
                               "nvidia: nvmlInit_v2: Unknown Error (9); used nvidia-smi"));
  g_gpu = FakeGpu();
}

TEST(NvidiaVendorTest, NoLibraryAndNoNvidiaSmiLeavesFactsUnknownWithBothReasons) {
  FakeCommandRunner nothing;
  VendorLibrary missing;
  missing.unavailable_reason = "libnvidia-ml.so.1: cannot open shared object file";
  CollectOptions o;
  o.sysroot = "tests/data/host/h200_recorded/tree";
  o.sample_interval_ns = 0;
  o.nvml = missing;
  o.runner = &nothing;
  HostFacts f = CollectHostFacts(o);
  const GpuFacts& g = f.gpus.at(0);
  EXPECT_FALSE(g.sm_clock_mhz.known());
  EXPECT_EQ(g.sm_clock_mhz.reason,
            "no NVML (NVML not consulted for a recorded tree) and no nvidia-smi (nvidia-smi: "
            "not installed)");
  EXPECT_TRUE(g.numa_node.known());  // sysfs facts do not need the vendor
}

}  // namespace
}  // namespace latdoc::host
