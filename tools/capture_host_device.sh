#!/usr/bin/env bash
# capture_host_device.sh: what was run on the device machine (one NVIDIA H200) to record
# tests/data/host/h200_recorded/. Starts a stand-in "server" process whose command line has the
# shape of a real `vllm serve` launch (python3 <bin>/vllm serve ...) and one thread spinning at
# 100% of a core, so the process finder, the flag lint and the thread sampler have something
# real to read; it is NOT vLLM (no vLLM on that machine). Then runs capture_host.sh, and with
# LATDOC=<latdoc binary> in the environment also the live `latdoc doctor` (NVML path), timed.
set -u
out=${1:?usage: capture_host_device.sh OUT_DIR}
mkdir -p /tmp/standin/bin
install -m 755 "$(dirname "$0")/standin/vllm" /tmp/standin/bin/vllm
VLLM_LOGGING_LEVEL=DEBUG VLLM_API_KEY=do-not-record /tmp/standin/bin/vllm serve \
  Qwen/Qwen2.5-7B-Instruct --enforce-eager --gpu-memory-utilization 0.97 --max-num-seqs 512 \
  --api-key sk-secret-value --port 8000 &
spid=$!
sleep 2
"$(dirname "$0")/capture_host.sh" "$out" "$spid"
# With LATDOC=<binary>: the live check on this host while the stand-in runs (NVML path), timed.
if [ -n "${LATDOC:-}" ]; then
  for i in 1 2 3; do
    TIMEFORMAT="doctor wall %R s"; time "$LATDOC" doctor --no-color >/dev/null
  done
  "$LATDOC" doctor --collect "$out/h200_live_facts.json"
  "$LATDOC" doctor --all --no-color --json "$out/h200_live_doctor.json" >"$out/h200_live_doctor.txt"
  echo "doctor exit $?"
fi
kill "$spid"
