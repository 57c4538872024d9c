#!/usr/bin/env python3
"""PyTorch's efficient (mem-eff) SDPA backend on memeff-cuda's timing grid.

    python3 packages/cutlass-memeff/scripts/torch-efficient.py [--iters 5]

A warm-up call, then mean wall time over `iters` calls between synchronizations; FLOPs by
FlashAttention's convention: fwd = 4*B*H*S*S*D (halved when causal), fwd+bwd = 3.5x. The side-by-side
with memeff-cuda is `attn bench --compare torch`.
"""
import argparse
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

GRID = [
    dict(dtype="bfloat16", D=64, S=1024), dict(dtype="bfloat16", D=64, S=4096),
    dict(dtype="bfloat16", D=128, S=1024), dict(dtype="bfloat16", D=128, S=4096),
    dict(dtype="bfloat16", D=128, S=4096, causal=True), dict(dtype="bfloat16", D=128, S=4096, bias=True),
    dict(dtype="float16", D=128, S=4096), dict(dtype="float32", D=64, S=1024), dict(dtype="float32", D=128, S=4096),
    dict(dtype="float32", D=128, S=4096, bias=True), dict(dtype="bfloat16", D=80, S=2048),
]


def timed(fn, iters):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    dev = torch.cuda.get_device_properties(0)
    print(f"torch {torch.__version__} on {dev.name} (sm_{dev.major}{dev.minor}); backend EFFICIENT_ATTENTION")
    for g in GRID:
        dt = getattr(torch, g["dtype"])
        D, S = g["D"], g["S"]
        H, B = 2048 // D, max(1, 16384 // S)
        causal = g.get("causal", False)
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dt, requires_grad=True) for _ in range(3))
        bias = torch.randn(1, H, S, S, device="cuda", dtype=dt, requires_grad=True) if g.get("bias") else None
        dout = torch.randn(B, H, S, D, device="cuda", dtype=dt)
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        label = f"{g['dtype']:9} B={B} H={H} S={S} D={D}{' causal' if causal else ''}{' bias[1,H,S,S]' if bias is not None else ''}"
        try:
            with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
                def fwd():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal)

                def fwdbwd():
                    o = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal)
                    o.backward(dout)

                tf = timed(fwd, args.iters)
                tfb = timed(fwdbwd, max(1, args.iters // 2 + 1))
            print(f"{label}: fwd {flops / tf / 1e12:.1f} TFLOP/s ({tf * 1e3:.2f} ms), fwd+bwd {3.5 * flops / tfb / 1e12:.1f} TFLOP/s ({tfb * 1e3:.2f} ms)")
        except RuntimeError as e:  # e.g. no kernel for this combination
            print(f"{label}: torch efficient refused: {str(e).splitlines()[0]}")
        del q, k, v, bias, dout
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
