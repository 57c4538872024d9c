// The backward kernel (FlashAttention-2's, recomputing P from the saved logsumexp), fp32 accumulation
// for every input dtype. Its five products come from an Ops policy: F32Ops (below: fp32 products on
// rows converted once per call) or Bf16BwdOps (backward_bf16_pairs.h: bf16 pairs on AMX tiles or
// vdpbf16ps, for bf16 calls on those levels); everything between the products is this file's, for both.
// Every gradient element has exactly one writer (no atomics), and every path below computes each
// element with the same operations in the same order, so the result is bitwise reproducible across
// runs, thread counts and paths. Two schedules:
//   fused, one task per (batch, kv head): the group's query heads walk each (query block, key block) pair
//           once, five products per pair (S, dP, dV, dK, dQ); dK and dV of the head's keys sum in the
//           task's scratch. Taken when the tasks keep the threads busy (backward_impl says when).
//   two passes, for few heads on many threads: pass 1, one task per (batch, query head, query block):
//           dQ, and dbias for an additive mask (and, for 16-bit outputs, Delta first: see bwd_dq_task);
//           pass 2, one task per (batch, kv head, key block): dK, dV, summed over the query heads of the
//           group. Both recompute S = Q.K^T and dP = dO.V^T: seven products per pair.
// Per element: P = exp(logit - lse), P~ = P * keep / (1 - p), dP~ = dP * keep / (1 - p),
// dLogit = P * dP~ - P * Delta (one fma on the rounded P * dP~) with Delta = rowsum(dO * O) = rowsum(P * dP~);
// dX = dLogit * (1 - tanh^2) under softcap;
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
  int64_t kept_tiles;            // 16-bit: tiles kept per key block for Delta and dLogit (0: Delta in its own pass)
  bool kept_pd;                  // the kept tiles include P~ (fused schedule with dropout: dV needs it)
  // The bf16 products' operands (backward_bf16_pairs.h; null for fp32 products), per query block of 64 rows
  // (zero past the rows) and per key block of kBwdBN keys (zero past Sk), zero past D / Dv:
  uint16_t* qb16;   // [B*Hq][nqb][64][dp]      Q rows
  uint16_t* dob16;  // [B*Hq][nqb][64][dvp]     dO rows
  uint16_t* qt16;   // [B*Hq][nqb][dp][64]      Q^T
  uint16_t* dot16;  // [B*Hq][nqb][dvp][64]     dO^T
  uint16_t* kd16;   // [B*Hk][nkb][dp/2][64][2] K as pairs of dims
  uint16_t* vd16;   // [B*Hk][nkb][dvp/2][64][2] V as pairs of dims
  uint16_t* kk16;   // [B*Hk][nkb][32][dp][2]   K as pairs of keys
};

// Rows whose Delta chains run side by side in bwd_prep_task: one row's chain is D dependent multiply-adds (4
// cycles each); eight rows' independent chains keep the FMA pipes busy instead.
constexpr int64_t kDeltaRows = 8;

