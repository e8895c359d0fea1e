// latdoc: finds where the latency of an LLM inference service goes, and what to change.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/exit_codes.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "report/findings_text.h"

#ifndef LATDOC_VERSION
#define LATDOC_VERSION "0.0.0"
#endif

namespace latdoc::cli {

int Fail(std::string_view command, std::string_view message, int code) {
  std::fprintf(stderr, "latdoc %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  return code;
}

int Fail(std::string_view command, const Status& status) {
  return Fail(command, status.message(), ExitCodeFor(status));
}

void PrintSummaryAndFindings(std::string summary, const std::vector<rules::Finding>& findings,
                             bool no_color, bool show_ok) {
  if (QuietRequested()) return;
  report::TextOptions to;
  to.color = !no_color && report::StdoutWantsColor();
  to.show_ok = show_ok;
  summary += "\nFindings\n" + report::RenderFindingsText(findings, to);
  std::fwrite(summary.data(), 1, summary.size(), stdout);
  std::fflush(stdout);
}

}  // namespace latdoc::cli

int main(int argc, char** argv) {
  CLI::App app{
      "latdoc: finds where the latency of an LLM inference service goes (network, host, GPU\n"
      "kernels, server configuration) and says what to change.",
      "latdoc"};
  app.set_version_flag("-V,--version", "latdoc " LATDOC_VERSION);
  app.footer(
      "latdoc help COMMAND (or latdoc COMMAND --help) explains a command. A DURATION takes a unit\n"
      "(30s, 250ms, 5m); a bare number is in the option's unit.");
  app.fallthrough(false);

  std::vector<latdoc::cli::Command> commands = {
      latdoc::cli::RegisterDemo(app),
      latdoc::cli::RegisterDiagnose(app),
      latdoc::cli::RegisterSim(app),
      latdoc::cli::RegisterBench(app),
      latdoc::cli::RegisterSweep(app),
      latdoc::cli::RegisterCalibrate(app),
      latdoc::cli::RegisterWhatif(app),
      latdoc::cli::RegisterLogs(app),
      latdoc::cli::RegisterDoctor(app),
      latdoc::cli::RegisterNumaExec(app),
      latdoc::cli::RegisterTrace(app),
      latdoc::cli::RegisterNet(app),
      latdoc::cli::RegisterExporter(app),
      latdoc::cli::RegisterCompare(app),
      latdoc::cli::RegisterFleet(app),
      latdoc::cli::RegisterMerge(app),
  };
  // Arguments CLI11 does not know are collected rather than refused, so that latdoc names them
  // itself: the closest option or command, and never the value that followed (it may be a key).
  app.allow_extras();
  for (CLI::App* sub : app.get_subcommands({})) sub->allow_extras();

  // "latdoc help [COMMAND]" and "latdoc version", as git and docker take them.
  std::vector<std::string> args(argv, argv + argc);
  if (args.size() >= 2 && args[1] == "help") {
    args.erase(args.begin() + 1);
    args.push_back("--help");
  } else if (args.size() == 2 && args[1] == "version") {
    args[1] = "--version";
  }
  std::vector<char*> av;
  for (std::string& a : args) av.push_back(a.data());

  try {
    app.parse(static_cast<int>(av.size()), av.data());
  } catch (const CLI::Success& e) {
    // "latdoc benchh --help" (or "latdoc help benchh"): the misspelt command, not the help.
    const std::vector<std::string> top = app.remaining();
    if (!top.empty() && !top.front().empty() && top.front()[0] != '-') {
      if (auto rc = latdoc::cli::ReportUnknownArguments(app)) return *rc;
    }
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An unknown option explains the rest ("--bogus" is why "--url" seemed missing).
    if (auto rc = latdoc::cli::ReportUnknownArguments(app)) return *rc;
    return latdoc::cli::ReportParseError(app, e);
  }
  if (auto rc = latdoc::cli::ReportUnknownArguments(app)) return *rc;
  for (auto& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  std::fprintf(stderr, "%s\nlatdoc: give a command (latdoc help COMMAND explains one)\n", app.help().c_str());
  return latdoc::kExitBadInput;
}
