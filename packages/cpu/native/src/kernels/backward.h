// The backward kernel (FlashAttention-2's, recomputing P from the saved logsumexp), in fp32 for
// every input dtype. Two passes, so that every gradient element has exactly one writer (no atomics,
// bitwise reproducible):
//   pass 1, one task per (batch, query head, query block): dQ, and dbias for an additive mask (and, for
//           16-bit outputs, Delta first: see bwd_dq_task);
//   pass 2, one task per (batch, kv head, key block): dK, dV, summed over the query heads of the group.
// Both recompute S = Q.K^T and dP = dO.V^T; the second pass costs two products more than a fused pass,
// which the absence of atomics and of per-thread dQ copies pays for on a CPU.
// Per element: P = exp(logit - lse), P~ = P * keep / (1 - p), dP~ = dP * keep / (1 - p),
// dLogit = P * (dP~ - Delta) with Delta = rowsum(dO * O) = rowsum(P * dP~); dX = dLogit * (1 - tanh^2) under
// softcap;
// dV = P~^T dO, dK = scale * dX^T Q, dQ = scale * dX K, dbias = dLogit reduced to the mask's shape.
#pragma once
#include <cmath>
#include <cstdint>

#include "dropout.h"
#include "kernels/rows.h"
#include "memory.h"
#include "problem.h"
#include "thread_pool.h"

