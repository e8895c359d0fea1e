// The command-line pieces every subcommand shares, so that the same thing has the same spelling
// and the same rules everywhere: durations with units, checked numbers, the server's URL (with
// vLLM's and curl users' spellings), the API key, the output flags (--quiet, --no-color,
// --show-ok), and what is said about an argument CLI11 did not know (did you mean ...).
//
// Not here: what a subcommand does with its options (its cmd_<name>.cc). Nothing is printed
// except by the functions whose comment says so (notes and errors on stderr).
// Thread safety: called from main's thread, before any work starts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "http/client.h"

namespace latdoc::cli {

// ---- Numbers and durations -------------------------------------------------------------------

// What a number option accepts besides its type: NaN is refused by every one of them, and
// infinity unless kPositiveOrInf.
enum class Bound {
  kPositive,       // > 0
  kPositiveOrInf,  // > 0, "inf" allowed (--request-rate inf: every request at once)
  kNonNegative,    // >= 0 (0 usually means "off" or "none"; the help says which)
  kAny,            // durations only: any value; the command checks the range itself
};

// A CLI11 check on a number option: refuses NaN, infinity (unless allowed) and values outside
// `bound`, with "VALUE: must be more than 0" (ReportParseError prints "latdoc CMD: --flag VALUE:
// must be more than 0"). Leaves anything that is not a number to CLI11's conversion. kAny is
// for durations only (as a Number check it refuses NaN and infinity alone).
CLI::Validator Number(Bound bound);

// A CLI11 transform for an option held in seconds (a double): accepts "250ms", "30s", "5m", "1h"
// or a bare number of seconds, and hands CLI11 the number of seconds. The same with a
// millisecond option (an int or double held in ms, e.g. --poll-ms): a bare number is ms. A bare
// number is passed on as typed once `bound` is checked (the command may check an upper bound
// with its own message).
CLI::Validator Seconds(Bound bound);
CLI::Validator Milliseconds(Bound bound);

// The same parse, for an option kept as text (the exporter's "15s"): nanoseconds.
StatusOr<int64_t> DurationNs(std::string_view flag, std::string_view text);

// ---- The server's URL ------------------------------------------------------------------------

// A base URL after normalisation, and what the user's text said besides.
struct ServerUrl {
  std::string url;                       // e.g. "http://host:8000" or "http://host/llm"
  std::optional<std::string> endpoint;   // "completions" or "chat" when the URL named one
  std::string note;                      // a one-line note for stderr; "" when nothing changed
};

// Makes what users paste a base URL latdoc can add its paths to:
// - a trailing "/v1" (the OpenAI SDK's base_url) is dropped;
// - a pasted endpoint, ".../v1/completions" or ".../v1/chat/completions" (curl, k6, hey), is
//   dropped and reported in `endpoint`; ".../v1/models" too;
// - any other path ("/llm", a gateway's route) stays, as a prefix of every request;
// - a query ("?api-version=...") and the scheme, host and port stay as given.
// `flag` names the option in messages. Errors: what http::ParseUrl refuses, prefixed with the
// flag ("--url 'ftp://x': scheme must be http or https").
StatusOr<ServerUrl> NormalizeServerUrl(std::string_view flag, std::string_view text);

// "completions" or "chat" from --endpoint's spellings: "completions", "chat", "/v1/completions",
// "/v1/chat/completions" (vLLM's form), "v1/chat/completions". nullopt for anything else.
std::optional<std::string> EndpointName(std::string_view text);

// The options naming the server, with vLLM's spellings: --url (also --base-url, or --target for
// the exporter), --host/--port (vLLM: http://HOST:PORT, host 127.0.0.1, port 8000), --endpoint
// (when `endpoint` is given), --backend (vLLM's: vllm, openai, openai-chat), --api-key and
// --api-key-env.
struct ServerFlags {
  std::string* url = nullptr;           // where the resolved base URL goes
  std::string* endpoint = nullptr;      // "completions" | "chat"; null: no --endpoint
  std::string* api_key_env = nullptr;   // the variable the command reads the key from
  std::string host;
  int port = 0;
  std::string backend;
  std::string api_key;                  // from --api-key; moved into the environment, see below
  CLI::Option* url_opt = nullptr;
  CLI::Option* host_opt = nullptr;
  CLI::Option* port_opt = nullptr;
  CLI::Option* endpoint_opt = nullptr;
  CLI::Option* api_key_env_opt = nullptr;
};

struct ServerFlagNames {
  const char* url = "--url,--base-url";
  const char* url_help = "Base URL of the server, e.g. http://127.0.0.1:8000";
  bool host_port = true;   // --host/--port
  bool endpoint = true;    // --endpoint and --backend
};

// Adds the options above to `app`, writing to `f`'s pointers. `f` must outlive the parse and
// the run.
void AddServerFlags(CLI::App* app, ServerFlags& f, const ServerFlagNames& names = {});

// After the parse: builds the URL from --host/--port when given (refusing them with --url),
// normalises it (a note on stderr when it changed), applies --backend and a URL that named the
// chat endpoint, and puts an --api-key value into the environment under a variable of latdoc's
// own that *api_key_env then names, so the command reads it as it reads $OPENAI_API_KEY (the
// key is never printed; a note on stderr suggests the environment variable). `required`: no
// URL at all is an error. Prints "latdoc COMMAND: ..." errors and notes on stderr; returns the
// exit code to stop with, or nullopt to go on.
std::optional<int> ResolveServerFlags(std::string_view command, ServerFlags& f, bool required);

// ---- The load client's connections -----------------------------------------------------------

// --no-keepalive, --insecure and the four timeouts of the load client (bench, sweep), as
// durations; Apply() puts them into the HTTP client's options. --threads (the load's event-loop
// threads) is `threads`, for loadgen::BenchOptions::threads.
struct ClientFlags {
  bool no_keepalive = false;
  double connect_timeout_s = 10, first_byte_timeout_s = 600, idle_timeout_s = 60,
         request_timeout_s = 0;  // 0: no bound on a whole request
  int threads = 0;               // --threads: the load's event-loop threads; 0: the default
  void Apply(http::ClientOptions& client) const;
};
// Adds them to `app` in `group`; `insecure` is the client's own switch. `f` must outlive the run.
void AddClientFlags(CLI::App* app, ClientFlags& f, bool& insecure, const char* group);
// --threads alone (diagnose, which has its own connection flags); 1 to 1024. `group`: null for
// the default group.
void AddThreadsFlag(CLI::App* app, int& threads, const char* group);

// ---- Output flags ----------------------------------------------------------------------------

// --no-color: no ANSI colours, as NO_COLOR=1 and TERM=dumb (it sets NO_COLOR for this process,
// which report::StdoutWantsColor() reads).
void AddNoColorFlag(CLI::App* app);

// --quiet (-q): no terminal summary or progress. Sets `*quiet` when given, and the process-wide
// switch QuietRequested() reads (PrintSummaryAndFindings then prints nothing).
void AddQuietFlag(CLI::App* app, bool* quiet, const char* help = "No terminal summary or progress");
bool QuietRequested();

// ---- Unknown arguments -----------------------------------------------------------------------

// Up to `max` of `candidates` closest to `word` (edit distance, or one containing the other),
// best first; none when nothing is close.
std::vector<std::string> Closest(std::string_view word, const std::vector<std::string>& candidates,
                                 size_t max = 3);

// After a parse of `root` (whose subcommands allow extras): when an argument was not
// understood, prints one line on stderr and returns 2; else nullopt.
//   latdoc: unknown command 'benchh': did you mean 'bench'?
//   latdoc bench: unknown option '--concurency': did you mean '--concurrency'?
//   latdoc bench: unknown option '--bogus' ('latdoc bench --help' lists the options)
//   latdoc bench: unknown option '--token': its value is not shown; give a key in an ...
// The value after an unknown option, and the part after '=', is never printed: it may be a key.
std::optional<int> ReportUnknownArguments(CLI::App& root);

// A CLI11 parse error as "latdoc COMMAND: MESSAGE" (with the option's value where CLI11 put it
// as "NAME: VALUE: ..."), and a pointer to --help. Returns 2.
int ReportParseError(CLI::App& root, const CLI::ParseError& e);

}  // namespace latdoc::cli
