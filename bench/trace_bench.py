#!/usr/bin/env python3
"""Side-by-side speed and memory of `latdoc trace` vs Python's bare `json.load` on the same
files, in one run (issue 5's target: full import + all analyses >= 30x faster than json.load;
peak memory <= 0.5x the uncompressed size).

Each tool runs under /usr/bin/time -v (wall time, peak RSS). json.load is timed inside Python
too (the parse alone, without interpreter start). For .gz files both sides decompress.

SQLite inputs (.db, .sqlite: rocpd, Nsight Systems export) have no json.load side; for them the
import rate from `latdoc trace --timings` is reported as M rows/s (issue 5's SQLite target: >= 5).

Each tool runs --repeat times (default 5), the tools' runs alternating, and the fastest run
counts (the least disturbed by other work on the machine; peak RSS is the largest of the runs);
json.load runs once on files over 200 MB, where it takes a minute and more. With --baseline, an
older latdoc binary runs in the same rounds: before/after figures from one run.

Without FILE arguments it times the real traces of the repository: bench/data's two 40 MB H200
decode traces, the H200 fixtures (tests/data/trace/kineto, h200_pathologies) and TraceLens's
reference traces; then the geometric mean and the lowest of their speed-ups, over the files of
5 MB and more and over those of 20 MB and more (below that the process start weighs). The fastest
latdoc run's `--timings` split (import, finalize, analyses and rules) is printed per file.

Usage: bench/trace_bench.py --latdoc build/release/src/cli/latdoc [--baseline OLD_LATDOC]
                            [--repeat N] [FILE...]
Make a large input with tools/gen_trace.py (e.g. --size-mb 1100), or an SQLite one with
tools/gen_trace_sqlite.py (--format nsys|rocpd).
"""
import argparse
import glob
import gzip
import math
import os
import re
import subprocess
import sys
import tempfile
import time

PY_LOAD = ("import gzip, json, sys, time\n"
           "p = sys.argv[1]\n"
           "t = time.perf_counter()\n"
           "with (gzip.open(p, 'rb') if p.endswith('.gz') else open(p, 'rb')) as f:\n"
           "    d = json.load(f)\n"
           "print('parse_s', time.perf_counter() - t)\n")


def timed_once(cmd):
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    secs = time.perf_counter() - t
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    return secs, rss_kb / 1024.0, r


def timed(cmd, repeat=1):
    """The fastest of `repeat` runs (wall s), the largest peak RSS (MB), the fastest run's result."""
    best = None
    rss = 0.0
    for _ in range(max(1, repeat)):
        secs, mb, r = timed_once(cmd)
        rss = max(rss, mb)
        if best is None or secs < best[0]:
            best = (secs, r)
    return best[0], rss, best[1]


def timed_interleaved(*cmds_repeats):
    """timed() for several (command, repeat) pairs, their runs alternating, so that a slow
    spell of a shared machine falls on all and not on one tool's runs only."""
    runs = [[] for _ in cmds_repeats]
    for k in range(max([r for _, r in cmds_repeats] + [1])):
        for i, (cmd, repeat) in enumerate(cmds_repeats):
            if k < max(1, repeat):
                runs[i].append(timed_once(cmd))
    out = []
    for r in runs:
        best = min(r, key=lambda x: x[0])
        out.append((best[0], max(x[1] for x in r), best[2]))
    return out


# The repository's real traces, relative to its root (the default input set).
DEFAULT_FILES = ["bench/data/*.json.gz", "tests/data/trace/kineto/*.json.gz",
                 "tests/data/trace/h200_pathologies/*.json.gz", "tests/data/trace/tracelens/*/trace.json.gz"]
SPLIT_RE = {"import": re.compile(r"timing: import .*?: (\S+) s,"),
            "finalize": re.compile(r"timing: finalize \(sort, link\): (\S+) s"),
            "analyses": re.compile(r"timing: analyses and rules: (\S+) s")}


def split_of(stderr):
    """import, finalize and analyses seconds from `latdoc trace --timings` (imports summed)."""
    out = {}
    for key, rx in SPLIT_RE.items():
        vals = [float(v) for v in rx.findall(stderr)]
        out[key] = sum(vals) if vals else None
    return out


def uncompressed_size(path):
    if not path.endswith(".gz"):
        return os.path.getsize(path)
    n = 0
    with gzip.open(path, "rb") as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                return n
            n += len(b)


