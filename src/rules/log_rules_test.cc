#include "rules/log_rules.h"
#include "rules/finding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace latdoc::rules {
namespace {

using ::testing::HasSubstr;
constexpr int64_t kS = 1000LL * 1000 * 1000;

const Finding* Find(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// For a temporary vector of findings: a copy that outlives it.
std::optional<Finding> FindIn(const std::vector<Finding>& fs, const std::string& id) {
  const Finding* f = Find(fs, id);
  return f ? std::optional<Finding>(*f) : std::nullopt;
}

logs::LogFacts BusyFacts() {
  logs::LogFacts f;
  f.first_ns = 0;
  f.last_ns = 600 * kS;
  f.duration_ns = 600 * kS;
  f.lines = 1000;
  f.bytes = 100000;
  logs::EngineFacts e;
  e.engine = 0;
  e.stats_lines = 60;
  e.interval_s = 10;
  e.busy_ns = 600 * kS;
  e.max_running = 48;
  e.peak_kv_pct = 60;
  f.engines.push_back(e);
  return f;
}

TEST(LogRulesTest, QuietBusyServerGivesOkChecksOnly) {
  auto fs = EvaluateLogRules(BusyFacts());
  for (const char* id : {"logs.queueing", "logs.kv_pressure", "logs.preemptions", "logs.stats_gap"}) {
    const Finding* f = Find(fs, id);
    ASSERT_NE(f, nullptr) << id;
    EXPECT_EQ(f->severity, Severity::kOk) << id;
  }
  EXPECT_EQ(Find(fs, "logs.errors"), nullptr);
  EXPECT_EQ(Find(fs, "logs.request_logging_on"), nullptr);
  EXPECT_EQ(WorstSeverity(fs), Severity::kOk);
}

TEST(LogRulesTest, QueueingWithRoomInKvCacheAsksForMoreSeqsOrCapacity) {
  auto f = BusyFacts();
  auto& e = f.engines[0];
  e.queued_ns = 120 * kS;   // 20% of busy
  e.queued_points = 12;
  e.queue_stretches = 2;
  e.max_waiting = 31;
  e.longest_queue = logs::Stretch{0, 0, 90 * kS, "06-25 10:00:00", "06-25 10:01:30", 31, 9};
  auto fs = EvaluateLogRules(f);
  const Finding* q = Find(fs, "logs.queueing");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->severity, Severity::kWarn);
  EXPECT_EQ(q->title, "Requests queued for 120 s (20% of busy time), up to 31 waiting");
  EXPECT_THAT(q->advice, HasSubstr("--max-num-seqs 96"));
  e.queued_ns = 400 * kS;
  EXPECT_EQ(FindIn(EvaluateLogRules(f), "logs.queueing")->severity, Severity::kFail);
  e.queued_ns = 10 * kS;
  EXPECT_EQ(FindIn(EvaluateLogRules(f), "logs.queueing")->severity, Severity::kInfo);
}

TEST(LogRulesTest, FullKvCacheAndPreemptionsPointAtMemoryFlags) {
  auto f = BusyFacts();
  auto& e = f.engines[0];
  e.queued_ns = 60 * kS;
  e.queued_points = 6;
  e.kv_high_ns = 50 * kS;
  e.kv_high_points = 5;
  e.kv_high_stretches = 1;
  e.peak_kv_pct = 99.2;
  e.preemptions = 5;
  e.preemption_points = 2;
  e.first_preemption_label = "06-25 21:51:30";
  auto fs = EvaluateLogRules(f);
  const Finding* kv = Find(fs, "logs.kv_pressure");
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(kv->severity, Severity::kFail);   // full and preempting
  EXPECT_THAT(kv->advice, HasSubstr("--gpu-memory-utilization"));
  EXPECT_THAT(kv->advice, HasSubstr("--max-num-seqs"));
  const Finding* pre = Find(fs, "logs.preemptions");
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->severity, Severity::kWarn);
  EXPECT_EQ(pre->title, "5 preemptions for lack of KV cache (requests recomputed from scratch)");
  EXPECT_THAT(Find(fs, "logs.queueing")->advice, HasSubstr("logs.kv_pressure"));
  e.preemptions = 0;
  f.v0_preemption_warnings = 2;
  f.v0_cumulative_preemptions = 51;
  auto pre0 = FindIn(EvaluateLogRules(f), "logs.preemptions");
  ASSERT_TRUE(pre0);
  EXPECT_EQ(pre0->severity, Severity::kFail);
  EXPECT_EQ(pre0->title, "at least 51 preemptions for lack of KV cache (requests recomputed from scratch)");
}

