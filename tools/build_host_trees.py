#!/usr/bin/env python3
"""Builds the host test trees and facts fixtures under tests/data/host/ (regenerates them all).

  tools/build_host_trees.py [--latdoc build-host/latdoc]

Trees (a /sys and /proc subtree plus .commands/ with recorded command outputs, the layout of
tools/capture_host.sh):
  h200_snapshot/tree       BUILT from the real readings in h200_shared/ (host_snapshot.txt and
                           nvidia-smi-q.xml of an idle H200 VM): the GPU's PCI sysfs values, NUMA
                           node, sockstat, conntrack, and an nvidia-smi --query-gpu answer whose
                           values are copied from those files. No server process.
  mi300x_built/tree        BUILT, not recorded: a healthy 2-socket host with two MI300X-style
                           GPUs behind PCIe switches, from the kernel documentation of amdgpu
                           sysfs (amdgpu_pm.c kernel-doc, smu_v13_0_6_ppt.c formats, kfd_topology.c)
                           and a vLLM server bound to GPU 0's node.
  mi300x_unhealthy_built/tree  BUILT: the same host with everything the rules look for gone wrong.
The recorded tree h200_recorded/tree comes from tools/capture_host_device.sh on a real H200 and
is not touched here.

Golden outputs (with --latdoc): golden/<name>.txt = `latdoc doctor --facts facts/<name>.json`.

Facts (with --latdoc): facts/<name>.json = `latdoc doctor --sysroot <tree> --collect`, for each
tree. A tree is one reading, so latdoc leaves its interval facts unknown; the two built AMD trees
stand for live hosts and get hand-set ones: a quiet interval for mi300x_built, and for
facts/unhealthy_built.json a thread at 99.5%, accept-queue overflows, socket, softnet and
conntrack drops, 5% retransmits, NIC interrupts on one CPU, a saturated disk: those values are
BUILT, labelled in the README. The recorded trees keep theirs unknown, as doctor would say.
"""
import argparse
import json
import os
import re
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "host")


