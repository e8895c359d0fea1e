// End-to-end: the shard layout of deploy/k8s/bench-job as N local processes. Three `latdoc bench
// --shard I/3` processes against one `latdoc sim`, started together with one --start-at, then
// `latdoc merge`: its percentiles are those of the union of the shards' per-request records
// (computed here, from the files), its totals what the simulator served, and its prompts those
// of the unsharded run. Then the refusals of merge, each naming the file and the field.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/file_util.h"
#include "stats/sample_summary.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using nlohmann::json;

const std::vector<std::string> kFastSim = {
    "--sim-step-base-ms", "4", "--sim-prefill-token-us", "20", "--sim-decode-seq-us", "50",
    "--sim-context-token-ns", "0", "--log-file", "/dev/null", "--disable-log-stats"};

// The load every shard is given whole; --shard takes its part.
std::vector<std::string> Load(const std::string& url) {
  return {"bench",         "--url",         url,   "--max-concurrency", "6",   "--num-prompts", "31",
          "--input-len",   "24",            "--output-len", "8",       "--range-ratio", "0.5",
          "--token-ids",   "--seed",        "5",   "--quiet"};
}

json ReadJson(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    ADD_FAILURE() << path << ": " << text.status().message();
    return json();
  }
  return json::parse(*text);
}

void WriteJson(const std::string& path, const json& j) {
  std::ofstream(path) << j.dump();
}

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return stats::PercentileOfSorted(v, p);
}

class ShardE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("shards");
    sim_ = new SimProcess(kFastSim);
    // One instant for all three, a few seconds ahead: each process sleeps until it. A
    // sanitizer build starts its processes several times slower.
#ifdef LATDOC_SANITIZED
    start_at_ns_ = WallNowNs() + 10 * kNsPerSec;
#else
    start_at_ns_ = WallNowNs() + 3 * kNsPerSec;
#endif
    const std::string start_at = std::to_string(start_at_ns_ / kNsPerSec) + "." +
                                 NineDigits(start_at_ns_ % kNsPerSec);
    std::vector<std::unique_ptr<Process>> shards;
    for (int i = 0; i < 3; ++i) {
      std::vector<std::string> argv = {LatdocBinary()};
      for (const std::string& a : Load(sim_->url())) argv.push_back(a);
      for (const std::string& a : {std::string("--shard"), std::to_string(i) + "/3", std::string("--start-at"),
                                   start_at, std::string("--json"), Shard(i)})
        argv.push_back(a);
      shards.push_back(std::make_unique<Process>(argv, *dir_ / ("err" + std::to_string(i))));
    }
    for (int i = 0; i < 3; ++i) exit_codes_[i] = shards[i]->Wait(120000);
  }
  static void TearDownTestSuite() {
    delete sim_;
    delete dir_;
  }
  static std::string NineDigits(int64_t ns) {
    std::string s = std::to_string(ns);
    return std::string(9 - s.size(), '0') + s;
  }
  static std::string Shard(int i) { return *dir_ / ("shard" + std::to_string(i) + ".json"); }

  static TempDir* dir_;
  static SimProcess* sim_;
  static int64_t start_at_ns_;
  static int exit_codes_[3];
};
TempDir* ShardE2eTest::dir_ = nullptr;
SimProcess* ShardE2eTest::sim_ = nullptr;
int64_t ShardE2eTest::start_at_ns_ = 0;
int ShardE2eTest::exit_codes_[3] = {-1, -1, -1};

