// latdoc compare A.json B.json [--json FILE] [--all] [--fail-on-worse]: before/after of two
// results of the same kind. Argument parsing, output and exit codes only (compare/compare.h).
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "compare/compare.h"

namespace latdoc::cli {
namespace {

struct CompareArgs {
  std::string a, b, json_path;
  bool all = false;
  bool fail_on_worse = false;
  bool allow_invalid = false;
  bool quiet = false;
  uint64_t seed = 1;
};

int RunCompare(CompareArgs& args) {
  auto a = compare::LoadResult(args.a);
  if (!a.ok()) return Fail("compare", a.status().message(), kExitBadInput);
  auto b = compare::LoadResult(args.b);
  if (!b.ok()) return Fail("compare", b.status().message(), kExitBadInput);
  // A run whose validation failed did not measure the load it was asked for: its numbers are no
  // before or after of anything (loadgen/validation.h). Refused unless --allow-invalid.
  std::vector<std::string> invalid;
  for (const compare::LoadedResult* x : {&*a, &*b}) {
    const std::vector<std::string> failed = compare::FailedValidation(x->doc);
    if (failed.empty()) continue;
    if (!args.allow_invalid) {
      fmt::print(stderr, "latdoc compare: {}: validation failed ({}); its numbers do not measure "
                         "the load asked for (pass --allow-invalid to compare anyway)\n",
                 x->path, failed.front());
      return kExitBadInput;
    }
    for (const std::string& f : failed) invalid.push_back(x->path + ": " + f);
  }
  compare::CompareOptions o;
  o.seed = args.seed;
  o.show_all = args.all;
  auto r = compare::Compare(*a, *b, o);
  if (!r.ok()) return Fail("compare", r.status().message(), kExitBadInput);
  for (const std::string& i : invalid)
    r->notes.push_back("validation failed, compared anyway (--allow-invalid): " + i);
  r->invalid = std::move(invalid);
  if (!args.json_path.empty()) {
    if (Status st = WriteFileAtomic(args.json_path, JsonText(compare::CompareToJson(*r), 2) + "\n"); !st.ok()) {
      fmt::print(stderr, "latdoc compare: {}\n", st.message());
      return ExitCodeFor(st);
    }
  }
  if (!args.quiet) {
    std::string out = compare::RenderCompareText(*r, o);
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  if (args.fail_on_worse && r->loads_differ) {
    // A gate compares like with like: under another load, latency moves whatever the server did.
    fmt::print(stderr, "latdoc compare: --fail-on-worse: {} and {} offered different loads (see "
                       "the note), so no verdict\n", args.a, args.b);
    return kExitBadInput;
  }
  return args.fail_on_worse && (r->worse > 0 || r->findings_worse > 0) ? kExitFindings : kExitOk;
}

}  // namespace

Command RegisterCompare(CLI::App& root) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* app = root.add_subcommand(
      "compare",
      "Before/after of two results (bench, sweep, trace or diagnose --json, of the same kind):\n"
      "what moved, by how much, and whether it is beyond run-to-run noise.");
  app->add_option("A", a->a, "The result before")->required();
  app->add_option("B", a->b, "The result after")->required();
  app->add_option("--json", a->json_path, "Write the comparison as JSON (schema latdoc.compare/1)");
  app->add_flag("--show-ok,--all", a->all, "List metrics within noise too");
  AddQuietFlag(app, &a->quiet, "No table (the exit code, and --json when given)");
  AddNoColorFlag(app);
  app->add_flag("--fail-on-worse", a->fail_on_worse, "Exit 1 when any metric got worse beyond noise, or a finding is new or more severe (exit 2 when the runs offered different loads)");
  app->add_flag("--allow-invalid", a->allow_invalid, "Compare runs whose validation failed (else refused, exit 2); each failed check becomes a note and an entry of the JSON's invalid_runs");
  app->add_option("--seed", a->seed, "Seed of the bootstrap resampling")->capture_default_str();
  return Command{app, [a] { return RunCompare(*a); }};
}

}  // namespace latdoc::cli
