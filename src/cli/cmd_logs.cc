// latdoc logs FILE... [--json FILE] [--follow]: what the server's own log says.
// Argument parsing, output and exit codes only; the work is in logs/ and rules/log_rules.
#include <csignal>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "logs/log_analyzer.h"
#include "logs/log_follower.h"
#include "logs/log_summary.h"
#include "rules/log_rules.h"

namespace latdoc::cli {
namespace {

struct LogsArgs {
  std::vector<std::string> files;
  std::string json_path;
  bool follow = false;
  int poll_ms = 250;
  size_t rows = 12;
  bool show_ok = false;
  bool no_color = false;
};

volatile std::sig_atomic_t g_stop = 0;
extern "C" void OnStopSignal(int) { g_stop = 1; }

// Prints the summary and findings, writes --json; returns the exit code (2 when no line was
// recognised).
int Report(const LogsArgs& a, const logs::LogFacts& facts) {
  // Not one line recognised (empty files, or not a server log latdoc reads): "No problems
  // found" would vouch for a log that was not read. Bad input: exit 2, no --json written.
  if (std::string why = logs::NothingRecognised(facts); !why.empty()) {
    return Fail("logs", "nothing to analyse: " + why, kExitBadInput);
  }
  std::vector<rules::Finding> findings = rules::EvaluateLogRules(facts);
  if (!a.json_path.empty()) {
    nlohmann::json doc;
    doc["schema"] = "latdoc.logs/1";
    doc["facts"] = logs::ToJson(facts);
    nlohmann::json fj = nlohmann::json::array();
    for (const auto& f : findings) fj.push_back(rules::ToJson(f));
    doc["findings"] = std::move(fj);
    Status st = WriteFileAtomic(a.json_path, JsonText(doc, 2) + "\n");
    if (!st.ok()) return Fail("logs", st);
  }
  logs::SummaryOptions so;
  so.series_rows = a.rows;
  PrintSummaryAndFindings(logs::RenderLogSummary(facts, so), findings, a.no_color, a.show_ok);
  return rules::WorstSeverity(findings) == rules::Severity::kFail ? kExitFindings : kExitOk;
}

// Prints what is new since the last snapshot: stats rows, new warning/error templates, gaps.
class LiveTicker {
 public:
  void Prime(const logs::LogFacts& f) { Print(f, /*quiet=*/true); }
  void Print(const logs::LogFacts& f, bool quiet = false) {
    for (const auto& e : f.engines) {
      uint64_t& seen = stats_seen_[e.engine];
      uint64_t fresh = e.stats_lines - seen;
      seen = e.stats_lines;
      if (!quiet && fresh > 0 && e.series.size() > 0) {
        size_t n = e.series.decimation == 1 ? std::min<size_t>(fresh, e.series.size()) : 1;
        for (size_t i = e.series.size() - n; i < e.series.size(); ++i) {
          std::string row = logs::RenderStatsRow(f, e, i);
          std::printf("stats   engine %d  %s\n", e.engine, row.c_str());
        }
      }
      uint64_t& gaps = gaps_seen_[e.engine];
      if (!quiet && e.gaps_total > gaps && !e.gaps.empty()) {
        std::printf("gap     engine %d  no stats line for %.0f s while busy (longest so far from %s)\n",
                    e.engine, static_cast<double>(e.gaps.front().gap_ns) / 1e9,
                    e.gaps.front().start_label.c_str());
      }
      gaps = e.gaps_total;
    }
    for (const auto& m : f.messages) {
      if (templates_.insert(m.level + "\x1f" + m.tmpl).second && !quiet) {
        std::printf("%-7s %s  %s\n", m.level.c_str(), m.first_ns ? m.first_label.c_str() : "",
                    m.tmpl.c_str());
      }
    }
    std::fflush(stdout);
  }

 private:
  std::map<int, uint64_t> stats_seen_, gaps_seen_;
  std::set<std::string> templates_;
};

int RunFollow(const LogsArgs& a) {
  logs::LogAnalyzer analyzer;
  std::vector<std::unique_ptr<logs::LogFollower>> followers;
  for (const auto& path : a.files) {
    auto fo = logs::LogFollower::Open(path, &analyzer);
    if (!fo.ok()) return Fail("logs", fo.status());
    followers.push_back(std::move(*fo));
  }
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
  LiveTicker ticker;
  uint64_t initial = 0;
  for (auto& fo : followers) {
    auto n = fo->Poll();
    if (!n.ok()) return Fail("logs", n.status());
    initial += *n;
  }
  ticker.Prime(analyzer.Snapshot());
  std::printf("following %zu file(s) from line %llu; new stats lines and messages below; Ctrl-C "
              "prints the summary\n",
              a.files.size(), static_cast<unsigned long long>(initial));
  std::fflush(stdout);
  while (!g_stop) {
    timespec ts{a.poll_ms / 1000, static_cast<long>(a.poll_ms % 1000) * 1000000L};
    nanosleep(&ts, nullptr);
    uint64_t fresh = 0;
    for (auto& fo : followers) {
      auto n = fo->Poll();
      if (!n.ok()) return Fail("logs", n.status());
      fresh += *n;
    }
    if (fresh > 0) ticker.Print(analyzer.Snapshot());
  }
  for (auto& fo : followers) fo->Finish();
  std::printf("\n");
  return Report(a, analyzer.Snapshot());
}

}  // namespace

Command RegisterLogs(CLI::App& root) {
  auto args = std::make_shared<LogsArgs>();
  CLI::App* app = root.add_subcommand(
      "logs",
      "Read server logs (vLLM V1/V0, SGLang, TGI, llama.cpp, uvicorn access lines; plain, gzip\n"
      "or zstd; - for stdin): throughput, queue and KV-cache series, preemptions, stalls, log\n"
      "volume, errors.");
  app->add_option("files", args->files, "Log files in order (rotated logs oldest first); - is stdin")
      ->required();
  app->add_option("--json", args->json_path, "Write facts, series and findings as JSON to FILE");
  app->add_flag("--follow,-f", args->follow,
                "Keep reading files as they grow (tail -F); Ctrl-C prints the summary");
  app->add_option("--poll-ms", args->poll_ms, "With --follow: how often to look for new lines (ms, or 1s)")
      ->type_name("DURATION")->transform(Milliseconds(Bound::kPositive))->check(CLI::Range(10, 60000))->capture_default_str();
  app->add_option("--rows", args->rows, "Rows of the stats table per engine")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app->add_flag("--show-ok", args->show_ok, "Also list checks that passed");
  AddQuietFlag(app, nullptr, "No terminal summary");
  AddNoColorFlag(app);
  return Command{app, [args]() -> int {
                   const LogsArgs& a = *args;
                   if (a.follow) {
                     for (const auto& f : a.files) {
                       if (f == "-") {
                         std::fprintf(stderr,
                                      "latdoc logs: --follow reads files; for a pipe use "
                                      "`latdoc logs -` (it reads until the pipe closes)\n");
                         return kExitBadInput;
                       }
                     }
                     return RunFollow(a);
                   }
                   auto facts = logs::AnalyzeInputs(a.files);
                   if (!facts.ok()) return Fail("logs", facts.status());
                   return Report(a, *facts);
                 }};
}

}  // namespace latdoc::cli
