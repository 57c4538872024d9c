// Scalar fp16/bf16 <-> fp32, bit-exact with core's half.ts: round to nearest even; NaN, Inf and
// subnormals exact. Used for tails and strided elements; vector forms live in simd/*.h.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace attn_cpu {
namespace ATTN_ISA {

inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (man << 13));  // Inf, NaN
  if (exp != 0) return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
  if (man == 0) return bits_to_f32(sign);
  // Subnormal: man * 2^-24, exact in fp32.
  const float v = static_cast<float>(man) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);                        // rounds to >= 65520: Inf
  if (a >= 0x38800000u) {                                                                    // normal half (>= 2^-14)
    const uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  // Subnormal half or zero: value / 2^-24, rounded to nearest even (exact fp32 arithmetic).
  const float v = bits_to_f32(a) * 16777216.f;  // 2^24
  float rint = __builtin_nearbyintf(v);         // default rounding mode: nearest even
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(rint));
}

// Half elements read by the micro-kernel's broadcast operand (gemm.h): tagged so that overloads
// pick the conversion.
struct Bf16Bits {
  uint16_t v;
};
struct F16Bits {
  uint16_t v;
};
inline float to_f32(float x) { return x; }
inline float to_f32(Bf16Bits x) { return bf16_to_f32(x.v); }
inline float to_f32(F16Bits x) {
#if defined(__F16C__)
  return _cvtsh_ss(x.v);
#else
  return f16_to_f32(x.v);
#endif
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
