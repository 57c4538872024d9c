// The softmax's exponentials and softcap's tanh as one MUFU.EX2 each, shared by every CUDA kernel so that
// the forward and backward of each backend round the same way.
#pragma once
#include <cmath>

namespace attn {
inline namespace ptx {

// 2^x as one ex2.approx.ftz: exp2f without fast-math is the same approximation (2 ulp) plus a
// denormal-result fixup (compare, two multiplies); ftz only flushes results below 2^-126, which vanish against
// a softmax row sum >= 1. exp2_ftz(-inf) = +0, exp2_ftz(NaN) = NaN.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// tanh through one exp2_ftz and a fast division: ~1e-7 absolute, enough for softcapped logits that end in a
// 16-bit output. +-1 at +-Inf, NaN for NaN.
__device__ __forceinline__ float tanh_ex2(float x) {
  const float e = exp2_ftz(2.8853900817779268f * fabsf(x));  // exp(2|x|)
  return copysignf(1.f - __fdividef(2.f, e + 1.f), x);
}

}  // namespace ptx
}  // namespace attn
