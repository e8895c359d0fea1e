#!/usr/bin/env python3
"""Writes a synthetic rocprofv3 JSON (`rocprofv3 --output-format json`, <pid>_results.json) of a
given size, for `latdoc trace`'s memory benchmark on that format (bench/trace_bench.py).
Streams its records; it keeps only each launch call's (id, operation, start) until the calls
are written, after the GPU records, as rocprofv3 writes its buffers one domain at a time.

The shape follows rocprofiler-sdk's source/docs/rocprofv3-schema.json (ROCm/rocm-systems, ROCm 7.0):
metadata, agents, strings (HIP API names by kind and operation) and kernel_symbols first, then
buffer_records with one hipLaunchKernel per kernel dispatch (linked by correlation id), an
occasional hipMemcpyAsync with its HtoD memory_copy, on one MI300X. Deterministic (seeded).

Usage: tools/gen_rocprofv3_json.py OUT.json --size-mb 1100
"""
import argparse
import random


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=float, default=1100.0, help="stop after this many MB (1e6 bytes)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    limit = int(a.size_mb * 1e6)
    kernels = ["Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1",
               "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >",
               "_ZN2ck27kernel_gemm_xdl_cshuffle_v3ILi256ELi128ELi128ELi64ELi8ELi8EEEvPKvS2_Pv",
               "void vllm::rms_norm_kernel<c10::BFloat16, 8, 3>(c10::BFloat16*, c10::BFloat16 const*, float, int, int)"]
    with open(a.out, "w", buffering=1 << 22) as f:
        head = ('{"rocprofiler-sdk-tool": [{\n'
                '"metadata": {"pid": 4242, "init_time": 1, "fini_time": 2, "command": ["python3", "serve.py"]},\n'
                '"agents": [{"id": {"handle": 1}, "type": 1, "name": "AMD EPYC 9654"},\n'
                '           {"id": {"handle": 2}, "type": 2, "name": "gfx942", "product_name": "AMD Instinct MI300X"}],\n'
                '"strings": {"buffer_records": [{"kind": "NONE", "operations": []},\n'
                '  {"kind": "HIP_RUNTIME_API", "operations": ["hipLaunchKernel", "hipMemcpyAsync", "hipStreamSynchronize"]},\n'
                '  {"kind": "KERNEL_DISPATCH", "operations": ["KERNEL_DISPATCH_ENQUEUE", "KERNEL_DISPATCH_COMPLETE"]},\n'
                '  {"kind": "MEMORY_COPY", "operations": ["NONE", "HOST_TO_HOST", "HOST_TO_DEVICE", "DEVICE_TO_HOST"]}]},\n'
                '"kernel_symbols": [' +
                ", ".join('{"kernel_id": %d, "kernel_name": "%s.kd", "demangled_kernel_name": "%s"}' % (i, k, k)
                          for i, k in enumerate(kernels)) +
                '],\n"buffer_records": {\n')
        f.write(head)
        written = len(head)
        # The dispatches fill about 72% of the budget; their calls (and the copies) follow.
        t = 10_000_000_000
        calls = []
        corr = 1
        f.write('"kernel_dispatch": [\n')
        first = True
        copies = []
        while written < limit * 0.72:
            k = rnd.randrange(len(kernels))
            t += rnd.randrange(2_000, 9_000)
            dur = rnd.randrange(3_000, 60_000)
            rec = ('{"size": 96, "kind": 11, "operation": 1, "thread_id": 4243, '
                   '"correlation_id": {"internal": %d, "external": 0}, "start_timestamp": %d, "end_timestamp": %d, '
                   '"dispatch_info": {"size": 64, "agent_id": {"handle": 2}, "queue_id": {"handle": 3}, '
                   '"kernel_id": %d, "dispatch_id": %d, "private_segment_size": 0, "group_segment_size": 0, '
                   '"workgroup_size": {"x": 256, "y": 1, "z": 1}, "grid_size": {"x": 65536, "y": 1, "z": 1}}, '
                   '"stream_id": {"handle": 0}}' % (corr, t, t + dur, k, corr))
            f.write(("" if first else ",\n") + rec)
            first = False
            written += len(rec) + 2
            calls.append((corr, 0, t - rnd.randrange(4_000, 40_000)))
            corr += 1
            if rnd.random() < 0.02:
                copies.append((corr, t + dur))
                calls.append((corr, 1, t + dur - 8_000))
                corr += 1
            t += dur
        f.write('],\n"memory_copy": [\n')
        first = True
        for c, start in copies:
            rec = ('{"size": 64, "kind": 10, "operation": 2, "thread_id": 4243, '
                   '"correlation_id": {"internal": %d, "external": 0}, "start_timestamp": %d, "end_timestamp": %d, '
                   '"dst_agent_id": {"handle": 2}, "src_agent_id": {"handle": 1}, "bytes": 4096}' % (c, start, start + 3_000))
            f.write(("" if first else ",\n") + rec)
            first = False
        f.write('],\n"hip_api": [\n')
        first = True
        for c, op, start in calls:
            rec = ('{"size": 48, "kind": 1, "operation": %d, "thread_id": 4243, '
                   '"correlation_id": {"internal": %d, "external": 0}, "start_timestamp": %d, "end_timestamp": %d}'
                   % (op, c, start, start + 3_500))
            f.write(("" if first else ",\n") + rec)
            first = False
        f.write(']\n}}]}\n')


if __name__ == "__main__":
    main()