TEST_F(ShardE2eTest, MergedPercentilesAreThoseOfTheUnionAndTotalsWhatTheServerServed) {
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(exit_codes_[i], 0) << "shard " << i << ": " << ReadFileOrEmpty(*dir_ / ("err" + std::to_string(i)));
  const std::string merged_path = *dir_ / "merged.json";
  RunResult r = RunLatdoc({"merge", Shard(2), Shard(0), Shard(1), "--json", merged_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Merged: 3 shards; window "), std::string::npos) << r.out;
  const json m = ReadJson(merged_path);

  // The shards' parts: 31 prompts as 11 + 10 + 10, a concurrency of 6 as 2 each, and every
  // shard started at (not before) the common instant.
  std::vector<double> ttft, tpot, itl, e2el;
  int64_t sent = 0;
  for (int i = 0; i < 3; ++i) {
    const json s = ReadJson(Shard(i));
    EXPECT_EQ(s["shard"]["part"]["num_prompts"], i == 0 ? 11 : 10);
    EXPECT_EQ(s["shard"]["part"]["concurrency"], 2);
    EXPECT_EQ(s["shard"]["part"]["first_prompt"], i == 0 ? 0 : i == 1 ? 11 : 21);
    EXPECT_GE(s["shard"]["started_unix_ns"].get<int64_t>(), start_at_ns_ - kNsPerMs) << "shard " << i;
    for (const json& q : s["requests"]) {
      ++sent;
      ASSERT_EQ(q["outcome"], "ok");
      const int64_t first = q["first_token_ns"], last = q["last_token_ns"];
      ttft.push_back(double(first) / 1e6);
      e2el.push_back(double(last) / 1e6);
      if (q["output_tokens"].get<int>() > 1) tpot.push_back(double((last - first) / (q["output_tokens"].get<int>() - 1)) / 1e6);
      const json& ch = q["chunks"];
      for (size_t k = 1; k < ch.size(); ++k) {
        const int64_t gap = ch[k][0].get<int64_t>() - ch[k - 1][0].get<int64_t>();
        const int n = std::max(1, ch[k][1].get<int>());
        for (int t = 0; t < n; ++t) itl.push_back(double(gap / n) / 1e6);
      }
    }
  }
  ASSERT_EQ(sent, 31);
  for (auto [metric, values] : {std::pair{"ttft", &ttft}, std::pair{"tpot", &tpot}, std::pair{"itl", &itl},
                                std::pair{"e2el", &e2el}}) {
    for (double p : {50.0, 90.0, 95.0, 99.0, 99.9}) {
      const std::string key = (p == 50 ? std::string("median") : "p" + stats::PercentileWord(p)) + "_" + metric + "_ms";
      ASSERT_TRUE(m[key].is_number()) << key;
      EXPECT_NEAR(m[key].get<double>(), Pct(*values, p), 1e-9) << key;
    }
  }
  // What the simulator served, by its own counters (a fresh simulator: no other requests).
  EXPECT_EQ(m["completed"], 31);
  EXPECT_EQ(m["failed"], 0);
  EXPECT_EQ(m["completed"].get<double>(), sim_->Metric("vllm:request_success_total"));
  EXPECT_EQ(m["total_input_tokens"].get<double>(), sim_->Metric("vllm:prompt_tokens_total"));
  EXPECT_EQ(m["total_output_tokens"].get<double>(), sim_->Metric("vllm:generation_tokens_total"));
  EXPECT_EQ(m["max_concurrency"], 6);
  const json& w = m["merged"]["window"];
  EXPECT_NEAR(m["duration"].get<double>(), w["duration_s"].get<double>(), 1e-9);
  EXPECT_NEAR(m["request_throughput"].get<double>(), 31 / w["duration_s"].get<double>(), 1e-9);
  EXPECT_GE(w["start_unix_ns"].get<int64_t>(), start_at_ns_ - kNsPerMs);

  // The shards' prompts together are the unsharded run's: the same lengths (drawn with a
  // --range-ratio, so a wrong slice would give other totals).
  const std::string whole_path = *dir_ / "whole.json";
  std::vector<std::string> whole = Load(sim_->url());
  whole.push_back("--json");
  whole.push_back(whole_path);
  ASSERT_EQ(RunLatdoc(whole).exit_code, 0);
  const json u = ReadJson(whole_path);
  EXPECT_EQ(u["total_input_tokens"], m["total_input_tokens"]);
  EXPECT_EQ(u["total_output_tokens"], m["total_output_tokens"]);
}

// merge refuses what is not one load's shards, with exit 2, naming the file and the field.
TEST_F(ShardE2eTest, MergeRefusesMixedShardsNamingTheFileAndField) {
  for (int i = 0; i < 3; ++i) ASSERT_EQ(exit_codes_[i], 0);
  auto refused = [](const std::vector<std::string>& files, const std::string& message) {
    std::vector<std::string> args = {"merge"};
    args.insert(args.end(), files.begin(), files.end());
    RunResult r = RunLatdoc(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "latdoc merge: " + message + "\n");
    EXPECT_EQ(r.out, "");
  };
  json s1 = ReadJson(Shard(1));

  json other_target = s1;
  other_target["shard"]["target"]["url"] = "http://10.9.9.9:8000";
  const std::string target_path = *dir_ / "other-target.json";
  WriteJson(target_path, other_target);
  refused({Shard(0), target_path, Shard(2)},
          target_path + ": shard.target.url \"http://10.9.9.9:8000\" differs from " + Shard(0) + "'s \"" +
              sim_->url() + "\": the shards ran against different targets");

  json other_schema = s1;
  other_schema["schema"] = "latdoc.bench/2";
  const std::string schema_path = *dir_ / "other-schema.json";
  WriteJson(schema_path, other_schema);
  refused({Shard(0), schema_path, Shard(2)},
          schema_path + ": schema \"latdoc.bench/2\": expected \"latdoc.bench/1\" (a result of latdoc bench --shard)");

  const std::string dup_path = *dir_ / "dup.json";
  WriteJson(dup_path, s1);
  refused({Shard(0), Shard(1), dup_path, Shard(2)}, dup_path + ": shard.index 1 again (also in " + Shard(1) + ")");
  refused({Shard(0), Shard(2)}, "shard 1 of 3 missing: give every shard's result");

  // Another load, run for real: shard 1 of a concurrency of 9.
  const std::string load_path = *dir_ / "other-load.json";
  std::vector<std::string> args = Load(sim_->url());
  args[4] = "9";  // --max-concurrency
  for (const std::string& a : {std::string("--shard"), std::string("1/3"), std::string("--json"), load_path})
    args.push_back(a);
  ASSERT_EQ(RunLatdoc(args).exit_code, 0);
  refused({Shard(0), load_path, Shard(2)},
          load_path + ": shard.load.concurrency 9 differs from " + Shard(0) + "'s 6: the shards ran different loads");
}

// --shard and --start-at say what is wrong before any load is sent.
TEST(ShardFlagsE2eTest, BadShardFlagsAreRefusedBeforeAnyLoad) {
  SimProcess sim(kFastSim);
  auto refused = [&](std::vector<std::string> extra, const std::string& message) {
    std::vector<std::string> args = Load(sim.url());
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = RunLatdoc(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "latdoc bench: " + message + "\n");
  };
  refused({"--shard", "3/3"}, "--shard '3/3': the index must be below the count (0-based: 0/3, ..., 2/3)");
  refused({"--shard", "7/8"}, "--shard 7/8: a concurrency of 6 leaves this shard none: give at least 8");
  refused({"--shard", "1/2"}, "--shard 1/2: give --json FILE (or --save-result): the shard's requests "
                              "go there, for latdoc merge");
  refused({"--start-at", "yesterday"},
          "--start-at 'yesterday': expected an RFC 3339 time (2026-12-05T03:00:00Z), Unix seconds, or "
          "now+DURATION (now+10s)");
  EXPECT_EQ(sim.Metric("vllm:request_success_total"), 0);
}

}  // namespace
}  // namespace latdoc::testing

