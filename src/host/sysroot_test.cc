#include "host/sysroot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::host {
namespace {

const char* kH200 = "tests/data/host/h200_recorded/tree";

TEST(SysRootTest, ResolveJoinsRootAndHostPath) {
  EXPECT_EQ(SysRoot("/").Resolve("/proc/net/tcp"), "/proc/net/tcp");
  EXPECT_EQ(SysRoot("x/tree/").Resolve("/proc/net/tcp"), "x/tree/proc/net/tcp");
  EXPECT_TRUE(SysRoot("").live());
  EXPECT_FALSE(SysRoot(kH200).live());
}

TEST(SysRootTest, ReadsRecordedFilesByHostPath) {
  SysRoot fs(kH200);
  auto v = fs.ReadTrimmed("/sys/bus/pci/devices/0000:00:06.0/numa_node");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, "-1");
}

TEST(SysRootTest, MissingFileErrorNamesTheHostPathNotTheRoot) {
  SysRoot fs(kH200);
  auto v = fs.Read("/sys/nope");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "/sys/nope: No such file or directory");
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
}

TEST(SysRootTest, ReadingADirectoryIsAnError) {
  SysRoot fs(kH200);
  auto v = fs.Read("/proc");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "/proc: Is a directory");
}

TEST(SysRootTest, CanonicalFollowsTheKernelsRelativeLinkInsideTheRoot) {
  SysRoot fs(kH200);
  auto p = fs.Canonical("/sys/bus/pci/devices/0000:00:06.0");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, "/sys/devices/pci0000:00/0000:00:06.0");
}

TEST(SysRootTest, ListIsSortedAndReadLinkGivesTheStoredTarget) {
  SysRoot fs("tests/data/host/mi300x_built/tree");
  auto names = fs.List("/sys/bus/pci/devices");
  ASSERT_TRUE(names.ok());
  EXPECT_THAT(*names, testing::ElementsAre("0000:0c:00.0", "0000:8c:00.0"));
  auto l = fs.ReadLink("/sys/devices/pci0000:00/0000:00:01.1/0000:0a:00.0/0000:0b:00.0/0000:0c:00.0/driver");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, "../../../../bus/pci/drivers/amdgpu");
}

TEST(SysRootTest, ReadStopsAtMaxBytes) {
  SysRoot fs(kH200);
  auto v = fs.Read("/proc/interrupts", 10);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->size(), 10u);
}

}  // namespace
}  // namespace latdoc::host
