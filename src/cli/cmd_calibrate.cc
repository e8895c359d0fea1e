// latdoc calibrate SWEEP_OR_DIAGNOSE.json [--json cal.json] [server flags]: fits the simulator's
// engine model to the measured server (whatif/calibration.h). Argument parsing, output and exit
// codes only.
#include <cstdio>
#include <string>

#include <fmt/core.h>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "whatif/calibration.h"

namespace latdoc::cli {
namespace {

struct CalibrateArgs {
  std::string input, json_path, chunked;
  int max_num_seqs = 0, max_num_batched_tokens = 0, num_gpu_blocks = 0, block_size = 0;
  int parallel = 0, ctx_size = 0, batch_size = 0;  // llama.cpp's
  double gpu_memory_utilization = 0;
  bool quiet = false;
};

// Reads a JSON document; errors name the file and the byte.
StatusOr<nlohmann::json> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(auto in, OpenInput(path));
  ASSIGN_OR_RETURN(std::string text, ReadAll(*in));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(fmt::format("{}: byte {}: not valid JSON", path, e.byte));
  }
}

int RunCalibrate(CalibrateArgs& a) {
  if (!a.json_path.empty()) {
    if (Status st = CheckOutputPath(a.json_path); !st.ok()) return Fail("calibrate", st.message(), kExitBadInput);
  }
  whatif::CalibrateOptions o;
  o.source_name = a.input;
  if (a.max_num_seqs > 0) o.flags.max_num_seqs = a.max_num_seqs;
  // llama.cpp's flags name the server and map on the model's limits (whatif/calibration.h).
  if (a.parallel > 0 || a.ctx_size > 0 || a.batch_size > 0) o.server = whatif::kServerLlamaCpp;
  if (a.parallel > 0) o.flags.max_num_seqs = a.parallel;
  if (a.ctx_size > 0) o.flags.ctx_size = a.ctx_size;
  if (a.batch_size > 0) o.flags.max_num_batched_tokens = a.batch_size;
  if (a.max_num_batched_tokens > 0) o.flags.max_num_batched_tokens = a.max_num_batched_tokens;
  if (a.num_gpu_blocks > 0) o.flags.num_gpu_blocks = a.num_gpu_blocks;
  if (a.block_size > 0) o.flags.block_size = a.block_size;
  if (a.gpu_memory_utilization > 0) o.flags.gpu_memory_utilization = a.gpu_memory_utilization;
  if (a.chunked == "true" || a.chunked == "on") {
    o.flags.enable_chunked_prefill = true;
  } else if (a.chunked == "false" || a.chunked == "off") {
    o.flags.enable_chunked_prefill = false;
  } else if (!a.chunked.empty()) {
    return Fail("calibrate", fmt::format("--enable-chunked-prefill {}: expected true or false", a.chunked), kExitBadInput);
  }
  auto doc = ReadJson(a.input);
  if (!doc.ok()) return Fail("calibrate", doc.status().message(), kExitBadInput);
  auto cal = whatif::Calibrate(*doc, o);
  if (!cal.ok()) return Fail("calibrate", cal.status().message(), kExitBadInput);
  if (!a.json_path.empty()) {
    if (Status st = WriteFileAtomic(a.json_path, JsonText(whatif::CalibrationJson(*cal), 2) + "\n"); !st.ok()) {
      return Fail("calibrate", st);
    }
  }
  if (!a.quiet) {
    std::string out = whatif::CalibrationText(*cal);
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  if (!cal->usable) {
    fmt::print(stderr, "latdoc calibrate: not usable for prediction: {}\n", cal->refusal);
    return kExitFindings;
  }
  return kExitOk;
}

}  // namespace

Command RegisterCalibrate(CLI::App& root) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* app = root.add_subcommand(
      "calibrate",
      "Fit the simulator's step-time and KV model to a measured server, from a sweep (or\n"
      "diagnose --sweep) JSON; exit 1 when the fit is too poor to predict from.");
  app->add_option("FILE", a->input, "latdoc sweep --json or latdoc diagnose --sweep --json output")->required();
  app->add_option("--json", a->json_path, "Write the calibration (schema latdoc.calibration/1)");
  const char* g = "The server's flags, when known (else measured or assumed)";
  app->add_option("--max-num-seqs", a->max_num_seqs, "Its --max-num-seqs")->check(Number(Bound::kPositive))->group(g);
  app->add_option("--max-num-batched-tokens", a->max_num_batched_tokens, "Its --max-num-batched-tokens")
      ->check(Number(Bound::kPositive))->group(g);
  app->add_option("--num-gpu-blocks", a->num_gpu_blocks, "Its KV cache blocks (vLLM logs 'GPU KV cache size')")
      ->check(Number(Bound::kPositive))->group(g);
  app->add_option("--block-size", a->block_size, "Its --block-size (default 16)")->check(Number(Bound::kPositive))->group(g);
  app->add_option("--enable-chunked-prefill", a->chunked, "true or false (default true, as vLLM V1)")->group(g);
  app->add_option("--gpu-memory-utilization", a->gpu_memory_utilization, "Its --gpu-memory-utilization (default 0.9)")
      ->check(Number(Bound::kPositive))->group(g);
  const char* gl = "A llama.cpp server's flags (the sweep's advice in llama.cpp's flags also says it was one)";
  auto* par = app->add_option("--parallel", a->parallel, "Its -np/--parallel (slots: the running batch limit)")
                  ->check(Number(Bound::kPositive))->group(gl);
  par->excludes(app->get_option("--max-num-seqs"));
  app->add_option("--ctx-size", a->ctx_size, "Its -c/--ctx-size (the KV cache in tokens, split over the slots)")
      ->check(Number(Bound::kPositive))->group(gl);
  app->add_option("--batch-size", a->batch_size, "Its -b/--batch-size (tokens per step; default 2048)")
      ->check(Number(Bound::kPositive))->group(gl)->excludes(app->get_option("--max-num-batched-tokens"));
  AddQuietFlag(app, &a->quiet, "No report (the exit code, and --json when given)");
  return Command{app, [a] { return RunCalibrate(*a); }};
}

}  // namespace latdoc::cli
