// The load runner (RunBench) against an in-process simulator on its own thread: the load
// client's threads (the runner's event loop, the /metrics scraper) and the server's run at
// once, so this test is also what the TSan build checks for the load client (.ci/run).
#include "loadgen/runner.h"

#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/event_loop.h"
#include "http/server.h"
#include "loadgen/record.h"
#include "loadgen/sweep.h"
#include "sim/sim_server.h"

namespace latdoc::loadgen {
namespace {

class Sim {
 public:
  explicit Sim(sim::FaultRates faults) : server_(loop_, Config(faults)) {
    Status st = server_.Start();
    EXPECT_TRUE(st.ok()) << st.message();
    thread_ = std::thread([this] { loop_.Run(); });
  }
  ~Sim() {
    loop_.Post([this] { server_.Stop(); loop_.Stop(); });
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }

 private:
  static sim::SimConfig Config(sim::FaultRates faults) {
    sim::SimConfig c;
    c.port = 0;
    c.seed = 11;
    c.engine.step_base_ms = 2;
    c.engine.step_prefill_token_us = 10;
    c.engine.step_decode_seq_us = 20;
    c.engine.step_context_token_ns = 0;
    c.log_file = "/dev/null";
    c.disable_log_stats = true;
    c.faults = faults;
    return c;
  }
  http::EventLoop loop_;
  sim::SimServer server_;
  std::thread thread_;
};

BenchOptions Options(const std::string& url) {
  BenchOptions o;
  o.url = url;
  o.concurrency = 8;
  o.num_requests = 120;
  o.scrape_interval_s = 0.05;  // the scraper runs often while the streams do
  RandomWorkloadOptions w;
  w.input_len = 8;
  w.output_len = 6;
  o.prompts = RandomPrompts(w, 16);
  return o;
}

// An in-process HTTP server on its own event-loop thread, answering every request with
// `handler`; stopped and joined when it goes out of scope.
// Streams `texts` as completion chunks with `content_type`, the last one finishing ("length"),
// then [DONE].
void StreamTexts(http::ResponseStream& w, const char* content_type, std::vector<std::string> texts) {
  w.BeginChunked(200, content_type);
  for (size_t i = 0; i < texts.size(); ++i) {
    nlohmann::json choice = {{"text", texts[i]},
                             {"finish_reason", i + 1 == texts.size() ? nlohmann::json("length") : nlohmann::json()}};
    w.WriteChunk("data: " + nlohmann::json{{"choices", {choice}}}.dump() + "\n\n");
  }
  w.WriteChunk("data: [DONE]\n\n");
  w.EndChunked();
}

class LocalServer {
 public:
  explicit LocalServer(http::Handler handler) : server_(loop_, {}, std::move(handler)) {
    ok_ = server_.Listen().ok();
    thread_ = std::thread([this] { loop_.Run(); });
  }
  ~LocalServer() {
    loop_.Post([this] {
      server_.Stop();
      loop_.Stop();
    });
    thread_.join();
  }
  bool ok() const { return ok_; }
  // Runs `fn` on the server's thread and waits for it.
  void RunOnServer(std::function<void()> fn) {
    std::promise<void> done;
    loop_.Post([&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }
  // Options for RunBench against this server: model "m", no /metrics scrape.
  BenchOptions Options() const {
    BenchOptions o = loadgen::Options("http://127.0.0.1:" + std::to_string(server_.port()));
    o.model = "m";
    o.scrape_metrics = false;
    return o;
  }

 private:
  http::EventLoop loop_;
  http::Server server_;
  bool ok_ = false;
  std::thread thread_;
};

// Every request sent ends in exactly one record, and the counts add up, with the server
// failing requests in every way it can.
TEST(RunnerTest, EveryRequestEndsInOneRecordUnderFaults) {
  sim::FaultRates f;
  f.http_503 = 0.1;
  f.reset_before_first_token = 0.1;
  f.reset_after_first_token = 0.1;
  f.cut_stream = 0.1;
  Sim sim(f);
  auto run = RunBench(Options(sim.url()));
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->records.size(), 120u);
  int ok = 0, failed = 0;
  for (const RequestRecord& r : run->records) {
    EXPECT_NE(r.outcome, Outcome::kPending) << r.index;
    (r.outcome == Outcome::kOk ? ok : failed)++;
  }
  EXPECT_GT(ok, 20);
  EXPECT_GT(failed, 20);
  EXPECT_FALSE(run->partial);
  EXPECT_TRUE(run->metrics_available) << run->metrics_error;
  EXPECT_FALSE(run->timeline.empty());
}

TEST(RunnerTest, CleanRunCompletesEveryRequest) {
  Sim sim(sim::FaultRates{});
  auto run = RunBench(Options(sim.url()));
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->records.size(), 120u);
  for (const RequestRecord& r : run->records) {
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.index << ": " << r.error;
    EXPECT_EQ(r.output_tokens, 6) << r.index;
  }
}

// Open loop bounded by --duration: no arrival is due after its end, though requests are still
// in flight when the next one would be (each streams for longer than the mean gap).
TEST(RunnerTest, OpenLoopSendsNothingDueAfterTheDuration) {
  Sim sim(sim::FaultRates{});
  BenchOptions o = Options(sim.url());
  o.request_rate = 40;
  o.num_requests = 0;
  o.duration_s = 0.5;
  RandomWorkloadOptions w;
  w.input_len = 8;
  w.output_len = 60;
  o.prompts = RandomPrompts(w, 16);
  auto run = RunBench(o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_GT(run->records.size(), 5u);
  const int64_t end_ns = run->start_ns + 500'000'000;
  for (const RequestRecord& r : run->records) {
    EXPECT_LT(r.scheduled_ns, end_ns) << r.index;
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.index << ": " << r.error;
  }
}

// Open loop over threads: one schedule, dealt. With the same seed, three threads send
// requests due at exactly the offsets one thread sends them at, each request once, and each
// latency counts from its scheduled time.
TEST(RunnerTest, OpenLoopThreadsFollowOneSchedule) {
  Sim sim(sim::FaultRates{});
  BenchOptions o = Options(sim.url());
  o.request_rate = 400;
  o.burstiness = 0.5;
  o.num_requests = 60;
  o.seed = 5;
  auto offsets = [&](int threads) {
    o.threads = threads;
    auto run = RunBench(o);
    EXPECT_TRUE(run.ok()) << run.status().message();
    std::vector<int64_t> out;
    if (!run.ok()) return out;
    EXPECT_EQ(run->thread_load.size(), size_t(threads));
    for (const RequestRecord& r : run->records) {
      EXPECT_EQ(r.outcome, Outcome::kOk) << r.index << ": " << r.error;
      EXPECT_GE(r.sent_ns, r.scheduled_ns) << r.index;
      EXPECT_GE(r.first_token_ns, r.scheduled_ns) << r.index;
      out.push_back(r.scheduled_ns - run->start_ns);
    }
    return out;
  };
  const std::vector<int64_t> one = offsets(1);
  const std::vector<int64_t> three = offsets(3);
  ASSERT_EQ(one.size(), 60u);
  EXPECT_EQ(three, one);
}

// Closed loop over threads: the concurrency is global (dealt), every request is sent once, and
// each thread reports its own load.
TEST(RunnerTest, ClosedLoopThreadsShareTheConcurrency) {
  Sim sim(sim::FaultRates{});
  BenchOptions o = Options(sim.url());
  o.concurrency = 7;
  o.num_requests = 100;
  o.warmup = 5;
  o.threads = 3;
  auto run = RunBench(o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->records.size(), 100u);
  EXPECT_EQ(run->warmup_requests, 5u);
  EXPECT_EQ(run->max_in_flight, 7);  // 3 + 2 + 2 streams, each thread at its share
  ASSERT_EQ(run->thread_load.size(), 3u);
  uint64_t events = 0;
  for (const ThreadLoad& l : run->thread_load) {
    EXPECT_GT(l.events, 0u);
    EXPECT_GT(l.reads, 0u);
    EXPECT_GT(l.wall_s, 0);
    events += l.events;
  }
  // Each stream of 6 tokens: 6 content events, the usage event and [DONE].
  EXPECT_EQ(events, 100u * 8);
  for (size_t i = 0; i < run->records.size(); ++i) {
    const RequestRecord& r = run->records[i];
    EXPECT_EQ(r.index, i);
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.index << ": " << r.error;
    EXPECT_EQ(r.output_tokens, 6);
    if (i > 0) {
      EXPECT_GE(r.scheduled_ns, run->records[i - 1].scheduled_ns);
    }
  }
}

// A signal while streams are in flight on several threads: every thread stops sending, its
// streams get the drain timeout and are then cancelled, each keeping the token it got, and the
// run comes back partial. (Under TSan, the stop's path across the threads.)
TEST(RunnerTest, SignalStopsEveryThread) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<http::ResponseStream>> held;  // streams left open, server thread
  int open = 0;
  LocalServer server([&](const http::Request&, std::shared_ptr<http::ResponseStream> w) {
    w->BeginChunked(200, "text/event-stream");
    w->WriteChunk("data: {\"choices\":[{\"text\":\"a\"}]}\n\n");
    std::lock_guard<std::mutex> lock(mu);
    held.push_back(std::move(w));
    ++open;
    cv.notify_all();
  });
  ASSERT_TRUE(server.ok());
  BenchOptions o = server.Options();
  o.concurrency = 4;
  o.num_requests = 8;
  o.threads = 2;
  o.drain_timeout_ns = 200'000'000;
  o.command = "";  // nothing on standard error
  StatusOr<BenchRun> run = InvalidArgument("not run");
  std::thread bench([&] { run = RunBench(o); });
  bool all_open;
  {
    std::unique_lock<std::mutex> lock(mu);
    all_open = cv.wait_for(lock, std::chrono::seconds(60), [&] { return open == 4; });
  }
  EXPECT_TRUE(all_open);
  ::kill(::getpid(), SIGINT);  // the run's signal set takes it
  bench.join();
  server.RunOnServer([&] {
    std::lock_guard<std::mutex> lock(mu);
    held.clear();
  });
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->partial);
  EXPECT_EQ(run->stop_signal, SIGINT);
  EXPECT_EQ(run->thread_load.size(), 2u);
  ASSERT_EQ(run->records.size(), 4u);
  for (const RequestRecord& r : run->records) {
    EXPECT_EQ(r.outcome, Outcome::kCancelled) << r.index << ": " << r.error;
    EXPECT_EQ(r.chunks.size(), 1u) << r.index;
  }
}

// More threads than streams: no thread without a stream.
TEST(RunnerTest, NoMoreThreadsThanStreams) {
  Sim sim(sim::FaultRates{});
  BenchOptions o = Options(sim.url());
  o.concurrency = 2;
  o.num_requests = 10;
  o.threads = 8;
  auto run = RunBench(o);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->thread_load.size(), 2u);
  EXPECT_EQ(run->records.size(), 10u);
}

