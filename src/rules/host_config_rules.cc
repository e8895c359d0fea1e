#include "rules/host_rules_internal.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "rules/vllm_args.h"

// The config.* rules of `latdoc doctor`: vLLM's flags and environment as the server runs them.
// Shared helpers: host_rules_internal.h.
namespace latdoc::rules::host_rules_internal {
namespace {

// ---------------------------------------------------------------------------------------------
// vLLM flag lint (vllm-project/vllm: vllm/engine/arg_utils.py ~v0.7 @001999d2f3 and recent,
// vllm/config/scheduler.py @01230b4012 ~v0.11, vllm/entrypoints/openai/cli_args.py, vllm/envs.py).

// The largest CUDA-graph capture size the server's flags set, or nullopt (vLLM's default,
// min(2 x max_num_seqs, 512)). Newer vLLM: --max-cudagraph-capture-size N or
// --cudagraph-capture-sizes 1 2 4 ...; v0.10: --cuda-graph-sizes (one value is the largest);
// any: --compilation-config (-cc and dotted keys arrive as it: vllm_args.h) / -O JSON with
// max_cudagraph_capture_size or cudagraph_capture_sizes (older: max_capture_size).
std::optional<int64_t> CaptureSizeMax(const std::vector<std::string>& a) {
  if (auto v = FlagValue(a, "--max-cudagraph-capture-size")) {
    if (auto n = ParseInt64(*v)) return n;
  }
  for (const char* flag : {"--cudagraph-capture-sizes", "--cuda-graph-sizes"}) {
    std::optional<int64_t> best;  // of the last occurrence (argparse keeps the last)
    for (size_t i = 0; i < a.size(); ++i) {
      std::vector<std::string_view> values;
      if (a[i] == flag || a[i].rfind(std::string(flag) + "=", 0) == 0) best.reset();
      if (a[i] == flag) {
        for (size_t k = i + 1; k < a.size() && ParseInt64(a[k]); ++k) values.push_back(a[k]);
      } else if (a[i].rfind(std::string(flag) + "=", 0) == 0) {
        for (auto v : Split(std::string_view(a[i]).substr(std::string_view(flag).size() + 1), ','))
          values.push_back(v);
      }
      for (auto v : values) {
        if (auto n = ParseInt64(Trim(v))) best = std::max(best.value_or(0), *n);
      }
    }
    if (best) return best;
  }
  for (const char* flag : {"--compilation-config", "-O"}) {
    auto v = FlagValue(a, flag);
    if (!v || v->empty() || (*v)[0] != '{') continue;
    auto j = nlohmann::json::parse(*v, nullptr, false);
    if (!j.is_object()) continue;
    for (const char* key : {"max_cudagraph_capture_size", "max_capture_size"}) {
      if (j.contains(key) && j[key].is_number_integer()) return j[key].get<int64_t>();
    }
    if (j.contains("cudagraph_capture_sizes") && j["cudagraph_capture_sizes"].is_array()) {
      std::optional<int64_t> best;
      for (const auto& e : j["cudagraph_capture_sizes"]) {
        if (e.is_number_integer()) best = std::max(best.value_or(0), e.get<int64_t>());
      }
      if (best) return best;
    }
  }
  return std::nullopt;
}

std::string EnvValue(const host::ServerProcess& s, const std::string& name) {
  if (!s.env.known()) return "";
  auto it = s.env->find(name);
  return it == s.env->end() ? "" : it->second;
}

// Whether -O set level 0: "-O 0" (from -O0), or a JSON "level" of 0 (older vLLM read -O as the
// compilation config and -O0 as {"level": 0}). Every -O is read: dotted -O keys come after it.
bool OptimizationLevelZero(const std::vector<std::string>& a) {
  for (const std::string& v : FlagValues(a, "-O")) {
    if (v == "0") return true;
    if (!v.empty() && v[0] == '{') {
      auto j = nlohmann::json::parse(v, nullptr, false);
      if (j.is_object() && j.contains("level") && j["level"] == 0) return true;
    }
  }
  return false;
}

// Whether a compilation config turns CUDA graphs off. cudagraph_mode in vLLM's JSON dump is a
// number (NONE 0, PIECEWISE 1, FULL 2) or a pair ([2, 0] FULL_DECODE_ONLY, [2, 1]
// FULL_AND_PIECEWISE); given by hand, a name in any case. vLLM (VllmConfig.__post_init__):
//   - no cudagraph_mode (or null): NONE unless the model is compiled piecewise (level or mode 3);
//   - PIECEWISE without piecewise compilation is overridden to NONE;
//   - NONE is NONE; FULL modes need no compilation.
// Text that is not JSON is searched for NONE.
bool CompilationConfigEager(const std::string& v) {
  auto j = nlohmann::json::parse(v, nullptr, false);
  if (!j.is_object()) return v.find("NONE") != std::string::npos;
  std::optional<bool> compiled;  // level or mode 3, when either is given
  for (const char* key : {"mode", "level"}) {
    if (compiled || !j.contains(key)) continue;
    const auto& m = j[key];
    if (m.is_number()) compiled = m == 3;
    if (m.is_string()) {
      const std::string name = m.get<std::string>();
      compiled = IEquals(name, "VLLM_COMPILE") || IEquals(name, "PIECEWISE") || name == "3";
    }
  }
  const nlohmann::json cg = j.value("cudagraph_mode", nlohmann::json());
  auto is = [&](std::string_view name, int number) {
    return (cg.is_string() && IEquals(cg.get<std::string>(), name)) || (cg.is_number() && cg == number);
  };
  if (cg.is_null()) return compiled.has_value() && !*compiled;
  if (is("NONE", 0)) return true;
  if (is("PIECEWISE", 1)) return compiled.has_value() && !*compiled;
  return false;
}

// Graphs off altogether: --enforce-eager, -O0, or a compilation config (its own flag, or -O
// JSON) that turns them off.
bool Eager(const std::vector<std::string>& a) {
  bool off = false;
  if (auto cc = FlagValue(a, "--compilation-config")) off = CompilationConfigEager(*cc);
  for (const std::string& v : FlagValues(a, "-O")) {
    off |= !v.empty() && v[0] == '{' && CompilationConfigEager(v);
  }
  return HasFlag(a, "--enforce-eager") || OptimizationLevelZero(a) || off;
}

constexpr Layer kLayer = Layer::kConfig;

// What every config.* check reads: the server's flags as vLLM reads them, and the batch
// defaults that follow from its GPUs.
struct VllmView {
  const HostFacts& facts;
  const HostRuleOptions& options;
  const host::ServerProcess& s;
  std::string who;
  std::vector<std::string> a;
  std::optional<int64_t> mem_mib;  // GPU memory of the server's GPUs (largest)
  bool a100 = false;
  bool big_gpu = false;
  std::optional<int64_t> eff;  // max_num_seqs as the server runs it, and where it comes from
  std::string basis;
};

VllmView ReadVllmView(const HostFacts& facts, const HostRuleOptions& options, const std::string& who) {
  const auto& s = *facts.server;
  // As vLLM reads it: underscores, aliases, -O3 and dotted keys in one canonical form.
  // A --config YAML file's flags go where vLLM puts them: before the command line's own.
  std::vector<std::string> a = NormalizeVllmArgv(s.EffectiveArgv());

  // GPU memory of the server's GPUs (for the batch defaults and the KV budget).
  std::optional<int64_t> mem_mib;
  bool a100 = false;
  for (const auto* g : ServerGpus(facts)) {
    if (g->memory_total_mib.known()) mem_mib = std::max(mem_mib.value_or(0), *g->memory_total_mib);
    a100 |= g->name.known() && ToLower(*g->name).find("a100") != std::string::npos;
  }
  // vLLM's get_batch_defaults gives the large defaults to >= 70 GiB GPUs other than the A100
  // (it tests "a100" in the device name): an A100-80GB gets 256 (vllm/engine/arg_utils.py,
  // EngineArgs.get_batch_defaults, ~v0.11).
  const bool big_gpu = mem_mib && *mem_mib >= 70 * 1024 && !a100;

  // max_num_seqs as the server runs it: the flag, else vLLM's default for its GPUs.
  std::optional<int64_t> eff;
  std::string basis;
  if (auto flag = FlagDouble(a, "--max-num-seqs")) {
    eff = static_cast<int64_t>(*flag);
    basis = "--max-num-seqs";
  } else if (mem_mib) {
    eff = big_gpu ? 1024 : 256;
    basis = big_gpu ? "default for >= 70 GiB GPUs" : a100 ? "default on A100" : "default";
  }
  return VllmView{facts, options, s, who, std::move(a), mem_mib, a100, big_gpu, eff, std::move(basis)};
}

Finding EnforceEager(const VllmView& v) {
  const std::vector<std::string>& a = v.a;
  const std::string& who = v.who;
  Finding f = Make("config.enforce_eager", kLayer, Severity::kOk, who + ": CUDA/HIP graphs on");
  const bool o0 = OptimizationLevelZero(a);
  if (Eager(a)) {
    f.severity = Severity::kFail;
    f.title = who + ": graphs disabled (" +
              (HasFlag(a, "--enforce-eager") ? std::string("--enforce-eager")
               : o0 ? std::string("-O0") : std::string("cudagraph_mode NONE")) +
              "): every decode step launches kernels one by one";
    f.advice = "remove --enforce-eager / -O0 (keep the default -O2, cudagraph_mode FULL_AND_PIECEWISE)";
  }
  return f;
}

Finding GpuMemoryUtilization(const VllmView& view) {
  const std::vector<std::string>& a = view.a;
  const std::string& who = view.who;
  const std::optional<int64_t>& mem_mib = view.mem_mib;
  auto gmu = FlagDouble(a, "--gpu-memory-utilization");
  const double v = gmu.value_or(0.9);
  Finding f = Make("config.gpu_memory_utilization", kLayer, Severity::kOk,
                   fmt::format("{}: --gpu-memory-utilization {:.2f}{}", who, v, gmu ? "" : " (default)"));
  f.evidence.push_back(Num("gpu_memory_utilization", v, ""));
  if (mem_mib) {
    f.evidence.push_back(Num("gpu_memory", static_cast<double>(*mem_mib) / 1024.0, "GiB"));
    f.evidence.push_back(Num("vllm_memory_budget", v * static_cast<double>(*mem_mib) / 1024.0, "GiB"));
  }
  if (v < 0.8) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{}: --gpu-memory-utilization {:.2f} leaves a small KV cache: "
                          "preemption and queueing under load", who, v);
    f.advice = "--gpu-memory-utilization 0.9 (up to 0.95 when nothing else uses the GPU)";
  } else if (v > 0.95) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{}: --gpu-memory-utilization {:.2f} leaves under {:.0f}% for "
                          "activations and other processes: OOM or KV preemption when memory "
                          "runs short", who, v, (1 - v) * 100);
    f.advice = "--gpu-memory-utilization 0.92";
  }
  return f;
}

