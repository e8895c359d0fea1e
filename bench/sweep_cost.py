#!/usr/bin/env python3
"""Requests spent by `latdoc sweep` against fixed ladders, and the precision each reaches.

For each simulator setting (max_num_seqs M; the compute knee A/B of tests/e2e/sweep_test.cc far
above M, so the true knee is M):
  adaptive: `latdoc sweep --concurrency 1:256`; its requests_spent and its knee.
  fixed-8:  an 8-step fixed ladder 1, 2, 4, ..., 128 of `latdoc bench` runs, each with N
            requests per step, for N = max(2C, 32) (the least the adaptive sweep spends on a
            step), 200, and max(400, 8C) (the adaptive sweep's per-step cap); its knee by the same
            elasticity definition (stats/knee.h), computed here from the bench results.
  fixed-10%: the fixed ladder dense enough to pin the knee to 10% (ratio 1.1 between steps,
            1..256: 59 steps) at N = max(2C, 32): what a fixed ladder must spend for the
            adaptive sweep's precision.
Target (issue 4): adaptive <= 1/3 of the 8-step fixed ladder at the same precision.

Usage: bench/sweep_cost.py [--latdoc build-sweep/src/cli/latdoc] [--dense]
"""
import argparse, json, math, os, subprocess, sys, tempfile

IN_LEN, OUT_LEN, SCALE = 8, 16, 1.0


def start_sim(latdoc, m):
    p = subprocess.Popen([latdoc, "sim", "--port", "0", "--max-num-seqs", str(m),
                          "--sim-step-base-ms", "6", "--sim-decode-seq-us", "80",
                          "--sim-prefill-token-us", "5", "--sim-context-token-ns", "0",
                          "--time-scale", str(SCALE), "--log-file", "/dev/null",
                          "--disable-log-stats"], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    return p, line.strip().rsplit(" ", 1)[1]


def bench(latdoc, url, c, n, tmp):
    out = os.path.join(tmp, "b.json")
    subprocess.run([latdoc, "bench", "--url", url, "--concurrency", str(c), "--num-requests",
                    str(n), "--input-len", str(IN_LEN), "--output-len", str(OUT_LEN),
                    "--token-ids", "--quiet", "--json", out], check=True)
    with open(out) as f:
        return json.load(f)


def knee(points):
    """stats/knee.h: the last step before the first segment with elasticity < 1."""
    for i in range(len(points) - 1):
        (c0, l0, t0), (c1, l1, t1) = points[i], points[i + 1]
        if not t1 > t0:
            e = 0.0
        elif l1 <= l0 or t0 <= 0:
            e = math.inf
        else:
            e = math.log(t1 / t0) / math.log(l1 / l0)
        if e < 1:
            return c0, True
    return points[-1][0], False


def fixed(latdoc, url, levels, per_step, tmp):
    pts, spent = [], 0
    for c in levels:
        n = per_step(c)
        r = bench(latdoc, url, c, n, tmp)
        spent += n
        pts.append((c, r["p99_e2el_ms"], r["output_throughput"]))
    k, reached = knee(pts)
    return spent, k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latdoc", default="build-sweep/src/cli/latdoc")
    ap.add_argument("--dense", action="store_true", help="also run the 59-step fixed ladder")
    ap.add_argument("--seqs", default="16,48")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    rows = []
    for m in [int(x) for x in a.seqs.split(",")]:
        sim, url = start_sim(a.latdoc, m)
        try:
            out = os.path.join(tmp, "s.json")
            subprocess.run([a.latdoc, "sweep", "--url", url, "--concurrency", "1:256",
                            "--input-len", str(IN_LEN), "--output-len", str(OUT_LEN),
                            "--token-ids", "--scrape-interval", "0.005", "--quiet", "--json", out],
                           check=True)
            with open(out) as f:
                s = json.load(f)
            ad = (s["requests_spent"], s["knee"]["concurrency"], len(s["steps"]))
            ladder8 = [2 ** i for i in range(8)]
            f_min = fixed(a.latdoc, url, ladder8, lambda c: max(2 * c, 32), tmp)
            f_200 = fixed(a.latdoc, url, ladder8, lambda c: 200, tmp)
            f_cap = fixed(a.latdoc, url, ladder8, lambda c: max(400, 8 * c), tmp)
            dense = None
            if a.dense:
                lv, x = [], 1.0
                while x <= 256:
                    c = max(1, round(x))
                    if not lv or c > lv[-1]:
                        lv.append(c)
                    x *= 1.1
                dense = fixed(a.latdoc, url, lv, lambda c: max(2 * c, 32), tmp) + (len(lv),)
        finally:
            sim.terminate()
            sim.wait()
        rows.append((m, ad, f_min, f_200, f_cap, dense))
    print(f"{'M':>4} {'adaptive req (knee, steps)':>28} {'fixed8 N=max(2C,32)':>22} "
          f"{'fixed8 N=200':>16} {'fixed8 N=max(400,8C)':>22} {'dense 1.1 ladder':>22}")
    for m, ad, f1, f2, f3, d in rows:
        def fmt(f):
            return f"{f[0]} (knee {f[1]})"
        print(f"{m:>4} {ad[0]:>8} (knee {ad[1]:g}, {ad[2]} steps) {fmt(f1):>22} {fmt(f2):>16} "
              f"{fmt(f3):>22} {(fmt(d) + f', {d[2]} steps') if d else 'n/a':>22}")
        print(f"     adaptive / fixed8(N=max(400,8C)) = {ad[0] / f3[0]:.2f}; "
              f"adaptive / fixed8(N=200) = {ad[0] / f2[0]:.2f}; "
              f"adaptive / fixed8(N=max(2C,32)) = {ad[0] / f1[0]:.2f}"
              + (f"; adaptive / dense = {ad[0] / d[0]:.2f}" if d else ""))


if __name__ == "__main__":
    sys.exit(main())