std::string Describe(const ChunkInfo& c) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
  return "done=" + std::to_string(c.done) + " json=" + std::to_string(c.json) +
         " choices=" + std::to_string(c.has_choices) + " content=" + std::to_string(c.content) +
         " finished=" + std::to_string(c.finished) + " usage=" + opt(c.usage_completion_tokens) +
         "/" + opt(c.usage_prompt_tokens) + " error=" + std::to_string(c.error) + " '" +
         c.error_message + "'";
}

// The one-pass scan (Parse) gives exactly what simdjson's DOM parse (ParseWithDom) gives, on
// real chunk shapes, on every prefix of each (a chunk cut short), and on thousands of one-byte
// mutations of them (a quote, a brace, a digit, a high byte in every place).
TEST(ChunkParserTest, ScanAgreesWithTheDomParseEverywhere) {
  const std::vector<std::string> corpus = {
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":16,"total_tokens":17,"completion_tokens":1}})",
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}],"usage":null})",
      R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})",
      R"({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi \"there\"\n"},"logprobs":{"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105]}]},"finish_reason":null}]})",
      R"({"choices":[{"delta":{"reasoning_content":"think"}}]})",
      R"({"choices":[{"delta":{"reasoning":"","tool_calls":[{"id":"t","function":{"name":"f","arguments":"{}"}}]}}]})",
      R"({"choices":[{"delta":{"tool_calls":[]}},{"text":"x","finish_reason":"stop"}]})",
      R"({"id":"cmpl-1","object":"text_completion","choices":[],"usage":{"prompt_tokens":1024,"completion_tokens":200,"total_tokens":1224}})",
      R"({"usage":{"completion_tokens":-3,"prompt_tokens":1.5}})",
      R"({"usage":{"completion_tokens":12345678901234567890}})",
      R"({"usage":{"completion_tokens":1e3,"prompt_tokens":0}})",
      R"({"error":{"message":"out of memory","code":500}})",
      R"({"object":"error","message":"bad request","code":400})",
      R"({"error":"plain"})",
      R"({"error":null,"choices":[{"text":"a"}]})",
      R"({"choices":[{"text":"caf\u00e9"}]})",
      "{\"choices\":[{\"text\":\"caf\xc3\xa9\"}]}",
      "{\"choices\":[{\"text\":\"bad \xff\"}]}",
      R"({"cho\u0069ces":[{"text":"a"}]})",
      R"({"choices":[{"text":"a"}],"choices":[]})",
      R"({"choices":[{"text":"","text":"b","finish_reason":null,"finish_reason":"stop"}]})",
      R"({"choices":[{"text":"a"}],"usage":{"completion_tokens":1,"completion_tokens":2}})",
      R"({"choices":[{"text":true,"delta":[1,2],"finish_reason":false}],"usage":[1]})",
      R"( {"a":[[[[{"b":[true,false,null,0,-0.5,"s"]}]]]], "choices" : [ { "text" : "t" } ] } )",
      R"([{"choices":[{"text":"a"}]}])",
      R"("just a string")",
      "<html><body>502 Bad Gateway</body></html>",
      "",
      R"({"choices":[{"text":"a"}]} trailing)",
      // Found by fuzz_chunk_parser: a key and its colon at the very end (the scan read one past).
      R"({"id":"chat-1","object":"chat.completion.chunk","choices":)",
      R"({"choices":[)",
  };
  ChunkParser scan, dom;
  auto check = [&](const std::string& payload, const std::string& what) {
    // The scan gets the bytes in a buffer of their exact size, as a cut network read gives
    // them: a std::string's terminating NUL would hide a read one past the end from ASan.
    const std::unique_ptr<char[]> exact(new char[payload.size() + (payload.empty() ? 1 : 0)]);
    std::memcpy(exact.get(), payload.data(), payload.size());
    const std::string a = Describe(scan.Parse(std::string_view(exact.get(), payload.size())));
    const std::string b = Describe(dom.ParseWithDom(payload));
    EXPECT_EQ(a, b) << what << ": " << payload;
  };
  std::mt19937_64 rng(42);
  const std::string interesting = "\"\\{}[],:0-9e.tnf \x01\x80";
  for (const std::string& p : corpus) {
    check(p, "whole");
    for (size_t cut = 0; cut < p.size(); ++cut) check(p.substr(0, cut), "prefix");
    for (int i = 0; i < 300 && !p.empty(); ++i) {
      std::string m = p;
      m[rng() % m.size()] = interesting[rng() % interesting.size()];
      check(m, "mutation");
    }
  }
}

