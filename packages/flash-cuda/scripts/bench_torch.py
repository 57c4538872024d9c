#!/usr/bin/env python3
"""PyTorch's side of flash-cuda's timing grid, decode and per-call overhead, timed with CUDA events, for
torch's FLASH_ATTENTION backend (and cuDNN for reference); flash-cuda's side is `attn bench`.

    python3 packages/flash-cuda/scripts/bench_torch.py [--quick] [--backends flash,cudnn]
    python3 packages/flash-cuda/scripts/bench_torch.py --backward [--quick]   # fwd+bwd and bwd

TFLOP/s by FlashAttention's convention: 4*B*H*Sq*Sk*D / time, halved when causal; bwd = 2.5x that,
fwd+bwd = 3.5x. Prints one JSON line at the end (key "rows") for the notes file.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def time_gpu(fn, min_ms=300.0):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = (time.perf_counter() - t0) * 1e3
    n = max(3, min(2000, int(min_ms / max(one, 1e-3)) + 1))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    for _ in range(n):
        fn()
    end.record()
    end.synchronize()
    wall = (time.perf_counter() - t0) * 1e3 / n
    return start.elapsed_time(end) / n, wall


def backward_grid(a, dev):
    """fwd+bwd (forward, then backward of a fixed gradient) and bwd alone (backward of a retained graph)."""
    rows = []
    for name in a.backends.split(","):
        be = BACKENDS[name]
        for D in (64, 128, 256):
            for S in ((4096,) if a.quick else (1024, 4096, 16384)):
                for causal in (False, True):
                    B, H = 16384 // S, 2048 // D
                    q, k, v = (torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
                    g = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
                    f = 4 * B * H * S * S * D / (2 if causal else 1)
                    try:
                        with sdpa_kernel(be):
                            def fwdbwd():
                                out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                torch.autograd.grad(out, (q, k, v), g)
                            ms_fb, _ = time_gpu(fwdbwd)
                            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            ms_b, _ = time_gpu(lambda: torch.autograd.grad(out, (q, k, v), g, retain_graph=True))
                        tf_fb, tf_b = 3.5 * f / (ms_fb * 1e-3) / 1e12, 2.5 * f / (ms_b * 1e-3) / 1e12
                        print(f"  {name} D={D} S={S} causal={int(causal)}: fwd+bwd {ms_fb:.3f} ms {tf_fb:.1f} TFLOP/s; bwd {ms_b:.3f} ms {tf_b:.1f} TFLOP/s")
                        rows.append(dict(kind="grid-bwd", backend=name, D=D, S=S, causal=causal, fwdbwdMs=ms_fb,
                                         fwdbwdTflops=tf_fb, bwdMs=ms_b, bwdTflops=tf_b))
                        del out
                    except RuntimeError as e:
                        print(f"  {name} D={D} S={S} causal={int(causal)}: refused ({str(e).splitlines()[0]})")
                    del q, k, v, g
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--backends", default="flash,cudnn")
    ap.add_argument("--backward", action="store_true", help="time fwd+bwd and bwd on the grid instead")
    a = ap.parse_args()
    dev = torch.device("cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    if a.backward:
        rows = backward_grid(a, dev)
        print("JSON " + json.dumps(dict(device=torch.cuda.get_device_name(0), torch=torch.__version__, rows=rows)))
        return
    rows = []
    for name in a.backends.split(","):
        be = BACKENDS[name]
        for D in (64, 128, 256):
            for S in ((4096,) if a.quick else (1024, 4096, 16384)):
                for causal in (False, True):
                    B, H = 16384 // S, 2048 // D
                    q, k, v = (torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16) for _ in range(3))
                    try:
                        with sdpa_kernel(be):
                            ms, _ = time_gpu(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                        tf = 4 * B * H * S * S * D / (2 if causal else 1) / (ms * 1e-3) / 1e12
                        print(f"  {name} D={D} S={S} causal={int(causal)}: {ms:.3f} ms, {tf:.1f} TFLOP/s")
                        rows.append(dict(kind="grid", backend=name, D=D, S=S, causal=causal, ms=ms, tflops=tf))
                    except RuntimeError as e:
                        print(f"  {name} D={D} S={S} causal={int(causal)}: refused ({str(e).splitlines()[0]})")
                    del q, k, v
        B, Hq, Hk, Sk, D = 8, 32, 8, 8192, 128
        q = torch.randn(B, Hq, 1, D, device=dev, dtype=torch.bfloat16)
        k, v = (torch.randn(B, Hk, Sk, D, device=dev, dtype=torch.bfloat16) for _ in range(2))
        try:
            with sdpa_kernel(be):
                ms, wall = time_gpu(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
            gbs = 2 * B * Hk * Sk * D * 2 / (ms * 1e-3) / 1e9
            print(f"  {name} decode B=8 Hq=32 Hk=8 Sk=8192 D=128: {ms * 1e3:.1f} us GPU, {wall * 1e3:.1f} us wall, {gbs:.0f} GB/s")
            rows.append(dict(kind="decode", backend=name, us=ms * 1e3, wallUs=wall * 1e3, gbs=gbs))
        except RuntimeError as e:
            print(f"  {name} decode: refused ({str(e).splitlines()[0]})")
        q = torch.randn(1, 1, 16, 64, device=dev, dtype=torch.bfloat16)
        with sdpa_kernel(be):
            ms, wall = time_gpu(lambda: F.scaled_dot_product_attention(q, q, q), 500)
        print(f"  {name} per-call overhead B=1 H=1 S=16 D=64: {wall * 1e3:.1f} us wall")
        rows.append(dict(kind="overhead", backend=name, wallUs=wall * 1e3))
    print("JSON " + json.dumps(dict(device=torch.cuda.get_device_name(0), torch=torch.__version__, rows=rows)))


if __name__ == "__main__":
    main()
