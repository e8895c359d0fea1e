// Every log of tests/data/logs/corpus (shapes seen in public bug reports; sources in its
// README) parses with no unknown line, keeps its expected facts, and fires exactly the verdicts
// of log_verdicts.h listed for it: each verdict on its own shape and quiet on all the others.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "logs/log_analyzer.h"
#include "rules/log_rules.h"

namespace latdoc::rules {
namespace {

struct Case {
  const char* file;
  const char* sources;       // "name=lines,..." in the order LogFacts lists them
  size_t engines;            // stats series
  uint64_t stats_lines;      // of the first engine (0 when none)
  const char* first_label;   // the log's first time ("" when none)
  std::set<std::string> verdicts;   // ids of log_verdicts.h that fire, with their severity
};

const Case kCases[] = {
    {"llamacpp_json_2024.log", "llama.cpp=5", 0, 0, "05-30 11:09:46", {}},
    {"llamacpp_no_prefix_done_request.log", "llama.cpp=11", 0, 0, "", {}},
    {"llamacpp_pid_prefix_timestamps.log", "llama.cpp=9", 0, 0, "+2:10.004", {}},
    {"llamacpp_prompt_progress.log", "llama.cpp=5", 0, 0, "+0:14.101", {}},
    {"sglang_2024_short_prefix.log", "uvicorn=1,sglang=4", 0, 0, "01-01 09:14:02", {}},
    {"sglang_2025_dot_format.log", "uvicorn=1,sglang=5", 0, 0, "03-11 16:20:41", {}},
    {"sglang_2026_comma_format.log", "uvicorn=1,sglang=4", 0, 0, "04-05 20:02:51", {}},
    {"tgi_router_text.log", "tgi=5", 0, 0, "05-01 01:31:02", {}},
    {"vllm_docker_logs_t.log", "vllm=2,uvicorn=1", 1, 2, "09-12 07:55:20", {}},
    {"vllm_journald.log", "vllm=2,uvicorn=1,system=1", 1, 2, "12-02 10:01:02",
     {"logs.engine_died:fail"}},
    // The kubectl time (UTC) is every line's time, not vLLM's local 14:00:10.
    {"vllm_kubectl_prefix_timestamps.log", "vllm=2,uvicorn=1", 1, 2, "08-11 21:00:10", {}},
    {"vllm_kubectl_timestamps.log", "vllm=3,uvicorn=2", 1, 2, "10-20 03:18:02", {}},
    // The stats stopped with 3 running, and the NCCL watchdog fired 10 minutes later: a hang,
    // then the death it caused.
    {"vllm_ray_nccl_timeout.log", "vllm=1,torch=6", 1, 1, "02-19 08:47:58",
     {"logs.engine_died:fail", "logs.no_progress:fail"}},
    {"vllm_rocm_hip_error.log", "vllm=10", 1, 1, "01-17 05:31:02", {"logs.engine_died:fail"}},
    {"vllm_v012_preemption_collapse.log", "vllm=8", 1, 8, "11-21 13:00:00",
     {"logs.throughput_collapse:fail"}},
    {"vllm_v0_metrics_py.log", "vllm=5,uvicorn=1", 1, 4, "03-14 09:12:01", {}},
    {"vllm_v0_pending_kvfull.log", "vllm=5", 1, 4, "11-02 17:40:05", {}},
    {"vllm_v0_request_logging.log", "vllm=4,uvicorn=1", 1, 2, "06-03 14:02:11", {}},
    {"vllm_v0_zero_throughput_hang.log", "vllm=13", 1, 12, "08-22 20:52:06",
     {"logs.no_progress:fail"}},
    {"vllm_v1_admission_stalled.log", "vllm=49,uvicorn=49", 1, 49, "04-28 22:10:02",
     {"logs.admission_stalled:fail"}},
    {"vllm_v1_ansi_colour.log", "vllm=3,uvicorn=1", 1, 2, "07-08 16:30:01", {}},
    {"vllm_v1_dp_two_engines.log", "vllm=9,uvicorn=1", 2, 3, "09-30 11:00:05", {}},
    {"vllm_v1_engine000_prefill_spike.log", "vllm=8", 1, 8, "05-19 08:20:10",
     {"logs.prefill_starvation:warn"}},
    {"vllm_v1_engine_dead_oom.log", "vllm=16,uvicorn=2", 1, 2, "10-20 03:20:30",
     {"logs.engine_died:fail"}},
    {"vllm_v1_stats_stop_hang.log", "vllm=10,uvicorn=21", 1, 3, "01-09 02:14:00",
     {"logs.no_progress:fail"}},
};

std::string Sources(const logs::LogFacts& f) {
  std::string s;
  for (const auto& [name, n] : f.sources) s += (s.empty() ? "" : ",") + name + "=" + std::to_string(n);
  return s;
}

TEST(LogCorpusTest, EveryShapeParsesAndFiresItsOwnVerdictsOnly) {
  const std::set<std::string> kVerdictIds = {"logs.engine_died", "logs.admission_stalled",
                                             "logs.no_progress", "logs.throughput_collapse",
                                             "logs.prefill_starvation"};
  size_t seen = 0;
  for (const Case& c : kCases) {
    const std::string path = std::string("tests/data/logs/corpus/") + c.file;
    auto facts = logs::AnalyzeInputs({path});
    ASSERT_TRUE(facts.ok()) << path << ": " << facts.status().ToString();
    const logs::LogFacts& f = *facts;
    EXPECT_EQ(f.unknown_lines, 0u) << path;
    EXPECT_EQ(f.binary_lines, 0u) << path;
    EXPECT_EQ(Sources(f), c.sources) << path;
    EXPECT_EQ(f.engines.size(), c.engines) << path;
    if (!f.engines.empty()) {
      EXPECT_EQ(f.engines[0].stats_lines, c.stats_lines) << path;
    }
    EXPECT_EQ(f.first_ns ? f.first_label : "", c.first_label) << path;
    std::set<std::string> fired;
    for (const Finding& fi : EvaluateLogRules(f)) {
      if (kVerdictIds.count(fi.id)) fired.insert(fi.id + ":" + std::string(SeverityName(fi.severity)));
    }
    EXPECT_EQ(fired, c.verdicts) << path;
    ++seen;
  }
  // Every file of the corpus is in the table.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator("tests/data/logs/corpus")) {
    files += e.path().extension() == ".log";
  }
  EXPECT_EQ(files, seen);
}

// Facts of the other servers' shapes.
TEST(LogCorpusTest, SglangTgiLlamaAndFatalFacts) {
  auto sg = logs::AnalyzeInputs({"tests/data/logs/corpus/sglang_2026_comma_format.log"});
  ASSERT_TRUE(sg.ok());
  EXPECT_EQ(sg->sglang.decode_batches, 2u);
  EXPECT_EQ(sg->sglang.prefill_batches, 2u);
  EXPECT_EQ(sg->sglang.max_running, 45);
  EXPECT_EQ(sg->sglang.max_queued, 81);
  EXPECT_DOUBLE_EQ(sg->sglang.peak_token_usage_pct, 9.0);
  EXPECT_DOUBLE_EQ(*sg->sglang.peak_input_tps, 2210.51);

  auto tgi = logs::AnalyzeInputs({"tests/data/logs/corpus/tgi_router_text.log"});
  ASSERT_TRUE(tgi.ok());
  EXPECT_EQ(tgi->tgi.requests, 1u);
  EXPECT_NEAR(*tgi->tgi.max_queue_ms, 0.098511, 1e-9);
  EXPECT_EQ(tgi->error_lines, 1u);
  EXPECT_EQ(tgi->warning_lines, 1u);

  auto js = logs::AnalyzeInputs({"tests/data/logs/corpus/llamacpp_json_2024.log"});
  ASSERT_TRUE(js.ok());
  EXPECT_EQ(js->llama.prompt_tokens, 44);
  EXPECT_EQ(js->llama.gen_tokens, 32);
  EXPECT_EQ(js->access_lines, 1u);

  auto done = logs::AnalyzeInputs({"tests/data/logs/corpus/llamacpp_no_prefix_done_request.log"});
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->access_lines, 1u);   // "done request: POST /infill ... 200"
  EXPECT_EQ(done->llama.prompt_tokens, 1204);

