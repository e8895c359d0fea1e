#!/usr/bin/python3
"""latdoc's load client against a vLLM-style Python client and the kernel's floor, in one run.

One `latdoc sim` with a fixed step (40 ms unless --step-ms) runs pinned to CPU 0; each client in
turn runs pinned to CPU 1 against it, --streams streams (1,024) for --duration seconds:
  latdoc   `latdoc bench --threads 1` (events: its client_load, CPU: its client_cpu_s)
  python   bench/client_floor/vllm_style_client.py: aiohttp, by line, json.loads, perf_counter
           (Debian's python3-aiohttp, run with /usr/bin/python3)
  floor    bench/client_floor/floor_reader.c (built as build/release/bench/floor_reader): epoll,
           one recv per ready socket, counting "data:" lines, nothing else
  uring    bench/client_floor/floor_reader_uring.c: the same floor on io_uring (a multishot
           receive per socket, provided buffers); built when liburing-dev is installed, skipped
           when its binary is missing
All three send the same request body (latdoc's: 16 prompt token ids, --output-len tokens,
ignore_eos, usage on every chunk). Each prints SSE events per CPU-second of its process, at one
event per TCP segment and at eight (--sim-tokens-per-chunk 8 --sim-event-per-token: a step's 8
tokens as 8 events in one write).

Then, unless --timing-streams 0, the timing error at 4,096 streams (one event per segment): for
every content chunk, the client's time of it minus when the simulator's write of it returned
(its --trace-requests written_ns; both CLOCK_MONOTONIC), joined by x-request-id; p50 and p99 for
latdoc and for the Python client.

--scaling adds latdoc with --threads 2: on CPU 1 alone (two loops sharing a core), and on CPUs
0-1 (sharing the simulator's core). On a 2-core machine that is all that can be shown: no
second free core exists for a second thread.

Usage: bench/client_floor.py [--latdoc build/release/src/cli/latdoc]
                             [--floor build/release/bench/floor_reader] [--streams 1024]
                             [--duration 10] [--timing-streams 4096] [--scaling]
                             [--clients latdoc,python,floor,uring] [--regimes 1,8]
"""
import argparse, json, os, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    k = (len(sorted_vals) - 1) * p / 100.0
    f = int(k)
    c = min(f + 1, len(sorted_vals) - 1)
    return sorted_vals[f] + (sorted_vals[c] - sorted_vals[f]) * (k - f)


class Sim:
    """`latdoc sim` on CPU 0 with a fixed step: every stream written once per step."""

    def __init__(self, latdoc, streams, step_ms, tokens_per_chunk, event_per_token, trace=None):
        args = ["taskset", "-c", "0", latdoc, "sim", "--port", "0",
                "--max-num-seqs", str(streams + 64), "--max-num-batched-tokens", "262144",
                "--num-gpu-blocks-override", "4000000", "--max-model-len", "4096",
                "--sim-step-base-ms", str(step_ms), "--sim-decode-seq-us", "0",
                "--sim-prefill-token-us", "0", "--sim-context-token-ns", "0",
                "--sim-tokens-per-chunk", str(tokens_per_chunk),
                "--log-file", "/dev/null", "--disable-log-stats"]
        if event_per_token:
            args.append("--sim-event-per-token")
        if trace:
            args += ["--trace-requests", trace]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline().rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"
        models = json.load(urllib.request.urlopen(self.url + "/v1/models"))
        self.model = models["data"][0]["id"]

    def close(self):
        self.proc.terminate()
        self.proc.wait()


