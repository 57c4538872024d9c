// 8 x fp32 "vectors" as plain arrays: loops the compiler auto-vectorizes for whatever target it
// builds for (SSE2 on x86-64, NEON on arm64). The fallback when no SIMD level is compiled or present.
#pragma once
#include <cstdint>
#include <cstring>

#include "dropout.h"
#include "kernels/half.h"

namespace attn_cpu {
namespace ATTN_ISA {

constexpr int kLanes = 8;
constexpr const char* kIsaName = "portable";

struct V {
  float v[kLanes];
};

#define ATTN_LANES(expr)                              \
  V out;                                              \
  for (int l = 0; l < kLanes; ++l) out.v[l] = (expr); \
  return out

inline V vzero() { ATTN_LANES(0.f); }
inline V vset(float x) { ATTN_LANES(x); }
inline V vload(const float* p) { ATTN_LANES(p[l]); }
inline void vstore(float* p, V a) { std::memcpy(p, a.v, sizeof a.v); }
inline V vadd(V a, V b) { ATTN_LANES(a.v[l] + b.v[l]); }
inline V vsub(V a, V b) { ATTN_LANES(a.v[l] - b.v[l]); }
inline V vmul(V a, V b) { ATTN_LANES(a.v[l] * b.v[l]); }
// a * b rounded to float and never fused into a following add (GCC's default -ffp-contract=fast
// would make vadd(vmul(a, b), c) one FMA): for a product that must equal the same product computed
// elsewhere, bit for bit.
inline V vmul_round(V a, V b) {
  V out;
  for (int l = 0; l < kLanes; ++l) out.v[l] = a.v[l] * b.v[l];
  __asm__("" : "+m"(out));
  return out;
}
inline V vdiv(V a, V b) { ATTN_LANES(a.v[l] / b.v[l]); }
inline V vfma(V a, V b, V c) { ATTN_LANES(a.v[l] * b.v[l] + c.v[l]); }
// As x86's maxps: the second operand when either is NaN.
inline V vmax(V a, V b) { ATTN_LANES(a.v[l] > b.v[l] ? a.v[l] : b.v[l]); }
inline V vmin(V a, V b) { ATTN_LANES(a.v[l] < b.v[l] ? a.v[l] : b.v[l]); }
inline V vabs(V a) { ATTN_LANES(a.v[l] < 0.f ? -a.v[l] : a.v[l]); }
inline float hmax(V a) {
  float m = a.v[0];
  for (int l = 1; l < kLanes; ++l) m = a.v[l] > m ? a.v[l] : m;
  return m;
}
inline float hsum(V a) {
  float s = 0.f;
  for (int l = 0; l < kLanes; ++l) s += a.v[l];
  return s;
}
inline V viota() { ATTN_LANES(static_cast<float>(l)); }
inline V vkeep_range(V x, V c, float lo, float hi) {
  ATTN_LANES(c.v[l] >= lo && c.v[l] <= hi ? x.v[l] : -__builtin_inff());
}
inline V vkeep_range2(V x, V c, V lo, V hi) {
  ATTN_LANES(c.v[l] >= lo.v[l] && c.v[l] <= hi.v[l] ? x.v[l] : -__builtin_inff());
}
inline V vfrom_u8(const uint8_t* p) { ATTN_LANES(static_cast<float>(p[l])); }

// exp(x) as simd/avx2.h: Cephes' polynomial, 2^n in the exponent field, flush below -87.
inline float exp1(float x) {
  if (!(x >= -87.f)) return x != x ? x : 0.f;  // NaN stays NaN; -inf and tiny -> 0
  const float t = x < 88.3762626f ? x : 88.3762626f;
  const float n = __builtin_nearbyintf(t * 1.44269504088896341f);
  float r = t - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + (r + 1.f);
  const uint32_t e = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float s;
  std::memcpy(&s, &e, 4);
  return p * s;
}
inline V vexp(V x) { ATTN_LANES(exp1(x.v[l])); }

inline float exp2_1(float x) {
  if (!(x >= -125.f)) return x != x ? x : 0.f;
  const float t = x < 127.f ? x : 127.f;
  const float n = __builtin_nearbyintf(t);
  const float f = t - n;
  float p = 1.535336188319500e-4f;
  p = p * f + 1.339887440266574e-3f;
  p = p * f + 9.618437357674640e-3f;
  p = p * f + 5.550332471162809e-2f;
  p = p * f + 2.402264791363012e-1f;
  p = p * f + 6.931472028550421e-1f;
  p = p * f + 1.f;
  const uint32_t e = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float s;
  std::memcpy(&s, &e, 4);
  return p * s;
}
inline V vexp2(V x) { ATTN_LANES(exp2_1(x.v[l])); }
inline V vgather_stride(const float* p, int32_t stride) { ATTN_LANES(p[l * stride]); }
// 2^x for x <= 127 (see avx512.h); here the same as vexp2.
inline V vexp2_upto127(V x) { return vexp2(x); }
// One lane of vfma, rounded exactly as vfma rounds it (fused here or not).
inline float fma1(float a, float b, float c) { return a * b + c; }
inline bool vany_gt(V a, V b) {
  bool any = false;
  for (int l = 0; l < kLanes; ++l) any |= a.v[l] > b.v[l];
  return any;
}

// Dropout keep bits of keys j0 .. j0+63 (scalar Philox, compiled once in dropout.cpp).
inline uint64_t keep_mask64(const ScoreMods& md, uint32_t bh, uint32_t i, int64_t j0) {
  return dropout_keep_mask64(md, bh, i, j0);
}

inline V vload_bf16(const uint16_t* p) { ATTN_LANES(bf16_to_f32(p[l])); }
inline V vload_f16(const uint16_t* p) { ATTN_LANES(f16_to_f32(p[l])); }
inline void vstore_f16(uint16_t* p, V a) {
  for (int l = 0; l < kLanes; ++l) p[l] = f32_to_f16(a.v[l]);
}
inline void vstore_bf16(uint16_t* p, V a) {
  for (int l = 0; l < kLanes; ++l) p[l] = f32_to_bf16(a.v[l]);
}

#undef ATTN_LANES

}  // namespace ATTN_ISA
}  // namespace attn_cpu
