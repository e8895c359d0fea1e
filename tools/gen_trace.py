#!/usr/bin/env python3
"""Writes a synthetic PyTorch/Kineto Chrome-trace JSON of a given size, for `latdoc trace`'s
speed and memory benchmark (bench/trace_bench.py). Streams its output: memory stays small.

The trace imitates an eager decode loop on one GPU: per step, a ProfilerStep annotation, per
layer a few cpu_ops (with Input Dims args, like record_shapes=True), a cudaLaunchKernel per op
with its kernel on stream 7 linked by correlation and ac2g flow events, an occasional small
pageable HtoD copy and a cudaStreamSynchronize at the end of each step. Deterministic (seeded).
With --python-frames N, each op also sits in N nested python_function frames, as with
with_stack=True: then most events are CPU-side, as in the H200 fixture (63%).

Usage: tools/gen_trace.py OUT.json --size-mb 1100 [--gzip] [--python-frames N]

With --ranks N it writes instead one small trace per rank of a tensor-parallel decode, as
PyTorch's profiler writes them on each rank (top-level "distributedInfo" with rank and
world_size), to OUT with "{rank}" replaced by the rank: per step each rank runs its compute
kernels, then an NCCL all-reduce. All ranks leave an all-reduce together, so a rank that
arrives early waits inside it. --straggler R makes rank R's compute slower by --straggler-us
every step (its all-reduce is then the shortest, the others' longer); without it the ranks are
even (a few microseconds of jitter). Each rank's clock has its own offset, as on real hosts.

Usage: tools/gen_trace.py 'r{rank}.json' --ranks 2 [--straggler 1] [--steps 20]

With --alloc-every N, every N-th step also allocates (cudaMalloc, 150 us, before its first
launch) and frees (cudaFree, 80 us, before its synchronize): allocations in the steady state,
as when the caching allocator is off or emptied each step. A setup cudaMalloc comes before the
first kernel and its cudaFree after the last: they are not the steady state's.
"""
import argparse
import gzip
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=float, default=1100.0, help="stop after this many MB (1e6 bytes)")
    ap.add_argument("--gzip", action="store_true", help="write gzip (level 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--python-frames", type=int, default=0, help="python_function frames around each op")
    ap.add_argument("--ranks", type=int, default=0, help="write one trace per rank (OUT holds {rank})")
    ap.add_argument("--straggler", type=int, default=-1, help="the rank whose compute is slower every step")
    ap.add_argument("--straggler-us", type=float, default=300.0, help="how much slower, in us")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--alloc-every", type=int, default=0,
                    help="a cudaMalloc at the start and a cudaFree at the end of every N-th step, "
                         "plus one setup cudaMalloc before the first step and its cudaFree after the last")
    a = ap.parse_args()
    if a.ranks > 0:
        return write_ranks(a)
    rnd = random.Random(a.seed)
    limit = int(a.size_mb * 1e6)
    f = gzip.open(a.out, "wt", compresslevel=1) if a.gzip else open(a.out, "w", buffering=1 << 22)
    head = ('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", '
            '"totalGlobalMem": 150109880320, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],\n'
            '"traceEvents": [\n')
    f.write(head)
    written = len(head)
    if a.alloc_every > 0:  # setup: before the first step's first kernel
        setup = ('{"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 4242, "tid": 4242, '
                 '"ts": 4999999999000.000, "dur": 400.000, "args": {"cbid": 20, "correlation": 0}},\n')
        f.write(setup)
        written += len(setup)
    kernels = ["void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
               "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT",
               "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
               "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)"]
    ops = ["aten::add", "aten::mm", "aten::mean", "aten::copy_"]
    ts_ns = 5_000_000_000_000_000
    corr = 1
    ext = 1
    step = 0
    first = True
    pid, tid = 4242, 4242

    def us(ns):
        return "%d.%03d" % (ns // 1000, ns % 1000)

    while written < limit:
        out = []
        step_start = ts_ns
        allocating = a.alloc_every > 0 and step % a.alloc_every == 0
        if allocating:
            out.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": %d, "tid": %d, "ts": %s, '
                       '"dur": 150.000, "args": {"cbid": 20, "correlation": %d}}' % (pid, tid, us(ts_ns), corr))
            corr += 1
            ts_ns += 160_000
        for layer in range(24):
            for k in range(4):
                op_dur = 20_000 + rnd.randrange(15_000)
                for d in range(a.python_frames):  # outermost first, each 100 ns inside the last
                    out.append('{"ph": "X", "cat": "python_function", "name": "model.py(%d): forward_%d", "pid": %d, '
                               '"tid": %d, "ts": %s, "dur": %s, "args": {"Python id": %d, "Python parent id": %d}}'
                               % (100 + d, d, pid, tid, us(ts_ns - 100 * (a.python_frames - d)),
                                  us(op_dur + 200 * (a.python_frames - d)), ext * 64 + d, ext * 64 + d - 1))
                out.append('{"ph": "X", "cat": "cpu_op", "name": "%s", "pid": %d, "tid": %d, "ts": %s, "dur": %s, '
                           '"args": {"External id": %d, "Record function id": 0, "Input Dims": [[1, 128, 1024], [1024, 1024]], '
                           '"Input type": ["c10::BFloat16", "c10::BFloat16"], "Ev Idx": %d}}'
                           % (ops[k], pid, tid, us(ts_ns), us(op_dur), ext, ext))
                launch_ts = ts_ns + 5_000
                launch_dur = 4_000 + rnd.randrange(4_000)
                out.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %d, "tid": %d, "ts": %s, '
                           '"dur": %s, "args": {"External id": %d, "cbid": 211, "correlation": %d}}'
                           % (pid, tid, us(launch_ts), us(launch_dur), ext, corr))
                out.append('{"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g"}'
                           % (corr, pid, tid, us(launch_ts)))
                k_ts = launch_ts + launch_dur + 2_000 + rnd.randrange(3_000)
                k_dur = 2_000 + rnd.randrange(8_000) + (200_000 if rnd.random() < 0.0005 else 0)
                out.append('{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "ts": %s, "dur": %s, '
                           '"args": {"External id": %d, "queued": 0, "device": 0, "context": 1, "stream": 7, '
                           '"correlation": %d, "registers per thread": 32, "shared memory": 0, "grid": [128, 1, 1], '
                           '"block": [256, 1, 1]}}' % (kernels[k], us(k_ts), us(k_dur), ext, corr))
                out.append('{"ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}'
                           % (corr, us(k_ts)))
                corr += 1
                ext += 1
                ts_ns += op_dur + 1_000
            if layer % 8 == 0:
                launch_ts = ts_ns
                out.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": %d, "tid": %d, "ts": %s, '
                           '"dur": "9.000", "args": {"External id": %d, "cbid": 41, "correlation": %d}}'
                           % (pid, tid, us(launch_ts), ext, corr))
                out.append('{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, '
                           '"ts": %s, "dur": 1.500, "args": {"device": 0, "context": 1, "stream": 7, "correlation": %d, '
                           '"bytes": 512, "memory bandwidth (GB/s)": 0.34}}' % (us(launch_ts + 4_000), corr))
                corr += 1
                ts_ns += 12_000
        if allocating:
            out.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaFree", "pid": %d, "tid": %d, "ts": %s, '
                       '"dur": 80.000, "args": {"cbid": 30, "correlation": %d}}' % (pid, tid, us(ts_ns), corr))
            corr += 1
            ts_ns += 90_000
        out.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": %d, "tid": %d, "ts": %s, '
                   '"dur": 30.000, "args": {"cbid": 131, "correlation": %d}}' % (pid, tid, us(ts_ns), corr))
        corr += 1
        ts_ns += 40_000
        out.append('{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": %d, "tid": %d, "ts": %s, '
                   '"dur": %s, "args": {"External id": %d}}' % (step, pid, tid, us(step_start), us(ts_ns - step_start), ext))
        ext += 1
        step += 1
        chunk = (",\n" if not first else "") + ",\n".join(out)
        first = False
        f.write(chunk)
        written += len(chunk)
    if a.alloc_every > 0:  # setup's free, after the last step
        f.write(',\n{"ph": "X", "cat": "cuda_runtime", "name": "cudaFree", "pid": %d, "tid": %d, "ts": %s, '
                '"dur": 200.000, "args": {"cbid": 30, "correlation": %d}}' % (pid, tid, us(ts_ns + 100_000), corr))
    tail = '\n], "traceName": "synthetic"}\n'
    f.write(tail)
    f.close()
    print("wrote %s: %d steps, %d correlations, ~%.1f MB uncompressed" % (a.out, step, corr, (written + len(tail)) / 1e6),
          file=sys.stderr)


