#include "attribution/host_sampler.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace latdoc::attribution {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

// A recorded /proc: PSI "some" totals (Documentation/accounting/psi.rst) and /proc/vmstat's
// swap and fault counters are read; the log file's size is its length.
TEST(HostSamplerTest, ReadsPsiVmstatAndTheLogSize) {
  const std::string root = ::testing::TempDir() + "/host_sampler_" + std::to_string(::getpid());
  ::mkdir(root.c_str(), 0755);
  ::mkdir((root + "/proc").c_str(), 0755);
  ::mkdir((root + "/proc/pressure").c_str(), 0755);
  Write(root + "/proc/pressure/cpu",
        "some avg10=1.00 avg60=2.00 avg300=3.00 total=111\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n");
  Write(root + "/proc/pressure/memory",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=222\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=9\n");
  Write(root + "/proc/vmstat", "nr_free_pages 5\npswpin 12\npswpout 34\npgmajfault 56\n");
  Write(root + "/server.log", std::string(100, 'x'));
  HostSampler s(root, root + "/server.log");
  HostPoint p = s.SampleOnce();
  EXPECT_EQ(p.psi_cpu_some_us, 111);
  EXPECT_EQ(p.psi_memory_some_us, 222);
  EXPECT_FALSE(p.psi_io_some_us.has_value());  // no /proc/pressure/io: unknown, not 0
  EXPECT_EQ(p.swap_in_pages, 12);
  EXPECT_EQ(p.swap_out_pages, 34);
  EXPECT_EQ(p.major_faults, 56);
  EXPECT_EQ(p.log_bytes, 100);

  // Started and stopped at once: the first sample at Start, the last at Stop, in time order.
  s.Start();
  s.Stop();
  ASSERT_GE(s.samples().size(), 2u);
  for (size_t i = 1; i < s.samples().size(); ++i)
    EXPECT_GT(s.samples()[i].t_ns, s.samples()[i - 1].t_ns);
  std::remove((root + "/server.log").c_str());
}

}  // namespace
}  // namespace latdoc::attribution