Finding MaxNumSeqs(const VllmView& v) {
  const std::string& who = v.who;
  const std::optional<int64_t>& eff = v.eff;
  const std::string& basis = v.basis;
  if (!eff) {
    return Skip("config.max_num_seqs", kLayer, who, "GPU memory unknown, so the default is unknown");
  }
  Finding f = Make("config.max_num_seqs", kLayer, Severity::kOk,
                   fmt::format("{}: max_num_seqs {} ({})", who, *eff, basis));
  f.evidence.push_back(Num("max_num_seqs", static_cast<double>(*eff), ""));
  if (v.options.sweep_knee_concurrency) {
    const int64_t knee = *v.options.sweep_knee_concurrency;
    f.evidence.push_back(Num("sweep_knee_concurrency", static_cast<double>(knee), ""));
    if (*eff > 2 * knee) {
      f.severity = Severity::kWarn;
      f.title = fmt::format("{}: max_num_seqs {} is far above the latency knee at {} concurrent "
                            "requests: past the knee p99 grows with no throughput gain", who, *eff, knee);
      f.advice = fmt::format("--max-num-seqs {}", knee);
    }
  } else {
    f.title += "; no sweep given (latdoc sweep finds the knee)";
  }
  return f;
}

// config.cudagraph_capture: decode batches larger than the largest captured size run
// without CUDA/HIP graphs (every kernel launched one by one), so ITL jumps once the running
// batch passes it. Not judged when graphs are off altogether (config.enforce_eager).
std::optional<Finding> CudagraphCapture(const VllmView& v) {
  const std::vector<std::string>& a = v.a;
  const std::string& who = v.who;
  const std::optional<int64_t>& eff = v.eff;
  const HostRuleOptions& options = v.options;
  if (!eff || Eager(a)) return std::nullopt;
  const auto set = CaptureSizeMax(a);
  const int64_t cap = set.value_or(std::min<int64_t>(2 * *eff, 512));
  Finding f = Make("config.cudagraph_capture", kLayer, Severity::kOk,
                   fmt::format("{}: CUDA graphs captured up to batch {} ({}), max_num_seqs {}",
                               who, cap, set ? "set" : "vLLM's default min(2 x max_num_seqs, 512)",
                               *eff));
  f.evidence.push_back(Num("max_cudagraph_capture_size", static_cast<double>(cap), ""));
  f.evidence.push_back(Num("max_num_seqs", static_cast<double>(*eff), ""));
  if (*eff > cap) {
    const auto knee = options.sweep_knee_concurrency;
    if (knee) f.evidence.push_back(Num("sweep_knee_concurrency", static_cast<double>(*knee), ""));
    if (knee && *knee <= cap) {
      f.title = fmt::format("{}: batches above {} would run without CUDA graphs, but the latency "
                            "knee at {} is below that", who, cap, *knee);
    } else {
      // Whether the load reaches such batches is what the sweep's knee says.
      f.severity = knee ? Severity::kWarn : Severity::kInfo;
      f.title = fmt::format("{}: max_num_seqs {} is above the largest CUDA-graph capture size {}: "
                            "decode batches of {}-{} run without graphs (inter-token latency "
                            "jumps past {}){}", who, *eff, cap, cap + 1, *eff, cap,
                            knee ? fmt::format("; the latency knee at {} is past it", *knee)
                                 : std::string("; latdoc sweep tells whether the load gets there"));
      f.advice = fmt::format(
          "capture up to the batch limit: --compilation-config '{{\"max_cudagraph_capture_size\": {}}}' "
          "(newer vLLM: --max-cudagraph-capture-size {}), at some start-up time and GPU memory; "
          "or cap the batch at the captured size: --max-num-seqs {}", *eff, *eff, cap);
    }
  }
  return f;
}