  // The engine core's OOM is the cause; the API server's EngineDeadError its echo.
  auto dead = logs::AnalyzeInputs({"tests/data/logs/corpus/vllm_v1_engine_dead_oom.log"});
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->fatal.size(), 2u);
  EXPECT_EQ(dead->fatal[0].kind, "oom");
  EXPECT_TRUE(dead->fatal[0].cause);
  EXPECT_EQ(dead->fatal[0].where, "tests/data/logs/corpus/vllm_v1_engine_dead_oom.log:10");
  EXPECT_EQ(dead->fatal[1].kind, "engine_dead");
  auto rules = EvaluateLogRules(*dead);
  auto it = std::find_if(rules.begin(), rules.end(),
                         [](const Finding& x) { return x.id == "logs.engine_died"; });
  ASSERT_NE(it, rules.end());
  EXPECT_EQ(it->title,
            "The engine died at 10-20 03:20:49: torch.OutOfMemoryError: CUDA out of memory. Tried "
            "to allocate 1.96 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.");
}

// The queueing finding stops advising a larger --max-num-seqs when the scheduler was not
// admitting: the batch had room.
TEST(LogCorpusTest, AdmissionStallReplacesTheMaxNumSeqsAdvice) {
  auto f = logs::AnalyzeInputs({"tests/data/logs/corpus/vllm_v1_admission_stalled.log"});
  ASSERT_TRUE(f.ok());
  auto rules = EvaluateLogRules(*f);
  auto q = std::find_if(rules.begin(), rules.end(),
                        [](const Finding& x) { return x.id == "logs.queueing"; });
  ASSERT_NE(q, rules.end());
  EXPECT_THAT(q->advice, ::testing::HasSubstr("raising --max-num-seqs will not help"));
  EXPECT_THAT(q->advice, ::testing::Not(::testing::HasSubstr("--max-num-seqs 2")));
  auto a = std::find_if(rules.begin(), rules.end(),
                        [](const Finding& x) { return x.id == "logs.admission_stalled"; });
  ASSERT_NE(a, rules.end());
  EXPECT_EQ(a->title,
            "The scheduler admitted no request for 490 s: up to 13 waiting while 1 ran and the KV "
            "cache was at most 65.8% full (engine 0)");
}

}  // namespace
}  // namespace latdoc::rules

