#!/usr/bin/env bash
# Runs every example of README.md against a real `latdoc sim`, and fails when one does not
# exit as the README says. Usage: tests/readme/run_examples.sh LATDOC_BINARY [README.md]
#
# What counts as an example (the convention is stated at the end of README.md too):
#   - each command line of a fenced code block whose language is `sh` (a line ending in `\`
#     continues on the next; blank lines and lines that are only a comment are not commands);
#   - each code span starting with `latdoc ` in a table row (a line starting with `|`).
#   Fenced blocks must be `sh` (run) or `text` (output, not run): any other block is an error,
#   so no example escapes the test by its block's language.
# Markers, after the command (in a `#` comment in a block; anywhere after the span in a row):
#   `exits N` or `exits N or M`  the exit codes accepted (default: 0);
#   `not tested: REASON`          skipped, and listed with its reason.
# How they run: in order, each in `bash -c` from one scratch folder in which `tests` links to
# the repository's tests/ (so `tests/data/...` paths work as from the repository's root, and
# files an example writes are there for the next), with `latdoc` first on PATH, NO_COLOR set,
# OPENAI_API_KEY unset, and `localhost:8000` pointed at a `latdoc sim --port 0` this script
# starts (the simulator's defaults, as `latdoc sim --port 8000` would run). Each is bounded by
# 300 s. An example whose exit code is not among those accepted is run once more (latency
# examples judge timing, and a loaded machine can tip a threshold); failing twice fails the test.
# Also checked: every subcommand `latdoc --help` lists has a row in the commands table with an
# example. Exit 0 when all pass, 1 otherwise, 2 for bad usage or a README it cannot parse.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: tests/readme/run_examples.sh LATDOC_BINARY [README.md]" >&2
  exit 2
fi
latdoc=$(realpath "$1")
readme=$(realpath "${2:-$(dirname "$0")/../../README.md}")
repo=$(dirname "$readme")

work=$(mktemp -d "${TMPDIR:-/tmp}/latdoc-readme.XXXXXX")
sim_pid=""
cleanup() {
  if [ -n "$sim_pid" ]; then kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- Extract the examples: one record per line, LINE<TAB>run|skip<TAB>CODES<TAB>COMMAND ----------
# CODES is the accepted exit codes separated by spaces (or the skip reason).
awk -v file="README.md" '
  function fail(msg) { printf "%s:%d: %s\n", file, NR, msg > "/dev/stderr"; bad = 1; exit 2 }
  # Markers in `rest` (the text after the command): sets kind and codes.
  function markers(rest,   m) {
    kind = "run"; codes = "0"
    if (match(rest, /not tested:[^|]*/)) {
      kind = "skip"; codes = substr(rest, RSTART + 12, RLENGTH - 12)
      gsub(/^[ \t]+|[ \t)]+$/, "", codes)
      if (codes == "") fail("`not tested:` needs a reason")
      return
    }
    if (match(rest, /exits [0-9]+( or [0-9]+)?/)) {
      codes = substr(rest, RSTART + 6, RLENGTH - 6); gsub(/ or /, " ", codes)
    }
  }
  function emit(line, cmd) { printf "%d\t%s\t%s\t%s\n", line, kind, codes, cmd }
  /^```/ {
    if (!in_block) {
      lang = substr($0, 4); in_block = 1
      if (lang != "sh" && lang != "text") fail("a code block must be ```sh (run) or ```text (not run), not ```" lang)
    } else {
      if (pending != "") fail("a command in this block ends in a continuation")
      in_block = 0
    }
    next
  }
  in_block && lang == "sh" {
    line = $0
    if (pending == "") start = NR
    if (line ~ /\\$/) { pending = pending substr(line, 1, length(line) - 1) " "; next }
    cmd = pending line; pending = ""
    if (cmd ~ /^[ \t]*(#|$)/) next
    # The comment starts at the first " #" (no example here quotes a "#").
    rest = ""
    if (match(cmd, / #/)) rest = substr(cmd, RSTART)
    markers(rest)
    emit(start, cmd)
    next
  }
  !in_block && /^\|/ {
    row = $0
    while (match(row, /`latdoc [^`]*`/)) {
      cmd = substr(row, RSTART + 1, RLENGTH - 2)
      row = substr(row, RSTART + RLENGTH)
      rest = row; sub(/`latdoc .*/, "", rest)   # markers up to the next example in the row
      markers(rest)
      emit(NR, cmd)
    }
  }
  END { if (!bad && in_block) { printf "%s: a code block is not closed\n", file > "/dev/stderr"; exit 2 } }
' "$readme" > "$work/examples" || exit 2

# --- Every subcommand has an example in the commands table ---------------------------------------
missing=()
while read -r sub; do
  grep -qE "^\| \`$sub\` \|.*\`latdoc $sub( [^\`]*)?\`" "$readme" || missing+=("$sub")
done < <("$latdoc" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
if [ ${#missing[@]} -gt 0 ]; then
  echo "FAIL: the commands table of README.md has no row with an example for: ${missing[*]}"
  exit 1
fi

# --- The scratch folder and the simulator -------------------------------------------------------
mkdir "$work/run" "$work/bin"
ln -s "$latdoc" "$work/bin/latdoc"
ln -s "$repo/tests" "$work/run/tests"
"$latdoc" sim --port 0 >"$work/sim.out" 2>"$work/sim.log" &
sim_pid=$!
port=""
for _ in $(seq 1 200); do  # the listening line, within 10 s
  port=$(sed -n 's|^latdoc sim listening on http://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$work/sim.out")
  [ -n "$port" ] && break
  kill -0 "$sim_pid" 2>/dev/null || break
  sleep 0.05
done
if [ -z "$port" ]; then
  echo "FAIL: latdoc sim --port 0 did not start:"; cat "$work/sim.log"
  exit 1
fi

# --- Run them ----------------------------------------------------------------------------------
ran=0 skipped=0 failed=0
run_one() {  # $1 command; prints nothing, sets rc
  rc=0
  (cd "$work/run" && env -u OPENAI_API_KEY PATH="$work/bin:$PATH" NO_COLOR=1 \
     timeout 300 bash -c "$1") >"$work/out" 2>&1 </dev/null || rc=$?
}
while IFS=$'\t' read -r line kind codes cmd; do
  if [ "$kind" = skip ]; then
    echo "skip README.md:$line: ${cmd%% #*}  (not tested: $codes)"
    skipped=$((skipped + 1))
    continue
  fi
  live=${cmd//localhost:8000/localhost:$port}
  start_s=$SECONDS
  run_one "$live"
  tries=1
  if [[ " $codes " != *" $rc "* ]]; then
    echo "     README.md:$line: exit $rc, expected ${codes// / or }; once more"
    tail -20 "$work/out" | sed 's/^/       | /'
    run_one "$live"
    tries=2
  fi
  if [[ " $codes " == *" $rc "* ]]; then
    echo "ok   README.md:$line: $cmd  (exit $rc, $((SECONDS - start_s)) s, $tries run(s))"
    ran=$((ran + 1))
  else
    echo "FAIL README.md:$line: $cmd"
    echo "     exit $rc, expected ${codes// / or }; as run: $live"
    tail -40 "$work/out" | sed 's/^/       | /'
    failed=$((failed + 1))
  fi
done < "$work/examples"

echo "README examples: $ran passed, $failed failed, $skipped not tested"
if [ "$ran" -eq 0 ]; then
  echo "FAIL: no example found in README.md"
  exit 1
fi
[ "$failed" -eq 0 ]
