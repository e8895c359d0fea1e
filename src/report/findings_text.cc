#include "report/findings_text.h"

#include <algorithm>

#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include <fmt/core.h>

#include "base/strings.h"
#include "base/units.h"

namespace latdoc::report {
namespace {

using rules::Finding;
using rules::Severity;

const char* SeverityColor(Severity s) {
  switch (s) {
    case Severity::kFail: return "\x1b[1;31m";
    case Severity::kWarn: return "\x1b[1;33m";
    case Severity::kInfo: return "\x1b[36m";
    case Severity::kOk: return "\x1b[32m";
    case Severity::kSkip: return "\x1b[2m";
  }
  return "";
}

std::string EvidenceLine(const rules::Evidence& e) {
  std::string v;
  if (e.value) {
    v = FormatSignificant(*e.value, 4);  // "85", "262144", "0.1235"; never "-0"
    if (!e.unit.empty()) v += (e.unit == "%" ? "" : " ") + e.unit;
  } else if (e.text.empty()) {
    v = "n/a";
  }
  if (!e.text.empty()) v += v.empty() ? e.text : " (" + e.text + ")";
  return fmt::format("{}: {}", e.name, v);
}

}  // namespace

std::string RenderFindingsText(const std::vector<Finding>& findings, const TextOptions& opts) {
  std::string out;
  int shown = 0;
  for (const Finding& f : findings) {
    if (!opts.show_ok && (f.severity == Severity::kOk || f.severity == Severity::kSkip)) continue;
    ++shown;
    std::string sev = fmt::format("{:<4}", rules::SeverityName(f.severity));
    for (char& c : sev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (opts.color) sev = std::string(SeverityColor(f.severity)) + sev + "\x1b[0m";
    // Titles, evidence and advice can quote input (kernel names, log lines): printed as text.
    out += fmt::format("{}  {:<7}  {}\n", sev, rules::LayerName(f.layer), ToTerminalText(f.title));
    out += fmt::format("      id: {}\n", ToTerminalText(f.id));
    for (const auto& e : f.evidence) out += "      - " + ToTerminalText(EvidenceLine(e)) + "\n";
    if (f.share_basis == rules::ShareBasis::kOffRequestPath)
      out += fmt::format("      share: {}\n", rules::ShareOf(f));
    if (!f.advice.empty()) out += "      fix: " + ToTerminalText(f.advice) + "\n";
  }
  if (shown == 0) out += "No problems found.\n";
  return out;
}

std::string MarkdownText(std::string_view s) {
  std::string r;
  r.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '\\': case '`': case '*': case '_': case '~': case '[': case ']': case '|':
        r += '\\';
        r += c;
        break;
      case '\r':
        if (i + 1 < s.size() && s[i + 1] == '\n') break;  // CRLF: one break
        [[fallthrough]];
      case '\n': r += "<br>"; break;
      default: r += c;
    }
  }
  return r;
}

std::string MarkdownCode(std::string_view s) {
  size_t longest = 0, run = 0;
  std::string body;
  body.reserve(s.size());
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|') body += "\\|";
    else if (c == '\n' || c == '\r') body += ' ';
    else body += c;
  }
  const std::string fence(longest + 1, '`');
  // A span that starts or ends with a backtick needs a space between it and the fence (the
  // parser strips one space from each end).
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return pad ? fence + " " + body + " " + fence : fence + body + fence;
}

std::string MarkdownAdvice(std::string_view s) {
  std::string r;
  size_t i = 0;
  while (i < s.size()) {
    const size_t open = s.find('`', i);
    const size_t close = open == std::string_view::npos ? open : s.find('`', open + 1);
    if (close == std::string_view::npos) {
      r += MarkdownText(s.substr(i));
      break;
    }
    r += MarkdownText(s.substr(i, open - i));
    r += MarkdownCode(s.substr(open + 1, close - open - 1));
    i = close + 1;
  }
  return r;
}

std::string RenderFindingsMarkdown(const std::vector<Finding>& findings) {
  std::string out = "| # | severity | layer | finding | fix |\n|---|---|---|---|---|\n";
  int n = 0;
  for (const Finding& f : findings) {
    std::string ev;
    for (const auto& e : f.evidence) ev += "<br>" + MarkdownText(EvidenceLine(e));
    if (f.share_basis == rules::ShareBasis::kOffRequestPath) ev += "<br>share: " + MarkdownText(rules::ShareOf(f));
    out += fmt::format("| {} | {} | {} | **{}** ({}){} | {} |\n", ++n,
                       rules::SeverityName(f.severity), rules::LayerName(f.layer),
                       MarkdownText(f.title), MarkdownCode(f.id), ev, MarkdownAdvice(f.advice));
  }
  return out;
}

bool StdoutWantsColor() {
  // no-color.org: a NO_COLOR that is set and not empty; a terminal that says it has no
  // capabilities (TERM=dumb, as Emacs's shell and some CI runners set) gets none either.
  const char* nc = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return ::isatty(1) && (nc == nullptr || nc[0] == '\0');
}

}  // namespace latdoc::report
