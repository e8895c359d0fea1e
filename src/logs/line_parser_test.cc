#include "logs/line_parser.h"

#include <gtest/gtest.h>

namespace latdoc::logs {
namespace {

int64_t Wall(int month, int day, int h, int m, int s) { return *MonthDayTimeNs(month, day, h, m, s); }

TEST(LineParserTest, VllmV1StatsLine) {
  LineParser p;
  const ParsedLine& pl = p.Parse(
      "INFO 06-25 21:51:52 [loggers.py:123] Engine 000: Avg prompt throughput: 1510.3 tokens/s, "
      "Avg generation throughput: 220.1 tokens/s, Running: 12 reqs, Waiting: 3 reqs, GPU KV cache "
      "usage: 87.5%, Prefix cache hit rate: 41.2%");
  EXPECT_EQ(pl.source, Source::kVllm);
  EXPECT_EQ(pl.level, Level::kInfo);
  EXPECT_EQ(pl.event, Event::kStats);
  EXPECT_EQ(pl.file, "loggers.py");
  EXPECT_EQ(pl.file_line, 123);
  EXPECT_EQ(pl.ts_ns, Wall(6, 25, 21, 51, 52));
  EXPECT_EQ(pl.stats.waiting, 3);
  EXPECT_EQ(WallLabel(*pl.ts_ns), "06-25 21:51:52");
}

TEST(LineParserTest, ProcessPrefixAndAnsiColours) {
  LineParser p;
  const ParsedLine& pl = p.Parse(
      "\x1b[36m(APIServer pid=12345)\x1b[0m \x1b[32mINFO\x1b[0m \x1b[90m08-20 10:00:00\x1b[0m "
      "\x1b[90m[v1/metrics/loggers.py:123]\x1b[0m Engine 001: Avg prompt throughput: 0.0 "
      "tokens/s, Avg generation throughput: 5.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU "
      "KV cache usage: 1.0%, Prefix cache hit rate: 0.0%");
  EXPECT_EQ(pl.source, Source::kVllm);
  EXPECT_EQ(pl.proc, "APIServer");
  EXPECT_EQ(pl.file, "v1/metrics/loggers.py");
  EXPECT_EQ(pl.event, Event::kStats);
  EXPECT_EQ(pl.stats.engine, 1);
  EXPECT_EQ(pl.ts_ns, Wall(8, 20, 10, 0, 0));
}

TEST(LineParserTest, OldPrefixWithoutBracket) {
  LineParser p;
  const ParsedLine& pl = p.Parse(
      "WARNING 05-02 14:10:31 scheduler.py:1089] Sequence group cmpl-1 is preempted by "
      "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect "
      "the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to "
      "provide more KV cache memory. total_num_cumulative_preemption=51");
  EXPECT_EQ(pl.source, Source::kVllm);
  EXPECT_EQ(pl.level, Level::kWarning);
  EXPECT_EQ(pl.file, "scheduler.py");
  EXPECT_EQ(pl.event, Event::kPreemptionV0);
  EXPECT_EQ(pl.count, 51);
}

TEST(LineParserTest, RequestLoggingLines) {
  LineParser p;
  EXPECT_EQ(p.Parse("INFO 06-25 21:50:01 [logger.py:43] Received request cmpl-ab-0: params: "
                    "SamplingParams(n=1, max_tokens=128), lora_request: None.")
                .event,
            Event::kReceivedRequest);
  EXPECT_EQ(p.Parse("INFO 06-25 21:50:01 [async_llm.py:301] Added request cmpl-ab-0.").event,
            Event::kAddedRequest);
  EXPECT_EQ(p.Parse("DEBUG 06-25 21:50:01 [logger.py:40] Request cmpl-ab-0 details: prompt: 'x', "
                    "prompt_token_ids: [1], prompt_embeds shape: None.")
                .event,
            Event::kRequestDetails);
  EXPECT_EQ(p.Parse("INFO 06-25 21:50:01 [async_llm_engine.py:179] Finished request cmpl-1.").event,
            Event::kFinishedRequest);
  EXPECT_EQ(p.Parse("INFO 06-25 21:50:01 [async_llm.py:400] Aborted request cmpl-1.").event,
            Event::kAbortedRequest);
  EXPECT_EQ(p.Parse("INFO 06-25 21:50:01 [logger.py:60] Generated response cmpl-1 (streaming "
                    "complete): output: 'hi', output_token_ids: None, finish_reason: stop")
                .event,
            Event::kGeneratedResponse);
  EXPECT_EQ(p.Parse("WARNING 06-25 21:50:01 [async_llm.py:160] AsyncLLM created with "
                    "api_server_count more than 1; disabling stats logging to avoid incomplete "
                    "stats.")
                .event,
            Event::kStatsDisabled);
}

TEST(LineParserTest, UvicornAccessLines) {
  LineParser p;
  const ParsedLine& a =
      p.Parse("INFO:     127.0.0.1:49152 - \"POST /v1/completions HTTP/1.1\" 200 OK");
  EXPECT_EQ(a.source, Source::kUvicorn);
  EXPECT_EQ(a.event, Event::kAccess);
  EXPECT_EQ(a.access.method, "POST");
  EXPECT_EQ(a.access.path, "/v1/completions");
  EXPECT_EQ(a.access.status, 200);
  EXPECT_FALSE(a.ts_ns);
  const ParsedLine& b = p.Parse(
      "\x1b[36m(APIServer pid=7)\x1b[0m INFO:     [::1]:5 - \"GET /metrics HTTP/1.1\" 500 "
      "Internal Server Error");
  EXPECT_EQ(b.event, Event::kAccess);
  EXPECT_EQ(b.proc, "APIServer");
  EXPECT_EQ(b.access.status, 500);
  const ParsedLine& c = p.Parse("INFO:     Started server process [4242]");
  EXPECT_EQ(c.source, Source::kUvicorn);
  EXPECT_EQ(c.event, Event::kNone);
  EXPECT_EQ(c.msg, "Started server process [4242]");
  EXPECT_EQ(p.Parse("ERROR:    Exception in ASGI application").level, Level::kError);
}

TEST(LineParserTest, LlamaCppLines) {
  LineParser p;
  const ParsedLine& a =
      p.Parse("0.07.221.840 I srv  log_server_r: request: POST /completion 127.0.0.1 200");
  EXPECT_EQ(a.source, Source::kLlamaCpp);
  EXPECT_EQ(a.level, Level::kInfo);
  EXPECT_EQ(a.event, Event::kAccess);
  EXPECT_EQ(a.access.path, "/completion");
  EXPECT_TRUE(a.ts_is_relative);
  EXPECT_EQ(a.ts_ns, ((7LL * 1000 + 221) * 1000 + 840) * 1000);
  EXPECT_EQ(RelativeLabel(*a.ts_ns), "+0:07.221");
  const ParsedLine& b = p.Parse("srv  log_server_r: request: GET /health 127.0.0.1 503");
  EXPECT_EQ(b.event, Event::kAccess);
  EXPECT_EQ(b.access.status, 503);
  EXPECT_FALSE(b.ts_ns);
  const ParsedLine& c = p.Parse(
      "prompt eval time =      45.21 ms /    26 tokens (    1.74 ms per token,   575.09 tokens "
      "per second)");
  EXPECT_EQ(c.event, Event::kLlamaPromptTiming);
  EXPECT_DOUBLE_EQ(c.value, 45.21);
  EXPECT_EQ(c.count, 26);
  const ParsedLine& d = p.Parse(
      "       eval time =    2176.33 ms /   128 tokens (   17.00 ms per token,    58.81 tokens "
      "per second)");
  EXPECT_EQ(d.event, Event::kLlamaEvalTiming);
  EXPECT_DOUBLE_EQ(d.value, 2176.33);   // the total, not the per-token ms or the tokens/s
  EXPECT_EQ(d.count, 128);
  const ParsedLine& e = p.Parse("print_timings: prompt eval time =      10.00 ms /     5 tokens");
  EXPECT_EQ(e.event, Event::kLlamaPromptTiming);
  EXPECT_DOUBLE_EQ(e.value, 10.0);
  EXPECT_EQ(e.count, 5);
  EXPECT_EQ(p.Parse("      total time =    2221.54 ms /   154 tokens").source, Source::kLlamaCpp);
  EXPECT_EQ(p.Parse("0.12.000.100 E srv    send_error: task id = 3, error: too long").level,
            Level::kError);
  EXPECT_EQ(p.Parse("slot launch_slot_: id  0 | task 0 | processing task").source,
            Source::kLlamaCpp);
}

TEST(LineParserTest, PythonTracebacks) {
  LineParser p;
  EXPECT_EQ(p.Parse("Traceback (most recent call last):").event, Event::kTraceback);
  const ParsedLine& f = p.Parse("(EngineCore_DP0 pid=188)   File \"/x/core.py\", line 7, in run");
  EXPECT_EQ(f.event, Event::kTraceback);
  EXPECT_EQ(f.proc, "EngineCore_DP0");
  const ParsedLine& e = p.Parse("torch.OutOfMemoryError: CUDA out of memory.");
  EXPECT_EQ(e.event, Event::kException);
  EXPECT_EQ(e.level, Level::kError);
  EXPECT_EQ(p.Parse("ValueError").event, Event::kException);
  EXPECT_EQ(p.Parse("NotAnError: x").event, Event::kException);  // name ends in Error
  EXPECT_EQ(p.Parse("Errors: none").source, Source::kUnknown);
}

TEST(LineParserTest, JournaldAndRfc3339Wrappers) {
  LineParser p;
  const ParsedLine& a = p.Parse(
      "Jun 25 09:00:10 gpu-node-3 vllm[4242]: INFO:     127.0.0.1:41000 - \"POST /v1/completions "
      "HTTP/1.1\" 200 OK");
  EXPECT_EQ(a.event, Event::kAccess);
  EXPECT_EQ(a.ts_ns, Wall(6, 25, 9, 0, 10));
  const ParsedLine& b =
      p.Parse("Jun  5 09:00:10 host python3: INFO 06-05 09:00:09 [x.py:1] hello");
  EXPECT_EQ(b.source, Source::kVllm);
  // The journal's time wins: one clock for every line, where vLLM prints the container's local
  // time and access lines print none.
  EXPECT_EQ(b.ts_ns, Wall(6, 5, 9, 0, 10));
  const ParsedLine& c =
      p.Parse("2026-06-25T21:51:52.250000000Z INFO:     1.2.3.4:5 - \"GET /health HTTP/1.1\" 200 OK");
  EXPECT_EQ(c.event, Event::kAccess);
  EXPECT_EQ(c.ts_ns, Wall(6, 25, 21, 51, 52) + 250000000);
}

TEST(LineParserTest, BadLines) {
  LineParser p;
  EXPECT_EQ(p.Parse(std::string_view("\0\x01garbage", 9)).source, Source::kBinary);
  EXPECT_EQ(p.Parse("\x07\x08\x0b\x0c\x0e\x0f\x10\x11").source, Source::kBinary);
  EXPECT_EQ(p.Parse("this line is in no known format").source, Source::kUnknown);
  EXPECT_EQ(p.Parse("").source, Source::kEmpty);
  // A broken prefix is not vLLM.
  EXPECT_EQ(p.Parse("INFO 13-25 21:51:52 [x.py:1] month 13").source, Source::kUnknown);
  EXPECT_EQ(p.Parse("INFO 06-25 21:51:52 [x.py:abc] bad line number").source, Source::kUnknown);
  EXPECT_EQ(p.Parse("INFO 06-25 21:5").source, Source::kUnknown);
  // A cut-off stats line is still a vLLM line, just not a stats event.
  const ParsedLine& cut = p.Parse("INFO 06-25 21:00:50 [loggers.py:123] Engine 000: Avg prompt thr");
  EXPECT_EQ(cut.source, Source::kVllm);
  EXPECT_EQ(cut.event, Event::kNone);
}

TEST(LineParserTest, MonthDayTime) {
  EXPECT_EQ(MonthDayTimeNs(1, 1, 0, 0, 0), 0);
  EXPECT_TRUE(MonthDayTimeNs(2, 29, 0, 0, 0));
  EXPECT_FALSE(MonthDayTimeNs(2, 30, 0, 0, 0));
  EXPECT_FALSE(MonthDayTimeNs(4, 31, 0, 0, 0));
  EXPECT_EQ(WallLabel(*MonthDayTimeNs(12, 31, 23, 59, 59)), "12-31 23:59:59");
  EXPECT_EQ(WallLabel(*MonthDayTimeNs(3, 1, 0, 0, 1)), "03-01 00:00:01");
}

// Wrappers and prefixes a vLLM line arrives in: Ray's worker prefix with the node's address, the
// journal's precise time, rsyslog's RFC 3339 time with host and identifier, and a prefix before
// the level word (VLLM_LOGGING_PREFIX, `kubectl logs --prefix`).
TEST(LineParserTest, VllmLinesInsideOtherPrefixes) {
  LineParser p;
  const ParsedLine& ray = p.Parse(
      "(RayWorkerWrapper pid=4161, ip=10.0.0.2) WARNING 08-20 10:00:01 [custom_all_reduce.py:134] "
      "Custom allreduce is disabled");
  EXPECT_EQ(ray.source, Source::kVllm);
  EXPECT_EQ(ray.proc, "RayWorkerWrapper");
  EXPECT_EQ(ray.level, Level::kWarning);
  const ParsedLine& bare = p.Parse("(pid=4163, ip=10.0.0.3) ERROR 08-20 10:00:02 [worker.py:1] boom");
  EXPECT_EQ(bare.source, Source::kVllm);
  EXPECT_EQ(bare.proc, "");
  EXPECT_EQ(bare.msg, "boom");
  const char* stats =
      "INFO 08-20 10:00:10 [loggers.py:123] Engine 000: Avg prompt throughput: 820.0 tokens/s, "
      "Avg generation throughput: 50.0 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache "
      "usage: 12.0%, Prefix cache hit rate: 30.0%";
  // An outer time (journald, RFC 3339) is the line's time, sub-second part included; without
  // one, vLLM's own.
  constexpr int64_t kUs = 1000;
  const std::pair<std::string, int64_t> wrappers[] = {
      {"Aug 20 10:00:10.123456 gpu1 vllm[812]: ", 123456 * kUs},
      {"2025-08-20T10:00:10+0000 gpu1 vllm[812]: ", 0},
      {"2025-08-20T10:00:10.123456+00:00 gpu1 python3: ", 123456 * kUs},
      {"[node-3] ", 0}, {"(APIServer pid=1) [node-3] ", 0}, {"[pod/vllm-0/server] ", 0}};
  for (const auto& [wrapper, frac_ns] : wrappers) {
    const ParsedLine& pl = p.Parse(wrapper + stats);
    EXPECT_EQ(pl.source, Source::kVllm) << wrapper;
    EXPECT_EQ(pl.event, Event::kStats) << wrapper;
    EXPECT_EQ(pl.ts_ns, Wall(8, 20, 10, 0, 10) + frac_ns) << wrapper;
  }
  // `kubectl logs --prefix` tags every line of the pod, uvicorn's and raw tracebacks too, in
  // front of its --timestamps time.
  const ParsedLine& access = p.Parse(
      "[pod/vllm-abc/vllm] INFO:     10.0.0.1:5555 - \"POST /v1/completions HTTP/1.1\" 500 Internal Server Error");
  EXPECT_EQ(access.source, Source::kUvicorn);
  EXPECT_EQ(access.msg, "10.0.0.1:5555 - \"POST /v1/completions HTTP/1.1\" 500 Internal Server Error");
  const ParsedLine& timed = p.Parse("[pod/vllm-abc/vllm] 2025-08-20T10:00:10.5Z " + std::string(stats));
  EXPECT_EQ(timed.source, Source::kVllm);
  EXPECT_EQ(timed.ts_ns, Wall(8, 20, 10, 0, 10) + 500'000'000);   // --timestamps' time
  const ParsedLine& tb = p.Parse("[pod/vllm-abc/vllm] Traceback (most recent call last):");
  LineParser q;
  const ParsedLine& bare_tb = q.Parse("Traceback (most recent call last):");
  EXPECT_EQ(tb.source, bare_tb.source);
  EXPECT_EQ(tb.event, bare_tb.event);
  EXPECT_EQ(tb.event, Event::kTraceback);
  // Not every line with a level word inside is vLLM's.
  const ParsedLine& other = p.Parse("some tool says INFO about 08-20 things");
  EXPECT_NE(other.source, Source::kVllm);
}

}  // namespace
}  // namespace latdoc::logs

