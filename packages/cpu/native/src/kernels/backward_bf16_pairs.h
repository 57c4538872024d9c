// The bf16 backward without conversion to fp32: backward.h's schedules, Delta, kept tiles and per-element
// code (logits, P, dLogit, dropout, softcap, dbias) as they are, with its five products on a bf16 unit
// through the forward's Products policy (AmxProducts: AMX tiles; DpProducts: vdpbf16ps register tiles),
// multiplying bf16 pairs with fp32 accumulation. Per (64 query rows, 64 keys) block pair:
//   S   = Q . K^T           Q rows (A) . K as pairs of dims (B)           -> fp32 tile [rows][keys]
//   dP  = dO . V^T          dO rows (A) . V as pairs of dims (B)          -> fp32 tile
//   dV^T += dO^T . P~       dO^T (A) . P~ as pairs of rows (B, bf16)      -> fp32 sums [Dv][keys]
//   dK^T += Q^T . dS        Q^T (A) . dS as pairs of rows (B, bf16)       -> fp32 sums [D][keys]
//   dQ  += dS . K           dS rows (A, bf16) . K as pairs of keys (B)    -> fp32 [rows][D]
// P~ and dS are rounded to bf16 before their products, as FlashAttention does on GPUs; S and dP take the
// bf16 inputs exactly (products of bf16 pairs are exact in fp32). dK and dV sum transposed (columns =
// keys), so that both operands of their products come from layouts the tiles give without a transpose
// (pack_p_pairs), and are transposed once when stored. dQ, dK and dV are rounded to bf16 once, at the end.
// The operands are packed once per call by the prep pass (one task per query block and per key block,
// bf16 to bf16: no rounding), zero-padded to 32 in D and Dv, to 64 rows and keys, so every product runs
// on whole tiles. Every gradient element still has one writer and the same operations in the same order
// under either schedule (each product's element is a fixed chain over its sum): bitwise reproducible
// across runs, thread counts and schedules, on one level (AMX and vdpbf16ps round their sums differently).
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/backward.h"
#include "kernels/forward_bf16_pairs.h"

namespace attn_cpu {
namespace ATTN_ISA {

static_assert(kBwdBM == 64 && kBwdBN == 64, "the bf16 packs are written for 64 x 64 block pairs");

template <class Prod>
struct Bf16BwdOps {
  static constexpr size_t kPad = 32;  // D, Dv rounded up to whole tiles of bf16 pairs
  static constexpr int64_t kTile = kBwdBM * kBwdBN;
  static void begin() { Prod::begin(); }
  static void end() { Prod::end(); }

  // The call buffer's floats (base null), or its parts assigned from base (each 64-byte aligned): the packs
  // of BwdCtx (qb16 .. kk16) and Delta.
  static size_t operands(BwdCtx& cx, float* base) {
    const Dims& d = cx.p->dims;
    const int64_t qblocks = d.B * d.Hq * cx.nqb, kblocks = d.B * d.Hk * cx.nkb;
    const size_t halves[7] = {static_cast<size_t>(qblocks * 64 * cx.dp), static_cast<size_t>(qblocks * 64 * cx.dvp),
                              static_cast<size_t>(qblocks * 64 * cx.dp), static_cast<size_t>(qblocks * 64 * cx.dvp),
                              static_cast<size_t>(kblocks * 64 * cx.dp), static_cast<size_t>(kblocks * 64 * cx.dvp),
                              static_cast<size_t>(kblocks * 64 * cx.dp)};
    uint16_t** dst[7] = {&cx.qb16, &cx.dob16, &cx.qt16, &cx.dot16, &cx.kd16, &cx.vd16, &cx.kk16};
    size_t total = 0;
    for (int i = 0; i < 7; ++i) {
      if (base) *dst[i] = reinterpret_cast<uint16_t*>(base + total);
      total += round_up((halves[i] + 1) / 2, 16);
    }
    if (base) cx.delta = base + total;
    return total + round_up(d.B * d.Hq * d.Sq, 16);
  }