Finding MaxNumBatchedTokens(const VllmView& v) {
  const std::vector<std::string>& a = v.a;
  const std::string& who = v.who;
  const std::optional<int64_t>& eff = v.eff;
  const std::string& basis = v.basis;
  auto mbt = FlagDouble(a, "--max-num-batched-tokens");
  Finding f = Make("config.max_num_batched_tokens", kLayer, Severity::kOk,
                   mbt ? fmt::format("{}: --max-num-batched-tokens {:.0f}", who, *mbt)
                       : who + ": --max-num-batched-tokens default");
  if (mbt) f.evidence.push_back(Num("max_num_batched_tokens", *mbt, ""));
  // vLLM refuses to start on these (vllm/config/scheduler.py SchedulerConfig.verify_args,
  // v0.10.2 and later; vllm/config.py SchedulerConfig._verify_args before):
  //   max_num_batched_tokens < max_num_seqs
  //   max_num_batched_tokens < max_model_len while chunked prefill is off
  const auto mml = FlagDouble(a, "--max-model-len");
  const auto cp = FlagValue(a, "--enable-chunked-prefill");
  const bool chunked_off =
      (FlagValue(a, "--no-enable-chunked-prefill") && !HasFlag(a, "--enable-chunked-prefill")) ||
      (cp && (ToLower(*cp) == "false" || *cp == "0"));
  if (mbt && eff && *mbt < static_cast<double>(*eff)) {
    f.severity = Severity::kFail;
    f.title = fmt::format("{}: --max-num-batched-tokens {:.0f} is below max_num_seqs {} ({}): vLLM "
                          "refuses to start (\"max_num_batched_tokens must be greater than or "
                          "equal to max_num_seqs\")", who, *mbt, *eff, basis);
    f.evidence.push_back(Num("max_num_seqs", static_cast<double>(*eff), ""));
    f.evidence.push_back(Text("rule", "vllm/config/scheduler.py SchedulerConfig (v0.10.2+; "
                                      "vllm/config.py before): max_num_batched_tokens >= max_num_seqs"));
    f.advice = fmt::format("--max-num-batched-tokens {} or more (or lower --max-num-seqs)", *eff);
  } else if (mbt && mml && chunked_off && *mbt < *mml) {
    f.severity = Severity::kFail;
    f.title = fmt::format("{}: --max-num-batched-tokens {:.0f} is below --max-model-len {:.0f} with "
                          "chunked prefill off: vLLM refuses to start (a prompt that long could "
                          "never be scheduled)", who, *mbt, *mml);
    f.evidence.push_back(Num("max_model_len", *mml, ""));
    f.evidence.push_back(Text("rule", "vllm/config/scheduler.py SchedulerConfig (v0.10.2+; "
                                      "vllm/config.py before): without chunked prefill, "
                                      "max_num_batched_tokens >= max_model_len"));
    f.advice = fmt::format("--max-num-batched-tokens {:.0f}, or turn chunked prefill on "
                           "(--enable-chunked-prefill)", *mml);
  } else if (mbt && *mbt > 16384) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{}: --max-num-batched-tokens {:.0f}: long prefill chunks stall "
                          "running decodes (inter-token latency spikes)", who, *mbt);
    f.advice = "--max-num-batched-tokens 8192 for interactive serving (16384 at most)";
  }
  return f;
}

