#!/usr/bin/env python3
"""How long `latdoc fleet` takes on a large fleet: 200 replicas over a 15 min window.

The series are simulated with Prometheus's own tooling: this script writes the vLLM metrics of
N replicas (job="vllm", scraped every 15 s for the window plus a minute) as OpenMetrics text,
turns them into TSDB blocks with `promtool tsdb create-blocks-from openmetrics`, starts
Debian's `prometheus` on those blocks (loopback, a free port) and times
`latdoc fleet --prometheus URL --selector '{job="vllm"}' --window 15m` end to end (the process's
wall time) and its queries alone (`query_ms` of its JSON), best and median of --runs; then the
same with --over-time (the two range queries of the heat map, as --html runs them).
Per replica: the TTFT, ITL and queue-time histograms with vLLM's buckets, the request counter,
running, waiting, KV usage, preemptions, `up`: about 60 series. A few replicas are made slow
(ITL x4) and one gets three times the load, so the rules have something to find.
Target (issue 37): under 2 s for 200 replicas over 15 min.

Usage: bench/fleet_query.py [--latdoc build/release/src/cli/latdoc] [--replicas 200]
                            [--window-min 15] [--runs 5]
"""
import argparse, json, math, os, shutil, socket, statistics, subprocess, sys, tempfile, time
import urllib.request

TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
               10.0, 20.0, 40.0, 80.0]
QUEUE_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
SCRAPE_S = 15


def lognorm_cdf(x, median, sigma=0.5):
    return 0.5 * (1 + math.erf(math.log(x / median) / (sigma * math.sqrt(2))))


