#!/usr/bin/env python3
"""Capacity of latdoc's simulator and cost of latdoc's load client, side by side in one run.

For each stream count N: `latdoc sim` runs pinned to CPU 0 and `latdoc bench --concurrency N`
pinned to CPU 1, for a fixed duration, on loopback. Reported:
  sim:    streams held, tokens/s served, sim CPU (s/s), step overrun p50/p99 (how late each
          engine step ended against its schedule, from latdoc_sim:step_overrun_seconds) in
          the steady state, after --settle seconds; overrun_all_p99 counts the start too
  client: SSE events/s per core of client CPU, and timing error: for every content chunk,
          (client arrival time) - (when the simulator's write of it returned: written_ns), from
          the simulator's request trace joined to --save-requests by x-request-id; p50/p99.
Targets (issues 2 and 3): >= 5,000 streams with overrun p99 <= 1 ms; >= 500,000 events/s on
one core and timing error p99 <= 0.2 ms at 4,096 streams.

By default every token is one SSE event in one write: one TCP segment per event, the costliest
case for a reader, whose kernel then handles a segment (and sends an ACK) per event.
--tokens-per-step K --event-per-token makes each step send K tokens as K events in one write (as
TGI and llama.cpp stream speculative tokens, and as any server's writes arrive once its socket
buffer holds several): what the client costs per event when reads find several.

Usage: bench/load_capacity.py [--latdoc build/release/src/cli/latdoc] [--streams 1024,4096,5000]
                              [--tokens-per-step K [--event-per-token]]
"""
import argparse, json, os, re, subprocess, tempfile, time, urllib.request


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    k = (len(sorted_vals) - 1) * p / 100.0
    f = int(k)
    c = min(f + 1, len(sorted_vals) - 1)
    return sorted_vals[f] + (sorted_vals[c] - sorted_vals[f]) * (k - f)


def hist_buckets(text, name):
    buckets = []
    for m in re.finditer(r'^%s_bucket\{[^}]*le="([^"]+)"\} ([0-9.e+]+)$' % re.escape(name), text, re.M):
        le = float("inf") if m.group(1) == "+Inf" else float(m.group(1))
        buckets.append((le, float(m.group(2))))
    return buckets


def hist_quantile(after, name, q, before=None):
    """Quantile q of a Prometheus histogram, over (after - before) when before is given."""
    buckets = hist_buckets(after, name)
    if before is not None:
        base = dict(hist_buckets(before, name))
        buckets = [(le, c - base.get(le, 0.0)) for le, c in buckets]
    total = buckets[-1][1] if buckets else 0
    if total == 0:
        return float("nan")
    rank, prev_le, prev_c = q * total, 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_c) / max(c - prev_c, 1e-12)
        prev_le, prev_c = le, c
    return prev_le


