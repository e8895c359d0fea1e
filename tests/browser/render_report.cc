// render_report DIAGNOSIS.json OUT.html [OUT.md]: writes the HTML (and Markdown) report of a
// diagnosis document, for the browser test (tests/browser/run.sh) and for looking at a report
// by hand. Exit 2 on unreadable input, 3 when an output cannot be written.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "report/html_report.h"
#include "report/markdown_report.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: render_report DIAGNOSIS.json OUT.html [OUT.md]\n");
    return 2;
  }
  auto text = latdoc::ReadFileToString(argv[1]);
  if (!text.ok()) {
    std::fprintf(stderr, "render_report: %s\n", text.status().message().c_str());
    return 2;
  }
  auto doc = nlohmann::ordered_json::parse(*text, nullptr, false);
  if (doc.is_discarded()) {
    std::fprintf(stderr, "render_report: %s: not JSON\n", argv[1]);
    return 2;
  }
  const latdoc::report::Diagnosis d = latdoc::report::DiagnosisFromJson(doc);
  latdoc::Status st = latdoc::WriteFileAtomic(argv[2], latdoc::report::RenderHtmlReport(d));
  if (st.ok() && argc == 4)
    st = latdoc::WriteFileAtomic(argv[3], latdoc::report::RenderMarkdownReport(d));
  if (!st.ok()) {
    std::fprintf(stderr, "render_report: %s\n", st.message().c_str());
    return 3;
  }
  return 0;
}
