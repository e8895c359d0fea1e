#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` (CPU only) for the end-to-end test against a real server
# (tests/e2e/llamacpp_test.cc), from the llama.cpp release that the npm package node-llama-cpp
# ships inside itself (llama/gitRelease.bundle, a git bundle of one squashed commit; the package's
# llama/llama.cpp.info.json names the release it was taken from).
#
# Usage: scripts/build-llama-server.sh [CACHE_DIR]     (default: build/llama.cpp)
# Prints the path of the binary on its last line: CACHE_DIR/bin/llama-server.
# Idempotent: when CACHE_DIR/bin/llama-server exists and CACHE_DIR/stamp names the pinned
# package version and commit, it does nothing. Needs npm (the registry), git, cmake, ninja, g++.
# Environment: LATDOC_JOBS (default 2) parallel compile jobs.
set -euo pipefail
cd "$(dirname "$0")/.."

# The pin. Changing the version means checking the commit the bundle holds (printed on mismatch).
NODE_LLAMA_CPP_VERSION=3.22.1
LLAMA_CPP_COMMIT=de3ff815ea7d559ee917f063901b8986f038abc6

cache="${1:-build/llama.cpp}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
stamp_want="node-llama-cpp@${NODE_LLAMA_CPP_VERSION} llama.cpp@${LLAMA_CPP_COMMIT}"
if [ -x "$cache/bin/llama-server" ] && [ "$(cat "$cache/stamp" 2>/dev/null)" = "$stamp_want" ]; then
  echo "build-llama-server: up to date ($stamp_want)" >&2
  echo "$cache/bin/llama-server"
  exit 0
fi

start_s=$(date +%s)
tgz="$cache/npm/node-llama-cpp-${NODE_LLAMA_CPP_VERSION}.tgz"
if [ ! -f "$tgz" ]; then
  mkdir -p "$cache/npm"
  (cd "$cache/npm" && npm pack --silent "node-llama-cpp@${NODE_LLAMA_CPP_VERSION}" >/dev/null)
fi
rm -rf "$cache/package"
tar -xzf "$tgz" -C "$cache" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
echo "build-llama-server: node-llama-cpp ${NODE_LLAMA_CPP_VERSION}:" \
  "$(tr -d '\n ' < "$cache/package/llama/llama.cpp.info.json")" >&2

src="$cache/src"
if [ "$(git -C "$src" rev-parse HEAD 2>/dev/null || true)" != "$LLAMA_CPP_COMMIT" ]; then
  rm -rf "$src"
  git -c advice.detachedHead=false clone --quiet "$cache/package/llama/gitRelease.bundle" "$src"
  git -C "$src" -c advice.detachedHead=false checkout --quiet "$LLAMA_CPP_COMMIT" || {
    echo "build-llama-server: the bundle of node-llama-cpp ${NODE_LLAMA_CPP_VERSION} does not hold" \
      "commit ${LLAMA_CPP_COMMIT}; it holds $(git -C "$src" rev-parse HEAD)" >&2
    exit 3
  }
fi

# CPU only and portable (no -march=native: the cache may move between machines); no OpenSSL
# (the test talks plain HTTP on loopback); no web UI (it would be fetched from the network);
# static libraries so the binary stands alone.
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B "$cache/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=OFF -DGGML_CCACHE=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  "${launcher[@]}" >"$cache/configure.log" 2>&1 || {
  tail -30 "$cache/configure.log" >&2
  exit 3
}
nice cmake --build "$cache/build" --target llama-server -j "${LATDOC_JOBS:-2}" >"$cache/build.log" 2>&1 || {
  tail -30 "$cache/build.log" >&2
  exit 3
}
mkdir -p "$cache/bin"
cp "$cache/build/bin/llama-server" "$cache/bin/llama-server"
echo "$stamp_want" > "$cache/stamp"
echo "build-llama-server: built in $(( $(date +%s) - start_s )) s" >&2
echo "$cache/bin/llama-server"
