"""torch's side of scripts/graph-bench.mjs: the same decode calls with torch's SDPA (bf16, enable_gqa),
L layers per step, eagerly and captured into one torch.cuda.CUDAGraph, timed the same way (events
around STEPS steps; per call = per step / L; host = wall time of the loop up to its last return).

  python3 packages/flash-cuda/scripts/graph_bench_torch.py [--json out.json]
"""
import json
import sys
import time

import torch
from torch.nn.functional import scaled_dot_product_attention as sdpa

L, STEPS = 32, 50
SHAPES = [
    dict(name="tiny", B=1, Hq=1, Hk=1, Sk=16, D=64),
    dict(name="decode", B=8, Hq=32, Hk=8, Sk=512, D=128),
]


def timed(step):
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t0 = time.perf_counter()
    for _ in range(STEPS):
        step()
    t1 = time.perf_counter()
    end.record()
    end.synchronize()
    return dict(deviceUsPerCall=start.elapsed_time(end) * 1e3 / (STEPS * L), hostUsPerCall=(t1 - t0) * 1e6 / (STEPS * L))


rows = []
for s in SHAPES:
    B, Hq, Hk, Sk, D = s["B"], s["Hq"], s["Hk"], s["Sk"], s["D"]
    o = dict(device="cuda", dtype=torch.bfloat16)
    q = torch.randn(B, Hq, 1, D, **o)
    kv = [(torch.randn(B, Hk, Sk, D, **o), torch.randn(B, Hk, Sk, D, **o)) for _ in range(L)]

    def step():
        return [sdpa(q, k, v, enable_gqa=True) for k, v in kv]

    eager = timed(step)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()  # warm-up on a side stream, as torch's CUDA graph docs require
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = step()
    graph = timed(g.replay)
    rows.append(dict(shape=s, form="dense", layers=L, steps=STEPS, eager=eager, graph=graph))
    print(
        f"torch {s['name']:<7} dense   eager {eager['deviceUsPerCall']:.2f} us/call (host {eager['hostUsPerCall']:.2f}), "
        f"graph {graph['deviceUsPerCall']:.2f} us/call (host {graph['hostUsPerCall']:.3f} us/call)"
    )
    del g, outs

out = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__, rows=rows)
if "--json" in sys.argv:
    with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
        json.dump(out, f, indent=1)
