#include "loadgen/shard.h"

#include <gtest/gtest.h>

#include "base/clock.h"

namespace latdoc::loadgen {
namespace {

TEST(ShardTest, ParsesIndexOverCountFromZero) {
  auto s = ParseShard("2/3");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 3);
  EXPECT_EQ(ParseShard("3/3").status().message(),
            "--shard '3/3': the index must be below the count (0-based: 0/3, ..., 2/3)");
  EXPECT_EQ(ParseShard("1").status().message(),
            "--shard '1': expected I/N (the index from 0, then the count: 0/3)");
  EXPECT_EQ(ParseShard("0/0").status().message(), "--shard '0/0': the count must be 1 to 10000");
  EXPECT_FALSE(ParseShard("-1/3").ok());
  EXPECT_FALSE(ParseShard("a/3").ok());
}

// The shares of N shards add up to the whole, the remainder going to the lowest shards, and
// each offset is the sum of the shares below it.
TEST(ShardTest, SharesDealTheRemainderToTheLowestShards) {
  EXPECT_EQ(ShareOf(10, {0, 3}), 4);
  EXPECT_EQ(ShareOf(10, {1, 3}), 3);
  EXPECT_EQ(ShareOf(10, {2, 3}), 3);
  EXPECT_EQ(ShareOf(2, {2, 3}), 0);
  for (int64_t total : {0, 1, 7, 100, 101}) {
    for (int n : {1, 2, 3, 7}) {
      int64_t sum = 0;
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(OffsetOf(total, {i, n}), sum) << total << " " << i << "/" << n;
        sum += ShareOf(total, {i, n});
      }
      EXPECT_EQ(sum, total);
    }
  }
}

TEST(ShardTest, SeedsDifferByShardAndShardZeroKeepsTheSeed) {
  EXPECT_EQ(ShardSeed(42, {0, 3}), 42u);
  EXPECT_NE(ShardSeed(42, {1, 3}), ShardSeed(42, {2, 3}));
  EXPECT_NE(ShardSeed(42, {1, 3}), 42u);
  EXPECT_EQ(ShardSeed(42, {1, 3}), ShardSeed(42, {1, 5}));  // by index: deterministic
}

TEST(ShardTest, StartAtTakesRfc3339UnixSecondsAndNowPlus) {
  const int64_t t = 1764903600LL * kNsPerSec;  // 2025-12-05T03:00:00Z
  EXPECT_EQ(*ParseStartAt("2025-12-05T03:00:00Z", 0), t);
  EXPECT_EQ(*ParseStartAt("2025-12-05t03:00:00.25z", 0), t + 250 * kNsPerMs);
  EXPECT_EQ(*ParseStartAt("2025-12-05T04:30:00+01:30", 0), t);
  EXPECT_EQ(*ParseStartAt("2025-12-05T01:00:00-02:00", 0), t);
  EXPECT_EQ(*ParseStartAt("1764903600", 0), t);
  EXPECT_EQ(*ParseStartAt("1764903600.000000001", 0), t + 1);
  EXPECT_EQ(*ParseStartAt("now+10s", t), t + 10 * kNsPerSec);
  EXPECT_EQ(*ParseStartAt("now", t), t);
  EXPECT_EQ(ParseStartAt("tomorrow", 0).status().message(),
            "--start-at 'tomorrow': expected an RFC 3339 time (2026-12-05T03:00:00Z), Unix seconds, "
            "or now+DURATION (now+10s)");
  EXPECT_FALSE(ParseStartAt("2025-12-05T03:00:00", 0).ok());  // no zone: ambiguous
  EXPECT_FALSE(ParseStartAt("2025-13-05T03:00:00Z", 0).ok());
  EXPECT_FALSE(ParseStartAt("now-5s", 0).ok());
  EXPECT_FALSE(ParseStartAt("now+5parsecs", 0).ok());
  EXPECT_EQ(FormatRfc3339Utc(t), "2025-12-05T03:00:00Z");
  EXPECT_EQ(FormatRfc3339Utc(t + 250 * kNsPerMs), "2025-12-05T03:00:00.250Z");
}

