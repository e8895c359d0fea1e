#!/usr/bin/env bash
# Checks that the C++ lines a change touched follow .clang-format (Debian's clang-format 14,
# installed when missing). Lines the change did not touch are left as they are, so the check
# can run on every change without reformatting the tree.
# Usage: scripts/check-format.sh [BASE]   (default HEAD~1: the last commit; CI runs this)
#   scripts/check-format.sh BASE --fix   rewrites those lines in place instead.
# Exit 0: formatted (or nothing to check); 1: the diff printed is what clang-format wants.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:-HEAD~1}"
fix="${2:-}"
if ! command -v clang-format-diff-14 >/dev/null 2>&1; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends clang-format-14 >/dev/null
fi
if ! git rev-parse --verify -q "$base^{commit}" >/dev/null; then
  echo "check-format: no $base to compare with (a shallow clone?): nothing to check"
  exit 0
fi
changes() { git diff -U0 --no-color "$base" -- '*.cc' '*.h'; }
if [ "$fix" = --fix ]; then
  changes | clang-format-diff-14 -p1 -i
  exit 0
fi
out="$(changes | clang-format-diff-14 -p1)"
if [ -n "$out" ]; then
  printf '%s\n' "$out"
  echo "check-format: the lines above, changed since $base, differ from .clang-format" \
       "(scripts/check-format.sh $base --fix rewrites them)"
  exit 1
fi
echo "check-format: the C++ lines changed since $base follow .clang-format"
