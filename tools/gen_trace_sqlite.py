#!/usr/bin/env python3
"""Writes a synthetic SQLite trace with N kernel launches, for the SQLite import-rate benchmark
(issue 5: >= 5 M rows/s). The values are invented.

--format nsys (default): a Nsight Systems export with the tables latdoc reads (StringIds,
  META_DATA_EXPORT, TARGET_INFO_GPU, CUPTI_ACTIVITY_KIND_KERNEL, _RUNTIME; columns of nsys
  2024.6.2's schema 3.16.1).
  N kernel rows + N runtime rows.
--format rocpd: a rocprofv3 rocpd DB (ROCm/rocm-systems@1b1610f rocprofiler-sdk-rocpd). Its
  schema (the UUID-suffixed tables, rocpd_views.sql's per-table views and data_views.sql's joined views) is copied from the
  real fixture's sqlite_master (--schema-from) with a new UUID, so latdoc's data-view path and
  its per-table fast path both work on it. Per launch: one hipLaunchKernel region, one kernel
  dispatch, and an rocpd_event row for each; every 8th launch also one hipMemcpyAsync region and
  one host-to-device memory copy. N + N + N/8 + N/8 event rows, as many rocpd_event rows.

Usage: tools/gen_trace_sqlite.py OUT.sqlite --kernels 2000000
       tools/gen_trace_sqlite.py OUT.db --format rocpd --kernels 2000000
"""
import argparse
import os
import random
import sqlite3

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "trace",
                       "rocpd", "mi300x_batched_gemm_15_results.db")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--kernels", type=int, default=2_000_000)
    ap.add_argument("--format", choices=["nsys", "rocpd"], default="nsys")
    ap.add_argument("--schema-from", default=FIXTURE, help="rocpd DB whose schema to copy")
    a = ap.parse_args()
    if os.path.exists(a.out):
        os.remove(a.out)
    if a.format == "rocpd":
        write_rocpd(a)
    else:
        write_nsys(a)


def write_nsys(a):
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


GUID = "0000abcd-1234-7000-8000-00000000beef"


