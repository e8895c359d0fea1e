#include "logs/log_analyzer.h"

#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "logs/log_summary.h"
#include "logs/sliced_input_for_test.h"

namespace latdoc::logs {
namespace {

constexpr int64_t kS = 1000LL * 1000 * 1000;

std::string Stats(int t, int running, int waiting, double kv, double gen = 100.0, int preempt = 0) {
  std::string pre = preempt ? fmt::format("Preemptions: {}, ", preempt) : "";
  return fmt::format(
      "INFO 06-25 {:02d}:{:02d}:{:02d} [loggers.py:123] Engine 000: Avg prompt throughput: {:.1f} "
      "tokens/s, Avg generation throughput: {:.1f} tokens/s, Running: {} reqs, Waiting: {} reqs, "
      "{}GPU KV cache usage: {:.1f}%, Prefix cache hit rate: 5.0%\n",
      10 + t / 3600, t / 60 % 60, t % 60, gen > 0 ? 10.0 : 0.0, gen, running, waiting, pre, kv);
}

LogFacts Analyze(const std::string& text, std::vector<size_t> cuts = {}) {
  SlicedInput in(text, std::move(cuts));
  LogAnalyzer an;
  an.BeginInput("mem.log", Compression::kNone);
  LineReader reader(&in, 4096, 64);
  auto n = FeedLines(reader, in, an, true);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return an.Snapshot();
}

TEST(LogAnalyzerTest, QueueingKvAndPreemptionStretches) {
  std::string log;
  log += Stats(10, 4, 0, 50);
  log += Stats(20, 8, 0, 60);
  log += Stats(30, 8, 3, 92, 90.0);     // queue starts, KV high
  log += Stats(40, 8, 7, 95, 80.0, 2);  // waiting grew while throughput fell
  log += Stats(50, 6, 0, 70, 120.0);
  log += Stats(60, 6, 2, 91, 130.0, 1);
  log += Stats(70, 0, 0, 0, 0.0);
  LogFacts f = Analyze(log);
  ASSERT_EQ(f.engines.size(), 1u);
  const EngineFacts& e = f.engines[0];
  EXPECT_EQ(e.stats_lines, 7u);
  EXPECT_EQ(e.interval_s, 10.0);
  EXPECT_FALSE(e.interval_assumed);
  // Each point covers the 10 s since the previous one.
  EXPECT_EQ(e.queued_ns, 30 * kS);
  EXPECT_EQ(e.queued_points, 3u);
  EXPECT_EQ(e.queue_stretches, 2u);
  ASSERT_TRUE(e.longest_queue);
  // It lasts from the start of its first point's interval to its last point: 10:00:20 to 40.
  EXPECT_EQ(e.longest_queue->start_label, "06-25 10:00:20");
  EXPECT_EQ(e.longest_queue->end_label, "06-25 10:00:40");
  EXPECT_EQ(e.longest_queue->dur_ns, 20 * kS);
  EXPECT_EQ(e.longest_queue->end_ns - e.longest_queue->start_ns, e.longest_queue->dur_ns);
  EXPECT_EQ(e.longest_queue->peak, 7);
  EXPECT_EQ(e.busy_ns, 50 * kS);   // points at 20..60 with work; the first point covers 0 s
  EXPECT_EQ(e.kv_high_points, 3u);
  EXPECT_EQ(e.kv_high_stretches, 2u);
  EXPECT_DOUBLE_EQ(e.peak_kv_pct, 95.0);
  EXPECT_EQ(e.preemptions, 3);
  EXPECT_EQ(e.preemption_points, 2u);
  EXPECT_EQ(e.first_preemption_label, "06-25 10:00:40");
  EXPECT_EQ(e.saturation_points, 1u);
  EXPECT_EQ(e.first_saturation_label, "06-25 10:00:40");
  EXPECT_EQ(e.max_waiting, 7);
  EXPECT_EQ(e.gaps_total, 0u);
  EXPECT_EQ(e.series.size(), 7u);
  EXPECT_EQ(e.series.waiting[3], 7);
  EXPECT_EQ(f.volume[static_cast<size_t>(LineKind::kStats)].lines, 7u);
  EXPECT_EQ(f.duration_ns, 60 * kS);
}

TEST(LogAnalyzerTest, MissingStatsLineWhileBusyIsAGapButNotWhileIdle) {
  std::string log;
  for (int t = 10; t <= 60; t += 10) log += Stats(t, 5, 0, 10);
  log += "INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK\n";
  log += "INFO:     127.0.0.1:2 - \"GET /health HTTP/1.1\" 200 OK\n";
  log += Stats(100, 5, 1, 10);    // 40 s after the last one, while 5 were running
  log += Stats(110, 0, 0, 0, 0.0);
  log += Stats(120, 0, 0, 0, 0.0);
  log += Stats(400, 3, 0, 0, 10.0);   // after an idle stretch: no gap
  LogFacts f = Analyze(log);
  const EngineFacts& e = f.engines.at(0);
  EXPECT_EQ(e.interval_s, 10.0);
  ASSERT_EQ(e.gaps_total, 1u);
  const StatsGap& g = e.gaps.at(0);
  EXPECT_EQ(g.start_label, "06-25 10:01:00");
  EXPECT_EQ(g.end_label, "06-25 10:01:40");
  EXPECT_EQ(g.gap_ns, 40 * kS);
  EXPECT_EQ(g.missing_ns, 30 * kS);
  EXPECT_EQ(g.running_before, 5);
  EXPECT_EQ(g.lines_between, 2u);
  EXPECT_EQ(e.gaps_missing_ns, 30 * kS);
}

TEST(LogAnalyzerTest, LogEndingInsideAStallHasAnOpenGap) {
  // Busy, then only request lines for ten minutes: a log taken during a hang.
  std::string log;
  for (int t = 10; t <= 60; t += 10) log += Stats(t, 8, 3, 40);
  for (int t = 65; t <= 660; t += 5) {
    log += fmt::format("INFO 06-25 {:02d}:{:02d}:{:02d} [logger.py:39] Received request cmpl-{}: "
                       "prompt: 'x', params: None.\n",
                       10 + t / 3600, t / 60 % 60, t % 60, t);
  }
  LogFacts f = Analyze(log);
  const EngineFacts& e = f.engines.at(0);
  ASSERT_EQ(e.gaps_total, 1u);
  const StatsGap& g = e.gaps.at(0);
  EXPECT_TRUE(g.open_ended);
  EXPECT_EQ(g.start_label, "06-25 10:01:00");
  EXPECT_EQ(g.end_label, "06-25 10:11:00");
  EXPECT_EQ(g.gap_ns, 600 * kS);
  EXPECT_EQ(g.lines_between, 120u);
  // An idle engine whose lines stop is no stall.
  std::string idle;
  for (int t = 10; t <= 60; t += 10) idle += Stats(t, 0, 0, 0, 0.0);
  idle += "INFO:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK\n";
  EXPECT_EQ(Analyze(idle).engines.at(0).gaps_total, 0u);
}

TEST(LogAnalyzerTest, OtherEnginesStatsLinesAreNotLinesLoggedDuringAGap) {
  // Engine 1 stops for 40 s while engine 0 goes on: engine 0's stats lines are not "other
  // lines" of engine 1's gap; one access line is.
  std::string log;
  auto engine = [](std::string line, int n) {
    return line.replace(line.find("Engine 000"), 10, fmt::format("Engine {:03d}", n));
  };
  for (int t = 10; t <= 100; t += 10) {
    log += Stats(t, 4, 0, 10);
    if (t <= 40 || t >= 80) log += engine(Stats(t, 4, 0, 10), 1);
    if (t == 60) log += "INFO:     127.0.0.1:1 - \"POST /v1/completions HTTP/1.1\" 200 OK\n";
  }
  LogFacts f = Analyze(log);
  ASSERT_EQ(f.engines.size(), 2u);
  const EngineFacts& e1 = f.engines.at(1);
  ASSERT_EQ(e1.gaps_total, 1u);
  EXPECT_EQ(e1.gaps.at(0).gap_ns, 40 * kS);
  EXPECT_EQ(e1.gaps.at(0).lines_between, 1u);
  EXPECT_FALSE(e1.gaps.at(0).open_ended);
}

TEST(LogAnalyzerTest, V0PreemptionCountsAddAcrossARestart) {
  // V0 warns at the 1st, 51st, 101st preemption of a server run; the count starts again after a
  // restart (or in the next of two rotated files).
  std::string log;
  int t = 0;
  for (int count : {1, 51, 101, 1, 51}) {
    log += fmt::format(
        "WARNING 05-02 14:10:{:02d} scheduler.py:1089] Sequence group cmpl-{} is preempted by "
        "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. "
        "total_num_cumulative_preemption={}\n",
        t, t, count);
    ++t;
  }
  LogFacts f = Analyze(log);
  EXPECT_EQ(f.v0_preemption_warnings, 5u);
  EXPECT_EQ(f.v0_cumulative_preemptions, 152);
}

TEST(LogAnalyzerTest, DebugBytesAreOfEveryDebugLine) {
  // V1 logs an idle stats line at DEBUG: it is a stats line in the volume table and a DEBUG line
  // here, so the DEBUG count and bytes come from the same lines.
  std::string stats = Stats(10, 0, 0, 0, 0.0);
  stats.replace(0, 4, "DEBUG");
  const std::string other = "DEBUG 06-25 10:00:11 [core.py:1] step\n";
  LogFacts f = Analyze(stats + other);
  EXPECT_EQ(f.debug_lines, 2u);
  EXPECT_EQ(f.debug_bytes, stats.size() + other.size());
}

TEST(LogAnalyzerTest, VolumeByKindAndBytes) {
  std::string log =
      "INFO 06-25 10:00:00 [logger.py:43] Received request cmpl-1: params: SamplingParams(n=1), "
      "lora_request: None.\n"
      "INFO 06-25 10:00:00 [async_llm.py:301] Added request cmpl-1.\n"
      "INFO:     127.0.0.1:5 - \"POST /v1/completions HTTP/1.1\" 200 OK\n"
      "DEBUG 06-25 10:00:01 [v1/engine/core.py:9] step\n"
      "WARNING 06-25 10:00:01 [x.py:1] careful 1\n"
      "WARNING 06-25 10:00:02 [x.py:1] careful 2\n"
      "ERROR 06-25 10:00:02 [y.py:2] broken\n"
      "garbage line\n" +
      Stats(3, 1, 0, 1);
  LogFacts f = Analyze(log);
  auto V = [&](LineKind k) { return f.volume[static_cast<size_t>(k)].lines; };
  EXPECT_EQ(V(LineKind::kRequestLog), 2u);
  EXPECT_EQ(V(LineKind::kAccess), 1u);
  EXPECT_EQ(V(LineKind::kDebug), 1u);
  EXPECT_EQ(V(LineKind::kWarning), 2u);
  EXPECT_EQ(V(LineKind::kError), 1u);
  EXPECT_EQ(V(LineKind::kUnknown), 1u);
  EXPECT_EQ(V(LineKind::kStats), 1u);
  EXPECT_EQ(f.volume[static_cast<size_t>(LineKind::kRequestLog)].peak_lines_per_s, 2u);
  uint64_t bytes = 0;
  for (const auto& v : f.volume) bytes += v.bytes;
  EXPECT_EQ(bytes, log.size());
  EXPECT_EQ(f.bytes, log.size());
  EXPECT_EQ(f.received_request_lines, 1u);
  EXPECT_EQ(f.uvicorn_access_lines, 1u);
  EXPECT_TRUE(f.debug_file_paths);
  ASSERT_EQ(f.messages.size(), 2u);
  EXPECT_EQ(f.messages[0].tmpl, "careful <*>");
  EXPECT_EQ(f.messages[0].count, 2u);
  EXPECT_EQ(f.messages[0].first_label, "06-25 10:00:01");
  EXPECT_EQ(f.messages[0].last_label, "06-25 10:00:02");
  EXPECT_EQ(f.messages[0].where, "x.py:1");
  EXPECT_EQ(f.messages[1].level, "ERROR");
  EXPECT_EQ(f.unknown_lines, 1u);
  EXPECT_THAT(f.unknown_examples, ::testing::ElementsAre("mem.log:8: garbage line"));
}

// Every split point of the byte stream must yield the same facts.
// The text kept as examples (an unknown line, a warning's first words) never carries a secret:
// vLLM's startup line without its prefix (journalctl -o cat), a warning that quotes a token.
TEST(LogAnalyzerTest, ExamplesKeepNoSecret) {
  LogFacts f = Analyze(
      "non-default args: {'model_tag': 'm', 'api_key': ['sk-unknown-1'], 'port': 8000}\n"
      "WARNING 06-25 10:00:01 [x.py:1] retrying with HF_TOKEN=hf-warn and Bearer sk-bearer\n"
      "WARNING 06-25 10:00:02 [x.py:1] retrying with HF_TOKEN=hf-other and Bearer sk-other\n");
  ASSERT_EQ(f.unknown_examples.size(), 1u);
  EXPECT_EQ(f.unknown_examples[0],
            "mem.log:1: non-default args: {'model_tag': 'm', 'api_key': <redacted>, 'port': 8000}");
  ASSERT_EQ(f.messages.size(), 1u);  // warnings that differ only in their secret are one group
  EXPECT_EQ(f.messages[0].count, 2u);
  EXPECT_EQ(f.messages[0].example, "retrying with HF_TOKEN=<redacted> and Bearer <redacted>");
  const std::string json = ToJson(f).dump();
  for (const char* secret : {"sk-unknown-1", "hf-warn", "sk-bearer", "hf-other", "sk-other"}) {
    EXPECT_EQ(json.find(secret), std::string::npos) << secret;
  }
}

TEST(LogAnalyzerTest, SameFactsAtEveryChunkBoundary) {
  std::string log = Stats(10, 2, 1, 95) +
                    "\x1b[36m(APIServer pid=1)\x1b[0m INFO:     1.2.3.4:5 - \"GET /metrics HTTP/1.1\" 200 OK\r\n"
                    "Traceback (most recent call last):\n"
                    "  File \"/x.py\", line 1, in f\n"
                    "    g()\n"
                    "RuntimeError: boom 12\n"
                    "0.01.000.000 I srv  log_server_r: request: POST /completion 127.0.0.1 200\n" +
                    Stats(20, 2, 0, 50) + "INFO 06-25 10:00:2";
  nlohmann::json want = ToJson(Analyze(log));
  EXPECT_EQ(want["messages"]["tracebacks"], 1);
  EXPECT_EQ(want["volume"]["error"]["lines"], 4);
  EXPECT_EQ(want["bad_input"]["unterminated_last_lines"], 1);
  for (size_t cut = 0; cut <= log.size(); ++cut) {
    EXPECT_EQ(ToJson(Analyze(log, {cut})), want) << "cut=" << cut;
  }
}

// vLLM's formatter prefixes every line of a logged exception: one traceback, and its frames are
// not error lines of their own (the message and the exception are).
TEST(LogAnalyzerTest, TracebackWithVllmPrefixOnEveryLine) {
  const std::string log =
      "ERROR 06-25 10:00:00 [core.py:710] EngineCore encountered a fatal error.\n"
      "ERROR 06-25 10:00:00 [core.py:710] Traceback (most recent call last):\n"
      "ERROR 06-25 10:00:00 [core.py:710]   File \"/v/core.py\", line 701, in run\n"
      "ERROR 06-25 10:00:00 [core.py:710]     engine_core.run_busy_loop()\n"
      "ERROR 06-25 10:00:00 [core.py:710] RuntimeError: CUDA error: illegal memory access\n"
      "INFO 06-25 10:00:01 [a.py:1] shutting down\n";
  for (std::vector<size_t> cuts : {std::vector<size_t>{}, std::vector<size_t>{100, 170}}) {
    LogFacts f = Analyze(log, cuts);
    EXPECT_EQ(f.tracebacks, 1u);
    EXPECT_EQ(f.error_lines, 2u);
    EXPECT_EQ(f.unknown_lines, 0u);
  }
}

TEST(LogAnalyzerTest, ChainedTracebackAndExceptionTextStayInTheirMessage) {
  // vLLM's NewLineFormatter puts the prefix on every line of one message: the blank line and the
  // chaining sentence between two tracebacks, and CUDA's lines after its exception, are part of
  // it; the same call logging again within the same second is a new message.
  const std::string p = "(EngineCore_DP0 pid=188) ERROR 08-20 10:00:55 [core.py:720] ";
  std::string log;
  for (const char* line :
       {"EngineCore encountered a fatal error.", "Traceback (most recent call last):",
        "  File \"/x/core.py\", line 711, in run_engine_core", "    engine_core.run_busy_loop()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.", "",
        "During handling of the above exception, another exception occurred:", "",
        "Traceback (most recent call last):", "  File \"/x/core.py\", line 720, in run_engine_core",
        "    raise e", "ValueError: bad", "EngineCore encountered a fatal error.",
        "Traceback (most recent call last):", "    raise e", "ValueError: bad"}) {
    log += p + line + "\n";
  }
  log += "ERROR 08-20 10:00:56 [serving.py:9] Request a failed\n";
  log += "ERROR 08-20 10:00:56 [serving.py:9] Request b failed\n";
  LogFacts f = Analyze(log);
  EXPECT_EQ(f.tracebacks, 3u);
  ASSERT_FALSE(f.messages.empty());
  uint64_t fatal = 0, requests = 0;
  for (const auto& m : f.messages) {
    EXPECT_FALSE(m.tmpl.empty());
    EXPECT_EQ(m.tmpl.find("CUDA_LAUNCH_BLOCKING"), std::string::npos) << m.tmpl;
    EXPECT_EQ(m.tmpl.find("During handling"), std::string::npos) << m.tmpl;
    if (m.tmpl == "EngineCore encountered a fatal error.") fatal += m.count;
    if (m.tmpl.find("failed") != std::string::npos) requests += m.count;
  }
  EXPECT_EQ(fatal, 2u);
  EXPECT_EQ(requests, 2u);
  // The two messages, the three exception lines and the two request errors.
  EXPECT_EQ(f.error_lines, 7u);
}

TEST(LogAnalyzerTest, NewYearDoesNotGoBackInTime) {
  std::string log =
      "INFO 12-31 23:59:55 [a.py:1] old year\n"
      "INFO 01-01 00:00:05 [a.py:1] new year\n";
  LogFacts f = Analyze(log);
  EXPECT_EQ(f.duration_ns, 10 * kS);
  EXPECT_EQ(f.first_label, "12-31 23:59:55");
  EXPECT_EQ(f.last_label, "01-01 00:00:05");
}

// "MM-DD" has no year: Feb 28 -> Mar 1 with no line on Feb 29 is the next day (2025, 2026,
// 2027...), not a day of silence; a log with a Feb 29 line keeps it.
TEST(LogAnalyzerTest, FebruaryHasTwentyNineDaysOnlyWhenTheLogSaysSo) {
  {
    LogFacts f = Analyze(
        "INFO 02-28 23:59:55 [a.py:1] before\n"
        "INFO 03-01 00:00:05 [a.py:1] after\n"
        "INFO 12-31 23:59:55 [a.py:1] old year\n"
        "INFO 01-01 00:00:05 [a.py:1] new year\n"
        "INFO 02-28 23:59:55 [a.py:1] before again\n"
        "INFO 03-01 00:00:05 [a.py:1] after again\n");
    // Feb 28 23:59:55 of one year to Mar 1 00:00:05 of the next: 365 days and 10 s.
    EXPECT_EQ(*f.last_ns - *f.first_ns, (365LL * 86400 + 10) * kS);
    EXPECT_EQ(f.first_label, "02-28 23:59:55");
    EXPECT_EQ(f.last_label, "03-01 00:00:05");
  }
  {
    LogFacts f = Analyze(
        "INFO 02-28 23:59:55 [a.py:1] before\n"
        "INFO 02-29 12:00:00 [a.py:1] leap day\n"
        "INFO 03-01 00:00:05 [a.py:1] after\n");
    EXPECT_EQ(f.duration_ns, (86400 + 10) * kS);
  }
  {
    // Stats 10 s apart across the month's end: no stall.
    LogFacts f = Analyze(
        "INFO 02-28 23:59:55 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
        "Avg generation throughput: 1.0 tokens/s, Running: 5 reqs, Waiting: 0 reqs, GPU KV cache "
        "usage: 1.0%, Prefix cache hit rate: 5.0%\n"
        "INFO 03-01 00:00:05 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
        "Avg generation throughput: 1.0 tokens/s, Running: 5 reqs, Waiting: 0 reqs, GPU KV cache "
        "usage: 1.0%, Prefix cache hit rate: 5.0%\n");
    EXPECT_EQ(f.duration_ns, 10 * kS);
    EXPECT_TRUE(f.engines.at(0).gaps.empty());
    // The stats table labels its rows on the log's calendar too (no "02-29").
    const EngineFacts& e = f.engines.at(0);
    ASSERT_EQ(e.series.size(), 2u);
    EXPECT_EQ(RenderStatsRow(f, e, 1).substr(0, 14), "03-01 00:00:05");
  }
}

TEST(LogAnalyzerTest, LongRunsKeepSeriesAndVolumeBounded) {
  std::string log;
  for (int i = 0; i < 6000; ++i) {
    log += Stats(i * 8, 1 + i % 5, i % 3, 40 + i % 50);
  }
  LogFacts f = Analyze(log);
  const EngineFacts& e = f.engines.at(0);
  EXPECT_EQ(e.stats_lines, 6000u);
  EXPECT_LE(e.series.size(), kMaxSeriesPoints);
  EXPECT_GE(e.series.size(), kMaxSeriesPoints / 4);
  EXPECT_GT(e.series.decimation, 1u);
  EXPECT_LE(f.volume_series.size(), 2048u);
  uint64_t stats_in_buckets = 0;
  for (const auto& b : f.volume_series) stats_in_buckets += b[static_cast<size_t>(LineKind::kStats)];
  EXPECT_EQ(stats_in_buckets, 6000u);
}

std::string Gzip(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(compressBound(static_cast<uLong>(in.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/latdoc_logs_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& data) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << data;
    return p;
  }

 private:
  std::string path_;
};

TEST(LogAnalyzerTest, GzipAndPlainFilesGiveTheSameFactsAndRotatedFilesJoin) {
  TempDir dir;
  std::string a, b;
  for (int t = 10; t <= 100; t += 10) a += Stats(t, 2, 1, 50);
  for (int t = 110; t <= 200; t += 10) b += Stats(t, 2, 0, 50);
  auto plain = AnalyzeInputs({dir.Write("a.log", a + b)});
  auto gz = AnalyzeInputs({dir.Write("a.log.gz", Gzip(a + b))});
  auto split = AnalyzeInputs({dir.Write("v.log.1", a), dir.Write("v.log", b)});
  ASSERT_TRUE(plain.ok() && gz.ok() && split.ok());
  nlohmann::json jp = ToJson(*plain), jg = ToJson(*gz), js = ToJson(*split);
  EXPECT_EQ(jg["inputs"][0]["compression"], "gzip");
  EXPECT_LT(jg["inputs"][0]["raw_bytes"].get<uint64_t>(), jp["inputs"][0]["raw_bytes"].get<uint64_t>());
  for (auto* j : {&jp, &jg, &js}) j->erase("inputs");
  EXPECT_EQ(jp, jg);
  EXPECT_EQ(jp, js);
  EXPECT_EQ(plain->engines[0].stats_lines, 20u);
  EXPECT_EQ(plain->engines[0].queued_ns, 90 * kS);
}

TEST(LogAnalyzerTest, BinaryFileIsRejectedWithPathAndOffset) {
  TempDir dir;
  std::string bin;
  for (int i = 0; i < 5000; ++i) bin.push_back(static_cast<char>((i * 7919) % 256));
  std::string path = dir.Write("core.bin", bin);
  auto r = AnalyzeInputs({path});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              ::testing::MatchesRegex(path + ": byte 0: binary data, not a text log \\(no vLLM, "
                                      "uvicorn or llama.cpp line in the first [0-9]+ lines\\)"));
  auto missing = AnalyzeInputs({dir.Write("ok.log", Stats(1, 1, 0, 1)), "/nonexistent/x.log"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "/nonexistent/x.log: No such file or directory");
}

TEST(LogAnalyzerTest, CorruptGzipIsDataLossNamingThePath) {
  TempDir dir;
  std::string gz = Gzip(Stats(1, 1, 0, 1) + Stats(2, 1, 0, 1));
  gz.resize(gz.size() / 2);
  std::string path = dir.Write("cut.log.gz", gz);
  auto r = AnalyzeInputs({path});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), ::testing::StartsWith(path + ": byte "));
}

TEST(LogAnalyzerTest, GarbageInsideATextLogIsCountedNotFatal) {
  std::string log = Stats(10, 1, 0, 1) + std::string("\x00\x01\x02zz\xff\n", 7) +
                    "no format here\n" + Stats(20, 1, 0, 1) + std::string(5000, 'q') + "\n";
  SlicedInput in(log);
  LogAnalyzer an;
  an.BeginInput("mixed.log", Compression::kNone);
  LineReader reader(&in, 1024, 256);
  auto n = FeedLines(reader, in, an, true);
  ASSERT_TRUE(n.ok());
  LogFacts f = an.Snapshot();
  EXPECT_EQ(f.binary_lines, 1u);
  EXPECT_EQ(f.unknown_lines, 2u);
  EXPECT_EQ(f.overlong_lines, 1u);
  EXPECT_EQ(f.engines.at(0).stats_lines, 2u);
}

// Log text is any bytes: a warning with bytes that are not UTF-8, an error whose example is cut
// at its byte limit inside a multi-byte character, garbage lines and a path that is not UTF-8
// made `latdoc logs --json` abort (nlohmann::json::dump throws on invalid UTF-8; found after
// the trace fuzz targets hit the same class). The JSON is written, with U+FFFD for bad bytes.
TEST(LogAnalyzerTest, TextThatIsNotUtf8StillWritesJson) {
  std::string log = Stats(10, 1, 0, 1) +
                    "WARNING 06-25 10:00:11 [api_server.py:1] bad \xfd\xfe bytes\n"
                    "ERROR 06-25 10:00:12 [x.py:2] " + std::string(150, 'a') + " " +
                    [] { std::string e; for (int i = 0; i < 200; ++i) e += "\xc3\xa9"; return e; }() +
                    "\nnot a log line \xc3\x28\n" + Stats(20, 1, 0, 1);
  SlicedInput in(log);
  LogAnalyzer an;
  an.BeginInput("m\xffixed.log", Compression::kNone);
  LineReader reader(&in, 4096, 256);
  ASSERT_TRUE(FeedLines(reader, in, an, true).ok());
  std::string out;
  ASSERT_NO_THROW(out = ToJson(an.Snapshot()).dump());
  EXPECT_NE(out.find("bad \xEF\xBF\xBD\xEF\xBF\xBD bytes"), std::string::npos) << out;
}

}  // namespace
}  // namespace latdoc::logs

namespace latdoc::logs {
namespace {

// The corpus of real shapes (tests/data/logs/corpus) gives the same facts however the bytes are
// split: at every cut of the first KiB, and every 61 bytes after it.
TEST(LogAnalyzerTest, CorpusFactsAtEveryChunkBoundary) {
  for (const auto& e : std::filesystem::directory_iterator("tests/data/logs/corpus")) {
    if (e.path().extension() != ".log") continue;
    std::ifstream in(e.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << e.path();
    const nlohmann::json want = ToJson(Analyze(text));
    EXPECT_EQ(want["bad_input"]["unknown_lines"], 0) << e.path();
    for (size_t cut = 0; cut <= text.size(); cut += cut < 1024 ? 1 : 61) {
      ASSERT_EQ(ToJson(Analyze(text, {cut})), want) << e.path() << " cut=" << cut;
    }
  }
}

}  // namespace
}  // namespace latdoc::logs
