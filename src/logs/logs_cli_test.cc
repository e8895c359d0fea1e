// End-to-end tests of `latdoc logs` (the built binary): golden outputs for every excerpt in
// tests/data/logs, stdin, gzip, bad input, and --follow on a file this test appends to.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using ::testing::HasSubstr;

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class LogsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(chdir(LATDOC_SOURCE_DIR), 0);   // golden outputs name inputs relative to the repo
    char tmpl[] = "/tmp/latdoc_logs_cli_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `sh -c cmd`; stdout and stderr go to files in dir_. Returns the exit code.
  int Run(const std::string& args) {
    std::string cmd = std::string(LATDOC_BINARY) + " " + args + " >" + dir_ + "/out 2>" + dir_ +
                      "/err";
    int st = std::system(cmd.c_str());
    out_ = Slurp(dir_ + "/out");
    err_ = Slurp(dir_ + "/err");
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  std::string dir_, out_, err_;
};

struct Golden {
  const char* name;
  int exit_code;
};

// The terminal summary and the JSON of each excerpt equal the golden files
// (tools/regen_logs_golden.sh writes them).
TEST_F(LogsCliTest, GoldenOutputs) {
  const Golden kCases[] = {{"vllm_v1_plain", 1},       {"vllm_v1_apiserver_color", 1},
                           {"vllm_v0", 1},             {"vllm_journal", 0},
                           {"llamacpp_server", 0},     {"bad_input", 0}};
  for (const Golden& g : kCases) {
    std::string base = std::string("tests/data/logs/") + g.name;
    int rc = Run("logs " + base + ".log --no-color --json " + dir_ + "/got.json");
    EXPECT_EQ(rc, g.exit_code) << g.name << "\n" << err_;
    EXPECT_EQ(out_, Slurp(base + ".golden.txt")) << g.name;
    auto got = nlohmann::json::parse(Slurp(dir_ + "/got.json"), nullptr, false);
    auto want = nlohmann::json::parse(Slurp(base + ".golden.json"), nullptr, false);
    EXPECT_EQ(got, want) << g.name;
  }
}

TEST_F(LogsCliTest, StdinAndGzipGiveTheSameFacts) {
  const std::string log = "tests/data/logs/vllm_v1_plain.log";
  ASSERT_EQ(Run("logs " + log + " --json " + dir_ + "/a.json"), 1);
  std::string data = Slurp(log);
  gzFile gz = gzopen((dir_ + "/v.log.gz").c_str(), "wb");
  gzwrite(gz, data.data(), static_cast<unsigned>(data.size()));
  gzclose(gz);
  ASSERT_EQ(Run("logs " + dir_ + "/v.log.gz --json " + dir_ + "/b.json"), 1) << err_;
  ASSERT_EQ(Run("logs - --json " + dir_ + "/c.json < " + log), 1) << err_;
  EXPECT_THAT(out_, HasSubstr("Input: - (32.5 KiB, 148 lines)"));
  // The startup line's place ("path:line") names the input as given.
  auto parse = [&](const std::string& file, const std::string& input_name) {
    std::string text = Slurp(file);
    for (size_t at; (at = text.find(input_name + ":")) != std::string::npos;) {
      text.replace(at, input_name.size(), "-");
    }
    return nlohmann::json::parse(text);
  };
  auto a = parse(dir_ + "/a.json", log);
  auto b = parse(dir_ + "/b.json", dir_ + "/v.log.gz");
  auto c = nlohmann::json::parse(Slurp(dir_ + "/c.json"));
  EXPECT_EQ(c["facts"]["vllm_server"]["args_at"], "-:2");
  EXPECT_EQ(b["facts"]["inputs"][0]["compression"], "gzip");
  for (auto* j : {&a, &b, &c}) (*j)["facts"].erase("inputs");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_EQ(a["schema"], "latdoc.logs/1");
  EXPECT_EQ(a["facts"]["schema"], "latdoc.logs.facts/1");
}

TEST_F(LogsCliTest, BadInputExitsTwoWithAMessageAndNoOutputFile) {
  {
    std::ofstream f(dir_ + "/core.bin", std::ios::binary);
    for (int i = 0; i < 4096; ++i) f.put(static_cast<char>((i * 7919) % 256));
  }
  EXPECT_EQ(Run("logs " + dir_ + "/core.bin --json " + dir_ + "/x.json"), 2);
  EXPECT_THAT(err_, HasSubstr("latdoc logs: " + dir_ +
                              "/core.bin: byte 0: binary data, not a text log"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/x.json"));
  EXPECT_EQ(Run("logs " + dir_ + "/missing.log"), 2);
  EXPECT_EQ(err_, "latdoc logs: " + dir_ + "/missing.log: No such file or directory\n");
  EXPECT_EQ(Run("logs"), 2);
  EXPECT_EQ(Run("logs - --follow"), 2);
  EXPECT_THAT(err_, HasSubstr("--follow reads files"));
}

// --follow on a file that this test appends to while latdoc runs; SIGINT prints the summary.
TEST_F(LogsCliTest, FollowPrintsNewLinesThenTheSummaryOnSigint) {
  const std::string log = dir_ + "/live.log";
  auto stats = [](int sec, int waiting) {
    return "INFO 06-25 10:00:" + std::string(sec < 10 ? "0" : "") + std::to_string(sec) +
           " [loggers.py:123] Engine 000: Avg prompt throughput: 100.0 tokens/s, Avg generation "
           "throughput: 50.0 tokens/s, Running: 4 reqs, Waiting: " +
           std::to_string(waiting) + " reqs, GPU KV cache usage: 12.0%, Prefix cache hit rate: 0.0%\n";
  };
  std::ofstream(log) << stats(0, 0);
  std::string out_path = dir_ + "/follow.out";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(LATDOC_BINARY, LATDOC_BINARY, "logs", log.c_str(), "--follow", "--poll-ms", "20",
          "--no-color", "--json", (dir_ + "/f.json").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto wait_for = [&](const std::string& needle) {
    for (int i = 0; i < 500; ++i) {
      if (Slurp(out_path).find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  EXPECT_TRUE(wait_for("following 1 file(s) from line 1"));
  {
    std::ofstream f(log, std::ios::app);
    f << stats(10, 3);
    f << "WARNING 06-25 10:00:11 [x.py:1] slow down 12\n";
    f << stats(20, 0).substr(0, 40);   // half a line: must wait for the rest
  }
  EXPECT_TRUE(wait_for("06-25 10:00:10"));
  EXPECT_TRUE(wait_for("WARNING 06-25 10:00:11  slow down <*>"));
  EXPECT_EQ(Slurp(out_path).find("06-25 10:00:20"), std::string::npos);
  {
    std::ofstream f(log, std::ios::app);
    f << stats(20, 0).substr(40);
  }
  EXPECT_TRUE(wait_for("06-25 10:00:20"));
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 1);   // waiting in 1 of 2 intervals: logs.queueing fails
  std::string out = Slurp(out_path);
  EXPECT_THAT(out, HasSubstr("id: logs.queueing"));
  EXPECT_THAT(out, HasSubstr("Stats series (engine 0, vLLM V1, 3 lines"));
  EXPECT_THAT(out, HasSubstr("Findings"));
  auto j = nlohmann::json::parse(Slurp(dir_ + "/f.json"));
  EXPECT_EQ(j["facts"]["engines"][0]["stats_lines"], 3);
  EXPECT_EQ(j["facts"]["engines"][0]["max_waiting"], 3);
}

}  // namespace
