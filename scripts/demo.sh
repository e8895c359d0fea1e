#!/usr/bin/env bash
# The demo on a fresh Debian 12 machine: installs what is missing, builds, and runs
# `latdoc demo` (the built-in simulator with a few pathologies, then a full diagnosis).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
exec build/release/src/cli/latdoc demo "$@"