// Rows -> padded fp32 rows, K^T and V^T blocks, and Delta. One task per (head, 64-row block) of
// each source; tasks [0, nq) are query-side, [nq, nq + nk) key-side.
inline void bwd_prep_task(const BwdCtx& cx, int64_t t) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  // Query side: kDeltaRows rows of O; key side: a whole block of V rows (transposed from there).
  float* tmp = static_cast<float*>(thread_scratch(static_cast<size_t>(kBwdBN * cx.dvp) * 4 + 64));
  const int64_t nq = d.B * d.Hq * cx.nqb;
  if (t < nq) {
    const int64_t bh = t / cx.nqb, i0 = (t % cx.nqb) * kBwdBM, b = bh / d.Hq, h = bh % d.Hq;
    const int64_t i1 = d.Sq < i0 + kBwdBM ? d.Sq : i0 + kBwdBM;
    for (int64_t r0 = i0; r0 < i1; r0 += kDeltaRows) {
      const int64_t nr = i1 - r0 < kDeltaRows ? i1 - r0 : kDeltaRows;
      for (int64_t i = r0; i < r0 + nr; ++i) {
        float* q = cx.qf + (bh * d.Sq + i) * cx.dp;
        float* go = cx.dof + (bh * d.Sq + i) * cx.dvp;
        load_row(q, elem_ptr(p.q, b, h, i, 0), p.q.dtype, d.D, p.q.strides[3]);
        for (int64_t e = d.D; e < cx.dp; ++e) q[e] = 0.f;
        load_row(go, elem_ptr(p.dout, b, h, i, 0), p.dout.dtype, d.Dv, p.dout.strides[3]);
        for (int64_t e = d.Dv; e < cx.dvp; ++e) go[e] = 0.f;
        if (cx.delta_from_o)
          load_row(tmp + (i - r0) * cx.dvp, elem_ptr(p.out, b, h, i, 0), p.out.dtype, d.Dv, p.out.strides[3]);
      }
      if (!cx.delta_from_o) continue;
      // Delta = dO . O with the same multiply-adds (fma1 rounds as vfma), in the same order, as the micro-kernel's
      // dP = dO . V: where O equals V (one visible key) dP - Delta is then exactly 0, as it must be. Each row's
      // chain is its own; only their issue interleaves.
      const float* go = cx.dof + (bh * d.Sq + r0) * cx.dvp;
      float acc[kDeltaRows] = {};
      if (nr == kDeltaRows) {
        for (int64_t e = 0; e < d.Dv; ++e)
          for (int64_t r = 0; r < kDeltaRows; ++r) acc[r] = fma1(go[r * cx.dvp + e], tmp[r * cx.dvp + e], acc[r]);
      } else {
        for (int64_t r = 0; r < nr; ++r)
          for (int64_t e = 0; e < d.Dv; ++e) acc[r] = fma1(go[r * cx.dvp + e], tmp[r * cx.dvp + e], acc[r]);
      }
      for (int64_t r = 0; r < nr; ++r) cx.delta[bh * d.Sq + r0 + r] = acc[r];
    }
    return;
  }
  t -= nq;
  const int64_t bh = t / cx.nkb, kb = t % cx.nkb, b = bh / d.Hk, h = bh % d.Hk;
  const int64_t j0 = kb * kBwdBN, n = d.Sk - j0 < kBwdBN ? d.Sk - j0 : kBwdBN;
  float* kt = cx.kt + (bh * cx.nkb + kb) * d.D * kBwdBN;
  float* vt = cx.vt + (bh * cx.nkb + kb) * d.Dv * kBwdBN;
  float* kf = cx.kf + (bh * d.Sk + j0) * cx.dp;
  for (int64_t c = 0; c < n; ++c) {
    load_row(kf + c * cx.dp, elem_ptr(p.k, b, h, j0 + c, 0), p.k.dtype, d.D, p.k.strides[3]);
    for (int64_t e = d.D; e < cx.dp; ++e) kf[c * cx.dp + e] = 0.f;
    load_row(tmp + c * cx.dvp, elem_ptr(p.v, b, h, j0 + c, 0), p.v.dtype, d.Dv, p.v.strides[3]);
  }
  // K^T and V^T: a whole block by strided vector loads (kLanes keys of one column each); a block cut by Sk
  // element by element, zero past it.
  if (n == kBwdBN) {
    for (int64_t e = 0; e < d.D; ++e)
      for (int64_t c = 0; c < kBwdBN; c += kLanes)
        vstore(kt + e * kBwdBN + c, vgather_stride(kf + c * cx.dp + e, static_cast<int32_t>(cx.dp)));
    for (int64_t e = 0; e < d.Dv; ++e)
      for (int64_t c = 0; c < kBwdBN; c += kLanes)
        vstore(vt + e * kBwdBN + c, vgather_stride(tmp + c * cx.dvp + e, static_cast<int32_t>(cx.dvp)));
    return;
  }
  for (int64_t e = 0; e < d.D; ++e)
    for (int64_t c = 0; c < kBwdBN; ++c) kt[e * kBwdBN + c] = c < n ? kf[c * cx.dp + e] : 0.f;
  for (int64_t e = 0; e < d.Dv; ++e)
    for (int64_t c = 0; c < kBwdBN; ++c) vt[e * kBwdBN + c] = c < n ? tmp[c * cx.dvp + e] : 0.f;
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
  uint16_t* b16;  // the bf16 products' operands of the pair: 3 x kBwdBM x kBwdBN (backward_bf16_pairs.h)
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
template <class Ops>
inline void bwd_block(const BwdCtx& cx, const HeadMods& hm, int64_t b, int64_t h, int64_t hk, int64_t i0, int64_t m,
                      int64_t kb, const BwdTiles& t) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  const ScoreMods& md = p.mods;
  const int64_t bh = b * d.Hq + h, bhk = b * d.Hk + hk;
  const int64_t j0 = kb * kBwdBN, n = d.Sk - j0 < kBwdBN ? d.Sk - j0 : kBwdBN;
  Ops::s_dp(cx, bh, bhk, i0, m, kb, t);
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
    const V vl = vset(lse), vnd = vset(-cx.delta[bh * d.Sq + i]);
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
      // dLogit = fma(P, -Delta, P * dP~), P * dP~ rounded on its own (vmul_round: never fused into the fma), the
      // form of the kept tiles' (ds_from_kept), so that dQ and dK see the same dLogit whether it was kept or
      // recomputed; with Delta = 0 it is P * dP~ exactly.
      vstore(dpr + c, vfma(pv, vnd, vmul_round(pv, dpv)));
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
  t.b16 = reinterpret_cast<uint16_t*>(t.maskbuf + 2 * kBwdBN);
  t.keep = reinterpret_cast<uint8_t*>(t.b16 + 3 * kBwdBM * kBwdBN);
  return t;
}
constexpr size_t kTileFloats = 4 * kBwdBM * kBwdBN + 2 * kBwdBN + 3 * kBwdBM * kBwdBN / 2;

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