namespace latdoc::rules {
namespace {

std::string V1Stats(int t, double prompt, double gen, int running, int waiting) {
  return "INFO 06-25 10:" + std::string(t / 60 < 10 ? "0" : "") + std::to_string(t / 60) + ":" +
         std::string(t % 60 < 10 ? "0" : "") + std::to_string(t % 60) +
         " [loggers.py:123] Engine 000: Avg prompt throughput: " + std::to_string(prompt) +
         " tokens/s, Avg generation throughput: " + std::to_string(gen) + " tokens/s, Running: " +
         std::to_string(running) + " reqs, Waiting: " + std::to_string(waiting) +
         " reqs, GPU KV cache usage: 20.0%, Prefix cache hit rate: 0.0%\n";
}

std::set<std::string> Verdicts(const std::string& text) {
  const std::string path = ::testing::TempDir() + "verdicts.log";
  std::ofstream(path) << text;
  auto f = logs::AnalyzeInputs({path});
  EXPECT_TRUE(f.ok());
  std::set<std::string> ids;
  for (const Finding& fi : EvaluateLogRules(*f)) {
    if (fi.id == "logs.prefill_starvation" || fi.id == "logs.throughput_collapse" ||
        fi.id == "logs.admission_stalled" || fi.id == "logs.no_progress") {
      ids.insert(fi.id);
    }
  }
  return ids;
}

// Shapes that look like a verdict's but are not: a burst's start (few running, all prefilling),
// a load draining (generation falls with the batch), a short queue with the batch full.
TEST(LogVerdictsTest, QuietOnLookAlikes) {
  std::string burst = V1Stats(10, 9000, 60, 3, 20) + V1Stats(20, 8000, 120, 6, 12) +
                      V1Stats(30, 0, 1000, 32, 0) + V1Stats(40, 0, 1010, 32, 0) +
                      V1Stats(50, 0, 990, 31, 0);
  EXPECT_TRUE(Verdicts(burst).empty());
  std::string drain = V1Stats(10, 0, 1000, 32, 0) + V1Stats(20, 0, 990, 32, 0) +
                      V1Stats(30, 0, 500, 16, 0) + V1Stats(40, 0, 250, 8, 0) +
                      V1Stats(50, 0, 120, 4, 0) + V1Stats(60, 0, 0, 0, 0);
  EXPECT_TRUE(Verdicts(drain).empty());
  std::string full;
  for (int t = 10; t <= 300; t += 10) full += V1Stats(t, 0, 900, 64, 12);
  EXPECT_TRUE(Verdicts(full).empty());   // waiting while 64 run: queueing, not a stall
}

}  // namespace
}  // namespace latdoc::rules
