#!/usr/bin/env python3
"""Writes vllm_v1_before.prom and vllm_v1_after.prom: two /metrics pages of a vLLM V1 server
(~v0.11, two data-parallel engines) taken before and after a benchmark run.

These pages are SYNTHETIC: written from vLLM's vllm/v1/metrics/loggers.py (vllm-project/vllm,
~v0.10 @005a810bc4 and ~v0.11: names, HELP texts, types, labels, bucket bounds) in prometheus_client's text format (labels sorted by
name, floats as Python repr, +Inf, _created series), not captured from a running server.
The numbers are chosen so the deltas can be checked by hand; servermetrics/
server_snapshot_test.cc states the expected values. Run from this folder:
    python3 make_vllm_pages.py
"""

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
CREATED = 1764460000.123

TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
               7.5, 10.0, 20.0, 40.0, 80.0]
REQ_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
ITER_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
TOKEN_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]

# Per engine ("0", "1"), per page: {metric: value} for gauges and counters, and for
# histograms {le: cumulative count} (bounds not listed take the previous count), sum.
PAGES = {
    "before": {
        "0": dict(running=0.0, waiting=0.0, kv=0.0, preempt=0.0, prompt=6144.0, gen=768.0,
                  success={"length": 6.0, "stop": 0.0, "abort": 0.0}, pc_q=6144.0, pc_h=0.0,
                  ttft=({0.01: 1, 0.02: 3, 0.04: 6}, 0.15),
                  queue=({0.3: 6}, 0.3),
                  prefill=({0.3: 6}, 0.12), decode=({2.0: 6}, 9.0), inference=({2.0: 6}, 9.12),
                  e2e=({2.0: 6}, 9.9), itl=({0.01: 700, 0.025: 762}, 9.0),
                  tpot=({0.025: 6}, 0.0714), iter=({1: 10, 8: 700, 16: 770, 1024: 776}, 6912.0)),
        "1": dict(running=0.0, waiting=0.0, kv=0.0, preempt=0.0, prompt=4096.0, gen=512.0,
                  success={"length": 4.0, "stop": 0.0, "abort": 0.0}, pc_q=4096.0, pc_h=0.0,
                  ttft=({0.01: 1, 0.02: 2, 0.04: 4}, 0.10),
                  queue=({0.3: 4}, 0.2),
                  prefill=({0.3: 4}, 0.08), decode=({2.0: 4}, 6.0), inference=({2.0: 4}, 6.08),
                  e2e=({2.0: 4}, 6.6), itl=({0.01: 450, 0.025: 508}, 6.0),
                  tpot=({0.025: 4}, 0.0476), iter=({1: 6, 8: 470, 16: 512, 1024: 516}, 4608.0)),
    },
    "after": {
        "0": dict(running=7.0, waiting=2.0, kv=0.42, preempt=2.0, prompt=26624.0, gen=3328.0,
                  success={"length": 25.0, "stop": 1.0, "abort": 0.0}, pc_q=26624.0, pc_h=1024.0,
                  ttft=({0.01: 1, 0.02: 5, 0.04: 16, 0.06: 25, 0.08: 26}, 0.95),
                  queue=({0.3: 16, 0.5: 21, 0.8: 25, 1.0: 26}, 6.5),
                  prefill=({0.3: 26}, 0.62), decode=({2.0: 10, 2.5: 20, 5.0: 26}, 62.0),
                  inference=({2.0: 6, 2.5: 20, 5.0: 26}, 62.62),
                  e2e=({2.0: 6, 2.5: 14, 5.0: 26}, 72.5), itl=({0.01: 700, 0.025: 3000, 0.05: 3302}, 70.0),
                  tpot=({0.025: 10, 0.05: 26}, 0.56), iter=({1: 30, 8: 1500, 16: 3000, 1024: 3382}, 29952.0)),
        "1": dict(running=5.0, waiting=1.0, kv=0.38, preempt=1.0, prompt=24576.0, gen=3072.0,
                  success={"length": 23.0, "stop": 0.0, "abort": 1.0}, pc_q=24576.0, pc_h=1024.0,
                  ttft=({0.01: 1, 0.02: 4, 0.04: 14, 0.06: 23, 0.08: 24}, 0.90),
                  queue=({0.3: 14, 0.5: 19, 0.8: 23, 1.0: 24}, 5.5),
                  prefill=({0.3: 24}, 0.58), decode=({2.0: 8, 2.5: 18, 5.0: 24}, 56.0),
                  inference=({2.0: 4, 2.5: 18, 5.0: 24}, 56.58),
                  e2e=({2.0: 4, 2.5: 12, 5.0: 24}, 65.5), itl=({0.01: 450, 0.025: 2800, 0.05: 3048}, 64.0),
                  tpot=({0.025: 8, 0.05: 24}, 0.50), iter=({1: 20, 8: 1400, 16: 2900, 1024: 3124}, 27648.0)),
    },
}


def fmt(v):
    if v == float("inf"):
        return "+Inf"
    return repr(float(v))


def labels(d):
    return "{" + ",".join('%s="%s"' % (k, v) for k, v in sorted(d.items())) + "}"