def w(tree, path, text):
    full = os.path.join(tree, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def link(tree, path, target):
    full = os.path.join(tree, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if os.path.lexists(full):
        os.remove(full)
    os.symlink(target, full)


def pci_device(tree, chain, attrs, driver):
    """chain: ["pci0000:00", "0000:00:01.1", ..., "<gpu bdf>"]; attrs for the last element."""
    path = "/sys/devices/" + "/".join(chain)
    for k, v in attrs.items():
        w(tree, path + "/" + k, v + "\n")
    link(tree, path + "/driver", "../../../../bus/pci/drivers/" + driver)
    return path


def pci_link_attrs(cur_gts, cur_w, max_gts, max_w):
    return {"current_link_speed": "%s GT/s PCIe" % cur_gts, "current_link_width": str(cur_w),
            "max_link_speed": "%s GT/s PCIe" % max_gts, "max_link_width": str(max_w)}


def commands(tree, name, argv, out, rc=0):
    w(tree, "/.commands/%s.cmd" % name, "\n".join(argv) + "\n")
    w(tree, "/.commands/%s.out" % name, out)
    w(tree, "/.commands/%s.rc" % name, "%d\n" % rc)


SMI_FIELDS = ("index,uuid,name,pci.bus_id,persistence_mode,pstate,utilization.gpu,clocks.current.sm,"
              "clocks.max.sm,power.limit,power.default_limit,pcie.link.gen.current,pcie.link.gen.max,"
              "pcie.link.width.current,pcie.link.width.max,memory.total")


def build_h200_snapshot():
    tree = os.path.join(DATA, "h200_snapshot", "tree")
    shutil.rmtree(tree, ignore_errors=True)
    snap = open(os.path.join(DATA, "h200_shared", "host_snapshot.txt")).read()
    xml = open(os.path.join(DATA, "h200_shared", "nvidia-smi-q.xml")).read()
    sec = {}
    for block in re.split(r"^== ", snap, flags=re.M)[1:]:
        head, _, body = block.partition("\n")
        sec[head.strip()] = body
    gpu_head = [k for k in sec if k.startswith("gpu ")][0]
    bdf = gpu_head.split("/")[-1]
    attrs = dict(line.split(": ", 1) for line in sec[gpu_head].strip().splitlines())
    pci_device(tree, ["pci0000:00", bdf], attrs, "nvidia")
    link(tree, "/sys/bus/pci/devices/" + bdf, "../../../devices/pci0000:00/" + bdf)
    numa = sec["numa"].strip().splitlines()  # "0", "/sys/devices/system/node/node0 0-15"
    for line in numa[1:]:
        node_path, cpus = line.split()
        w(tree, node_path + "/cpulist", cpus + "\n")
    w(tree, "/sys/devices/system/node/online", numa[0] + "\n")
    w(tree, "/sys/devices/system/cpu/online", "0-%d\n" % (int(sec["proc"].strip().splitlines()[-2]) - 1))
    w(tree, "/proc/net/sockstat", sec["sockstat"])
    ct = sec["conntrack"].split()
    w(tree, "/proc/sys/net/netfilter/nf_conntrack_count", ct[0] + "\n")
    w(tree, "/proc/sys/net/netfilter/nf_conntrack_max", ct[1] + "\n")
    # The --query-gpu answer in latdoc's field order, values from the snapshot's CSV and the XML.
    q = [x.strip() for x in sec["query"].strip().splitlines()[1].split(",")]
    def x(tag):
        return re.search(r"<%s>([^<]*)</%s>" % (tag, tag), xml).group(1)
    row = [q[0], x("uuid"), q[1], q[2], x("persistence_mode"), q[3], q[12].split()[0],
           q[4].split()[0], q[5].split()[0], x("current_power_limit").split()[0],
           x("default_power_limit").split()[0], q[8], q[9], q[10], q[11],
           x("total").split()[0], q[15]]
    commands(tree, "nvidia-smi.1", ["nvidia-smi", "--query-gpu=" + SMI_FIELDS + ",clocks_event_reasons.active",
                                    "--format=csv,noheader,nounits"], ", ".join(row) + "\n")
    return tree


def amd_host(tree, unhealthy):
    cpus_per_node = 48
    w(tree, "/sys/devices/system/node/online", "0-1\n")
    w(tree, "/sys/devices/system/cpu/online", "0-95\n")
    for n in range(2):
        w(tree, "/sys/devices/system/node/node%d/cpulist" % n,
          "%d-%d\n" % (n * cpus_per_node, (n + 1) * cpus_per_node - 1))
    w(tree, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
      ("powersave" if unhealthy else "performance") + "\n")
    w(tree, "/proc/sys/kernel/numa_balancing", ("1" if unhealthy else "0") + "\n")
    w(tree, "/sys/kernel/mm/transparent_hugepage/enabled",
      ("[always] madvise never" if unhealthy else "always [madvise] never") + "\n")
    # Two GPUs, one per socket, each behind an internal switch (upstream + downstream port)
    # under a root port; PCI sysfs attributes as torvalds/linux drivers/pci/pci-sysfs.c writes them.
    gpus = [("0000:0c:00.0", "pci0000:00", "0000:00:01.1", "0000:0a:00.0", "0000:0b:00.0", 0),
            ("0000:8c:00.0", "pci0000:80", "0000:80:01.1", "0000:8a:00.0", "0000:8b:00.0", 1)]
    for i, (bdf, host_bridge, root, up, down, node) in enumerate(gpus):
        bad = unhealthy and i == 0
        pci_device(tree, [host_bridge, root], dict(pci_link_attrs("32.0", 16, "32.0", 16), vendor="0x1022",
                   device="0x14ab", **{"class": "0x060400"}), "pcieport")
        pci_device(tree, [host_bridge, root, up], dict(pci_link_attrs("32.0", 16, "32.0", 16),
                   vendor="0x1002", device="0x14a0", **{"class": "0x060400"}), "pcieport")
        # The unhealthy host's downstream port trained at Gen4 x8.
        pci_device(tree, [host_bridge, root, up, down],
                   dict(pci_link_attrs("16.0" if bad else "32.0", 8 if bad else 16, "32.0", 16),
                        vendor="0x1002", device="0x14a1", **{"class": "0x060400"}), "pcieport")
        level = "low" if bad else ("manual" if unhealthy else "auto")
        sclk = ("0: 500Mhz *\n1: 2100Mhz\n" if bad else "S: 19Mhz *\n0: 500Mhz\n1: 2100Mhz\n")
        path = pci_device(tree, [host_bridge, root, up, down, bdf], dict(
            pci_link_attrs("32.0", 16, "32.0", 16), vendor="0x1002", device="0x74a1",
            **{"class": "0x120000", "numa_node": str(node),
               "local_cpulist": "%d-%d" % (node * cpus_per_node, (node + 1) * cpus_per_node - 1),
               "power_dpm_force_performance_level": level, "gpu_busy_percent": "0",
               "mem_info_vram_total": str(192 * 1024 ** 3)}), "amdgpu")
        w(tree, path + "/pp_dpm_sclk", sclk)
        w(tree, path + "/hwmon/hwmon%d/power1_cap" % (3 + i), ("500000000" if bad else "750000000") + "\n")
        w(tree, path + "/hwmon/hwmon%d/power1_cap_default" % (3 + i), "750000000\n")
        link(tree, "/sys/bus/pci/devices/" + bdf, "../../../devices/%s/%s/%s/%s/%s" % (host_bridge, root, up, down, bdf))
        # KFD topology: node 0/1 CPUs, 2/3 GPUs (kfd_topology.c node_show keys).
        bus = int(bdf[5:7], 16)
        w(tree, "/sys/class/kfd/kfd/topology/nodes/%d/properties" % (2 + i),
          "cpu_cores_count 0\nsimd_count 1216\nsimd_per_cu 4\ngfx_target_version 90402\n"
          "vendor_id 4098\ndevice_id 29857\nlocation_id %d\ndomain 0\ndrm_render_minor %d\n" % (bus << 8, 128 + i))
        w(tree, "/sys/class/kfd/kfd/topology/nodes/%d/properties" % i,
          "cpu_cores_count 48\nsimd_count 0\nlocation_id 0\ndomain 0\n")
    # The server: a vLLM API server (pid 4242) with two threads.
    pid = 4242
    if unhealthy:
        argv = ["/usr/bin/python3", "/usr/local/bin/vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                "--enforce-eager", "--gpu-memory-utilization", "0.99", "--max-num-seqs", "1024",
                "--max-num-batched-tokens", "65536", "--block-size", "32", "--enable-log-requests",
                "--uvicorn-log-level", "debug", "--api-key", "sk-test-secret-1234", "--port", "8000"]
        env = ["CUDA_VISIBLE_DEVICES=0", "VLLM_LOGGING_LEVEL=DEBUG", "VLLM_ENABLE_V1_MULTIPROCESSING=0",
               "VLLM_API_KEY=sk-test-secret-1234", "HF_TOKEN=hf_secret", "PATH=/usr/bin"]
        cpus = "0-95"
    else:
        argv = ["/usr/bin/python3", "/usr/local/bin/vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
                "--async-scheduling", "--disable-uvicorn-access-log", "--port=8000"]
        env = ["CUDA_VISIBLE_DEVICES=0", "VLLM_ROCM_USE_AITER=1", "PATH=/usr/bin"]
        cpus = "0-47"
    w(tree, "/proc/%d/cmdline" % pid, "\0".join(argv) + "\0")
    w(tree, "/proc/%d/environ" % pid, "\0".join(env) + "\0")
    w(tree, "/proc/%d/status" % pid, "Name:\tpython3\nPid:\t%d\nThreads:\t2\nCpus_allowed_list:\t%s\n"
      "Mems_allowed_list:\t%s\n" % (pid, cpus, "0-1" if unhealthy else "0"))
    w(tree, "/proc/%d/io" % pid, "rchar: 100\nwchar: 200\nwrite_bytes: 4096\n")
    for tid, comm in ((pid, "python3"), (pid + 1, "uvicorn")):
        w(tree, "/proc/%d/task/%d/comm" % (pid, tid), comm + "\n")
        w(tree, "/proc/%d/task/%d/stat" % (pid, tid),
          "%d (%s) S 1 %d %d 0 -1 4194304 1 0 0 0 500 20 0 0 20 0 2 0 100 1000 10 "
          "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 %d 0 0 0 0 0\n" % (tid, comm, pid, pid, tid % 96))
    # vLLM V1's engine core: a child process with its own title and one thread.
    cpid = 4300
    w(tree, "/proc/%d/cmdline" % cpid, "VLLM::EngineCore\0")
    w(tree, "/proc/%d/comm" % cpid, "VLLM::EngineCor\n")
    w(tree, "/proc/%d/status" % cpid, "Name:\tVLLM::EngineCor\nPid:\t%d\nPPid:\t%d\n" % (cpid, pid))
    w(tree, "/proc/%d/task/%d/comm" % (cpid, cpid), "VLLM::EngineCor\n")
    w(tree, "/proc/%d/task/%d/stat" % (cpid, cpid),
      "%d (VLLM::EngineCor) S %d %d %d 0 -1 4194304 1 0 0 0 900 30 0 0 20 0 1 0 120 1000 10 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 9 0 0 0 0 0\n" % (cpid, pid, cpid, cpid))
    w(tree, "/proc/1/cmdline", "/sbin/init\0")
    # Pressure stall information and swap counters.
    w(tree, "/proc/pressure/cpu", "some avg10=%s avg60=%s avg300=%s total=912345678\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
      % (("31.20", "35.72", "22.10") if unhealthy else ("0.31", "0.22", "0.15")))
    w(tree, "/proc/pressure/memory", "some avg10=%s avg60=%s avg300=%s total=81234567\n"
      "full avg10=%s avg60=%s avg300=%s total=61234567\n"
      % (("18.00", "14.50", "9.20", "9.10", "8.00", "5.10") if unhealthy
         else ("0.00", "0.00", "0.00", "0.00", "0.00", "0.00")))
    w(tree, "/proc/vmstat", "nr_free_pages 123456\npswpin %d\npswpout %d\n"
      % ((90210, 180420) if unhealthy else (0, 0)))
    # Its cgroup (v2). Healthy: a systemd service with no CPU quota. Unhealthy: a Kubernetes pod
    # (quota 8 CPUs) whose container (quota 2 CPUs) was throttled in 12% of its periods so far.
    w(tree, "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
    if unhealthy:
        pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7c1e.slice"
        ctr = pod + "/cri-containerd-4f3a.scope"
        w(tree, "/proc/%d/cgroup" % pid, "0::%s\n" % ctr)
        w(tree, "/sys/fs/cgroup/kubepods.slice/cpu.max", "max 100000\n")
        w(tree, "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cpu.max", "max 100000\n")
        w(tree, "/sys/fs/cgroup" + pod + "/cpu.max", "800000 100000\n")
        w(tree, "/sys/fs/cgroup" + pod + "/cpu.stat", "usage_usec 912000000\nuser_usec 800000000\n"
          "system_usec 112000000\nnr_periods 36000\nnr_throttled 40\nthrottled_usec 1200000\n")
        w(tree, "/sys/fs/cgroup" + ctr + "/cpu.max", "200000 100000\n")
        w(tree, "/sys/fs/cgroup" + ctr + "/cpu.stat", "usage_usec 900000000\nuser_usec 790000000\n"
          "system_usec 110000000\nnr_periods 36000\nnr_throttled 4320\nthrottled_usec 151200000\n")
    else:
        w(tree, "/proc/%d/cgroup" % pid, "0::/system.slice/vllm.service\n")
        w(tree, "/sys/fs/cgroup/system.slice/cpu.max", "max 100000\n")
        w(tree, "/sys/fs/cgroup/system.slice/vllm.service/cpu.max", "max 100000\n")
        w(tree, "/sys/fs/cgroup/system.slice/vllm.service/cpu.stat", "usage_usec 912000000\n"
          "user_usec 800000000\nsystem_usec 112000000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n")
    # Network: sockstat, a listener on 8000 and some TIME_WAIT on it.
    tw = 40000 if unhealthy else 12
    w(tree, "/proc/net/sockstat", "sockets: used 900\nTCP: inuse 120 orphan 0 tw %d alloc 130 mem 20\n"
      "UDP: inuse 2 mem 0\n" % tw)
    lines = ["  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
             "   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4711 1"]
    for k in range(30 if unhealthy else 2):
        lines.append("%4d: 0A00000A:1F40 0B00000A:%04X 06 00000000:00000000 03:00001770 00000000     0        0 0 3"
                     % (k + 1, 40000 + k))
    w(tree, "/proc/net/tcp", "\n".join(lines) + "\n")
    w(tree, "/proc/net/tcp6", "  sl  local_address                         remote_address                        st\n")
    w(tree, "/proc/net/netstat", "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPBacklogDrop TCPRcvQDrop\n"
      "TcpExt: 0 %d %d %d 0\n" % ((37, 37, 12) if unhealthy else (0, 0, 0)))
    # The receive path per CPU (4 CPUs shown) and conntrack's per-CPU statistics, as kernel 6.x
    # writes them: hex columns (softnet: processed, dropped, time_squeeze, ..., the CPU number 13th).
    w(tree, "/proc/net/softnet_stat", "".join(
        "%08x %08x %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
        "00000000 %08x 00000000 00000000\n" % (1000000 + c, 9 if unhealthy else 0, 40 if unhealthy else 1, c)
        for c in range(4)))
    w(tree, "/proc/net/stat/nf_conntrack",
      "entries  clashres found new invalid ignore delete chainlength insert insert_failed drop "
      "early_drop icmp_error  expect_new expect_create expect_delete search_restart\n" + "".join(
          "%08x  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
          "%08x 00000000 00000000  00000000 00000000 00000000 00000000\n" % (1000, 3 if unhealthy else 0)
          for c in range(4)))
    w(tree, "/proc/sys/net/core/netdev_max_backlog", "1000\n")
    w(tree, "/proc/sys/net/core/netdev_budget", "300\n")
    w(tree, "/proc/net/snmp", "Tcp: RtoAlgorithm ActiveOpens PassiveOpens OutSegs RetransSegs\nTcp: 1 10 900 100000 %d\n"
      % (5000 if unhealthy else 3))
    w(tree, "/proc/sys/net/netfilter/nf_conntrack_count", ("255000" if unhealthy else "1000") + "\n")
    w(tree, "/proc/sys/net/netfilter/nf_conntrack_max", "262144\n")
    # Interrupts: 4 CPUs shown (a cut of the 96-CPU table), eth0 with two queues.
    irq = ["           CPU0       CPU1       CPU2       CPU3"]
    if unhealthy:
        irq += [" 120:   90000000          0          0          0  IR-PCI-MSIX-0000:41:00.0    0-edge      eth0-TxRx-0",
                " 121:   80000000          0          0          0  IR-PCI-MSIX-0000:41:00.0    1-edge      eth0-TxRx-1"]
    else:
        irq += [" 120:   20000000   21000000   19000000   20500000  IR-PCI-MSIX-0000:41:00.0    0-edge      eth0-TxRx-0",
                " 121:   19000000   20000000   21000000   20000000  IR-PCI-MSIX-0000:41:00.0    1-edge      eth0-TxRx-1"]
    irq += [" LOC:     100000     100000     100000     100000   Local timer interrupts"]
    w(tree, "/proc/interrupts", "\n".join(irq) + "\n")
    w(tree, "/sys/class/net/eth0/device/msi_irqs/120", "msix\n")
    w(tree, "/sys/class/net/eth0/device/msi_irqs/121", "msix\n")
    w(tree, "/proc/diskstats", " 259       0 nvme0n1 9121 0 532118 1764 26113 0 1 1 0 24092 31200 0 0 0 0\n"
      " 259       1 nvme0n1p1 9000 0 532000 1700 26000 0 1 1 0 24000 31000 0 0 0 0\n")
    # Firewall: iptables-save with many rules (unhealthy) or a short list; nft not installed.
    n_rules = 1500 if unhealthy else 12
    rules = "*filter\n:INPUT ACCEPT [0:0]\n" + "".join(
        "-A INPUT -s 10.%d.%d.0/24 -p tcp --dport 8000 -j ACCEPT\n" % (k // 256, k % 256) for k in range(n_rules)) + "COMMIT\n"
    commands(tree, "iptables-save.1", ["iptables-save"], rules)
    # amd-smi: the JSON of `amd-smi metric --json` (shape per amdsmi_commands.py), used only
    # for what sysfs did not give.
    commands(tree, "amd-smi.1", ["amd-smi", "metric", "--json"], json.dumps(
        [{"gpu": i, "usage": {"gfx_activity": {"value": 0, "unit": "%"}},
          "perf_level": "AMDSMI_DEV_PERF_LEVEL_AUTO"} for i in range(2)]) + "\n")


def build_amd(name, unhealthy):
    tree = os.path.join(DATA, name, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    amd_host(tree, unhealthy)
    return tree


def collect(latdoc, tree, out):
    subprocess.run([latdoc, "doctor", "--sysroot", tree, "--collect", out, "--interval-ms", "0"],
                   check=True, cwd=ROOT)
    with open(out) as f:
        facts = json.load(f)
    # Paths in facts are relative to the repository, so the files do not depend on where it lives.
    facts["sysroot"] = os.path.relpath(tree, ROOT)
    facts["sample_interval_ns"] = 1000000000
    return facts


ONE_READING = "a recorded tree is one reading"
BUILT_THREADS = [{"comm": "python3", "cpu_pct": 0.0, "last_cpu": 18, "pid": 4242, "process": "", "tid": 4242},
                 {"comm": "uvicorn", "cpu_pct": 0.0, "last_cpu": 19, "pid": 4242, "process": "", "tid": 4243},
                 {"comm": "VLLM::EngineCor", "cpu_pct": 0.0, "last_cpu": 9, "pid": 4300,
                  "process": "VLLM::EngineCore", "tid": 4300}]


def hand_set_intervals(facts):
    """A built tree stands for a live host read twice: the interval facts that one reading of a
    tree leaves unknown are hand-set to a quiet interval (nothing moved, threads idle)."""
    def fix(d, key, value):
        v = d.get(key)
        if isinstance(v, dict) and v.get("unknown", "").startswith(ONE_READING):
            d[key] = {"value": value, "source": "BUILT: hand-set delta"}
    for k in ("swap_in_pages_delta", "swap_out_pages_delta"):
        fix(facts["memory"], k, 0)
    for k in ("listen_overflows_delta", "listen_drops_delta", "backlog_drops_delta", "rcvq_drops_delta",
              "retrans_segs_delta", "out_segs_delta", "softnet_dropped_delta", "softnet_squeezed_delta",
              "conntrack_drops_delta", "conntrack_insert_failed_delta"):
        fix(facts["net"], k, 0)
    fix(facts["disk"], "busiest_util_pct", 0.0)
    s = facts.get("server")
    if s:
        fix(s, "threads", BUILT_THREADS)
        fix(s, "write_bytes_per_s", 0.0)
        for lim in (s.get("cgroup_cpu", {}).get("value") or {}).get("limits", []):
            for k in ("periods_delta", "throttled_delta"):
                fix(lim, k, 0)
            fix(lim, "throttled_s_delta", 0.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latdoc", help="a built latdoc binary: also regenerate facts/*.json")
    args = ap.parse_args()
    trees = {"h200_snapshot": build_h200_snapshot(),
             "mi300x_built": build_amd("mi300x_built", False),
             "unhealthy_built": build_amd("mi300x_unhealthy_built", True)}
    if not args.latdoc:
        return
    os.makedirs(os.path.join(DATA, "facts"), exist_ok=True)
    trees["h200_recorded"] = os.path.join(DATA, "h200_recorded", "tree")
    trees["cgroup_v1_throttled"] = os.path.join(DATA, "cgroup_v1_throttled", "tree")
    trees["cgroup_v2_throttled"] = os.path.join(DATA, "cgroup_v2_throttled", "tree")
    for name, tree in trees.items():
        out = os.path.join(DATA, "facts", name + ".json")
        facts = collect(args.latdoc, tree, out)
        if name in ("mi300x_built", "unhealthy_built"):
            hand_set_intervals(facts)
        if name == "unhealthy_built":
            s = facts["server"]
            s["threads"] = {"value": [{"tid": 4242, "comm": "python3", "cpu_pct": 99.5, "last_cpu": 3,
                                       "pid": 4242, "process": ""},
                                      {"tid": 4300, "comm": "VLLM::EngineCor", "cpu_pct": 61.0,
                                       "last_cpu": 9, "pid": 4300, "process": "VLLM::EngineCore"},
                                      {"tid": 4243, "comm": "uvicorn", "cpu_pct": 4.0, "last_cpu": 7,
                                       "pid": 4242, "process": ""}],
                            "source": "BUILT: hand-set delta"}
            s["write_bytes_per_s"] = {"value": 52000000.0, "source": "BUILT: hand-set delta"}
            facts["memory"]["swap_in_pages_delta"] = {"value": 1200, "source": "BUILT: hand-set delta"}
            facts["memory"]["swap_out_pages_delta"] = {"value": 3400, "source": "BUILT: hand-set delta"}
            lim = s["cgroup_cpu"]["value"]["limits"][0]  # the container's 2-CPU quota
            lim["periods_delta"] = {"value": 10, "source": "BUILT: hand-set delta"}
            lim["throttled_delta"] = {"value": 6, "source": "BUILT: hand-set delta"}
            lim["throttled_s_delta"] = {"value": 0.21, "source": "BUILT: hand-set delta"}
            n = facts["net"]
            n["listen_overflows_delta"] = {"value": 37, "source": "BUILT: hand-set delta"}
            n["listen_drops_delta"] = {"value": 40, "source": "BUILT: hand-set delta"}
            n["backlog_drops_delta"] = {"value": 12, "source": "BUILT: hand-set delta"}
            n["softnet_dropped_delta"] = {"value": 9, "source": "BUILT: hand-set delta"}
            n["softnet_squeezed_delta"] = {"value": 40, "source": "BUILT: hand-set delta"}
            n["conntrack_drops_delta"] = {"value": 3, "source": "BUILT: hand-set delta"}
            n["retrans_segs_delta"] = {"value": 500, "source": "BUILT: hand-set delta"}
            n["out_segs_delta"] = {"value": 10000, "source": "BUILT: hand-set delta"}
            n["nic_irqs"] = {"value": [{"nic": "eth0", "irq_count": 2, "per_cpu": [52000, 10, 0, 0],
                                        "since_boot": False}], "source": "BUILT: hand-set delta"}
            facts["disk"] = {"busiest_util_pct": {"value": 98.0, "source": "BUILT: hand-set delta"},
                             "busiest_device": "nvme0n1"}
        with open(out, "w") as f:
            json.dump(facts, f, indent=2)
            f.write("\n")
    # Golden text outputs (src/host/doctor_cli_test.cc).
    golden = os.path.join(DATA, "golden")
    os.makedirs(golden, exist_ok=True)
    for name, extra in (("unhealthy_built", ["--sweep", "tests/data/host/sweep_knee64.json", "--all"]),
                        ("h200_recorded", ["--all"]), ("mi300x_built", [])):
        r = subprocess.run([args.latdoc, "doctor", "--facts", "tests/data/host/facts/%s.json" % name,
                            "--no-color"] + extra, cwd=ROOT, capture_output=True, text=True)
        with open(os.path.join(golden, name + ".txt"), "w") as f:
            f.write(r.stdout)


if __name__ == "__main__":
    main()
