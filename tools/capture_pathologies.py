"""Capture real PyTorch-profiler (Kineto) traces of an LLM-like decode loop on one GPU, one
trace per latency pathology that `latdoc trace` must judge (see docs/trace-verdicts.md).

The model is a plain-PyTorch decoder (random bf16 weights, static KV cache) so that one decode
step can also be captured in a CUDA graph. Each scenario runs a few warm-up steps, then profiles
STEPS decode steps with `prof.step()` between them, so the trace carries `ProfilerStep#N`
ranges. Writes gzipped Chrome-trace JSON to $OUT (default /tmp/out).

Run on a GPU machine: python3 tools/capture_pathologies.py [scenario...]
Environment: LAYERS, STEPS; SCHEDULE=1 profiles with a torch.profiler.schedule (one warm-up
step, then STEPS active ones), which is what makes the trace carry `ProfilerStep#N` ranges
(without a schedule, `prof.step()` records none); SUFFIX is appended to the file names. With
PYTORCH_NO_CUDA_MEMORY_CACHING=1 every tensor allocation is a cudaMalloc and every free a cudaFree.
"""
import gzip, math, os, shutil, sys, time
import torch
import torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity

OUT = os.environ.get("OUT", "/tmp/out")
STEPS = int(os.environ.get("STEPS", "32"))
SCHEDULE = os.environ.get("SCHEDULE", "") == "1"
SUFFIX = os.environ.get("SUFFIX", "")
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(0)
dev = "cuda"
dt = torch.bfloat16

# Shapes of a ~0.6 B-parameter Llama-like model.
VOCAB, HID, INTER, LAYERS, HEADS = 32000, 2048, 5632, int(os.environ.get("LAYERS", "12")), 16
HD = HID // HEADS
BATCH, PROMPT, TMAX = 8, 256, 512


def w(*shape):
    return (torch.randn(*shape, device=dev, dtype=dt) / math.sqrt(shape[-1]))


class Model:
    def __init__(self):
        self.emb = w(VOCAB, HID)
        self.layers = [dict(n1=torch.ones(HID, device=dev, dtype=dt), qkv=w(3 * HID, HID),
                            o=w(HID, HID), n2=torch.ones(HID, device=dev, dtype=dt),
                            gu=w(2 * INTER, HID), down=w(HID, INTER)) for _ in range(LAYERS)]
        self.norm = torch.ones(HID, device=dev, dtype=dt)
        self.head = w(VOCAB, HID)
        self.k = torch.zeros(LAYERS, BATCH, HEADS, TMAX, HD, device=dev, dtype=dt)
        self.v = torch.zeros_like(self.k)
        self.arange = torch.arange(TMAX, device=dev)

    @staticmethod
    def rms(x, g):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * g

    def step(self, tok, pos):
        """One decode step: tok [B, 1] int64 on the GPU, pos [1] int64 on the GPU."""
        x = F.embedding(tok, self.emb)  # [B, 1, HID]
        mask = (self.arange <= pos).view(1, 1, 1, TMAX)
        for i, L in enumerate(self.layers):
            h = self.rms(x, L["n1"])
            q, k, v = F.linear(h, L["qkv"]).split(HID, dim=-1)
            q = q.view(BATCH, 1, HEADS, HD).transpose(1, 2)
            self.k[i].index_copy_(2, pos, k.view(BATCH, 1, HEADS, HD).transpose(1, 2))
            self.v[i].index_copy_(2, pos, v.view(BATCH, 1, HEADS, HD).transpose(1, 2))
            a = F.scaled_dot_product_attention(q, self.k[i], self.v[i], attn_mask=mask)
            x = x + F.linear(a.transpose(1, 2).reshape(BATCH, 1, HID), L["o"])
            g, u = F.linear(self.rms(x, L["n2"]), L["gu"]).split(INTER, dim=-1)
            x = x + F.linear(F.silu(g) * u, L["down"])
        logits = F.linear(self.rms(x, self.norm), self.head)
        return logits[:, -1].argmax(-1, keepdim=True)


