#include "cli/flags.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/exit_codes.h"
#include "base/secrets.h"
#include "base/strings.h"
#include "base/units.h"
#include "http/client.h"

namespace latdoc::cli {
namespace {

// The variable an --api-key value is handed over in: the commands read the key from the
// variable --api-key-env names, and this makes the flag one more way to fill it.
constexpr const char* kApiKeyVariable = "LATDOC_API_KEY";

// The whole of `s` as a double (from_chars: "inf", "nan", "-2", "1e3"); nullopt otherwise.
std::optional<double> WholeDouble(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "" when `v` is within `bound`, else why not (after "VALUE: ").
std::string OutOfBound(double v, Bound bound) {
  if (std::isnan(v)) return "not a number";
  if (std::isinf(v) && !(bound == Bound::kPositiveOrInf && v > 0)) return "must be a finite number";
  switch (bound) {
    case Bound::kPositive:
      return v > 0 ? "" : "must be more than 0";
    case Bound::kPositiveOrInf:
      return v > 0 ? "" : "must be more than 0 (or inf)";
    case Bound::kNonNegative:
      return v >= 0 ? "" : "must be 0 or more";
    case Bound::kAny:
      return "";
  }
  return "";
}

CLI::Validator DurationValidator(Bound bound, int64_t bare_unit_ns, double out_unit_ns) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        const std::string_view text = Trim(s);
        if (auto v = WholeDouble(text)) {  // a bare number: in the option's unit already
          if (bound == Bound::kAny) return "";
          std::string why = OutOfBound(*v, bound);
          return why.empty() ? "" : s + ": " + why;
        }
        auto ns = ParseDurationNs(text, bare_unit_ns);
        if (!ns.ok()) return ns.status().message();
        if (bound != Bound::kNonNegative && bound != Bound::kAny && *ns == 0) return s + ": must be more than 0";
        s = fmt::format("{:.17g}", double(*ns) / out_unit_ns);
        return "";
      },
      "");
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string_view StripDashes(std::string_view s) {
  while (!s.empty() && s.front() == '-') s.remove_prefix(1);
  return s;
}

// "'a'", "'a' or 'b'", "'a', 'b' or 'c'".
std::string QuotedList(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

// The subcommand that was parsed, or null.
CLI::App* ParsedCommand(CLI::App& root) {
  for (CLI::App* sub : root.get_subcommands([](CLI::App* s) { return s->parsed(); })) return sub;
  return nullptr;
}

// The spelled name of an unknown option: "--x" of "--x=value", "-x" of "-xvalue".
std::string OptionName(const std::string& arg) {
  if (arg.rfind("--", 0) == 0) return arg.substr(0, arg.find('='));
  return arg.substr(0, 2);
}

std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

int UnknownIn(const std::string& where, const CLI::App& app, const std::vector<std::string>& extras) {
  auto first_option = std::find_if(extras.begin(), extras.end(), [](const std::string& s) {
    return s.size() > 1 && s[0] == '-';
  });
  if (first_option == extras.end()) {
    // Only bare words, and none follows an unknown option: not a value typed for one.
    const std::string& w = extras.front();
    if (RedactSecretsInText(w) != w)
      std::fprintf(stderr, "%s: unexpected argument (not shown: it looks like a key)\n", where.c_str());
    else
      std::fprintf(stderr, "%s: unexpected argument '%s'\n", where.c_str(), w.c_str());
    return kExitBadInput;
  }
  const std::string name = OptionName(*first_option);
  const size_t more = std::count_if(first_option + 1, extras.end(), [](const std::string& s) {
                        return s.size() > 1 && s[0] == '-';
                      });
  const std::string also = more ? fmt::format(" (and {} more)", more) : "";
  if (IsSecretName(name)) {
    std::fprintf(stderr,
                 "%s: unknown option '%s'%s: its value is not shown; give a key in an environment "
                 "variable (OPENAI_API_KEY, or name another with --api-key-env)\n",
                 where.c_str(), name.c_str(), also.c_str());
    return kExitBadInput;
  }
  std::vector<std::string> close = Closest(name, OptionNames(app));
  if (!close.empty()) {
    std::fprintf(stderr, "%s: unknown option '%s'%s: did you mean %s?\n", where.c_str(), name.c_str(),
                 also.c_str(), QuotedList(close).c_str());
  } else {
    std::fprintf(stderr, "%s: unknown option '%s'%s ('%s --help' lists the options)\n", where.c_str(),
                 name.c_str(), also.c_str(), where.c_str());
  }
  return kExitBadInput;
}

}  // namespace

// ---- Numbers and durations -------------------------------------------------------------------

CLI::Validator Number(Bound bound) {
  return CLI::Validator(
      [bound](std::string& s) -> std::string {
        auto v = WholeDouble(Trim(s));
        if (!v) return "";  // not a number at all: CLI11's conversion says so
        std::string why = OutOfBound(*v, bound);
        return why.empty() ? "" : s + ": " + why;
      },
      "");
}

CLI::Validator Seconds(Bound bound) { return DurationValidator(bound, kNsPerSec, 1e9); }
CLI::Validator Milliseconds(Bound bound) { return DurationValidator(bound, 1'000'000, 1e6); }

StatusOr<int64_t> DurationNs(std::string_view flag, std::string_view text) {
  auto d = ParseDurationNs(Trim(text));
  if (!d.ok()) return InvalidArgument(std::string(flag) + " " + d.status().message());
  return d;
}

// ---- The server's URL ------------------------------------------------------------------------

std::optional<std::string> EndpointName(std::string_view text) {
  std::string t = ToLower(Trim(text));
  while (!t.empty() && t.back() == '/') t.pop_back();
  if (t == "completions" || t == "/v1/completions" || t == "v1/completions") return "completions";
  if (t == "chat" || t == "/v1/chat/completions" || t == "v1/chat/completions") return "chat";
  return std::nullopt;
}

StatusOr<ServerUrl> NormalizeServerUrl(std::string_view flag, std::string_view text) {
  auto parsed = http::ParseUrl(text);
  if (!parsed.ok()) return InvalidArgument(std::string(flag) + " " + parsed.status().message());
  ServerUrl out;
  out.url = std::string(text);
  // The path of the text as typed: from the first '/' after "://" to the query or fragment.
  const size_t host_at = text.find("://") + 3;
  const size_t tail_at = std::min(text.find('?', host_at), text.find('#', host_at));
  const size_t path_at = std::min(text.find('/', host_at), tail_at);
  if (path_at >= tail_at) return out;  // no path
  std::string_view path = text.substr(path_at, tail_at == std::string_view::npos ? std::string_view::npos
                                                                                : tail_at - path_at);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  struct Suffix {
    std::string_view path;
    std::optional<std::string> endpoint;
  };
  // What latdoc puts after the base URL itself (loadgen/runner.cc, net/probe.cc).
  static const Suffix kSuffixes[] = {{"/v1/chat/completions", "chat"},
                                     {"/v1/completions", "completions"},
                                     {"/v1/models", std::nullopt},
                                     {"/v1", std::nullopt}};
  for (const Suffix& s : kSuffixes) {
    if (path.size() < s.path.size() || ToLower(path.substr(path.size() - s.path.size())) != s.path) continue;
    const std::string_view prefix = path.substr(0, path.size() - s.path.size());
    std::string rest = tail_at == std::string_view::npos ? "" : std::string(text.substr(tail_at));
    if (!rest.empty() && rest[0] == '#') rest.clear();  // a fragment is never sent
    out.url = std::string(text.substr(0, path_at)) + std::string(prefix) + rest;
    out.endpoint = s.endpoint;
    const std::string what = s.endpoint ? "names an endpoint, and latdoc adds the endpoint's path itself"
                                        : fmt::format("ends in {}, which latdoc adds itself", s.path);
    out.note = RedactSecretsInText(fmt::format("{} {}: {}; using {}{}", flag, text, what, out.url,
                                               s.endpoint ? " with --endpoint " + *s.endpoint : ""));
    return out;
  }
  return out;  // another path: a prefix (a gateway's route), kept
}

void AddServerFlags(CLI::App* app, ServerFlags& f, const ServerFlagNames& names) {
  f.url_opt = app->add_option(names.url, *f.url, names.url_help);
  if (names.host_port) {
    f.host_opt = app->add_option("--host", f.host,
                                 "Server host, as vLLM's --host: the URL is http://HOST:PORT (default: 127.0.0.1)");
    f.port_opt = app->add_option("--port", f.port, "Server port, with --host (default: 8000)")
                     ->check(CLI::Validator(
                         [](std::string& s) -> std::string {
                           auto v = WholeDouble(Trim(s));
                           if (v && !(*v >= 1 && *v <= 65535)) return s + ": must be 1 to 65535";
                           return "";
                         },
                         ""));
  }
  if (names.endpoint && f.endpoint) {
    f.endpoint_opt =
        app->add_option("--endpoint", *f.endpoint,
                        "completions | chat (or vLLM's /v1/completions, /v1/chat/completions)")
            ->transform(CLI::Validator(
                [](std::string& s) -> std::string {
                  auto e = EndpointName(s);
                  if (!e) return s + ": expected completions or chat (/v1/completions, /v1/chat/completions)";
                  s = *e;
                  return "";
                },
                ""))
            ->capture_default_str();
    app->add_option("--backend", f.backend,
                    "As vLLM's --backend: vllm or openai (the completions endpoint), openai-chat (chat)")
        ->check(CLI::Validator(
            [](std::string& s) -> std::string {
              if (s == "vllm" || s == "openai" || s == "openai-chat") return "";
              return s + ": not supported; latdoc speaks the OpenAI API: vllm, openai or openai-chat";
            },
            ""));
  }
  app->add_option("--api-key", f.api_key,
                  "The API key (never printed; better in an environment variable: see --api-key-env)");
  if (f.api_key_env) {
    f.api_key_env_opt = app->add_option("--api-key-env", *f.api_key_env,
                                        "Environment variable holding the API key (never printed)")
                            ->capture_default_str();
  }
}

std::optional<int> ResolveServerFlags(std::string_view command, ServerFlags& f, bool required) {
  auto fail = [&](const std::string& message) {
    std::fprintf(stderr, "latdoc %.*s: %s\n", int(command.size()), command.data(), message.c_str());
    return std::optional<int>(kExitBadInput);
  };
  const bool host_port = (f.host_opt && f.host_opt->count() > 0) || (f.port_opt && f.port_opt->count() > 0);
  if (host_port) {
    if (f.url_opt->count() > 0) return fail("give " + f.url_opt->get_name() + " or --host/--port, not both");
    std::string host = f.host.empty() ? "127.0.0.1" : f.host;
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
    *f.url = fmt::format("http://{}:{}", host, f.port == 0 ? 8000 : f.port);
  }
  if (f.url->empty()) {
    if (!required) return std::nullopt;
    return fail(fmt::format("give the server's URL: {} http://HOST:PORT (or --host and --port)",
                            f.url_opt->get_name()));
  }
  auto u = NormalizeServerUrl(f.url_opt->get_name(), *f.url);
  if (!u.ok()) return fail(u.status().message());
  *f.url = u->url;
  if (!u->note.empty())
    std::fprintf(stderr, "latdoc %.*s: note: %s\n", int(command.size()), command.data(), u->note.c_str());
  if (f.endpoint) {
    const bool endpoint_given = f.endpoint_opt && f.endpoint_opt->count() > 0;
    std::optional<std::string> want = u->endpoint;
    std::string from = "the URL";
    if (!f.backend.empty()) {
      const std::string b = f.backend == "openai-chat" ? "chat" : "completions";
      if (want && *want != b) return fail(fmt::format("--backend {} uses the {} endpoint, the URL names {}",
                                                      f.backend, b, *want));
      want = b;
      from = "--backend " + f.backend;
    }
    if (want) {
      if (endpoint_given && *f.endpoint != *want)
        return fail(fmt::format("--endpoint {} and {} (the {} endpoint) disagree", *f.endpoint, from, *want));
      *f.endpoint = *want;
    }
  }
  if (!f.api_key.empty()) {
    if (f.api_key_env_opt && f.api_key_env_opt->count() > 0)
      return fail("give --api-key or --api-key-env, not both");
    if (!f.api_key_env) return fail("--api-key is not read by this command");
    ::setenv(kApiKeyVariable, f.api_key.c_str(), 1);
    *f.api_key_env = kApiKeyVariable;
    std::fprintf(stderr,
                 "latdoc %.*s: note: a key on the command line is visible to other users (ps) and kept "
                 "in the shell's history; next time put it in OPENAI_API_KEY (or a variable named by "
                 "--api-key-env)\n",
                 int(command.size()), command.data());
  }
  return std::nullopt;
}

// ---- Output flags ----------------------------------------------------------------------------

void AddNoColorFlag(CLI::App* app) {
  app->add_flag_callback("--no-color", [] { ::setenv("NO_COLOR", "1", 1); },
                         "No ANSI colours (as NO_COLOR=1 or TERM=dumb)");
}

namespace {
bool g_quiet = false;
}  // namespace

void AddQuietFlag(CLI::App* app, bool* quiet, const char* help) {
  app->add_flag_callback("--quiet,-q", [quiet] {
    g_quiet = true;
    if (quiet) *quiet = true;
  }, help);
}

bool QuietRequested() { return g_quiet; }

// ---- Unknown arguments -----------------------------------------------------------------------

std::vector<std::string> Closest(std::string_view word, const std::vector<std::string>& candidates,
                                 size_t max) {
  const std::string w = ToLower(StripDashes(word));
  if (w.empty()) return {};
  // Close: a few edits (one in a word of up to 4 letters, else a third of it and at least 2), or
  // one name containing the other ("--rate" -> "--request-rate"), ranked after the edits.
  const size_t limit = w.size() <= 4 ? 1 : std::max<size_t>(2, w.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& c : candidates) {
    const std::string n = ToLower(StripDashes(c));
    if (n.empty()) continue;
    size_t d = EditDistance(w, n);
    if (d > limit && w.size() >= 3 && (n.find(w) != std::string::npos || w.find(n) != std::string::npos) &&
        n.size() >= 3)
      d = limit + 1;
    else if (d > limit)
      continue;
    scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (const auto& [d, c] : scored) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    if (out.size() == max) break;
  }
  return out;
}

std::optional<int> ReportUnknownArguments(CLI::App& root) {
  CLI::App* sub = ParsedCommand(root);
  const std::vector<std::string> top = root.remaining();
  if (!top.empty()) {
    // Before (or without) a command: a misspelt command, or an option latdoc itself lacks.
    if (top.front().size() > 1 && top.front()[0] == '-') return UnknownIn("latdoc", root, top);
    std::vector<std::string> commands;
    for (const CLI::App* s : root.get_subcommands({})) commands.push_back(s->get_name());
    commands.push_back("help");
    const std::string& w = top.front();
    const std::string shown = RedactSecretsInText(w) != w ? "(not shown: it looks like a key)" : "'" + w + "'";
    std::vector<std::string> close = Closest(w, commands, 2);
    if (!close.empty())
      std::fprintf(stderr, "latdoc: unknown command %s: did you mean %s?\n", shown.c_str(), QuotedList(close).c_str());
    else
      std::fprintf(stderr, "latdoc: unknown command %s ('latdoc --help' lists the commands)\n", shown.c_str());
    return kExitBadInput;
  }
  if (sub == nullptr) return std::nullopt;
  // "--" ends the options (numa-exec's command follows it): CLI11 lists it among the extras.
  std::vector<std::string> extras = sub->remaining();
  extras.erase(std::remove(extras.begin(), extras.end(), "--"), extras.end());
  if (extras.empty()) return std::nullopt;
  return UnknownIn("latdoc " + sub->get_name(), *sub, extras);
}

int ReportParseError(CLI::App& root, const CLI::ParseError& e) {
  CLI::App* sub = ParsedCommand(root);
  const std::string where = sub ? "latdoc " + sub->get_name() : "latdoc";
  std::string msg = e.what();
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr) {
    // "--flag: VALUE: why" -> "--flag VALUE: why"; CLI11's own checks ("--x: Value 3 not in
    // range ...") keep their colon.
    const size_t colon = msg.find(": ");
    if (colon != std::string::npos && colon + 2 < msg.size() && !std::isupper(static_cast<unsigned char>(msg[colon + 2])))
      msg = msg.substr(0, colon) + " " + msg.substr(colon + 2);
  } else if (const size_t req = msg.find(": 1 required "); req != std::string::npos &&
             msg.size() > 8 && msg.compare(msg.size() - 8, 8, " missing") == 0) {
    msg = msg.substr(0, req) + " needs a value";  // "--url: 1 required TEXT missing"
  } else if (msg.rfind("Could not convert: ", 0) == 0) {
    // "Could not convert: --num-requests = abc" -> "--num-requests abc: expected a whole number".
    const std::string rest = msg.substr(19);
    const size_t eq = rest.find(" = ");
    if (eq != std::string::npos) {
      const std::string name = rest.substr(0, eq);
      std::string type = "a number";
      if (sub != nullptr) {
        if (const CLI::Option* o = sub->get_option_no_throw(name)) {
          const std::string t = o->get_type_name();
          if (t == "INT" || t == "UINT") type = "a whole number";
        }
      }
      msg = fmt::format("{} {}: expected {}", name, rest.substr(eq + 3), type);
    }
  }
  // A key typed into the wrong option is not echoed either.
  std::fprintf(stderr, "%s: %s\n", where.c_str(), RedactSecretsInText(msg).c_str());
  return kExitBadInput;
}

