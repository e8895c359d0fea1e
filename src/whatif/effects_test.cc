#include "whatif/effects.h"

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "whatif/calibration.h"
#include "whatif/prediction.h"
#include "whatif/virtual_run.h"

namespace latdoc::whatif {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A sweep the model itself measured (max_num_seqs 16), as in calibration_test.cc.
json Sweep() {
  sim::EngineConfig e;
  e.step_base_ms = 8, e.step_decode_seq_us = 150, e.step_prefill_token_us = 40;
  e.step_context_token_ns = 0, e.max_num_seqs = 16;
  json doc = {{"schema", "latdoc.sweep/1"}, {"mode", "concurrency"},
              {"workload", {{"dataset", "random"}, {"input_len", 128}, {"output_len", 32}}},
              {"stability", {{"min_requests", 16}}}, {"steps", json::array()}};
  for (int c : {1, 2, 4, 8, 16, 32}) {
    VirtualRunOptions o;
    o.engine = e;
    o.workload = {128, 32, 0, uint64_t(c)};
    o.load = c;
    o.round_requests = std::max(16, 2 * c);
    o.front_ms = 0.2;
    auto m = VirtualRun(o);
    doc["steps"].push_back({{"concurrency", c}, {"requests", o.round_requests}, {"failed", 0},
                            {"median_ttft_ms", m->median_ttft_ms}, {"p99_ttft_ms", m->p99_ttft_ms},
                            {"median_itl_ms", m->median_itl_ms}, {"output_throughput", m->output_throughput},
                            {"server_metrics", {{"max_running", m->max_running}}}});
  }
  return doc;
}

rules::Finding Config(std::string id, std::string advice) {
  rules::Finding f;
  f.id = std::move(id);
  f.layer = rules::Layer::kConfig;
  f.severity = rules::Severity::kWarn;
  f.advice = std::move(advice);
  return f;
}

std::string Effect(const rules::Finding& f) {
  for (const auto& e : f.evidence)
    if (e.name == "predicted_effect") return e.text;
  return "";
}

// The line says what the advised flag does at the target load, with the numbers whatif gives.
TEST(EffectsTest, AdvisedFlagGetsItsPredictedEffect) {
  std::vector<rules::Finding> fs = {Config("config.max_num_seqs", "--max-num-seqs 8"),
                                    Config("config.block_size", "drop --block-size"),
                                    Config("config.gpu_memory_utilization", "--gpu-memory-utilization 0.92")};
  AddPredictedEffects(Sweep(), 32, fs);
  auto cal = Calibrate(Sweep(), {{}, "the sweep", ""});
  ASSERT_TRUE(cal.ok() && cal->usable);
  WhatifRequest r;
  r.load = 32;
  auto now = Predict(*cal, r);
  r.sets = {{"max-num-seqs", "8"}};
  auto then = Predict(*cal, r);
  ASSERT_TRUE(now.ok() && then.ok());
  EXPECT_EQ(Effect(fs[0]),
            fmt::format("at 32 concurrent: p99 TTFT {:.4g} -> {:.4g} ms [{:.4g}, {:.4g}], output {:.4g} -> "
                        "{:.4g} tokens/s [{:.4g}, {:.4g}] (model calibrated on the sweep)",
                        now->Get("p99_ttft_ms")->value, then->Get("p99_ttft_ms")->value,
                        then->Get("p99_ttft_ms")->lo, then->Get("p99_ttft_ms")->hi,
                        now->Get("output_throughput")->value, then->Get("output_throughput")->value,
                        then->Get("output_throughput")->lo, then->Get("output_throughput")->hi));
  EXPECT_EQ(Effect(fs[1]), "");  // not a flag of the model
  EXPECT_THAT(Effect(fs[2]), StartsWith("not predictable: the KV cache it would give depends on"));
}

TEST(EffectsTest, PoorCalibrationMakesEveryLineNotPredictable) {
  json doc = Sweep();
  doc["steps"] = json::array({doc["steps"][0], doc["steps"][1]});
  std::vector<rules::Finding> fs = {Config("config.max_num_seqs", "--max-num-seqs 8")};
  fs.push_back(Config("load.sweep_knee", "--max-num-seqs 13 --max-num-batched-tokens 256 (the sweep's recommendation)"));
  fs.back().layer = rules::Layer::kLoad;
  AddPredictedEffects(doc, 32, fs);
  for (const auto& f : fs) {
    EXPECT_EQ(Effect(f), "not predictable: 2 usable step(s): at least 3 are needed to fit the step time");
  }
}

// A sweep of llama.cpp: its advice names --parallel, which is the model's batch limit; without
// the slots known (llama.cpp's metrics give no running count), every line says so.
TEST(EffectsTest, LlamaCppAdviceNeedsItsSlots) {
  json doc = Sweep();
  doc["recommendations"] = {{"parallel", {{"flag", "--parallel"}, {"value", 8}, {"reason", ""}}}};
  for (json& s : doc["steps"]) s["server_metrics"]["max_running"] = nullptr;
  std::vector<rules::Finding> fs = {Config("load.sweep_knee", "--parallel 8 --batch-size 256 (the sweep's recommendation)")};
  fs.back().layer = rules::Layer::kLoad;
  AddPredictedEffects(doc, 32, fs);
  EXPECT_EQ(Effect(fs[0]),
            "not predictable: llama.cpp's slots (-np) are not known to the diagnosis: latdoc calibrate "
            "SWEEP.json --parallel N, then latdoc whatif --set parallel=M");
  // With the running plateau measured (16 while 32 waited), the advice is predicted.
  fs = {Config("load.sweep_knee", "--parallel 8 --batch-size 256 (the sweep's recommendation)")};
  fs.back().layer = rules::Layer::kLoad;
  json measured = Sweep();
  measured["recommendations"] = doc["recommendations"];
  AddPredictedEffects(measured, 32, fs);
  EXPECT_THAT(Effect(fs[0]), StartsWith("at 32 concurrent: p99 TTFT "));
}

}  // namespace
}  // namespace latdoc::whatif
