#!/usr/bin/env bash
# capture_host.sh: records the small /sys and /proc subtree that `latdoc doctor` reads, plus the
# vendor-CLI outputs it replays, so the host can be judged elsewhere:
#
#   tools/capture_host.sh OUT_DIR [PID]
#   latdoc doctor --sysroot OUT_DIR/tree            # judge the recording
#
# Writes OUT_DIR/tree/ (the subtree, paths as on the host; relative symlinks for
# /sys/bus/pci/devices/<bdf> as the kernel makes them), OUT_DIR/tree/.commands/ (argv, stdout
# and exit code of each external command latdoc runs; see src/host/command_runner.h), OUT_DIR/nvidia-smi-q.xml where nvidia-smi exists, and
# OUT_DIR/host_tree.tar.gz of the tree. Only the files latdoc reads are copied: no whole
# directories, nothing from /proc/<pid>/environ except variable names latdoc lints (VLLM_*, HIP_*,
# ROCM_*, HSA_*, NCCL_*, CUDA_*, PYTORCH_*, TORCH_*, OMP_*), and --api-key values are replaced.
# Read-only on the host; needs no root (unreadable files are simply missing from the tree).
set -u
out=${1:?usage: capture_host.sh OUT_DIR [PID]}
pid=${2:-}
tree="$out/tree"
mkdir -p "$tree/.commands"

copy() {  # copy FILE [MAX_LINES]: one file into the tree, same path; skipped when unreadable.
  local f=$1 max=${2:-}
  [ -r "$f" ] || return 0
  mkdir -p "$tree$(dirname "$f")"
  if [ -n "$max" ]; then head -n "$max" "$f" >"$tree$f" 2>/dev/null || true
  else cat "$f" >"$tree$f" 2>/dev/null || true; fi
}

for f in /proc/net/sockstat /proc/net/sockstat6 /proc/net/netstat /proc/net/snmp /proc/interrupts \
         /proc/diskstats /proc/sys/kernel/numa_balancing /proc/sys/net/netfilter/nf_conntrack_count \
         /proc/sys/net/netfilter/nf_conntrack_max /proc/sys/net/core/somaxconn \
         /proc/sys/net/ipv4/tcp_tw_reuse /proc/sys/net/ipv4/ip_local_port_range \
         /sys/kernel/mm/transparent_hugepage/enabled /sys/devices/system/node/online \
         /sys/devices/system/node/possible /sys/devices/system/cpu/online \
         /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor \
         /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver /proc/pressure/cpu \
         /proc/pressure/memory /proc/pressure/io /proc/vmstat /proc/net/softnet_stat \
         /proc/net/stat/nf_conntrack /proc/sys/net/core/netdev_max_backlog \
         /proc/sys/net/core/netdev_budget; do
  copy "$f"
done
copy /proc/net/tcp 5000
copy /proc/net/tcp6 5000
# /proc/cpuinfo: the first processor block only.
if [ -r /proc/cpuinfo ]; then
  mkdir -p "$tree/proc"; awk 'NF==0{exit} {print}' /proc/cpuinfo >"$tree/proc/cpuinfo"
fi
for n in /sys/devices/system/node/node[0-9]*; do
  [ -d "$n" ] && copy "$n/cpulist"
done

# GPUs (PCI class 0x03xxxx from NVIDIA 0x10de or AMD 0x1002) and every PCI device above them.
pci_attrs="vendor device class numa_node local_cpulist current_link_speed current_link_width
  max_link_speed max_link_width power_dpm_force_performance_level pp_dpm_sclk pp_dpm_mclk
  gpu_busy_percent mem_busy_percent current_compute_partition current_memory_partition"
