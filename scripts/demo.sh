#!/usr/bin/env bash
# The demo on a fresh Debian 12 machine: installs only what building latdoc needs (no browser,
# no Prometheus: those are for the tests), builds the latdoc binary alone (not the tests), and
# runs `latdoc demo` (the built-in simulator with a few pathologies, then a full diagnosis).
# Arguments go to `latdoc demo` (e.g. --dir DIR). Idempotent, like scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${LATDOC_JOBS:-$(nproc)}"
scripts/install-deps.sh build
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs" --target latdoc
exec build/release/src/cli/latdoc demo "$@"
