#!/usr/bin/env python3
"""CPU model of the fp32 forward's numerics (fwd_tf32.cuh) against the conformance accuracy rule.

    python3 tools/research/tf32x3-emulate.py [--trials 40] [--seed 0]

Why it exists: the 3xTF32 forward failed conformance case s17-d72-h3/float32 on the H200 while the
FMA forward passes, and the kernel's indexing is right (32/32 fp32 cases of the GPU check of the time). What differs
is rounding. This emulates, element for element, what the kernel does:
  - each operand split hi = tf32(a), lo = tf32(a - hi) with cvt.rna (nearest, ties away);
  - mma.sync m16n8k8: 8 exact products plus the accumulator, the result truncated to fp32 (round
    toward zero, as the tensor cores do; 'rn' models a round-to-nearest accumulator instead);
  - v2/v3: per k8 step, lo*hi, hi*lo, hi*hi each accumulate into the running sum (3 truncations of
    the running sum per step, all biased towards zero);
  - v4: per k8 step the three go into a fresh zero partial, added to the running sum with an IEEE
    fp32 add (tf32x3.cuh);
  - v5: P.V with V in three parts (hi, lo, rest = v - hi - lo: exact) and a fourth product hi_p *
    rest_v first in the partial (mma_1688_3xtf32_bexact): a row with P = 1 gets V back bit for bit;
  - v20 (fwd_tf32_wgmma.cuh): a fresh partial per 4 k8 steps of Q.K^T and per 32 keys of P.V, each
    chunk's terms grouped by kind (all small terms first, the hi * hi terms last);
  - softmax as the kernel (log2 units, fp32), the FMA path for comparison, and the conformance
    suite's naive fp32 implementation (sequential fp32 sums) that sets the bound:
    error <= 2 x naive error + 1e-6 x max(1, max |ref|)   (test/conformance/src/accuracy.ts).
Prints, per case shape, how many of the random trials fail the rule and the worst error / bound.
Needs numpy only. The backward's side of the single-key case (sq17-sk1) is in sk1-backward-emulate.py.
"""
import argparse

import numpy as np

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def tf32(x):
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def split(x):
    hi = tf32(x)
    return hi, tf32((np.asarray(x, np.float32) - hi).astype(np.float32))


def round_acc(x64, mode):
    f = x64.astype(np.float32)
    if mode == "rn":
        return f
    over = np.abs(f.astype(np.float64)) > np.abs(x64)  # rounded away from zero: step back
    return np.where(over, np.nextafter(f, np.float32(0)), f).astype(np.float32)


def mm_3xtf32(a, b, fresh, mode, b_exact=False, chunk=1, grouped=False):
    k = a.shape[1]
    kp = (k + 7) // 8 * 8  # zero-padded head dim / keys, as the smem tiles
    a = np.pad(a, ((0, 0), (0, kp - k)))
    b = np.pad(b, ((0, kp - k), (0, 0)))
    ah, al = split(a)
    bh, bl = split(b)
    # v5: the rest of b that bl drops (exact in fp32 and a TF32 value), multiplied by ah first.
    terms = (((ah, (b - bh - bl).astype(np.float32)),) if b_exact else ()) + ((al, bh), (ah, bl), (ah, bh))
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    # A fresh partial per `chunk` k8 steps (v20's wgmma: 4 for Q.K^T, a step's 4 key groups for P.V); grouped:
    # the chunk's terms one kind at a time (every step's smallest first, hi * hi last) instead of step by step.
    for kc in range(0, kp, 8 * chunk):
        part = np.zeros_like(acc) if fresh else acc
        steps = range(kc, min(kc + 8 * chunk, kp), 8)
        order = [(x, y, ks) for x, y in terms for ks in steps] if grouped else [(x, y, ks) for ks in steps for x, y in terms]
        for x, y, ks in order:
            s = slice(ks, ks + 8)
            part = round_acc(part.astype(np.float64) + x[:, s].astype(np.float64) @ y[s, :].astype(np.float64), mode)
        acc = (acc + part).astype(np.float32) if fresh else part
    return acc


def mm_fma(a, b):  # sequential fp32 FMA over k (fwd_simt; also the naive implementation's sums)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for d in range(a.shape[1]):
        acc = (acc.astype(np.float64) + a[:, d : d + 1].astype(np.float64) * b[d : d + 1, :].astype(np.float64)).astype(np.float32)
    return acc


def row_sum_f32(p):
    l = np.zeros((p.shape[0], 1), np.float32)
    for j in range(p.shape[1]):
        l = (l + p[:, j : j + 1]).astype(np.float32)
    return l