void ClientFlags::Apply(http::ClientOptions& client) const {
  client.keep_alive = !no_keepalive;
  client.connect_timeout_ns = SecToNs(connect_timeout_s);
  client.first_byte_timeout_ns = SecToNs(first_byte_timeout_s);
  client.idle_timeout_ns = SecToNs(idle_timeout_s);
  client.request_timeout_ns = SecToNs(request_timeout_s);
}

void AddClientFlags(CLI::App* app, ClientFlags& f, bool& insecure, const char* group) {
  app->add_flag("--no-keepalive", f.no_keepalive, "A new connection per request")->group(group);
  app->add_flag("--insecure", insecure, "Skip TLS certificate verification")->group(group);
  app->add_option("--connect-timeout", f.connect_timeout_s, "Seconds, or 500ms, 1m")
      ->type_name("DURATION")->transform(Seconds(Bound::kPositive))->group(group)->capture_default_str();
  app->add_option("--first-byte-timeout", f.first_byte_timeout_s, "Seconds, or 500ms, 1m")
      ->type_name("DURATION")->transform(Seconds(Bound::kPositive))->group(group)->capture_default_str();
  app->add_option("--idle-timeout", f.idle_timeout_s, "Between stream reads: seconds, or 500ms, 1m")
      ->type_name("DURATION")->transform(Seconds(Bound::kPositive))->group(group)->capture_default_str();
  app->add_option("--request-timeout", f.request_timeout_s, "For a whole request, stream included (0: none)")
      ->type_name("DURATION")->transform(Seconds(Bound::kNonNegative))->group(group)->capture_default_str();
  AddThreadsFlag(app, f.threads, group);
}

void AddThreadsFlag(CLI::App* app, int& threads, const char* group) {
  CLI::Option* opt = app->add_option(
      "--threads", threads,
      "Event-loop threads of the load (default: the cores available, less one when the server "
      "is on this host)");
  opt->check(CLI::Range(1, 1024));
  if (group) opt->group(group);
}

}  // namespace latdoc::cli
