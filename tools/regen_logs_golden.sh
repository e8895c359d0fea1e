#!/bin/sh
# Regenerates the golden outputs of `latdoc logs` in tests/data/logs/ (X.log -> X.golden.txt,
# X.golden.json). Run from anywhere after a deliberate change; review the diff before committing.
#   tools/regen_logs_golden.sh [path/to/latdoc]     (default: build-logs/src/cli/latdoc)
# The inputs themselves come from `tools/gen_logs.py golden tests/data/logs`.
set -eu
cd "$(dirname "$0")/.."
BIN=${1:-build-logs/src/cli/latdoc}
for f in tests/data/logs/*.log; do
  b=${f%.log}
  rc=0
  "$BIN" logs "$f" --no-color --json "$b.golden.json" > "$b.golden.txt" || rc=$?
  # 0: nothing failed, 1: a `fail` finding; anything else is a real error.
  if [ "$rc" -gt 1 ]; then echo "latdoc logs $f exited $rc" >&2; exit 1; fi
  echo "$f -> exit $rc"
done
