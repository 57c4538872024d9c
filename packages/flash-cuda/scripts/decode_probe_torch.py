"""torch's side of scripts/decode-probe.mjs: the same decode call, timed the same three ways.

  python3 packages/flash-cuda/scripts/decode_probe_torch.py [--ncu]
"""
import statistics
import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa

B, HQ, HK, SK, D = 8, 32, 8, 8192, 128
sets = []
for i in range(4):
    q = torch.randn(B, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, HK, SK, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(B, HK, SK, D, device="cuda", dtype=torch.bfloat16)
    sets.append((q, k, v))

for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
    with sdpa_kernel([backend]):
        call = lambda s: sdpa(*s, enable_gqa=True)
        if "--ncu" in sys.argv:
            for i in range(60):
                call(sets[i % 4])
            torch.cuda.synchronize()
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        host, dev = [], []
        for i in range(70):
            torch.cuda.synchronize()
            start.record()
            t0 = time.perf_counter()
            call(sets[i % 4])
            t1 = time.perf_counter()
            end.record()
            end.synchronize()
            if i >= 10:
                host.append((t1 - t0) * 1e6)
                dev.append(start.elapsed_time(end) * 1e3)
        for _ in range(10):
            call(sets[0])
        torch.cuda.synchronize()
        start.record()
        for _ in range(200):
            call(sets[0])
        end.record()
        end.synchronize()
        loop = start.elapsed_time(end) * 1e3 / 200
        print(f"torch {name}: host {statistics.median(host):.1f} us, single {statistics.median(dev):.1f} us, loop {loop:.1f} us")
