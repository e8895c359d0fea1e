// CommandRunner: the one seam through which latdoc runs external programs
// (nvidia-smi, amd-smi, rocm-smi, nft, iptables-save). Collectors never call fork/exec
// themselves, so tests substitute FakeCommandRunner and `--sysroot DIR` replays the outputs a
// capture recorded (ReplayCommandRunner) instead of asking the live host.
//
// Recorded layout (tools/capture_host.sh): DIR/<name>.cmd holds the argv, one word a line;
// DIR/<name>.out the standard output; DIR/<name>.rc the exit code (0 when missing).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace latdoc {

struct CommandResult {
  int exit_code = 0;
  std::string stdout_text;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv (argv[0] looked up in PATH) with no shell, stdin closed, stderr discarded, and
  // at most `timeout_ns` of wall time. NotFound when the program is not installed;
  // DeadlineExceeded when it ran too long (it is killed). A non-zero exit is not an error:
  // it is in the result.
  virtual StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                                      int64_t timeout_ns) = 0;
};

// Runs real programs (fork + execvp). Stdout is capped at 16 MiB.
std::unique_ptr<CommandRunner> MakeExecCommandRunner();

// Answers from the recorded directory `dir`; a command not recorded is NotFound with the message
// "<argv[0]>: not recorded in <shown_dir>". `shown_dir` is how messages name the directory
// (doctor passes "<sysroot>/.commands"), so facts written from a recorded tree do not carry the
// absolute path of the machine that read it.
std::unique_ptr<CommandRunner> MakeReplayCommandRunner(std::string dir, std::string shown_dir);

// For tests: answers from a map keyed by the argv joined with single spaces. Unknown: NotFound.
class FakeCommandRunner : public CommandRunner {
 public:
  void Set(const std::string& joined_argv, CommandResult result) { answers_[joined_argv] = result; }
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv, int64_t timeout_ns) override;
  const std::vector<std::string>& calls() const { return calls_; }

 private:
  std::map<std::string, CommandResult> answers_;
  std::vector<std::string> calls_;
};

std::string JoinArgv(const std::vector<std::string>& argv);

}  // namespace latdoc
