// latdoc bench's flags resolved (cmd_bench_internal.h): what `vllm bench serve` users type,
// and the flags every command shares, mapped onto BenchArgs; and --save-result's vLLM file name.
#include <unistd.h>

#include <filesystem>
#include <optional>

#include <fmt/core.h>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/strings.h"
#include "cli/cmd_bench_internal.h"

namespace latdoc::cli::bench_internal {
namespace {

// Says what is wrong with the flags and returns the exit code of bad input.
std::optional<int> BenchFlagError(const std::string& message) {
  fmt::print(stderr, "latdoc bench: {}\n", message);
  return std::optional<int>(kExitBadInput);
}

// The shape of the load: --dataset-name replay, and --max-concurrency without a rate.
std::optional<int> ResolveLoadShapeFlags(BenchArgs& a, BenchFlags& f) {
  loadgen::BenchOptions& o = a.o;
  // vLLM: --max-concurrency without --request-rate is a closed loop at that concurrency (every
  // request at once, at most N in flight); with a rate it caps the open loop.
  // --request-rate inf with --max-concurrency N is latdoc's open loop at an infinite rate, capped
  // at N: every request scheduled at once, as vLLM does it.
  if (f.dataset_name == "replay") {
    if (f.dataset_path.empty())
      return BenchFlagError(
          "--dataset-name replay reads --dataset-path FILE (JSONL of timed requests)");
    if (f.request_rate->count() > 0)
      return BenchFlagError(
          "--request-rate is not used with --dataset-name replay: the trace's times set the load");
    a.replay = true;
  } else if (f.replay_speed->count() > 0) {
    return BenchFlagError("--replay-speed goes with --dataset-name replay");
  }
  if (a.replay) {
    // --max-concurrency caps the replayed open loop.
  } else if (f.request_rate->count() == 0 && f.max_concurrency->count() > 0) {
    if (f.concurrency->count() > 0 && o.concurrency != o.max_concurrency)
      return BenchFlagError(
          "--concurrency and --max-concurrency both set the requests in flight "
          "when no --request-rate is given: give one");
    o.concurrency = o.max_concurrency;
    o.max_concurrency = 0;
    o.request_rate = 0;
  }
  return std::nullopt;
}

// Where the prompts come from: multi-turn sessions, --dataset-name and --dataset-path.
std::optional<int> ResolveDatasetFlags(BenchArgs& a, BenchFlags& f) {
  if (f.dataset_name == "multi-turn") {
    // A session file is optional: without one, synthetic sessions.
    if (!a.dataset.empty())
      return BenchFlagError("--dataset-name multi-turn reads its session file from --dataset-path");
    a.multi_turn = true;
    a.session_file = f.dataset_path;
  } else if (f.num_sessions->count() > 0 || f.turns->count() > 0 || f.think_time->count() > 0) {
    return BenchFlagError(
        "--num-sessions, --turns and --think-time go with --dataset-name multi-turn");
  }
  if (a.multi_turn) {
  } else if (f.dataset_name_opt->count() > 0 && f.dataset_name != "random") {
    if (f.dataset_path.empty())
      return BenchFlagError(
          fmt::format("--dataset-name {} reads --dataset-path FILE", f.dataset_name));
  } else if (f.dataset_name_opt->count() > 0 && !f.dataset_path.empty()) {
    return BenchFlagError(
        "--dataset-path is read with --dataset-name sharegpt, custom, multi-turn or replay; random "
        "makes its prompts");
  }
  if (!f.dataset_path.empty() && !a.multi_turn) {
    if (!a.dataset.empty()) return BenchFlagError("give --dataset or --dataset-path, not both");
    a.dataset = f.dataset_path;
  }
  return std::nullopt;
}

// vLLM's names for latdoc's flags: EOS, the model, --goodput and the summary's percentiles.
std::optional<int> ResolveVllmFlags(BenchArgs& a, BenchFlags& f) {
  loadgen::BenchOptions& o = a.o;
  if (f.ignore_eos && a.no_ignore_eos)
    return BenchFlagError("give --ignore-eos or --no-ignore-eos, not both");
  o.backend = f.server.backend;  // written as vLLM writes it
  // vLLM: --model names the tokenizer's model, --served-model-name what the requests ask for.
  if (!f.served_model_name.empty()) o.model = f.served_model_name;
  if (!f.tokenizer.empty() || f.trust_remote_code) {
    fmt::print(stderr,
               "latdoc bench: note: {} not used: latdoc counts tokens from the server's usage "
               "(or the stream's chunks) and needs no tokenizer\n",
               !f.tokenizer.empty() ? "--tokenizer is" : "--trust-remote-code is");
  }
  if (!f.goodput.empty()) {
    if (!a.slo.empty()) return BenchFlagError("give --slo or --goodput, not both");
    // vLLM's "ttft:500 tpot:50" is latdoc's "ttft:500,tpot:50".
    for (const std::string& g : f.goodput) a.slo += (a.slo.empty() ? "" : ",") + g;
  }
  if (!f.percentile_metrics.empty()) {
    for (auto m : Split(f.percentile_metrics, ',')) {
      const std::string name(Trim(m));
      if (name != "ttft" && name != "tpot" && name != "itl" && name != "e2el")
        return BenchFlagError(
            fmt::format("--percentile-metrics '{}': expected ttft, tpot, itl or e2el", name));
      o.summary_metrics.push_back(name);
    }
  }
  if (!f.metric_percentiles.empty()) {
    for (auto p : Split(f.metric_percentiles, ',')) {
      auto v = ParseDouble(Trim(p));
      if (!v || !(*v > 0 && *v <= 100))
        return BenchFlagError(fmt::format(
            "--metric-percentiles '{}': expected numbers above 0 and at most 100", Trim(p)));
      o.summary_percentiles.push_back(*v);
    }
  }
  return std::nullopt;
}

// --save-result, --result-dir and --result-filename: the JSON path, or a hidden one to rename.
std::optional<int> ResolveSaveResultFlags(BenchArgs& a, BenchFlags& f) {
  if (!f.result_dir.empty() || !f.result_filename.empty()) {
    if (!f.save_result)
      return BenchFlagError("--result-dir and --result-filename go with --save-result");
  }
  if (f.save_result) {
    if (!a.json_out.empty()) return BenchFlagError("give --json FILE or --save-result, not both");
    const std::string dir = f.result_dir.empty() ? "." : f.result_dir;
    if (!f.result_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(f.result_dir, ec);  // as vLLM: os.makedirs
      if (ec) return BenchFlagError(fmt::format("--result-dir {}: {}", f.result_dir, ec.message()));
    }
    if (!f.result_filename.empty()) {
      a.json_out = (std::filesystem::path(dir) / f.result_filename).string();
    } else {
      // vLLM's name needs the model, known after the run when --model is not given: the
      // results are written to a hidden name in the same folder and renamed.
      f.backend_label = !f.label.empty()            ? f.label
                        : !f.server.backend.empty() ? f.server.backend
                        : a.endpoint == "chat"      ? "openai-chat"
                                                    : "openai";
      f.pending_result =
          (std::filesystem::path(dir) / fmt::format(".latdoc-bench-{}.json", ::getpid())).string();
      a.json_out = f.pending_result;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> ResolveBenchFlags(BenchArgs& a, BenchFlags& f) {
  if (auto rc = ResolveServerFlags("bench", f.server, /*required=*/true)) return rc;
  if (auto rc = ResolveLoadShapeFlags(a, f)) return rc;
  if (auto rc = ResolveDatasetFlags(a, f)) return rc;
  if (auto rc = ResolveVllmFlags(a, f)) return rc;
  return ResolveSaveResultFlags(a, f);
}

namespace {

// vLLM's result file name (vllm/benchmarks/serve.py):
// f"{label}-{request_rate}qps{-concurrencyN}-{model's last path part}-{%Y%m%d-%H%M%S}.json",
// with the rate as Python prints a float ("8.0", "inf").
std::string VllmResultName(const std::string& label, const nlohmann::ordered_json& j) {
  std::string rate = "inf";
  if (j.contains("request_rate") && j["request_rate"].is_number()) {
    rate = fmt::format("{}", j["request_rate"].get<double>());
    if (rate.find_first_of(".e") == std::string::npos) rate += ".0";
  }
  std::string conc;
  if (j.contains("max_concurrency") && j["max_concurrency"].is_number())
    conc = fmt::format("-concurrency{}", j["max_concurrency"].get<int64_t>());
  std::string model = j.value("model_id", std::string("model"));
  if (auto slash = model.rfind('/'); slash != std::string::npos) model = model.substr(slash + 1);
  // Shards writing to one shared folder at the same second must not take one name.
  std::string shard;
  if (j.contains("shard") && j["shard"].is_object())
    shard = fmt::format("-shard{}of{}", j["shard"].value("index", 0), j["shard"].value("count", 1));
  return fmt::format("{}-{}qps{}-{}-{}{}.json", label, rate, conc, model,
                     j.value("date", std::string("")), shard);
}

}  // namespace

int FinishSaveResult(const BenchFlags& f, int rc) {
  if (f.pending_result.empty() || ::access(f.pending_result.c_str(), R_OK) != 0) return rc;
  auto text = ReadFileToString(f.pending_result);
  nlohmann::ordered_json j =
      text.ok() ? nlohmann::ordered_json::parse(*text, nullptr, false) : nlohmann::ordered_json();
  const std::string path =
      (std::filesystem::path(f.pending_result).parent_path() / VllmResultName(f.backend_label, j))
          .string();
  std::error_code ec;
  std::filesystem::rename(f.pending_result, path, ec);
  if (ec) {
    fmt::print(stderr, "latdoc bench: {}: {}\n", path, ec.message());
    return rc == kExitOk ? kExitCannotRun : rc;
  }
  if (!QuietRequested()) fmt::print(stderr, "latdoc bench: saved {}\n", path);
  return rc;
}

}  // namespace latdoc::cli::bench_internal
