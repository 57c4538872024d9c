"""torch's side of scripts/decode-bench.mjs: the same decode call (B 8, Hq 32, Hk 8, Sq 1, Sk 8192, D 128,
bf16, enable_gqa), the same loop (CUDA events around 500 back-to-back calls after 50 warm-up calls), for
each SDPA backend that takes it; and whether this torch has a paged K/V path (a block_table argument on
aten._flash_attention_forward, or flash_attn's flash_attn_with_kvcache).

  python3 packages/flash-cuda/scripts/decode_bench_torch.py [--json out.json]
"""
import json
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa

B, HQ, HK, SK, D = 8, 32, 8, 8192, 128
N, WARMUP = 500, 50

q = torch.randn(B, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
k = torch.randn(B, HK, SK, D, device="cuda", dtype=torch.bfloat16)
v = torch.randn(B, HK, SK, D, device="cuda", dtype=torch.bfloat16)


def loop_us(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(N):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / N


rows = []
for name, backend in (
    ("flash", SDPBackend.FLASH_ATTENTION),
    ("efficient", SDPBackend.EFFICIENT_ATTENTION),
    ("cudnn", SDPBackend.CUDNN_ATTENTION),
):
    try:
        with sdpa_kernel([backend]):
            us = loop_us(lambda: sdpa(q, k, v, enable_gqa=True))
        rows.append({"backend": name, "us": us})
        print(f"torch {name}: {us:.1f} us per call")
    except Exception as e:  # a backend that declines the call says why
        rows.append({"backend": name, "error": str(e).splitlines()[0][:300]})
        print(f"torch {name}: unavailable ({str(e).splitlines()[0][:200]})")

# The efficient kernel takes no enable_gqa on dense inputs, and a head -> head // 4 map is no stride
# pattern: its numbers are for K/V repeated to Hq heads (4x the bytes read), beside the others for
# reference only.
kx = k.repeat_interleave(HQ // HK, dim=1)
vx = v.repeat_interleave(HQ // HK, dim=1)
label = "efficient (K/V repeated to Hq heads: 4x the bytes)"
try:
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
        us = loop_us(lambda: sdpa(q, kx, vx))
    rows.append({"backend": label, "us": us})
    print(f"torch {label}: {us:.1f} us per call")
except Exception as e:
    rows.append({"backend": label, "error": str(e).splitlines()[0][:300]})
    print(f"torch {label}: unavailable ({str(e).splitlines()[0][:200]})")
del kx, vx

paged = {}
schema = str(torch.ops.aten._flash_attention_forward.default._schema)
paged["aten_flash_block_table"] = "block_table" in schema
paged["aten_flash_schema"] = schema
try:
    import flash_attn  # noqa: F401

    paged["flash_attn"] = getattr(flash_attn, "__version__", "present")
except ImportError:
    paged["flash_attn"] = None
print(f"torch paged K/V: aten flash block_table {paged['aten_flash_block_table']}, flash_attn {paged['flash_attn']}")

result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "rows": rows, "paged": paged}
if "--json" in sys.argv:
    with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
        json.dump(result, f, indent=1)
