#include "whatif/effects.h"

#include <cmath>
#include <string>

#include <fmt/core.h>

#include "loadgen/load_facts.h"
#include "whatif/calibration.h"
#include "whatif/prediction.h"

namespace latdoc::whatif {

namespace keys = loadgen::keys;
namespace {

// The flags of the model that `advice` sets, as --set pairs ("--max-num-seqs 64" ->
// max-num-seqs=64; llama.cpp's "--parallel 4" -> parallel=4). Advice text is free: only
// "--FLAG NUMBER" and the chunked-prefill switches count.
std::vector<std::pair<std::string, std::string>> SetsIn(const std::string& advice) {
  std::vector<std::pair<std::string, std::string>> sets;
  for (const char* flag : {"max-num-seqs", "max-num-batched-tokens", "gpu-memory-utilization", "parallel",
                           "batch-size"}) {
    const std::string needle = std::string("--") + flag + " ";
    auto at = advice.find(needle);
    if (at == std::string::npos) continue;
    size_t from = at + needle.size(), to = from;
    while (to < advice.size() && (std::isdigit(static_cast<unsigned char>(advice[to])) || advice[to] == '.')) ++to;
    while (to > from && advice[to - 1] == '.') --to;  // a sentence's full stop
    if (to > from) sets.emplace_back(flag, advice.substr(from, to - from));
  }
  if (advice.find("--no-enable-chunked-prefill") != std::string::npos) {
    sets.emplace_back("enable-chunked-prefill", "false");
  } else if (advice.find("--enable-chunked-prefill") != std::string::npos) {
    sets.emplace_back("enable-chunked-prefill", "true");
  }
  return sets;
}

bool AboutModelFlags(const rules::Finding& f) {
  if (f.advice.empty()) return false;
  if (f.id != "load.sweep_knee" && f.layer != rules::Layer::kConfig) return false;
  for (const char* k : {"max-num-seqs", "max-num-batched-tokens", "gpu-memory-utilization", "chunked-prefill",
                        "--parallel", "--batch-size"})
    if (f.advice.find(k) != std::string::npos) return true;
  return false;
}

std::optional<double> EvidenceValue(const std::vector<rules::Finding>& fs, const char* id, const char* name) {
  for (const auto& f : fs)
    if (f.id == id)
      for (const auto& e : f.evidence)
        if (e.name == name && e.value) return e.value;
  return std::nullopt;
}

}  // namespace

void AddPredictedEffects(const nlohmann::json& sweep, int target_concurrency,
                         std::vector<rules::Finding>& findings, int requests) {
  bool any = false;
  for (const auto& f : findings) any |= AboutModelFlags(f);
  if (!any) return;
  auto add = [](rules::Finding& f, std::string text) {
    f.evidence.push_back({"predicted_effect", std::nullopt, "", std::move(text)});
  };
  // The server's flags as the config checks read them calibrate the limits.
  CalibrateOptions co;
  co.source_name = "the sweep";
  if (auto v = EvidenceValue(findings, "config.max_num_seqs", "max_num_seqs")) co.flags.max_num_seqs = int(*v);
  if (auto v = EvidenceValue(findings, "config.max_num_batched_tokens", "max_num_batched_tokens"))
    co.flags.max_num_batched_tokens = int(*v);
  if (auto v = EvidenceValue(findings, "config.gpu_memory_utilization", "gpu_memory_utilization"))
    co.flags.gpu_memory_utilization = *v;
  auto cal = Calibrate(sweep, co);
  std::string refusal;
  if (!cal.ok()) {
    refusal = cal.status().message();
  } else if (cal->server == kServerLlamaCpp && cal->engine.max_num_seqs >= (1 << 20)) {
    // Without its slots the model has no batch limit: neither the fit nor "now" means much.
    refusal = "llama.cpp's slots (-np) are not known to the diagnosis: latdoc calibrate "
              "SWEEP.json --parallel N, then latdoc whatif --set parallel=M";
  } else if (!cal->usable) {
    refusal = cal->refusal;
  }
  std::optional<Prediction> now;
  WhatifRequest base;
  base.load = target_concurrency;
  base.requests = requests;
  if (refusal.empty()) {
    auto p = Predict(*cal, base);
    if (p.ok()) now = std::move(*p);
    else refusal = p.status().message();
  }
  for (rules::Finding& f : findings) {
    if (!AboutModelFlags(f)) continue;
    if (!refusal.empty()) {
      add(f, "not predictable: " + refusal);
      continue;
    }
    WhatifRequest r = base;
    r.sets = SetsIn(f.advice);
    if (r.sets.empty()) {
      add(f, "not predictable: the advice names no value of a flag the model has");
      continue;
    }
    if (f.id == "config.gpu_memory_utilization") {
      // The GPU's memory is in the finding; what the weights and activations take is not
      // known to the diagnosis.
      add(f, "not predictable: the KV cache it would give depends on the memory the weights and "
             "activations take, which the diagnosis does not know (latdoc whatif --set "
             "gpu-memory-utilization=U --set gpu-memory-gib=G --set non-kv-gib=W)");
      continue;
    }
    auto p = Predict(*cal, r);
    if (!p.ok()) {
      add(f, "not predictable: " + p.status().message());
      continue;
    }
    const Interval* ttft = p->Get(keys::kP99TtftMs);
    const Interval* tput = p->Get(keys::kOutputThroughput);
    const Interval* ttft0 = now->Get(keys::kP99TtftMs);
    const Interval* tput0 = now->Get(keys::kOutputThroughput);
    add(f, fmt::format("at {} concurrent: p99 TTFT {:.4g} -> {:.4g} ms [{:.4g}, {:.4g}], output "
                       "{:.4g} -> {:.4g} tokens/s [{:.4g}, {:.4g}] (model calibrated on the sweep)",
                       target_concurrency, ttft0->value, ttft->value, ttft->lo, ttft->hi,
                       tput0->value, tput->value, tput->lo, tput->hi));
  }
}

}  // namespace latdoc::whatif
