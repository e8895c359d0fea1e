#include "attribution/host_sampler.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace latdoc::attribution {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path);
  f << text;
}

// A /proc/PID/task/TID/stat line (proc(5)) with utime and stime (fields 14, 15) in clock ticks;
// the comm holds a space and a parenthesis, as a thread name may.
std::string TaskStat(int64_t tid, int64_t utime, int64_t stime) {
  std::string s = std::to_string(tid) + " (a (b) c) R 1 1 0 0 -1 4194304 100 0 0 0 " + std::to_string(utime) + " " +
                  std::to_string(stime);
  for (int f = 16; f <= 52; ++f) s += " 0";
  return s + "\n";
}

// A recorded /proc of a server (pid 4242, listening on port 8080 through socket inode 777) with
// an engine-core child (4300), two threads of its own and one of the child's.
struct FakeServer {
  std::string root;
  explicit FakeServer(const std::string& name) {
    root = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid());
    std::filesystem::remove_all(root);
    Write(root + "/sys/devices/system/cpu/online", "0-3\n");
    Write(root + "/proc/stat", "cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 5 6\nprocs_running 6\nprocs_blocked 0\n");
    Write(root + "/proc/net/tcp",
          "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
          "   0: 0100007F:1F90 0100007F:A2C4 01 00000000:00000000 00:00000000 00000000  1000        0 999 1\n"
          "   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 777 1\n");
    Write(root + "/proc/4242/cmdline", std::string("python3\0-m\0some.server\0", 24));
    Write(root + "/proc/4242/status", "Name:\tpython3\nPPid:\t1\n");
    Write(root + "/proc/4300/status", "Name:\tVLLM::EngineCor\nPPid:\t4242\n");
    Write(root + "/proc/4300/comm", "VLLM::EngineCor\n");
    std::filesystem::create_directories(root + "/proc/4242/fd");
    std::filesystem::create_symlink("socket:[777]", root + "/proc/4242/fd/5");
    std::filesystem::create_symlink("/dev/null", root + "/proc/4242/fd/0");
    SetCpu(4242, 4242, 1'000'000'000, "python3");
    SetCpu(4242, 4250, 2'000'000'000, "uvicorn");
    SetCpu(4300, 4300, 5'000'000'000, "VLLM::EngineCor");
  }
  ~FakeServer() { std::filesystem::remove_all(root); }
  void SetCpu(int64_t pid, int64_t tid, int64_t run_ns, const std::string& comm) const {
    const std::string dir = root + "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid);
    Write(dir + "/schedstat", std::to_string(run_ns) + " 12345 67\n");
    Write(dir + "/comm", comm + "\n");
  }
};

const ServerThread* Thread(const ServerCpu& s, int64_t tid) {
  for (const ServerThread& t : s.threads)
    if (t.tid == tid) return &t;
  return nullptr;
}

// The server is the process holding the socket that listens on the URL's port (not the
// connected one on the same port), with its descendants; each thread's CPU time is its
// schedstat run time in ns, its name its comm; the run queue is /proc/stat's procs_running.
TEST(HostSamplerTest, SamplesTheThreadsOfTheProcessListeningOnTheUrlsPort) {
  FakeServer f("host_sampler_listen");
  HostSampler s(f.root, "", "http://127.0.0.1:8080/v1");
  s.FindServer();
  EXPECT_EQ(s.server_cpu().pid, 4242);
  EXPECT_EQ(s.server_cpu().found_by, "listening on port 8080");
  EXPECT_EQ(s.server_cpu().child_pids, std::vector<int64_t>{4300});
  EXPECT_EQ(s.server_cpu().online_cpus, 4);
  HostPoint p = s.SampleOnce(true);
  EXPECT_EQ(p.procs_running, 6);
  f.SetCpu(4300, 4300, 5'090'000'000, "VLLM::EngineCor");
  s.SampleOnce(false);  // a sample without threads reads neither them nor the run queue
  HostPoint q = s.SampleOnce(true);
  ASSERT_EQ(s.server_cpu().threads.size(), 3u);
  const ServerThread* core = Thread(s.server_cpu(), 4300);
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->pid, 4300);
  EXPECT_EQ(core->comm, "VLLM::EngineCor");
  ASSERT_EQ(core->cpu.size(), 2u);
  EXPECT_EQ(core->cpu[0].cpu_ns, 5'000'000'000);
  EXPECT_EQ(core->cpu[1].cpu_ns, 5'090'000'000);
  EXPECT_EQ(core->cpu[1].t_ns, q.t_ns);
  EXPECT_EQ(core->cpu[1].wait_ns, 12345);  // schedstat's run-queue wait
  EXPECT_EQ(Thread(s.server_cpu(), 4250)->comm, "uvicorn");
  EXPECT_FALSE(s.SampleOnce(false).procs_running.has_value());
}

// Without schedstat (a kernel without CONFIG_SCHED_INFO), a thread's CPU time is utime + stime
// of its stat in clock ticks; no URL: the server is found by its command line.
TEST(HostSamplerTest, FallsBackToStatTicksAndTheCommandLine) {
  FakeServer f("host_sampler_stat");
  const std::string task = f.root + "/proc/4242/task/4242";
  std::remove((task + "/schedstat").c_str());
  Write(task + "/stat", TaskStat(4242, 30, 20));
  Write(f.root + "/proc/4242/cmdline", std::string("vllm\0serve\0m\0", 13));
  HostSampler s(f.root, "");
  s.FindServer();
  EXPECT_EQ(s.server_cpu().pid, 4242);
  EXPECT_EQ(s.server_cpu().found_by, "command line (vllm)");
  s.SampleOnce(true);
  const ServerThread* t = Thread(s.server_cpu(), 4242);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->cpu.size(), 1u);
  EXPECT_EQ(t->cpu[0].cpu_ns, 50 * (1'000'000'000 / sysconf(_SC_CLK_TCK)));
}

// No listener on the port and no server's command line: no threads, and a note that says why.
TEST(HostSamplerTest, NoServerFoundSaysWhy) {
  FakeServer f("host_sampler_none");
  HostSampler s(f.root, "", "http://127.0.0.1:9/");
  s.FindServer();
  EXPECT_EQ(s.server_cpu().pid, 0);
  EXPECT_EQ(s.server_cpu().note.rfind("no socket listens on port 9 (/proc/net/tcp, tcp6); no server process found", 0),
            0u) << s.server_cpu().note;
  s.SampleOnce(true);
  EXPECT_TRUE(s.server_cpu().threads.empty());
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
  EXPECT_FALSE(p.procs_running.has_value());  // only with threads
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
  EXPECT_GT(s.server_cpu().sampler_wall_ns, 0);
  std::remove((root + "/server.log").c_str());
}

// A counters root (sim/host_counters.h, diagnose --host-counters-root): PSI and vmstat come from
// it, the server's threads, the run queue and the online CPUs from the sysroot.
TEST(HostSamplerTest, ACountersRootGivesOnlyPsiAndVmstat) {
  FakeServer f("host_sampler_counters");
  const std::string counters = f.root + "/counters";
  Write(counters + "/proc/pressure/memory",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=333\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=9\n");
  Write(counters + "/proc/vmstat", "pswpin 77\npswpout 1\npgmajfault 88\n");
  Write(f.root + "/proc/vmstat", "pswpin 5\npswpout 5\npgmajfault 5\n");  // not read
  HostSampler s(f.root, "", "http://127.0.0.1:8080/v1", counters);
  s.FindServer();
  EXPECT_EQ(s.server_cpu().pid, 4242);
  EXPECT_EQ(s.server_cpu().online_cpus, 4);
  HostPoint p = s.SampleOnce(true);
  EXPECT_EQ(p.psi_memory_some_us, 333);
  EXPECT_FALSE(p.psi_cpu_some_us.has_value());  // not in the counters root
  EXPECT_EQ(p.swap_in_pages, 77);
  EXPECT_EQ(p.major_faults, 88);
  EXPECT_EQ(p.procs_running, 6);
  EXPECT_EQ(s.server_cpu().threads.size(), 3u);
}

// On the live /proc: this test process, listening on a loopback port with 100 idle threads and
// one named "spin" that burns CPU, is found by its port, every thread is sampled with its comm,
// each thread's CPU time never decreases, and the spinning thread's grows. Prints the sampler's
// own CPU cost over the run (docs/attribution.md states it).
TEST(HostSamplerTest, SamplesALiveProcessFoundByItsPort) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::vector<std::thread> idle;
  for (int i = 0; i < 100; ++i)
    idle.emplace_back([&] {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done; });
    });
  std::atomic<bool> stop_spin{false}, named{false};
  std::thread spin([&] {
    pthread_setname_np(pthread_self(), "spin");
    named = true;
    volatile uint64_t x = 0;
    while (!stop_spin.load(std::memory_order_relaxed)) x = x + 1;
  });
  // The sampler reads a thread's name when it first sees the thread: start it once the spinner
  // has its name (on a loaded machine the thread may not have run yet).
  while (!named) std::this_thread::yield();

  HostSampler s("/", "", "http://127.0.0.1:" + std::to_string(port) + "/");
  s.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the period sampled, not a sync
  s.Stop();
  stop_spin = true;
  spin.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  for (std::thread& t : idle) t.join();
  ::close(fd);

  const ServerCpu& sc = s.server_cpu();
  EXPECT_EQ(sc.pid, ::getpid());
  EXPECT_EQ(sc.found_by, "listening on port " + std::to_string(port));
  EXPECT_GE(sc.threads.size(), 102u);  // the main thread, 100 idle, the spinner (and the sampler)
  const ServerThread* spinner = nullptr;
  for (const ServerThread& t : sc.threads) {
    if (t.comm == "spin") spinner = &t;
    for (size_t i = 1; i < t.cpu.size(); ++i) EXPECT_GE(t.cpu[i].cpu_ns, t.cpu[i - 1].cpu_ns) << t.comm;
  }
  ASSERT_NE(spinner, nullptr);
  ASSERT_GE(spinner->cpu.size(), 2u);
  EXPECT_GT(spinner->cpu.back().cpu_ns, spinner->cpu.front().cpu_ns);
  ASSERT_GT(sc.sampler_wall_ns, 0);
  std::printf("host sampler: %zu threads, %zu samples, %.1f ms of CPU over %.1f ms (%.1f%% of a core)\n",
              sc.threads.size(), s.samples().size(), double(sc.sampler_cpu_ns) / 1e6,
              double(sc.sampler_wall_ns) / 1e6, 100.0 * double(sc.sampler_cpu_ns) / double(sc.sampler_wall_ns));
}

}  // namespace
}  // namespace latdoc::attribution
