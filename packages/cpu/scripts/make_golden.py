#!/usr/bin/env python3
"""Golden vectors for @attn/cpu's cpu-math, from PyTorch's scaled_dot_product_attention.

Runs on any machine with python3 and torch >= 2.5 (CPU is enough: everything is float64 on the CPU,
math backend, so fully masked rows give 0 through _safe_softmax). Dropout is left out: torch's RNG is
not core's Philox mapping. Window, ALiBi and softcap are not in torch's SDPA; the TypeScript tests
pin those by independent formulations instead.

    python3 packages/cpu/scripts/make_golden.py [OUT_JSON]   # default: packages/cpu/test/fixtures/golden.json

Format (read by packages/cpu/src/math/golden.ts): {"torch": version, "cases": [case]}, where a case
has "name", "opts" (scale | null, isCausal, alignment, enableGqa), tensors "q", "k", "v", "gradOut",
"mask" (or null; with "kind": "bool" | "additive") and the results "out", "lse", "dq", "dk", "dv",
"dbias" (or null). A tensor is {"shape": [...], "data": [...]} in row-major order; non-finite values
are the strings "Infinity", "-Infinity", "NaN" (JSON has no literals for them).
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

SEED = 20240607
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "fixtures", "golden.json")


def case(name, B=2, Hq=2, Hk=None, Sq=5, Sk=7, D=8, Dv=None, scale=None, causal=None, gqa=False, mask=None):
    """causal: None | 'upperLeft' | 'lowerRight'. mask: None | (kind, shape, fully_masked_rows)."""
    return dict(name=name, B=B, Hq=Hq, Hk=Hk or Hq, Sq=Sq, Sk=Sk, D=D, Dv=Dv or D, scale=scale, causal=causal,
                gqa=gqa, mask=mask)


CASES = [
    case("plain"),
    case("scale", scale=0.37),
    case("dv_ne_d", D=8, Dv=5),
    case("head_dim_odd", D=3, Dv=11),
    case("bool_mask_2d", mask=("bool", [5, 7], [])),
    case("bool_mask_key_padding", mask=("bool", [2, 1, 1, 7], [])),
    case("bool_mask_full", mask=("bool", [2, 2, 5, 7], [])),
    case("additive_mask_heads", mask=("additive", [1, 2, 5, 7], [])),
    case("additive_mask_full", mask=("additive", [2, 2, 5, 7], [])),
    case("additive_mask_row", mask=("additive", [5, 1], [])),
    case("causal_square", Sq=6, Sk=6, causal="upperLeft"),
    case("causal_upper_left_sq_lt_sk", Sq=4, Sk=9, causal="upperLeft"),
    case("causal_upper_left_sq_gt_sk", Sq=9, Sk=4, causal="upperLeft"),
    case("causal_lower_right_sq_lt_sk", Sq=4, Sk=9, causal="lowerRight"),
    case("causal_lower_right_sq_gt_sk", Sq=7, Sk=4, causal="lowerRight"),
    case("gqa", Hq=6, Hk=2, gqa=True),
    case("mqa", Hq=4, Hk=1, gqa=True),
    case("gqa_causal", Hq=4, Hk=2, gqa=True, Sq=6, Sk=9, causal="upperLeft"),
    # torch's math backend refuses a mask together with is_causal, so a mask combines with GQA only.
    case("gqa_mask_scale", Hq=4, Hk=2, gqa=True, scale=0.5, mask=("additive", [1, 4, 5, 7], [])),
    case("fully_masked_rows_bool", mask=("bool", [2, 2, 5, 7], [(0, 1, 2), (1, 0, 0), (1, 1, 4)])),
    case("fully_masked_rows_additive", mask=("additive", [2, 2, 5, 7], [(0, 0, 1), (1, 1, 3)])),
    case("s1", Sq=1, Sk=1),
    case("sq1", Sq=1, Sk=7, causal="lowerRight"),
    case("sk1", Sq=6, Sk=1, causal="upperLeft"),
]


def encode(t):
    flat = t.detach().to(torch.float64).contiguous().view(-1).tolist()
    data = [x if math.isfinite(x) else ("NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")) for x in flat]
    return {"shape": list(t.shape), "data": data}


def make_mask(gen, kind, shape, fully_masked):
    if kind == "bool":
        m = torch.rand(shape, generator=gen, dtype=torch.float64) > 0.35
        for idx in fully_masked:
            m[idx] = False
        return m
    m = torch.randn(shape, generator=gen, dtype=torch.float64)
    # A few -inf entries, as a padding bias would have; whole rows of them where asked.
    m = m.masked_fill(torch.rand(shape, generator=gen, dtype=torch.float64) < 0.1, -math.inf)
    for idx in fully_masked:
        m[idx] = -math.inf
    return m.requires_grad_(True)


def explicit_logsumexp(q, k, mask, c, scale):
    """logsumexp of the final scores, written out with plain torch ops (SDPA does not return it)."""
    group = c["Hq"] // c["Hk"]
    kk = k.detach().repeat_interleave(group, dim=1)
    s = (q.detach() @ kk.transpose(-2, -1)) * scale
    Sq, Sk = c["Sq"], c["Sk"]
    if c["causal"] is not None:
        diagonal = 0 if c["causal"] == "upperLeft" else Sk - Sq
        keep = torch.ones(Sq, Sk, dtype=torch.bool).tril(diagonal)
        s = s.masked_fill(~keep, -math.inf)
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else s + mask.detach()
    return torch.logsumexp(s, dim=-1)


def run_case(gen, c):
    B, Hq, Hk, Sq, Sk, D, Dv = (c[x] for x in ("B", "Hq", "Hk", "Sq", "Sk", "D", "Dv"))
    q = torch.randn(B, Hq, Sq, D, generator=gen, dtype=torch.float64).requires_grad_(True)
    k = torch.randn(B, Hk, Sk, D, generator=gen, dtype=torch.float64).requires_grad_(True)
    v = torch.randn(B, Hk, Sk, Dv, generator=gen, dtype=torch.float64).requires_grad_(True)
    mask = make_mask(gen, *c["mask"]) if c["mask"] else None
    kwargs = dict(scale=c["scale"])
    if c["gqa"]:
        kwargs["enable_gqa"] = True
    if c["causal"] == "lowerRight":
        if mask is not None:
            raise ValueError(f"{c['name']}: lower-right causal is a CausalBias; it cannot be combined with a mask")
        kwargs["attn_mask"] = causal_lower_right(Sq, Sk)
    else:
        kwargs["is_causal"] = c["causal"] == "upperLeft"
        kwargs["attn_mask"] = mask
    with sdpa_kernel([SDPBackend.MATH]):
        out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    grad_out = torch.randn(out.shape, generator=gen, dtype=torch.float64)
    out.backward(grad_out)
    for what, t in (("out", out), ("dq", q.grad), ("dk", k.grad), ("dv", v.grad)):
        if not torch.isfinite(t).all():
            raise RuntimeError(f"{c['name']}: torch {torch.__version__} gave a non-finite {what}; fully masked "
                               "rows need the safe softmax of torch >= 2.5")
    scale = c["scale"] if c["scale"] is not None else 1 / math.sqrt(D)
    additive = mask is not None and mask.dtype != torch.bool
    return {
        "name": c["name"],
        "opts": {"scale": c["scale"], "isCausal": c["causal"] is not None,
                 "alignment": c["causal"] or "upperLeft", "enableGqa": c["gqa"]},
        "q": encode(q), "k": encode(k), "v": encode(v), "gradOut": encode(grad_out),
        "mask": None if mask is None else {"kind": "additive" if additive else "bool", **encode(mask)},
        "out": encode(out),
        "lse": encode(explicit_logsumexp(q, k, mask, c, scale)),
        "dq": encode(q.grad), "dk": encode(k.grad), "dv": encode(v.grad),
        "dbias": encode(mask.grad) if additive else None,
    }


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    gen = torch.Generator().manual_seed(SEED)
    fixture = {"torch": torch.__version__, "seed": SEED, "cases": [run_case(gen, c) for c in CASES]}
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(fixture, f, separators=(",", ":"), allow_nan=False)
    print(f"wrote {len(fixture['cases'])} cases to {out_path} ({os.path.getsize(out_path)} bytes, torch {torch.__version__})")


if __name__ == "__main__":
    main()
