// fp32 products at fp32 accuracy on tensor cores (sm80+): each operand is split a = hi + lo with hi
// = tf32(a) and lo = tf32(a - hi), and a*b ~= hi_a*hi_b + hi_a*lo_b + lo_a*hi_b (lo*lo, ~2^-22
// relative, is dropped). CUTLASS calls this OpMultiplyAddFastF32; torch's efficient backend uses it
// for fp32 on sm80+. mma.sync m16n8k8 tf32 fragments (g = lane / 4, t = lane % 4):
//   A 16x8 row: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
//   B 8x8 col:  b0 (k = t, n = g), b1 (k = t + 4, n = g)
//   C 16x8:     c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1)
#pragma once
#include <cmath>
#include <cstdint>

#include "common/toolkit.cuh"

namespace memeff {

// Non-finite operands. Every 3xTF32 product here sums a.lo*b.hi + a.hi*b.lo + a.hi*b.hi (with a
// three-part B, a.hi*b.rest too): an operand's high part meets every part of the other, its lower
// parts meet only the other's high part. A non-finite x therefore goes whole into a lower part, with
// hi = 0 (and, for a three-part B, lo = 0 and rest = x): x then meets only the other operand's high
// part y_hi, and its one product x * y_hi has the sign of x * y; every other term is 0 * finite = 0.
// Kept in hi instead, x would meet the other's lower parts too: y_lo = 0 (y exact in TF32) gives
// 0 * Inf = NaN, and y_lo of the other sign gives +Inf + -Inf = NaN (issue 25: -Inf in one element of
// k made its rows NaN; +Inf in v gave NaN where the reference gives +Inf). NaN goes the same way and
// stays NaN (NaN * y_hi is NaN even where y_hi = 0). Checked for every product the fp32 kernels form:
// Q.K^T (fwd_tf32, the wgmma forward, the backward's recompute), P.V (P in two parts, V in two or
// three), dO.V^T, P^T.dO, dS.K, dS^T.Q and rowsum(dO * O) (bwd_dsum_tf32). Where the reference
// differs:
// - x and y both infinite at the same coordinate (q and k, or O and dO): x * 0 = NaN where the
//   reference gives +-Inf;
// - x infinite against a y whose TF32 rounding is 0, y subnormal below 2^-137 (or any subnormal on a
//   tensor core that flushes them), or a probability exp flushed to 0: NaN where the reference gives
//   +-Inf (a zero weight meeting an infinite value, as every tiled kernel's masked keys do);
// - a finite |x| within half a TF32 ulp of FLT_MAX rounds to hi = Inf, and x - hi is -Inf: NaN.
//
// The high part's bits: x rounded to TF32 (round to nearest, ties away, as cvt.rna; a carry into the
// exponent is the right rounding), or 0 where x is not finite. Computed on the bits (half a TF32
// ulp added, the low 13 bits cleared, a select on |x| < inf) where the value feeds fp32 arithmetic
// again: ptxas's own expansion of cvt.rna there takes more issues (ncu SASS of the fp32 forward).
// The lower part is then x - hi, which is x itself where hi = 0: no guard on that subtraction.
__device__ __forceinline__ uint32_t tf32_rna_bits(float x) {
  uint32_t r = 0u;
#ifdef ATTN_SM80
  asm("{\n\t.reg .pred fin;\n\t.reg .f32 ax;\n\t.reg .b32 t;\n\t"
      "abs.f32 ax, %1;\n\t"
      "setp.lt.f32 fin, ax, 0f7F800000;\n\t"
      "mov.b32 t, %1;\n\t"
      "add.u32 t, t, 4096;\n\t"
      "and.b32 t, t, -8192;\n\t"
      "selp.b32 %0, t, 0, fin;\n\t}"
      : "=r"(r)
      : "f"(x));
#endif
  return r;
}

// cvt.rna.tf32.f32 of a finite x, 0 for a non-finite one: tf32_rna_bits's bits where the value only
// feeds the mma (ptxas takes 2 issues for the cvt there).
__device__ __forceinline__ uint32_t tf32_hi_cvt(float x) {
  uint32_t r = 0u;
#ifdef ATTN_SM80
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#endif
  return fabsf(x) < INFINITY ? r : 0u;
}

// x - hi, what the TF32 parts below hi carry: all of x where x is not finite (hi = 0).
__device__ __forceinline__ float tf32_rest(float x, uint32_t hi) { return x - __uint_as_float(hi); }

struct Tf32Pair {
  uint32_t hi, lo;
};

// split_tf32 with hi from tf32_rna_bits (lo keeps cvt.rna: it only feeds the mma, where ptxas
// already drops the mask and takes 2 issues). Same bits as split_tf32; a non-finite x is {0, x}.
__device__ __forceinline__ Tf32Pair split_tf32_lean(float x) {
  Tf32Pair r{0u, 0u};
#ifdef ATTN_SM80
  r.hi = tf32_rna_bits(x);
  const float rest = tf32_rest(x, r.hi);
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r.lo) : "f"(rest));
#endif
  return r;
}

