#!/usr/bin/env python3
"""Writes a synthetic Nsight Systems SQLite export (the tables latdoc reads: StringIds,
META_DATA_EXPORT, TARGET_INFO_GPU, CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _RUNTIME) with N kernel
launches, for the SQLite import-rate benchmark (issue 5: >= 5 M rows/s). Column names and
meanings follow trace-formats.md 4.1; the values are invented.

Usage: tools/gen_trace_sqlite.py OUT.sqlite --kernels 2000000
"""
import argparse
import os
import random
import sqlite3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--kernels", type=int, default=2_000_000)
    a = ap.parse_args()
    if os.path.exists(a.out):
        os.remove(a.out)
    db = sqlite3.connect(a.out)
    c = db.cursor()
    c.executescript("""
      PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
      CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);
      CREATE TABLE TARGET_INFO_GPU(id INTEGER, name TEXT, computeMajor INTEGER, computeMinor INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
        streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
        streamId INTEGER, correlationId INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
        globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
    """)
    c.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION','3.24.0'),('EXPORT_SCHEMA_VERSION_MAJOR','3')")
    c.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200', 9, 0)")
    names = ["cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "gemm_kernel", "rmsnorm_kernel", "rope_kernel", "silu_kernel"]
    c.executemany("INSERT INTO StringIds VALUES (?, ?)", list(enumerate(names)))
    rnd = random.Random(1)
    g_tid = (4242 << 24) | 4242

    def rows():
        t = 1_000_000_000
        for i in range(a.kernels):
            d = 2_000 + rnd.randrange(50_000)
            yield ("R", t, t + 5_000, 0, g_tid, i + 1, 0)
            yield ("K", t + 9_000, t + 9_000 + d, 0, 7, i + 1, 4242 << 24, 2 + i % 4, 2 + i % 4)
            t += d + 12_000

    batch_k, batch_r = [], []
    for r in rows():
        (batch_r if r[0] == "R" else batch_k).append(r[1:])
        if len(batch_k) >= 100_000:
            c.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?)", batch_r)
            c.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?)", batch_k)
            batch_k, batch_r = [], []
    c.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?)", batch_r)
    c.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?)", batch_k)
    db.commit()
    db.close()
    print("wrote %s: %d kernel + %d runtime rows" % (a.out, a.kernels, a.kernels))


if __name__ == "__main__":
    main()