// A query block's kept tiles (16-bit outputs, while they fit: BwdCtx::kept_tiles tiles per key block):
// P, P * dP~ (in the dLogit slot), the softcap's tanh, and in the fused schedule with dropout P~. Without
// dropout P~ is P itself: bwd_block then stores the same values through both pointers. With dropout but no
// kept P~ (pass 1 of the two passes: it computes dQ alone, and never reads P~), P~ goes to the scratch's
// own tile: through the P pointer it would overwrite the kept P that ds_from_kept reads (dQ was then wrong).
struct KeptTiles {
  float* base;
  int64_t per_block;  // BwdCtx::kept_tiles
  bool cap, pd, drop;

  BwdTiles at(const BwdTiles& scratch, int64_t kb) const {
    constexpr int64_t kTile = kBwdBM * kBwdBN;
    BwdTiles k = scratch;
    k.p = base + kb * per_block * kTile;
    k.dp = k.p + kTile;
    float* next = k.dp + kTile;
    if (cap) {
      k.cap = next;
      next += kTile;
    }
    k.pd = pd ? next : drop ? scratch.pd : k.p;
    return k;
  }
};

// Delta of rows [i0, i0 + m) of head (b, h) as rowsum(P * dP~), into cx.delta: bwd_block with Delta = 0
// leaves P * dP~ in its dLogit tile. Into the kept tiles when there are some (they then hold what the
// block pairs' dLogit needs), else through the scratch tiles (one more S and dP product per pair).
template <class Ops>
inline void row_deltas(const BwdCtx& cx, const HeadMods& hm, int64_t b, int64_t h, int64_t i0, int64_t m,
                       const KeptTiles* kept, const BwdTiles& scratch) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  float* delta = cx.delta + (b * d.Hq + h) * d.Sq + i0;
  for (int64_t r = 0; r < m; ++r) delta[r] = 0.f;
  DeltaSums acc;
  delta_sums_clear(acc);
  for (int64_t kb = 0; kb < cx.nkb; ++kb) {
    if (!block_visible(p.mods, d, i0, m, kb)) continue;
    const BwdTiles t = kept ? kept->at(scratch, kb) : scratch;
    bwd_block<Ops>(cx, hm, b, h, h / cx.G, i0, m, kb, t);
    delta_sums_add(acc, t.dp, m, d.Sk - kb * kBwdBN < kBwdBN ? d.Sk - kb * kBwdBN : kBwdBN);
  }
  delta_sums_store(acc, delta, m);
}

// Delta in a pass of its own, for 16-bit outputs whose kept tiles would not fit (kept_tiles == 0).
template <class Ops>
inline void bwd_delta_task(const BwdCtx& cx, int64_t t) {
  const Dims& d = cx.p->dims;
  const int64_t bh = t / cx.nqb, qb = t % cx.nqb, b = bh / d.Hq, h = bh % d.Hq;
  const int64_t i0 = qb * kBwdBM, m = d.Sq - i0 < kBwdBM ? d.Sq - i0 : kBwdBM;
  float* base = static_cast<float*>(thread_scratch(kTileFloats * 4 + kBwdBN + 256));
  Ops::begin();
  row_deltas<Ops>(cx, head_mods(cx.p->mods, d.Sk, b, h), b, h, i0, m, nullptr, bwd_tiles(base, kBwdBM));
  Ops::end();
}