namespace attn_cpu {
namespace ATTN_ISA {

constexpr int64_t kBwdBM = 64;  // query rows per block
constexpr int64_t kBwdBN = 64;  // keys per block (multiple of kLanes)

struct BwdCtx {
  const BwdProblem* p;
  int64_t G, nqb, nkb, dp, dvp;  // dp, dvp: D and Dv rounded up to kLanes
  float* qf;                     // [B*Hq][Sq][dp]   fp32 Q rows
  float* dof;                    // [B*Hq][Sq][dvp]  fp32 dO rows
  float* kf;                     // [B*Hk][Sk][dp]   fp32 K rows
  float* kt;                     // [B*Hk][nkb][D][kBwdBN]  K^T per key block
  float* vt;                     // [B*Hk][nkb][Dv][kBwdBN] V^T per key block
  float* delta;                  // [B*Hq][Sq]
  float* dbias_full;             // [B][Hq][Sq][Sk] when dbias is reduced over b, h or i; else null
  bool delta_from_o;             // Delta = dO . O in bwd_prep_task (fp32 outputs); else rowsum(P * dP~)
  int64_t kept_tiles;            // 16-bit: tiles per block pair bwd_dq_task keeps for its dS (0: own pass)
};

// Rows -> padded fp32 rows, K^T and V^T blocks, and Delta. One task per (head, 64-row block) of
// each source; tasks [0, nq) are query-side, [nq, nq + nk) key-side.
inline void bwd_prep_task(const BwdCtx& cx, int64_t t) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  float* tmp = static_cast<float*>(thread_scratch(static_cast<size_t>(cx.dp + 2 * cx.dvp) * 4 + 64));
  const int64_t nq = d.B * d.Hq * cx.nqb;
  if (t < nq) {
    const int64_t bh = t / cx.nqb, i0 = (t % cx.nqb) * kBwdBM, b = bh / d.Hq, h = bh % d.Hq;
    const int64_t i1 = d.Sq < i0 + kBwdBM ? d.Sq : i0 + kBwdBM;
    for (int64_t i = i0; i < i1; ++i) {
      float* q = cx.qf + (bh * d.Sq + i) * cx.dp;
      float* go = cx.dof + (bh * d.Sq + i) * cx.dvp;
      load_row(q, elem_ptr(p.q, b, h, i, 0), p.q.dtype, d.D, p.q.strides[3]);
      for (int64_t e = d.D; e < cx.dp; ++e) q[e] = 0.f;
      load_row(go, elem_ptr(p.dout, b, h, i, 0), p.dout.dtype, d.Dv, p.dout.strides[3]);
      for (int64_t e = d.Dv; e < cx.dvp; ++e) go[e] = 0.f;
      if (!cx.delta_from_o) continue;
      load_row(tmp, elem_ptr(p.out, b, h, i, 0), p.out.dtype, d.Dv, p.out.strides[3]);
      // Delta = dO . O with the same multiply-adds (fma1 rounds as vfma), in the same order, as the micro-kernel's
      // dP = dO . V: where O equals V (one visible key) dP - Delta is then exactly 0, as it must be.
      float acc = 0.f;
      for (int64_t e = 0; e < d.Dv; ++e) acc = fma1(go[e], tmp[e], acc);
      cx.delta[bh * d.Sq + i] = acc;
    }
    return;
  }
  t -= nq;
  const int64_t bh = t / cx.nkb, kb = t % cx.nkb, b = bh / d.Hk, h = bh % d.Hk;
  const int64_t j0 = kb * kBwdBN, n = d.Sk - j0 < kBwdBN ? d.Sk - j0 : kBwdBN;
  float* kt = cx.kt + (bh * cx.nkb + kb) * d.D * kBwdBN;
  float* vt = cx.vt + (bh * cx.nkb + kb) * d.Dv * kBwdBN;
  for (int64_t c = 0; c < kBwdBN; ++c) {
    if (c < n) {
      float* k = cx.kf + (bh * d.Sk + j0 + c) * cx.dp;
      load_row(k, elem_ptr(p.k, b, h, j0 + c, 0), p.k.dtype, d.D, p.k.strides[3]);
      for (int64_t e = d.D; e < cx.dp; ++e) k[e] = 0.f;
      for (int64_t e = 0; e < d.D; ++e) kt[e * kBwdBN + c] = k[e];
      load_row(tmp, elem_ptr(p.v, b, h, j0 + c, 0), p.v.dtype, d.Dv, p.v.strides[3]);
      for (int64_t e = 0; e < d.Dv; ++e) vt[e * kBwdBN + c] = tmp[e];
    } else {
      for (int64_t e = 0; e < d.D; ++e) kt[e * kBwdBN + c] = 0.f;
      for (int64_t e = 0; e < d.Dv; ++e) vt[e * kBwdBN + c] = 0.f;
    }
  }
}

// Rows [i0, i0 + m) of head h of a gradient view, when dense: their span is one task's alone, and its
// pages are faulted in with one call (memory.h) before the task writes them.
inline void prefault_rows(const View4& v, int64_t b, int64_t h, int64_t i0, int64_t m, int64_t len) {
  if (m < 2 || v.strides[3] != 1 || v.strides[2] != len) return;
  char* first = static_cast<char*>(elem_ptr(v, b, h, i0, 0));
  prefault_for_write(first, first + m * len * dtype_bytes(v.dtype));
}

// Scratch of one block pair: the score-sized tiles a block of rows needs.
struct BwdTiles {
  float *p, *pd, *dp, *cap, *maskbuf;
  uint8_t* keep;
};

// P, PD and dLogit of one row become 0 on the keys j0 + c that the row does not see (outside rr or
// past the n keys of the block).
inline void zero_outside_range(float* pr, float* pdr, float* dpr, RowRange rr, int64_t j0, int64_t n) {
  for (int64_t c = 0; c < kBwdBN; ++c) {
    const int64_t j = j0 + c;
    if (c >= n || j < rr.lo || j > rr.hi) pr[c] = pdr[c] = dpr[c] = 0.f;
  }
}

// For query rows [i0, i0+m) of head (b, h) against key block kb: P (probabilities), PD (P after
// dropout), DP (becomes dLogit), CAP (the softcap's tanh) in t, each [m][kBwdBN]. Rows whose lse is
// -inf (no visible key in the forward) get P = 0; rows whose lse is NaN get NaN on their keys.
inline void bwd_block(const BwdCtx& cx, const HeadMods& hm, int64_t b, int64_t h, int64_t hk, int64_t i0, int64_t m,
                      int64_t kb, const BwdTiles& t) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  const ScoreMods& md = p.mods;
  const int64_t bh = b * d.Hq + h, bhk = b * d.Hk + hk;
  const int64_t j0 = kb * kBwdBN, n = d.Sk - j0 < kBwdBN ? d.Sk - j0 : kBwdBN;
  const float* q = cx.qf + (bh * d.Sq + i0) * cx.dp;
  const float* go = cx.dof + (bh * d.Sq + i0) * cx.dvp;
  gemm<false>(m, kBwdBN, d.D, q, cx.dp, 1, cx.kt + (bhk * cx.nkb + kb) * d.D * kBwdBN, kBwdBN, t.p, kBwdBN);
  gemm<false>(m, kBwdBN, d.Dv, go, cx.dvp, 1, cx.vt + (bhk * cx.nkb + kb) * d.Dv * kBwdBN, kBwdBN, t.dp, kBwdBN);
  const bool cap = md.softcap > 0.f;
  const V vdrop = vset(md.keep_scale);
  for (int64_t r = 0; r < m; ++r) {
    const int64_t i = i0 + r;
    float* pr = t.p + r * kBwdBN;
    float* pdr = t.pd + r * kBwdBN;
    float* dpr = t.dp + r * kBwdBN;
    float* capr = cap ? t.cap + r * kBwdBN : nullptr;
    logits_row(pr, kBwdBN, hm, i, j0, key_range(md, d.Sk, i), t.maskbuf, capr);
    const float lse = p.lse[b * p.lse_sb + h * p.lse_sh + i];
    const V vl = vset(lse), vdelta = vset(cx.delta[bh * d.Sq + i]);
    const bool dead = lse == kNegInf;
    if (md.has_dropout) {
      static_assert(kBwdBN == 64, "one keep mask per row and key block");
      const uint32_t rbh = static_cast<uint32_t>((b + md.drop_b0) * d.Hq + h);  // Philox's (b, h)
      const uint64_t bits = keep_mask64(md, rbh, static_cast<uint32_t>(i), j0);
      for (int64_t c = 0; c < kBwdBN; ++c) t.keep[c] = c < n ? static_cast<uint8_t>((bits >> c) & 1u) : 0;
    }
    for (int64_t c = 0; c < kBwdBN; c += kLanes) {
      const V pv = dead ? vzero() : vexp(vsub(vload(pr + c), vl));
      V pd = pv, dpv = vload(dpr + c);
      if (md.has_dropout) {
        const V k = vmul(vfrom_u8(t.keep + c), vdrop);
        pd = vmul(pd, k);
        dpv = vmul(dpv, k);
      }
      vstore(pr + c, pv);
      vstore(pdr + c, pd);
      vstore(dpr + c, vmul(pv, vsub(dpv, vdelta)));  // dLogit
    }
    // A NaN lse (a NaN logit in the forward) makes every P of the row NaN, as the reference's; but
    // keys outside the row's causal/window range, or past Sk, are not part of its softmax at all
    // and must not carry the NaN into their dK and dV.
    if (lse != lse) zero_outside_range(pr, pdr, dpr, key_range(md, d.Sk, i), j0, n);
  }
}