// A data payload that is not a JSON object (a proxy's HTML page spliced in, a chunk cut short)
// makes the stream's counts untrustworthy: the request fails as a stream error that quotes the
// payload, instead of counting as ok with a token silently missing.
TEST(StreamAccountantTest, PayloadThatIsNotJsonIsAStreamError) {
  ChunkParser parser;
  RequestRecord rec;
  StreamAccountant acct(&rec);
  int64_t t = 1000;
  for (const char* payload : {R"({"choices":[{"text":" a","finish_reason":null}]})",
                              R"({"choices":[{"text":"x")", "<html>oops</html>",
                              R"({"choices":[{"text":" b","finish_reason":"length"}]})", "[DONE]"})
    acct.OnPayload(parser.Parse(payload), t += 10);
  acct.Finish(true, t + 10);
  EXPECT_EQ(rec.outcome, Outcome::kStreamError);
  EXPECT_EQ(rec.error, R"(a data payload that is not a JSON object: '{"choices":[{"text":"x"')");
  // The same stream without the bad payloads is ok with both tokens.
  RequestRecord good;
  StreamAccountant ok(&good);
  for (const char* payload : {R"({"choices":[{"text":" a","finish_reason":null}]})",
                              R"({"choices":[{"text":" b","finish_reason":"length"}]})", "[DONE]"})
    ok.OnPayload(parser.Parse(payload), t += 10);
  ok.Finish(true, t + 10);
  EXPECT_EQ(good.outcome, Outcome::kOk);
  EXPECT_EQ(good.output_tokens, 2);
}