TEST(LogRulesTest, StatsGapIsAStall) {
  auto f = BusyFacts();
  auto& e = f.engines[0];
  logs::StatsGap g;
  g.gap_ns = 45 * kS;
  g.missing_ns = 35 * kS;
  g.start_label = "06-25 21:52:10";
  g.end_label = "06-25 21:52:55";
  g.running_before = 36;
  g.lines_between = 2;
  e.gaps.push_back(g);
  e.gaps_total = 1;
  e.gaps_missing_ns = 35 * kS;
  auto fs = EvaluateLogRules(f);
  const Finding* s = Find(fs, "logs.stats_gap");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->severity, Severity::kWarn);
  EXPECT_EQ(s->title,
            "The server stalled: 1 stats line gap while busy, longest 45 s (due every 10 s)");
  // Other lines logged meanwhile: the API server's loop (which writes the stats line) ran, so
  // the engine made no progress.
  EXPECT_THAT(s->advice, HasSubstr("The API server kept logging, so its loop ran while the engine produced no tokens"));
  e.gaps[0].gap_ns = 90 * kS;
  e.gaps[0].lines_between = 0;
  auto s2 = FindIn(EvaluateLogRules(f), "logs.stats_gap");
  ASSERT_TRUE(s2);
  EXPECT_EQ(s2->severity, Severity::kFail);
  EXPECT_THAT(s2->advice, HasSubstr("whole serving process was stopped"));
  // A log that ends inside the gap says so.
  e.gaps[0].open_ended = true;
  auto s3 = FindIn(EvaluateLogRules(f), "logs.stats_gap");
  ASSERT_TRUE(s3);
  EXPECT_THAT(s3->evidence[2].text, HasSubstr("to the end of the log at 06-25 21:52:55"));
  EXPECT_THAT(s3->advice, HasSubstr("the log ends inside the gap"));
}

TEST(LogRulesTest, LoggingVolumeFindingsNameTheFlags) {
  auto f = BusyFacts();
  auto& rl = f.volume[static_cast<size_t>(logs::LineKind::kRequestLog)];
  rl.lines = 6000;   // 10 lines/s
  rl.bytes = 80000;
  f.received_request_lines = 3000;
  f.uvicorn_access_lines = 3000;
  f.access_lines = 3000;
  f.debug_lines = 200;
  f.debug_file_paths = true;
  auto fs = EvaluateLogRules(f);
  const Finding* r = Find(fs, "logs.request_logging_on");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->severity, Severity::kWarn);
  EXPECT_THAT(r->advice, HasSubstr("drop --enable-log-requests"));
  const Finding* a = Find(fs, "logs.access_log_on");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->severity, Severity::kInfo);   // 5 lines/s
  EXPECT_THAT(a->advice, HasSubstr("--disable-uvicorn-access-log"));
  const Finding* d = Find(fs, "logs.debug_logging");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kWarn);   // 20% of lines
  EXPECT_THAT(d->advice, HasSubstr("VLLM_LOGGING_LEVEL=INFO"));
}

TEST(LogRulesTest, ErrorsStartFromTheEarliest) {
  auto f = BusyFacts();
  f.error_lines = 3;
  f.access_status_classes[5] = 2;
  logs::MessageGroup late{"ERROR", "late <*>", "late 1", "b.py:2", 2, 50 * kS, 60 * kS,
                          "06-25 10:00:50", "06-25 10:01:00"};
  logs::MessageGroup early{"ERROR", "early", "early", "a.py:1", 1, 5 * kS, 5 * kS,
                           "06-25 10:00:05", "06-25 10:00:05"};
  f.messages = {late, early};
  auto fs = EvaluateLogRules(f);
  const Finding* e = Find(fs, "logs.errors");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->severity, Severity::kWarn);
  EXPECT_EQ(e->title, "3 error lines, 0 tracebacks, 2 HTTP 5xx responses in the log");
  EXPECT_THAT(e->advice, HasSubstr("\"early\" at 06-25 10:00:05 (a.py:1)"));
  f.tracebacks = 1;
  EXPECT_EQ(FindIn(EvaluateLogRules(f), "logs.errors")->severity, Severity::kFail);
}

TEST(LogRulesTest, NoStatsLines) {
  logs::LogFacts f;
  f.sources = {{"vllm", 10}};
  auto fs = EvaluateLogRules(f);
  const Finding* m = Find(fs, "logs.stats_missing");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(m->advice, HasSubstr("--disable-log-stats"));
  EXPECT_EQ(Find(fs, "logs.queueing"), nullptr);
  f.stats_disabled_warnings = 1;
  EXPECT_THAT(FindIn(EvaluateLogRules(f), "logs.stats_missing")->title,
              HasSubstr("api_server_count > 1"));
}

// Findings quote their input (log message templates, kernel names): text that is not UTF-8
// made `latdoc logs --json` abort in nlohmann::json::dump. ToJson writes U+FFFD instead.
TEST(FindingJsonTest, TextThatIsNotUtf8IsRepaired) {
  Finding f;
  f.id = "logs.errors";
  f.title = "errors: boom \xc3\x28 here";
  f.evidence.push_back({"template \xfd", std::nullopt, "", "quoted \xff"});
  std::string out;
  ASSERT_NO_THROW(out = ToJson(f).dump());
  EXPECT_NE(out.find("boom \xEF\xBF\xBD( here"), std::string::npos) << out;
}

}  // namespace
}  // namespace latdoc::rules
