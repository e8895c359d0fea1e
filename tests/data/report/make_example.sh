#!/usr/bin/env bash
# Rebuilds diagnosis_example.json from real latdoc runs (see README.md):
#   tests/data/report/make_example.sh [LATDOC_BINARY]   (default build-report/src/cli/latdoc)
# Starts `latdoc sim` with pathologies on (oversized max_num_seqs for a small KV cache, a
# GIL-bound scheduler, synchronous log stalls), runs `latdoc bench --json` against it at
# concurrency 48 with /metrics scraped, a load sweep (one bench per concurrency, assembled into
# the latdoc.sweep/1 shape by assemble_example.py), `latdoc logs --json` on the simulator's log,
# and `latdoc trace --json` on the H200 Kineto fixture (tests/data/trace/kineto/); then assembles
# the diagnosis document.
# Takes about two minutes. The sim is seeded, but latencies come from the wall clock, so the
# numbers move a little from run to run; regenerate the goldens after (regen_golden.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
latdoc=${1:-$root/build-report/src/cli/latdoc}
case $latdoc in /*) ;; */*) latdoc=$PWD/$latdoc ;; esac  # the trace runs from $root
work=$(mktemp -d)
port=18437
cleanup() { [ -n "${sim_pid:-}" ] && kill "$sim_pid" 2>/dev/null || true; }
trap cleanup EXIT

"$latdoc" sim --port $port --seed 7 --max-num-seqs 512 --num-gpu-blocks-override 2048 \
  --sim-host-overhead-us 60 --sim-log-stall-every 40 --sim-log-stall-ms 25 \
  --log-file "$work/sim.log" --log-stats-interval 1 &
sim_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done

url=http://127.0.0.1:$port
"$latdoc" bench --url "$url" --concurrency 48 --num-requests 300 --input-len 512 --output-len 128 \
  --scrape-interval 0.25 --json "$work/bench.json" --quiet || true
for c in 1 2 4 8 16 32 64 128; do
  "$latdoc" bench --url "$url" --concurrency $c --num-requests $((c < 8 ? 16 : 2 * c)) --input-len 512 \
    --output-len 128 --json "$work/sweep_$c.json" --quiet || true
done
kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; sim_pid=
"$latdoc" logs "$work/sim.log" --json "$work/logs.json" >/dev/null || true
# From the repository root, so the document records the trace's repository-relative path.
(cd "$root" && "$latdoc" trace tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz \
  --json "$work/trace.json" >/dev/null) || true
python3 "$root/tests/data/report/assemble_example.py" "$work" "$url" \
  > "$root/tests/data/report/diagnosis_example.json"
echo "wrote tests/data/report/diagnosis_example.json (inputs in $work)"