def body(model, output_len):
    # latdoc's request body (loadgen/runner.cc RequestBody) for a 16-token prompt.
    return {"model": model, "prompt": list(range(1000, 1016)), "max_tokens": output_len,
            "stream": True, "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            "ignore_eos": True}


def run_latdoc(a, sim, streams, tmp, threads=1, cpus="1", save=None):
    res = os.path.join(tmp, "latdoc.json")
    args = ["taskset", "-c", cpus, a.latdoc, "bench", "--url", sim.url, "--model", sim.model,
            "--concurrency", str(streams), "--duration", str(a.duration), "--input-len", "16",
            "--output-len", str(a.output_len), "--token-ids", "--threads", str(threads),
            "--json", res, "--quiet"]
    if save:
        args += ["--save-requests", save]
    subprocess.run(args, check=False, stdout=subprocess.DEVNULL)
    r = json.load(open(res))
    cl = r["client_load"]
    return {"events": cl["events"], "cpu_s": r["client_cpu_s"], "wall_s": r["duration"],
            "late_read_share": cl["late_read_share"], "saturated_threads": cl["saturated_threads"],
            "result": r}


def run_python(a, sim, streams, tmp, save=None):
    bf = os.path.join(tmp, "body.json")
    json.dump(body(sim.model, a.output_len), open(bf, "w"))
    args = ["taskset", "-c", "1", a.python, os.path.join(HERE, "client_floor", "vllm_style_client.py"),
            "--url", sim.url, "--body-file", bf, "--streams", str(streams),
            "--duration", str(a.duration), "--settle", str(a.settle)]
    if save:
        args += ["--save", save]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_floor(a, sim, streams, tmp, binary=None):
    bf = os.path.join(tmp, "body.json")
    json.dump(body(sim.model, a.output_len), open(bf, "w"))
    out = subprocess.run(["taskset", "-c", "1", binary or a.floor, "--port", str(sim.port), "--streams",
                          str(streams), "--duration", str(a.duration), "--body-file", bf],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def quiet(sim, limit_s=30):
    """Waits until the simulator runs no request (a client that left aborted its streams)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        text = urllib.request.urlopen(sim.url + "/metrics").read().decode()
        running = sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
                      if l.startswith("vllm:num_requests_running"))
        if running == 0:
            return
        time.sleep(0.2)


def timing_errors(trace, client_times):
    """client_times: x-request-id -> [chunk time ns]. Returns sorted errors in ms."""
    written = {}
    for line in open(trace):
        t = json.loads(line)
        written[t["x_request_id"]] = t["written_ns"]
    errs = []
    for rid, times in client_times.items():
        w = written.get(rid)
        if not w:
            continue
        errs += [(c - s) / 1e6 for c, s in zip(times, w)]
    errs.sort()
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latdoc", default="build/release/src/cli/latdoc")
    ap.add_argument("--floor", default="build/release/bench/floor_reader")
    ap.add_argument("--uring", default="build/release/bench/floor_reader_uring")
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--streams", type=int, default=1024)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--settle", type=float, default=2,
                    help="the Python client's seconds before its measured window")
    ap.add_argument("--output-len", type=int, default=200)
    ap.add_argument("--step-ms", type=float, default=40)
    ap.add_argument("--timing-streams", type=int, default=4096)
    ap.add_argument("--clients", default="latdoc,python,floor,uring")
    ap.add_argument("--regimes", default="1,8", help="events per segment: 1 and/or 8")
    ap.add_argument("--scaling", action="store_true")
    a = ap.parse_args()
    clients = [c for c in a.clients.split(",") if c != "uring" or os.path.exists(a.uring)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for per_seg in [int(x) for x in a.regimes.split(",")]:
            sim = Sim(a.latdoc, a.streams, a.step_ms, per_seg, per_seg > 1)
            try:
                runs = {}
                for c in clients:
                    quiet(sim)
                    if c == "latdoc":
                        runs[c] = run_latdoc(a, sim, a.streams, tmp)
                    elif c == "python":
                        runs[c] = run_python(a, sim, a.streams, tmp)
                    elif c == "floor":
                        runs[c] = run_floor(a, sim, a.streams, tmp)
                    elif c == "uring":
                        runs[c] = run_floor(a, sim, a.streams, tmp, a.uring)
                if a.scaling:
                    quiet(sim)
                    runs["latdoc x2 (CPU 1)"] = run_latdoc(a, sim, a.streams, tmp, 2, "1")
                    quiet(sim)
                    runs["latdoc x2 (CPUs 0-1)"] = run_latdoc(a, sim, a.streams, tmp, 2, "0,1")
            finally:
                sim.close()
            floor = runs.get("floor")
            floor_eps = floor["events"] / floor["cpu_s"] if floor else None
            py = runs.get("python")
            py_eps = py["events"] / py["cpu_s"] if py else None
            for name, r in runs.items():
                eps = r["events"] / max(r["cpu_s"], 1e-9)
                rows.append({"events/segment": per_seg, "client": name, "events": r["events"],
                             "cpu_s": r["cpu_s"], "events_per_cpu_s": eps,
                             "share_of_floor": eps / floor_eps if floor_eps else float("nan"),
                             "x_python": eps / py_eps if py_eps else float("nan")})
        print(f"{'ev/seg':>6} {'client':>22} {'events':>9} {'cpu_s':>7} {'events/CPU-s':>13} "
              f"{'of floor':>9} {'x python':>9}")
        for r in rows:
            print(f"{r['events/segment']:>6} {r['client']:>22} {r['events']:>9} {r['cpu_s']:>7.2f} "
                  f"{r['events_per_cpu_s']:>13.0f} {r['share_of_floor']:>9.2f} {r['x_python']:>9.2f}")
        sys.stdout.flush()

        if a.timing_streams > 0:
            print(f"\ntiming error at {a.timing_streams} streams, one event per segment "
                  "(client time - simulator's write, per content chunk):")
            for c in [c for c in clients if c in ("latdoc", "python")]:
                trace = os.path.join(tmp, f"trace-{c}.jsonl")
                save = os.path.join(tmp, f"times-{c}.jsonl")
                sim = Sim(a.latdoc, a.timing_streams, a.step_ms, 1, False, trace)
                try:
                    times = {}
                    if c == "latdoc":
                        r = run_latdoc(a, sim, a.timing_streams, tmp, save=save)["result"]
                        start = r["start_mono_ns"]
                        for line in open(save):
                            q = json.loads(line)
                            if q["status"] == "ok":
                                times[f"latdoc-bench-{q['index']}"] = [
                                    start + t_ms * 1e6 for t_ms, _k in q["chunks"]]
                    else:
                        run_python(a, sim, a.timing_streams, tmp, save=save)
                        for line in open(save):
                            q = json.loads(line)
                            times[q["id"]] = q["t_ns"]
                finally:
                    sim.close()
                errs = timing_errors(trace, times)
                print(f"  {c:>8}: {len(errs)} chunks, p50 {pct(errs, 50):.3f} ms, "
                      f"p99 {pct(errs, 99):.3f} ms, max {errs[-1] if errs else float('nan'):.3f} ms")


if __name__ == "__main__":
    main()
