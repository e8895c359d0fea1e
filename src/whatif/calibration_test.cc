#include "whatif/calibration.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "whatif/prediction.h"

namespace latdoc::whatif {
namespace {

using nlohmann::json;

sim::EngineConfig Hidden() {
  sim::EngineConfig e;
  e.step_base_ms = 8;
  e.step_decode_seq_us = 150;
  e.step_prefill_token_us = 40;
  e.step_context_token_ns = 0;
  e.max_num_seqs = 16;
  e.max_num_batched_tokens = 8192;
  return e;
}

// A latdoc.sweep/1 document as `latdoc sweep` writes it, each step measured by the virtual
// runner on `hidden` (the ground truth) with the sweep's round structure (min_requests 16).
json SyntheticSweep(const sim::EngineConfig& hidden, double front_ms) {
  json doc = {{"schema", "latdoc.sweep/1"}, {"mode", "concurrency"},
              {"workload", {{"dataset", "random"}, {"input_len", 128}, {"output_len", 32}, {"range_ratio", 0}}},
              {"stability", {{"min_requests", 16}}}, {"server_max_num_seqs", nullptr}};
  json steps = json::array();
  for (int c : {1, 2, 4, 8, 16, 32}) {
    VirtualRunOptions o;
    o.engine = hidden;
    o.workload = {128, 32, 0, uint64_t(c)};
    o.load = c;
    o.round_requests = c * ((8 + c - 1) / c);
    o.rounds = std::max(1, std::max(16, 2 * c) / o.round_requests);
    o.front_ms = front_ms;
    auto m = VirtualRun(o);
    EXPECT_TRUE(m.ok());
    steps.push_back({{"concurrency", c}, {"requests", o.round_requests * o.rounds}, {"failed", 0},
                     {"median_ttft_ms", m->median_ttft_ms}, {"p99_ttft_ms", m->p99_ttft_ms},
                     {"median_itl_ms", m->median_itl_ms}, {"p99_itl_ms", m->p99_itl_ms},
                     {"output_throughput", m->output_throughput},
                     {"server_metrics", {{"max_running", m->max_running},
                                         {"max_kv_cache_usage", m->max_kv_cache_usage},
                                         {"step_time_ms", m->mean_step_ms}}}});
  }
  doc["steps"] = steps;
  return doc;
}

// On a sweep the model itself produced, the fit finds the hidden step costs again, and the
// running plateau at 16 while 32 clients waited is taken for max_num_seqs.
TEST(CalibrationTest, RecoversHiddenStepCosts) {
  auto cal = Calibrate(SyntheticSweep(Hidden(), 0.3), {{}, "sweep.json", ""});
  ASSERT_TRUE(cal.ok()) << cal.status().ToString();
  EXPECT_TRUE(cal->usable) << cal->refusal;
  EXPECT_NEAR(cal->engine.step_base_ms, 8, 8 * 0.05);
  EXPECT_NEAR(cal->engine.step_decode_seq_us, 150, 150 * 0.15);
  EXPECT_NEAR(cal->engine.step_prefill_token_us, 40, 40 * 0.15);
  EXPECT_EQ(cal->engine.max_num_seqs, 16);
  EXPECT_LT(cal->rms_throughput, 0.05);
  EXPECT_LT(cal->rms_itl, 0.05);
  ASSERT_GE(cal->parameters.size(), 4u);
  EXPECT_EQ(cal->parameters[0].name, "step_base_ms");
  ASSERT_TRUE(cal->parameters[0].sigma.has_value());
  const std::string text = CalibrationText(*cal);
  EXPECT_THAT(text, ::testing::HasSubstr("\n      conc          median ITL ms         median TTFT ms            p99 TTFT ms               tokens/s\n         1 "));
  EXPECT_THAT(text, ::testing::EndsWith("Usable for prediction (latdoc whatif --calibration ...)\n"));
}

// What the fit writes it reads back; whatif then predicts from it.
TEST(CalibrationTest, RoundTripsThroughJsonAndPredicts) {
  auto cal = Calibrate(SyntheticSweep(Hidden(), 0.3), {{}, "sweep.json", ""});
  ASSERT_TRUE(cal.ok());
  auto back = CalibrationFromJson(json::parse(CalibrationJson(*cal).dump()), "cal.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->engine.max_num_seqs, 16);
  EXPECT_DOUBLE_EQ(back->engine.step_base_ms, cal->engine.step_base_ms);
  WhatifRequest r;
  r.load = 8;
  r.sets = {{"max-num-seqs", "4"}};
  auto p = Predict(*back, r);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const Interval* ttft = p->Get("p99_ttft_ms");
  ASSERT_NE(ttft, nullptr);
  EXPECT_LE(ttft->lo, ttft->value);
  EXPECT_GE(ttft->hi, ttft->value);
  EXPECT_EQ(p->max_running, 4);
}

TEST(CalibrationTest, BadDocumentsSayWhatAndWhere) {
  auto not_sweep = Calibrate(json{{"schema", "latdoc.bench/1"}}, {{}, "x.json", ""});
  EXPECT_EQ(not_sweep.status().message(),
            "x.json: schema \"latdoc.bench/1\": expected latdoc.sweep/1 or latdoc.diagnose/1");
  auto diag = Calibrate(json{{"schema", "latdoc.diagnose/1"}}, {{}, "d.json", ""});
  EXPECT_THAT(diag.status().message(), ::testing::StartsWith("d.json: no \"sweep\": a diagnosis has two load points"));
  json doc = SyntheticSweep(Hidden(), 0);
  doc["steps"][2]["median_itl_ms"] = "fast";
  auto bad = Calibrate(doc, {{}, "s.json", ""});
  EXPECT_EQ(bad.status().message(), "s.json: steps[2].median_itl_ms: expected a number");
  doc.erase("workload");
  EXPECT_THAT(Calibrate(doc, {{}, "s.json", ""}).status().message(), ::testing::StartsWith("s.json: no \"workload\""));
  auto cal = CalibrationFromJson(json{{"schema", "latdoc.calibration/1"}, {"usable", true},
                                      {"workload", {{"input_len", 1}, {"output_len", 1}}},
                                      {"model", {{"step_base_ms", "x"}}}}, "cal.json");
  EXPECT_EQ(cal.status().message(), "cal.json: model.step_base_ms: expected a number");
}

// A diagnosis: its sweep, plus its baseline and load steps (bench documents) as two points.
TEST(CalibrationTest, DiagnosisAddsBaselineAndLoadSteps) {
  json sweep = SyntheticSweep(Hidden(), 0.3);
  json bench = sweep["steps"][3];  // 8 concurrent, as bench would write it
  bench["max_concurrency"] = 8;
  bench["completed"] = bench["requests"];
  json baseline = sweep["steps"][0];
  baseline["max_concurrency"] = 1;
  baseline["completed"] = baseline["requests"];
  json doc = {{"schema", "latdoc.diagnose/1"}, {"sweep", sweep}, {"baseline", baseline}, {"bench", bench}};
  auto cal = Calibrate(doc, {{}, "diag.json", ""});
  ASSERT_TRUE(cal.ok()) << cal.status().ToString();
  ASSERT_EQ(cal->points.size(), 8u);
  EXPECT_EQ(cal->points[0].from, "sweep");
  EXPECT_EQ(cal->points[1].from, "baseline");
  EXPECT_EQ(cal->points[1].load, 1);
  EXPECT_EQ(cal->points[5].from, "load");
  EXPECT_TRUE(cal->usable) << cal->refusal;
  EXPECT_THAT(CalibrationText(*cal), ::testing::HasSubstr(" (baseline)\n"));
  // The runs are read as bench results (loadgen::LoadFactsFromJson): a figure of the wrong type
  // is an error naming the run and the key.
  doc["bench"]["p99_ttft_ms"] = "slow";
  EXPECT_EQ(Calibrate(doc, {{}, "diag.json", ""}).status().message(),
            "diag.json: bench.p99_ttft_ms: expected a number");
}

// Two steps cannot pin four parameters: the calibration says so and is not usable.
TEST(CalibrationTest, TooFewStepsIsARefusal) {
  json doc = SyntheticSweep(Hidden(), 0);
  doc["steps"] = json::array({doc["steps"][0], doc["steps"][1]});
  auto cal = Calibrate(doc, {{}, "s.json", ""});
  ASSERT_TRUE(cal.ok());
  EXPECT_FALSE(cal->usable);
  EXPECT_EQ(cal->refusal, "2 usable step(s): at least 3 are needed to fit the step time");
  WhatifRequest r;
  r.load = 4;
  EXPECT_EQ(Predict(*cal, r).status().message(),
            "the calibration is not usable for prediction: 2 usable step(s): at least 3 are needed to fit the step time");
}

// A server the model does not describe (TTFT that grows with load far beyond any queueing) is
// refused, with the error that made it so.
TEST(CalibrationTest, PoorFitIsRefused) {
  json doc = SyntheticSweep(Hidden(), 0.3);
  for (size_t i = 0; i < doc["steps"].size(); ++i) {
    doc["steps"][i]["median_ttft_ms"] = 50.0 * double(1 << i);
    doc["steps"][i]["p99_ttft_ms"] = 400.0 / double(1 << i);
  }
  auto cal = Calibrate(doc, {{}, "s.json", ""});
  ASSERT_TRUE(cal.ok());
  EXPECT_FALSE(cal->usable);
  EXPECT_THAT(cal->refusal, ::testing::HasSubstr("TTFT (median and p99) off by"));
}

TEST(CalibrationTest, UnknownSetKeyIsBadInput) {
  auto cal = Calibrate(SyntheticSweep(Hidden(), 0.3), {{}, "sweep.json", ""});
  ASSERT_TRUE(cal.ok());
  auto e = ApplySets(*cal, {{"max-num-sequences", "4"}});
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), ::testing::StartsWith("--set max-num-sequences=4: unknown key (known: max-num-seqs,"));
  EXPECT_EQ(ApplySets(*cal, {{"max-num-seqs", "0"}}).status().message(), "--set max-num-seqs=0: expected an integer >= 1");
  EXPECT_EQ(ApplySets(*cal, {{"gpu-memory-utilization", "0.95"}}).status().code(), StatusCode::kUnimplemented);
  auto more = ApplySets(*cal, {{"gpu-memory-utilization", "0.95"}, {"gpu-memory-gib", "80"}, {"non-kv-gib", "18"}});
  ASSERT_TRUE(more.ok());
  // (80 x 0.95 - 18) / (80 x 0.9 - 18) = 58 / 54 more blocks.
  EXPECT_NEAR(double(more->num_gpu_blocks_override) / cal->engine.num_gpu_blocks_override, 58.0 / 54, 1e-3);
}

// A sweep of llama.cpp (its advice in llama.cpp's flags: "recommendations.parallel") is
// calibrated as llama.cpp: --parallel is the batch limit, --ctx-size the KV cache in tokens
// (blocks of 16), --batch-size defaults to 2048, and whatif takes llama.cpp's flag names.
TEST(CalibrationTest, LlamaCppSweepTakesItsFlags) {
  json doc = SyntheticSweep(Hidden(), 0.3);
  doc["recommendations"] = {{"parallel", {{"flag", "--parallel"}, {"value", nullptr}, {"reason", ""}}}};
  CalibrateOptions o{{}, "llama.json", ""};
  o.flags.max_num_seqs = 16;
  o.flags.ctx_size = 4096;
  auto cal = Calibrate(doc, o);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_EQ(cal->server, kServerLlamaCpp);
  EXPECT_EQ(cal->engine.max_num_seqs, 16);
  EXPECT_EQ(cal->engine.num_gpu_blocks_override, 4096 / 16);
  EXPECT_EQ(cal->engine.max_num_batched_tokens, 2048);
  EXPECT_TRUE(cal->engine.enable_chunked_prefill);
  EXPECT_EQ(cal->ctx_size, 4096);
  EXPECT_THAT(CalibrationText(*cal), ::testing::StartsWith("Calibration of llama.json (llama.cpp, 6 steps"));
  // The document round-trips the server and its context.
  auto back = CalibrationFromJson(json::parse(CalibrationJson(*cal).dump()), "cal.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->server, kServerLlamaCpp);
  EXPECT_EQ(back->ctx_size, 4096);

  auto e = ApplySets(*cal, {{"parallel", "4"}, {"ctx-size", "1024"}, {"batch-size", "512"}, {"ubatch-size", "128"}});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->max_num_seqs, 4);
  EXPECT_EQ(e->num_gpu_blocks_override, 1024 / 16);
  EXPECT_EQ(e->max_num_batched_tokens, 512);
  EXPECT_EQ(ApplySets(*cal, {{"parallel", "0"}}).status().message(), "--set parallel=0: expected an integer >= 1");

  // 128 + 32 tokens do not fit 1024 / 8 = 128: llama.cpp rejects such a request.
  ASSERT_TRUE(cal->usable) << cal->refusal;
  {
    WhatifRequest r;
    r.load = 4;
    r.requests = 16;
    r.sets = {{"parallel", "8"}, {"ctx-size", "1024"}};
    auto p = Predict(*cal, r);
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(p.status().message(),
              "a request of 160 tokens does not fit a slot's 128 tokens (ctx-size 1024 / parallel 8): "
              "llama.cpp rejects it");
    // The context as given, not rounded to blocks: 1000 / 8 = 125.
    r.sets = {{"parallel", "8"}, {"ctx-size", "1000"}};
    EXPECT_EQ(Predict(*cal, r).status().message(),
              "a request of 160 tokens does not fit a slot's 125 tokens (ctx-size 1000 / parallel 8): "
              "llama.cpp rejects it");
    r.sets = {{"parallel", "4"}};
    auto ok = Predict(*cal, r);
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    EXPECT_EQ(ok->engine.max_num_seqs, 4);
  }
}

// Without --parallel a llama.cpp calibration says the running requests were not measured.
TEST(CalibrationTest, LlamaCppWithoutParallelSaysSo) {
  json doc = SyntheticSweep(Hidden(), 0.3);
  for (json& s : doc["steps"]) s["server_metrics"]["max_running"] = nullptr;
  auto cal = Calibrate(doc, {{}, "llama.json", kServerLlamaCpp});
  ASSERT_TRUE(cal.ok());
  EXPECT_THAT(cal->notes, ::testing::Contains(
                              "the running requests were not measured (llama.cpp's metrics the sweep "
                              "samples give none): pass its -np as --parallel; predictions assume no "
                              "batch limit"));
}

// A vLLM sweep stays vLLM's, and a bad "server" in a calibration document is bad input.
TEST(CalibrationTest, ServerKindDefaultsToVllm) {
  auto cal = Calibrate(SyntheticSweep(Hidden(), 0.3), {{}, "sweep.json", ""});
  ASSERT_TRUE(cal.ok());
  EXPECT_EQ(cal->server, kServerVllm);
  json j = json::parse(CalibrationJson(*cal).dump());
  EXPECT_EQ(j["server"], "vllm");
  EXPECT_TRUE(j["model"]["ctx_size"].is_null());
  j["server"] = "tgi";
  EXPECT_EQ(CalibrationFromJson(j, "cal.json").status().message(),
            "cal.json: server: expected \"vllm\" or \"llamacpp\"");
}

}  // namespace
}  // namespace latdoc::whatif
