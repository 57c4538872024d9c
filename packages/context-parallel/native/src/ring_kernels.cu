// See ring_kernels.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "attn/cuda_check.h"
#include "ring_kernels.h"

namespace attn::cp {
namespace {

template <typename T>
__device__ __forceinline__ float load(const T* p, int64_t i);
template <>
__device__ __forceinline__ float load<float>(const float* p, int64_t i) {
  return p[i];
}
template <>
__device__ __forceinline__ float load<__half>(const __half* p, int64_t i) {
  return __half2float(p[i]);
}
template <>
__device__ __forceinline__ float load<__nv_bfloat16>(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}

template <typename T>
__device__ __forceinline__ void store(T* p, int64_t i, float v);
template <>
__device__ __forceinline__ void store<float>(float* p, int64_t i, float v) {
  p[i] = v;
}
template <>
__device__ __forceinline__ void store<__half>(__half* p, int64_t i, float v) {
  p[i] = __float2half_rn(v);
}
template <>
__device__ __forceinline__ void store<__nv_bfloat16>(__nv_bfloat16* p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

// log(exp(a) + exp(b)) as merge.ts's logAddExp.
__device__ __forceinline__ float log_add_exp(float a, float b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const float m = fmaxf(a, b);
  if (isnan(a) || isnan(b)) return a + b;
  if (m == INFINITY) return a + b;
  return m + log1pf(expf(-fabsf(a - b)));
}

// One warp per row: lane 0's weights are shared through the warp.
template <typename T>
__global__ void merge_kernel(float* acc_out, float* acc_lse, const T* part_out, const float* part_lse, int64_t rows,
                             int64_t dv) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float a = acc_lse[row], b = part_lse[row];
  if (b == -INFINITY) return;  // the partial saw no key of this row
  const float merged = log_add_exp(a, b);
  const float wa = a == -INFINITY ? 0.f : expf(a - merged);
  const float wb = a == -INFINITY ? 1.f : expf(b - merged);
  float* o = acc_out + row * dv;
  const T* p = part_out + row * dv;
  for (int64_t c = lane; c < dv; c += 32) o[c] = (wa == 0.f ? 0.f : wa * o[c]) + wb * load(p, c);
  __syncwarp();
  if (lane == 0) acc_lse[row] = merged;
}

template <typename T>
__global__ void accumulate_kernel(float* acc, const T* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    acc[i] += load(x, i);
}

template <typename T>
__global__ void convert_kernel(T* dst, const float* src, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store(dst, i, src[i]);
}

unsigned grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

template <template <typename> class Launch, typename... Args>
void by_elem(Elem e, Args... args) {
  switch (e) {
    case Elem::f32:
      Launch<float>::run(args...);
      return;
    case Elem::f16:
      Launch<__half>::run(args...);
      return;
    case Elem::bf16:
      Launch<__nv_bfloat16>::run(args...);
      return;
  }
  throw std::invalid_argument("context-parallel: unknown element type");
}

template <typename T>
struct MergeLaunch {
  static void run(float* acc_out, float* acc_lse, const void* part_out, const float* part_lse, int64_t rows, int64_t dv,
                  cudaStream_t s) {
    if (rows == 0) return;
    const unsigned blocks = static_cast<unsigned>((rows * 32 + 255) / 256);
    merge_kernel<T><<<blocks, 256, 0, s>>>(acc_out, acc_lse, static_cast<const T*>(part_out), part_lse, rows, dv);
    ATTN_LAUNCH_CHECK("context-parallel merge");
  }
};

template <typename T>
struct AccumulateLaunch {
  static void run(float* acc, const void* x, int64_t n, cudaStream_t s) {
    if (n == 0) return;
    accumulate_kernel<T><<<grid_for(n, 256), 256, 0, s>>>(acc, static_cast<const T*>(x), n);
    ATTN_LAUNCH_CHECK("context-parallel accumulate");
  }
};

template <typename T>
struct ConvertLaunch {
  static void run(void* dst, const float* src, int64_t n, cudaStream_t s) {
    if (n == 0) return;
    convert_kernel<T><<<grid_for(n, 256), 256, 0, s>>>(static_cast<T*>(dst), src, n);
    ATTN_LAUNCH_CHECK("context-parallel convert");
  }
};

}  // namespace

void merge(float* acc_out, float* acc_lse, const void* part_out, const float* part_lse, int64_t rows, int64_t dv,
           Elem elem, cudaStream_t stream) {
  by_elem<MergeLaunch>(elem, acc_out, acc_lse, part_out, part_lse, rows, dv, stream);
}

void accumulate(float* acc, const void* x, int64_t n, Elem elem, cudaStream_t stream) {
  by_elem<AccumulateLaunch>(elem, acc, x, n, stream);
}

void convert(void* dst, const float* src, int64_t n, Elem elem, cudaStream_t stream) {
  by_elem<ConvertLaunch>(elem, dst, src, n, stream);
}

}  // namespace attn::cp
