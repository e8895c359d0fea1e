#include "tests/e2e/llama_server.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "http/testing/blocking_client.h"

namespace latdoc::testing {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string ServerBinary() {
  return EnvOr("LATDOC_LLAMA_SERVER", std::string(LATDOC_SOURCE_DIR) + "/build/llama.cpp/bin/llama-server");
}

std::string GgufPy() {
  return EnvOr("LATDOC_LLAMA_GGUF_PY", std::string(LATDOC_SOURCE_DIR) + "/build/llama.cpp/src/gguf-py");
}

// Debian's interpreter: its python3-numpy is what the script needs (a python3 earlier on PATH,
// such as a pyenv shim, may lack it).
std::string Python() { return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

}  // namespace

std::string LlamaServerSkipReason() {
  namespace fs = std::filesystem;
  if (!fs::exists(ServerBinary()))
    return ServerBinary() + " is missing: run scripts/build-llama-server.sh (or set LATDOC_LLAMA_SERVER)";
  if (!fs::exists(GgufPy() + "/gguf/__init__.py"))
    return GgufPy() + " is missing: run scripts/build-llama-server.sh (or set LATDOC_LLAMA_GGUF_PY)";
  const std::string probe = Python() + " -c 'import numpy' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0)
    return Python() + " cannot import numpy: install python3-numpy (scripts/install-deps.sh test)";
  return "";
}

std::string MakeTinyGguf(const std::string& path, const std::string& vocab) {
  const std::string err = path + ".stderr";
  const std::string cmd = "PYTHONPATH='" + GgufPy() + "' " + Python() + " '" + LATDOC_SOURCE_DIR +
                          "/scripts/make-tiny-gguf.py' '" + path + "' --vocab " + vocab + " 2>'" +
                          err + "'";
  if (std::system(cmd.c_str()) != 0) {
    std::string e = ReadFileOrEmpty(err);
    return e.empty() ? "make-tiny-gguf.py failed" : e;
  }
  return "";
}

LlamaServerProcess::LlamaServerProcess(const Options& o, const std::string& log_path)
    : port_(FreeLoopbackPort()) {
  std::vector<std::string> argv = {ServerBinary(),
                                   "-m", o.model_path,
                                   "--host", "127.0.0.1",
                                   "--port", std::to_string(port_),
                                   "-np", std::to_string(o.parallel),
                                   "-c", std::to_string(o.ctx_tokens),
                                   "-t", "1",
                                   "--metrics"};
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  proc_ = std::make_unique<Process>(argv, log_path);
}

bool LlamaServerProcess::WaitReady(int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 100) {
    if (http::testing::Fetch(port_, "GET", "/health").status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

double LlamaServerProcess::Metric(const std::string& name) const {
  const std::string body = http::testing::Fetch(port_, "GET", "/metrics").body;
  const std::string key = "\n" + name + " ";
  const size_t p = body.find(key);
  if (p == std::string::npos) return -1;
  return std::atof(body.c_str() + p + key.size());
}

}  // namespace latdoc::testing
