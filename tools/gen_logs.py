#!/usr/bin/env python3
"""Writes server-log inputs for `latdoc logs` tests and benchmarks.

  tools/gen_logs.py golden DIR      the golden input excerpts of tests/data/logs/ (deterministic)
  tools/gen_logs.py bench [--bytes N] [--seed S]
                                    a large vLLM V1 log on stdout (stats, request logging,
                                    access lines, warnings), e.g. `... bench --bytes 5G | latdoc logs -`

Every line is written from vLLM's sources (vllm-project/vllm: vllm/logger.py and
vllm/logging_utils/formatter.py for the prefix, ~v0.10.1+; vllm/v1/metrics/loggers.py for the
V1 stats line, ~v0.10 @005a810bc4 and ~v0.12; vllm/engine/metrics.py @00c33e81 for the V0 stats
line; vllm/core/scheduler.py for the V0 preemption warning; vllm/entrypoints/logger.py
@01ff126294 for request logging) and uvicorn's default access formatter, and from llama.cpp's server sources (tools/server: SRV_INF/SLT_INF prefixes, print_timings,
log_server_request; common/log.cpp prefix "M.SS.mmm.uuu I "). None of it was captured from a
real server; messages outside those formats are illustrative.
"""
import os
import random
import sys

CYAN, GREEN, YELLOW, RED, GREY, RESET = "\x1b[36m", "\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[90m", "\x1b[0m"