SQLITE_EXT = (".db", ".sqlite", ".sqlite3")
TIMING_RE = re.compile(r"timing: import .* \((\S+)\): (\S+) s, (\d+) events, (\S+) M events/s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latdoc", required=True)
    ap.add_argument("--skip-python", action="store_true", help="only latdoc (inputs too big for json.load)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per tool; the fastest counts")
    ap.add_argument("--baseline", help="an older latdoc binary, timed in the same rounds")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if not a.files:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        a.files = sorted(p for pat in DEFAULT_FILES for p in glob.glob(os.path.join(root, pat)))
    rows = []
    sqlite_rows = []
    for path in a.files:
        if path.endswith(SQLITE_EXT):
            with tempfile.TemporaryDirectory() as tmp:
                lat_s, lat_rss, r = timed([a.latdoc, "trace", path, "--quiet", "--timings", "--json",
                                           os.path.join(tmp, "out.json")], a.repeat)
            m = TIMING_RE.search(r.stderr)
            if r.returncode not in (0, 1) or not m:
                print("latdoc failed on %s: rc=%d\n%s" % (path, r.returncode, r.stderr[-2000:]), file=sys.stderr)
                continue
            sqlite_rows.append((path, m.group(1), float(m.group(2)), int(m.group(3)), float(m.group(4)),
                                lat_s, lat_rss))
            continue
        size_mb = uncompressed_size(path) / 1e6
        py_s = py_parse = py_rss = base_s = None
        with tempfile.TemporaryDirectory() as tmp:
            def lat(binary):
                return [binary, "trace", path, "--quiet", "--timings", "--json", os.path.join(tmp, "out.json")]
            cmds = [(lat(a.latdoc), a.repeat)]
            if a.baseline:
                cmds.append((lat(a.baseline), a.repeat))
            if not a.skip_python:
                cmds.append(([sys.executable, "-c", PY_LOAD, path], a.repeat if size_mb <= 200 else 1))
            results = timed_interleaved(*cmds)
            lat_s, lat_rss, r = results[0]
            if a.baseline:
                base_s = results[1][0]
            if not a.skip_python:
                py_s, py_rss, pr = results[-1]
                m = re.search(r"parse_s (\S+)", pr.stdout)
                py_parse = float(m.group(1)) if m else None
        if r.returncode not in (0, 1):
            print("latdoc failed on %s: rc=%d\n%s" % (path, r.returncode, r.stderr[-2000:]), file=sys.stderr)
        rows.append((path, size_mb, lat_s, lat_rss, py_s, py_parse, py_rss, base_s, split_of(r.stderr)))
    if sqlite_rows:
        print("| SQLite file | format | import s | rows | M rows/s (target >= 5) | latdoc trace s | peak RSS MB |")
        print("|---|---|---|---|---|---|---|")
        for path, fmt, imp_s, n, rate, lat_s, lat_rss in sqlite_rows:
            print("| %s | %s | %.3f | %d | %.2f | %.2f | %.0f |" % (
                os.path.basename(path), fmt, imp_s, n, rate, lat_s, lat_rss))
    if not rows:
        return
    print("| file | uncompressed MB | latdoc trace s | import / finalize / analyses s | latdoc peak RSS MB (x size) "
          "| python json.load s (parse only) | python peak RSS MB | speed-up (wall; vs parse only)%s |"
          % (" | baseline latdoc s (after/before)" if a.baseline else ""))
    print("|---|---|---|---|---|---|---|---|%s" % ("---|" if a.baseline else ""))
    ups, big_ups = [], []
    for path, size_mb, lat_s, lat_rss, py_s, py_parse, py_rss, base_s, split in rows:
        sp = "%.1fx; %.1fx" % (py_s / lat_s, py_parse / lat_s) if py_s else "n/a"
        if py_s and size_mb >= 5:  # smaller files time the process start, not the parse
            ups.append(py_s / lat_s)
        if py_s and size_mb >= 20:
            big_ups.append(py_s / lat_s)
        parts = " / ".join("%.3f" % split[k] if split[k] is not None else "n/a" for k in ("import", "finalize", "analyses"))
        print("| %s | %.1f | %.3f | %s | %.0f (%.2fx) | %s | %s | %s%s |" % (
            os.path.basename(path), size_mb, lat_s, parts, lat_rss, lat_rss / size_mb,
            "%.2f (%.2f)" % (py_s, py_parse) if py_s else "n/a",
            "%.0f" % py_rss if py_rss else "n/a", sp,
            " | %.3f (%.2fx)" % (base_s, lat_s / base_s) if base_s else ""))
    for label, u in (("5 MB", ups), ("20 MB", big_ups)):
        if u:
            print("speed-up over json.load, files of %s and more: geometric mean %.1fx, lowest %.1fx (target >= 30x)"
                  % (label, math.exp(sum(math.log(x) for x in u) / len(u)), min(u)))

if __name__ == "__main__":
    main()
