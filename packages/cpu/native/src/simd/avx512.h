// 16 x fp32 vectors for AVX-512 (F, BW, VL, DQ). Included only by kernel TUs compiled with those
// flags, inside their own namespace (see kernels/isa_*.cpp).
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "problem.h"

namespace attn_cpu {
namespace ATTN_ISA {

constexpr int kLanes = 16;
constexpr const char* kIsaName = "avx512";

struct V {
  __m512 r;
};

#define ATTN_X86_PS(op) _mm512_##op##_ps
#include "x86_lane_ops.h"  // vzero .. vmin
#undef ATTN_X86_PS
inline V vabs(V a) { return {_mm512_abs_ps(a.r)}; }
inline float hmax(V a) { return _mm512_reduce_max_ps(a.r); }
inline float hsum(V a) { return _mm512_reduce_add_ps(a.r); }
inline V viota() { return {_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)}; }
// x where lo <= c <= hi (per lane), else -inf.
inline V vkeep_range(V x, V c, float lo, float hi) {
  const __mmask16 in =
      _mm512_cmp_ps_mask(c.r, _mm512_set1_ps(lo), _CMP_GE_OQ) & _mm512_cmp_ps_mask(c.r, _mm512_set1_ps(hi), _CMP_LE_OQ);
  return {_mm512_mask_blend_ps(in, _mm512_set1_ps(-__builtin_inff()), x.r)};
}
// x where lo <= c <= hi (per-lane bounds), else -inf.
inline V vkeep_range2(V x, V c, V lo, V hi) {
  const __mmask16 in = _mm512_cmp_ps_mask(c.r, lo.r, _CMP_GE_OQ) & _mm512_cmp_ps_mask(c.r, hi.r, _CMP_LE_OQ);
  return {_mm512_mask_blend_ps(in, _mm512_set1_ps(-__builtin_inff()), x.r)};
}
// 16 bytes (0 or 1) as 0.f / 1.f.
inline V vfrom_u8(const uint8_t* p) {
  return {_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))))};
}

// Below these the result is flushed to exactly 0 by a mask rather than computed: an underflowing
// (subnormal or rounded-to-zero) result costs a microcode assist of ~100 cycles per instruction,
// and masked-out scores (-inf) would hit it on every call. e^-87 and 2^-125 are still normal.
constexpr float kExpFloor = -87.f;
constexpr float kExp2Floor = -125.f;

// exp(x), about 1 ulp: x = n ln2 + r, |r| <= ln2/2, Cephes' polynomial for e^r, scaled by 2^n with
// vscalefps. x < -87 (including -inf) gives 0; NaN propagates.
inline V vexp(V x) {
  const __mmask16 live = _mm512_cmp_ps_mask(x.r, _mm512_set1_ps(kExpFloor), _CMP_NLT_UQ);  // NaN stays live
  __m512 t = _mm512_max_ps(_mm512_set1_ps(kExpFloor), x.r);
  t = _mm512_min_ps(_mm512_set1_ps(88.7228394f), t);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return {_mm512_maskz_scalef_ps(live, p, n)};
}

// 2^x, about 1 ulp: x = n + f, |f| <= 1/2, Cephes' exp2f polynomial, scaled with vscalefps.
// x < -125 (including -inf) gives 0; NaN propagates.
inline V vexp2(V x) {
  const __mmask16 live = _mm512_cmp_ps_mask(x.r, _mm512_set1_ps(kExp2Floor), _CMP_NLT_UQ);
  __m512 t = _mm512_max_ps(_mm512_set1_ps(kExp2Floor), x.r);
  t = _mm512_min_ps(_mm512_set1_ps(128.f), t);
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.535336188319500e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.339887440266574e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618437357674640e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550332471162809e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402264791363012e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931472028550421e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  return {_mm512_maskz_scalef_ps(live, p, n)};
}

