// The bf16 forward without conversion to fp32: forward_f32.h's transposed scheme with the two
// products on a bf16 unit, chosen by a Products policy:
//   AmxProducts (amx_products.h): AMX tile multiplies, TDPBF16PS (Sapphire Rapids and later);
//   DpProducts  (dp_products.h):  AVX512-BF16 vdpbf16ps register tiles (gemm_bf16.h).
// Everything between the products (logits, online softmax, rescale) is forward_f32.h's fp32
// vector code. Per task of 64 query rows and key block of kKB (a multiple of 64):
//   S^T [kKB keys x 64 rows]  = K . Q^T        K rows as A, Q^T in pairs of dims as B
//   P^T -> bf16, pairs of keys interleaved (the B layout of the next product), fused with the exp
//   O^T [Dv x 64 rows]       += V^T . P^T      V^T rows (read as pairs of keys) as A; O^T lives in
//                                              memory between blocks (the softmax rescales it)
// K and V^T are packed into zero-padded bf16 buffers (tile loads then never read past a tensor):
// each thread packs the key blocks its own tasks need, once per call (own_pack), while one pair fits
// in an L2; a larger pair is packed in one shared pass before the tasks.
// Q^T pairs once per task. P is rounded to bf16 for P.V as FlashAttention does.
#pragma once
#include <immintrin.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "kernels/forward_f32.h"

