#include "host/server_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "host/test_tree.h"

namespace latdoc::host {
namespace {

using V = std::vector<std::string>;

TEST(ServerProcessTest, KindFromCommandLine) {
  EXPECT_EQ(ServerKindFromArgv(V{"/usr/bin/python3", "/usr/local/bin/vllm", "serve", "m"}), "vllm");
  EXPECT_EQ(ServerKindFromArgv(V{"vllm", "serve", "m"}), "vllm");
  EXPECT_EQ(ServerKindFromArgv(V{"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"}),
            "vllm");
  EXPECT_EQ(ServerKindFromArgv(V{"/opt/llama.cpp/bin/llama-server", "-m", "x.gguf"}), "llama.cpp");
  EXPECT_EQ(ServerKindFromArgv(V{"python", "-m", "sglang.launch_server", "--model-path", "m"}), "sglang");
  EXPECT_EQ(ServerKindFromArgv(V{"text-generation-launcher", "--model-id", "m"}), "tgi");
  EXPECT_EQ(ServerKindFromArgv(V{"VLLM::EngineCore"}), std::nullopt);
  EXPECT_EQ(ServerKindFromArgv(V{"vllm", "bench", "serve"}), std::nullopt);
  EXPECT_EQ(ServerKindFromArgv(V{"grep", "vllm serve"}), std::nullopt);
  EXPECT_EQ(ServerKindFromArgv(V{}), std::nullopt);
}

TEST(ServerProcessTest, RedactsApiKeyInBothForms) {
  EXPECT_EQ(RedactArgv(V{"vllm", "serve", "--api-key", "sk-1", "--api-key=sk-2", "--hf-token", "h",
                         "--api-keys-file", "f"}),
            (V{"vllm", "serve", "--api-key", "<redacted>", "--api-key=<redacted>", "--hf-token",
               "<redacted>", "--api-keys-file", "f"}));
  // Underscore spellings, several keys after one flag, and any option that names a secret.
  EXPECT_EQ(RedactArgv(V{"vllm", "serve", "m", "--api_key", "k1", "k2", "--port", "8000",
                         "--HF_TOKEN=t", "--ssl-password", "-x", "--admin-api-key", "a"}),
            (V{"vllm", "serve", "m", "--api_key", "<redacted>", "<redacted>", "--port", "8000",
               "--HF_TOKEN=<redacted>", "--ssl-password", "<redacted>", "--admin-api-key",
               "<redacted>"}));
  // Secrets inside other flags' values: a JSON config, a dotted key, "name=value" text.
  EXPECT_EQ(RedactArgv(V{"vllm", "serve", "m", "--kv-transfer-config",
                         R"({"kv_connector": "X", "extra": {"api_key": "sk-json"}})",
                         "--kv-transfer-config.extra.api_key+", "sk-dotted", "--env", "HF_TOKEN=hf-x"}),
            (V{"vllm", "serve", "m", "--kv-transfer-config",
               R"({"kv_connector":"X","extra":{"api_key":"<redacted>"}})",
               "--kv-transfer-config.extra.api_key+", "<redacted>", "--env", "HF_TOKEN=<redacted>"}));
  // A secret option where a value is due is read as that option too: the word after it is
  // its value (argparse would take "--api-key --api-key -x" as -x for the second).
  EXPECT_EQ(RedactArgv(V{"--api-key", "--api-key", "-x", "--port", "1"}),
            (V{"--api-key", "<redacted>", "<redacted>", "--port", "1"}));
  EXPECT_EQ(RedactArgv(V{"--token", "--api-key", "--port", "--model", "m"}),
            (V{"--token", "<redacted>", "<redacted>", "--model", "m"}));
  // A secret flag last has nothing to redact; the program name is never taken for a flag.
  EXPECT_EQ(RedactArgv(V{"vllm", "serve", "--api-key"}), (V{"vllm", "serve", "--api-key"}));
}

TEST(ServerProcessTest, EnvKeepsLintedNamesAndRedactsSecrets) {
  auto env = FilterEnv(V{"VLLM_LOGGING_LEVEL=DEBUG", "VLLM_API_KEY=sk", "HF_TOKEN=h", "PATH=/bin",
                         "HIP_VISIBLE_DEVICES=0,1", "NOEQUALS", "VLLM_DB_PASSWD=pw"});
  EXPECT_THAT(env, testing::UnorderedElementsAre(testing::Pair("VLLM_LOGGING_LEVEL", "DEBUG"),
                                                 testing::Pair("VLLM_API_KEY", "<redacted>"),
                                                 testing::Pair("VLLM_DB_PASSWD", "<redacted>"),
                                                 testing::Pair("HIP_VISIBLE_DEVICES", "0,1")));
}

TEST(ServerProcessTest, FindsTheServerInARecordedTree) {
  SysRoot fs("tests/data/host/mi300x_unhealthy_built/tree");
  auto s = FindServerProcess(fs, std::nullopt);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->pid, 4242);
  EXPECT_EQ(s->kind, "vllm");
  EXPECT_THAT(s->argv, testing::Contains("<redacted>"));
  EXPECT_THAT(s->argv, testing::Not(testing::Contains("sk-test-secret-1234")));
}

// Wrappers (`uv run`, `sudo -u`, `timeout`) match `vllm serve` too, at lower pids than the
// server they start; the server is the innermost match. A child forked without exec (older
// vLLM workers) carries its parent's very command line and is not the server either.
TEST(ServerProcessTest, PicksTheInnermostMatchNotTheWrapper) {
  struct Proc {
    int64_t pid;
    int64_t ppid;
    V argv;
  };
  const V serve = {"/srv/.venv/bin/python3", "/srv/.venv/bin/vllm", "serve", "m"};
  const V sudo = {"sudo", "-u", "svc", "vllm", "serve", "m"};
  const struct {
    std::vector<Proc> procs;
    int64_t want;
  } cases[] = {
      {{{100, 1, {"uv", "run", "vllm", "serve", "m"}}, {120, 100, serve}}, 120},
      // sudo forks a monitor (same command line) that starts the command.
      {{{200, 1, sudo}, {201, 200, sudo}, {202, 201, {"vllm", "serve", "m"}}}, 202},
      {{{300, 1, {"timeout", "3600", "vllm", "serve", "m"}}, {301, 300, serve}, {302, 301, serve}},
       301},
  };
  for (const auto& c : cases) {
    TestTree t("tests/data/host/h200_snapshot/tree");
    for (const auto& p : c.procs) {
      std::string cmdline;
      for (const auto& w : p.argv) cmdline += w + std::string(1, '\0');
      const std::string dir = "/proc/" + std::to_string(p.pid);
      t.Write(dir + "/cmdline", cmdline);
      t.Write(dir + "/status", "Name:\tx\nPid:\t" + std::to_string(p.pid) +
                                   "\nPPid:\t" + std::to_string(p.ppid) + "\n");
    }
    auto s = FindServerProcess(SysRoot(t.root()), std::nullopt);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->pid, c.want) << c.procs[0].argv[0];
  }
}

TEST(ServerProcessTest, NoServerAndBadPidAreErrorsWithReasons) {
  SysRoot fs("tests/data/host/h200_snapshot/tree");
  auto none = FindServerProcess(fs, std::nullopt);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "no server process found (looked for `vllm serve`, `python -m vllm.entrypoints...`, "
            "llama-server, sglang, text-generation-launcher); give --pid PID");
  SysRoot fs2("tests/data/host/mi300x_built/tree");
  auto pid1 = FindServerProcess(fs2, 1);
  ASSERT_TRUE(pid1.ok());
  EXPECT_EQ(pid1->kind, "unknown");
  auto gone = FindServerProcess(fs2, 999);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().message(), "/proc/999/cmdline: No such file or directory");
}

}  // namespace
}  // namespace latdoc::host