for dev in /sys/bus/pci/devices/*; do
  [ -r "$dev/class" ] || continue
  class=$(cat "$dev/class"); vendor=$(cat "$dev/vendor")
  case "$class" in 0x03*|0x12*) ;; *) continue ;; esac
  case "$vendor" in 0x10de|0x1002) ;; *) continue ;; esac
  real=$(readlink -f "$dev")
  bdf=$(basename "$dev")
  mkdir -p "$tree/sys/bus/pci/devices"
  # The kernel's link is relative (../../../devices/pci0000:00/...); keep it so.
  ln -sfn "../../..${real#/sys}" "$tree/sys/bus/pci/devices/$bdf"
  p=$real
  while [ "$p" != "/sys/devices" ] && [ "$p" != "/" ]; do
    case "$(basename "$p")" in
      [0-9a-f][0-9a-f][0-9a-f][0-9a-f]:*)
        for a in $pci_attrs; do copy "$p/$a"; done
        if [ -L "$p/driver" ]; then
          mkdir -p "$tree$p"
          ln -sfn "../../../bus/pci/drivers/$(basename "$(readlink "$p/driver")")" "$tree$p/driver"
        fi
        for h in "$p"/hwmon/hwmon*; do
          [ -d "$h" ] || continue
          for a in power1_cap power1_cap_default power1_input power1_average \
                   temp1_input temp2_input temp3_input temp1_label temp2_label temp3_label; do
            copy "$h/$a"
          done
        done ;;
    esac
    p=$(dirname "$p")
  done
done

# NICs: which IRQs belong to which interface (for the IRQ spread check).
for nic in /sys/class/net/*; do
  [ -d "$nic/device/msi_irqs" ] || continue
  name=$(basename "$nic")
  mkdir -p "$tree/sys/class/net/$name/device/msi_irqs"
  for irq in "$nic"/device/msi_irqs/*; do
    echo msix >"$tree/sys/class/net/$name/device/msi_irqs/$(basename "$irq")"
  done
done

# AMD KFD topology (node properties only).
for n in /sys/class/kfd/kfd/topology/nodes/*; do
  [ -d "$n" ] || continue
  copy "$n/properties"; copy "$n/gpu_id"; copy "$n/name"
done

# Whether an option or YAML key names a secret, as latdoc's IsSecretName decides: api-key,
# hf_token, --admin-api-key=..., token, *-key, *-token, *secret*, *password*, authorization; a
# dotted --a.b.api_key+ by its last part. mentions(): text that may hold one (JSON, a comment).
secret_awk='function secret(name,   n) {
    n = tolower(name); sub(/^-+/, "", n); sub(/=.*/, "", n); sub(/\+$/, "", n)
    sub(/^.*\./, "", n); gsub(/_/, "-", n)
    return n == "key" || n == "token" || n == "apikey" ||
           n ~ /(-key|-token|apikey|api-keys|access-tokens)$/ ||
           n ~ /secret|password|passwd|authorization|credential/
  }
  function mentions(s) { return tolower(s) ~ /key|token|secret|passw|auth|credential|bearer/ }'