// llama.cpp before ggml-org/llama.cpp#9210 (and its chat parser since) ended a stream whose
// text was not valid UTF-8 with an error event (the shape of ggml-org/llama.cpp#11738, #9195):
// a named failure of its own, invalid_output, that says why; any other error event stays a
// stream_error with the server's words.
TEST(StreamAccountantTest, InvalidUtf8ErrorEventIsANamedFailure) {
  ChunkParser parser;
  RequestRecord rec;
  StreamAccountant acct(&rec);
  int64_t t = 1000;
  for (const char* payload :
       {R"({"choices":[{"text":" a","index":0,"finish_reason":null}],"object":"text_completion"})",
        R"({"error":{"code":500,"message":"[json.exception.type_error.316] invalid UTF-8 byte at index 1: 0xE2","type":"server_error"}})"})
    acct.OnPayload(parser.Parse(payload), t += 10);
  acct.Finish(true, t + 10);
  EXPECT_EQ(rec.outcome, Outcome::kInvalidOutput);
  EXPECT_EQ(OutcomeName(rec.outcome), "invalid_output");
  EXPECT_EQ(rec.error,
            "the model's output is not valid UTF-8 (a byte token that cuts a character, often at "
            "max_tokens on a small or random-weight model), so the server ended the stream with an "
            "error event: [json.exception.type_error.316] invalid UTF-8 byte at index 1: 0xE2");
  EXPECT_TRUE(IsInvalidOutputError("Failed to parse input at pos 0: Overseas"));
  EXPECT_TRUE(IsInvalidOutputError(
      "The model produced output that does not match the expected Content-only format"));

  RequestRecord other;
  StreamAccountant acct2(&other);
  acct2.OnPayload(parser.Parse(R"({"error":{"code":503,"message":"Loading model","type":"unavailable_error"}})"), t);
  acct2.Finish(true, t + 10);
  EXPECT_EQ(other.outcome, Outcome::kStreamError);
  EXPECT_EQ(other.error, "Loading model");
}

