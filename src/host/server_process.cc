#include "host/server_process.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/secrets.h"
#include "base/strings.h"
#include "host/proc_parsers.h"

namespace latdoc::host {
namespace {

std::string_view Basename(std::string_view p) {
  auto slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

// Deep enough for any real process tree; a bound against a cycle in a hand-made --sysroot tree.
constexpr int kMaxAncestors = 64;

// "PPid:" of /proc/<pid>/status; nullopt when the process is gone or the field is missing.
std::optional<int64_t> ParentPid(const SysRoot& fs, int64_t pid) {
  auto status = fs.Read("/proc/" + std::to_string(pid) + "/status");
  if (!status.ok()) return std::nullopt;
  auto ppid = StatusField(*status, "PPid");
  return ppid ? ParseInt64(*ppid) : std::nullopt;
}

}  // namespace

// /proc/<pid>/cmdline samples (NUL-separated words):
//   /usr/bin/python3 /usr/local/bin/vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000
//   python3 -m vllm.entrypoints.openai.api_server --model m
//   /opt/llama.cpp/build/bin/llama-server -m model.gguf --port 8080
//   python3 -m sglang.launch_server --model-path m
//   text-generation-launcher --model-id m
std::optional<std::string> ServerKindFromArgv(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  if (argv[0].rfind("VLLM::", 0) == 0) return std::nullopt;
  for (size_t i = 0; i < argv.size() && i < 4; ++i) {
    std::string_view base = Basename(argv[i]);
    const bool has_next = i + 1 < argv.size();
    if (base == "vllm" && has_next && argv[i + 1] == "serve") return "vllm";
    if (base == "-m" && has_next) {
      std::string_view mod = argv[i + 1];
      if (mod.rfind("vllm.entrypoints", 0) == 0) return "vllm";
      if (mod.rfind("sglang.launch_server", 0) == 0) return "sglang";
    }
    if (base == "sglang" && has_next && argv[i + 1] == "serve") return "sglang";
    if (base == "llama-server") return "llama.cpp";
    if (base == "text-generation-launcher") return "tgi";
  }
  return std::nullopt;
}

std::vector<std::string> RedactArgv(std::vector<std::string> argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& w = argv[i];
    if (w.size() < 2 || w[0] != '-' || !IsSecretName(w)) {
      // A value may hold secrets of its own: --kv-transfer-config '{"...": {"api_key": "sk"}}'.
      nlohmann::ordered_json word = w;
      if (RedactSecretValues(word)) argv[i] = word.get<std::string>();
      continue;
    }
    if (const size_t eq = w.find('='); eq != std::string::npos) {
      argv[i] = w.substr(0, eq + 1) + std::string(kRedacted);
      continue;
    }
    // The value, and every further word up to the next option: vLLM takes several API keys
    // after one --api-key. A value that is itself a secret option ("--api-key --token x") is
    // taken as that option too, so the word after it is its value.
    size_t j = i + 1;
    for (bool value_due = true; j < argv.size() && (value_due || argv[j].empty() || argv[j][0] != '-');
         ++j) {
      value_due = argv[j].size() > 1 && argv[j][0] == '-' && argv[j].find('=') == std::string::npos &&
                  IsSecretName(argv[j]);
      argv[j] = std::string(kRedacted);
    }
    i = j - 1;
  }
  return argv;
}

std::map<std::string, std::string> FilterEnv(const std::vector<std::string>& environ_words) {
  static constexpr std::string_view kPrefixes[] = {"VLLM_", "HIP_",   "ROCM_", "HSA_",
                                                   "NCCL_", "CUDA_",  "PYTORCH_", "TORCH_",
                                                   "OMP_",  "SGLANG_", "LLAMA_"};
  static constexpr std::string_view kSecretWords[] = {"KEY", "TOKEN", "SECRET", "PASSW", "AUTH",
                                                      "CREDENTIAL"};
  std::map<std::string, std::string> out;
  for (const auto& w : environ_words) {
    auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string name = w.substr(0, eq);
    bool keep = std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                            [&](std::string_view p) { return name.rfind(p, 0) == 0; });
    if (!keep) continue;
    bool secret = std::any_of(std::begin(kSecretWords), std::end(kSecretWords),
                              [&](std::string_view s) { return name.find(s) != std::string::npos; });
    out[name] = secret || IsSecretName(name) ? std::string(kRedacted) : w.substr(eq + 1);
  }
  return out;
}