Finding BlockSize(const VllmView& v) {
  const std::vector<std::string>& a = v.a;
  const std::string& who = v.who;
  auto bs = FlagDouble(a, "--block-size");
  Finding f = Make("config.block_size", kLayer, Severity::kOk,
                   bs ? fmt::format("{}: --block-size {:.0f}", who, *bs) : who + ": default block size");
  // The sizes vLLM's CLI accepts (vllm/config/cache.py BlockSize: Literal[1, 8, 16, 32, 64,
  // 128] in v0.10, 256 added in v0.11); argparse rejects any other before the server starts.
  const bool valid = !bs || *bs == 1 || *bs == 8 || *bs == 16 || *bs == 32 || *bs == 64 ||
                     *bs == 128 || *bs == 256;
  if (!valid) {
    f.severity = Severity::kFail;
    f.title = fmt::format("{}: --block-size {:.0f} is not one vLLM accepts (1, 8, 16, 32, 64, 128; "
                          "256 from v0.11): the server does not start", who, *bs);
    f.evidence.push_back(Text("rule", "vllm/config/cache.py BlockSize = Literal[1, 8, 16, 32, 64, "
                                      "128] (v0.10), with 256 (v0.11+)"));
    f.advice = "drop --block-size (default 16)";
  } else if (bs && *bs != 16) {
    f.severity = Severity::kInfo;
    f.title = fmt::format("{}: --block-size {:.0f} (default 16): some attention kernels need "
                          "their own size; others may fall back", who, *bs);
    f.advice = "drop --block-size unless the attention backend asks for it (AITER MLA: 1)";
  }
  return f;
}

