#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan; the `fuzz` preset) and runs each for a bounded
# time on a corpus seeded from tests/data. Usage: scripts/fuzz.sh [seconds-per-target] [target...]
#   default 60 s per target, every target. LATDOC_FUZZ_BUILD_DIR (default build/fuzz) picks the
#   build folder; the corpus grows across runs in <build>/fuzz-corpus/<target>, crashes land in
#   <build>/fuzz-artifacts/<target>/. Exit 1 if any target crashed, leaked or timed out.
#   LATDOC_FUZZ_SEED=N fixes libFuzzer's seed, so a run repeats the same inputs (CI uses it: a
#   gate that passes or fails by chance blocks nothing but luck; new findings come from the
#   longer unseeded runs of this script).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
shift || true
build="${LATDOC_FUZZ_BUILD_DIR:-build/fuzz}"
jobs="${LATDOC_JOBS:-$(nproc)}"

# clang and libFuzzer (Debian's clang 14); idempotent like install-deps.sh.
scripts/install-deps.sh >/dev/null
missing=()
for p in clang-14 libfuzzer-14-dev llvm-14; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cmake --preset fuzz -B "$build" >/dev/null
cmake --build "$build" -j "$jobs" --target fuzz_all
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(find "$build/fuzz" -maxdepth 1 -type f -name 'fuzz_*' -executable -printf '%f\n' | sort)
fi

seeds="$build/fuzz-seeds"
python3 fuzz/make_seeds.py "$seeds"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LLVM_SYMBOLIZER_PATH="${LLVM_SYMBOLIZER_PATH:-/usr/bin/llvm-symbolizer-14}"
# One target: its run, then one summary line in $build/fuzz-logs/<target>.result.
run_one() {
  local t="$1" corpus="$build/fuzz-corpus/$1" art="$build/fuzz-artifacts/$1"
  local log="$build/fuzz-logs/$1.log" rc=0 execs units result
  mkdir -p "$corpus" "$art" "$seeds/$t" "$build/fuzz-logs"
  "$build/fuzz/$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 -print_final_stats=1 \
    ${LATDOC_FUZZ_SEED:+-seed="$LATDOC_FUZZ_SEED"} \
    -artifact_prefix="$art/" "$corpus" "$seeds/$t" >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  units=$(find "$corpus" -type f | wc -l)
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    result="FAILED (rc $rc): $(grep -m1 -E 'ERROR: |runtime error|deadly signal' "$log" || true); "
    result+="inputs: $(ls "$art" | head -3 | tr '\n' ' ')log: $log"
  fi
  printf '%-28s %10s %8s %s\n' "$t" "$execs" "$units" "$result" >"$build/fuzz-logs/$t.result"
}

# Several targets at once (LATDOC_FUZZ_PARALLEL, default: the build's job count): each fuzzer
# is one process on one core.
parallel="${LATDOC_FUZZ_PARALLEL:-$jobs}"
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  run_one "$t" &
done
wait
failed=0
printf '%-28s %10s %8s %s\n' target execs corpus result
for t in "${targets[@]}"; do
  cat "$build/fuzz-logs/$t.result"
  grep -q ' ok$' "$build/fuzz-logs/$t.result" || failed=1
done
exit "$failed"
