// The log pipeline on arbitrary file content, as `latdoc logs FILE` runs it: the input is
// written to a temporary file and read by AnalyzeInputs (compression detected from the magic
// bytes, so gzip/zstd seeds exercise the decompressors; lines through LineReader with a small
// maximum line length, every line through LineParser and the analyzer). The first byte picks
// the maximum line length. The same bytes go through the parser of vLLM's startup line.
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include <nlohmann/json.hpp>

#include "logs/log_analyzer.h"
#include "logs/log_facts.h"
#include "logs/vllm_startup.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The startup line's Python-repr parser on the raw bytes, and its secrets rule: no word of the
  // argv comes after a flag that names a key or token.
  if (auto argv = latdoc::logs::VllmArgvFromLoggedArgs(
          "non-default args: " + std::string(latdoc::fuzz::AsView(data, size)))) {
    for (const auto& w : *argv) {
      if (w == "--api-key" || w == "--hf-token") __builtin_trap();
    }
  }
  latdoc::logs::AnalyzeOptions opts;
  opts.max_line_bytes = 16 + data[0] * 4;
  std::string path = latdoc::fuzz::WriteScratch("server.log", latdoc::fuzz::AsView(data + 1, size - 1));
  auto facts = latdoc::logs::AnalyzeInputs({path}, opts);
  if (facts.ok()) (void)latdoc::logs::ToJson(*facts).dump(2);  // as `latdoc logs --json` writes it
  return 0;
}