// Usage that first comes on the finish_reason chunk (llama.cpp before #15444, llama-cpp-python)
// is the stream's final count, not an increment: 2 tokens, not 4, and one ITL gap, not two.
TEST(StreamAccountantTest, UsageOnlyOnTheFinishChunkIsTheFinalCount) {
  ChunkParser parser;
  RequestRecord rec;
  StreamAccountant acct(&rec);
  int64_t t = 1000;
  for (const char* payload :
       {R"({"choices":[{"text":" a","finish_reason":null}]})",
        R"({"choices":[{"text":" b","finish_reason":null}]})",
        R"({"choices":[{"text":"","finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}})",
        "[DONE]"})
    acct.OnPayload(parser.Parse(payload), t += 10);
  acct.Finish(true, t + 10);
  EXPECT_EQ(rec.outcome, Outcome::kOk);
  EXPECT_EQ(rec.output_tokens, 2);
  EXPECT_EQ(rec.method, TokenMethod::kUsageFinal);
  EXPECT_FALSE(rec.count_mismatch);
  EXPECT_EQ(rec.chunks.size(), 2u);
}

// Usage on every chunk (vLLM's continuous_usage_stats) counts each chunk's tokens: a chunk that
// brings the count from 1 to 3 carries 2. When the per-chunk usage starts after some chunks,
// those were counted one each and the first usage counts only what is beyond them.
TEST(StreamAccountantTest, PerChunkUsageCountsEachChunksTokens) {
  ChunkParser parser;
  RequestRecord rec;
  StreamAccountant acct(&rec);
  int64_t t = 1000;
  for (const char* payload :
       {R"({"choices":[{"text":" a","finish_reason":null}]})",
        R"({"choices":[{"text":" b c","finish_reason":null}],"usage":{"completion_tokens":3}})",
        R"({"choices":[{"text":" d","finish_reason":"length"}],"usage":{"completion_tokens":4}})",
        R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}})", "[DONE]"})
    acct.OnPayload(parser.Parse(payload), t += 10);
  acct.Finish(true, t + 10);
  EXPECT_EQ(rec.outcome, Outcome::kOk);
  EXPECT_EQ(rec.method, TokenMethod::kUsagePerChunk);
  EXPECT_EQ(rec.output_tokens, 4);
  EXPECT_FALSE(rec.count_mismatch);
  ASSERT_EQ(rec.chunks.size(), 3u);
  EXPECT_EQ(rec.chunks[0].second, 1);
  EXPECT_EQ(rec.chunks[1].second, 2);
  EXPECT_EQ(rec.chunks[2].second, 1);
}