MONTH_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def stamp(month, day, t):
    """'MM-DD HH:MM:SS' for t seconds after midnight of month-day (wraps days/months)."""
    t = int(t)
    day += t // 86400
    t %= 86400
    while day > MONTH_DAYS[month - 1]:
        day -= MONTH_DAYS[month - 1]
        month = month % 12 + 1
    return "%02d-%02d %02d:%02d:%02d" % (month, day, t // 3600, t // 60 % 60, t % 60)


def v1_stats(engine, prompt, gen, running, waiting, kv, hit, preempt=0):
    parts = ["Avg prompt throughput: %.1f tokens/s" % prompt,
             "Avg generation throughput: %.1f tokens/s" % gen,
             "Running: %d reqs" % running, "Waiting: %d reqs" % waiting]
    if preempt:
        parts.append("Preemptions: %d" % preempt)
    parts += ["GPU KV cache usage: %.1f%%" % kv, "Prefix cache hit rate: %.1f%%" % hit]
    return "Engine %03d: " % engine + ", ".join(parts)


def sampling_params(max_tokens):
    return ("SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, repetition_penalty=1.0, "
            "temperature=0.0, top_p=1.0, top_k=0, min_p=0.0, seed=None, stop=[], stop_token_ids=[], "
            "bad_words=[], include_stop_str_in_output=False, ignore_eos=True, max_tokens=%d, "
            "min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, "
            "spaces_between_special_tokens=True, truncate_prompt_tokens=None, guided_decoding=None, "
            "extra_args=None)" % max_tokens)


def req_id(rng):
    return "cmpl-%032x-0" % rng.getrandbits(128)


def v1_plain(out):
    """vLLM V1 as `latdoc sim --log-file` writes it: no process prefix, no colour."""
    rng = random.Random(1)
    L = lambda t, lvl, src, msg: out.append("%s %s [%s] %s" % (lvl, stamp(6, 25, 21 * 3600 + 50 * 60 + t), src, msg))
    L(0, "INFO", "api_server.py:1880", "vLLM API server version 0.10.1")
    # The flags as vLLM 0.10 prints them (entrypoints/utils.py), its API key verbatim.
    L(0, "INFO", "utils.py:328", "non-default args: {'model_tag': 'meta-llama/Llama-3.1-8B-Instruct', "
      "'api_key': ['sk-golden-do-not-print'], 'enable_log_requests': True, 'max_num_seqs': 512, "
      "'max_num_batched_tokens': 32768, 'enable_prefix_caching': False}")
    L(0, "INFO", "arg_utils.py:1285", "Chunked prefill is enabled with max_num_batched_tokens=8192.")
    out.append("INFO:     Started server process [4242]")
    out.append("INFO:     Waiting for application startup.")
    out.append("INFO:     Application startup complete.")
    # (t, prompt, gen, running, waiting, kv, hit, preemptions)
    stats = [
        (10, 5120.4, 310.2, 8, 0, 10.5, 0.0, 0), (20, 6210.0, 540.8, 16, 0, 18.2, 12.5, 0),
        (30, 7010.3, 780.1, 24, 0, 27.9, 20.1, 0), (40, 7420.8, 910.6, 32, 0, 39.4, 24.0, 0),
        (50, 7800.2, 1210.4, 40, 0, 61.0, 25.5, 0), (60, 8010.7, 1400.2, 48, 5, 91.2, 26.0, 0),
        (70, 7990.1, 1350.6, 48, 12, 95.3, 26.1, 0), (80, 7005.5, 1200.3, 48, 20, 98.0, 26.3, 0),
        (90, 6120.9, 1100.0, 48, 31, 99.2, 26.2, 3), (100, 6900.4, 1250.7, 48, 25, 97.1, 26.4, 2),
        (110, 7600.0, 1380.9, 48, 9, 92.4, 26.6, 0), (120, 5210.6, 1300.5, 40, 0, 70.3, 26.8, 0),
        (130, 4100.2, 1150.1, 36, 0, 60.8, 27.0, 0),
        # the process stalls here: the line due at 140 s comes at 175 s
        (175, 1800.5, 800.3, 20, 0, 40.2, 27.1, 0), (185, 610.0, 400.9, 10, 0, 20.4, 27.1, 0),
        (195, 0.0, 100.2, 0, 0, 1.0, 27.1, 0), (205, 0.0, 0.0, 0, 0, 0.0, 27.1, 0),
    ]
    prev = 0
    for (t, p, g, r, w, kv, hit, pre) in stats:
        # Three requests per interval: request logging, engine hand-off, access line.
        if t <= 130:
            for k in range(3):
                rt = prev + 1 + k * 3
                rid = req_id(rng)
                L(rt, "INFO", "logger.py:43", "Received request %s: params: %s, lora_request: None." % (rid, sampling_params(128)))
                L(rt, "INFO", "async_llm.py:301", "Added request %s." % rid)
                out.append('INFO:     127.0.0.1:%d - "POST /v1/completions HTTP/1.1" 200 OK' % (40000 + rng.randrange(20000)))
        if t == 70:
            L(64, "WARNING", "protocol.py:64", "The following fields were present in the request but ignored: {'foo_field'}")
            L(66, "WARNING", "protocol.py:64", "The following fields were present in the request but ignored: {'bar_field'}")
        if t == 110:
            for k in range(2):
                rid = req_id(rng)
                L(103 + k, "ERROR", "serving_completion.py:412", "Request %s failed with an internal error during generation" % rid)
                out.append('INFO:     127.0.0.1:%d - "POST /v1/completions HTTP/1.1" 500 Internal Server Error' % (40000 + rng.randrange(20000)))
        if t == 175:
            # During the stall only untimed access lines (the event loop answered probes).
            out.append('INFO:     127.0.0.1:%d - "GET /metrics HTTP/1.1" 200 OK' % (40000 + rng.randrange(20000)))
            out.append('INFO:     127.0.0.1:%d - "GET /health HTTP/1.1" 200 OK' % (40000 + rng.randrange(20000)))
        L(t, "INFO", "loggers.py:123", v1_stats(0, p, g, r, w, kv, hit, pre))
        prev = t


def v1_apiserver_color(out):
    """vLLM >= 0.10.1 multiprocess prefixes, ANSI colours, VLLM_LOGGING_LEVEL=DEBUG, a traceback."""
    def L(proc, pid, t, lvl, src, msg):
        col = {"INFO": GREEN, "DEBUG": GREY, "WARNING": YELLOW, "ERROR": RED}[lvl]
        out.append("%s(%s pid=%d)%s %s%s%s %s%s%s %s[%s]%s %s" % (
            CYAN, proc, pid, RESET, col, lvl, RESET, GREY, stamp(8, 20, 10 * 3600 + t), RESET,
            GREY, src, RESET, msg))
    A, E = "APIServer", "EngineCore_DP0"
    L(A, 101, 0, "INFO", "entrypoints/openai/api_server.py:1880", "vLLM API server version 0.10.1.1")
    L(A, 101, 0, "INFO", "entrypoints/utils.py:328", "non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
      "'uvicorn_log_level': 'debug', 'compilation_config': CompilationConfig(level=3, "
      "cudagraph_mode=<CUDAGraphMode.NONE: 0>, cudagraph_capture_sizes=[1, 2, 4, 8])}")
    L(E, 188, 1, "DEBUG", "v1/engine/core.py:709", "EngineCore waiting for work.")
    out.append(CYAN + "(APIServer pid=101)" + RESET + " INFO:     Application startup complete.")
    stats = [(10, 820.0, 95.5, 4, 0, 3.1, 0.0), (20, 900.1, 180.2, 6, 0, 5.0, 33.3),
             (30, 860.7, 170.4, 6, 0, 5.2, 40.0), (40, 0.0, 40.2, 0, 0, 0.0, 40.0)]
    for i, (t, p, g, r, w, kv, hit) in enumerate(stats):
        for k in range(2):
            out.append('%s(APIServer pid=101)%s INFO:     10.0.0.7:%d - "POST /v1/chat/completions HTTP/1.1" 200 OK' % (CYAN, RESET, 51000 + i * 2 + k))
            L(E, 188, t - 5 + k, "DEBUG", "v1/core/sched/scheduler.py:1001", "Scheduled %d new requests, %d running." % (1 + k, r))
        out.append('%s(APIServer pid=101)%s INFO:     10.0.0.9:60001 - "GET /metrics HTTP/1.1" 200 OK' % (CYAN, RESET))
        L(A, 101, t, "INFO", "v1/metrics/loggers.py:123", v1_stats(0, p, g, r, w, kv, hit))
    # Idle: the stats line drops to DEBUG.
    L(A, 101, 50, "DEBUG", "v1/metrics/loggers.py:123", v1_stats(0, 0.0, 0.0, 0, 0, 0.0, 40.0))
    L(A, 101, 55, "WARNING", "v1/engine/async_llm.py:420", "Engine core process died unexpectedly, shutting down")
    L(E, 188, 55, "ERROR", "v1/engine/core.py:720", "EngineCore encountered a fatal error.")
    for line in ["Traceback (most recent call last):",
                 '  File "/usr/lib/python3/dist-packages/vllm/v1/engine/core.py", line 711, in run_engine_core',
                 "    engine_core.run_busy_loop()",
                 '  File "/usr/lib/python3/dist-packages/vllm/v1/engine/core.py", line 738, in run_busy_loop',
                 "    self._process_engine_step()",
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB"]:
        out.append("%s(EngineCore_DP0 pid=188)%s %s" % (CYAN, RESET, line))
    L(A, 101, 56, "ERROR", "entrypoints/openai/serving_chat.py:1102", "Request chatcmpl-7f1c2a failed with an internal error during generation")


def v0(out):
    """vLLM V0 (2024 prefix without '['), stats every 5 s, prefix-cache line, preemption warnings."""
    rng = random.Random(3)
    L = lambda t, lvl, src, msg: out.append("%s %s %s] %s" % (lvl, stamp(5, 2, 14 * 3600 + 10 * 60 + t), src, msg))
    L(0, "INFO", "api_server.py:212", "vLLM API server version 0.6.3")
    stats = [(5, 2210.3, 120.4, 6, 0, 0, 40.1), (10, 2980.7, 260.1, 14, 0, 0, 78.3),
             (15, 3010.2, 300.8, 20, 4, 0, 96.2), (20, 2500.9, 280.5, 20, 9, 1, 99.0),
             (25, 2890.4, 310.2, 20, 3, 0, 93.5), (30, 1200.0, 250.7, 12, 0, 0, 55.0),
             (35, 0.0, 90.1, 2, 0, 0, 8.0)]
    for (t, p, g, r, w, sw, kv) in stats:
        rid = req_id(rng)
        L(t - 3, "INFO", "logger.py:37", "Received request %s: prompt: 'Hello, my name is', params: %s, prompt_token_ids: [1, 15043, 29892, 590, 1024, 338], lora_request: None, prompt_adapter_request: None." % (rid, sampling_params(64)))
        L(t - 3, "INFO", "async_llm_engine.py:207", "Added request %s." % rid)
        out.append('INFO:     127.0.0.1:%d - "POST /v1/completions HTTP/1.1" 200 OK' % (40000 + rng.randrange(20000)))
        if t == 15:
            L(14, "WARNING", "scheduler.py:1089", "Sequence group %s is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=1" % req_id(rng))
        if t == 25:
            L(22, "WARNING", "scheduler.py:1089", "Sequence group %s is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=51" % req_id(rng))
        L(t, "INFO", "metrics.py:351", "Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Swapped: %d reqs, Pending: %d reqs, GPU KV cache usage: %.1f%%, CPU KV cache usage: 0.0%%." % (p, g, r, sw, w, kv))
        L(t, "INFO", "metrics.py:367", "Prefix cache hit rate: GPU: %.2f%%, CPU: 0.00%%" % (10.0 + t))
        L(t, "INFO", "async_llm_engine.py:179", "Finished request %s." % rid)


def journal(out):
    """journalctl -u vllm (short format) around vLLM V1 lines; access lines take the journal's time."""
    J = lambda t, msg: out.append("Jun 25 %s gpu-node-3 vllm[4242]: %s" % (stamp(6, 25, 9 * 3600 + t)[6:], msg))
    J(0, "INFO 06-25 09:00:00 [api_server.py:1880] vLLM API server version 0.10.1")
    for i, t in enumerate(range(10, 70, 10)):
        for k in range(4):
            J(t - 6 + k, 'INFO:     127.0.0.1:%d - "POST /v1/completions HTTP/1.1" 200 OK' % (41000 + i * 4 + k))
        J(t, "INFO 06-25 %s [loggers.py:123] %s" % (stamp(6, 25, 9 * 3600 + t)[6:],
                                                      v1_stats(0, 1000.0 + t, 200.0 + t, 4 + i, 0, 10.0 + i, 50.0)))


def llamacpp(out):
    """llama.cpp server with --log-prefix --log-timestamps (common/log.cpp)."""
    T = lambda us: "%d.%02d.%03d.%03d" % (us // 60000000, us // 1000000 % 60, us // 1000 % 1000, us % 1000)
    L = lambda us, lvl, msg: out.append("%s %s %s" % (T(us), lvl, msg))
    L(512, "I", "build: 4567 (a1b2c3d4) with cc (Debian 12.2.0-14) 12.2.0 for x86_64-linux-gnu")
    L(1010, "I", "main: server is listening on http://127.0.0.1:8080 - starting the main loop")
    L(1020, "I", "srv  update_slots: all slots are idle")
    t = 5000000
    timings = [(26, 45.21, 128, 2176.33), (310, 190.70, 256, 4410.90), (48, 60.02, 64, 1090.11)]
    for task, (pn, pms, gn, gms) in enumerate(timings):
        L(t, "I", "slot launch_slot_: id  0 | task %d | processing task" % task)
        L(t + 70, "I", "slot update_slots: id  0 | task %d | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = %d" % (task, pn))
        t += int((pms + gms) * 1000)
        L(t, "I", "slot      release: id  0 | task %d | stop processing: n_past = %d, truncated = 0" % (task, pn + gn))
        L(t + 50, "I", "slot print_timing: id  0 | task %d | " % task)
        out.append("prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)" % (pms, pn, pms / pn, 1e3 * pn / pms))
        out.append("       eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)" % (gms, gn, gms / gn, 1e3 * gn / gms))
        out.append("      total time = %10.2f ms / %5d tokens" % (pms + gms, pn + gn))
        L(t + 120, "I", "srv  update_slots: all slots are idle")
        L(t + 300, "I", "srv  log_server_r: request: POST /completion 127.0.0.1 200")
        t += 1500000
    L(t, "W", "srv  params_from_: n_probs is not supported with this model, ignoring")
    L(t + 10, "E", "srv    send_error: task id = 3, error: the request exceeds the available context size, try increasing it")
    L(t + 20, "I", "srv  log_server_r: request: POST /completion 127.0.0.1 400")


def bad_input(out):
    """Valid vLLM lines mixed with binary garbage, unknown text and a cut-off last line."""
    L = lambda t, msg: out.append("INFO %s [loggers.py:123] %s" % (stamp(6, 25, 21 * 3600 + t), msg))
    L(10, v1_stats(0, 100.0, 50.0, 2, 0, 5.0, 0.0))
    out.append("\x00\x01\x02binary\x00garbage\xff\xfe")
    out.append("this line is in no known format")
    out.append("\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13")
    L(20, v1_stats(0, 110.0, 55.0, 2, 0, 5.5, 0.0))
    L(30, "Engine 000: Avg prompt throughput: abc tokens/s, Running: x reqs")
    out.append("+++ 12 34 ??? another unknown line")
    L(40, v1_stats(0, 0.0, 0.0, 0, 0, 0.0, 0.0))
    return "INFO 06-25 21:00:50 [loggers.py:123] Engine 000: Avg prompt throu"   # no '\n'


def write(path, lines, tail=None):
    data = "\n".join(lines) + "\n" + (tail or "")
    with open(path, "w", encoding="latin-1", newline="") as f:
        f.write(data)


def golden(d):
    os.makedirs(d, exist_ok=True)
    for name, fn in [("vllm_v1_plain.log", v1_plain), ("vllm_v1_apiserver_color.log", v1_apiserver_color),
                     ("vllm_v0.log", v0), ("vllm_journal.log", journal), ("llamacpp_server.log", llamacpp)]:
        lines = []
        fn(lines)
        write(os.path.join(d, name), lines)
    lines = []
    tail = bad_input(lines)
    write(os.path.join(d, "bad_input.log"), lines, tail)


def parse_bytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


def bench(total, seed):
    """Writes about `total` bytes of a busy vLLM V1 log: per second ~40 requests (request
    logging + access line), a stats line every 10 s, a warning now and then."""
    rng = random.Random(seed)
    out = sys.stdout.buffer
    written = 0
    t = 0
    params = sampling_params(128)
    while written < total:
        chunk = []
        for sec in range(10):
            st = stamp(6, 25, t + sec)
            for _ in range(40):
                rid = "cmpl-%032x-0" % rng.getrandbits(128)
                chunk.append("INFO %s [logger.py:43] Received request %s: params: %s, lora_request: None.\n" % (st, rid, params))
                chunk.append("INFO %s [async_llm.py:301] Added request %s.\n" % (st, rid))
                chunk.append('INFO:     127.0.0.1:%d - "POST /v1/completions HTTP/1.1" 200 OK\n' % (40000 + rng.randrange(20000)))
            if rng.random() < 0.05:
                chunk.append("WARNING %s [protocol.py:64] The following fields were present in the request but ignored: {'x%d'}\n" % (st, rng.randrange(9)))
        t += 10
        chunk.append("INFO %s [loggers.py:123] %s\n" % (stamp(6, 25, t), v1_stats(
            0, rng.uniform(1000, 9000), rng.uniform(100, 2000), rng.randrange(64), rng.randrange(8),
            rng.uniform(10, 99), rng.uniform(0, 60))))
        data = "".join(chunk).encode()
        if written + len(data) > total:
            data = data[:total - written]
        out.write(data)
        written += len(data)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "golden":
        golden(sys.argv[2])
    elif len(sys.argv) >= 2 and sys.argv[1] == "bench":
        total, seed = 64 << 20, 7
        args = sys.argv[2:]
        for i, a in enumerate(args):
            if a == "--bytes":
                total = parse_bytes(args[i + 1])
            if a == "--seed":
                seed = int(args[i + 1])
        try:
            bench(total, seed)
        except BrokenPipeError:
            pass
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
