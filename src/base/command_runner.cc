#include "base/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "base/clock.h"
#include "base/strings.h"
#include "base/file_util.h"

namespace latdoc {

std::string JoinArgv(const std::vector<std::string>& argv) {
  std::string s;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i) s.push_back(' ');
    s += argv[i];
  }
  return s;
}

namespace {

constexpr size_t kMaxStdoutBytes = 16u << 20;
// How long a killed process gets to disappear; SIGKILL normally takes effect at once.
constexpr int64_t kKillGraceNs = 500 * kNsPerMs;

// Reaps the child `pid` into `status`, polling until `deadline_ns` at most. False if it is still
// running then. A child that is no longer ours to wait for (ECHILD) counts as reaped.
bool ReapBy(pid_t pid, int64_t deadline_ns, int* status) {
  while (true) {
    pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return true;
    if (MonoNowNs() >= deadline_ns) return false;
    ::usleep(1000);
  }
}

class ExecCommandRunner : public CommandRunner {
 public:
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv, int64_t timeout_ns) override {
    if (argv.empty()) return InvalidArgument("empty command");
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
    // An exec failure is reported through a second pipe so "not installed" is told apart from
    // a program that ran and failed.
    int errpipe[2];
    if (::pipe2(errpipe, O_CLOEXEC) != 0) {
      ::close(pipefd[0]);
      ::close(pipefd[1]);
      return ErrnoStatus(errno, "pipe");
    }
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
      int err = errno;
      for (int fd : {pipefd[0], pipefd[1], errpipe[0], errpipe[1]}) ::close(fd);
      return ErrnoStatus(err, "fork");
    }
    if (pid == 0) {
      int devnull = ::open("/dev/null", O_RDWR);
      if (devnull >= 0) {
        ::dup2(devnull, 0);
        ::dup2(devnull, 2);
      }
      ::dup2(pipefd[1], 1);
      ::execvp(cargv[0], cargv.data());
      int err = errno;
      ssize_t ignored = ::write(errpipe[1], &err, sizeof(err));
      (void)ignored;
      ::_exit(127);
    }
    ::close(pipefd[1]);
    ::close(errpipe[1]);
    int exec_err = 0;
    ssize_t got = ::read(errpipe[0], &exec_err, sizeof(exec_err));
    ::close(errpipe[0]);
    CommandResult result;
    bool timed_out = false;
    if (got == static_cast<ssize_t>(sizeof(exec_err))) {
      ::close(pipefd[0]);
      ::waitpid(pid, nullptr, 0);
      if (exec_err == ENOENT) return NotFound(argv[0] + ": not installed");
      return ErrnoStatus(exec_err, argv[0]);
    }
    const int64_t deadline_ns = MonoNowNs() + timeout_ns;
    char buf[65536];
    while (true) {
      int64_t left_ns = deadline_ns - MonoNowNs();
      if (left_ns <= 0) {
        timed_out = true;
        break;
      }
      struct pollfd p = {pipefd[0], POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(left_ns / 1000000 + 1));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) continue;
      ssize_t n = ::read(pipefd[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (result.stdout_text.size() < kMaxStdoutBytes) {
        result.stdout_text.append(buf, static_cast<size_t>(n));
      }
    }
    ::close(pipefd[0]);
    // End of output is not the end of the program (it may close stdout and run on): the
    // deadline bounds the wait too.
    int status = 0;
    if (!timed_out && !ReapBy(pid, deadline_ns, &status)) timed_out = true;
    if (timed_out) {
      ::kill(pid, SIGKILL);
      const std::string late = argv[0] + ": no answer within " +
                               std::to_string(timeout_ns / kNsPerMs) + " ms";
      // A process in uninterruptible sleep (a driver call that never returns) outlives
      // SIGKILL; doctor must not hang with it, so it is left behind, unreaped.
      if (!ReapBy(pid, MonoNowNs() + kKillGraceNs, &status)) {
        return DeadlineExceeded(late + "; pid " + std::to_string(pid) +
                                " still there after SIGKILL, left behind");
      }
      return DeadlineExceeded(late);
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
  }
};

class ReplayCommandRunner : public CommandRunner {
 public:
  ReplayCommandRunner(std::string dir, std::string shown_dir)
      : dir_(std::move(dir)), shown_dir_(std::move(shown_dir)) {}

  StatusOr<CommandResult> Run(const std::vector<std::string>& argv, int64_t) override {
    const std::string want = JoinArgv(argv);
    std::vector<std::string> names;  // sorted: the first recording of an argv wins, always the same
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
      const std::string n = e.path().filename().string();
      if (n.size() >= 5 && n.compare(n.size() - 4, 4, ".cmd") == 0) names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      auto cmd = ReadFileToString(dir_ + "/" + n);
      if (!cmd.ok()) continue;
      std::vector<std::string> words;
      for (auto w : Split(Trim(*cmd), '\n')) words.emplace_back(w);
      if (JoinArgv(words) != want) continue;
      const std::string stem = dir_ + "/" + n.substr(0, n.size() - 4);
      CommandResult r;
      ASSIGN_OR_RETURN(r.stdout_text, ReadFileToString(stem + ".out"));
      auto rc = ReadFileToString(stem + ".rc");
      if (rc.ok()) r.exit_code = static_cast<int>(ParseInt64(Trim(*rc)).value_or(0));
      return r;
    }
    return NotFound(argv.empty() ? std::string("command") : argv[0] + ": not recorded in " + shown_dir_);
  }

 private:
  std::string dir_;
  std::string shown_dir_;
};

}  // namespace

StatusOr<CommandResult> FakeCommandRunner::Run(const std::vector<std::string>& argv, int64_t) {
  const std::string key = JoinArgv(argv);
  calls_.push_back(key);
  auto it = answers_.find(key);
  if (it == answers_.end()) return NotFound(argv.empty() ? "" : argv[0] + ": not installed");
  return it->second;
}

std::unique_ptr<CommandRunner> MakeExecCommandRunner() {
  return std::make_unique<ExecCommandRunner>();
}
std::unique_ptr<CommandRunner> MakeReplayCommandRunner(std::string dir, std::string shown_dir) {
  return std::make_unique<ReplayCommandRunner>(std::move(dir), std::move(shown_dir));
}

}  // namespace latdoc