Finding Logging(const VllmView& v) {
  const host::ServerProcess& s = v.s;
  const std::vector<std::string>& a = v.a;
  const std::string& who = v.who;
  std::vector<std::string> warn, fail;
  if (HasFlag(a, "--enable-log-requests")) warn.push_back("--enable-log-requests");
  if (HasFlag(a, "--enable-log-outputs")) warn.push_back("--enable-log-outputs");
  auto uv = FlagValue(a, "--uvicorn-log-level");
  if (uv && (*uv == "debug" || *uv == "trace")) warn.push_back("--uvicorn-log-level " + *uv);
  if (ToLower(EnvValue(s, "VLLM_LOGGING_LEVEL")) == "debug") warn.push_back("VLLM_LOGGING_LEVEL=DEBUG");
  auto resp = ToLower(EnvValue(s, "VLLM_DEBUG_LOG_API_SERVER_RESPONSE"));
  if (resp == "1" || resp == "true") warn.push_back("VLLM_DEBUG_LOG_API_SERVER_RESPONSE");
  if (EnvValue(s, "VLLM_TRACE_FUNCTION") == "1") fail.push_back("VLLM_TRACE_FUNCTION=1");
  Finding f = Make("config.logging", kLayer, Severity::kOk, who + ": logging at normal levels");
  if (!s.env.known()) f.evidence.push_back(Text("environment", "unknown: " + s.env.reason));
  if (!fail.empty() || !warn.empty()) {
    std::string all;
    for (const auto& v : fail) all += (all.empty() ? "" : ", ") + v;
    for (const auto& v : warn) all += (all.empty() ? "" : ", ") + v;
    f.severity = fail.empty() ? Severity::kWarn : Severity::kFail;
    f.title = who + ": verbose logging on the request path: " + all;
    f.evidence.push_back(Text("settings", all));
    f.advice = "unset VLLM_TRACE_FUNCTION; VLLM_LOGGING_LEVEL=INFO; drop --enable-log-requests / "
               "--enable-log-outputs; --uvicorn-log-level info";
  } else if (!HasFlag(a, "--disable-uvicorn-access-log")) {
    f.severity = Severity::kInfo;
    f.title = who + ": one access-log line per request (the default)";
    f.advice = "at high request rates: --disable-uvicorn-access-log (or "
               "--disable-access-log-for-endpoints /health,/metrics)";
  }
  return f;
}

