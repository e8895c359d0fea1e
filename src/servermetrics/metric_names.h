// Which exposed metric of which server fills which ServerSnapshot field: one table per
// server (vLLM `vllm:`, llama.cpp `llamacpp:`, SGLang `sglang:`, TGI `tgi_`). Adding a
// server is adding one table in metric_names.cc and one row in kServers; nothing else
// changes.
//
// Within a table, entries for the same field are in order of preference: the first name that
// has samples on the page wins (so vLLM's `kv_cache_usage_perc` beats the deprecated
// `gpu_cache_usage_perc`, and `inter_token_latency_seconds` beats
// `time_per_output_token_seconds`, which 0.11 exposes with the same observations).
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "servermetrics/server_snapshot.h"

namespace latdoc::servermetrics {

// How the label sets of one scalar combine: counts add up; a fraction per engine does not
// (two engines at 40% KV use are not at 80%), so it takes the fullest engine.
enum class Combine { kSum, kMax };

struct ScalarName {
  std::string_view exposed;                      // full sample name, e.g. "vllm:prompt_tokens_total"
  std::optional<double> ServerSnapshot::*field;  // combined over the label sets kept
  Combine combine = Combine::kSum;
  double scale = 1.0;                            // multiplies the value (e.g. percent -> fraction)
  // When set, the value is also summed per value of this label into
  // request_success_by_reason (vLLM's finished_reason).
  std::string_view by_reason_label = {};
};

struct HistogramName {
  std::string_view exposed;  // base name; the page has <base>_bucket/_sum/_count
  std::optional<HistogramData> ServerSnapshot::*field;
};

struct ServerMetricTable {
  std::string_view server;       // "vllm"
  std::string_view prefix;       // "vllm:"; a page with any such sample is this server's
  std::string_view model_label;  // "model_name"; "" when the server has no model label
  std::span<const ScalarName> scalars;
  std::span<const HistogramName> histograms;
};

// Every table, in the order BuildSnapshot() tries them.
std::span<const ServerMetricTable> KnownServers();

// How people write the server a table is named for ("vllm" -> "vLLM", "llamacpp" ->
// "llama.cpp"); any other id as it is.
std::string_view ServerKindName(std::string_view id);

}  // namespace latdoc::servermetrics