// Media types are case-insensitive (RFC 9110): a server that answers "Text/Event-Stream" streams,
// and its requests are ok, not protocol failures.
TEST(RunnerTest, EventStreamContentTypeInAnyCase) {
  StatusOr<BenchRun> run = InvalidArgument("not run");
  {
    LocalServer server([](const http::Request&, std::shared_ptr<http::ResponseStream> w) {
      StreamTexts(*w, "Text/Event-Stream; Charset=UTF-8", {" a", " b"});
    });
    ASSERT_TRUE(server.ok());
    BenchOptions o = server.Options();
    o.concurrency = 1;
    o.num_requests = 3;
    run = RunBench(o);
  }
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->records.size(), 3u);
  for (const RequestRecord& r : run->records) {
    EXPECT_EQ(r.outcome, Outcome::kOk) << r.error;
    EXPECT_EQ(r.output_tokens, 2);
  }
}

// The sweep's runner never sends a prompt twice (a repeat would hit the server's prefix cache
// and read low): random prompts come as a new batch per round, warm-up included, all with the
// workload's shared prefix; a file's prompts go on from round to round and repeat only once all
// were sent. The server records every prompt it is sent.
TEST(SweepRunnerTest, RoundsSendNewPrompts) {
  std::mutex mu;
  std::vector<std::string> prompts, random_prompts;
  {
    LocalServer server([&](const http::Request& req, std::shared_ptr<http::ResponseStream> w) {
      auto body = nlohmann::json::parse(req.body, nullptr, false);
      if (body.is_object() && body.contains("prompt")) {
        std::lock_guard<std::mutex> lock(mu);
        prompts.push_back(body["prompt"].dump());
      }
      StreamTexts(*w, "text/event-stream", {" a"});
    });
    ASSERT_TRUE(server.ok());
    BenchOptions o = server.Options();
    o.warmup = 1;
    RandomWorkloadOptions w;
    w.input_len = 24;
    w.prefix_len = 8;
    w.output_len = 1;
    w.seed = 5;
    {
      auto runner = MakeBenchStepRunner(o, w);
      for (int round = 0; round < 3; ++round) ASSERT_TRUE(runner->RunRound(2, 6).ok());
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      random_prompts.swap(prompts);
    }
    o.prompts = RandomPrompts(w, 10);  // a "file" of 10 prompts, rounds of 4 + 1 warm-up
    auto runner = MakeBenchStepRunner(o);
    for (int round = 0; round < 3; ++round) ASSERT_TRUE(runner->RunRound(1, 4).ok());
  }

  ASSERT_EQ(random_prompts.size(), 3u * (6 + 1));
  EXPECT_EQ(std::set<std::string>(random_prompts.begin(), random_prompts.end()).size(), random_prompts.size());
  const std::string prefix = random_prompts[0].substr(0, 30);
  for (const auto& p : random_prompts) EXPECT_EQ(p.substr(0, 30), prefix);
  ASSERT_EQ(prompts.size(), 3u * (4 + 1));
  EXPECT_EQ(std::set<std::string>(prompts.begin(), prompts.begin() + 10).size(), 10u);
  EXPECT_EQ(prompts[10], prompts[0]);  // the file's prompts again only after all 10 were sent
}

}  // namespace
}  // namespace latdoc::loadgen