__device__ __forceinline__ Tf32Pair split_tf32(float x) {
  Tf32Pair r{0u, 0u};
#ifdef ATTN_SM80
  r.hi = tf32_hi_cvt(x);
  const float rest = tf32_rest(x, r.hi);
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r.lo) : "f"(rest));
#endif
  return r;
}

__device__ __forceinline__ void mma_1688_tf32(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                              uint32_t b0, uint32_t b1) {
#ifdef ATTN_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

// d += part, one IEEE fp32 add (round to nearest) per element: how a fresh k8 partial joins d.
__device__ __forceinline__ void add_partial(float (&d)[4], const float (&part)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) d[i] += part[i];
}

// d += a * b with both operands split. The three products go into a fresh zero accumulator and
// the k8 partial is then added to d with an IEEE fp32 add (round to nearest): the tensor core's own
// accumulation truncates its result to fp32 (round toward zero), so three mma per k8 step into d
// itself put 3 truncations of |d| per step, all biased the same way, on every output element (D / 8
// steps of Q.K^T, Sk / 8 of P.V). Inside the fresh partial, the small terms go first so that they
// are not lost against hi*hi. (All three into d fails the fp32 accuracy rule on conformance case
// s17-d72-h3; tools/research/tf32x3-emulate.py models both orders.)
__device__ __forceinline__ void mma_1688_3xtf32(float (&d)[4], const Tf32Pair (&a)[4], const Tf32Pair (&b)[2]) {
  float part[4] = {0.f, 0.f, 0.f, 0.f};
  mma_1688_tf32(part, a[0].lo, a[1].lo, a[2].lo, a[3].lo, b[0].hi, b[1].hi);
  mma_1688_tf32(part, a[0].hi, a[1].hi, a[2].hi, a[3].hi, b[0].lo, b[1].lo);
  mma_1688_tf32(part, a[0].hi, a[1].hi, a[2].hi, a[3].hi, b[0].hi, b[1].hi);
  add_partial(d, part);
}

// A B operand in three TF32 parts, x = hi + lo + rest exactly: hi and lo hold 11 significant bits
// each, x - hi has up to 13, so tf32(x - hi) can drop its last 2 bits; rest = x - hi - lo (exact in
// fp32, at most 2 significant bits) is a TF32 value as it stands, no cvt needed. A non-finite x is
// {0, 0, x}: rest meets only A's high part (see "Non-finite operands" above).
struct Tf32Triple {
  uint32_t hi, lo, rest;
};

__device__ __forceinline__ Tf32Triple split_tf32_exact(float x) {
  Tf32Triple r{0u, 0u, 0u};
#ifdef ATTN_SM80
  r.hi = tf32_hi_cvt(x);
  const float rest = tf32_rest(x, r.hi);
  r.lo = tf32_hi_cvt(rest);
  r.rest = __float_as_uint(rest - __uint_as_float(r.lo));
#endif
  return r;
}

// split_tf32_exact with hi and lo from tf32_rna_bits (both are used again in fp32 arithmetic). Same bits.
__device__ __forceinline__ Tf32Triple split_tf32_exact_lean(float x) {
  Tf32Triple r{0u, 0u, 0u};
#ifdef ATTN_SM80
  r.hi = tf32_rna_bits(x);
  const float rest = tf32_rest(x, r.hi);
  r.lo = tf32_rna_bits(rest);
  r.rest = __float_as_uint(rest - __uint_as_float(r.lo));
#endif
  return r;
}

// d += a * b as mma_1688_3xtf32 plus a.hi * b.rest, so that b is carried in full: where a is
// exactly one (P of a query that sees one key, conformance sq17-sk1) the partial is b itself, bit
// for bit (each term exact in the partial, smallest first), and O reproduces the V row. With b in two
// parts O was off by up to 2^-22 relative, which the backward's D = dO . O turns into nonzero dS.
// One more mma per k8 step of P.V.
__device__ __forceinline__ void mma_1688_3xtf32_bexact(float (&d)[4], const Tf32Pair (&a)[4],
                                                       const Tf32Triple (&b)[2]) {
  float part[4] = {0.f, 0.f, 0.f, 0.f};
  mma_1688_tf32(part, a[0].hi, a[1].hi, a[2].hi, a[3].hi, b[0].rest, b[1].rest);
  mma_1688_tf32(part, a[0].lo, a[1].lo, a[2].lo, a[3].lo, b[0].hi, b[1].hi);
  mma_1688_tf32(part, a[0].hi, a[1].hi, a[2].hi, a[3].hi, b[0].lo, b[1].lo);
  mma_1688_tf32(part, a[0].hi, a[1].hi, a[2].hi, a[3].hi, b[0].hi, b[1].hi);
  add_partial(d, part);
}

}  // namespace memeff
