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

# CMake mirrors the layers: an upward link fails, and so does an include of a module that the
# source's library does not link.
echo 'latdoc_library(latdoc_http SOURCES client.cc DEPS latdoc_base latdoc_cli)' > "$tmp/src/http/CMakeLists.txt"
echo 'latdoc_library(latdoc_cli SOURCES main.cc DEPS latdoc_base)' > "$tmp/src/cli/CMakeLists.txt"
echo 'latdoc_library(latdoc_base SOURCES strings.cc)' > "$tmp/src/base/CMakeLists.txt"
echo '#include "base/status.h"' > "$tmp/src/http/client.cc"
if out=$(python3 "$script" "$tmp/src" 2>&1); then echo "FAIL: an upward link passed"; exit 1; fi
grep -q "src/http/CMakeLists.txt: latdoc_http links latdoc_cli: cli is above http" <<<"$out" ||
  { echo "FAIL: the upward link is not named: $out"; exit 1; }
grep -q "src/cli/main.cc:1: includes http/client.h, but latdoc_cli does not link http" <<<"$out" ||
  { echo "FAIL: the include of a module not linked is not named: $out"; exit 1; }
echo 'latdoc_library(latdoc_http SOURCES client.cc DEPS latdoc_base)' > "$tmp/src/http/CMakeLists.txt"
echo 'latdoc_library(latdoc_cli SOURCES main.cc DEPS latdoc_http)' > "$tmp/src/cli/CMakeLists.txt"
python3 "$script" "$tmp/src" >/dev/null || { echo "FAIL: links that point down were refused"; exit 1; }
echo "ok: check-layers refuses upward and sideways includes and links, names the line"
