// latdoc whatif --calibration cal.json --set KEY=VALUE... --load concurrency=N|rate=R: predicts
// what bench would measure with changed flags (whatif/prediction.h). Argument parsing, output
// and exit codes only.
#include <cstdio>
#include <string>

#include <fmt/core.h>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "whatif/prediction.h"

namespace latdoc::cli {
namespace {

struct WhatifArgs {
  std::string calibration, json_path;
  std::vector<std::string> sets, loads;
  int input_len = 0, output_len = 0, requests = 0;
  double duration_s = 0;
  uint64_t seed = 0;
  bool quiet = false;
};

StatusOr<std::pair<std::string, std::string>> KeyValue(const std::string& flag, const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument(fmt::format("{} {}: expected KEY=VALUE", flag, text));
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

int RunWhatif(WhatifArgs& a) {
  if (!a.json_path.empty()) {
    if (Status st = CheckOutputPath(a.json_path); !st.ok()) return Fail("whatif", st.message(), kExitBadInput);
  }
  whatif::WhatifRequest base;
  for (const std::string& s : a.sets) {
    auto kv = KeyValue("--set", s);
    if (!kv.ok()) return Fail("whatif", kv.status().message(), kExitBadInput);
    base.sets.push_back(*kv);
  }
  if (a.input_len > 0) base.input_len = a.input_len;
  if (a.output_len > 0) base.output_len = a.output_len;
  base.requests = a.requests;
  base.duration_s = a.duration_s;
  base.seed = a.seed;
  std::vector<whatif::WhatifRequest> requests;
  for (const std::string& l : a.loads) {
    auto kv = KeyValue("--load", l);
    if (!kv.ok()) return Fail("whatif", kv.status().message(), kExitBadInput);
    whatif::WhatifRequest r = base;
    if (kv->first == "concurrency") {
      r.rate_mode = false;
    } else if (kv->first == "rate") {
      r.rate_mode = true;
    } else {
      return Fail("whatif", fmt::format("--load {}: expected concurrency=N or rate=R", l), kExitBadInput);
    }
    try {
      size_t used = 0;
      r.load = std::stod(kv->second, &used);
      if (used != kv->second.size() || !(r.load > 0) || r.load > 1e6) throw std::invalid_argument("");
    } catch (...) {
      return Fail("whatif", fmt::format("--load {}: expected a positive number", l), kExitBadInput);
    }
    requests.push_back(r);
  }
  std::string text;
  auto in = OpenInput(a.calibration);
  if (!in.ok()) return Fail("whatif", in.status().message(), kExitBadInput);
  auto all = ReadAll(**in);
  if (!all.ok()) return Fail("whatif", all.status().message(), kExitBadInput);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*all);
  } catch (const nlohmann::json::parse_error& e) {
    return Fail("whatif", fmt::format("{}: byte {}: not valid JSON", a.calibration, e.byte), kExitBadInput);
  }
  auto cal = whatif::CalibrationFromJson(doc, a.calibration);
  if (!cal.ok()) return Fail("whatif", cal.status().message(), kExitBadInput);
  // Bad --set keys and values are bad input even when the calibration is not usable.
  if (auto e = whatif::ApplySets(*cal, base.sets); !e.ok() && e.status().code() == StatusCode::kInvalidArgument) {
    return Fail("whatif", e.status().message(), kExitBadInput);
  }
  if (!cal->usable) {
    return Fail("whatif", fmt::format("not predictable: {} ({})", cal->refusal, a.calibration), kExitFindings);
  }
  nlohmann::ordered_json docs = nlohmann::ordered_json::array();
  for (const whatif::WhatifRequest& r : requests) {
    auto p = whatif::Predict(*cal, r);
    if (!p.ok()) {
      const StatusCode code = p.status().code();
      if (code == StatusCode::kUnimplemented || code == StatusCode::kUnavailable) {
        return Fail("whatif", "not predictable: " + p.status().message(), kExitFindings);
      }
      return Fail("whatif", p.status().message(), kExitBadInput);
    }
    docs.push_back(whatif::PredictionJson(*cal, r, *p));
    text += whatif::PredictionText(*cal, r, *p);
  }
  if (!a.json_path.empty()) {
    nlohmann::ordered_json out = docs.size() == 1 ? docs[0]
                                                  : nlohmann::ordered_json{{"schema", "latdoc.whatif/1"}, {"predictions", docs}};
    if (Status st = WriteFileAtomic(a.json_path, JsonText(out, 2) + "\n"); !st.ok()) return Fail("whatif", st);
  }
  if (!a.quiet) std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

Command RegisterWhatif(CLI::App& root) {
  auto a = std::make_shared<WhatifArgs>();
  CLI::App* app = root.add_subcommand(
      "whatif",
      "Predict p99 TTFT, ITL and tokens/s with changed server flags, from a calibration\n"
      "(latdoc calibrate), faster than real time, with intervals.");
  app->add_option("--calibration", a->calibration, "latdoc calibrate --json output")->required();
  std::string keys;
  for (const auto& k : whatif::SetKeys()) keys += (keys.empty() ? "" : ", ") + k;
  app->add_option("--set", a->sets, "KEY=VALUE, repeatable; keys: " + keys);
  app->add_option("--load", a->loads, "concurrency=N or rate=R (requests/s), repeatable")->required();
  app->add_option("--input-len", a->input_len, "Prompt tokens (default: the calibrated workload's)")->check(Number(Bound::kPositive));
  app->add_option("--output-len", a->output_len, "Output tokens (default: the calibrated workload's)")->check(Number(Bound::kPositive));
  app->add_option("--requests", a->requests, "Requests per prediction (default max(400, 8 x concurrency); rate: 400)")
      ->check(Number(Bound::kPositive));
  app->add_option("--duration", a->duration_s, "Seconds of model time to run instead of --requests")->check(Number(Bound::kPositive));
  app->add_option("--seed", a->seed, "Seed of the prompts and the interval's draws")->capture_default_str();
  app->add_option("--json", a->json_path, "Write the prediction (schema latdoc.whatif/1)");
  AddQuietFlag(app, &a->quiet, "No table (the exit code, and --json when given)");
  return Command{app, [a] { return RunWhatif(*a); }};
}

}  // namespace latdoc::cli