# A vLLM config file with every secret's value replaced: a secret key's value and the block
# under it (a list of keys, say) become "<redacted>", and so does any value, list item or line
# that mentions a key, token, secret or password in any form (JSON text, a flow mapping, a
# comment): over-redaction is the safe side. CRLF line ends are read as LF.
redact_yaml() {
  awk "$secret_awk"'
    function indent(s) { match(s, /^ */); return RLENGTH }
    { sub(/\r$/, "") }
    skip >= 0 {
      if ($0 ~ /^[ \t]*(#.*)?$/) next
      i = indent($0)
      if (i > skip || (i == skip && $0 ~ /^ *-( |$)/)) next
      skip = -1
    }
    /^ *[?:]( |$)/ { print substr($0, 1, indent($0)) "<redacted>"; next }  # complex keys
    match($0, /^ *(- +)?["\047]?[^"\047:#]+["\047]? *:( |\t|$)/) {
      head = substr($0, 1, RLENGTH); rest = substr($0, RLENGTH + 1)
      key = head; sub(/^ *(- +)?["\047]?/, "", key); sub(/["\047]? *:.*$/, "", key)
      sub(/[ \t]*$/, "", head)
      if (key ~ /^[{[]/) {  # not a key: a flow collection ("- {name: a, api_key: x}")
        if (mentions($0)) { match($0, /^ *(- +)?/); print substr($0, 1, RLENGTH) "<redacted>"; next }
        print; next
      }
      if (secret(key)) { print head " <redacted>"; skip = indent($0); next }
      if (mentions(rest)) { print head " <redacted>"; next }
      print; next
    }
    mentions($0) { print substr($0, 1, indent($0)) "<redacted>"; next }
    { print }'
}

# A command line (one word a line) with every secret's value replaced: after a secret flag (and
# every further value up to the next option), after "--flag=" for a secret flag, and any word or
# "=value" that mentions one inside (JSON, "token=...").
redact_cmdline() {
  awk "$secret_awk"'
    r == 2 { print "<redacted>"; r = 1; next }           # the value after a secret flag
    r == 1 && !/^-/ { print "<redacted>"; next }         # and every further one: --api-key k1 k2
    { r = 0 }
    /^-/ && secret($0) { e = index($0, "="); if (e) { print substr($0, 1, e) "<redacted>"; next }
                         print; r = 2; next }
    /^-/ && index($0, "=") { e = index($0, "=")
                             if (mentions(substr($0, e + 1))) { print substr($0, 1, e) "<redacted>"; next } }
    !/^-/ && /[{[=:]/ && mentions($0) { print "<redacted>"; next }
    { print }'
}

# The server process, when given: cmdline (secrets redacted), status, io, threads, environ subset.
if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
  d="$tree/proc/$pid"; mkdir -p "$d/task"
  tr '\0' '\n' <"/proc/$pid/cmdline" | redact_cmdline | tr '\n' '\0' >"$d/cmdline"
  copy "/proc/$pid/status"; copy "/proc/$pid/io"; copy "/proc/$pid/stat"
  if [ -r "/proc/$pid/environ" ]; then
    tr '\0' '\n' <"/proc/$pid/environ" |
      grep -E '^(VLLM_|HIP_|ROCM_|HSA_|NCCL_|CUDA_|PYTORCH_|TORCH_|OMP_)' |
      awk -F= '{ n = toupper($1) } n ~ /KEY|TOKEN|SECRET|PASSW/ { print $1 "=<redacted>"; next } { print }' |
      tr '\n' '\0' >"$d/environ"
  fi
  for t in /proc/"$pid"/task/*; do copy "$t/stat"; copy "$t/comm"; done
  # vLLM's --config file, where latdoc reads it (the server's root or cwd), API keys redacted.
  cfg=$(tr '\0' '\n' <"/proc/$pid/cmdline" | awk 'c{print; exit} /^--config$/{c=1}')
  if [ -n "$cfg" ]; then
    case "$cfg" in /*) src="/proc/$pid/root$cfg" ;; *) src="/proc/$pid/cwd/$cfg" ;; esac
    if [ -r "$src" ]; then
      mkdir -p "$(dirname "$tree$src")"
      redact_yaml <"$src" >"$tree$src"
    fi
  fi
  # Its CPU cgroup: the quota and throttling counters of each group from its own up to the
  # hierarchy's root (v1 cpu controller first, as latdoc looks; else the v2 tree).
  copy "/proc/$pid/cgroup"
  cg_walk() {  # cg_walk MOUNT PATH FILE...: copies FILEs of PATH's group and every parent.
    local mount=$1 path=$2; shift 2
    local dir="$mount$path"
    [ "$path" = / ] && dir=$mount
    [ -d "$dir" ] || dir=$mount  # another cgroup namespace: the mount's root is the group
    while :; do
      for f in "$@"; do copy "$dir/$f"; done
      [ "$dir" = "$mount" ] || [ ${#dir} -le ${#mount} ] && break
      dir=$(dirname "$dir")
    done
  }
  # "ID:CONTROLLERS:PATH"; the path is everything after the second ':'.
  v1=$(sed -n -E 's/^[0-9]+:(([^:]*,)?cpu(,[^:]*)?):(.*)$/\1:\4/p' "/proc/$pid/cgroup" | head -n 1)
  v2=$(sed -n -E 's/^0::(.*)$/\1/p' "/proc/$pid/cgroup" | head -n 1)
  # Where the hierarchies are mounted, as latdoc reads it.
  mkdir -p "$tree/proc/self"
  grep -E ' - cgroup2? ' /proc/self/mountinfo >"$tree/proc/self/mountinfo" 2>/dev/null || true
  if [ -n "$v1" ]; then
    for m in "/sys/fs/cgroup/${v1%%:*}" /sys/fs/cgroup/cpu; do
      if [ -r "$m/cpu.cfs_period_us" ]; then
        cg_walk "$m" "${v1#*:}" cpu.cfs_quota_us cpu.cfs_period_us cpu.stat; break
      fi
    done
  elif [ -n "$v2" ]; then
    for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do
      if [ -r "$m/cgroup.controllers" ]; then
        copy "$m/cgroup.controllers"; cg_walk "$m" "$v2" cpu.max cpu.stat cpu.pressure; break
      fi
    done
  fi
fi

# External commands, replayed by latdoc under --sysroot: .commands/<prog>.<n>.cmd holds the argv
# (one word a line), .commands/<prog>.<n>.out its standard output (src/host/command_runner.h).
record() {  # record NAME ARGV...: runs ARGV, stores argv and stdout; skipped when not installed.
  local name=$1; shift
  command -v "$1" >/dev/null 2>&1 || return 0
  printf '%s\n' "$@" >"$tree/.commands/$name.cmd"
  "$@" >"$tree/.commands/$name.out" 2>/dev/null
  echo $? >"$tree/.commands/$name.rc"
}
q="index,uuid,name,pci.bus_id,persistence_mode,pstate,utilization.gpu,clocks.current.sm,clocks.max.sm,power.limit,power.default_limit,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,memory.total"
record nvidia-smi.1 nvidia-smi "--query-gpu=$q,clocks_event_reasons.active" --format=csv,noheader,nounits
record nvidia-smi.2 nvidia-smi "--query-gpu=$q,clocks_throttle_reasons.active" --format=csv,noheader,nounits
if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -q -x >"$out/nvidia-smi-q.xml" 2>/dev/null; fi
record amd-smi.1 amd-smi metric --json
record iptables-save.1 iptables-save
record nft.1 nft -j list ruleset
date -u +%Y-%m-%dT%H:%M:%SZ >"$tree/.commands/CAPTURED_AT"
uname -r >"$tree/.commands/UNAME_R"
tar -C "$out" -czf "$out/host_tree.tar.gz" tree
echo "captured $(find "$tree" -type f | wc -l) files into $tree"
