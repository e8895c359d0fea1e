#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs what is missing, builds, runs
# every test. Usage: scripts/test.sh [release|asan]   (default: release)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
scripts/install-deps.sh test
scripts/build.sh "$preset"
ctest --preset "$preset"