def write_ranks(a):
    """One Kineto trace per rank; see the module docstring."""
    if "{rank}" not in a.out:
        sys.exit("gen_trace.py: with --ranks, OUT must contain {rank}")
    rnd = random.Random(a.seed)
    n = a.ranks
    allreduce = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    gemm = "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"
    transfer_ns = 15_000
    # The physical timeline: per step, each rank's compute ends at its arrival; the all-reduce
    # ends for all at the last arrival plus the transfer.
    events = [[] for _ in range(n)]
    corr = [1] * n
    t = 1_000_000
    for step in range(a.steps):
        arrivals = []
        for r in range(n):
            compute = 400_000 + rnd.randrange(4_000)
            if r == a.straggler:
                compute += int(a.straggler_us * 1000)
            arrivals.append(t + compute)
            k_start = t
            for i in range(8):  # compute kernels, each launched 6 us before it starts
                k_dur = (arrivals[r] - t) // 8 - 1_000
                events[r].append(("launch", k_start - 6_000, 4_000, corr[r]))
                events[r].append(("kernel", k_start, k_dur, corr[r], gemm))
                corr[r] += 1
                k_start += k_dur + 1_000
        end = max(arrivals) + transfer_ns
        for r in range(n):
            events[r].append(("launch", arrivals[r] - 6_000, 4_000, corr[r]))
            events[r].append(("kernel", arrivals[r], end - arrivals[r], corr[r], allreduce))
            corr[r] += 1
        t = end + 20_000

    def us(ns):
        return "%d.%03d" % (ns // 1000, ns % 1000)

    for r in range(n):
        offset = 5_000_000_000_000 + r * 123_456_789  # each host's own clock
        pid = 1000 + r
        out = []
        for e in events[r]:
            if e[0] == "launch":
                out.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %d, "tid": %d, '
                           '"ts": %s, "dur": %s, "args": {"cbid": 211, "correlation": %d}}'
                           % (pid, pid, us(e[1] + offset), us(e[2]), e[3]))
            else:
                out.append('{"ph": "X", "cat": "kernel", "name": "%s", "pid": %d, "tid": 7, "ts": %s, "dur": %s, '
                           '"args": {"device": %d, "stream": 7, "correlation": %d}}'
                           % (e[4], r, us(e[1] + offset), us(e[2]), r, e[3]))
        path = a.out.replace("{rank}", str(r))
        with open(path, "w") as f:
            f.write('{"schemaVersion": 1, "deviceProperties": [{"id": %d, "name": "NVIDIA H200", "computeMajor": 9, '
                    '"computeMinor": 0, "numSms": 132}],\n"distributedInfo": {"backend": "nccl", "rank": %d, '
                    '"world_size": %d},\n"traceEvents": [\n%s\n], "traceName": "synthetic rank %d"}\n'
                    % (r, r, n, ",\n".join(out), r))
    print("wrote %d rank traces, %d steps each" % (n, a.steps), file=sys.stderr)


if __name__ == "__main__":
    main()
