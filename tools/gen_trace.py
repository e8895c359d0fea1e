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
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    limit = int(a.size_mb * 1e6)
    f = gzip.open(a.out, "wt", compresslevel=1) if a.gzip else open(a.out, "w", buffering=1 << 22)
    head = ('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", '
            '"totalGlobalMem": 150109880320, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],\n'
            '"traceEvents": [\n')
    f.write(head)
    written = len(head)
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
    tail = '\n], "traceName": "synthetic"}\n'
    f.write(tail)
    f.close()
    print("wrote %s: %d steps, %d correlations, ~%.1f MB uncompressed" % (a.out, step, corr, (written + len(tail)) / 1e6),
          file=sys.stderr)


if __name__ == "__main__":
    main()
