#include "base/command_runner.h"

#include <gtest/gtest.h>

#include "base/clock.h"

namespace latdoc {
namespace {

TEST(ExecCommandRunnerTest, CapturesStdoutAndExitCode) {
  auto r = MakeExecCommandRunner();
  auto res = r->Run({"sh", "-c", "printf 'a b\\n'; echo err >&2; exit 3"}, 2'000'000'000);
  ASSERT_TRUE(res.ok()) << res.status().message();
  EXPECT_EQ(res->stdout_text, "a b\n");  // stderr discarded
  EXPECT_EQ(res->exit_code, 3);
}

TEST(ExecCommandRunnerTest, ProgramNotInstalledIsNotFound) {
  auto r = MakeExecCommandRunner();
  auto res = r->Run({"latdoc-no-such-program-xyz"}, 1'000'000'000);
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(res.status().message(), "latdoc-no-such-program-xyz: not installed");
}

TEST(ExecCommandRunnerTest, SlowProgramIsKilledAtTheDeadline) {
  auto r = MakeExecCommandRunner();
  const int64_t t0 = MonoNowNs();
  auto res = r->Run({"sleep", "5"}, 100'000'000);
  const int64_t took_ns = MonoNowNs() - t0;
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(res.status().message(), "sleep: no answer within 100 ms");
  EXPECT_LT(took_ns, 2'000'000'000);
}

// The deadline bounds the whole run, not only the reads: a program that closes its stdout and
// keeps running is killed at the deadline too.
TEST(ExecCommandRunnerTest, ProgramThatClosesStdoutAndRunsOnIsKilledAtTheDeadline) {
  auto r = MakeExecCommandRunner();
  const int64_t t0 = MonoNowNs();
  auto res = r->Run({"sh", "-c", "exec >&-; exec sleep 5"}, 100'000'000);
  const int64_t took_ns = MonoNowNs() - t0;
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(res.status().message(), "sh: no answer within 100 ms");
  EXPECT_LT(took_ns, 2'000'000'000);
}

TEST(ReplayCommandRunnerTest, AnswersTheRecordedArgvOnly) {
  // Messages name the directory as the caller shows it, not by the path it was opened with.
  auto r = MakeReplayCommandRunner("tests/data/host/mi300x_built/tree/.commands", "<sysroot>/.commands");
  auto res = r->Run({"amd-smi", "metric", "--json"}, 0);
  ASSERT_TRUE(res.ok()) << res.status().message();
  EXPECT_EQ(res->exit_code, 0);
  EXPECT_EQ(res->stdout_text.substr(0, 9), "[{\"gpu\": ");
  auto other = r->Run({"amd-smi", "metric"}, 0);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(),
            "amd-smi: not recorded in <sysroot>/.commands");
}

TEST(FakeCommandRunnerTest, RecordsCallsAndAnswersByJoinedArgv) {
  FakeCommandRunner f;
  f.Set("nft -j list ruleset", {1, ""});
  auto a = f.Run({"nft", "-j", "list", "ruleset"}, 0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->exit_code, 1);
  EXPECT_FALSE(f.Run({"iptables-save"}, 0).ok());
  EXPECT_EQ(f.calls(), (std::vector<std::string>{"nft -j list ruleset", "iptables-save"}));
}

}  // namespace
}  // namespace latdoc
