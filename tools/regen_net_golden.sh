#!/bin/sh
# Regenerates tests/data/net/summary.golden.txt (the text summary of `latdoc net` for facts
# built in src/net/net_text_test.cc). Review the diff before committing.
#   tools/regen_net_golden.sh [build dir]     (default: build-net)
set -eu
cd "$(dirname "$0")/.."
build="${1:-build-net}"
cmake --build "$build" --target latdoc_net_test
LATDOC_UPDATE_GOLDEN=1 "$build/src/net/latdoc_net_test" --gtest_filter='NetTextTest.*'
git diff --stat -- tests/data/net/