def page(which):
    out = []
    w = out.append
    # The Python process metrics prometheus_client adds to every page.
    w("# HELP python_gc_objects_collected_total Objects collected during gc")
    w("# TYPE python_gc_objects_collected_total counter")
    for g, n in (("0", 18031.0), ("1", 4473.0), ("2", 1250.0)):
        w('python_gc_objects_collected_total{generation="%s"} %s' % (g, fmt(n)))
    w("# HELP python_info Python platform information")
    w("# TYPE python_info gauge")
    w('python_info{implementation="CPython",major="3",minor="12",patchlevel="11",version="3.12.11"} 1.0')
    w("# HELP process_resident_memory_bytes Resident memory size in bytes.")
    w("# TYPE process_resident_memory_bytes gauge")
    w("process_resident_memory_bytes 2.718326784e+09")
    w("# HELP process_open_fds Number of open file descriptors.")
    w("# TYPE process_open_fds gauge")
    w("process_open_fds 87.0")

    engines = PAGES[which]

    def gauge(name, help_text, key):
        w("# HELP %s %s" % (name, help_text))
        w("# TYPE %s gauge" % name)
        for e, d in engines.items():
            w("%s%s %s" % (name, labels({"engine": e, "model_name": MODEL}), fmt(d[key])))

    def counter(name, help_text, key):
        w("# HELP %s_total %s" % (name, help_text))
        w("# TYPE %s_total counter" % name)
        for e, d in engines.items():
            w("%s_total%s %s" % (name, labels({"engine": e, "model_name": MODEL}), fmt(d[key])))
        for e in engines:
            w("%s_created%s %s" % (name, labels({"engine": e, "model_name": MODEL}), fmt(CREATED)))

    def histogram(name, help_text, bounds, key):
        w("# HELP %s %s" % (name, help_text))
        w("# TYPE %s histogram" % name)
        for e, d in engines.items():
            cum, total = d[key]
            lab = {"engine": e, "model_name": MODEL}
            last = 0
            for b in bounds + [float("inf")]:
                last = cum.get(b, last)
                w("%s_bucket%s %s" % (name, labels(dict(lab, le=fmt(b))), fmt(last)))
            w("%s_count%s %s" % (name, labels(lab), fmt(last)))
            w("%s_sum%s %s" % (name, labels(lab), fmt(total)))
        for e in engines:
            w("%s_created%s %s" % (name, labels({"engine": e, "model_name": MODEL}), fmt(CREATED)))

    gauge("vllm:num_requests_running", "Number of requests in model execution batches.", "running")
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", "waiting")
    gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "kv")
    counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", "pc_q")
    counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", "pc_h")
    counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", "preempt")
    counter("vllm:prompt_tokens", "Number of prefill tokens processed.", "prompt")
    counter("vllm:generation_tokens", "Number of generation tokens processed.", "gen")
    w("# HELP vllm:request_success_total Count of successfully processed requests.")
    w("# TYPE vllm:request_success_total counter")
    for e, d in engines.items():
        for reason in ("stop", "length", "abort"):
            w("vllm:request_success_total%s %s" % (
                labels({"engine": e, "finished_reason": reason, "model_name": MODEL}),
                fmt(d["success"][reason])))
    for e in engines:
        for reason in ("stop", "length", "abort"):
            w("vllm:request_success_created%s %s" % (
                labels({"engine": e, "finished_reason": reason, "model_name": MODEL}), fmt(CREATED)))
    histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
              ITER_BUCKETS, "iter")
    histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              TTFT_BUCKETS, "ttft")
    histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              ITL_BUCKETS, "itl")
    histogram("vllm:request_time_per_output_token_seconds",
              "Histogram of time_per_output_token_seconds per request.", ITL_BUCKETS, "tpot")
    histogram("vllm:e2e_request_latency_seconds",
              "Histogram of e2e request latency in seconds.", REQ_BUCKETS, "e2e")
    histogram("vllm:request_queue_time_seconds",
              "Histogram of time spent in WAITING phase for request.", REQ_BUCKETS, "queue")
    histogram("vllm:request_inference_time_seconds",
              "Histogram of time spent in RUNNING phase for request.", REQ_BUCKETS, "inference")
    histogram("vllm:request_prefill_time_seconds",
              "Histogram of time spent in PREFILL phase for request.", REQ_BUCKETS, "prefill")
    histogram("vllm:request_decode_time_seconds",
              "Histogram of time spent in DECODE phase for request.", REQ_BUCKETS, "decode")
    w("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig")
    w("# TYPE vllm:cache_config_info gauge")
    for e in engines:
        w("vllm:cache_config_info%s 1.0" % labels({
            "block_size": "16", "cache_dtype": "auto", "calculate_kv_scales": "False",
            "enable_prefix_caching": "True", "engine": e, "gpu_memory_utilization": "0.9",
            "num_cpu_blocks": "None", "num_gpu_blocks": "27710", "prefix_caching_hash_algo": "sha256",
            "swap_space": "4"}))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    for which in ("before", "after"):
        with open("vllm_v1_%s.prom" % which, "w") as f:
            f.write(page(which))
