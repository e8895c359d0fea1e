#!/usr/bin/env bash
# No secret leaves a server's host through latdoc: a stand-in server process (python3 running a
# script named `vllm`, sleeping; it is NOT vLLM) is started with API keys and tokens in its
# command line (several after one flag, the --flag=value form, inside a JSON value, a dotted key),
# its environment and its --config YAML file (CRLF; a block list, a quoted key, a nested flow
# mapping, JSON in a quoted string, a mapping in a list). Then:
#   1. tools/capture_host.sh records its tree: no secret value may appear in any file of it;
#   2. `latdoc doctor --sysroot TREE --pid PID --collect` reads that tree, and
#   3. `latdoc doctor --pid PID --collect` reads the live process:
# no secret in the facts either, while the flags that are not secrets are still there.
# Usage: capture_redaction.sh LATDOC   (run from the repository root; ctest does)
set -euo pipefail
latdoc="$1"
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

mkdir -p "$tmp/srv"
printf 'import time\ntime.sleep(60)\n' >"$tmp/srv/vllm"
# CRLF line ends, as a file written on Windows has them.
sed 's/$/\r/' >"$tmp/srv/cfg.yaml" <<'YAML'
model: stand-in/model
api_key:
  - sk-file-list-one
  - sk-file-list-two
"hf_token": hf-file-quoted   # a comment
kv-transfer-config: {kv_connector: X, kv_connector_extra_config: {api_key: sk-file-nested}}
speculative-config: '{"model": "m", "api_key": "sk-file-jsonstr"}'
served-model-name:
  - {name: a, api_key: sk-file-listmap}
max-num-seqs: 8
YAML
secrets=(sk-cli-one sk-cli-two hf-cli-eq sk-env-key hf-env-token tok-env-x sk-file-list-one
         sk-file-list-two hf-file-quoted sk-file-nested adm-cli sk-file-jsonstr sk-file-listmap
         sk-cli-json sk-cli-dotted pw-env)
(cd "$tmp/srv" && exec env VLLM_API_KEY=sk-env-key HF_TOKEN=hf-env-token VLLM_X_TOKEN=tok-env-x \
   VLLM_DB_PASSWD=pw-env python3 vllm serve stand-in/model --api-key sk-cli-one sk-cli-two \
   --hf-token=hf-cli-eq --admin_api_key adm-cli --port 8123 \
   --kv-transfer-config '{"kv_connector": "X", "kv_connector_extra_config": {"api_key": "sk-cli-json"}}' \
   --kv-transfer-config.kv_connector_extra_config.api_key+ sk-cli-dotted --config cfg.yaml) &
pid=$!
for _ in $(seq 50); do
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "vllm serve" && break
  sleep 0.1
done

fail=0
check_clean() {  # check_clean WHAT PATH...: no secret value in the files
  local what="$1"; shift
  for s in "${secrets[@]}"; do
    if grep -r -l -F -- "$s" "$@" >/dev/null 2>&1; then
      echo "FAIL: $what: secret '$s' found in: $(grep -r -l -F -- "$s" "$@" | head -3)"
      fail=1
    fi
  done
}
check_has() {  # check_has WHAT FILE TEXT: a value that is not a secret is kept
  if ! grep -q -F -- "$3" "$2"; then echo "FAIL: $1: '$3' missing from $2"; fail=1; fi
}

bash tools/capture_host.sh "$tmp/out" "$pid" >/dev/null
check_clean "capture_host.sh" "$tmp/out"
cfg_copy=$(find "$tmp/out" -name cfg.yaml | head -1)
[ -n "$cfg_copy" ] || { echo "FAIL: capture_host.sh did not record the config file"; fail=1; }
if [ -n "$cfg_copy" ]; then
  check_has "recorded config" "$cfg_copy" "max-num-seqs: 8"
  check_has "recorded config" "$cfg_copy" "api_key: <redacted>"
fi

"$latdoc" doctor --sysroot "$tmp/out/tree" --pid "$pid" --collect "$tmp/recorded.json" >/dev/null
"$latdoc" doctor --pid "$pid" --collect "$tmp/live.json" >/dev/null
for f in recorded live; do
  check_clean "doctor ($f)" "$tmp/$f.json"
  check_has "doctor ($f)" "$tmp/$f.json" '"--max-num-seqs"'
  check_has "doctor ($f)" "$tmp/$f.json" '"8123"'
  check_has "doctor ($f)" "$tmp/$f.json" '<redacted>'
done
[ "$fail" -eq 0 ] && echo "ok: no secret in the capture or the facts (${#secrets[@]} planted)"
exit "$fail"
