// PlaceGpuTraces: a Kineto trace's kernels on the client clock (docs/attribution.md, "One clock").
#include "diagnose/attribution_step.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "diagnose/diagnose_steps.h"

namespace latdoc::diagnose {
namespace {

constexpr int64_t kBaseNs = 1'796'440'000'000'000'000;  // the trace's baseTimeNanoseconds (Unix)

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/attribution_step_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

// A 2 ms "gemm" every 10 ms from ts 0.1 s to 1.5 s (µs after the base), a 40 ms one at 1.2 s, and
// 5 "norm" kernels of 1 ms.
std::string Trace(bool with_base) {
  std::string ev;
  auto kernel = [&](const char* name, int64_t ts_us, int64_t dur_us) {
    ev += fmt::format("{}{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": 0, \"tid\": 7, "
                      "\"ts\": {}, \"dur\": {}, \"args\": {{\"device\": 0, \"stream\": 7}}}}",
                      ev.empty() ? "" : ",\n", name, ts_us, dur_us);
  };
  for (int64_t ts = 100'000; ts < 1'500'000; ts += 10'000) kernel("gemm", ts, ts == 1'200'000 ? 40'000 : 2'000);
  for (int k = 0; k < 5; ++k) kernel("norm", 1'000'000 + 5'000 + 10'000 * k, 1'000);
  return fmt::format("{{\"schemaVersion\": 1, \"traceEvents\": [\n{}\n]{}}}\n", ev,
                     with_base ? fmt::format(", \"baseTimeNanoseconds\": {}", kBaseNs) : "");
}

// The client read its wall clock 0.5 s after the trace's base together with monotonic 10 s: a
// kernel at ts 1.2 s (wall base + 1.2 s) is at monotonic 10.7 s. Only the kernels in the load
// [10.4 s, 11.0 s] are placed; the medians are of the whole trace.
TEST(PlaceGpuTracesTest, MapsTheTracesWallClockOntoTheClients) {
  const attribution::LogClock clock{kBaseNs + 500'000'000, 10'000'000'000};
  attribution::Timeline t;
  t.start_ns = 10'400'000'000;
  t.end_ns = 11'000'000'000;
  const std::string path = WriteTemp("base.json", Trace(true));
  EXPECT_EQ(PlaceGpuTraces({path}, trace::ImportOptions{}, clock, &t), "");
  EXPECT_TRUE(t.have_gpu);
  EXPECT_EQ(t.gpu_files, std::vector<std::string>{path});
  // gemm from ts 0.9 s to 1.49 s: 60 kernels (the one at 0.89 s ends before the load); 5 norms.
  int gemms = 0, norms = 0, long_gemms = 0;
  for (const attribution::GpuKernel& k : t.gpu) {
    const attribution::GpuKernelName& n = t.gpu_names.at(k.name);
    EXPECT_GE(k.end_ns, t.start_ns);
    EXPECT_LE(k.start_ns, t.end_ns);
    if (n.name == "gemm") {
      ++gemms;
      EXPECT_EQ(n.median_ns, 2'000'000);
      EXPECT_EQ(n.count, 140);
      if (k.end_ns - k.start_ns == 40'000'000) {
        ++long_gemms;
        EXPECT_EQ(k.start_ns, 10'700'000'000);
      }
    } else {
      ++norms;
      EXPECT_EQ(n.name, "norm");
      EXPECT_EQ(n.count, 5);
    }
  }
  EXPECT_EQ(gemms, 60);
  EXPECT_EQ(long_gemms, 1);
  EXPECT_EQ(norms, 5);
  EXPECT_TRUE(std::is_sorted(t.gpu.begin(), t.gpu.end(), [](const auto& a, const auto& b) {
    return a.start_ns < b.start_ns;
  }));
}

// No baseTimeNanoseconds: no wall clock, nothing placed. An unreadable file: its error.
TEST(PlaceGpuTracesTest, ATraceWithoutAWallClockIsLeftOff) {
  const attribution::LogClock clock{kBaseNs + 500'000'000, 10'000'000'000};
  attribution::Timeline t;
  t.start_ns = 0;
  t.end_ns = INT64_MAX / 2;
  EXPECT_EQ(
      PlaceGpuTraces({WriteTemp("nobase.json", Trace(false))}, trace::ImportOptions{}, clock, &t),
      "");
  EXPECT_FALSE(t.have_gpu);
  EXPECT_TRUE(t.gpu.empty());
  EXPECT_TRUE(t.gpu_files.empty());
  attribution::Timeline missing;
  EXPECT_NE(PlaceGpuTraces({WriteTemp("x", "") + ".none"}, trace::ImportOptions{}, clock, &missing),
            "");
  EXPECT_FALSE(missing.have_gpu);
}

// With --local, traces are read knowing this host: its machine-id (under --sysroot) and the
// offset of the wall clock from the boot clock, which rocpd files stamp with.
TEST(TraceImportOptionsTest, LocalRunsKnowThisHostsBootClock) {
  const std::string root = ::testing::TempDir() + "/boot_clock_" + std::to_string(::getpid());
  ASSERT_EQ(std::system(("mkdir -p " + root + "/etc").c_str()), 0);
  std::ofstream(root + "/etc/machine-id") << "0123456789abcdef0123456789abcdef\n";
  DiagnoseOptions o;
  o.sysroot = root;
  EXPECT_FALSE(steps::TraceImportOptions(o).local_boot_clock) << "not without --local";
  o.local = true;
  const trace::ImportOptions io = steps::TraceImportOptions(o);
  ASSERT_TRUE(io.local_boot_clock);
  EXPECT_EQ(io.local_boot_clock->machine_id, "0123456789abcdef0123456789abcdef");
  timespec r, b;
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_BOOTTIME, &b);
  const int64_t offset = (int64_t(r.tv_sec) - b.tv_sec) * 1'000'000'000 + (r.tv_nsec - b.tv_nsec);
  EXPECT_NEAR(double(io.local_boot_clock->realtime_minus_boottime_ns), double(offset), 50e6);
  o.sysroot = root + "/none";  // no machine-id: no file is known to be this host's
  EXPECT_FALSE(steps::TraceImportOptions(o).local_boot_clock);
}

}  // namespace
}  // namespace latdoc::diagnose
