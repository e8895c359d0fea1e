// Every /proc and /sys text parser of src/host on the same arbitrary bytes (each parser must
// take any content: a file can change while it is read, and --sysroot trees come from
// elsewhere), plus the argv and environ handling of a server's /proc/PID/cmdline and environ
// (NUL-separated words), a vLLM --config YAML file, and the facts file that `doctor --facts`
// reads.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "host/host_facts.h"
#include "host/proc_parsers.h"
#include "host/server_process.h"
#include "host/vllm_config.h"

using namespace latdoc::host;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = latdoc::fuzz::AsView(data, size);
  if (auto g = ParseLinkSpeedGts(text)) (void)PcieGenFromGts(*g);
  (void)ParseCpuList(text);
  (void)ParseSockstat(text);
  int64_t bad = 0;
  (void)CountTimeWaitOnPort(text, 8000, &bad);
  (void)ParseCounterPairs(text);
  (void)ParseInterrupts(text);
  (void)ParseTaskStat(text);
  (void)StatusField(text, "Threads");
  (void)ParseIoWriteBytes(text);
  (void)ParseDiskIoTicks(text);
  (void)BracketedChoice(text);
  (void)ParsePpDpmSclk(text);
  (void)ParseSoftnetStat(text);
  for (const auto& [name, per_cpu] : ParseStatTable(text)) {  // no growth between equal samples
    if (Counter32Delta(per_cpu, per_cpu) != 0) __builtin_trap();
  }
  std::vector<std::string> words = SplitNul(text);
  (void)ServerKindFromArgv(words);
  std::vector<std::string> redacted = RedactArgv(words);
  if (redacted.size() != words.size()) __builtin_trap();
  for (size_t i = 0; i + 1 < words.size(); ++i) {  // a key after --api-key never survives
    if (words[i] == "--api-key" && redacted[i + 1] != "<redacted>") __builtin_trap();
  }
  (void)FilterEnv(words);
  if (auto args = VllmConfigFileArgs(text); args.ok()) (void)WithConfigFileArgs(words, *args);
  (void)FactsFromJson(text, "facts.json");
  return 0;
}
