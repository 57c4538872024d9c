#!/usr/bin/env python3
"""torch's CPU SDPA on the shapes of bench-cpu-flash.mjs, as the same JSON lines.

    python3 packages/cpu/scripts/torch_cpu_bench.py --threads 2,16 > torch.jsonl

FLOPs: 4*B*H*Sq*Sk*D, halved when causal. Median wall time of --reps calls after two warm-ups,
with torch.set_num_threads(n). The flash CPU kernel is requested explicitly (it is torch's
default on the CPU for these inputs); --any-backend lets torch choose.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default=f"2,{os.cpu_count()}")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--shape", default="1,8,1024,64")
    ap.add_argument("--causal", default="false,true")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--any-backend", action="store_true")
    a = ap.parse_args()
    B, H, S, D = (int(x) for x in a.shape.split(","))
    threads = [int(x) for x in a.threads.split(",")]
    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # older torch
        capability = "unknown"
    print(json.dumps({"machine": {"torch": torch.__version__, "cpu_capability": capability,
                                  "logicalCpus": os.cpu_count()}, "shape": {"B": B, "H": H, "S": S, "D": D},
                      "threads": threads, "reps": a.reps}), flush=True)
    for dtype_name in a.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for causal in (c == "true" for c in a.causal.split(",")):
            g = torch.Generator().manual_seed(1)
            q, k, v = (torch.randn(B, H, S, D, generator=g, dtype=torch.float32).to(dtype) for _ in range(3))
            flops = 4 * B * H * S * S * D / (2 if causal else 1)
            for n in threads:
                torch.set_num_threads(n)

                def call() -> None:
                    if a.any_backend:
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    else:
                        from torch.nn.attention import SDPBackend, sdpa_kernel
                        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                with torch.no_grad():
                    for _ in range(2):
                        call()
                    ts = []
                    for _ in range(a.reps):
                        t0 = time.perf_counter()
                        call()
                        ts.append((time.perf_counter() - t0) * 1e3)
                ms = statistics.median(ts)
                print(json.dumps({"impl": "torch", "dtype": dtype_name, "causal": causal, "B": B, "H": H, "S": S, "D": D,
                                  "threads": n, "ms": round(ms, 3), "msMin": round(min(ts), 3),
                                  "gflops": round(flops / ms / 1e6, 1)}), flush=True)


if __name__ == "__main__":
    main()