model = Model()
heavy_a = torch.randn(6144, 6144, device=dev, dtype=torch.float32)
heavy_b = torch.randn(6144, 6144, device=dev, dtype=torch.float32)
torch.backends.cuda.matmul.allow_tf32 = False


def save(prof, name):
    tmp = os.path.join("/tmp", name + ".json")
    prof.export_chrome_trace(tmp)
    with open(tmp, "rb") as f, gzip.open(os.path.join(OUT, name + ".json.gz"), "wb", 9) as g:
        shutil.copyfileobj(f, g)
    print(name, os.path.getsize(tmp), "bytes raw,",
          os.path.getsize(os.path.join(OUT, name + ".json.gz")), "gz", flush=True)


def run_eager(kind, steps, prof=None):
    tok = torch.randint(0, VOCAB, (BATCH, 1), device=dev)
    for s in range(steps):
        pos = torch.tensor([PROMPT + s], device=dev)  # small pageable H2D, as HF loops do
        if kind == "pageable_h2d":
            # the host builds the next input and a mask every step, in pageable memory
            host_tok = torch.randint(0, VOCAB, (BATCH, 1))
            host_mask = torch.ones(BATCH, TMAX, dtype=torch.long)
            tok = host_tok.to(dev)
            _ = host_mask.to(dev)
        nxt = model.step(tok, pos)
        if kind == "heavy_every4" and s % 4 == 3:
            torch.mm(heavy_a, heavy_b)  # fp32 GEMM: its own kernel, every 4th step
        if kind == "sync_item":
            # sampling on the host: a D2H copy and a stream sync every step
            _ = nxt[0, 0].item()
            tok = nxt.cpu().to(dev)
        else:
            tok = nxt
        if kind == "alloc_in_loop":
            del nxt
            torch.cuda.empty_cache()  # frees the cache: the next step calls cudaMalloc again
        if prof is not None:
            prof.step()
    torch.cuda.synchronize()  # one sync after the loop: outside the steady state


def run_graph(steps, prof=None):
    tok = torch.randint(0, VOCAB, (BATCH, 1), device=dev)
    pos = torch.tensor([PROMPT], device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            out = model.step(tok, pos)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model.step(tok, pos)
    torch.cuda.synchronize()
    def loop(n, p):
        for _ in range(n):
            g.replay()
            tok.copy_(out)
            pos.add_(1)
            if p is not None:
                p.step()
        torch.cuda.synchronize()
    loop(3, None)
    return lambda p: loop(steps, p)


acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
names = sys.argv[1:] or ["clean_eager", "clean_graph", "sync_item", "heavy_every4",
                         "alloc_in_loop", "pageable_h2d"]
print("torch", torch.__version__, torch.cuda.get_device_name(), "layers", LAYERS,
      "steps", STEPS, flush=True)
for name in names:
    if name == "clean_graph":
        go = run_graph(STEPS)
    else:
        kind = name
        run_eager(kind, 4)
        torch.cuda.synchronize()
        go = lambda p, kind=kind: run_eager(kind, STEPS, p)
    t = time.time()
    if SCHEDULE:
        # warm-up 1 + STEPS active steps: the loop runs one step more than STEPS
        STEPS_RUN = STEPS + 1
        done = []
        sched = torch.profiler.schedule(wait=0, warmup=1, active=STEPS, repeat=1)
        with profile(activities=acts, record_shapes=True, schedule=sched,
                     on_trace_ready=lambda p: done.append(save(p, "h200_decode_" + name + SUFFIX))) as prof:
            if name == "clean_graph":
                run_graph(STEPS_RUN)(prof)
            else:
                run_eager(name, STEPS_RUN, prof)
    else:
        with profile(activities=acts, record_shapes=True) as prof:
            go(prof)
        save(prof, "h200_decode_" + name + SUFFIX)
    print(name, "wall", round(time.time() - t, 3), "s", flush=True)
