#!/usr/bin/env python3
"""Assembles a latdoc.diagnose/1 document from the outputs make_example.sh collected.

usage: assemble_example.py WORK_DIR URL > diagnosis_example.json

The sweep is assembled from one `latdoc bench --json` per concurrency (sweep_<c>.json) into
the latdoc.sweep/1 shape (steps, knee), with the knee by src/stats/knee.h's definition: the
last step before the first segment whose elasticity ln(tps ratio) / ln(p99 ratio) is below 1.
Findings are those of `latdoc trace` and `latdoc logs`, ranked like rules::RankFindings.
"""
import glob
import json
import math
import os
import sys

work, url = sys.argv[1], sys.argv[2]


def load(name):
    p = os.path.join(work, name)
    return json.load(open(p)) if os.path.exists(p) else None


bench = load("bench.json")
logs = load("logs.json")
trace = load("trace.json")

steps = []
for p in glob.glob(os.path.join(work, "sweep_*.json")):
    b = json.load(open(p))
    steps.append({"concurrency": b["max_concurrency"] or int(p.rsplit("_", 1)[1][:-5]),
                  "completed": b["completed"], "p99_ttft_ms": b["p99_ttft_ms"],
                  "p99_itl_ms": b["p99_itl_ms"], "p99_e2el_ms": b["p99_e2el_ms"],
                  "output_throughput": b["output_throughput"]})
steps.sort(key=lambda s: s["concurrency"])
knee_i, reached = len(steps) - 1, False
for i in range(len(steps) - 1):
    a, b = steps[i], steps[i + 1]
    dl = math.log(b["p99_ttft_ms"] / a["p99_ttft_ms"])
    dt = math.log(b["output_throughput"] / a["output_throughput"])
    e = math.inf if dl <= 0 and dt > 0 else (0 if dt <= 0 else dt / dl)
    if e < 1:
        knee_i, reached = i, True
        break
sweep = {"schema": "latdoc.sweep/1", "latency_metric": "p99_ttft_ms", "steps": steps,
         "knee": {"concurrency": steps[knee_i]["concurrency"], "reached": reached}}

sev_rank = {"fail": 4, "warn": 3, "info": 2, "ok": 1, "skip": 0}
findings = (trace or {}).get("findings", []) + (logs or {}).get("findings", [])
findings.sort(key=lambda f: (-(f.get("latency_share") if f.get("latency_share") is not None else -1),
                             -sev_rank[f["severity"]], f["id"]))

tb = bench["server_metrics"].get("ttft_breakdown") if bench else None
waterfall = None
if tb:
    waterfall = {k: tb.get(k) for k in ("client_ttft_ms", "network_and_front_end_ms", "queue_ms",
                                        "prefill_ms", "server_other_ms")}

doc = {
    "schema": "latdoc.diagnose/1",
    "target": url,
    "generated_at": "2026-11-30T01:30:00Z",
    "findings": findings,
    "ttft_waterfall": waterfall,
    "bench": bench,
    "sweep": sweep,
    "trace": trace,
    "logs": logs,
    "layers": {
        "network": "skipped: loopback target (latdoc net not run for this example)",
        "system": "skipped: not local and no --facts given",
        "kernel": "measured",
        "config": "skipped: no --facts given",
        "load": "measured",
    },
}
json.dump(doc, sys.stdout, indent=1)
sys.stdout.write("\n")