  // Rows [i0, i0 + m) of head (b, h) of a bf16 view as rows of lenp elements (zero past len and past row m),
  // 64 rows, and their transpose [lenp][64].
  static void rows_and_transpose(uint16_t* rows, uint16_t* tr, const View4& x, int64_t b, int64_t h, int64_t i0,
                                 int64_t m, int64_t len, int64_t lenp) {
    for (int64_t r = 0; r < 64; ++r) {
      uint16_t* dst = rows + r * lenp;
      if (r >= m) {
        std::memset(dst, 0, static_cast<size_t>(lenp) * 2);
        continue;
      }
      const uint16_t* src = static_cast<const uint16_t*>(elem_ptr(x, b, h, i0 + r, 0));
      if (x.strides[3] == 1) {
        std::memcpy(dst, src, static_cast<size_t>(len) * 2);
      } else {
        for (int64_t e = 0; e < len; ++e) dst[e] = src[e * x.strides[3]];
      }
      std::memset(dst + len, 0, static_cast<size_t>(lenp - len) * 2);
    }
    if (!tr) return;
    for (int64_t e = 0; e < lenp; ++e)
      for (int64_t r = 0; r < 64; ++r) tr[e * 64 + r] = rows[r * lenp + e];
  }

  // One task per query block (Q rows and Q^T, dO rows and dO^T), then one per key block (K and V as pairs
  // of dims, K as pairs of keys).
  static void prep_task(const BwdCtx& cx, int64_t t) {
    const BwdProblem& p = *cx.p;
    const Dims& d = p.dims;
    const int64_t nq = d.B * d.Hq * cx.nqb;
    if (t < nq) {
      const int64_t bh = t / cx.nqb, qb = t % cx.nqb, b = bh / d.Hq, h = bh % d.Hq;
      const int64_t i0 = qb * kBwdBM, m = d.Sq - i0 < kBwdBM ? d.Sq - i0 : kBwdBM;
      rows_and_transpose(cx.qb16 + t * 64 * cx.dp, cx.qt16 + t * 64 * cx.dp, p.q, b, h, i0, m, d.D, cx.dp);
      rows_and_transpose(cx.dob16 + t * 64 * cx.dvp, cx.dot16 + t * 64 * cx.dvp, p.dout, b, h, i0, m, d.Dv, cx.dvp);
      return;
    }
    t -= nq;
    const int64_t bhk = t / cx.nkb, kb = t % cx.nkb, b = bhk / d.Hk, hk = bhk % d.Hk;
    const int64_t j0 = kb * kBwdBN, n = d.Sk - j0 < kBwdBN ? d.Sk - j0 : kBwdBN;
    pack_dim_pairs(cx.kd16 + t * 64 * cx.dp, p.k, b, hk, j0, n, d.D, cx.dp);
    pack_dim_pairs(cx.vd16 + t * 64 * cx.dvp, p.v, b, hk, j0, n, d.Dv, cx.dvp);
    // K as pairs of keys: kk[(c' * dp + e) * 2 + u] = K[j0 + 2c' + u][e], through its rows.
    uint16_t* krows = static_cast<uint16_t*>(thread_scratch(static_cast<size_t>(64 * cx.dp) * 2));
    rows_and_transpose(krows, nullptr, p.k, b, hk, j0, n, d.D, cx.dp);
    uint32_t* kk = reinterpret_cast<uint32_t*>(cx.kk16 + t * 64 * cx.dp);
    for (int64_t c = 0; c < 32; ++c) {
      const uint16_t* r0 = krows + 2 * c * cx.dp;
      const uint16_t* r1 = r0 + cx.dp;
      for (int64_t e = 0; e < cx.dp; ++e) kk[c * cx.dp + e] = r0[e] | static_cast<uint32_t>(r1[e]) << 16;
    }
  }

  static void s_dp(const BwdCtx& cx, int64_t bh, int64_t bhk, int64_t i0, int64_t, int64_t kb, const BwdTiles& t) {
    const int64_t qblk = bh * cx.nqb + i0 / kBwdBM, kblk = bhk * cx.nkb + kb;
    Prod::template mm<false>(kBwdBM, kBwdBN, cx.dp, cx.qb16 + qblk * 64 * cx.dp, cx.dp, cx.kd16 + kblk * 64 * cx.dp,
                             kBwdBN, t.p, kBwdBN);
    Prod::template mm<false>(kBwdBM, kBwdBN, cx.dvp, cx.dob16 + qblk * 64 * cx.dvp, cx.dvp,
                             cx.vd16 + kblk * 64 * cx.dvp, kBwdBN, t.dp, kBwdBN);
  }

