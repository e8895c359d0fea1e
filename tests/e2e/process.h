// Child processes for end-to-end tests: the real latdoc binary, started with arguments,
// its standard output read line by line, stopped with SIGTERM (then SIGKILL) at the end.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace latdoc::testing {

class Process {
 public:
  // Starts `argv` (argv[0] is the program path). Standard error goes to `stderr_path` when
  // given, else is inherited.
  explicit Process(std::vector<std::string> argv, const std::string& stderr_path = "");
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Reads one line of standard output (without the newline); "" at end or after `timeout_ms`.
  std::string ReadLine(int timeout_ms = 10000);
  // Reads standard output until it closes (or `timeout_ms`), returning what was not read yet.
  std::string ReadToEnd(int timeout_ms);
  // Sends `sig` and waits for the exit; returns the exit code (128+signal when killed).
  int Signal(int sig);
  // Waits for the process to exit by itself (up to `timeout_ms`, then SIGKILL).
  int Wait(int timeout_ms = 60000);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buf_;
  int status_ = -1;
};

// Starts `latdoc sim --port 0 ARGS...` and returns its port (from its first output line).
class SimProcess {
 public:
  explicit SimProcess(std::vector<std::string> args);
  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  Process& process() { return proc_; }
  // The sum of the `name` series over all their label sets, on its /metrics now.
  double Metric(const std::string& name) const;
  // Waits until Metric(name) reaches `at_least`; false after `timeout_ms`. Tests signal a run
  // once it is where they want it, however slow the machine (a sanitizer build starts slowly:
  // after a fixed sleep the process may not yet have installed its handlers).
  bool WaitForMetric(const std::string& name, double at_least, int timeout_ms = 60000) const;

 private:
  Process proc_;
  uint16_t port_ = 0;
};

// Runs the latdoc binary to completion; returns its exit code and standard output.
struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
RunResult RunLatdoc(const std::vector<std::string>& args, int timeout_ms = 120000);

std::string LatdocBinary();
std::string TempPath(const std::string& name);

// A loopback port that was free when asked (bound to port 0, then closed): nothing listens on
// it unless another process takes it meanwhile.
uint16_t FreeLoopbackPort();

// A fresh, empty directory TempPath(name), removed with all it holds at scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& name);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // The path of `file` inside the directory.
  std::string operator/(const std::string& file) const { return path_ + "/" + file; }

 private:
  std::string path_;
};

// The whole content of the file at `path`; "" when it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace latdoc::testing
