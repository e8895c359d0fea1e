#!/usr/bin/env bash
# Installs the Debian 12 packages latdoc needs. Idempotent: packages already present are
# skipped, and apt is only touched when something is missing.
# Usage: scripts/install-deps.sh [build|test|bench]   (default: test)
#   build  what building latdoc needs: the compiler toolchain, the libraries, and Node.js/npm
#          for the chart library the HTML report embeds at build time (scripts/demo.sh).
#   test   build, plus what the tests run: curl, python3 (with PyYAML for the manifest check),
#          Chromium (tests/browser), Prometheus (the exporter's and fleet's end-to-end tests run
#          a real Prometheus and promtool), iproute2 (the network-namespace tests) and the
#          openssl command (the TLS proxy's certificates); git and python3-numpy for the
#          llama.cpp end-to-end test (scripts/build-llama-server.sh clones llama.cpp from the
#          npm package node-llama-cpp; scripts/make-tiny-gguf.py writes its model with numpy).
#   bench  build, plus what bench/client_floor.py compares against: python3-aiohttp (the
#          vLLM-style client) and liburing-dev (the io_uring floor reader).
set -euo pipefail

set_name="${1:-test}"
case "$set_name" in
  build|test|bench) ;;
  *) echo "usage: scripts/install-deps.sh [build|test|bench]" >&2; exit 2 ;;
esac

pkgs=(
  cmake ninja-build g++ pkg-config
  libboost-dev libssl-dev libsimdjson-dev zlib1g-dev libisal-dev libzstd-dev libsqlite3-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libnuma-dev libyaml-dev
  # CMake finds GoogleTest and Google Benchmark when it configures (unit tests and bench/ are
  # part of every preset's build), so configuring needs them even to build the binary alone.
  libgtest-dev libgmock-dev libbenchmark-dev
)
if [ "$set_name" = bench ]; then
  # bench/client_floor.py: the vLLM-style Python client (aiohttp) and the io_uring floor.
  pkgs+=(python3 python3-aiohttp liburing-dev)
fi
if [ "$set_name" = test ]; then
  pkgs+=(curl python3 python3-yaml chromium prometheus iproute2 openssl)
  pkgs+=(git python3-numpy)
fi
# Node.js and npm build the HTML report's assets; the machine may already have them (not from apt).
command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The HTML report's charting library (embedded at build time) and the browser test's driver.
"$(dirname "$0")/../report-assets/install.sh"