  // dV^T[:][c] += dO^T P~[:][c];  dK^T[:][c] += Q^T dX[:][c], key c at the sums' column c0 + c. P~ and dX go to
  // bf16 as pairs of rows (rows from m on as 0), the products' B operand.
  static void kv_update(const BwdCtx& cx, const BwdTiles& t, int64_t bh, int64_t, int64_t m, int64_t qb,
                        const KvSums& kv, int64_t c0) {
    const int64_t qblk = bh * cx.nqb + qb;
    uint16_t* pd = t.b16;
    uint16_t* ds = pd + kTile;
    pack_p_pairs(pd, t.pd, m, kBwdBM / 2);
    pack_p_pairs(ds, t.dp, m, kBwdBM / 2);
    Prod::template mm<true>(cx.dvp, kBwdBN, kBwdBM, cx.dot16 + qblk * 64 * cx.dvp, kBwdBM, pd, kBwdBN, kv.dv + c0,
                            kv.ld);
    Prod::template mm<true>(cx.dp, kBwdBN, kBwdBM, cx.qt16 + qblk * 64 * cx.dp, kBwdBM, ds, kBwdBN, kv.dk + c0, kv.ld);
  }

  // dQ[r][:] += sum_c dX[r][c] K[c][:]: dX rows to bf16 (keys from n on, and rows from m on, as 0: the K
  // pack is 0 there, and 0 * a NaN dX would not be).
  static void dq_update(const BwdCtx& cx, const BwdTiles& t, int64_t bhk, int64_t m, int64_t n, int64_t kb, float* dq) {
    uint16_t* a = t.b16 + 2 * kTile;
    const __mmask16 none = 0;
    for (int64_t r = 0; r < kBwdBM; ++r) {
      const float* src = t.dp + r * kBwdBN;
      uint16_t* dst = a + r * kBwdBN;
      for (int64_t c = 0; c < kBwdBN; c += 32) {
        const int64_t left = r < m ? n - c : 0;
        const __mmask16 k0 = left >= 16 ? static_cast<__mmask16>(0xffff)
                             : left > 0 ? static_cast<__mmask16>((1u << left) - 1)
                                        : none;
        const int64_t left1 = left - 16;
        const __mmask16 k1 = left1 >= 16 ? static_cast<__mmask16>(0xffff)
                             : left1 > 0 ? static_cast<__mmask16>((1u << left1) - 1)
                                         : none;
        const __m512 lo = _mm512_maskz_loadu_ps(k0, src + c);
        const __m512 hi = _mm512_maskz_loadu_ps(k1, src + c + 16);
        _mm512_storeu_si512(dst + c, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      }
    }
    Prod::template mm<true>(kBwdBM, cx.dp, kBwdBN, a, kBwdBN, cx.kk16 + (bhk * cx.nkb + kb) * 64 * cx.dp, cx.dp, dq,
                            cx.dp);
  }

  // dK (scaled) and dV of keys [j0, j0 + n) from the transposed sums (first column: key j0).
  static void store_kv(const BwdCtx& cx, int64_t b, int64_t hk, int64_t j0, int64_t n, const KvSums& kv, float* tmp) {
    const BwdProblem& p = *cx.p;
    const Dims& d = p.dims;
    prefault_rows(p.dk, b, hk, j0, n, d.D);
    prefault_rows(p.dv, b, hk, j0, n, d.Dv);
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t e = 0; e < d.D; ++e) tmp[e] = kv.dk[e * kv.ld + c];
      store_row_scaled(elem_ptr(p.dk, b, hk, j0 + c, 0), p.dk.dtype, tmp, tmp, p.mods.scale, d.D, p.dk.strides[3]);
      for (int64_t e = 0; e < d.Dv; ++e) tmp[e] = kv.dv[e * kv.ld + c];
      store_row(elem_ptr(p.dv, b, hk, j0 + c, 0), p.dv.dtype, tmp, d.Dv, p.dv.strides[3]);
    }
  }
};

// bf16 backward on the products of Prod (every call of bf16 dtype that reaches the level: dense, varlen and
// sequsedK parts alike, every feature, any head dim).
template <class Prod>
inline void backward_bf16_pairs(const BwdProblem& p) {
  backward_impl<Bf16BwdOps<Prod>>(p);
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
