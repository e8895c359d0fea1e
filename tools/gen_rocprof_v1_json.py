#!/usr/bin/env python3
"""Writes a synthetic rocprof v1 HIP trace (`rocprof --hip-trace`'s results.json) of a given
size, for `latdoc trace`'s memory benchmark on that format (the flows that link calls to GPU
ops are resolved by external sorts; this file has one flow per launch).

The shape follows the real file in tests/data/trace/rocprof_v1/hip_vecadd/results.json: Chrome
trace events with string fields, pid 2 the HIP API lane, pid 6 GPU0; each launch is an "X"
hipLaunchKernel event, a flow start ("s") inside it, the kernel's "X" event and the flow's end
("t") inside that. Times in µs ("ts"), exact ones in ns (args BeginNs/EndNs). Deterministic.

Usage: tools/gen_rocprof_v1_json.py OUT.json --size-mb 700
"""
import argparse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=float, default=700.0, help="stop after this many MB (1e6 bytes)")
    a = ap.parse_args()
    limit = int(a.size_mb * 1e6)
    written = 0
    launches = 0
    with open(a.out, "w", buffering=1 << 22) as f:
        head = '{ "traceEvents":[{}\n'
        f.write(head)
        written += len(head)
        t = 1000000  # µs
        while written < limit:
            b = t * 1000
            chunk = (
                ',{"ph":"X","name":"hipLaunchKernel","pid":"2","tid":"7","ts":"%d","dur":"5",'
                '"args":{"BeginNs":"%d","EndNs":"%d","pid":"7","tid":"7","Name":"hipLaunchKernel",'
                '"args":"kernel(gemm_kernel) numBlocks(1024,1,1) dimBlocks(256,1,1) sharedMemBytes(0) '
                'stream(0x0)"}}\n' % (t, b, b + 5000) +
                ',{"ph":"s","cat":"DataFlow","id":%d,"name":"dep","pid":2,"tid":7,"ts":%d}\n'
                % (launches, t + 1) +
                ',{"ph":"X","name":"gemm_kernel","pid":"6","tid":"0","ts":"%d","dur":"20",'
                '"args":{"BeginNs":"%d","EndNs":"%d","dev-id":"0","queue-id":"0","Name":"gemm_kernel",'
                '"pid":"7","tid":"7","stream-id":"0","DurationNs":"20000"}}\n' % (t + 8, b + 8000, b + 28000) +
                ',{"ph":"t","cat":"DataFlow","id":%d,"name":"dep","pid":6,"tid":0,"ts":%d}\n'
                % (launches, t + 9))
            f.write(chunk)
            written += len(chunk)
            launches += 1
            t += 30
        f.write("]}\n")
    print("wrote %s: %d launches, each a call, a kernel and a flow, ~%.1f MB"
          % (a.out, launches, written / 1e6))


if __name__ == "__main__":
    main()
