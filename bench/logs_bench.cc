// Benchmarks for latdoc_logs. Target (issue 8): >= 200 MB/s of log text on one core for the
// whole path `latdoc logs` takes: line splitting, parsing and the one-pass analyzer.
//
// The input is a generated busy vLLM V1 log held in memory (so disk speed is not measured):
// per second ~40 requests, each with request logging ("Received request ...: params:
// SamplingParams(...)", ~640 bytes), "Added request" and a uvicorn access line; a stats line
// every 10 s; a warning now and then. The "color" variant adds the `(APIServer pid=N)` prefix
// and ANSI colours to every vLLM line. Bytes/s reported by Google Benchmark are log bytes.
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include <fmt/core.h>

#include "base/file_util.h"
#include "logs/line_parser.h"
#include "logs/line_reader.h"
#include "logs/log_analyzer.h"

namespace {

using namespace latdoc;

std::string Stamp(int64_t t) {
  return fmt::format("06-25 {:02d}:{:02d}:{:02d}", t / 3600 % 24, t / 60 % 60, t % 60);
}

std::string MakeLog(size_t bytes, bool color) {
  std::mt19937_64 rng(7);
  const std::string params =
      "SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
      "temperature=0.0, top_p=1.0, top_k=0, min_p=0.0, seed=None, stop=[], stop_token_ids=[], "
      "bad_words=[], include_stop_str_in_output=False, ignore_eos=True, max_tokens=128, "
      "min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, "
      "spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, "
      "extra_args=None)";
  auto prefix = [&](const char* level, int64_t t, const char* file) {
    if (!color) return fmt::format("{} {} [{}] ", level, Stamp(t), file);
    return fmt::format("\x1b[36m(APIServer pid=4242)\x1b[0m \x1b[32m{}\x1b[0m \x1b[90m{}\x1b[0m "
                       "\x1b[90m[{}]\x1b[0m ",
                       level, Stamp(t), file);
  };
  std::string out;
  out.reserve(bytes + 4096);
  int64_t t = 0;
  while (out.size() < bytes) {
    for (int sec = 0; sec < 10; ++sec, ++t) {
      for (int r = 0; r < 40; ++r) {
        std::string id = fmt::format("cmpl-{:016x}{:016x}-0", rng(), rng());
        out += prefix("INFO", t, "logger.py:43") + "Received request " + id + ": params: " +
               params + ", lora_request: None.\n";
        out += prefix("INFO", t, "async_llm.py:301") + "Added request " + id + ".\n";
        out += fmt::format("INFO:     127.0.0.1:{} - \"POST /v1/completions HTTP/1.1\" 200 OK\n",
                           40000 + rng() % 20000);
      }
      if (rng() % 20 == 0) {
        out += prefix("WARNING", t, "protocol.py:64") +
               fmt::format("The following fields were present in the request but ignored: "
                           "{{'x{}'}}\n",
                           rng() % 9);
      }
    }
    out += prefix("INFO", t, "loggers.py:123") +
           fmt::format("Engine 000: Avg prompt throughput: {:.1f} tokens/s, Avg generation "
                       "throughput: {:.1f} tokens/s, Running: {} reqs, Waiting: {} reqs, GPU KV "
                       "cache usage: {:.1f}%, Prefix cache hit rate: {:.1f}%\n",
                       1000.0 + static_cast<double>(rng() % 8000), 100.0 + static_cast<double>(rng() % 1900),
                       rng() % 64, rng() % 8, 10.0 + static_cast<double>(rng() % 89),
                       static_cast<double>(rng() % 60));
  }
  return out;
}

const std::string& Log(bool color) {
  static const std::string plain = MakeLog(64 << 20, false);
  static const std::string colored = MakeLog(64 << 20, true);
  return color ? colored : plain;
}

// Line splitting only (LineReader over an in-memory InputStream).
void BM_SplitLines(benchmark::State& state) {
  const std::string& log = Log(false);
  for (auto _ : state) {
    auto in = OpenMemoryInput(log);
    logs::LineReader reader(in.get());
    logs::Line line;
    uint64_t n = 0;
    while (*reader.Next(&line)) ++n;
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * log.size()));
}
BENCHMARK(BM_SplitLines)->Unit(benchmark::kMillisecond);

// Splitting and parsing, no analysis.
void BM_ParseLines(benchmark::State& state) {
  const std::string& log = Log(state.range(0) != 0);
  for (auto _ : state) {
    auto in = OpenMemoryInput(log);
    logs::LineReader reader(in.get());
    logs::LineParser parser;
    logs::Line line;
    uint64_t stats = 0;
    while (*reader.Next(&line)) stats += parser.Parse(line.text).event == logs::Event::kStats;
    benchmark::DoNotOptimize(stats);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * log.size()));
}
BENCHMARK(BM_ParseLines)->Arg(0)->Arg(1)->ArgName("color")->Unit(benchmark::kMillisecond);

// The whole path of `latdoc logs FILE`: split, parse, analyze, snapshot the facts.
void BM_AnalyzeLog(benchmark::State& state) {
  const std::string& log = Log(state.range(0) != 0);
  for (auto _ : state) {
    auto in = OpenMemoryInput(log);
    logs::LogAnalyzer analyzer;
    analyzer.BeginInput("bench.log", Compression::kNone);
    logs::LineReader reader(in.get());
    auto n = logs::FeedLines(reader, *in, analyzer, true);
    if (!n.ok()) state.SkipWithError("feed failed");
    benchmark::DoNotOptimize(analyzer.Snapshot());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * log.size()));
}
BENCHMARK(BM_AnalyzeLog)->Arg(0)->Arg(1)->ArgName("color")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
