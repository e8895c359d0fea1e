// latdoc merge SHARD.json... [--json FILE]: the results of the shards of one load (bench --shard)
// as one result of bench's schema. Argument parsing, files, output and exit codes only
// (loadgen/merge.h does the merge).
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "loadgen/merge.h"

namespace latdoc::cli {
namespace {

struct MergeArgs {
  std::vector<std::string> files;
  std::string json_out;
  bool quiet = false;
};

// Exit codes: 0 merged and nothing failed; 1 merged, and a request failed beyond the shards'
// --max-error-rate, the SLO was missed, or a shard was stopped early (partial); 2 a file that
// cannot be read or is not a shard of the same load as the others (the message names it).
int RunMerge(MergeArgs& a) {
  if (!a.json_out.empty()) {
    if (Status st = CheckOutputPath(a.json_out); !st.ok()) return Fail("merge", st);
  }
  std::vector<loadgen::ShardResult> shards;
  for (const std::string& path : a.files) {
    auto text = ReadFileToString(path);
    if (!text.ok()) return Fail("merge", text.status().message(), kExitBadInput);
    loadgen::ShardResult r;
    r.path = path;
    try {
      r.json = nlohmann::ordered_json::parse(*text);
    } catch (const nlohmann::json::parse_error& e) {
      return Fail("merge", fmt::format("{}: not JSON (byte {})", path, e.byte), kExitBadInput);
    }
    shards.push_back(std::move(r));
  }
  auto merged = loadgen::MergeShards(shards);
  if (!merged.ok()) return Fail("merge", merged.status().message(), kExitBadInput);
  const loadgen::BenchSummary& s = merged->summary;
  if (!a.quiet) std::fwrite(s.text.data(), 1, s.text.size(), stdout);
  std::fflush(stdout);
  if (!a.json_out.empty()) {
    if (Status st = WriteFileAtomic(a.json_out, JsonText(s.json, 2) + "\n"); !st.ok()) return Fail("merge", st);
  }
  for (const std::string& n : merged->notes) fmt::print(stderr, "latdoc merge: note: {}\n", n);
  if (s.failures.failed > 0) {
    std::string line = s.failures.Text();
    if (!s.failures.first_error.empty()) line += "; first: " + s.failures.first_error.substr(0, 200);
    fmt::print(stderr, "latdoc merge: {}\n", line);
  }
  for (const std::string& p : s.problems) fmt::print(stderr, "latdoc merge: {}\n", p);
  const bool partial = s.json.value("partial", false);
  return s.problems.empty() && !partial ? kExitOk : kExitFindings;
}

}  // namespace

Command RegisterMerge(CLI::App& root) {
  auto a = std::make_shared<MergeArgs>();
  CLI::App* app = root.add_subcommand(
      "merge",
      "The results of the shards of one load (latdoc bench --shard I/N) as one result:\n"
      "percentiles exact from every shard's requests, throughput over the shards' window.");
  app->add_option("SHARD", a->files, "The shards' results (bench --shard ... --json FILE)")
      ->required()->type_name("FILE");
  app->add_option("--json", a->json_out, "Write the merged result as JSON (bench's schema)")->type_name("FILE");
  AddQuietFlag(app, &a->quiet, "No terminal summary");
  AddNoColorFlag(app);
  return Command{app, [a] { return RunMerge(*a); }};
}

}  // namespace latdoc::cli