def kernel(q, k, v, scale, mm, mm_pv=None):
    mm_pv = mm_pv or mm
    s = (mm(q, k.T.copy()) * np.float32(scale * LOG2E)).astype(np.float32)
    m = s.max(1, keepdims=True)
    p = np.exp2((s - m).astype(np.float64)).astype(np.float32)
    l = row_sum_f32(p)
    out = (mm_pv(p, v) * (np.float32(1) / l)).astype(np.float32)
    lse = ((m + np.log2(l.astype(np.float64)).astype(np.float32)) * np.float32(LN2)).astype(np.float32)
    return out, lse[:, 0]


def naive(q, k, v, scale):
    s = (mm_fma(q, k.T.copy()) * np.float32(scale)).astype(np.float32)
    m = s.max(1, keepdims=True)
    p = np.exp((s - m).astype(np.float64)).astype(np.float32)
    l = row_sum_f32(p)
    out = mm_fma((p / l).astype(np.float32), v)
    return out, (m[:, 0] + np.log(l[:, 0]).astype(np.float32)).astype(np.float32)


def reference(q, k, v, scale):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.T * scale
    m = s.max(1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(1, keepdims=True)
    return p @ v / l, (m + np.log(l))[:, 0]


def run(name, bh, sq, sk, d, trials, rng):
    variants = {
        "v3 3xtf32 (rz)": lambda q, k, v, sc: kernel(q, k, v, sc, lambda a, b: mm_3xtf32(a, b, False, "rz")),
        "v4 3xtf32 (rz)": lambda q, k, v, sc: kernel(q, k, v, sc, lambda a, b: mm_3xtf32(a, b, True, "rz")),
        "v5 3xtf32 (rz)": lambda q, k, v, sc: kernel(
            q, k, v, sc, lambda a, b: mm_3xtf32(a, b, True, "rz"), lambda a, b: mm_3xtf32(a, b, True, "rz", b_exact=True)
        ),
        "v20 wgmma": lambda q, k, v, sc: kernel(
            q, k, v, sc, lambda a, b: mm_3xtf32(a, b, True, "rz", chunk=4, grouped=True),
            lambda a, b: mm_3xtf32(a, b, True, "rz", b_exact=True, chunk=4, grouped=True),
        ),
        "v20 ungrouped": lambda q, k, v, sc: kernel(
            q, k, v, sc, lambda a, b: mm_3xtf32(a, b, True, "rz", chunk=4), lambda a, b: mm_3xtf32(a, b, True, "rz", b_exact=True, chunk=4)
        ),
        "v3 3xtf32 (rn)": lambda q, k, v, sc: kernel(q, k, v, sc, lambda a, b: mm_3xtf32(a, b, False, "rn")),
        "fma": lambda q, k, v, sc: kernel(q, k, v, sc, mm_fma),
    }
    fails = {n: [0, 0] for n in variants}
    worst = {n: [0.0, 0.0] for n in variants}
    for _ in range(trials):
        err = {n: [0.0, 0.0] for n in [*variants, "naive"]}
        mag = [0.0, 0.0]
        for _ in range(bh):
            q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((sq, d), (sk, d), (sk, d)))
            sc = 1 / np.sqrt(d)
            ref = reference(q, k, v, sc)
            mag = [max(mag[w], float(np.abs(ref[w]).max())) for w in (0, 1)]
            for n, fn in [*variants.items(), ("naive", naive)]:
                got = fn(q, k, v, sc)
                err[n] = [max(err[n][w], float(np.abs(got[w] - ref[w]).max())) for w in (0, 1)]
        for n in variants:
            for w in (0, 1):
                r = err[n][w] / (2 * err["naive"][w] + 1e-6 * max(1.0, mag[w]))
                worst[n][w] = max(worst[n][w], r)
                fails[n][w] += r > 1
    print(f"{name} ({trials} trials): failures out / lse, worst error / bound")
    for n in variants:
        print(f"  {n:16s} {fails[n][0]:3d} / {fails[n][1]:3d}   {worst[n][0]:.2f} / {worst[n][1]:.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    # Conformance shapes (test/conformance/src/cases.ts) that the 3xTF32 forward takes.
    run("s17-d72-h3 (B2 H3 Sq17 Sk17 D72)", 6, 17, 17, 72, args.trials, rng)
    run("strided-bshd-d72-gqa (B2 H4 Sq17 Sk23 D72)", 8, 17, 23, 72, args.trials, rng)
    run("plain (B2 H2 Sq17 Sk23 D8)", 4, 17, 23, 8, args.trials, rng)
    # One key per row: out must be V (the forward alone passes with v4 too; the backward does not:
    # sk1-backward-emulate.py).
    run("sq17-sk1 (B2 H2 Sq17 Sk1 D8)", 4, 17, 1, 8, args.trials, rng)
    run("s1000-d64 (one head, Sq 64 of 1000)", 1, 64, 1000, 64, max(2, args.trials // 8), rng)


if __name__ == "__main__":
    main()
