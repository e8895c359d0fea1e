#!/usr/bin/env bash
# Rewrites the golden reports of tests/data/report from diagnosis_example.json:
#   tests/data/report/regen_golden.sh [BUILD_DIR]   (default build-report)
# Run after a deliberate change to the HTML or Markdown renderer, then review `git diff`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${1:-build-report}
cd "$root"
cmake --build "$build" --target diagnosis_report_test
LATDOC_REGEN_GOLDEN=1 "$build/src/report/diagnosis_report_test" \
  --gtest_filter='HtmlReportTest.ExampleMatchesGolden:MarkdownReportTest.ExampleMatchesGolden'
