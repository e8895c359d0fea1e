#!/usr/bin/env bash
# capture_cgroup_throttle.sh: records a host whose inference "server" runs in a cgroup with a CPU
# quota it overruns, for tests/data/host/cgroup_v{1,2}_throttled/. Needs root and a writable
# cgroup hierarchy with the cpu controller (v1: /sys/fs/cgroup/cpu; v2: /sys/fs/cgroup with
# "cpu" in cgroup.subtree_control).
#
#   sudo tools/capture_cgroup_throttle.sh OUT_DIR [QUOTA_US] [SECONDS]
#
# Makes the group latdoc_capture with a quota of QUOTA_US (default 20000) per 100000 us period,
# i.e. a fifth of a CPU, starts the stand-in of capture_host_device.sh (python3 running a script
# named `vllm`, one thread spinning; it is NOT vLLM) inside it, lets it run SECONDS (default 12)
# so the kernel throttles it, then runs capture_host.sh OUT_DIR PID, and removes the group.
set -u
out=${1:?usage: capture_cgroup_throttle.sh OUT_DIR [QUOTA_US] [SECONDS]}
quota=${2:-20000}
secs=${3:-12}
die() { echo "capture_cgroup_throttle: $*" >&2; exit 1; }
[ "$secs" -lt 100 ] 2>/dev/null || die "SECONDS must be under 100 (the stand-in lives 120 s)"
spid= cg=
cleanup() { [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null; [ -n "$cg" ] && rmdir "$cg" 2>/dev/null; }
trap cleanup EXIT
if grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
  cg=/sys/fs/cgroup/latdoc_capture
  mkdir -p "$cg" && echo "$quota 100000" >"$cg/cpu.max" || die "cannot set $cg/cpu.max"
elif [ -w /sys/fs/cgroup/cpu ]; then
  cg=/sys/fs/cgroup/cpu/latdoc_capture
  mkdir -p "$cg" && echo 100000 >"$cg/cpu.cfs_period_us" && echo "$quota" >"$cg/cpu.cfs_quota_us" ||
    die "cannot set the quota in $cg"
else
  die "no writable cgroup hierarchy with the cpu controller"
fi
mkdir -p /tmp/standin/bin
install -m 755 "$(dirname "$0")/standin/vllm" /tmp/standin/bin/vllm || die "cannot install the stand-in"
# The shell joins the group first, so the stand-in starts inside it.
sh -c "echo \$\$ >$cg/cgroup.procs && exec /tmp/standin/bin/vllm serve Qwen/Qwen2.5-7B-Instruct \
  --max-num-seqs 256 --port 8000" &
spid=$!
sleep 1
grep -q "latdoc_capture" "/proc/$spid/cgroup" || die "the stand-in is not in $cg"
sleep "$secs"
[ -d "/proc/$spid" ] || die "the stand-in exited"
"$(dirname "$0")/capture_host.sh" "$out" "$spid" || die "capture_host.sh failed"