def metric(text, name):
    m = re.search(r"^%s\{[^}]*\} ([0-9.e+]+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else float("nan")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The stress step model: a fixed step whatever the batch (a GPU that never slows down), 40 ms
# unless --step-ms, so the simulator must write every stream 25 times a second. --default-step-model keeps the
# simulator's documented defaults instead (an 8B model on one H100-class GPU: the step grows by
# 80 us per running sequence, ~0.4 s at 5,000).
def stress_step(step_ms):
    return ["--sim-step-base-ms", str(step_ms), "--sim-decode-seq-us", "1",
            "--sim-prefill-token-us", "0.1", "--sim-context-token-ns", "0"]


def run(latdoc, n, duration, out_len, range_ratio, settle, step_model, tokens_per_step,
        event_per_token, tmp):
    trace = os.path.join(tmp, f"trace{n}.jsonl")
    reqs = os.path.join(tmp, f"reqs{n}.jsonl")
    res = os.path.join(tmp, f"res{n}.json")
    sim = subprocess.Popen(
        ["taskset", "-c", "0", latdoc, "sim", "--port", "0", "--max-num-seqs", str(n + 64),
         "--max-num-batched-tokens", "262144", "--num-gpu-blocks-override", "4000000",
         "--max-model-len", "4096", "--sim-tokens-per-chunk", str(tokens_per_step)] + step_model +
        (["--sim-event-per-token"] if event_per_token else []) +
        ["--log-file", "/dev/null", "--disable-log-stats", "--trace-requests", trace],
        stdout=subprocess.PIPE, text=True)
    port = int(sim.stdout.readline().rsplit(":", 1)[1])
    url = f"http://127.0.0.1:{port}"
    before = urllib.request.urlopen(url + "/metrics").read().decode()
    cpu0, t0 = cpu_seconds(sim.pid), time.monotonic()
    bench = subprocess.Popen(
        ["taskset", "-c", "1", latdoc, "bench", "--url", url, "--concurrency", str(n),
         "--duration", str(duration), "--input-len", "16", "--output-len", str(out_len),
         "--range-ratio", str(range_ratio), "--token-ids", "--json", res,
         "--save-requests", reqs, "--quiet"])
    # The step schedule is judged in the steady state: after `settle` seconds, once the
    # connections are open and the first wave of prompts is in.
    time.sleep(settle)
    mid = urllib.request.urlopen(url + "/metrics").read().decode()
    bench.wait()
    sim_cpu, wall = cpu_seconds(sim.pid) - cpu0, time.monotonic() - t0
    after = urllib.request.urlopen(url + "/metrics").read().decode()
    sim.terminate()
    sim.wait()
    r = json.load(open(res))
    gen = metric(after, "vllm:generation_tokens_total") - metric(before, "vllm:generation_tokens_total")
    # Timing error: client chunk arrival vs the simulator's write time, chunk by chunk.
    server = {}
    for line in open(trace):
        t = json.loads(line)
        written = t["written_ns"]
        if event_per_token:  # a write of k tokens carried k events
            written = [ns for ns, k in zip(written, t["token_counts"]) for _ in range(k)]
        server[t["x_request_id"]] = written
    start_ns = r["start_mono_ns"]
    errs, steady, events = [], [], 0
    for line in open(reqs):
        q = json.loads(line)
        events += len(q["chunks"]) + 2  # + usage chunk + [DONE]
        s = server.get(f"latdoc-bench-{q['index']}")
        if not s or q["status"] != "ok":
            continue
        for (t_ms, _k), srv_ns in zip(q["chunks"], s):
            errs.append((start_ns + t_ms * 1e6 - srv_ns) / 1e6)
            if t_ms >= settle * 1e3:
                steady.append(errs[-1])
    errs.sort()
    steady.sort()
    return {
        "streams": n, "max_in_flight": r["max_concurrent_requests"],
        "completed": r["completed"], "failed": r["failed"],
        "tokens_per_s": gen / wall, "sim_cpu_per_s": sim_cpu / wall,
        "overrun_p50_ms": hist_quantile(after, "latdoc_sim:step_overrun_seconds", 0.5, mid) * 1e3,
        "overrun_p99_ms": hist_quantile(after, "latdoc_sim:step_overrun_seconds", 0.99, mid) * 1e3,
        "overrun_all_p99_ms": hist_quantile(after, "latdoc_sim:step_overrun_seconds", 0.99) * 1e3,
        "client_cpu_s": r["client_cpu_s"], "client_cpu_per_s": r["client_cpu_s"] / r["duration"],
        "client_events": events,
        "client_events_per_core_s": events / max(r["client_cpu_s"], 1e-9),
        "timing_err_p50_ms": pct(errs, 50), "timing_err_p99_ms": pct(errs, 99),
        "steady_err_p99_ms": pct(steady, 99),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latdoc", default="build/release/src/cli/latdoc")
    ap.add_argument("--streams", default="1024,4096,5000")
    ap.add_argument("--duration", type=float, default=15)
    ap.add_argument("--output-len", type=int, default=400)
    ap.add_argument("--range-ratio", type=float, default=0.5,
                    help="output length spread, so requests do not all end in the same step")
    ap.add_argument("--default-step-model", action="store_true",
                    help="the simulator's default step-time model instead of the 40 ms stress step")
    ap.add_argument("--settle", type=float, default=3,
                    help="seconds before the step schedule is judged (connections, first prompts)")
    ap.add_argument("--step-ms", type=float, default=40,
                    help="the stress model's fixed step time")
    ap.add_argument("--tokens-per-step", type=int, default=1,
                    help="tokens each decode step gives a stream (the simulator's --sim-tokens-per-chunk)")
    ap.add_argument("--event-per-token", action="store_true",
                    help="send a step's tokens as one SSE event each, in one write")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        step_model = [] if a.default_step_model else stress_step(a.step_ms)
        rows = [run(a.latdoc, int(n), a.duration, a.output_len, a.range_ratio, a.settle, step_model,
                    a.tokens_per_step, a.event_per_token, tmp)
                for n in a.streams.split(",")]
    keys = list(rows[0].keys())
    print(" ".join(f"{k:>14}" for k in keys))
    for row in rows:
        print(" ".join(f"{row[k]:>14.3f}" if isinstance(row[k], float) else f"{row[k]:>14}" for k in keys))


if __name__ == "__main__":
    main()