// dX = dLogit * (1 - t^2) with t the softcap's tanh (logits_row), in place over [m][kBwdBN].
inline void softcap_grad(float* ds, const float* tanh_t, int64_t m) {
  const V one = vset(1.f);
  for (int64_t e = 0; e < m * kBwdBN; e += kLanes) {
    const V tt = vload(tanh_t + e);
    vstore(ds + e, vmul(vload(ds + e), vsub(one, vmul(tt, tt))));
  }
}

inline BwdTiles bwd_tiles(float* base, int64_t bm) {
  BwdTiles t;
  t.p = base;
  t.pd = t.p + bm * kBwdBN;
  t.dp = t.pd + bm * kBwdBN;
  t.cap = t.dp + bm * kBwdBN;
  t.maskbuf = t.cap + bm * kBwdBN;
  t.keep = reinterpret_cast<uint8_t*>(t.maskbuf + kBwdBN);
  return t;
}
constexpr size_t kTileFloats = 4 * kBwdBM * kBwdBN + 2 * kBwdBN;

// Whether rows [i0, i0+m) see any key of block kb.
inline bool block_visible(const ScoreMods& md, const Dims& d, int64_t i0, int64_t m, int64_t kb) {
  const RowRange a = key_range(md, d.Sk, i0), z = key_range(md, d.Sk, i0 + m - 1);
  const int64_t j0 = kb * kBwdBN, j1 = (d.Sk < j0 + kBwdBN ? d.Sk : j0 + kBwdBN) - 1;
  return a.lo <= j1 && z.hi >= j0 && a.lo <= z.hi;
}

