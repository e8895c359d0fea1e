#include "sim/host_counters.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace latdoc::sim {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The tree holds what the host sampler reads, in the kernel's formats; a swap stall's start
// grows pswpin and pgmajfault by a page per 10 us, its end PSI memory by its microseconds.
TEST(HostCountersTest, SwapStallsGrowVmstatAndPsiMemory) {
  const std::string dir = ::testing::TempDir() + "/host_counters_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  HostCounters h;
  ASSERT_TRUE(h.Open(dir).ok());
  EXPECT_EQ(Read(dir + "/proc/vmstat"), "nr_free_pages 4000000\npgmajfault 5000\npswpin 1000\npswpout 2000\n");
  EXPECT_EQ(Read(dir + "/proc/pressure/memory"),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=100000\n"
            "full avg10=0.00 avg60=0.00 avg300=0.00 total=50000\n");
  h.OnSwapStallStart(75'000);
  EXPECT_EQ(Read(dir + "/proc/vmstat"), "nr_free_pages 4000000\npgmajfault 12500\npswpin 8500\npswpout 2000\n");
  EXPECT_EQ(h.psi_memory_us(), 100000);
  h.OnSwapStallEnd(75'000);
  EXPECT_EQ(Read(dir + "/proc/pressure/memory").substr(0, 51), "some avg10=0.00 avg60=0.00 avg300=0.00 total=175000");
  EXPECT_EQ(Read(dir + "/proc/pressure/cpu"),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/proc/vmstat.tmp"));
  std::filesystem::remove_all(dir);
}

TEST(HostCountersTest, AnEmptyDirKeepsNothing) {
  HostCounters h;
  ASSERT_TRUE(h.Open("").ok());
  EXPECT_FALSE(h.enabled());
  h.OnSwapStallStart(1000);
  EXPECT_EQ(h.swap_in_pages(), 1000);  // untouched start value
}

}  // namespace
}  // namespace latdoc::sim