// Records survive the file exactly: every time to the nanosecond, moved onto the wall clock.
TEST(ShardTest, RecordsRoundTripToTheNanosecond) {
  BenchRun run;
  RequestRecord ok;
  ok.outcome = Outcome::kOk;
  ok.http_status = 200;
  ok.scheduled_ns = 1000;
  ok.sent_ns = 1001;
  ok.first_token_ns = 5003;
  ok.last_token_ns = 9007;
  ok.end_ns = 9011;
  ok.prompt_tokens = 12;
  ok.output_tokens = 3;
  ok.requested_output_tokens = 3;
  ok.method = TokenMethod::kUsagePerChunk;
  ok.chunks = {{5003, 1}, {9007, 2}};
  RequestRecord failed;
  failed.outcome = Outcome::kReset;
  failed.error = "Connection reset by peer";
  failed.scheduled_ns = 2000;
  failed.sent_ns = 2000;
  run.records = {ok, failed};
  const int64_t offset = 1'700'000'000'000'000'000;
  auto back = RecordsFromJson(RecordsJson(run, offset), "a.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 2u);
  const RequestRecord& r = (*back)[0];
  EXPECT_EQ(r.outcome, Outcome::kOk);
  EXPECT_EQ(r.scheduled_ns, 1000 + offset);
  EXPECT_EQ(r.sent_ns, 1001 + offset);
  EXPECT_EQ(r.first_token_ns, 5003 + offset);
  EXPECT_EQ(r.last_token_ns, 9007 + offset);
  EXPECT_EQ(r.end_ns, 9011 + offset);
  EXPECT_EQ(r.method, TokenMethod::kUsagePerChunk);
  EXPECT_EQ(r.chunks, (std::vector<std::pair<int64_t, int>>{{5003 + offset, 1}, {9007 + offset, 2}}));
  EXPECT_EQ((*back)[1].outcome, Outcome::kReset);
  EXPECT_EQ((*back)[1].error, "Connection reset by peer");
  EXPECT_EQ((*back)[1].first_token_ns, -1);

  auto j = RecordsJson(run, 0);
  j[1]["outcome"] = "exploded";
  EXPECT_EQ(RecordsFromJson(j, "a.json").status().message(),
            "a.json: requests[1].outcome: unknown outcome 'exploded'");
  j = RecordsJson(run, 0);
  j[0]["first_token_ns"] = "soon";
  EXPECT_EQ(RecordsFromJson(j, "a.json").status().message(),
            "a.json: requests[0].first_token_ns: expected a non-negative integer or null");
}

// The file is bench's indented JSON with one line per request, and reads back as written.
TEST(ShardTest, ResultTextHasOneLinePerRequest) {
  nlohmann::ordered_json j = {{"schema", "latdoc.bench/1"}, {"p99_ttft_ms", 1.5}};
  j["requests"] = nlohmann::ordered_json::array();
  j["requests"].push_back({{"outcome", "ok"}, {"chunks", {{1, 1}, {2, 3}}}});
  j["requests"].push_back({{"outcome", "reset"}, {"chunks", nlohmann::ordered_json::array()}});
  const std::string text = ShardResultText(j);
  EXPECT_EQ(text,
            "{\n"
            "  \"schema\": \"latdoc.bench/1\",\n"
            "  \"p99_ttft_ms\": 1.5,\n"
            "  \"requests\": [\n"
            "    {\"outcome\":\"ok\",\"chunks\":[[1,1],[2,3]]},\n"
            "    {\"outcome\":\"reset\",\"chunks\":[]}\n"
            "  ]\n"
            "}\n");
  EXPECT_EQ(nlohmann::ordered_json::parse(text), j);
  j["requests"] = nlohmann::ordered_json::array();
  EXPECT_EQ(nlohmann::ordered_json::parse(ShardResultText(j)), j);
}

}  // namespace
}  // namespace latdoc::loadgen
