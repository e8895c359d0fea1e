#!/bin/bash
# Regenerates the golden files of `latdoc trace` (tests/data/trace/golden/) from the fixtures.
# Usage: tools/gen_trace_goldens.sh [BUILD_DIR]   (default build-trace); review `git diff` after.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-trace}"
cmake --build "$build" --target trace_test
LATDOC_UPDATE_GOLDEN=1 "$build/src/trace/trace_test" --gtest_filter='Fixtures/ReportGoldenTest.*'
"$build/src/trace/trace_test" --gtest_filter='Fixtures/ReportGoldenTest.*'
