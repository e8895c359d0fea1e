// The log pipeline on arbitrary file content, as `latdoc logs FILE` runs it: the input is
// written to a temporary file and read by AnalyzeInputs (compression detected from the magic
// bytes, so gzip/zstd seeds exercise the decompressors; lines through LineReader with a small
// maximum line length, every line through LineParser and the analyzer). The first byte picks
// the maximum line length. The same bytes go through the parser of vLLM's startup line.
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include <nlohmann/json.hpp>

#include "base/secrets.h"
#include "logs/log_analyzer.h"
#include "logs/log_facts.h"
#include "logs/vllm_startup.h"

namespace {

// Whether a key that names a secret holds anything but "<redacted>", at any depth, strings that
// are themselves JSON included.
bool HoldsSecret(const nlohmann::json& j, int depth = 0) {
  if (depth > 200) return false;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (latdoc::IsSecretName(k) && v != std::string(latdoc::kRedacted)) return true;
      if (HoldsSecret(v, depth + 1)) return true;
    }
  } else if (j.is_array()) {
    for (const auto& v : j) {
      if (HoldsSecret(v, depth + 1)) return true;
    }
  } else if (j.is_string()) {
    auto inner = nlohmann::json::parse(j.get<std::string>(), nullptr, false);
    if (!inner.is_discarded() && (inner.is_object() || inner.is_array())) return HoldsSecret(inner, depth + 1);
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The startup line's Python-repr parser on the raw bytes, and its secrets rule: no flag names
  // a secret, and no JSON value holds one under any key that names a secret.
  if (auto flags = latdoc::logs::VllmFlagsFromLoggedArgs(
          "non-default args: " + std::string(latdoc::fuzz::AsView(data, size)))) {
    for (const auto& f : *flags) {
      if (latdoc::IsSecretName(f.flag)) __builtin_trap();
      for (const auto& v : f.values) {
        if (HoldsSecret(nlohmann::json(v))) __builtin_trap();
      }
    }
  }
  latdoc::logs::AnalyzeOptions opts;
  opts.max_line_bytes = 16 + data[0] * 4;
  std::string path = latdoc::fuzz::WriteScratch("server.log", latdoc::fuzz::AsView(data + 1, size - 1));
  auto facts = latdoc::logs::AnalyzeInputs({path}, opts);
  if (facts.ok()) (void)latdoc::logs::ToJson(*facts).dump(2);  // as `latdoc logs --json` writes it
  return 0;
}
