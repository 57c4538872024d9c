#!/usr/bin/env python3
"""CPU model of conformance case sq17-sk1/float32 through the forward AND the fp32 backward.

    python3 tools/research/sk1-backward-emulate.py [--trials 400] [--seed 0]

Why it exists: with the 3xTF32 forward the case failed on an H200 while out and logsumexp
are within the rule in tf32x3-emulate.py. With one key per row the naive implementation's dS is
exactly 0 (P = 1, Delta = P dP = dP), so the bound on dQ and dK is the slack alone (1e-6, the
reference being ~0); the kernel's dS = P (dP - D) with D = dO . O (bwd_dsum_kernel) and dP = dO . V
(bwd_tile) is 0 only if D and dP are the same bits. Two things break that:
  - the forward's O is not V bit for bit (v4: V in two TF32 parts, up to 2^-22 relative off);
  - bwd_dsum_kernel summed the products as a warp tree, bwd_tile as one sequential fmaf chain.
Each dS then carries an ulp or two of dP, and dK sums 17 of them. Modelled here: the FMA forward
(fwd_simt), the 3xTF32 forward v4 (two parts) and v5 (V in three parts), each with the tree D (v4)
and the sequential D (v5); the backward as bwd_tile / bwd_q_simt / bwd_kv_simt (sequential fmaf,
P = exp2((s - lse) log2 e), dQ and dK scaled at the end). Prints, per variant, the seeds failing
each output of the rule and the worst error / bound. Needs numpy only.
"""
import argparse
import importlib.util
import os

import numpy as np

_spec = importlib.util.spec_from_file_location("tf32x3", os.path.join(os.path.dirname(__file__), "tf32x3-emulate.py"))
E = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(E)

LOG2E, LN2 = np.float32(E.LOG2E), np.float32(E.LN2)
OUTPUTS = ("out", "lse", "dq", "dk", "dv")


def fl(x):
    return np.asarray(x, np.float64).astype(np.float32)


def fma(a, b, c):  # products of fp32 are exact in float64: one rounding, as fmaf
    return fl(np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64))


def fma_dot(a, b):  # rows of a . rows of b, one sequential fmaf chain over the dim
    acc = np.zeros((a.shape[0], b.shape[0]), np.float32)
    for d in range(a.shape[1]):
        acc = fma(a[:, d : d + 1], b[:, d][None, :], acc)
    return acc


def forward(q, k, v, scale, fwd):
    dot = fma_dot(q, k) if fwd == "fma" else E.mm_3xtf32(q, k.T.copy(), True, "rz")
    s = fl(fl(dot * scale) * LOG2E)  # masked_logit(...) * kLog2e: the tile is never 'plain' at Sk = 1
    m = s.max(1, keepdims=True)
    p = fl(np.exp2((s - m).astype(np.float64)))
    l = E.row_sum_f32(p)
    if fwd == "fma":
        o = fma_dot(p, v.T.copy())
    else:
        o = E.mm_3xtf32(p, v, True, "rz", b_exact=fwd == "v5")
    out = fl(o * fl(1 / l.astype(np.float64)))
    lse = fl(fl(m + fl(np.log2(l.astype(np.float64)))) * LN2)[:, 0]
    return out, lse


def backward(q, k, v, do, out, lse, scale, dsum_order):
    s = fl(fma_dot(q, k) * scale)
    pr = fl(np.exp2(fl(fl(s - lse[:, None]) * LOG2E).astype(np.float64)))
    dp = fma_dot(do, v)
    if dsum_order == "tree":  # v4: one product per lane, then the xor butterfly
        x = np.zeros((do.shape[0], 32), np.float32)
        x[:, : do.shape[1]] = fl(out.astype(np.float64) * do)
        for off in (16, 8, 4, 2, 1):
            x = fl(x.astype(np.float64) + x[:, np.arange(32) ^ off])
        dsum = x[:, :1]
    else:  # v5: the order of dP's chain
        dsum = np.zeros((do.shape[0], 1), np.float32)
        for c in range(do.shape[1]):
            dsum = fma(do[:, c : c + 1], out[:, c : c + 1], dsum)
    ds = fl(pr * fl(dp - dsum))
    dq = fl(fma_dot(ds, k.T.copy()) * scale)
    dk = fl(fma_dot(ds.T.copy(), q.T.copy()) * scale)
    dv = fma_dot(pr.T.copy(), do.T.copy())
    return dq, dk, dv


def naive(q, k, v, do, scale):  # test/conformance/src/naive.ts at Sk = 1 in fp32
    dot = np.zeros((q.shape[0], 1), np.float32)
    for d in range(q.shape[1]):
        dot = fl(dot + fl(q[:, d : d + 1].astype(np.float64) * k[0, d]))
    dv = np.zeros_like(v)
    for i in range(q.shape[0]):
        dv = fl(dv + do[i : i + 1])
    return np.repeat(v, q.shape[0], 0), fl(dot * scale)[:, 0], np.zeros_like(q), np.zeros_like(k), dv


def reference(q, k, v, do, scale):
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    return np.repeat(v, q.shape[0], 0), (q @ k.T * scale)[:, 0], np.zeros_like(q), np.zeros_like(k), do.sum(0, keepdims=True)


def trial(rng, variants, heads=4, sq=17, d=8):
    scale = 1 / np.sqrt(d)
    err = {n: np.zeros(5) for n in [*variants, "naive"]}
    mag = np.zeros(5)
    for _ in range(heads):
        q, k, v, do = (fl(rng.standard_normal(s)) for s in ((sq, d), (1, d), (1, d), (sq, d)))
        ref = reference(q, k, v, do, scale)
        mag = np.maximum(mag, [np.abs(x).max() for x in ref])
        err["naive"] = np.maximum(err["naive"], [np.abs(a - b).max() for a, b in zip(naive(q, k, v, do, scale), ref)])
        for name, (fwd, order) in variants.items():
            out, lse = forward(q, k, v, scale, fwd)
            got = (out, lse, *backward(q, k, v, do, out, lse, scale, order))
            err[name] = np.maximum(err[name], [np.abs(a - b).max() for a, b in zip(got, ref)])
    bound = 2 * err["naive"] + 1e-6 * np.maximum(1, mag)
    return {n: err[n] / bound for n in variants}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    variants = {
        "fma fwd, tree D": ("fma", "tree"),
        "v4 fwd, tree D": ("v4", "tree"),
        "v5 fwd, tree D": ("v5", "tree"),
        "fma fwd, seq D": ("fma", "seq"),
        "v4 fwd, seq D": ("v4", "seq"),
        "v5 fwd, seq D": ("v5", "seq"),
    }
    fails = {n: np.zeros(5, int) for n in variants}
    worst = {n: np.zeros(5) for n in variants}
    any_fail = dict.fromkeys(variants, 0)
    for _ in range(args.trials):
        r = trial(rng, variants)
        for n in variants:
            fails[n] += r[n] > 1
            worst[n] = np.maximum(worst[n], r[n])
            any_fail[n] += bool((r[n] > 1).any())
    print(f"sq17-sk1/float32 (B2 H2 Sq17 Sk1 D8), {args.trials} seeds: seeds failing; per output failures, worst error / bound")
    for n in variants:
        cols = "  ".join(f"{o} {fails[n][w]:3d} {worst[n][w]:.2f}" for w, o in enumerate(OUTPUTS))
        print(f"  {n:16s} {any_fail[n]:4d}   {cols}")


if __name__ == "__main__":
    main()
