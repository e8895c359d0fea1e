// The subcommand registry: each subcommand lives in one file, cmd_<name>.cc, and exposes one
// Register function that adds its CLI11 subcommand and returns the function that runs it.
// main.cc lists every Register function explicitly (no static self-registration).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "rules/finding.h"

namespace latdoc::cli {

// Runs a parsed subcommand; returns the process exit code (base/exit_codes.h).
using RunFn = std::function<int()>;

// Prints "latdoc COMMAND: MESSAGE" on stderr and returns `code`, for `return Fail(...)`.
int Fail(std::string_view command, std::string_view message, int code);
// The same for a status; the exit code is ExitCodeFor(status).
int Fail(std::string_view command, const Status& status);

// Writes `summary`, a "Findings" heading and the findings as text to stdout, in colour when
// stdout is a terminal and `no_color` is off; `show_ok` lists the passing checks too.
void PrintSummaryAndFindings(std::string summary, const std::vector<rules::Finding>& findings,
                             bool no_color, bool show_ok);

struct Command {
  CLI::App* app;
  RunFn run;
};

// One line per subcommand, in the order of `latdoc --help`.
Command RegisterSim(CLI::App& root);
Command RegisterBench(CLI::App& root);
Command RegisterDiagnose(CLI::App& root);
Command RegisterDemo(CLI::App& root);
Command RegisterSweep(CLI::App& root);
Command RegisterCalibrate(CLI::App& root);
Command RegisterWhatif(CLI::App& root);
Command RegisterLogs(CLI::App& root);
Command RegisterDoctor(CLI::App& root);
Command RegisterNumaExec(CLI::App& root);
Command RegisterTrace(CLI::App& root);
Command RegisterNet(CLI::App& root);
Command RegisterExporter(CLI::App& root);
Command RegisterCompare(CLI::App& root);
Command RegisterFleet(CLI::App& root);
Command RegisterMerge(CLI::App& root);

}  // namespace latdoc::cli
