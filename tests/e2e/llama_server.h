// A real llama.cpp `llama-server` for end-to-end tests: the binary scripts/build-llama-server.sh
// builds (CPU only), serving a tiny random-weight GGUF that scripts/make-tiny-gguf.py writes
// with llama.cpp's own gguf-py. Reusable by any test that needs a real server on loopback.
//
// Where the binary is: $LATDOC_LLAMA_SERVER, else build/llama.cpp/bin/llama-server under the
// source tree. gguf-py: $LATDOC_LLAMA_GGUF_PY, else build/llama.cpp/src/gguf-py. When either is
// missing, SkipReason() says why, for GTEST_SKIP.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/e2e/process.h"

namespace latdoc::testing {

// Why a llama.cpp test cannot run here ("" when it can): the binary, gguf-py or python3 with
// numpy is missing. Names the command that provides it.
std::string LlamaServerSkipReason();

// Writes the tiny model (vocab "ascii" or "bytes": see scripts/make-tiny-gguf.py) to `path`;
// returns "" or the error (the script's standard error).
std::string MakeTinyGguf(const std::string& path, const std::string& vocab = "ascii");

class LlamaServerProcess {
 public:
  struct Options {
    std::string model_path;
    int parallel = 4;        // -np
    int ctx_tokens = 2048;   // -c
    std::vector<std::string> extra_args;
  };
  // Starts llama-server on a free loopback port with --metrics; its log goes to `log_path`.
  LlamaServerProcess(const Options& options, const std::string& log_path);

  // Waits until /health answers 200 (the model is loaded); false after `timeout_ms`.
  bool WaitReady(int timeout_ms = 120000);
  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The value of the unlabelled series `name` ("llamacpp:tokens_predicted_total") on /metrics
  // now; -1 when absent.
  double Metric(const std::string& name) const;
  Process& process() { return *proc_; }

 private:
  uint16_t port_ = 0;
  std::unique_ptr<Process> proc_;
};

}  // namespace latdoc::testing