// Delta of query rows as rowsum(P * dP~) over every visible key, for 16-bit outputs: their O is
// rounded to 11 (fp16) or 8 (bf16) bits, and dO . O_rounded carries that rounding into every dS of the
// row (on random fp16 inputs at D=8 it put dK 9 ulps off, beyond the accuracy rule); P * dP~ is what
// dO . O stands for, computed from the same fp32 tiles as dS. Each row sums in double over kDeltaLanes
// partial sums (lane c % kDeltaLanes takes key c of every block), which meet in a fixed order at the
// end: bitwise reproducible, and vectorized (one serial chain per row was 4 cycles a key).
constexpr int kDeltaLanes = 8;
struct DeltaSums {
  double lane[kBwdBM][kDeltaLanes];
};

inline void delta_sums_clear(DeltaSums& a) {
  for (int64_t r = 0; r < kBwdBM; ++r)
    for (int l = 0; l < kDeltaLanes; ++l) a.lane[r][l] = 0.0;
}

// Adds keys [0, n) of rows [0, m) of the tile pdp (P * dP~, [m][kBwdBN]); masked keys hold P = 0.
inline void delta_sums_add(DeltaSums& a, const float* pdp, int64_t m, int64_t n) {
  for (int64_t r = 0; r < m; ++r) {
    const float* row = pdp + r * kBwdBN;
    double* acc = a.lane[r];
    int64_t c = 0;
    for (; c + kDeltaLanes <= n; c += kDeltaLanes)
      for (int l = 0; l < kDeltaLanes; ++l) acc[l] += static_cast<double>(row[c + l]);
    for (int l = 0; c < n; ++c, ++l) acc[l] += static_cast<double>(row[c]);
  }
}

inline void delta_sums_store(const DeltaSums& a, float* delta, int64_t m) {
  for (int64_t r = 0; r < m; ++r) {
    const double* x = a.lane[r];
    delta[r] = static_cast<float>(((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7])));
  }
}
static_assert(kDeltaLanes == 8, "delta_sums_store adds 8 lanes");

// Delta in a pass of its own, for 16-bit outputs whose kept tiles would not fit (kept_tiles == 0):
// one more S and dP product per visible block pair.
inline void bwd_delta_task(const BwdCtx& cx, int64_t t) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  const int64_t bh = t / cx.nqb, qb = t % cx.nqb, b = bh / d.Hq, h = bh % d.Hq, hk = h / cx.G;
  const int64_t i0 = qb * kBwdBM, m = d.Sq - i0 < kBwdBM ? d.Sq - i0 : kBwdBM;
  float* base = static_cast<float*>(thread_scratch(kTileFloats * 4 + kBwdBN + 256));
  const BwdTiles tl = bwd_tiles(base, kBwdBM);
  float* delta = cx.delta + bh * d.Sq + i0;
  for (int64_t r = 0; r < m; ++r) delta[r] = 0.f;  // bwd_block then leaves P * dP~ in tl.dp
  DeltaSums acc;
  delta_sums_clear(acc);
  const HeadMods hm = head_mods(p.mods, d.Sk, b, h);
  for (int64_t kb = 0; kb < cx.nkb; ++kb) {
    if (!block_visible(p.mods, d, i0, m, kb)) continue;
    const int64_t n = d.Sk - kb * kBwdBN < kBwdBN ? d.Sk - kb * kBwdBN : kBwdBN;
    bwd_block(cx, hm, b, h, hk, i0, m, kb, tl);
    delta_sums_add(acc, tl.dp, m, n);
  }
  delta_sums_store(acc, delta, m);
}

