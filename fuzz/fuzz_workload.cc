// The dataset reader of `latdoc bench --dataset` on arbitrary file content: JSONL (the first
// byte of the input picks a .jsonl name) or ShareGPT JSON.
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "loadgen/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* name = data[0] & 1 ? "dataset.jsonl" : "dataset.json";
  std::string path = latdoc::fuzz::WriteScratch(name, latdoc::fuzz::AsView(data + 1, size - 1));
  auto w = latdoc::loadgen::LoadWorkloadFile(path, 128);
  if (w.ok()) {
    if (w->prompts.empty()) __builtin_trap();  // documented: no usable entry is an error
    for (const auto& p : w->prompts) {
      if (p.output_tokens <= 0) __builtin_trap();
    }
  }
  return 0;
}