Finding AsyncScheduling(const VllmView& v) {
  const std::vector<std::string>& a = v.a;
  const std::string& who = v.who;
  Finding f = Make("config.async_scheduling", kLayer, Severity::kOk, who + ": --async-scheduling on");
  const bool pp = FlagDouble(a, "--pipeline-parallel-size").value_or(1) > 1;
  const bool spec = FlagValue(a, "--speculative-config").has_value();
  if (HasFlag(a, "--async-scheduling")) {
    // on
  } else if (pp || spec) {
    f.title = who + ": async scheduling not available with " +
              std::string(pp ? "pipeline parallelism" : "speculative decoding");
  } else if (HasFlag(a, "--no-async-scheduling")) {
    f.severity = Severity::kInfo;
    f.title = who + ": async scheduling turned off: the GPU idles while the CPU schedules";
    f.advice = "drop --no-async-scheduling";
  } else {
    f.severity = Severity::kInfo;
    f.title = who + ": --async-scheduling not given: on by default only in recent vLLM";
    f.advice = "--async-scheduling (vLLM >= 0.11; check the startup log for 'async scheduling')";
  }
  return f;
}

Finding V1Multiprocessing(const VllmView& v) {
  const host::ServerProcess& s = v.s;
  const std::string& who = v.who;
  if (!s.env.known()) return Skip("config.v1_multiprocessing", kLayer, who, s.env.reason);
  Finding f = Make("config.v1_multiprocessing", kLayer, Severity::kOk,
                   who + ": engine core in its own process");
  if (EnvValue(s, "VLLM_ENABLE_V1_MULTIPROCESSING") == "0") {
    f.severity = Severity::kWarn;
    f.title = who + ": VLLM_ENABLE_V1_MULTIPROCESSING=0 puts the engine in the API-server "
                    "process: both share one GIL";
    f.advice = "unset VLLM_ENABLE_V1_MULTIPROCESSING";
  }
  return f;
}

