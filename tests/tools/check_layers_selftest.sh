#!/usr/bin/env bash
# scripts/check-layers.py fails on an upward include and on one beside, and passes a tree whose
# includes point down: a check that could not fail would prove nothing about src/.
set -euo pipefail
script="$(dirname "$0")/../../scripts/check-layers.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/base" "$tmp/src/http" "$tmp/src/cli" "$tmp/src/loadgen" "$tmp/src/sim"
echo '#include "base/status.h"' > "$tmp/src/http/client.h"
echo '#include "http/client.h"' > "$tmp/src/cli/main.cc"
python3 "$script" "$tmp/src" >/dev/null || { echo "FAIL: a tree whose includes point down was refused"; exit 1; }
echo '#include "cli/command.h"' > "$tmp/src/base/strings.cc"
echo '#include "sim/engine.h"' > "$tmp/src/loadgen/runner.cc"
if out=$(python3 "$script" "$tmp/src" 2>&1); then echo "FAIL: upward includes passed"; exit 1; fi
grep -q "src/base/strings.cc:1: base includes cli/command.h: cli is above it" <<<"$out" ||
  { echo "FAIL: the upward include is not named: $out"; exit 1; }
grep -q "src/loadgen/runner.cc:1: loadgen includes sim/engine.h: sim is beside it" <<<"$out" ||
  { echo "FAIL: the include beside is not named: $out"; exit 1; }
echo '#include "cli/command.h"' > "$tmp/src/base/strings_test.cc"  # tests are left out
rm "$tmp/src/base/strings.cc" "$tmp/src/loadgen/runner.cc"
python3 "$script" "$tmp/src" >/dev/null || { echo "FAIL: a test's include was judged"; exit 1; }
echo "ok: check-layers refuses upward and sideways includes, names the line"