def replica_profile(i, n):
    """(requests/s, TTFT median s, ITL median s, queue median s, running, waiting)."""
    rate, ttft, itl, queue, running, waiting = 2.0, 0.08, 0.02, 0.004, 8.0, 0.0
    if i % max(1, n // 4) == 1:   # a few slow replicas
        itl *= 4
        ttft *= 2
        running *= 2
    if i == n - 1:                # the one the balancer favours
        rate *= 3
        running *= 3
        waiting = 4.0
        queue = 0.05
    return rate, ttft, itl, queue, running, waiting


def write_openmetrics(path, n, end_s, window_min):
    steps = (window_min + 1) * 60 // SCRAPE_S
    times = [end_s - (steps - k) * SCRAPE_S for k in range(steps + 1)]
    labels = [f'engine="0",instance="10.0.{i // 250}.{i % 250 + 1}:8000",job="vllm",'
              f'model_name="meta-llama/Llama-3.1-8B-Instruct"' for i in range(n)]
    prof = [replica_profile(i, n) for i in range(n)]
    with open(path, "w") as f:
        w = f.write

        def hist(name, buckets, median_of, per_request):
            w(f"# TYPE {name} histogram\n")
            for i in range(n):
                rate, med = prof[i][0], median_of(prof[i])
                for le in buckets + [math.inf]:
                    frac = 1.0 if le == math.inf else lognorm_cdf(le, med)
                    le_s = "+Inf" if le == math.inf else repr(le)
                    for k, t in enumerate(times):
                        w(f'{name}_bucket{{{labels[i]},le="{le_s}"}} '
                          f'{rate * per_request * SCRAPE_S * k * frac:.3f} {t}\n')
                for k, t in enumerate(times):
                    c = rate * per_request * SCRAPE_S * k
                    w(f"{name}_count{{{labels[i]}}} {c:.3f} {t}\n")
                for k, t in enumerate(times):
                    c = rate * per_request * SCRAPE_S * k
                    w(f"{name}_sum{{{labels[i]}}} {c * med * math.exp(0.125):.3f} {t}\n")

        hist("vllm:time_to_first_token_seconds", TTFT_BUCKETS, lambda p: p[1], 1)
        hist("vllm:inter_token_latency_seconds", ITL_BUCKETS, lambda p: p[2], 100)
        hist("vllm:request_queue_time_seconds", QUEUE_BUCKETS, lambda p: p[3], 1)
        hist("vllm:e2e_request_latency_seconds", TTFT_BUCKETS, lambda p: p[1] + 100 * p[2], 1)

        def gauge(name, value_of, kind="gauge"):
            w(f"# TYPE {name} {kind}\n")
            sample = name + ("_total" if kind == "counter" else "")
            for i in range(n):
                for k, t in enumerate(times):
                    w(f"{sample}{{{labels[i]}}} {value_of(prof[i], k):.4f} {t}\n")

        gauge("vllm:num_requests_running", lambda p, k: p[4])
        gauge("vllm:num_requests_waiting", lambda p, k: p[5])
        gauge("vllm:kv_cache_usage_perc", lambda p, k: min(1.0, p[4] / 64))
        gauge("vllm:num_preemptions", lambda p, k: 0.0, kind="counter")
        w("# TYPE up gauge\n")
        for i in range(n):
            for t in times:
                w(f'up{{instance="10.0.{i // 250}.{i % 250 + 1}:8000",job="vllm"}} 1 {t}\n')
        w("# EOF\n")
    return len(times)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latdoc", default="build/release/src/cli/latdoc")
    ap.add_argument("--replicas", type=int, default=200)
    ap.add_argument("--window-min", type=int, default=15)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    for tool in ("promtool", "prometheus"):
        if not shutil.which(tool):
            sys.exit(f"fleet_query.py: no {tool} on PATH (scripts/install-deps.sh)")
    tmp = tempfile.mkdtemp(prefix="latdoc-fleet-bench.")
    prom = None
    try:
        end_s = int(time.time()) - 5
        om = os.path.join(tmp, "fleet.om")
        t0 = time.monotonic()
        points = write_openmetrics(om, a.replicas, end_s, a.window_min)
        print(f"wrote {os.path.getsize(om) / 1e6:.0f} MB of OpenMetrics ({a.replicas} replicas, "
              f"{points} scrapes each) in {time.monotonic() - t0:.1f} s", flush=True)
        data = os.path.join(tmp, "data")
        t0 = time.monotonic()
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, data],
                       check=True, stdout=subprocess.DEVNULL)
        os.remove(om)
        print(f"promtool made the blocks in {time.monotonic() - t0:.1f} s", flush=True)
        port = free_port()
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global: {scrape_interval: 15s}\nscrape_configs: []\n")
        prom = subprocess.Popen(["prometheus", f"--config.file={config}",
                                 f"--storage.tsdb.path={data}",
                                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if urllib.request.urlopen(url + "/-/ready", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        out = os.path.join(tmp, "fleet.json")
        ok = True
        for label, extra in (("default", []), ("--over-time (the heat map's range queries)", ["--over-time"])):
            walls, queries, rc = [], [], None
            for _ in range(a.runs):
                t0 = time.monotonic()
                r = subprocess.run([a.latdoc, "fleet", "--prometheus", url, "--selector",
                                    '{job="vllm"}', "--window", f"{a.window_min}m", "--json", out,
                                    "--quiet"] + extra, stderr=subprocess.PIPE, text=True)
                walls.append(time.monotonic() - t0)
                rc = r.returncode
                if rc not in (0, 1):
                    sys.exit(f"latdoc fleet exited {rc}: {r.stderr}")
                with open(out) as f:
                    doc = json.load(f)
                queries.append(doc["query_ms"] / 1e3)
            problems = [(f["id"], next((e["text"] for e in f["evidence"] if e["name"] == "replica"), ""))
                        for f in doc["findings"] if f["severity"] in ("warn", "fail")]
            print(f"latdoc fleet, {label}: {len(doc['replicas'])} replicas, exit {rc}, "
                  f"{len(problems)} warn/fail findings (first: {problems[:3]})")
            print(f"  wall   best {min(walls):.3f} s  median {statistics.median(walls):.3f} s")
            print(f"  query  best {min(queries):.3f} s  median {statistics.median(queries):.3f} s")
            ok = ok and statistics.median(walls) < 2.0
        print("target (< 2 s, median wall, both):", "met" if ok else "MISSED")
        return 0 if ok else 1
    finally:
        if prom:
            prom.terminate()
            prom.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
