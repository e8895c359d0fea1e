#!/usr/bin/env python3
"""Writes a rocprofv3 kernel trace CSV (`*_kernel_trace.csv`, ROCm 7.0 header) of a decode loop,
with no API trace beside it: a kernel-only trace, as `rocprofv3 --kernel-trace` alone gives.
For the trace rules' "no host records" case (docs/trace-verdicts.md). Deterministic.

Per step: an embedding kernel, LAYERS x (GEMM, norm, attention, GEMM), an LM-head GEMM, 3 us
between kernels and STEP_GAP_US of idle before the next step (the host, unseen); every 4th step
also a 3 ms reduction kernel of its own name.

Usage: tools/gen_rocprofv3_kernels.py OUT_kernel_trace.csv [--steps 12] [--layers 4]
"""
import argparse

HEADER = ('"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",'
          '"Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count",'
          '"Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z",'
          '"Grid_Size_X","Grid_Size_Y","Grid_Size_Z"')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--step-gap-us", type=int, default=2000)
    a = ap.parse_args()
    t = 1_000_000_000
    n = 0
    rows = [HEADER]

    def kernel(name, dur_ns):
        nonlocal t, n
        n += 1
        rows.append('"KERNEL_DISPATCH","Agent 4",1,0,3001,%d,%d,"%s",%d,%d,%d,0,0,64,0,32,256,1,1,4096,1,1'
                    % (n, abs(hash(name)) % 1000, name, n, t, t + dur_ns))
        t += dur_ns + 3_000

    for step in range(a.steps):
        kernel("embedding_kernel", 5_000)
        for _ in range(a.layers):
            kernel("Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x1", 40_000)
            kernel("void rmsnorm_kernel<__hip_bfloat16>(__hip_bfloat16*, __hip_bfloat16 const*, int)", 4_000)
            kernel("paged_attention_decode_kernel", 30_000)
            kernel("Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x1", 40_000)
        kernel("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_lm_head", 80_000)
        if step % 4 == 3:
            kernel("big_reduce_kernel", 3_000_000)
        t += a.step_gap_us * 1000
    with open(a.out, "w") as f:
        f.write("\n".join(rows) + "\n")
    print("wrote %s: %d steps, %d kernels" % (a.out, a.steps, n))


if __name__ == "__main__":
    main()
