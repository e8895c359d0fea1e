#include "loadgen/merge.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "loadgen/shard.h"
#include "stats/sample_summary.h"

namespace latdoc::loadgen {
namespace {

using nlohmann::ordered_json;

// An ok request due at `due_ns`, first token after `ttft_ns`, then `tokens - 1` tokens `itl_ns`
// apart, one per chunk.
RequestRecord Ok(int64_t due_ns, int64_t ttft_ns, int64_t itl_ns, int tokens) {
  RequestRecord r;
  r.outcome = Outcome::kOk;
  r.http_status = 200;
  r.scheduled_ns = due_ns;
  r.sent_ns = due_ns;
  for (int k = 0; k < tokens; ++k) r.chunks.emplace_back(due_ns + ttft_ns + k * itl_ns, 1);
  r.first_token_ns = r.chunks.front().first;
  r.last_token_ns = r.chunks.back().first;
  r.end_ns = r.last_token_ns + 10;
  r.prompt_tokens = 100;
  r.output_tokens = tokens;
  r.requested_output_tokens = tokens;
  r.method = TokenMethod::kUsagePerChunk;
  return r;
}

// A shard's result as bench --shard writes it, with its records on a monotonic clock that
// starts at 0, and `mono_to_unix_ns` its offset to the wall clock.
ShardResult MakeShard(int index, int count, std::vector<RequestRecord> records, int64_t mono_to_unix_ns,
                      int64_t dur_ns, int requests_finished = 0) {
  BenchRun run;
  run.model = "m";
  run.records = std::move(records);
  run.start_ns = 0;
  run.end_ns = dur_ns;
  BenchOptions o;
  o.url = "http://10.0.0.5:8000";
  o.concurrency = 2;
  ShardResult r;
  r.path = "shard-" + std::to_string(index) + ".json";
  r.json = SummarizeRun(run, o, {}).json;
  r.json["server_metrics"] = {{"metrics_available", true}, {"requests_finished", requests_finished}};
  r.json["shard"] = {
      {"schema", kShardSchema}, {"index", index}, {"count", count},
      {"started_unix_ns", mono_to_unix_ns}, {"ended_unix_ns", mono_to_unix_ns + dur_ns},
      {"target", {{"url", "http://10.0.0.5:8000"}, {"endpoint", "completions"}, {"model", "m"}}},
      {"load", {{"mode", "closed"}, {"concurrency", 2 * count}, {"num_prompts", 30}, {"seed", 0}}},
      {"judge", {{"slo", ""}, {"max_error_rate", 0.5}}}};
  r.json["requests"] = RecordsJson(run, mono_to_unix_ns);
  return r;
}

constexpr int64_t kT0 = 1'764'903'600LL * kNsPerSec;

std::vector<ShardResult> ThreeShards() {
  // Three shards with different latency and a late start of 200 ms for shard 2; shard 1 has a
  // failure.
  std::vector<RequestRecord> a, b, c;
  for (int i = 0; i < 10; ++i) {
    a.push_back(Ok(i * 100 * kNsPerMs, (10 + i) * kNsPerMs, 2 * kNsPerMs, 5));
    b.push_back(Ok(i * 100 * kNsPerMs, (50 + 3 * i) * kNsPerMs, 7 * kNsPerMs, 4));
    c.push_back(Ok(i * 100 * kNsPerMs, (200 - i) * kNsPerMs, 1 * kNsPerMs + i, 6));
  }
  b[3].outcome = Outcome::kReset;
  b[3].error = "Connection reset by peer";
  return {MakeShard(0, 3, a, kT0, 1200 * kNsPerMs, 29), MakeShard(1, 3, b, kT0 + 5 * kNsPerMs, 1100 * kNsPerMs, 28),
          MakeShard(2, 3, c, kT0 + 200 * kNsPerMs, 1300 * kNsPerMs, 27)};
}

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return stats::PercentileOfSorted(v, p);
}

// The merged statistics are those of the union of the shards' records, computed here from the
// files' records alone; the counts are summed; the window is the union of the runs.
TEST(MergeTest, PercentilesAreThoseOfTheUnionOfTheRecords) {
  const auto shards = ThreeShards();
  auto m = MergeShards({shards[2], shards[0], shards[1]});  // any order
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ordered_json& j = m->summary.json;
  std::vector<double> ttft, itl;
  for (const ShardResult& s : shards) {
    for (const auto& r : s.json["requests"]) {
      if (r["outcome"] != "ok") continue;
      ttft.push_back(double(r["first_token_ns"].get<int64_t>()) / 1e6);
      const auto& ch = r["chunks"];
      for (size_t k = 1; k < ch.size(); ++k)
        itl.push_back(double(ch[k][0].get<int64_t>() - ch[k - 1][0].get<int64_t>()) / 1e6);
    }
  }
  ASSERT_EQ(ttft.size(), 29u);
  EXPECT_EQ(j["schema"], "latdoc.bench/1");
  EXPECT_EQ(j["completed"], 29);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_EQ(j["failures"]["reset"], 1);
  EXPECT_EQ(j["num_prompts"], 30);
  EXPECT_EQ(j["total_output_tokens"], 10 * 5 + 9 * 4 + 10 * 6);
  EXPECT_EQ(j["max_concurrency"], 6);  // the whole load's
  for (double p : {50.0, 90.0, 99.0}) {
    const std::string w = p == 50 ? "median" : "p" + stats::PercentileWord(p);
    EXPECT_DOUBLE_EQ(j[w + "_ttft_ms"].get<double>(), Pct(ttft, p)) << w;
    EXPECT_DOUBLE_EQ(j[w + "_itl_ms"].get<double>(), Pct(itl, p)) << w;
  }
  // Window: from shard 0's start to shard 2's end (200 ms + 1300 ms).
  EXPECT_DOUBLE_EQ(j["duration"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["request_throughput"].get<double>(), 29 / 1.5);
  EXPECT_DOUBLE_EQ(j["merged"]["window"]["overlap_s"].get<double>(), 0.905);  // 0.2 .. 1.105
  EXPECT_DOUBLE_EQ(j["merged"]["window"]["start_spread_s"].get<double>(), 0.2);
  EXPECT_EQ(j["merged"]["window"]["start"], "2025-12-05T03:00:00Z");
  EXPECT_EQ(j["merged"]["shards"].size(), 3u);
  EXPECT_FALSE(j.contains("start_mono_ns"));
  // The server's figures once: shard 0's, not a sum.
  EXPECT_EQ(j["server_metrics"]["requests_finished"], 29);
  EXPECT_EQ(j["merged"]["server_metrics_from_shard"], 0);
  // Judged as the shards were: 1 failure of 30 is within their --max-error-rate 50%.
  EXPECT_TRUE(m->summary.problems.empty());
  EXPECT_NE(m->summary.text.find("Merged: 3 shards; window 1.50 s, overlap 0.91 s"), std::string::npos)
      << m->summary.text;
  ASSERT_EQ(m->notes.size(), 1u);  // 0.905 of 1.5 s overlapped
  EXPECT_EQ(m->notes[0], "the shards overlapped for 0.91 s of the 1.50 s window: the load was not "
                         "the whole load all along (throughput is over the whole window)");
}

// Each refusal names the file and the field.
TEST(MergeTest, RefusesShardsOfAnotherLoadTargetSchemaOrLayout) {
  auto refused = [](std::vector<ShardResult> s) {
    auto m = MergeShards(s);
    EXPECT_FALSE(m.ok());
    return m.ok() ? std::string() : m.status().message();
  };
  auto s = ThreeShards();
  s[1].json["shard"]["target"]["url"] = "http://10.0.0.6:8000";
  EXPECT_EQ(refused(s), "shard-1.json: shard.target.url \"http://10.0.0.6:8000\" differs from "
                        "shard-0.json's \"http://10.0.0.5:8000\": the shards ran against different targets");
  s = ThreeShards();
  s[2].json["shard"]["load"]["concurrency"] = 9;
  EXPECT_EQ(refused(s), "shard-2.json: shard.load.concurrency 9 differs from shard-0.json's 6: the "
                        "shards ran different loads");
  s = ThreeShards();
  s[2].json["shard"]["load"].erase("seed");
  EXPECT_EQ(refused(s), "shard-2.json: shard.load.seed null differs from shard-0.json's 0: the "
                        "shards ran different loads");
  s = ThreeShards();
  s[1].json["schema"] = "latdoc.bench/2";
  EXPECT_EQ(refused(s), "shard-1.json: schema \"latdoc.bench/2\": expected \"latdoc.bench/1\" (a "
                        "result of latdoc bench --shard)");
  s = ThreeShards();
  s[1].json["shard"]["schema"] = "latdoc.shard/9";
  EXPECT_EQ(refused(s), "shard-1.json: shard.schema \"latdoc.shard/9\": expected \"latdoc.shard/1\"");
  s = ThreeShards();
  s[0].json.erase("shard");
  EXPECT_EQ(refused(s), "shard-0.json: no \"shard\" block: not a result of latdoc bench --shard");
  s = ThreeShards();
  s[0].json.erase("shard");
  s[0].json["error"] = "http://10.0.0.5:8000: Connection refused";
  EXPECT_EQ(refused(s), "shard-0.json: no \"shard\" block: that bench sent no request "
                        "(http://10.0.0.5:8000: Connection refused)");
  s = ThreeShards();
  s[2].json["shard"]["index"] = 1;
  s[2].path = "again.json";
  EXPECT_EQ(refused(s), "again.json: shard.index 1 again (also in shard-1.json)");
  s = ThreeShards();
  EXPECT_EQ(refused({s[0], s[2]}), "shard 1 of 3 missing: give every shard's result");
  s = ThreeShards();
  s[1].json["shard"]["count"] = 4;
  EXPECT_EQ(refused(s), "shard-1.json: shard.count 4 differs from shard-0.json's 3: not shards of one load");
  s = ThreeShards();
  s[1].json.erase("requests");
  EXPECT_EQ(refused(s), "shard-1.json: no per-request records (\"requests\"): write shards with "
                        "latdoc bench --shard");
}

}  // namespace
}  // namespace latdoc::loadgen
