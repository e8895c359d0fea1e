#!/usr/bin/env python3
"""Builds each fuzz target's seed corpus from the fixtures in tests/data.

Usage: fuzz/make_seeds.py OUT_DIR   (writes OUT_DIR/<target>/..., deterministic, idempotent)

Fixtures are copied as they are where they are small; large ones are cut down so a mutation
costs milliseconds: Kineto traces keep their first events (still valid JSON), SQLite databases
(rocpd, nsys) keep the first rows of every table and are vacuumed.
"""
import glob, gzip, json, os, shutil, sqlite3, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
D = os.path.join(ROOT, "tests", "data")


def files(*patterns):
    out = []
    for p in patterns:
        out += sorted(glob.glob(os.path.join(D, p), recursive=True))
    return [f for f in out if os.path.isfile(f)]


def put(target, name, data):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    with open(os.path.join(OUT, target, name), "wb") as f:
        f.write(data)


def copy(target, paths, prefix=b""):
    for p in paths:
        rel = os.path.relpath(p, D).replace("/", "_")
        with open(p, "rb") as f:
            put(target, rel, prefix + f.read())


def kineto_cut(path, events):
    doc = json.loads(gzip.open(path).read())
    doc["traceEvents"] = doc["traceEvents"][:events]
    return json.dumps(doc).encode()


def slim_db(src, dst, rows=25):
    shutil.copyfile(src, dst)
    db = sqlite3.connect(dst)
    tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
    for t in tables:
        if t.startswith("sqlite_"):
            continue
        try:
            db.execute(f'delete from "{t}" where rowid not in (select rowid from "{t}" limit {rows})')
        except sqlite3.Error:
            pass  # WITHOUT ROWID tables stay whole
    db.commit()
    db.execute("vacuum")
    db.close()


OUT = sys.argv[1]
shutil.rmtree(OUT, ignore_errors=True)

# SSE streams and chunk payloads: what the simulator and vLLM send (the first byte of an SSE
# input picks the split step).
chunks = [
    b'{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" hi","finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}',
    b'{"id":"chat-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
    b'{"id":"chat-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"length"}]}',
    b'{"id":"cmpl-1","object":"text_completion","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":8,"total_tokens":13}}',
    b'{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}',
    b'{"error":{"message":"overloaded","type":"server_error"}}',
    b"[DONE]",
]
put("fuzz_chunk_parser", "stream", b"\n".join(chunks))
for i, c in enumerate(chunks):
    put("fuzz_chunk_parser", f"chunk{i}", c)
sse = b"".join(b"data: " + c + b"\n\n" for c in chunks)
put("fuzz_sse_decoder", "stream", b"\x03" + sse)
put("fuzz_sse_decoder", "fields", b"\x00: comment\r\nevent: x\rid: 7\ndata: a\ndata: b\r\n\r\nretry: 1\n\n")
http = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n" % len(b"data: " + c + b"\n\n") + b"data: " + c + b"\n\n\r\n" for c in chunks)
        + b"0\r\n\r\n")
put("fuzz_http_response", "chunked", b"\x05" + http + http)
put("fuzz_http_response", "length", b"\x10HTTP/1.1 429 Too Many Requests\r\nContent-Length: 2\r\n\r\n{}"
    b"HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nbody until close")

copy("fuzz_prometheus", files("servermetrics/*.prom"), prefix=b"\x07")
copy("fuzz_proc_parsers", files("host/**/tree/proc/**", "host/**/tree/sys/**"))
copy("fuzz_proc_parsers", files("host/facts/*.json"))
copy("fuzz_logs", files("logs/*.log"), prefix=b"\xff")
for p in files("logs/vllm_v0.log"):
    put("fuzz_logs", "vllm_v0.log.gz", b"\xff" + gzip.compress(open(p, "rb").read(), mtime=0))
ds = (b'{"prompt": "hello world", "output_len": 8}\n{"prompt": "x", "max_tokens": 3}\n'
      b'not json\n{"prompt": [1, 2, 3]}\n')
put("fuzz_workload", "jsonl", b"\x01" + ds)
put("fuzz_workload", "sharegpt", b"\x00" + json.dumps([
    {"id": "a", "conversations": [{"from": "human", "value": "What is it?"},
                                  {"from": "gpt", "value": "A test of three words."}]},
    {"id": "b", "conversations": [{"from": "human", "value": "only one turn"}]}]).encode())

copy("fuzz_trace_kineto", files("trace/handmade/*.json"))
put("fuzz_trace_kineto", "vllm_rocm7_first_events.json",
    kineto_cut(os.path.join(D, "trace/tracelens/vllm_rocm7_decode_fullgraph/trace.json.gz"), 60))
# Single events, one seed each, for the event reader's differential target.
for name in ("vllm_rocm7_decode_fullgraph", "h100_qwen0.5b", "mi300x_qwen0.5b"):
    events = json.loads(gzip.open(os.path.join(D, "trace/tracelens/%s/trace.json.gz" % name)).read())["traceEvents"]
    for i in range(0, min(len(events), 400), 20):
        put("fuzz_kineto_event", "%s_%d.json" % (name, i), json.dumps(events[i]).encode())
put("fuzz_trace_kineto", "h100_first_events.json",
    kineto_cut(os.path.join(D, "trace/tracelens/h100_qwen0.5b/trace.json.gz"), 60))
# The split parse: the same documents, and one whose args and strings hold false seams.
copy("fuzz_kineto_split", files("trace/handmade/*.json"))
put("fuzz_kineto_split", "h100_first_events.json",
    kineto_cut(os.path.join(D, "trace/tracelens/h100_qwen0.5b/trace.json.gz"), 30))
put("fuzz_kineto_split", "false_seams.json", json.dumps({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k, {x}", "pid": 0, "tid": i, "ts": 10 * i, "dur": 2,
     "args": {"correlation": i, "shapes": [{"a": 1}, {"b": [2, {"c": 3}]}], "note": ", {\"ph\": 1}"}}
    for i in range(12)]}).encode())
copy("fuzz_trace_rocprof_v1_csv", files("trace/handmade/v1_results.csv", "trace/rocprof_v1/*/output_*.csv"))
copy("fuzz_trace_rocprof_v1_json", files("trace/rocprof_v1/*/results.json"))
copy("fuzz_trace_rocprof_stats", files("trace/rocprof_v1/*/*stats.csv"))
copy("fuzz_trace_rocprofv3_json", files("trace/handmade/rocprofv3_results.json"))
h = os.path.join(D, "trace/handmade")
csv_set = b"\f".join(open(os.path.join(h, f"run1_{s}.csv"), "rb").read()
                     for s in ("kernel_trace", "memory_copy_trace", "hip_api_trace"))
put("fuzz_trace_rocprofv3_csv", "run1_set", csv_set)
copy("fuzz_trace_rocprofv3_csv", files("trace/handmade/*_kernel_trace.csv"))
for target, src in (("fuzz_trace_rocpd", "trace/rocpd/mi300x_batched_gemm_15_results.db"),
                    ("fuzz_trace_nsys", "trace/nsys/vecadd_pageable_report1.sqlite")):
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    slim_db(os.path.join(D, src), os.path.join(OUT, target, "slim.db"))
