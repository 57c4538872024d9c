"""torch's side of scripts/tiny-bench.mjs: the same small calls with torch's SDPA (bf16), per backend (flash,
efficient, cuDNN), L calls captured into one torch.cuda.CUDAGraph, events around STEPS replays; per call =
per replay / L.

  python3 packages/flash-cuda/scripts/tiny_bench_torch.py [--json out.json]
"""
import json
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa

L, STEPS = 32, 200
SHAPES = [
    dict(name="decode-like", B=1, H=1, Sq=1, Sk=16, D=64),
    dict(name="tiny", B=1, H=1, Sq=16, Sk=16, D=64),
]
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def replay_us(g):
    for _ in range(10):
        g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(STEPS):
        g.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / (STEPS * L)


rows = []
o = dict(device="cuda", dtype=torch.bfloat16)
for s in SHAPES:
    q = torch.randn(s["B"], s["H"], s["Sq"], s["D"], **o)
    kv = [(torch.randn(s["B"], s["H"], s["Sk"], s["D"], **o), torch.randn(s["B"], s["H"], s["Sk"], s["D"], **o)) for _ in range(L)]
    for name, backend in BACKENDS.items():
        try:
            with sdpa_kernel([backend]):
                step = lambda: [sdpa(q, k, v) for k, v in kv]
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        step()
                torch.cuda.current_stream().wait_stream(side)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    outs = step()
            us = replay_us(g)
            del g, outs
        except Exception as e:  # a backend that cannot run the shape
            print(f"torch {s['name']} {name}: cannot run ({str(e).splitlines()[0]})")
            continue
        rows.append(dict(shape=s, backend=name, graphUsPerCall=us))
        print(f"torch {s['name']:<11} {name:<10} graph {us:.2f} us/call")

out = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__, layers=L, steps=STEPS, rows=rows)
if "--json" in sys.argv:
    with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
        json.dump(out, f, indent=1)