namespace attn_cpu {
namespace ATTN_ISA {

static_assert(kQB == 64 && kKB % 64 == 0, "the bf16 products are written for 64 query rows and 64k keys");

struct Bf16Ctx {
  FwdF32Ctx f;    // problem, task order, chunk (its kconv / vconv stay null)
  int64_t skp;    // Sk rounded up to kKB
  int64_t dp;     // D rounded up to 32
  int64_t dvp;    // Dv rounded up to 32
  int64_t vld;    // row length of V^T: skp plus 32, so that its rows are not a power of two apart
  uint16_t* kp;   // [npairs][skp][dp]   K rows (shared packing)
  uint16_t* vt;   // [npairs][dvp][vld]  V^T
  bool own;       // each thread packs the key blocks its tasks need into its own area (see own_pack)
  uint64_t call;  // this call's serial: a thread's own packing is valid for one call and one pair
};

// Serial numbers of bf16 calls (own packing keys on them, never on pointers that may be reused).
inline std::atomic<uint64_t>& bf16_call_serial() {
  static std::atomic<uint64_t> serial{0};
  return serial;
}

// Packs the 64 keys from j0 of pair (b, hk): K rows (zero past D and Sk) into kp and the matching
// 64 columns of V^T into vt (the pair's bases), transposed through blk (dvp x 72) so that neither
// side strides by a power of two.
inline void bf16_pack_slab(const Bf16Ctx& cx, int64_t b, int64_t hk, int64_t j0, uint16_t* kp, uint16_t* vt,
                           uint16_t* blk) {
  const FwdProblem& p = *cx.f.p;
  const Dims& d = p.dims;
  constexpr int64_t kLd = 64 + 8;
  for (int64_t c = 0; c < 64; ++c) {
    const int64_t j = j0 + c;
    uint16_t* krow = kp + j * cx.dp;
    if (j >= d.Sk) {
      std::memset(krow, 0, static_cast<size_t>(cx.dp) * 2);
      for (int64_t e = 0; e < cx.dvp; ++e) blk[e * kLd + c] = 0;
      continue;
    }
    const uint16_t* ks = static_cast<const uint16_t*>(kv_row(p.k, p.paged, b, hk, j));
    const uint16_t* vs = static_cast<const uint16_t*>(kv_row(p.v, p.paged, b, hk, j));
    if (p.k.strides[3] == 1) {
      std::memcpy(krow, ks, static_cast<size_t>(d.D) * 2);
      std::memset(krow + d.D, 0, static_cast<size_t>(cx.dp - d.D) * 2);
    } else {
      for (int64_t e = 0; e < cx.dp; ++e) krow[e] = e < d.D ? ks[e * p.k.strides[3]] : 0;
    }
    const int64_t vs3 = p.v.strides[3];
    for (int64_t e = 0; e < d.Dv; ++e) blk[e * kLd + c] = vs[e * vs3];
    for (int64_t e = d.Dv; e < cx.dvp; ++e) blk[e * kLd + c] = 0;
  }
  for (int64_t e = 0; e < cx.dvp; ++e) std::memcpy(vt + e * cx.vld + j0, blk + e * kLd, 128);
}

inline int64_t pack_blk_elems(const Bf16Ctx& cx) { return cx.dvp * (64 + 8); }

// Shared packing, one task per 64 keys of a pair of the chunk, before the attention tasks.
inline void bf16_pack_task(const Bf16Ctx& cx, int64_t t) {
  const Dims& d = cx.f.p->dims;
  const int64_t nkb = cx.skp / 64;
  const int64_t lp = t / nkb, j0 = (t % nkb) * 64;
  const int64_t pair = cx.f.pair0 + lp;
  uint16_t* blk = static_cast<uint16_t*>(thread_scratch(static_cast<size_t>(pack_blk_elems(cx)) * 2));
  bf16_pack_slab(cx, pair / d.Hk, pair % d.Hk, j0, cx.kp + lp * cx.skp * cx.dp, cx.vt + lp * cx.dvp * cx.vld, blk);
}

// Own packing: the thread's keep area holds a header (call serial, pair; always at the start, so
// that it is never read from bytes another layout used for data), a flag per 64 keys (packed
// yet), then one pair's packed K [skp][dp], V^T [dvp][vld] and the transpose block. A task packs
// the slabs of its key blocks that the thread has not packed yet in this call; the thread's next
// tasks (same head under Claim::kRanges) find them in its own L2, and no line of K/V written by
// one core is read by another (the shared packing's hand-off: a modified line in another core's
// L2 costs a cross-core transfer per tile row).
struct OwnPackHeader {
  uint64_t call;
  int64_t pair;
};

inline size_t own_pack_head_bytes(const Bf16Ctx& cx) {
  return round_up(sizeof(OwnPackHeader) + static_cast<size_t>(cx.skp / 64), 64);
}

inline size_t own_pack_bytes(const Bf16Ctx& cx) {
  return own_pack_head_bytes(cx) + static_cast<size_t>(cx.skp * cx.dp + cx.dvp * cx.vld + pack_blk_elems(cx)) * 2;
}

// The pair's packed K and V^T with key blocks [kb0, kb1] (of kKB keys) packed.
inline void own_pack(const Bf16Ctx& cx, int64_t pair, int64_t kb0, int64_t kb1, const uint16_t** kp,
                     const uint16_t** vt) {
  const Dims& d = cx.f.p->dims;
  bool fresh = false;
  char* area = static_cast<char*>(thread_keep_area(own_pack_bytes(cx), &fresh));
  OwnPackHeader* h = reinterpret_cast<OwnPackHeader*>(area);
  uint8_t* done = reinterpret_cast<uint8_t*>(area + sizeof(OwnPackHeader));
  uint16_t* k = reinterpret_cast<uint16_t*>(area + own_pack_head_bytes(cx));
  uint16_t* v = k + cx.skp * cx.dp;
  uint16_t* blk = v + cx.dvp * cx.vld;
  if (fresh || h->call != cx.call || h->pair != pair) {
    std::memset(done, 0, static_cast<size_t>(cx.skp / 64));
    h->call = cx.call;
    h->pair = pair;
  }
  for (int64_t s = kb0 * (kKB / 64); s < (kb1 + 1) * (kKB / 64); ++s) {
    if (done[s]) continue;
    bf16_pack_slab(cx, pair / d.Hk, pair % d.Hk, s * 64, k, v, blk);
    done[s] = 1;
  }
  *kp = k;
  *vt = v;
}

// Rows [i0, i0 + m) of head (b, h) of view x (bf16) as pairs of dims, 64 rows:
// dst[(kp * 64 + r) * 2 + u] = x[i0 + r][2 kp + u], zero past len (up to lenp, even) and past row m. The
// pair-packed B operand of a product over dims: Q^T here; K and V per key block in the backward.
inline void pack_dim_pairs(uint16_t* dst, const View4& x, int64_t b, int64_t h, int64_t i0, int64_t m, int64_t len,
                           int64_t lenp) {
  if (x.strides[3] == 1) {
    // Contiguous rows: move whole pairs (32 bits) at a time.
    uint32_t* d32 = reinterpret_cast<uint32_t*>(dst);
    const int64_t full = len / 2;
    for (int64_t r = 0; r < 64; ++r) {
      const uint16_t* xs = r < m ? static_cast<const uint16_t*>(elem_ptr(x, b, h, i0 + r, 0)) : nullptr;
      for (int64_t kp = 0; kp < lenp / 2; ++kp) {
        uint32_t w = 0;
        if (xs && kp < full)
          std::memcpy(&w, xs + 2 * kp, 4);
        else if (xs && kp == full && (len & 1))
          w = xs[2 * kp];
        d32[kp * 64 + r] = w;
      }
    }
  } else {
    for (int64_t r = 0; r < 64; ++r) {
      const uint16_t* xs = r < m ? static_cast<const uint16_t*>(elem_ptr(x, b, h, i0 + r, 0)) : nullptr;
      for (int64_t e = 0; e < lenp; ++e)
        dst[((e >> 1) * 64 + r) * 2 + (e & 1)] = xs && e < len ? xs[e * x.strides[3]] : 0;
    }
  }
}

// Pairs of fp32 rows -> bf16 with the two rows' elements interleaved: [a0 b0 a1 b1 ... a15 b15].
inline void store_pair(uint16_t* dst, __m512 a, __m512 b) {
  const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(b, a);  // a0..a15, b0..b15
  _mm512_storeu_si512(dst, _mm512_permutexvar_epi16(inter, h));
}

// pb[(jp * 64 + r) * 2 + u] = bf16(P^T[2 jp + u][r]) for keys < n, 0 past them, over `pairs` pairs of rows of
// st (64 floats each): the pair-packed B operand of a product whose sum runs over st's rows (the forward's P.V
// over keys; the backward's dV and dK over query rows, backward_bf16_pairs.h).
inline void pack_p_pairs(uint16_t* pb, const float* st, int64_t n, int64_t pairs = kKB / 2) {
  for (int64_t jp = 0; jp < pairs; ++jp) {
    const int64_t c0 = 2 * jp, c1 = c0 + 1;
    for (int g = 0; g < 4; ++g) {
      const __m512 a = c0 < n ? _mm512_loadu_ps(st + c0 * 64 + g * 16) : _mm512_setzero_ps();
      const __m512 b = c1 < n ? _mm512_loadu_ps(st + c1 * 64 + g * 16) : _mm512_setzero_ps();
      store_pair(pb + (jp * 64 + g * 16) * 2, a, b);
    }
  }
}

// 2^x for the P that goes to bf16 (x <= kRescaleLog2, as vexp2_upto127): a degree-4 polynomial,
// relative error 2.8e-6 and exactly 1 at x = 0, where vexp2_upto127 spends degree 6 on 1 ulp. P is
// rounded to bf16 (2^-9 relative) for P.V, and l's 2.8e-6 is far below what bf16 outputs resolve.
// Two FMAs less per element of the exp pass, the largest vector cost of this kernel.
inline __m512 exp2_for_bf16(__m512 x) {
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kExp2Floor), _CMP_NLT_UQ);
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(9.582852870e-03f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.590642492e-02f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402409862e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931241934e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  return _mm512_maskz_scalef_ps(live, p, n);
}

// softmax_exp_t and pack_p_pairs in one pass (no dropout): P^T goes straight to bf16 pairs and
// never back to memory in fp32. The exponent is formed as in softmax_exp_t (exp_arg).
template <bool kRounded>
inline void softmax_exp_pack_as(const F32Tile& t, uint16_t* pb, int64_t n, float unit, const V* shift) {
  const V vunit = vset(unit);
  V sum[kGroups], neg[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    sum[g] = vzero();
    neg[g] = vsub(vzero(), shift[g]);
  }
  for (int64_t jp = 0; jp < kKB / 2; ++jp) {
    const int64_t c0 = 2 * jp, c1 = c0 + 1;
    const float* r0 = t.st + c0 * kQB;
    const float* r1 = t.st + c1 * kQB;
#pragma GCC unroll 4
    for (int g = 0; g < kGroups; ++g) {
      const V a = c0 < n ? V{exp2_for_bf16(exp_arg<kRounded>(vload(r0 + g * kLanes), vunit, neg[g]).r)} : vzero();
      const V b = c1 < n ? V{exp2_for_bf16(exp_arg<kRounded>(vload(r1 + g * kLanes), vunit, neg[g]).r)} : vzero();
      sum[g] = vadd(sum[g], vadd(a, b));
      store_pair(pb + (jp * 64 + g * 16) * 2, a.r, b.r);
    }
  }
  for (int g = 0; g < kGroups; ++g) vstore(t.l + g * kLanes, vadd(vload(t.l + g * kLanes), sum[g]));
}

inline void softmax_exp_pack(const F32Tile& t, uint16_t* pb, int64_t n, float unit, const V* shift) {
  if (needs_rounded_exp(shift))
    softmax_exp_pack_as<true>(t, pb, n, unit, shift);
  else
    softmax_exp_pack_as<false>(t, pb, n, unit, shift);
}

template <class Prod>
inline void bf16_task(const Bf16Ctx& cx, int64_t task) {
  const FwdF32Ctx& fc = cx.f;
  const FwdProblem& p = *fc.p;
  const Dims& d = p.dims;
  const ScoreMods& md = p.mods;
  const int64_t head = task / fc.nqb, qb = fc.order[task % fc.nqb];
  const int64_t lp = head / fc.G, g = head % fc.G;
  const int64_t pair = fc.pair0 + lp, b = pair / d.Hk, hk = pair % d.Hk, h = hk * fc.G + g;
  const int64_t i0 = qb * kQB, m = d.Sq - i0 < kQB ? d.Sq - i0 : kQB;

  // Scratch: the fp32 tiles of forward_f32.h (O^T with dvp rows), Q^T pairs, P^T pairs.
  Dims dd = d;
  dd.Dv = cx.dvp;
  const size_t f32_bytes = round_up(F32Tile::bytes(dd), 64);
  char* base = static_cast<char*>(thread_scratch(f32_bytes + static_cast<size_t>(cx.dp * 64 * 2 + kKB * 64 * 2)));
  const F32Tile t = F32Tile::carve(base, dd);
  uint16_t* qv = reinterpret_cast<uint16_t*>(base + f32_bytes);
  uint16_t* pb = qv + cx.dp * 64;

  pack_dim_pairs(qv, p.q, b, h, i0, m, d.D, cx.dp);
  for (int64_t e = 0; e < cx.dvp * kQB; ++e) t.ot[e] = 0.f;
  for (int64_t r = 0; r < m; ++r) {
    t.rh[r] = h;
    t.ri[r] = i0 + r;
  }
  setup_rows(p, t, b, m);
  const HeadMods hm = head_mods(md, d.Sk, b, h);
  const RowRange first = key_range(md, d.Sk, i0), last = key_range(md, d.Sk, i0 + m - 1);
  const uint16_t* kp = nullptr;
  const uint16_t* vt = nullptr;
  if (!cx.own) {
    kp = cx.kp + lp * cx.skp * cx.dp;
    vt = cx.vt + lp * cx.dvp * cx.vld;
  } else if (first.lo <= last.hi) {
    own_pack(cx, pair, first.lo / kKB, last.hi / kKB, &kp, &vt);
  }

  Prod::begin();
  if (first.lo <= last.hi) {
    for (int64_t kb = first.lo / kKB; kb <= last.hi / kKB; ++kb) {
      const int64_t j0 = kb * kKB, n = d.Sk - j0 < kKB ? d.Sk - j0 : kKB;
      Prod::qk(t.st, kp + j0 * cx.dp, cx.dp, qv, n);
      const bool full = hm.simple && hm.scale > 0.f && last.lo <= j0 && first.hi >= j0 + n - 1;
      V shift[kGroups];
      const float unit = softmax_begin_t(fc, hm, t, m, j0, n, full, shift);
      if (md.has_dropout) {
        softmax_exp_t(t, n, unit, shift);
        dropout_t(p, t, b, m, j0, n);
        pack_p_pairs(pb, t.st, n);
      } else {
        softmax_exp_pack(t, pb, n, unit, shift);
      }
      Prod::pv(t.ot, vt + j0, cx.vld, d.Dv, cx.dvp, pb, n);
    }
  }
  Prod::end();
  store_out_t(p, t, b, m);
}

// Own packing (see own_pack) while one pair's packed K and V^T fit in an L2 (its point) and fewer than
// kOwnPackThreads threads share a pair (each of them packs the whole pair again: with 16 threads on 2 pairs
// the shared pass was 1.19-1.40x faster at S 1k-2k, D 128, and 1.02-1.16x on 4 pairs; AMX host, three
// alternations); otherwise the shared packing, chunked by kConvertBudget.
constexpr int64_t kOwnPackMax = int64_t{2} << 20;
constexpr int64_t kOwnPackThreads = 4;

template <class Prod>
inline void forward_bf16_pairs(const FwdProblem& p) {
  const Dims& d = p.dims;
  Bf16Ctx cx;
  cx.f.p = &p;
  cx.f.G = d.Hq / d.Hk;
  cx.f.nqb = (d.Sq + kQB - 1) / kQB;
  cx.skp = static_cast<int64_t>(round_up(d.Sk, kKB));
  cx.dp = static_cast<int64_t>(round_up(d.D, 32));
  cx.dvp = static_cast<int64_t>(round_up(d.Dv, 32));
  cx.vld = cx.skp + 32;
  Buffer<int64_t> order(static_cast<size_t>(cx.f.nqb)), work(static_cast<size_t>(cx.f.nqb));
  order_query_blocks(p.mods, d, kQB, kKB, order.get(), work.get());
  cx.f.order = order.get();
  const int64_t pairs = d.B * d.Hk;
  const int64_t pair_bytes = (cx.skp * cx.dp + cx.vld * cx.dvp) * 2;
  cx.own = pair_bytes <= kOwnPackMax && p.threads < kOwnPackThreads * pairs;
  cx.call = bf16_call_serial().fetch_add(1, std::memory_order_relaxed) + 1;
  int64_t chunk = cx.own ? pairs : kConvertBudget / pair_bytes;
  chunk = chunk < 1 ? 1 : chunk > pairs ? pairs : chunk;
  CallBuffer<uint16_t> kp(cx.own ? 0 : static_cast<size_t>(chunk * cx.skp * cx.dp));
  CallBuffer<uint16_t> vt(cx.own ? 0 : static_cast<size_t>(chunk * cx.dvp * cx.vld));
  cx.kp = kp.get();
  cx.vt = vt.get();
  for (int64_t pair0 = 0; pair0 < pairs; pair0 += chunk) {
    cx.f.pair0 = pair0;
    cx.f.npairs = pairs - pair0 < chunk ? pairs - pair0 : chunk;
    if (!cx.own) parallel_for_each(cx.f.npairs * (cx.skp / 64), p.threads, [&](int64_t t) { bf16_pack_task(cx, t); });
    parallel_for_each(
        cx.f.npairs * cx.f.G * cx.f.nqb, p.threads, [&](int64_t t) { bf16_task<Prod>(cx, t); }, Claim::kRanges);
  }
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