// config.rocm_aiter: on MI300X/MI325X (gfx942) and MI350/MI355 (gfx950) AMD's vLLM guide turns
// on the AITER kernels (attention, MoE, GEMM); vLLM leaves them off by default.
std::optional<Finding> RocmAiter(const VllmView& v) {
  const host::ServerProcess& s = v.s;
  const std::string& who = v.who;
  std::string gfx;
  for (const auto* g : ServerGpus(v.facts)) {
    if (g->vendor != "amd" || !g->name.known()) continue;
    for (const char* arch : {"gfx942", "gfx950"}) {
      if (g->name->find(arch) != std::string::npos) gfx = arch;
    }
  }
  if (gfx.empty()) return std::nullopt;
  const std::string id = "config.rocm_aiter";
  if (!s.env.known()) return Skip(id, kLayer, who, s.env.reason);
  const std::string aiter = EnvValue(s, "VLLM_ROCM_USE_AITER");
  const bool on = aiter == "1" || ToLower(aiter) == "true";
  Finding f = Make(id, kLayer, Severity::kOk, fmt::format("{}: AITER kernels on ({})", who, gfx));
  f.evidence.push_back(Text("VLLM_ROCM_USE_AITER", aiter.empty() ? "unset (vLLM's default: off)" : aiter));
  if (!on) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("{}: AITER kernels off on {}: attention, MoE and GEMM run vLLM's "
                          "generic ROCm kernels", who, gfx);
    f.advice = "VLLM_ROCM_USE_AITER=1 in the server's environment (AMD's vLLM guide for "
               "MI300X/MI325X/MI355X); the log then says \"Using Aiter ... backend\"";
  }
  const std::string old_flag = EnvValue(s, "VLLM_USE_TRITON_FLASH_ATTN");
  if (!old_flag.empty()) {
    f.evidence.push_back(Text("VLLM_USE_TRITON_FLASH_ATTN",
                              old_flag + " (obsolete: recent vLLM ignores it)"));
  }
  return f;
}

}  // namespace

std::vector<Finding> VllmLint(const HostFacts& facts, const HostRuleOptions& options,
                              const std::string& who) {
  const VllmView v = ReadVllmView(facts, options, who);
  const auto& s = v.s;
  const bool config_file = s.HasConfigFile();
  std::vector<Finding> out;
  out.push_back(EnforceEager(v));
  out.push_back(GpuMemoryUtilization(v));
  out.push_back(MaxNumSeqs(v));
  if (auto f = CudagraphCapture(v)) out.push_back(std::move(*f));
  out.push_back(MaxNumBatchedTokens(v));
  out.push_back(BlockSize(v));
  out.push_back(Logging(v));
  out.push_back(AsyncScheduling(v));
  out.push_back(V1Multiprocessing(v));
  if (auto f = RocmAiter(v)) out.push_back(std::move(*f));
  if (config_file) {
    const std::string note = s.config_file_args.known()
                                 ? "read: " + s.config_file_args.source
                                 : "not read (its flags are not judged): " + s.config_file_args.reason;
    for (Finding& f : out) f.evidence.push_back(Text("config_file", note));
  }
  return out;
}

}  // namespace latdoc::rules::host_rules_internal
