#!/usr/bin/env python3
"""Soak: `latdoc bench` against `latdoc sim` over loopback, again and again, for a bounded time,
checking that neither process leaks file descriptors or memory.

Usage: bench/soak.py [--minutes 10] [--latdoc build/release/src/cli/latdoc] [--concurrency 32]
                     [--requests 2000] [--json soak.json]

The simulator is one long-lived process; each round is one `latdoc bench` run of --requests
streamed requests (with the simulator injecting faults: 429/500/503, resets before and after the
first token, cut streams, so error paths are soaked too). Both processes are sampled from /proc
every 0.2 s: open file descriptors (/proc/PID/fd) and resident memory (VmRSS).

Pass criteria (exit 0, else 1):
  - the simulator's fd count after every round is back to its count before the first round
    (+2 for a listener or log file reopened), i.e. no connection or file is leaked;
  - the simulator's RSS after the last round is within max(10%, 16 MiB) of its RSS after the
    first round (the first round warms buffers and the allocator);
  - every bench run exits 0/1 with completed + failed == sent, and its peak fd count stays
    below concurrency + 32 (a socket per stream plus a fixed few);
  - the bench runs' peak RSS does not grow from round to round (max(10%, 16 MiB)): same work,
    same memory.
"""
import argparse, json, os, re, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Sampler(threading.Thread):
    """Peak fd count and RSS of one process until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak_fds, self.peak_rss, self.stop = pid, 0, 0, False

    def run(self):
        while not self.stop:
            f, r = fds(self.pid), rss_kib(self.pid)
            if f is None:
                break
            self.peak_fds, self.peak_rss = max(self.peak_fds, f), max(self.peak_rss, r or 0)
            time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--latdoc", default=os.path.join(ROOT, "build/release/src/cli/latdoc"))
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--json", help="write the per-round figures here")
    a = ap.parse_args()

    sim = subprocess.Popen(
        [a.latdoc, "sim", "--port", "0", "--sim-step-base-ms", "2", "--sim-prefill-token-us", "5",
         "--sim-decode-seq-us", "10", "--sim-context-token-ns", "0", "--max-num-seqs", "256",
         "--log-file", "/dev/null", "--seed", "1",
         "--sim-fault-429", "0.01", "--sim-fault-500", "0.01", "--sim-fault-503", "0.01",
         "--sim-fault-reset-before", "0.01", "--sim-fault-reset-after", "0.01",
         "--sim-fault-cut-stream", "0.01"],
        stdout=subprocess.PIPE, text=True)
    first = sim.stdout.readline()
    m = re.search(r":(\d+)\s*$", first)
    if not m:
        print(f"soak: latdoc sim did not start: {first!r}", file=sys.stderr)
        sim.kill()
        return 2
    url = f"http://127.0.0.1:{m.group(1)}"
    time.sleep(0.3)
    sim_fds0, sim_rss0 = fds(sim.pid), rss_kib(sim.pid)
    print(f"soak: sim pid {sim.pid} at {url}: {sim_fds0} fds, {sim_rss0} KiB RSS; "
          f"{a.minutes} min of bench rounds ({a.requests} requests, concurrency {a.concurrency})")
    rounds, failures = [], []
    deadline = time.monotonic() + a.minutes * 60
    out = tempfile.mktemp(prefix="latdoc_soak_", suffix=".json")
    try:
        while time.monotonic() < deadline or not rounds:
            t0 = time.monotonic()
            bench = subprocess.Popen(
                [a.latdoc, "bench", "--url", url, "--concurrency", str(a.concurrency),
                 "--num-requests", str(a.requests), "--input-len", "32", "--output-len", "16",
                 "--json", out, "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True)
            s = Sampler(bench.pid)
            s.start()
            _, err = bench.communicate()
            s.stop = True
            s.join()
            time.sleep(0.3)  # let the simulator close the last connections
            r = {"round": len(rounds) + 1, "seconds": round(time.monotonic() - t0, 2),
                 "bench_exit": bench.returncode, "bench_peak_fds": s.peak_fds,
                 "bench_peak_rss_kib": s.peak_rss, "sim_fds": fds(sim.pid),
                 "sim_rss_kib": rss_kib(sim.pid)}
            try:
                with open(out) as f:
                    res = json.load(f)
                r.update(sent=res["sent"], completed=res["completed"], failed=res["failed"])
                if res["completed"] + res["failed"] != res["sent"]:
                    failures.append(f"round {r['round']}: completed + failed != sent")
            except (OSError, ValueError, KeyError) as e:
                failures.append(f"round {r['round']}: no results ({e}); stderr: {err.strip()[:200]}")
            if bench.returncode not in (0, 1):
                failures.append(f"round {r['round']}: bench exited {bench.returncode}")
            if s.peak_fds >= a.concurrency + 32:
                failures.append(f"round {r['round']}: bench peaked at {s.peak_fds} fds")
            if r["sim_fds"] is None or r["sim_fds"] > sim_fds0 + 2:
                failures.append(f"round {r['round']}: sim has {r['sim_fds']} fds (started with {sim_fds0})")
            rounds.append(r)
            print("soak: " + " ".join(f"{k}={v}" for k, v in r.items()), flush=True)
    finally:
        sim.terminate()
        sim.wait(timeout=20)
        if os.path.exists(out):
            os.remove(out)

    def grew(first, last):
        return last - first > max(0.10 * first, 16 * 1024)

    if len(rounds) >= 2:
        if grew(rounds[0]["sim_rss_kib"], rounds[-1]["sim_rss_kib"]):
            failures.append(f"sim RSS grew {rounds[0]['sim_rss_kib']} -> {rounds[-1]['sim_rss_kib']} KiB")
        if grew(rounds[0]["bench_peak_rss_kib"], max(r["bench_peak_rss_kib"] for r in rounds[1:])):
            failures.append("bench peak RSS grew from round to round")
    summary = {
        "rounds": len(rounds), "minutes": a.minutes,
        "requests": sum(r.get("sent", 0) for r in rounds),
        "failed": sum(r.get("failed", 0) for r in rounds),
        "sim_fds": [sim_fds0, min(r["sim_fds"] or 0 for r in rounds), max(r["sim_fds"] or 0 for r in rounds)],
        "sim_rss_kib": [sim_rss0, rounds[0]["sim_rss_kib"], rounds[-1]["sim_rss_kib"]],
        "bench_peak_fds": max(r["bench_peak_fds"] for r in rounds),
        "bench_peak_rss_kib": [min(r["bench_peak_rss_kib"] for r in rounds),
                               max(r["bench_peak_rss_kib"] for r in rounds)],
        "failures": failures,
    }
    print("soak: summary " + json.dumps(summary))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": summary, "rounds": rounds}, f, indent=1)
    print("soak: " + ("FAILED: " + "; ".join(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