// 2^x for x <= 127 (softmax exponents: at most the lazy-rescale threshold), without vexp2's
// clamps: x < -125 and -inf lanes are zeroed by the mask whatever garbage they compute.
inline V vexp2_upto127(V x) {
  const __mmask16 live = _mm512_cmp_ps_mask(x.r, _mm512_set1_ps(kExp2Floor), _CMP_NLT_UQ);
  const __m512 n = _mm512_roundscale_ps(x.r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x.r, n);
  __m512 p = _mm512_set1_ps(1.535336188319500e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.339887440266574e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.618437357674640e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.550332471162809e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402264791363012e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931472028550421e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  return {_mm512_maskz_scalef_ps(live, p, n)};
}

// p[0], p[stride], ..., p[15 * stride].
inline V vgather_stride(const float* p, int32_t stride) {
  const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                         _mm512_set1_epi32(stride));
  return {_mm512_i32gather_ps(idx, p, 4)};
}
// Whether a > b in any lane.
// One lane of vfma, rounded exactly as vfma rounds it (fused here or not).
inline float fma1(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline bool vany_gt(V a, V b) { return _mm512_cmp_ps_mask(a.r, b.r, _CMP_GT_OQ) != 0; }

// Dropout's Philox4x32-10 (as packages/native/include/attn/philox.h, bit for bit) on 16
// counters at once. Returns bit c set when key j0 + c (c < 64, j0 a multiple of 4) of score row
// (bh, i) is kept: one counter per 4 keys, word (j & 3) against the threshold.
inline __m512i mulhi_epu32(__m512i a, __m512i b) {
  const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(a, b), 32);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32));
  return _mm512_mask_blend_epi32(0xAAAA, even, odd);
}
inline uint64_t keep_mask64(const ScoreMods& md, uint32_t bh, uint32_t i, int64_t j0) {
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  __m512i x = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(j0 >> 2))),
                               _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  __m512i y = _mm512_set1_epi32(static_cast<int>(i));
  __m512i z = _mm512_set1_epi32(static_cast<int>(bh));
  __m512i w = _mm512_set1_epi32(static_cast<int>(md.rng_offset));
  uint32_t k0 = static_cast<uint32_t>(md.seed), k1 = static_cast<uint32_t>(md.seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const __m512i lo0 = _mm512_mullo_epi32(m0, x), hi0 = mulhi_epu32(m0, x);
    const __m512i lo1 = _mm512_mullo_epi32(m1, z), hi1 = mulhi_epu32(m1, z);
    x = _mm512_xor_si512(_mm512_xor_si512(hi1, y), _mm512_set1_epi32(static_cast<int>(k0)));
    y = lo1;
    z = _mm512_xor_si512(_mm512_xor_si512(hi0, w), _mm512_set1_epi32(static_cast<int>(k1)));
    w = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  const __m512i thr = _mm512_set1_epi32(static_cast<int>(md.threshold));
  const uint64_t kx = _mm512_cmp_epu32_mask(x, thr, _MM_CMPINT_NLT), ky = _mm512_cmp_epu32_mask(y, thr, _MM_CMPINT_NLT);
  const uint64_t kz = _mm512_cmp_epu32_mask(z, thr, _MM_CMPINT_NLT), kw = _mm512_cmp_epu32_mask(w, thr, _MM_CMPINT_NLT);
  return _pdep_u64(kx, 0x1111111111111111ull) | _pdep_u64(ky, 0x2222222222222222ull) |
         _pdep_u64(kz, 0x4444444444444444ull) | _pdep_u64(kw, 0x8888888888888888ull);
}

// Half types <-> fp32, 16 at a time. bf16 -> fp32 is exact; fp32 -> half rounds to nearest even.
inline V vload_bf16(const uint16_t* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return {_mm512_castsi512_ps(_mm512_slli_epi32(w, 16))};
}
inline V vload_f16(const uint16_t* p) {
  return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
inline void vstore_f16(uint16_t* p, V a) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_cvtps_ph(a.r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline void vstore_bf16(uint16_t* p, V a) {
  const __m512i u = _mm512_castps_si512(a.r);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  // NaN keeps its sign and becomes a quiet NaN (rounding could have turned it into inf).
  const __mmask16 nan = _mm512_cmp_ps_mask(a.r, a.r, _CMP_UNORD_Q);
  r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
