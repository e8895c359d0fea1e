#!/usr/bin/python3
"""A streaming load client written like vLLM's benchmark request function, for comparison.

The request loop follows `async_request_openai_completions` of vLLM's benchmarks
(benchmarks/backend_request_func.py, vllm-project/vllm v0.6-v0.8; the same steps are in
vllm/benchmarks/lib/endpoint_request_func.py on main): one aiohttp session with a keep-alive
connector, `session.post(url, json=payload)`, then for each line of the body: strip it, skip it
if empty, remove "data: ", and unless it is "[DONE]", `json.loads` it and take
`time.perf_counter()`. Each of --streams tasks sends its next request as soon as the last one
ends, until --duration seconds have passed.

Prints one JSON line: SSE events ("data:" lines, [DONE] included) and the process's CPU time
(time.process_time) over the measured window, which begins --settle seconds in (the
connections are open by then). --save FILE writes, per finished request, its x-request-id and
each chunk's perf_counter time in ns (CLOCK_MONOTONIC on Linux), for the timing-error check.

Needs Debian's python3-aiohttp (run with /usr/bin/python3).
Usage: vllm_style_client.py --url http://127.0.0.1:PORT --body-file FILE --streams N
                            --duration S [--settle S] [--save FILE]
"""
import argparse
import asyncio
import json
import os
import sys
import time

import aiohttp

AIOHTTP_TIMEOUT = aiohttp.ClientTimeout(total=6 * 60 * 60)  # as vLLM's


class Counters:
    events = 0


async def request(session, url, payload, rid, counters, saved):
    headers = {"Content-Type": "application/json", "x-request-id": rid}
    times = []
    if saved is not None:
        saved[rid] = times  # filled as chunks come: a request cut by the deadline counts too
    generated_text = ""
    st = time.perf_counter()
    most_recent_timestamp = st
    ttft = 0.0
    itl = []
    async with session.post(url=url, json=payload, headers=headers) as response:
        if response.status != 200:
            return
        async for chunk_bytes in response.content:
            chunk_bytes = chunk_bytes.strip()
            if not chunk_bytes:
                continue
            counters.events += 1
            chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
            if chunk != "[DONE]":
                data = json.loads(chunk)
                timestamp = time.perf_counter()
                if choices := data.get("choices"):
                    text = choices[0].get("text")
                    if ttft == 0.0:
                        ttft = timestamp - st
                    else:
                        itl.append(timestamp - most_recent_timestamp)
                    most_recent_timestamp = timestamp
                    generated_text += text or ""
                    times.append(int(timestamp * 1e9))


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--body-file", required=True)
    ap.add_argument("--streams", type=int, default=1024)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--settle", type=float, default=2)
    ap.add_argument("--save")
    a = ap.parse_args()
    payload = json.load(open(a.body_file))
    url = a.url + "/v1/completions"
    counters = Counters()
    saved = {} if a.save else None
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=60, force_close=False)
    async with aiohttp.ClientSession(connector=connector, timeout=AIOHTTP_TIMEOUT) as session:
        t0 = time.perf_counter()
        deadline = t0 + a.duration
        serial = [0]

        async def stream():
            while time.perf_counter() < deadline:
                serial[0] += 1
                await request(session, url, payload, f"py-{serial[0]}", counters, saved)

        tasks = [asyncio.create_task(stream()) for _ in range(a.streams)]
        await asyncio.sleep(a.settle)
        ev0, cpu0, w0 = counters.events, time.process_time(), time.perf_counter()
        await asyncio.sleep(max(0.0, deadline - time.perf_counter()))
        ev1, cpu1, w1 = counters.events, time.process_time(), time.perf_counter()
        if a.save:
            with open(a.save, "w") as f:
                for rid, times in saved.items():
                    f.write(json.dumps({"id": rid, "t_ns": times}) + "\n")
        print(json.dumps({"events": ev1 - ev0, "cpu_s": cpu1 - cpu0, "wall_s": w1 - w0}))
        sys.stdout.flush()
        os._exit(0)  # the streams in flight are not waited for


if __name__ == "__main__":
    asyncio.run(main())
