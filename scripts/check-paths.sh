#!/usr/bin/env bash
# Project rule: the repository stands on its own. No tracked file names a path of a development
# machine (the work tree of the machine that wrote it, a home directory) or a note kept outside
# the repository; facts are cited by upstream project, file and version instead.
#
#   scripts/check-paths.sh        (from anywhere inside the checkout)
#
# Greps every tracked file (`git grep`, binary files skipped) and prints each offending line as
# FILE:LINE:TEXT. Exit 0: none found; 1: some found (listed); 2: not run from a git checkout;
# 3: git grep failed.
# Run by .ci/run before the builds and by ctest (test check_paths).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "scripts/check-paths.sh: not a git checkout, cannot list the tracked files" >&2
  exit 2
fi

# The patterns are assembled from pieces so that this file does not match itself.
w=work s=shared
patterns=(
  -e "/$w/"                           # the development machine's work tree
  -e "/home/[A-Za-z0-9._-]+/"         # someone's home directory
  -e "$s/reference"                   # notes kept beside the repository
  -e "$s/fixtures"                    # the fixtures folder the test data was copied from
)
# The notes themselves, cited by file name alone ("see <note>.md 3.2"), unless the
# repository has come to hold a file of that name.
for note in vllm host-checks trace-formats load-testing peer-servers; do
  if ! git ls-files | grep -qE "(^|/)$note[.]md\$"; then
    patterns+=(-e "(^|[^A-Za-z0-9_/-])$note[.]md")
  fi
done

rc=0
hits=$(git grep -n -I -E "${patterns[@]}") || rc=$?
if [ "$rc" -gt 1 ]; then
  echo "scripts/check-paths.sh: git grep failed (exit $rc)" >&2
  exit 3
fi
if [ "$rc" -eq 0 ]; then
  echo "scripts/check-paths.sh: these lines name a development machine's path or a note outside" \
       "the repository; cite the upstream project, file and version instead, or use a" \
       "repository-relative path:" >&2
  printf '%s\n' "$hits" >&2
  exit 1
fi
echo "scripts/check-paths.sh: no tracked file names a development machine's path or an outside note"
