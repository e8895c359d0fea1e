#include "tests/e2e/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "base/file_util.h"
#include "http/testing/blocking_client.h"

namespace latdoc::testing {

std::string LatdocBinary() { return LATDOC_BINARY; }

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/latdoc_" + std::to_string(::getpid()) + "_" + name;
}

uint16_t FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TempDir::TempDir(const std::string& name) : path_(TempPath(name)) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadFileOrEmpty(const std::string& path) {
  auto text = ReadFileToString(path);
  return text.ok() ? *text : "";
}

Process::Process(std::vector<std::string> argv, const std::string& stderr_path) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(fds[1], 1);
    if (!stderr_path.empty()) {
      int e = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (e >= 0) ::dup2(e, 2);
    }
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  out_fd_ = fds[0];
}

Process::~Process() {
  if (status_ < 0 && pid_ > 0) Signal(SIGTERM);
  if (out_fd_ >= 0) ::close(out_fd_);
}

std::string Process::ReadLine(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto nl = buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(
                       deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) return "";
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return "";
    char b[4096];
    ssize_t n = ::read(out_fd_, b, sizeof b);
    if (n <= 0) return "";
    buf_.append(b, size_t(n));
  }
}

std::string Process::ReadToEnd(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string out = std::move(buf_);
  buf_.clear();
  for (;;) {
    int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(
                       deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) return out;
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return out;
    char b[65536];
    ssize_t n = ::read(out_fd_, b, sizeof b);
    if (n <= 0) return out;
    out.append(b, size_t(n));
  }
}

int Process::Wait(int timeout_ms) {
  if (status_ >= 0) return status_;
  for (int waited = 0;; waited += 10) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return status_;
    }
    if (waited >= timeout_ms) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
      status_ = 128 + SIGKILL;
      return status_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int Process::Signal(int sig) {
  if (status_ >= 0) return status_;
  ::kill(pid_, sig);
  return Wait(10000);
}

SimProcess::SimProcess(std::vector<std::string> args)
    : proc_([&] {
        std::vector<std::string> argv = {LatdocBinary(), "sim", "--port", "0"};
        argv.insert(argv.end(), args.begin(), args.end());
        return argv;
      }()) {
  std::string line = proc_.ReadLine();
  auto colon = line.rfind(':');
  if (line.rfind("latdoc sim listening on", 0) != 0 || colon == std::string::npos)
    throw std::runtime_error("latdoc sim did not start: '" + line + "'");
  port_ = static_cast<uint16_t>(std::stoi(line.substr(colon + 1)));
}

double SimProcess::Metric(const std::string& name) const {
  const std::string body = http::testing::Fetch(port_, "GET", "/metrics").body;
  const std::string key = "\n" + name + "{";
  double sum = 0;
  for (size_t p = body.find(key); p != std::string::npos; p = body.find(key, p + 1)) {
    const size_t sp = body.find("} ", p);
    if (sp != std::string::npos) sum += std::atof(body.c_str() + sp + 2);
  }
  return sum;
}

bool SimProcess::WaitForMetric(const std::string& name, double at_least, int timeout_ms) const {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (Metric(name) >= at_least) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

RunResult RunLatdoc(const std::vector<std::string>& args, int timeout_ms) {
  std::vector<std::string> argv = {LatdocBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string err_path = TempPath("stderr_" + std::to_string(std::rand()));
  RunResult r;
  {
    Process p(argv, err_path);
    r.out = p.ReadToEnd(timeout_ms);
    r.exit_code = p.Wait(1000);
  }
  auto e = ReadFileToString(err_path);
  if (e.ok()) r.err = *e;
  ::unlink(err_path.c_str());
  return r;
}

}  // namespace latdoc::testing