namespace latdoc::testing {
namespace {

// The wait for --start-at is where a shard spends most of its life on Kubernetes before the
// load: SIGTERM there ends it as it would end the run (128 + 15), with no result file.
TEST(ShardFlagsE2eTest, ASignalDuringTheWaitEndsItWithNoResult) {
  SimProcess sim(kFastSim);
  TempDir dir("shard-wait");
  std::vector<std::string> argv = {LatdocBinary()};
  for (const std::string& a : Load(sim.url()))
    if (a != "--quiet") argv.push_back(a);
  for (const std::string& a : {std::string("--shard"), std::string("0/2"), std::string("--start-at"),
                               std::string("now+60s"), std::string("--json"), dir / "shard.json"})
    argv.push_back(a);
  Process p(argv, dir / "err");
  // Until it says it waits (a sanitizer build starts slowly).
  bool waiting = false;
  for (int i = 0; i < 600 && !waiting; ++i) {
    waiting = ReadFileOrEmpty(dir / "err").find("latdoc bench: shard 0/2: starting at ") != std::string::npos;
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(waiting) << ReadFileOrEmpty(dir / "err");
  EXPECT_EQ(p.Signal(SIGTERM), 128 + SIGTERM);
  EXPECT_EQ(ReadFileOrEmpty(dir / "shard.json"), "");
  EXPECT_EQ(sim.Metric("vllm:request_success_total"), 0);
}

}  // namespace
}  // namespace latdoc::testing

namespace latdoc::testing {
namespace {

// A shard that could not reach the server: when it sent its requests (--model given, so no
// /v1/models first), its file is a shard whose requests all failed, and the merge counts them
// (exit 1); when it sent nothing, the merge says why that file is no shard (exit 2).
TEST(ShardFlagsE2eTest, AnUnreachableShardIsMergedAsFailuresOrNamed) {
  TempDir dir("shard-down");
  const std::string url = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  auto shard = [&](std::vector<std::string> extra, const std::string& path) {
    std::vector<std::string> args = {"bench", "--url", url, "--num-prompts", "2", "--concurrency", "1",
                                     "--input-len", "8", "--output-len", "4", "--quiet", "--shard", "0/1",
                                     "--json", path};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunLatdoc(args);
  };
  RunResult sent = shard({"--model", "m"}, dir / "sent.json");
  EXPECT_EQ(sent.exit_code, 3) << sent.err;
  RunResult m = RunLatdoc({"merge", dir / "sent.json", "--quiet"});
  EXPECT_EQ(m.exit_code, 1) << m.err;
  EXPECT_NE(m.err.find("latdoc merge: 2 of 2 requests failed (2 connect)"), std::string::npos) << m.err;

  // --save-result's own name says which shard it is.
  const std::string saved_dir = dir / "saved";
  RunResult saved = RunLatdoc({"bench", "--url", url, "--model", "m", "--num-prompts", "2", "-c", "2",
                               "--quiet", "--shard", "1/2", "--save-result", "--result-dir", saved_dir});
  EXPECT_EQ(saved.exit_code, 3) << saved.err;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(saved_dir)) names.push_back(e.path().filename());
  ASSERT_EQ(names.size(), 1u);
  EXPECT_TRUE(names[0].starts_with("openai-inf") && names[0].ends_with("-shard1of2.json")) << names[0];

  RunResult nothing = shard({}, dir / "nothing.json");
  EXPECT_EQ(nothing.exit_code, 3) << nothing.err;
  m = RunLatdoc({"merge", dir / "nothing.json"});
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("latdoc merge: " + (dir / "nothing.json") + ": no \"shard\" block: that bench sent no "
                       "request (" + url + ": "), std::string::npos) << m.err;
}

}  // namespace
}  // namespace latdoc::testing