// dLogit of a kept block pair, bwd_block's form on its kept operands: fma(P, -Delta, P * dP~). Rows whose
// lse is NaN keep 0 outside their key range (bwd_block's zero_outside_range), where a NaN Delta would
// otherwise reach the dK of keys the row never saw.
inline void ds_from_kept(const BwdCtx& cx, const BwdTiles& k, int64_t b, int64_t h, int64_t i0, int64_t m, int64_t j0,
                         int64_t n) {
  const BwdProblem& p = *cx.p;
  const float* delta = cx.delta + (b * p.dims.Hq + h) * p.dims.Sq + i0;
  for (int64_t r = 0; r < m; ++r) {
    const V vnd = vset(-delta[r]);
    float* pr = k.p + r * kBwdBN;
    float* dsr = k.dp + r * kBwdBN;
    for (int64_t c = 0; c < kBwdBN; c += kLanes) vstore(dsr + c, vfma(vload(pr + c), vnd, vload(dsr + c)));
    const float lse = p.lse[b * p.lse_sb + h * p.lse_sh + i0 + r];
    if (lse != lse) zero_outside_range(pr, k.pd + r * kBwdBN, dsr, key_range(p.mods, p.dims.Sk, i0 + r), j0, n);
  }
}

// dbias of a block pair from its dLogit tile ds (before the softcap's factor): into the full-size buffer, as a
// sum over keys (dbias [.., Sq, 1], rows zeroed by the caller), or in place.
inline void dbias_block(const BwdCtx& cx, const float* ds, int64_t bh, int64_t i0, int64_t m, int64_t j0, int64_t n) {
  const BwdProblem& p = *cx.p;
  const int64_t Sq = p.dims.Sq, Sk = p.dims.Sk;
  for (int64_t r = 0; r < m; ++r) {
    const float* dsr = ds + r * kBwdBN;
    const int64_t row = bh * Sq + i0 + r;
    if (cx.dbias_full) {
      for (int64_t c = 0; c < n; ++c) cx.dbias_full[row * Sk + j0 + c] = dsr[c];
    } else if (p.dbias_dims[3] == 1) {
      float s = 0.f;
      for (int64_t c = 0; c < n; ++c) s += dsr[c];
      p.dbias[row] += s;
    } else {
      for (int64_t c = 0; c < n; ++c) p.dbias[row * Sk + j0 + c] = dsr[c];
    }
  }
}

// Scratch of a task that walks query blocks (bwd_dq_task, bwd_group_task): dq, tmp (dp + dvp), the kept tiles
// (kept_tiles per key block, when there are some) and the block pair's tiles, each 64-byte aligned.
struct QueryBlockScratch {
  float *dq, *tmp;
  KeptTiles kept;
  BwdTiles tiles;
  const KeptTiles* kept_or_null(const BwdCtx& cx) const { return cx.kept_tiles ? &kept : nullptr; }
};
inline int64_t query_block_head_floats(const BwdCtx& cx) { return round_up(kBwdBM * cx.dp + cx.dp + cx.dvp, 16); }
inline size_t query_block_scratch_bytes(const BwdCtx& cx) {
  return (query_block_head_floats(cx) + cx.kept_tiles * cx.nkb * kBwdBM * kBwdBN + kTileFloats) * 4 + kBwdBN + 256;
}
inline QueryBlockScratch query_block_scratch(const BwdCtx& cx, float* base) {
  QueryBlockScratch s;
  s.dq = base;
  s.tmp = s.dq + kBwdBM * cx.dp;
  const int64_t head = query_block_head_floats(cx);
  s.kept = KeptTiles{base + head, cx.kept_tiles, cx.p->mods.softcap > 0.f, cx.kept_pd, cx.p->mods.has_dropout};
  s.tiles = bwd_tiles(base + head + cx.kept_tiles * cx.nkb * kBwdBM * kBwdBN, kBwdBM);
  return s;
}

// dK and dV sums of one kv head's keys: in the fused schedule all its keys, in pass 2 one key block's. Their
// layout is the products' (Ops): rows [key][dp] and [key][dvp] for fp32, columns [dp][ld] and [dvp][ld]
// for bf16 (ld: the keys summed, nkb * kBwdBN or kBwdBN).
struct KvSums {
  float *dk, *dv;
  int64_t ld;
};