inline void bwd_dkdv_task(const BwdCtx& cx, int64_t t) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  const int64_t bhk = t / cx.nkb, kb = t % cx.nkb, b = bhk / d.Hk, hk = bhk % d.Hk;
  const int64_t j0 = kb * kBwdBN, n = d.Sk - j0 < kBwdBN ? d.Sk - j0 : kBwdBN;
  float* base = static_cast<float*>(
      thread_scratch((kTileFloats + kBwdBN * (cx.dp + cx.dvp) + cx.dp + cx.dvp) * 4 + kBwdBN + 256));
  float* dk = base;
  float* dv = dk + kBwdBN * cx.dp;
  float* tmp = dv + kBwdBN * cx.dvp;
  const BwdTiles tl = bwd_tiles(tmp + cx.dp + cx.dvp, kBwdBM);
  for (int64_t e = 0; e < kBwdBN * (cx.dp + cx.dvp); ++e) dk[e] = 0.f;
  for (int64_t g = 0; g < cx.G; ++g) {
    const int64_t h = hk * cx.G + g, bh = b * d.Hq + h;
    const HeadMods hm = head_mods(p.mods, d.Sk, b, h);
    for (int64_t qb = 0; qb < cx.nqb; ++qb) {
      const int64_t i0 = qb * kBwdBM, m = d.Sq - i0 < kBwdBM ? d.Sq - i0 : kBwdBM;
      if (!block_visible(p.mods, d, i0, m, kb)) continue;
      bwd_block(cx, hm, b, h, hk, i0, m, kb, tl);
      if (p.mods.softcap > 0.f) softcap_grad(tl.dp, tl.cap, m);
      const float* q = cx.qf + (bh * d.Sq + i0) * cx.dp;
      const float* go = cx.dof + (bh * d.Sq + i0) * cx.dvp;
      // dV[c][:] += sum_r PD[r][c] dO[r][:];  dK[c][:] += sum_r dX[r][c] Q[r][:]
      gemm<true>(kBwdBN, cx.dvp, m, tl.pd, 1, kBwdBN, go, cx.dvp, dv, cx.dvp);
      gemm<true>(kBwdBN, cx.dp, m, tl.dp, 1, kBwdBN, q, cx.dp, dk, cx.dp);
    }
  }
  prefault_rows(p.dk, b, hk, j0, n, d.D);
  prefault_rows(p.dv, b, hk, j0, n, d.Dv);
  for (int64_t c = 0; c < n; ++c) {
    store_row_scaled(elem_ptr(p.dk, b, hk, j0 + c, 0), p.dk.dtype, tmp, dk + c * cx.dp, p.mods.scale, d.D,
                     p.dk.strides[3]);
    store_row(elem_ptr(p.dv, b, hk, j0 + c, 0), p.dv.dtype, dv + c * cx.dvp, d.Dv, p.dv.strides[3]);
  }
}