StatusOr<FoundServer> FindServerProcess(const SysRoot& fs, std::optional<int64_t> pid) {
  if (pid) {
    const std::string path = "/proc/" + std::to_string(*pid) + "/cmdline";
    auto cmd = fs.Read(path);
    if (!cmd.ok()) return cmd.status();
    FoundServer s;
    s.pid = *pid;
    auto argv = SplitNul(*cmd);
    if (argv.empty()) return NotFound(path + ": empty (a kernel thread or a zombie)");
    s.kind = ServerKindFromArgv(argv).value_or("unknown");
    s.argv = RedactArgv(std::move(argv));
    return s;
  }
  auto names = fs.List("/proc");
  if (!names.ok()) return names.status();
  std::map<int64_t, std::vector<std::string>> matches;  // pid -> argv, in pid order
  for (const auto& n : *names) {
    auto p = ParseInt64(n);
    if (!p) continue;
    auto cmd = fs.Read("/proc/" + n + "/cmdline", 64 << 10);
    if (!cmd.ok()) continue;  // exited or not ours to read: keep looking
    auto argv = SplitNul(*cmd);
    if (ServerKindFromArgv(argv)) matches[*p] = std::move(argv);
  }
  // Wrappers match too (`uv run vllm serve`, `sudo -u svc vllm serve`, `timeout 3600 vllm
  // serve`) and start the server as a descendant, usually at a lower pid; a child forked
  // without exec (sudo's monitor, older vLLM workers) repeats its parent's command line. So walk
  // up from each match: an ancestor match with another command line is a wrapper, and a match
  // repeating an ancestor's is a fork copy. The lowest pid left is the server.
  std::set<int64_t> dropped;
  for (const auto& [pid, argv] : matches) {
    std::optional<int64_t> up = ParentPid(fs, pid);
    for (int depth = 0; up && *up > 0 && depth < kMaxAncestors; ++depth) {
      auto it = matches.find(*up);
      if (it != matches.end()) dropped.insert(it->second == argv ? pid : *up);
      up = ParentPid(fs, *up);
    }
  }
  for (auto& [pid, argv] : matches) {
    if (dropped.count(pid)) continue;
    FoundServer s;
    s.pid = pid;
    s.kind = *ServerKindFromArgv(argv);
    s.argv = RedactArgv(std::move(argv));
    return s;
  }
  return NotFound(
      "no server process found (looked for `vllm serve`, `python -m vllm.entrypoints...`, "
      "llama-server, sglang, text-generation-launcher); give --pid PID");
}

std::vector<ChildProcess> FindDescendants(const SysRoot& fs, int64_t pid) {
  constexpr size_t kMaxDescendants = 64;
  std::vector<ChildProcess> out;
  auto names = fs.List("/proc");
  if (!names.ok()) return out;
  std::map<int64_t, std::vector<int64_t>> children;  // ppid -> pids
  for (const auto& n : *names) {
    auto p = ParseInt64(n);
    if (!p || *p == pid) continue;
    if (auto up = ParentPid(fs, *p)) children[*up].push_back(*p);
  }
  std::vector<int64_t> pending = {pid};
  std::set<int64_t> seen = {pid};
  std::vector<int64_t> found;
  while (!pending.empty() && found.size() < kMaxDescendants) {
    const int64_t parent = pending.back();
    pending.pop_back();
    for (int64_t c : children[parent]) {
      if (!seen.insert(c).second || found.size() >= kMaxDescendants) continue;
      found.push_back(c);
      pending.push_back(c);
    }
  }
  std::sort(found.begin(), found.end());
  for (int64_t c : found) {
    ChildProcess cp;
    cp.pid = c;
    const std::string base = "/proc/" + std::to_string(c);
    if (auto cmd = fs.Read(base + "/cmdline", 4096); cmd.ok()) {
      auto argv = SplitNul(*cmd);
      if (!argv.empty() && argv[0].rfind("VLLM::", 0) == 0) cp.name = argv[0];
    }
    if (cp.name.empty()) {
      if (auto comm = fs.ReadTrimmed(base + "/comm"); comm.ok()) cp.name = *comm;
    }
    out.push_back(std::move(cp));
  }
  return out;
}

}  // namespace latdoc::host