// Query block qb of head (b, h) against every key block it sees: dQ summed over the key blocks in order into
// s.dq and stored, dbias; with kv (the fused schedule)
// also each pair's dV += P~^T dO and dK += dX^T Q. With kept tiles, Delta comes first: row_deltas runs
// every visible block once and keeps its tiles, and each pair's dLogit is then formed from them
// (ds_from_kept) instead of a second S and dP product.
// Key blocks [kb0, kb1) only, dQ summed into dq (kBwdBM x dp floats): the first range (kb0 = 0) zeroes it and
// the last (kb1 = nkb) stores it, so a caller that walks the key blocks in ranges, in order, sums every dQ
// element over the same key blocks in the same order as one pass (the same bits). With kept tiles (one query
// block's, in s) the range is all key blocks.
template <class Ops>
inline void bwd_query_block(const BwdCtx& cx, int64_t b, int64_t h, int64_t qb, const QueryBlockScratch& s,
                            const KvSums* kv, float* dq, int64_t kb0, int64_t kb1) {
  const BwdProblem& p = *cx.p;
  const Dims& d = p.dims;
  const ScoreMods& md = p.mods;
  const int64_t bh = b * d.Hq + h, hk = h / cx.G;
  const int64_t i0 = qb * kBwdBM, m = d.Sq - i0 < kBwdBM ? d.Sq - i0 : kBwdBM;
  const HeadMods hm = head_mods(md, d.Sk, b, h);
  const KeptTiles* kept = s.kept_or_null(cx);
  const BwdTiles& scratch = s.tiles;
  if (kb0 == 0) {
    for (int64_t e = 0; e < kBwdBM * cx.dp; ++e) dq[e] = 0.f;
    if (kept) row_deltas<Ops>(cx, hm, b, h, i0, m, kept, scratch);
    if (p.dbias && !cx.dbias_full && p.dbias_dims[3] == 1)
      for (int64_t r = 0; r < m; ++r) p.dbias[bh * d.Sq + i0 + r] = 0.f;
  }
  for (int64_t kb = kb0; kb < kb1; ++kb) {
    if (!block_visible(md, d, i0, m, kb)) continue;
    const int64_t j0 = kb * kBwdBN, n = d.Sk - j0 < kBwdBN ? d.Sk - j0 : kBwdBN;
    BwdTiles t = scratch;
    if (kept) {
      t = kept->at(scratch, kb);
      ds_from_kept(cx, t, b, h, i0, m, j0, n);
    } else {
      bwd_block<Ops>(cx, hm, b, h, hk, i0, m, kb, t);
    }
    if (p.dbias) dbias_block(cx, t.dp, bh, i0, m, j0, n);
    if (md.softcap > 0.f) softcap_grad(t.dp, t.cap, m);
    if (kv) Ops::kv_update(cx, t, bh, i0, m, qb, *kv, j0);
    Ops::dq_update(cx, t, b * d.Hk + hk, m, n, kb, dq);
  }
  if (kb1 < cx.nkb) return;
  prefault_rows(p.dq, b, h, i0, m, d.D);
  for (int64_t r = 0; r < m; ++r)
    store_row_scaled(elem_ptr(p.dq, b, h, i0 + r, 0), p.dq.dtype, s.tmp, dq + r * cx.dp, md.scale, d.D,
                     p.dq.strides[3]);
}

// Rows [j0, j0 + n) of kv head (b, hk)'s dK (scaled) and dV from their fp32 sums (tmp: dp + dvp floats).
inline void store_kv_rows(const BwdCtx& cx, int64_t b, int64_t hk, int64_t j0, int64_t n, const float* dk,
                          const float* dv, float* tmp) {
  const BwdProblem& p = *cx.p;
  prefault_rows(p.dk, b, hk, j0, n, p.dims.D);
  prefault_rows(p.dv, b, hk, j0, n, p.dims.Dv);
  for (int64_t c = 0; c < n; ++c) {
    store_row_scaled(elem_ptr(p.dk, b, hk, j0 + c, 0), p.dk.dtype, tmp, dk + c * cx.dp, p.mods.scale, p.dims.D,
                     p.dk.strides[3]);
    store_row(elem_ptr(p.dv, b, hk, j0 + c, 0), p.dv.dtype, dv + c * cx.dvp, p.dims.Dv, p.dv.strides[3]);
  }
}

// The fp32 products (gemm.h) on the operands bwd_prep_task converts: Q, dO and K rows, K^T and V^T per key
// block. dK and dV sum as rows [key][dp] and [key][dvp].
struct F32Ops {
  static constexpr size_t kPad = kLanes;  // dp, dvp: D, Dv rounded up to this
  static void begin() {}
  static void end() {}