// dQ (and dbias) of one query block. With kept_tiles (16-bit outputs, Sk small enough), Delta comes
// first: loop 1 runs every visible block with Delta = 0, so that bwd_block leaves P * dP~ in its dLogit
// tile, sums it into Delta and keeps P, P * dP~ (and the softcap's tanh) per block in the thread's
// scratch; loop 2 then forms dLogit = P * dP~ - P * Delta from the kept tiles instead of a second S and
// dP product (the dK/dV pass, which runs after this one, reads Delta).
inline void bwd_dq_task(const BwdCtx& cx, int64_t t) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  const ScoreMods& md = p.mods;
  const int64_t bh = t / cx.nqb, qb = t % cx.nqb, b = bh / d.Hq, h = bh % d.Hq, hk = h / cx.G;
  const int64_t i0 = qb * kBwdBM, m = d.Sq - i0 < kBwdBM ? d.Sq - i0 : kBwdBM;
  constexpr int64_t kTile = kBwdBM * kBwdBN;
  const int64_t kept_floats = cx.kept_tiles * cx.nkb * kTile;
  const int64_t head = round_up(kBwdBM * cx.dp + cx.dp, 16);  // dq, tmp; keeps the tiles 64-byte aligned
  float* base = static_cast<float*>(thread_scratch((head + kTileFloats + kept_floats) * 4 + kBwdBN + 256));
  float* dq = base;
  float* tmp = dq + kBwdBM * cx.dp;
  float* kept = base + head;
  const BwdTiles tl = bwd_tiles(kept + kept_floats, kBwdBM);
  for (int64_t e = 0; e < kBwdBM * cx.dp; ++e) dq[e] = 0.f;
  const HeadMods hm = head_mods(md, d.Sk, b, h);
  const bool cap = md.softcap > 0.f;
  // Block kb's kept tiles: P, P * dP~, tanh.
  auto kept_tiles = [&](int64_t kb) {
    BwdTiles k = tl;
    k.p = kept + kb * cx.kept_tiles * kTile;
    k.dp = k.p + kTile;
    if (cap) k.cap = k.dp + kTile;
    return k;
  };
  float* delta = cx.delta + bh * d.Sq + i0;
  if (cx.kept_tiles) {
    for (int64_t r = 0; r < m; ++r) delta[r] = 0.f;
    DeltaSums acc;
    delta_sums_clear(acc);
    for (int64_t kb = 0; kb < cx.nkb; ++kb) {
      if (!block_visible(md, d, i0, m, kb)) continue;
      const BwdTiles k = kept_tiles(kb);
      bwd_block(cx, hm, b, h, hk, i0, m, kb, k);
      delta_sums_add(acc, k.dp, m, d.Sk - kb * kBwdBN < kBwdBN ? d.Sk - kb * kBwdBN : kBwdBN);
    }
    delta_sums_store(acc, delta, m);
  }
  const bool direct_bias = p.dbias && !cx.dbias_full;
  const bool bias_rowsum = direct_bias && p.dbias_dims[3] == 1;
  if (bias_rowsum)
    for (int64_t r = 0; r < m; ++r) p.dbias[bh * d.Sq + i0 + r] = 0.f;
  for (int64_t kb = 0; kb < cx.nkb; ++kb) {
    if (!block_visible(md, d, i0, m, kb)) continue;
    const int64_t j0 = kb * kBwdBN, n = d.Sk - j0 < kBwdBN ? d.Sk - j0 : kBwdBN;
    BwdTiles t2 = tl;
    if (cx.kept_tiles) {
      t2 = kept_tiles(kb);
      for (int64_t r = 0; r < m; ++r) {
        const V vnd = vset(-delta[r]);
        const float* pr = t2.p + r * kBwdBN;
        float* dsr = t2.dp + r * kBwdBN;
        for (int64_t c = 0; c < kBwdBN; c += kLanes) vstore(dsr + c, vfma(vload(pr + c), vnd, vload(dsr + c)));
      }
    } else {
      bwd_block(cx, hm, b, h, hk, i0, m, kb, t2);
    }
    if (p.dbias) {
      for (int64_t r = 0; r < m; ++r) {
        const float* ds = t2.dp + r * kBwdBN;
        const int64_t row = bh * d.Sq + i0 + r;
        if (cx.dbias_full) {
          for (int64_t c = 0; c < n; ++c) cx.dbias_full[row * d.Sk + j0 + c] = ds[c];
        } else if (bias_rowsum) {
          float s = 0.f;
          for (int64_t c = 0; c < n; ++c) s += ds[c];
          p.dbias[row] += s;
        } else {
          for (int64_t c = 0; c < n; ++c) p.dbias[row * d.Sk + j0 + c] = ds[c];
        }
      }
    }
    if (cap) softcap_grad(t2.dp, t2.cap, m);
    gemm<true>(m, cx.dp, n, t2.dp, kBwdBN, 1, cx.kf + ((b * d.Hk + hk) * d.Sk + j0) * cx.dp, cx.dp, dq, cx.dp);
  }
  prefault_rows(p.dq, b, h, i0, m, d.D);
  for (int64_t r = 0; r < m; ++r)
    store_row_scaled(elem_ptr(p.dq, b, h, i0 + r, 0), p.dq.dtype, tmp, dq + r * cx.dp, md.scale, d.D, p.dq.strides[3]);
}

// dbias[e] = sum of dbias_full over the dims where dbias has size 1, in a fixed order.
inline void bwd_reduce_bias_task(const BwdCtx& cx, int64_t e) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  const int64_t* od = p.dbias_dims;
  const int64_t full[4] = {d.B, d.Hq, d.Sq, d.Sk};
  int64_t idx[4], rest = e;
  for (int k = 3; k >= 0; --k) {
    idx[k] = rest % od[k];
    rest /= od[k];
  }
  int64_t lo[4], hi[4];
  for (int k = 0; k < 4; ++k) {
    const bool reduce = od[k] == 1 && full[k] != 1;
    lo[k] = reduce ? 0 : idx[k];
    hi[k] = reduce ? full[k] : idx[k] + 1;
  }
  double acc = 0.0;  // many terms: accumulate in double
  for (int64_t b = lo[0]; b < hi[0]; ++b)
    for (int64_t h = lo[1]; h < hi[1]; ++h)
      for (int64_t i = lo[2]; i < hi[2]; ++i) {
        const float* row = cx.dbias_full + ((b * d.Hq + h) * d.Sq + i) * d.Sk;
        for (int64_t j = lo[3]; j < hi[3]; ++j) acc += row[j];
      }
  p.dbias[e] = static_cast<float>(acc);
}