namespace latdoc::logs {
namespace {

// PyTorch's c10 lines carry their own time: month unpadded, day, clock and fraction.
TEST(LineParserTest, TorchC10LinesAndTheirTime) {
  LineParser p;
  const ParsedLine& a = p.Parse(
      "(RayWorkerWrapper pid=31877, ip=10.12.4.21) [rank2]:[E219 08:58:31.402211871 "
      "ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout");
  EXPECT_EQ(a.source, Source::kTorch);
  EXPECT_EQ(a.level, Level::kError);
  EXPECT_EQ(a.proc, "RayWorkerWrapper");
  EXPECT_EQ(a.msg, "[Rank 2] Watchdog caught collective operation timeout");
  EXPECT_EQ(a.ts_ns, Wall(2, 19, 8, 58, 31) + 402211871);
  const ParsedLine& b = p.Parse("[W1105 23:01:02.5 CUDAAllocatorConfig.h:28] expandable_segments");
  EXPECT_EQ(b.level, Level::kWarning);
  EXPECT_EQ(b.ts_ns, Wall(11, 5, 23, 1, 2) + 500000000);
  const ParsedLine& c = p.Parse("[E ProcessGroupNCCL.cpp:474] [Rank 0] Watchdog caught ...");
  EXPECT_EQ(c.source, Source::kTorch);
  EXPECT_FALSE(c.ts_ns);
  EXPECT_EQ(p.Parse("frame #0: c10::Error::Error(c10::SourceLocation) + 0x96").event,
            Event::kTraceback);
  EXPECT_EQ(p.Parse("*** SIGABRT received at time=1739955511 on cpu 17 ***").level,
            Level::kCritical);
}

}  // namespace
}  // namespace latdoc::logs
