// The one kernel of the CK binding besides CK's own: the GQA/MQA head-group sum (head_group_sum.h).
#include "head_group_sum.h"

#include <hip/hip_fp16.h>

#include <cstring>

namespace attn_ck {
namespace {

__device__ float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even; NaN stays a (quiet) NaN, infinities stay infinite.
__device__ uint16_t float_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

__device__ float half_to_float(uint16_t h) {
  __half x;
  memcpy(&x, &h, sizeof h);
  return __half2float(x);
}

__device__ uint16_t float_to_half(float f) {
  const __half x = __float2half(f);
  uint16_t h;
  memcpy(&h, &x, sizeof h);
  return h;
}

__global__ void head_group_sum_kernel(HeadGroupSum s) {
  const int64_t n = s.outer * s.heads_kv * s.inner;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t x = idx % s.inner;
    const int64_t hk = (idx / s.inner) % s.heads_kv;
    const int64_t o = idx / (s.inner * s.heads_kv);
    const uint16_t* from = s.src + (o * s.heads_kv * s.group + hk * s.group) * s.inner + x;
    float acc = 0.f;
    for (int64_t g = 0; g < s.group; ++g) {
      const uint16_t b = from[g * s.inner];
      acc += s.bf16 ? bf16_to_float(b) : half_to_float(b);
    }
    s.dst[idx] = s.bf16 ? float_to_bf16(acc) : float_to_half(acc);
  }
}

}  // namespace

hipError_t launch_head_group_sum(const HeadGroupSum& s, hipStream_t stream) {
  const int64_t n = s.outer * s.heads_kv * s.inner;
  if (n == 0) return hipSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
  hipLaunchKernelGGL(head_group_sum_kernel, dim3(grid), dim3(kThreads), 0, stream, s);
  return hipGetLastError();
}

}  // namespace attn_ck
