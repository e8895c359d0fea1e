// latdoc: finds where the latency of an LLM inference service goes, and what to change.
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/exit_codes.h"
#include "cli/command.h"
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
  app.set_version_flag("--version", "latdoc " LATDOC_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  std::vector<latdoc::cli::Command> commands = {
      latdoc::cli::RegisterDemo(app),
      latdoc::cli::RegisterDiagnose(app),
      latdoc::cli::RegisterSim(app),
      latdoc::cli::RegisterBench(app),
      latdoc::cli::RegisterSweep(app),
      latdoc::cli::RegisterLogs(app),
      latdoc::cli::RegisterDoctor(app),
      latdoc::cli::RegisterNumaExec(app),
      latdoc::cli::RegisterTrace(app),
      latdoc::cli::RegisterNet(app),
      latdoc::cli::RegisterExporter(app),
      latdoc::cli::RegisterCompare(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return latdoc::kExitBadInput;
  }
  for (auto& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return latdoc::kExitBadInput;
}
