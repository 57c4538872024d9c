"""torch's side of scripts/profile-call.mjs: one SDPA call (forward, or forward then backward) on one backend
and nothing else, for a kernel profiler (scripts/ncu-vs-cudnn.sh).

  python3 packages/flash-cuda/scripts/profile_call_torch.py [--backend cudnn|flash|efficient] [--batch 4]
      [--heads 16] [--seq 4096] [--dim 128] [--causal] [--mode fwd|fwdbwd]
"""
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}
p = argparse.ArgumentParser()
p.add_argument("--backend", default="cudnn", choices=BACKENDS)
p.add_argument("--batch", type=int, default=4)
p.add_argument("--heads", type=int, default=16)
p.add_argument("--seq", type=int, default=4096)
p.add_argument("--dim", type=int, default=128)
p.add_argument("--causal", action="store_true")
p.add_argument("--mode", default="fwdbwd", choices=["fwd", "fwdbwd"])
a = p.parse_args()
shape = (a.batch, a.heads, a.seq, a.dim)
grad = a.mode == "fwdbwd"
q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=grad) for _ in range(3))
g = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
with sdpa_kernel([BACKENDS[a.backend]]):
    out = sdpa(q, k, v, is_causal=a.causal)
    if grad:
        out.backward(g)
torch.cuda.synchronize()
print(f"profile_call_torch: {a.backend} {a.mode} {list(shape)} bf16{' causal' if a.causal else ''} done")
