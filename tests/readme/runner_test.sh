#!/usr/bin/env bash
# The README test's own contract: run_examples.sh passes a README whose examples exit as marked,
# and fails one whose example exits otherwise, one with a code block of another language, one
# whose commands table misses a subcommand, and a `not tested:` without a reason.
# Usage: tests/readme/runner_test.sh LATDOC_BINARY
set -euo pipefail
latdoc=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/latdoc-readme-runner.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

# A README in a folder beside the repository's tests/ (the runner links the README's tests/).
ln -s "$repo/tests" "$work/tests"
table() {  # a commands table with an example for every subcommand but those named in $@
  echo "| command | example |"
  echo "|---|---|"
  "$latdoc" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' |
    while read -r sub; do
      [[ " $* " == *" $sub "* ]] && continue
      echo "| \`$sub\` | \`latdoc $sub --help\` |"
    done
}
# expect NAME WANT_RC PATTERN: runs the runner on $work/README.md, checks its exit code and that
# its output has a line matching PATTERN.
expect() {
  local name="$1" want="$2" pattern="$3" rc=0
  bash "$here/run_examples.sh" "$latdoc" "$work/README.md" >"$work/out" 2>&1 || rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pattern" "$work/out"; then
    echo "FAIL $name: exit $rc (want $want), output should match: $pattern"
    sed 's/^/  | /' "$work/out"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}

{ echo '# t'; echo '```sh'
  echo 'latdoc bench --url http://localhost:8000 --concurrency 2 \'
  echo '    --num-requests 4 --input-len 16 --output-len 4 --json b.json'
  echo 'latdoc compare b.json b.json'
  echo 'latdoc logs tests/data/logs/vllm_v1_plain.log   # exits 1'
  echo 'latdoc logs no-such.log   # exits 0 or 2'
  echo 'false   # not tested: a reason'
  echo '```'; echo '```text'; echo 'latdoc this is output, not run'; echo '```'; table; } >"$work/README.md"
expect "examples that exit as marked pass" 0 "^README examples: [0-9]+ passed, 0 failed, 1 not tested$"
grep -q "^ok   README.md:3: latdoc bench" "$work/out" || { echo "FAIL: a continued line is one example at its first line"; failures=$((failures + 1)); }

{ echo '```sh'; echo 'latdoc logs tests/data/logs/vllm_v1_plain.log'; echo '```'; table; } >"$work/README.md"
expect "an example exiting otherwise fails" 1 "^FAIL README.md:2: latdoc logs tests/data/logs/vllm_v1_plain.log$"

{ echo '| `logs` | `latdoc logs tests/data/logs/vllm_v1_plain.log` (exits 3) |'; table logs; } >"$work/README.md"
expect "a table example exiting otherwise fails" 1 "^     exit 1, expected 3; as run: "

{ echo '```bash'; echo 'latdoc --version'; echo '```'; table; } >"$work/README.md"
expect "a block of another language is refused" 2 'README.md:1: a code block must be ```sh \(run\) or ```text \(not run\), not ```bash'

{ echo '```sh'; echo 'latdoc --version'; echo '```'; table numa-exec; } >"$work/README.md"
expect "a subcommand missing from the table fails" 1 "no row with an example for: numa-exec$"

{ echo '```sh'; echo 'latdoc --version   # not tested:'; echo '```'; table; } >"$work/README.md"
expect "not tested needs a reason" 2 '^README.md:2: `not tested:` needs a reason$'

[ "$failures" -eq 0 ]
