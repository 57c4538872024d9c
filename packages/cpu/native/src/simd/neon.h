// 4 x fp32 vectors for AArch64 Advanced SIMD (NEON). Included only by isa_neon.cpp, which CMake
// builds on arm64 targets (NEON is part of the AArch64 base architecture, so no extra flags).
// Each function keeps the semantics simd/avx2.h documents (maxps's NaN rule, the exp flush, bf16
// rounding) so that every ISA computes the same values.
#pragma once
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "dropout.h"
#include "problem.h"

namespace attn_cpu {
namespace ATTN_ISA {

constexpr int kLanes = 4;
constexpr const char* kIsaName = "neon";

struct V {
  float32x4_t r;
};

inline V vzero() { return {vdupq_n_f32(0.f)}; }
inline V vset(float x) { return {vdupq_n_f32(x)}; }
inline V vload(const float* p) { return {vld1q_f32(p)}; }
inline void vstore(float* p, V a) { vst1q_f32(p, a.r); }
inline V vadd(V a, V b) { return {vaddq_f32(a.r, b.r)}; }
inline V vsub(V a, V b) { return {vsubq_f32(a.r, b.r)}; }
inline V vmul(V a, V b) { return {vmulq_f32(a.r, b.r)}; }
// a * b rounded to float and never fused into a following add (GCC contracts vmulq + vaddq into
// fmla under its default -ffp-contract=fast): for a product that must equal the same product
// computed elsewhere, bit for bit.
inline V vmul_round(V a, V b) {
  float32x4_t r = vmulq_f32(a.r, b.r);
  __asm__("" : "+w"(r));
  return {r};
}
inline V vdiv(V a, V b) { return {vdivq_f32(a.r, b.r)}; }
inline V vfma(V a, V b, V c) { return {vfmaq_f32(c.r, a.r, b.r)}; }
// As x86's maxps / minps: the second operand when either is NaN (fmax / fmin would return NaN,
// which vtanh's branch test and the running max rely on not happening).
inline V vmax(V a, V b) { return {vbslq_f32(vcgtq_f32(a.r, b.r), a.r, b.r)}; }
inline V vmin(V a, V b) { return {vbslq_f32(vcltq_f32(a.r, b.r), a.r, b.r)}; }
inline V vabs(V a) { return {vabsq_f32(a.r)}; }
inline float hmax(V a) { return vmaxvq_f32(a.r); }
inline float hsum(V a) { return vaddvq_f32(a.r); }
inline V viota() {
  static const float k[4] = {0.f, 1.f, 2.f, 3.f};
  return {vld1q_f32(k)};
}
inline V vkeep_range(V x, V c, float lo, float hi) {
  const uint32x4_t in = vandq_u32(vcgeq_f32(c.r, vdupq_n_f32(lo)), vcleq_f32(c.r, vdupq_n_f32(hi)));
  return {vbslq_f32(in, x.r, vdupq_n_f32(-__builtin_inff()))};
}
inline V vkeep_range2(V x, V c, V lo, V hi) {
  const uint32x4_t in = vandq_u32(vcgeq_f32(c.r, lo.r), vcleq_f32(c.r, hi.r));
  return {vbslq_f32(in, x.r, vdupq_n_f32(-__builtin_inff()))};
}
inline V vfrom_u8(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  const uint16x8_t h = vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w)));
  return {vcvtq_f32_u32(vmovl_u16(vget_low_u16(h)))};
}

// exp(x) as simd/avx2.h: Cephes' polynomial, 2^n in the exponent field; below x = -87 flushed to
// 0 by a mask, so exp(-inf) = 0; NaN is unordered, so it keeps the polynomial's NaN.
inline V vexp(V x) {
  const float32x4_t lo = vdupq_n_f32(-87.f);
  float32x4_t t = vbslq_f32(vcgtq_f32(lo, x.r), lo, x.r);  // maxps(lo, x): x when NaN
  t = vbslq_f32(vcltq_f32(vdupq_n_f32(88.3762626f), t), vdupq_n_f32(88.3762626f), t);
  const float32x4_t n = vrndnq_f32(vmulq_f32(t, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(t, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.f)), p, vmulq_f32(r, r));
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
  const float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
  return {vbslq_f32(vcltq_f32(x.r, lo), vdupq_n_f32(0.f), y)};
}

// 2^x as vexp; below x = -125 flushed to 0 (so 2^-inf = 0).
inline V vexp2(V x) {
  const float32x4_t lo = vdupq_n_f32(-125.f), hi = vdupq_n_f32(127.f);
  float32x4_t t = vbslq_f32(vcgtq_f32(lo, x.r), lo, x.r);
  t = vbslq_f32(vcltq_f32(hi, t), hi, t);
  const float32x4_t n = vrndnq_f32(t);
  const float32x4_t f = vsubq_f32(t, n);
  float32x4_t p = vdupq_n_f32(1.535336188319500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.339887440266574e-3f), p, f);
  p = vfmaq_f32(vdupq_n_f32(9.618437357674640e-3f), p, f);
  p = vfmaq_f32(vdupq_n_f32(5.550332471162809e-2f), p, f);
  p = vfmaq_f32(vdupq_n_f32(2.402264791363012e-1f), p, f);
  p = vfmaq_f32(vdupq_n_f32(6.931472028550421e-1f), p, f);
  p = vfmaq_f32(vdupq_n_f32(1.f), p, f);
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127)), 23);
  const float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
  return {vbslq_f32(vcltq_f32(x.r, lo), vdupq_n_f32(0.f), y)};
}
inline V vgather_stride(const float* p, int32_t stride) {
  const float g[4] = {p[0], p[stride], p[2 * stride], p[3 * stride]};
  return {vld1q_f32(g)};
}
// 2^x for x <= 127 (see avx512.h); here the same as vexp2.
inline V vexp2_upto127(V x) { return vexp2(x); }
// One lane of vfma, rounded exactly as vfma rounds it (fmla is fused).
inline float fma1(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline bool vany_gt(V a, V b) { return vmaxvq_u32(vcgtq_f32(a.r, b.r)) != 0; }

// Dropout keep bits of keys j0 .. j0+63 (scalar Philox, compiled once in dropout.cpp).
inline uint64_t keep_mask64(const ScoreMods& md, uint32_t bh, uint32_t i, int64_t j0) {
  return dropout_keep_mask64(md, bh, i, j0);
}

inline V vload_bf16(const uint16_t* p) { return {vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16))}; }
inline V vload_f16(const uint16_t* p) { return {vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)))}; }
// fcvtn rounds to nearest even (FPCR's default mode); NaN stays NaN, overflow becomes inf.
inline void vstore_f16(uint16_t* p, V a) { vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(a.r))); }
// Round to nearest even on the bits, as simd/avx2.h; NaN keeps its top bits with the quiet bit set.
inline void vstore_bf16(uint16_t* p, V a) {
  const uint32x4_t u = vreinterpretq_u32_f32(a.r);
  const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
  const uint32x4_t r = vshrq_n_u32(vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7fff)), lsb), 16);
  const uint32x4_t nan = vmvnq_u32(vceqq_f32(a.r, a.r));
  const uint32x4_t q = vorrq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(0x40));
  vst1_u16(p, vmovn_u32(vbslq_u32(nan, q, r)));
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