  // The call buffer's floats (base null), or its parts assigned from base: the converted rows, Delta, the
  // K^T/V^T blocks, each 64-byte aligned.
  static size_t operands(BwdCtx& cx, float* base) {
    const Dims& d = cx.p->dims;
    const int64_t rows_q = d.B * d.Hq * d.Sq, heads_k = d.B * d.Hk;
    const size_t parts[6] = {round_up(rows_q * cx.dp, 16),
                             round_up(rows_q * cx.dvp, 16),
                             round_up(rows_q, 16),
                             round_up(heads_k * d.Sk * cx.dp, 16),
                             round_up(heads_k * cx.nkb * d.D * kBwdBN, 16),
                             round_up(heads_k * cx.nkb * d.Dv * kBwdBN, 16)};
    float** dst[6] = {&cx.qf, &cx.dof, &cx.delta, &cx.kf, &cx.kt, &cx.vt};
    size_t total = 0;
    for (int i = 0; i < 6; ++i) {
      if (base) *dst[i] = base + total;
      total += parts[i];
    }
    return total;
  }
  static void prep_task(const BwdCtx& cx, int64_t t) { bwd_prep_task(cx, t); }

  // S = Q K^T into t.p, dP = dO V^T into t.dp: rows [i0, i0 + m) of head bh against key block kb of kv head bhk.
  static void s_dp(const BwdCtx& cx, int64_t bh, int64_t bhk, int64_t i0, int64_t m, int64_t kb, const BwdTiles& t) {
    const Dims& d = cx.p->dims;
    const float* q = cx.qf + (bh * d.Sq + i0) * cx.dp;
    const float* go = cx.dof + (bh * d.Sq + i0) * cx.dvp;
    gemm<false>(m, kBwdBN, d.D, q, cx.dp, 1, cx.kt + (bhk * cx.nkb + kb) * d.D * kBwdBN, kBwdBN, t.p, kBwdBN);
    gemm<false>(m, kBwdBN, d.Dv, go, cx.dvp, 1, cx.vt + (bhk * cx.nkb + kb) * d.Dv * kBwdBN, kBwdBN, t.dp, kBwdBN);
  }
  // dV[c][:] += sum_r P~[r][c] dO[r][:];  dK[c][:] += sum_r dX[r][c] Q[r][:], key c at sums' key c0 + c.
  static void kv_update(const BwdCtx& cx, const BwdTiles& t, int64_t bh, int64_t i0, int64_t m, int64_t,
                        const KvSums& kv, int64_t c0) {
    const Dims& d = cx.p->dims;
    const float* q = cx.qf + (bh * d.Sq + i0) * cx.dp;
    const float* go = cx.dof + (bh * d.Sq + i0) * cx.dvp;
    gemm<true>(kBwdBN, cx.dvp, m, t.pd, 1, kBwdBN, go, cx.dvp, kv.dv + c0 * cx.dvp, cx.dvp);
    gemm<true>(kBwdBN, cx.dp, m, t.dp, 1, kBwdBN, q, cx.dp, kv.dk + c0 * cx.dp, cx.dp);
  }
  // dQ[r][:] += sum_c dX[r][c] K[c][:] over the n keys of block kb.
  static void dq_update(const BwdCtx& cx, const BwdTiles& t, int64_t bhk, int64_t m, int64_t n, int64_t kb, float* dq) {
    const int64_t j0 = kb * kBwdBN;
    gemm<true>(m, cx.dp, n, t.dp, kBwdBN, 1, cx.kf + (bhk * cx.p->dims.Sk + j0) * cx.dp, cx.dp, dq, cx.dp);
  }
  // dK (scaled) and dV of keys [j0, j0 + n) from the sums, whose first key is j0.
  static void store_kv(const BwdCtx& cx, int64_t b, int64_t hk, int64_t j0, int64_t n, const KvSums& kv, float* tmp) {
    store_kv_rows(cx, b, hk, j0, n, kv.dk, kv.dv, tmp);
  }
};

// Pass 2 of the two-pass schedule: dK, dV of one key block, summed over the group's query heads and
// query blocks in the fused schedule's order.
template <class Ops>
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
  const KvSums kv{dk, dv, kBwdBN};
  Ops::begin();
  for (int64_t g = 0; g < cx.G; ++g) {
    const int64_t h = hk * cx.G + g, bh = b * d.Hq + h;
    const HeadMods hm = head_mods(p.mods, d.Sk, b, h);
    for (int64_t qb = 0; qb < cx.nqb; ++qb) {
      const int64_t i0 = qb * kBwdBM, m = d.Sq - i0 < kBwdBM ? d.Sq - i0 : kBwdBM;
      if (!block_visible(p.mods, d, i0, m, kb)) continue;
      bwd_block<Ops>(cx, hm, b, h, hk, i0, m, kb, tl);
      if (p.mods.softcap > 0.f) softcap_grad(tl.dp, tl.cap, m);
      Ops::kv_update(cx, tl, bh, i0, m, qb, kv, 0);
    }
  }
  Ops::end();
  Ops::store_kv(cx, b, hk, j0, n, kv, tmp);
}

