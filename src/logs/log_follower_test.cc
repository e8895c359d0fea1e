#include "logs/log_follower.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace latdoc::logs {
namespace {

const char kStats[] =
    "INFO 06-25 10:00:{:02d} [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
    "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache "
    "usage: 3.0%, Prefix cache hit rate: 0.0%\n";

std::string StatsLine(int sec) {
  std::string s = kStats;
  s.replace(s.find("{:02d}"), 6, (sec < 10 ? "0" : "") + std::to_string(sec));
  return s;
}

class LogFollowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/latdoc_follow_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/vllm.log";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Append(const std::string& s) {
    std::ofstream f(path_, std::ios::app | std::ios::binary);
    f << s;
  }
  uint64_t Stats(const LogAnalyzer& an) {
    LogFacts f = an.Snapshot();
    return f.engines.empty() ? 0 : f.engines[0].stats_lines;
  }
  std::string dir_, path_;
};

// The test appends to the file between polls, as a running server would.
TEST_F(LogFollowerTest, ReadsAppendedLinesAndWaitsForPartialOnes) {
  Append(StatsLine(1));
  LogAnalyzer an;
  auto fo = LogFollower::Open(path_, &an);
  ASSERT_TRUE(fo.ok()) << fo.status().ToString();
  auto n = (*fo)->Poll();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(Stats(an), 1u);
  n = (*fo)->Poll();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);

  std::string line = StatsLine(2);
  Append(line.substr(0, 50));       // half a line: not yet
  n = (*fo)->Poll();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  EXPECT_EQ(Stats(an), 1u);
  Append(line.substr(50) + StatsLine(3));
  n = (*fo)->Poll();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(Stats(an), 3u);
  Append(StatsLine(4).substr(0, 30));
  (*fo)->Finish();                  // at the end the partial line counts, as an unterminated one
  EXPECT_EQ(an.Snapshot().unterminated_last_lines, 1u);
}

TEST_F(LogFollowerTest, StartsOverAfterTruncationAndRotation) {
  Append(StatsLine(1) + StatsLine(2));
  LogAnalyzer an;
  auto fo = LogFollower::Open(path_, &an);
  ASSERT_TRUE(fo.ok());
  ASSERT_TRUE((*fo)->Poll().ok());
  EXPECT_EQ(Stats(an), 2u);
  // copytruncate-style rotation: the file is emptied and written again.
  { std::ofstream f(path_, std::ios::trunc); }
  ASSERT_TRUE((*fo)->Poll().ok());
  Append(StatsLine(3));
  ASSERT_TRUE((*fo)->Poll().ok());
  EXPECT_EQ(Stats(an), 3u);
  EXPECT_EQ((*fo)->reopens(), 1u);
  // rename-style rotation: the old file gets one more line, then a new file appears.
  Append(StatsLine(4));
  std::filesystem::rename(path_, path_ + ".1");
  {
    std::ofstream f(path_ + ".1", std::ios::app);
    f << StatsLine(5);
  }
  Append(StatsLine(6));
  auto n = (*fo)->Poll();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(Stats(an), 6u);
  EXPECT_EQ((*fo)->reopens(), 2u);
  LogFacts f = an.Snapshot();
  EXPECT_EQ(f.inputs.size(), 3u);
}

// Two files followed in turns: each one's lines, bytes and line numbers count toward it.
TEST_F(LogFollowerTest, SeveralFilesKeepTheirOwnCounts) {
  const std::string other = dir_ + "/ray.log";
  std::string a, b;
  for (int i = 0; i < 5; ++i) a += StatsLine(i);
  b = "(pid=4163, ip=10.0.0.3) ERROR 06-25 10:00:02 [worker.py:1] boom\nnot a log line\n";
  Append(a);
  std::ofstream(other, std::ios::binary) << b;
  LogAnalyzer an;
  auto fa = LogFollower::Open(path_, &an);
  auto fb = LogFollower::Open(other, &an);
  ASSERT_TRUE(fa.ok() && fb.ok());
  ASSERT_TRUE((*fa)->Poll().ok());
  ASSERT_TRUE((*fb)->Poll().ok());
  (*fa)->Finish();
  (*fb)->Finish();
  LogFacts f = an.Snapshot();
  ASSERT_EQ(f.inputs.size(), 2u);
  EXPECT_EQ(f.inputs[0].path, path_);
  EXPECT_EQ(f.inputs[0].lines, 5u);
  EXPECT_EQ(f.inputs[0].bytes, a.size());
  EXPECT_EQ(f.inputs[1].lines, 2u);
  EXPECT_EQ(f.inputs[1].bytes, b.size());
  ASSERT_FALSE(f.unknown_examples.empty());
  EXPECT_EQ(f.unknown_examples[0].rfind(other + ":2: ", 0), 0u) << f.unknown_examples[0];
}

TEST_F(LogFollowerTest, CompressedOrMissingFilesAreErrors) {
  LogAnalyzer an;
  auto missing = LogFollower::Open(dir_ + "/nope.log", &an);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), dir_ + "/nope.log: No such file or directory");
  Append(std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8));
  auto gz = LogFollower::Open(path_, &an);
  ASSERT_FALSE(gz.ok());
  EXPECT_EQ(gz.status().message(), path_ + ": --follow needs an uncompressed file");
}

}  // namespace
}  // namespace latdoc::logs