def write_rocpd(a):
    src = sqlite3.connect("file:%s?mode=ro" % a.schema_from, uri=True)
    old_uuid = src.execute("SELECT value FROM rocpd_metadata WHERE tag='uuid'").fetchone()[0]
    old_guid = src.execute("SELECT value FROM rocpd_metadata WHERE tag='guid'").fetchone()[0]
    # Tables first, then views in creation order (a view may name an earlier one).
    schema = src.execute("SELECT type, sql FROM sqlite_master WHERE sql IS NOT NULL AND type IN "
                         "('table','view') AND name NOT LIKE 'sqlite_%' ORDER BY type='view', rowid").fetchall()
    src.close()
    uuid = "_" + GUID.replace("-", "_")
    db = sqlite3.connect(a.out)
    c = db.cursor()
    c.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")
    for _, sql in schema:
        c.execute(sql.replace(old_uuid, uuid).replace(old_guid, GUID))

    def t(name):
        return "rocpd_%s%s" % (name, uuid)

    pid = 4242
    c.executemany("INSERT INTO %s(id, tag, value) VALUES (?,?,?)" % t("metadata"),
                  [(1, "schema_version", "3"), (2, "uuid", uuid), (3, "guid", GUID)])
    c.execute("INSERT INTO %s(id, guid, hash, machine_id, system_name, hostname) VALUES "
              "(1, ?, 1, 'synthetic', 'Linux', 'gen')" % t("info_node"), (GUID,))
    c.execute("INSERT INTO %s(id, guid, nid, ppid, pid, command) VALUES (?, ?, 1, 1, ?, 'python3')"
              % t("info_process"), (pid, GUID, pid))
    c.execute("INSERT INTO %s(id, guid, nid, ppid, pid, tid) VALUES (?, ?, 1, ?, ?, ?)" % t("info_thread"),
              (pid, GUID, pid, pid, pid))
    agents = [(0, GUID, 1, pid, "CPU", 0, 0, 0, "synthetic-cpu", "synthetic-cpu")]
    agents += [(1 + g, GUID, 1, pid, "GPU", 1 + g, 1 + g, g, "gfx942", "AMD Instinct MI300X")
               for g in range(8)]
    c.executemany("INSERT INTO %s(id, guid, nid, pid, type, absolute_index, logical_index, type_index, "
                  "name, product_name) VALUES (?,?,?,?,?,?,?,?,?,?)" % t("info_agent"), agents)
    c.executemany("INSERT INTO %s(id, guid, nid, pid, name) VALUES (?,?,1,?,?)" % t("info_queue"),
                  [(0, GUID, pid, "Default Queue"), (16, GUID, pid, "Queue 0")])
    c.execute("INSERT INTO %s(id, guid, nid, pid, name) VALUES (0, ?, 1, ?, 'Default Stream')"
              % t("info_stream"), (GUID, pid))
    c.execute("INSERT INTO %s(id, guid, nid, pid, agent_id, uri) VALUES (1, ?, 1, ?, 1, 'memory://gen')"
              % t("info_code_object"), (GUID, pid))
    kernels = ["gemm_kernel", "rmsnorm_kernel", "rope_kernel", "silu_kernel"]
    c.executemany("INSERT INTO %s(id, guid, nid, pid, code_object_id, kernel_name, display_name) "
                  "VALUES (?,?,1,?,1,?,?)" % t("info_kernel_symbol"),
                  [(i + 1, GUID, pid, k + ".kd", k) for i, k in enumerate(kernels)])
    strings = ["KERNEL_DISPATCH", "HIP_RUNTIME_API_EXT", "MEMORY_COPY", "hipLaunchKernel",
               "hipMemcpyAsync", "MEMORY_COPY_HOST_TO_DEVICE"]
    sid = {s: i + 1 for i, s in enumerate(strings)}
    c.executemany("INSERT INTO %s(id, guid, string) VALUES (?,?,?)" % t("string"),
                  [(i, GUID, s) for s, i in sid.items()])
    rnd = random.Random(1)
    ev, reg, kd, mc = [], [], [], []
    ev_id = reg_id = kd_id = mc_id = 0
    corr = 0

    def flush():
        c.executemany("INSERT INTO %s(id, guid, category_id, stack_id, parent_stack_id, correlation_id) "
                      "VALUES (?,?,?,?,0,0)" % t("event"), ev)
        c.executemany("INSERT INTO %s(id, guid, nid, pid, tid, start, end, name_id, event_id) "
                      "VALUES (?,?,1,?,?,?,?,?,?)" % t("region"), reg)
        c.executemany("INSERT INTO %s(id, guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, "
                      "stream_id, start, end, private_segment_size, group_segment_size, workgroup_size_x, "
                      "workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, "
                      "region_name_id, event_id) VALUES (?,?,1,?,?,1,?,?,16,0,?,?,0,0,256,1,1,77824,1,1,?,?)"
                      % t("kernel_dispatch"), kd)
        c.executemany("INSERT INTO %s(id, guid, nid, pid, tid, start, end, name_id, dst_agent_id, dst_address, "
                      "src_agent_id, src_address, size, queue_id, stream_id, region_name_id, event_id) "
                      "VALUES (?,?,1,?,?,?,?,?,1,4096,0,8192,?,16,0,?,?)" % t("memory_copy"), mc)
        del ev[:], reg[:], kd[:], mc[:]

    ts = 1_000_000_000
    for i in range(a.kernels):
        d = 2_000 + rnd.randrange(50_000)
        corr += 1
        ev_id += 1
        ev.append((ev_id, GUID, sid["HIP_RUNTIME_API_EXT"], corr))
        reg_id += 1
        reg.append((reg_id, GUID, pid, pid, ts, ts + 5_000, sid["hipLaunchKernel"], ev_id))
        ev_id += 1
        ev.append((ev_id, GUID, sid["KERNEL_DISPATCH"], corr))
        kd_id += 1
        kd.append((kd_id, GUID, pid, pid, 1 + i % 4, kd_id, ts + 9_000, ts + 9_000 + d,
                   sid["hipLaunchKernel"], ev_id))
        ts += d + 12_000
        if i % 8 == 7:
            corr += 1
            ev_id += 1
            ev.append((ev_id, GUID, sid["HIP_RUNTIME_API_EXT"], corr))
            reg_id += 1
            reg.append((reg_id, GUID, pid, pid, ts, ts + 20_000, sid["hipMemcpyAsync"], ev_id))
            ev_id += 1
            ev.append((ev_id, GUID, sid["MEMORY_COPY"], corr))
            mc_id += 1
            mc.append((mc_id, GUID, pid, pid, ts + 3_000, ts + 15_000, sid["MEMORY_COPY_HOST_TO_DEVICE"],
                       1 << 20, sid["hipMemcpyAsync"], ev_id))
            ts += 21_000
        if len(ev) >= 200_000:
            flush()
    flush()
    db.commit()
    db.close()
    print("wrote %s: %d kernel dispatch + %d memory copy + %d region rows, %d rocpd_event rows"
          % (a.out, kd_id, mc_id, reg_id, ev_id))


if __name__ == "__main__":
    main()
