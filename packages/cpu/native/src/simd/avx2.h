// 8 x fp32 vectors for AVX2 + FMA + F16C. Included only by the TU compiled with those flags.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "problem.h"

namespace attn_cpu {
namespace ATTN_ISA {

constexpr int kLanes = 8;
constexpr const char* kIsaName = "avx2";

struct V {
  __m256 r;
};

#define ATTN_X86_PS(op) _mm256_##op##_ps
#include "x86_lane_ops.h"  // vzero .. vmin
#undef ATTN_X86_PS
inline V vabs(V a) { return {_mm256_andnot_ps(_mm256_set1_ps(-0.f), a.r)}; }
inline float hmax(V a) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(a.r), _mm256_extractf128_ps(a.r, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
inline float hsum(V a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.r), _mm256_extractf128_ps(a.r, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline V viota() { return {_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7)}; }
inline V vkeep_range(V x, V c, float lo, float hi) {
  const __m256 in = _mm256_and_ps(_mm256_cmp_ps(c.r, _mm256_set1_ps(lo), _CMP_GE_OQ),
                                  _mm256_cmp_ps(c.r, _mm256_set1_ps(hi), _CMP_LE_OQ));
  return {_mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), x.r, in)};
}
inline V vkeep_range2(V x, V c, V lo, V hi) {
  const __m256 in = _mm256_and_ps(_mm256_cmp_ps(c.r, lo.r, _CMP_GE_OQ), _mm256_cmp_ps(c.r, hi.r, _CMP_LE_OQ));
  return {_mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), x.r, in)};
}
inline V vfrom_u8(const uint8_t* p) {
  return {_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))};
}

// exp(x) as avx512.h, with 2^n built in the exponent field; below x = -87 the result is flushed
// to 0 by a mask (never computed as a subnormal: that costs a microcode assist), so exp(-inf) = 0.
inline V vexp(V x) {
  const __m256 lo = _mm256_set1_ps(-87.f);
  __m256 t = _mm256_max_ps(lo, x.r);
  t = _mm256_min_ps(_mm256_set1_ps(88.3762626f), t);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), t);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  // x < lo (including -inf) -> 0; NaN is unordered, so it keeps y (NaN).
  return {_mm256_andnot_ps(_mm256_cmp_ps(x.r, lo, _CMP_LT_OQ), y)};
}

// 2^x as vexp, 2^n in the exponent field; below x = -125 flushed to 0 (so 2^-inf = 0).
inline V vexp2(V x) {
  const __m256 lo = _mm256_set1_ps(-125.f);
  __m256 t = _mm256_max_ps(lo, x.r);
  t = _mm256_min_ps(_mm256_set1_ps(127.f), t);
  const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(t, n);
  __m256 p = _mm256_set1_ps(1.535336188319500e-4f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.339887440266574e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.618437357674640e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.550332471162809e-2f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.402264791363012e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.931472028550421e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return {_mm256_andnot_ps(_mm256_cmp_ps(x.r, lo, _CMP_LT_OQ), _mm256_mul_ps(p, _mm256_castsi256_ps(e)))};
}
inline V vgather_stride(const float* p, int32_t stride) {
  const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(stride));
  return {_mm256_i32gather_ps(p, idx, 4)};
}
// 2^x for x <= 127 (see avx512.h); here the same as vexp2.
inline V vexp2_upto127(V x) { return vexp2(x); }
// One lane of vfma, rounded exactly as vfma rounds it (fused here or not).
inline float fma1(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline bool vany_gt(V a, V b) { return _mm256_movemask_ps(_mm256_cmp_ps(a.r, b.r, _CMP_GT_OQ)) != 0; }

// Dropout's Philox4x32-10 (as attn/philox.h, bit for bit) on 8 counters at once; see avx512.h.
inline __m256i mulhi_epu32(__m256i a, __m256i b) {
  const __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(a, b), 32);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32));
  return _mm256_blend_epi32(even, odd, 0xAA);
}
// Bits of 8 counters (32 keys from j0): kept when word >= threshold (unsigned).
inline uint32_t keep_mask32(const ScoreMods& md, uint32_t bh, uint32_t i, int64_t j0) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  __m256i x = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(j0 >> 2))),
                               _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i y = _mm256_set1_epi32(static_cast<int>(i));
  __m256i z = _mm256_set1_epi32(static_cast<int>(bh));
  __m256i w = _mm256_set1_epi32(static_cast<int>(md.rng_offset));
  uint32_t k0 = static_cast<uint32_t>(md.seed), k1 = static_cast<uint32_t>(md.seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const __m256i lo0 = _mm256_mullo_epi32(m0, x), hi0 = mulhi_epu32(m0, x);
    const __m256i lo1 = _mm256_mullo_epi32(m1, z), hi1 = mulhi_epu32(m1, z);
    x = _mm256_xor_si256(_mm256_xor_si256(hi1, y), _mm256_set1_epi32(static_cast<int>(k0)));
    y = lo1;
    z = _mm256_xor_si256(_mm256_xor_si256(hi0, w), _mm256_set1_epi32(static_cast<int>(k1)));
    w = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  // word >= thr (unsigned) <=> !(thr > word): flip the sign bits and compare signed.
  const __m256i flip = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i thr = _mm256_xor_si256(_mm256_set1_epi32(static_cast<int>(md.threshold)), flip);
  auto kept = [&](__m256i v) {
    return static_cast<uint32_t>(
               ~_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(thr, _mm256_xor_si256(v, flip))))) &
           0xffu;
  };
  return _pdep_u32(kept(x), 0x11111111u) | _pdep_u32(kept(y), 0x22222222u) | _pdep_u32(kept(z), 0x44444444u) |
         _pdep_u32(kept(w), 0x88888888u);
}
inline uint64_t keep_mask64(const ScoreMods& md, uint32_t bh, uint32_t i, int64_t j0) {
  return keep_mask32(md, bh, i, j0) | static_cast<uint64_t>(keep_mask32(md, bh, i, j0 + 32)) << 32;
}

inline V vload_bf16(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(w, 16))};
}
inline V vload_f16(const uint16_t* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))};
}
inline void vstore_f16(uint16_t* p, V a) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(a.r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline void vstore_bf16(uint16_t* p, V a) {
  const __m256i u = _mm256_castps_si256(a.r);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(a.r, a.r, _CMP_UNORD_Q));
  r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40)), nan);
  // r holds 16-bit values in 32-bit lanes; pack to 8 x uint16 (no saturation since < 65536).
  const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
