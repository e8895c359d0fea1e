// End-to-end runs of `latdoc doctor` and `latdoc numa-exec` (the built binary). Skipped when
// the binary has not been built.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "host/test_tree.h"

namespace latdoc::host {
namespace {

namespace fs = std::filesystem;
using testing::HasSubstr;
using testing::Not;

struct RunResult {
  int rc = -1;
  std::string out, err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the latdoc binary with `args` (a shell fragment) in `cwd`.
RunResult Latdoc(const std::string& args, const std::string& cwd = LATDOC_SOURCE_DIR) {
  const fs::path tmp = fs::temp_directory_path() / ("latdoc_cli_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  const std::string cmd = "cd '" + cwd + "' && '" LATDOC_BINARY "' " + args + " >'" +
                          (tmp / "out").string() + "' 2>'" + (tmp / "err").string() + "'";
  int st = std::system(cmd.c_str());
  RunResult r;
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = Slurp(tmp / "out");
  r.err = Slurp(tmp / "err");
  fs::remove_all(tmp);
  return r;
}

class DoctorCliTest : public testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(LATDOC_BINARY)) GTEST_SKIP() << LATDOC_BINARY << " not built";
  }
};

// Golden text outputs; regenerate with tools/build_host_trees.py --latdoc <binary>.
TEST_F(DoctorCliTest, TextOutputMatchesGoldenFiles) {
  struct Case {
    const char* args;
    const char* golden;
    int rc;
  } cases[] = {
      {"doctor --facts tests/data/host/facts/unhealthy_built.json --sweep "
       "tests/data/host/sweep_knee64.json --all --no-color",
       "tests/data/host/golden/unhealthy_built.txt", 1},
      {"doctor --facts tests/data/host/facts/h200_recorded.json --all --no-color",
       "tests/data/host/golden/h200_recorded.txt", 1},
      {"doctor --facts tests/data/host/facts/mi300x_built.json --no-color",
       "tests/data/host/golden/mi300x_built.txt", 0},
  };
  for (const auto& c : cases) {
    RunResult r = Latdoc(c.args);
    EXPECT_EQ(r.rc, c.rc) << c.args << "\n" << r.err;
    auto golden = ReadFileToString(std::string(LATDOC_SOURCE_DIR) + "/" + c.golden);
    ASSERT_TRUE(golden.ok()) << golden.status().message();
    EXPECT_EQ(r.out, *golden) << c.golden;
  }
}

TEST_F(DoctorCliTest, BadInputIsExitTwoWithAMessage) {
  RunResult missing = Latdoc("doctor --facts /nonexistent/facts.json");
  EXPECT_EQ(missing.rc, 2);
  EXPECT_EQ(missing.err, "latdoc doctor: /nonexistent/facts.json: No such file or directory\n");
  EXPECT_EQ(missing.out, "");
  RunResult bad = Latdoc("doctor --facts tests/data/host/h200_shared/host_snapshot.txt");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_EQ(bad.err, "latdoc doctor: tests/data/host/h200_shared/host_snapshot.txt: not valid JSON\n");
  RunResult both = Latdoc("doctor --facts x.json --sysroot y");
  EXPECT_EQ(both.rc, 2);
  EXPECT_EQ(both.err, "latdoc doctor: --facts judges recorded facts; it cannot be combined with "
                      "--sysroot, --pid or --collect\n");
  RunResult sweep = Latdoc("doctor --facts tests/data/host/facts/mi300x_built.json --sweep "
                           "tests/data/host/facts/mi300x_built.json");
  EXPECT_EQ(sweep.rc, 2);
  EXPECT_THAT(sweep.err, HasSubstr("no knee found"));
  // A wrong --sysroot reads nothing: that is bad input, not a clean host.
  RunResult nodir = Latdoc("doctor --sysroot /nonexistent/tree");
  EXPECT_EQ(nodir.rc, 2);
  EXPECT_EQ(nodir.err, "latdoc doctor: --sysroot /nonexistent/tree: not a directory\n");
  EXPECT_EQ(nodir.out, "");
  RunResult notree = Latdoc("doctor --sysroot tests/data/host/mi300x_built");
  EXPECT_EQ(notree.rc, 2);
  EXPECT_EQ(notree.err, "latdoc doctor: --sysroot tests/data/host/mi300x_built: holds neither proc/ nor sys/ "
                        "(a recorded tree is OUT/tree)\n");
  RunResult pid = Latdoc("doctor --sysroot tests/data/host/mi300x_built/tree --pid 999");
  EXPECT_EQ(pid.rc, 2);
  EXPECT_EQ(pid.err, "latdoc doctor: --pid 999: /proc/999/cmdline: No such file or directory\n");
}

TEST_F(DoctorCliTest, CollectThenJudgeGivesTheSameFindingsAsDirect) {
  TestTree out("tests/data/host/h200_snapshot");  // any dir; a scratch place for outputs
  const std::string facts = out.root() + "/facts.json";
  const std::string json = out.root() + "/doctor.json";
  RunResult c = Latdoc("doctor --sysroot tests/data/host/mi300x_unhealthy_built/tree --interval-ms 0 "
                       "--collect '" + facts + "'");
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(c.out, "");
  RunResult j = Latdoc("doctor --facts '" + facts + "' --json '" + json + "' --no-color");
  EXPECT_EQ(j.rc, 1);
  RunResult d = Latdoc("doctor --sysroot tests/data/host/mi300x_unhealthy_built/tree --interval-ms 0 --no-color");
  EXPECT_EQ(d.out, j.out);
  auto doc = nlohmann::json::parse(Slurp(json));
  EXPECT_EQ(doc["schema"], "latdoc.doctor/1");
  EXPECT_EQ(doc["facts"]["schema"], "latdoc.host_facts/1");
  EXPECT_GT(doc["findings"].size(), 20u);
  EXPECT_EQ(Slurp(json).find("sk-test-secret"), std::string::npos);
}

// The live check on this machine writes nothing (its wall time, <= 1 s, is measured by
// bench/doctor_bench and by timing the binary, not asserted here: sanitizer builds and a busy
// CI machine would make such an assertion flaky).
TEST_F(DoctorCliTest, LiveCheckWritesNothing) {
  const fs::path cwd = fs::temp_directory_path() / ("latdoc_live_" + std::to_string(::getpid()));
  fs::create_directories(cwd);
  RunResult r = Latdoc("doctor --no-color", cwd.string());
  EXPECT_TRUE(r.rc == 0 || r.rc == 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("checks ok"));
  EXPECT_TRUE(fs::is_empty(cwd));
  fs::remove_all(cwd);
}

// A live process in a cgroup whose CPU quota (a fifth of a CPU) it overruns: doctor sees the
// throttling during its own sample. Needs a cgroup hierarchy with the cpu controller that this
// test may write (root in a VM or container); skipped otherwise.
TEST_F(DoctorCliTest, LiveProcessOverItsCgroupQuotaIsThrottledNow) {
  const std::string name = "latdoc_test_" + std::to_string(::getpid());
  auto write = [](const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.close();
    return !out.fail();
  };
  std::istringstream controllers(Slurp("/sys/fs/cgroup/cgroup.subtree_control"));
  bool v2_cpu = false;
  for (std::string c; controllers >> c;) v2_cpu |= c == "cpu";
  std::error_code ec;
  std::string dir;
  if (v2_cpu && fs::create_directory("/sys/fs/cgroup/" + name, ec)) {
    dir = "/sys/fs/cgroup/" + name;
    if (!write(dir + "/cpu.max", "20000 100000\n")) dir.clear();
  } else if (::access("/sys/fs/cgroup/cpu/cpu.cfs_period_us", W_OK) == 0 &&
             fs::create_directory("/sys/fs/cgroup/cpu/" + name, ec)) {
    dir = "/sys/fs/cgroup/cpu/" + name;
    if (!write(dir + "/cpu.cfs_period_us", "100000\n") ||
        !write(dir + "/cpu.cfs_quota_us", "20000\n")) {
      dir.clear();
    }
  }
  if (dir.empty()) {
    fs::remove("/sys/fs/cgroup/" + name, ec);
    fs::remove("/sys/fs/cgroup/cpu/" + name, ec);
    GTEST_SKIP() << "no writable cgroup hierarchy with the cpu controller";
  }
  const pid_t child = ::fork();
  if (child == 0) {
    std::ofstream(dir + "/cgroup.procs") << ::getpid() << "\n";
    ::alarm(10);  // never outlives the test
    std::atomic<uint64_t> spins{0};
    while (true) spins.fetch_add(1, std::memory_order_relaxed);
  }
  ASSERT_GT(child, 0);
  ::usleep(400'000);
  RunResult r = Latdoc("doctor --pid " + std::to_string(child) + " --all --no-color");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  fs::remove(dir, ec);
  EXPECT_THAT(r.out, HasSubstr("FAIL  system   server's cgroup throttled in"));
  EXPECT_THAT(r.out, HasSubstr("of CPU periods during the sample (quota 0.2 CPUs)"));
  EXPECT_THAT(r.out, HasSubstr("- cgroup: /" + name));
}

TEST_F(DoctorCliTest, NumaExecDryRunAndErrors) {
  RunResult r = Latdoc("numa-exec --gpu 1 --sysroot tests/data/host/mi300x_built/tree --dry-run -- true");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.err, "latdoc numa-exec: GPU 1 (0000:8c:00.0): NUMA node 1, CPUs 48-95, memory bound "
                   "to that node; running: true\n");
  RunResult none = Latdoc("numa-exec --gpu 5 --sysroot tests/data/host/mi300x_built/tree -- true");
  EXPECT_EQ(none.rc, 2);
  EXPECT_EQ(none.err, "latdoc numa-exec: no GPU 5 (found 0 = 0000:0c:00.0, 1 = 0000:8c:00.0)\n");
  RunResult nocmd = Latdoc("numa-exec --gpu 0 --sysroot tests/data/host/mi300x_built/tree --");
  EXPECT_EQ(nocmd.rc, 2);
}

// A real binding on this machine: a tree whose GPU sits on node 0 with CPU 0 only.
TEST_F(DoctorCliTest, NumaExecBindsCpusAndMemory) {
  TestTree t("tests/data/host/mi300x_built/tree");
  t.Write("/sys/devices/system/node/node0/cpulist", "0\n");
  RunResult r = Latdoc("numa-exec --gpu 0 --sysroot '" + t.root() + "' -- grep -E "
                       "'^(Cpus|Mems)_allowed_list' /proc/self/status");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "Cpus_allowed_list:\t0\nMems_allowed_list:\t0\n");
}

// A memory binding the kernel refuses (a node this host or container does not have) is a
// failure to run, not a command run unbound under a message that says it is bound.
TEST_F(DoctorCliTest, NumaExecFailsWhenMemoryCannotBeBound) {
  if (::access("/sys/devices/system/node/node1", F_OK) == 0) GTEST_SKIP() << "this host has a node 1";
  TestTree t("tests/data/host/mi300x_built/tree");
  t.Write("/sys/devices/system/node/node1/cpulist", "0\n");  // GPU 1's node, with a CPU we have
  RunResult r = Latdoc("numa-exec --gpu 1 --sysroot '" + t.root() + "' -- echo ran");
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("latdoc numa-exec: cannot bind memory to NUMA node 1: "));
  EXPECT_THAT(r.err, Not(HasSubstr("memory bound to that node")));
}

}  // namespace
}  // namespace latdoc::host