// Pass 1 of the two-pass schedule: dQ (and dbias) of one query block.
template <class Ops>
inline void bwd_dq_task(const BwdCtx& cx, int64_t t) {
  const Dims& d = cx.p->dims;
  const int64_t bh = t / cx.nqb, qb = t % cx.nqb;
  const QueryBlockScratch s =
      query_block_scratch(cx, static_cast<float*>(thread_scratch(query_block_scratch_bytes(cx))));
  Ops::begin();
  bwd_query_block<Ops>(cx, bh / d.Hq, bh % d.Hq, qb, s, nullptr, s.dq, 0, cx.nkb);
  Ops::end();
}

// The fused schedule: every gradient of kv head (b, hk) and of its group's query heads, in one task. The
// dK/dV sums take kv_sum_floats after the query-block scratch. Their leading dimension has 16 floats past
// the keys: the bf16 pairs' sums are columns [dp][ld], and a power-of-two ld (S 4k: 16 KB) would put all
// rows of a product's C tile in one L1 set (the f32 layout, rows [key][dp], only needs the room).
inline int64_t kv_sum_ld(const BwdCtx& cx) { return cx.nkb * kBwdBN + 16; }
// The sums' floats at leading dimension ld (kv_sum_ld; the fused-or-two-pass choice counts the keys alone).
inline int64_t kv_sum_floats(const BwdCtx& cx, int64_t ld) { return round_up(ld * (cx.dp + cx.dvp), 16); }
// Key blocks per walk of a fused task's query blocks (bwd_group_task): the key side of a walk (K^T, V^T and the K
// rows, the dK and dV sums: 160 KB a key block at D 128) is a third of the core's L2, so it stays there while every
// query block of the group passes, where a walk over all key blocks per query block streamed the head's whole key
// side from L3 again for each (S 1k, D 128: 2.5 MB). The fp32 products alone in the fused order (1 thread, S 1k,
// D 128, a 2-vCPU Xeon with 2 MB of L2): 151-157 GFLOP/s walking all 16 key blocks per query block, 162-170 in
// walks of 4 (this rule's), 165-167 of 1 or 2, 165 of 6; at D 64 (1.25 MB a head, in L2 either way) 168-169 for
// any walk. The dQ sums of all the group's query blocks then live through the walks: walks only while they fit
// kChunkDqBytes, and never with kept tiles (one query block's at a time).
constexpr int64_t kChunkDqBytes = int64_t{16} << 20;
inline int64_t key_chunk_blocks(const BwdCtx& cx) {
  const Dims& d = cx.p->dims;
  if (cx.kept_tiles || cx.G * cx.nqb * kBwdBM * cx.dp * 4 > kChunkDqBytes) return cx.nkb;
  const int64_t per_block = ((d.D + d.Dv) * kBwdBN + kBwdBN * (2 * cx.dp + cx.dvp)) * 4;
  const int64_t c = static_cast<int64_t>(l2_cache_bytes() / 3) / per_block;
  return c < 1 ? 1 : c > cx.nkb ? cx.nkb : c;
}