inline void backward_impl(const BwdProblem& p) {
  const Dims& d = p.dims;
  BwdCtx cx{};
  cx.p = &p;
  cx.G = d.Hq / d.Hk;
  cx.nqb = (d.Sq + kBwdBM - 1) / kBwdBM;
  cx.nkb = (d.Sk + kBwdBN - 1) / kBwdBN;
  cx.dp = static_cast<int64_t>(round_up(d.D, kLanes));
  cx.dvp = static_cast<int64_t>(round_up(d.Dv, kLanes));
  const int64_t rows_q = d.B * d.Hq * d.Sq, heads_k = d.B * d.Hk;
  // The converted rows, K^T/V^T blocks and Delta in one recycled call buffer (a fresh one is fresh
  // pages, faulted in by the prep pass at every call), each part 64-byte aligned.
  const size_t parts[6] = {round_up(rows_q * cx.dp, 16),
                           round_up(rows_q * cx.dvp, 16),
                           round_up(rows_q, 16),
                           round_up(heads_k * d.Sk * cx.dp, 16),
                           round_up(heads_k * cx.nkb * d.D * kBwdBN, 16),
                           round_up(heads_k * cx.nkb * d.Dv * kBwdBN, 16)};
  CallBuffer<float> rows(parts[0] + parts[1] + parts[2] + parts[3] + parts[4] + parts[5]);
  float* at = rows.get();
  float** dst[6] = {&cx.qf, &cx.dof, &cx.delta, &cx.kf, &cx.kt, &cx.vt};
  for (int i = 0; i < 6; ++i) {
    *dst[i] = at;
    at += parts[i];
  }
  // Delta: dO . O for fp32 outputs; rowsum(P * dP~) for 16-bit ones (bwd_delta_task), inside the dQ pass
  // while a query block's kept tiles (64 rows x Sk, 2 or 3 tiles) fit in kKeptBytes per thread.
  constexpr int64_t kKeptBytes = int64_t{4} << 20;
  const bool sixteen = p.dtype == DType::kFloat16 || p.dtype == DType::kBFloat16;
  cx.delta_from_o = !sixteen;
  const int64_t tiles = p.mods.softcap > 0.f ? 3 : 2;
  cx.kept_tiles = sixteen && tiles * cx.nkb * kBwdBM * kBwdBN * 4 <= kKeptBytes ? tiles : 0;

  // dbias: written in place when each task owns its rows (no reduction over b, h or i), else
  // through a full-size buffer and a reduction pass. Elements no task visits stay 0.
  const bool need_full = p.dbias && (p.dbias_dims[0] != d.B || p.dbias_dims[1] != d.Hq || p.dbias_dims[2] != d.Sq);
  const int64_t bias_elems = p.dbias_dims[0] * p.dbias_dims[1] * p.dbias_dims[2] * p.dbias_dims[3];
  Buffer<float> full(need_full ? static_cast<size_t>(rows_q * d.Sk) : 0);
  cx.dbias_full = need_full ? full.get() : nullptr;
  if (need_full) {
    parallel_for_each(rows_q, p.threads, [&](int64_t r) {
      float* row = cx.dbias_full + r * d.Sk;
      for (int64_t j = 0; j < d.Sk; ++j) row[j] = 0.f;
    });
  } else if (p.dbias && p.dbias_dims[3] != 1) {
    parallel_for_each(rows_q, p.threads, [&](int64_t r) {
      float* row = p.dbias + r * d.Sk;
      for (int64_t j = 0; j < d.Sk; ++j) row[j] = 0.f;
    });
  }

  parallel_for_each(d.B * d.Hq * cx.nqb + heads_k * cx.nkb, p.threads, [&](int64_t t) { bwd_prep_task(cx, t); });
  if (sixteen && !cx.kept_tiles)
    parallel_for_each(d.B * d.Hq * cx.nqb, p.threads, [&](int64_t t) { bwd_delta_task(cx, t); });
  parallel_for_each(d.B * d.Hq * cx.nqb, p.threads, [&](int64_t t) { bwd_dq_task(cx, t); });
  parallel_for_each(heads_k * cx.nkb, p.threads, [&](int64_t t) { bwd_dkdv_task(cx, t); });
  if (need_full) parallel_for_each(bias_elems, p.threads, [&](int64_t e) { bwd_reduce_bias_task(cx, e); });
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