template <class Ops>
inline void bwd_group_task(const BwdCtx& cx, int64_t t) {
  const Dims& d = cx.p->dims;
  const int64_t b = t / d.Hk, hk = t % d.Hk;
  const size_t qbytes = round_up(query_block_scratch_bytes(cx), 64);
  const int64_t ld = kv_sum_ld(cx);
  const size_t sum_bytes = round_up(static_cast<size_t>(kv_sum_floats(cx, ld)) * 4, 64);
  const int64_t chunk = key_chunk_blocks(cx), dq_floats = kBwdBM * cx.dp;
  const size_t dq_bytes = chunk < cx.nkb ? static_cast<size_t>(cx.G * cx.nqb * dq_floats) * 4 : 0;
  char* base = static_cast<char*>(thread_scratch(qbytes + sum_bytes + dq_bytes));
  const QueryBlockScratch s = query_block_scratch(cx, reinterpret_cast<float*>(base));
  float* sums = reinterpret_cast<float*>(base + qbytes);
  float* dqs = dq_bytes ? reinterpret_cast<float*>(base + qbytes + sum_bytes) : nullptr;  // [G][nqb][64][dp]
  const KvSums kv{sums, sums + ld * cx.dp, ld};
  for (int64_t e = 0; e < ld * (cx.dp + cx.dvp); ++e) sums[e] = 0.f;
  Ops::begin();
  for (int64_t kb0 = 0; kb0 < cx.nkb; kb0 += chunk) {
    const int64_t kb1 = cx.nkb - kb0 < chunk ? cx.nkb : kb0 + chunk;
    for (int64_t g = 0; g < cx.G; ++g)
      for (int64_t qb = 0; qb < cx.nqb; ++qb)
        bwd_query_block<Ops>(cx, b, hk * cx.G + g, qb, s, &kv, dqs ? dqs + (g * cx.nqb + qb) * dq_floats : s.dq, kb0,
                             kb1);
  }
  Ops::end();
  Ops::store_kv(cx, b, hk, 0, d.Sk, kv, s.tmp);
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

template <class Ops>
inline void backward_impl(const BwdProblem& p) {
  const Dims& d = p.dims;
  BwdCtx cx{};
  cx.p = &p;
  cx.G = d.Hq / d.Hk;
  cx.nqb = (d.Sq + kBwdBM - 1) / kBwdBM;
  cx.nkb = (d.Sk + kBwdBN - 1) / kBwdBN;
  cx.dp = static_cast<int64_t>(round_up(d.D, Ops::kPad));
  cx.dvp = static_cast<int64_t>(round_up(d.Dv, Ops::kPad));
  const int64_t rows_q = d.B * d.Hq * d.Sq, heads_k = d.B * d.Hk;
  // The products' operands (Ops::operands: converted rows, K^T/V^T blocks, or bf16 packs) and Delta in one
  // recycled call buffer (a fresh one is fresh pages, faulted in by the prep pass at every call).
  CallBuffer<float> rows(Ops::operands(cx, nullptr));
  Ops::operands(cx, rows.get());
  // The schedule. The fused one computes 5 of the two passes' 7 products per block pair, in B * Hk tasks of
  // equal work (every kv head sees the same block pairs), so it wins while ceil(tasks / threads) * 5 <=
  // tasks / threads * 7; its dK/dV sums (kv_sum_floats, without the padding) must also fit kFusedSumBytes of a
  // thread's scratch.
  // Both give the same bits (backward.h's header), so the choice may depend on the thread count.
  constexpr int64_t kFusedSumBytes = int64_t{8} << 20;
  const int64_t threads = p.threads < 1 ? 1 : p.threads;
  const bool fused = heads_k > 0 && (heads_k + threads - 1) / threads * threads * 5 <= heads_k * 7 &&
                     kv_sum_floats(cx, cx.nkb * kBwdBN) * 4 <= kFusedSumBytes;
  // Delta: dO . O for fp32 outputs; rowsum(P * dP~) for 16-bit ones (row_deltas), kept with the tiles each
  // block pair's dLogit needs while a query block's kept tiles (64 rows x Sk: 2 to 4 tiles) fit in kKeptBytes
  // per thread, else in a pass of its own (bwd_delta_task).
  constexpr int64_t kKeptBytes = int64_t{4} << 20;
  const bool sixteen = p.dtype == DType::kFloat16 || p.dtype == DType::kBFloat16;
  cx.delta_from_o = !sixteen;
  cx.kept_pd = fused && p.mods.has_dropout;
  const int64_t tiles = 2 + (p.mods.softcap > 0.f ? 1 : 0) + (cx.kept_pd ? 1 : 0);
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

  parallel_for_each(d.B * d.Hq * cx.nqb + heads_k * cx.nkb, p.threads, [&](int64_t t) { Ops::prep_task(cx, t); });
  if (sixteen && !cx.kept_tiles)
    parallel_for_each(d.B * d.Hq * cx.nqb, p.threads, [&](int64_t t) { bwd_delta_task<Ops>(cx, t); });
  if (fused) {
    parallel_for_each(heads_k, p.threads, [&](int64_t t) { bwd_group_task<Ops>(cx, t); });
  } else {
    parallel_for_each(d.B * d.Hq * cx.nqb, p.threads, [&](int64_t t) { bwd_dq_task<Ops>(cx, t); });
    parallel_for_each(heads_k * cx.nkb, p.threads, [&](int64_t t) { bwd_dkdv_task<Ops>(cx, t); });
  }
  if (need_full) parallel_for_each(bias_elems, p.threads, [&](int64_t e) { bwd_reduce_bias_task(cx, e); });
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
