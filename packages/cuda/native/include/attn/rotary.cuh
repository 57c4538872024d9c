// sdpaKvCache's rotary embedding of one element, the one implementation that the append kernel
// (attn/kv_append.cuh) and flash-cuda's forward (which rotates q and kNew itself where it appends) both
// compute with, so that the two paths give the same bits.
//
// Semantics are core's KvCacheParams (and cpu-math's, packages/cpu/src/kv-cache/host.ts): the pair
// (x1, x2) of table column i turns into x1' = x1 cos - x2 sin, x2' = x1 sin + x2 cos, in float64 with
// no fused multiply-add (as JS computes it), rounded once to the tensor's dtype. The pairs are the
// GPT-NeoX halves (i, i + half) or the GPT-J neighbours (2i, 2i + 1).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace attn::kv {

template <typename T>
struct Elem;
template <>
struct Elem<double> {
  static __device__ __forceinline__ double load(const double* p) { return *p; }
  static __device__ __forceinline__ void store(double* p, double x) { *p = x; }
  static __device__ __forceinline__ double round(double x) { return x; }
};
template <>
struct Elem<float> {
  static __device__ __forceinline__ double load(const float* p) { return static_cast<double>(*p); }
  static __device__ __forceinline__ void store(float* p, double x) { *p = round(x); }
  static __device__ __forceinline__ float round(double x) { return __double2float_rn(x); }
};
template <>
struct Elem<__half> {
  static __device__ __forceinline__ double load(const __half* p) { return static_cast<double>(__half2float(*p)); }
  static __device__ __forceinline__ void store(__half* p, double x) { *p = round(x); }
  static __device__ __forceinline__ __half round(double x) { return __double2half(x); }
};
template <>
struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ double load(const __nv_bfloat16* p) {
    return static_cast<double>(__bfloat162float(*p));
  }
  static __device__ __forceinline__ void store(__nv_bfloat16* p, double x) { *p = round(x); }
  static __device__ __forceinline__ __nv_bfloat16 round(double x) { return __double2bfloat16(x); }
};

// The two outputs of a pair, unfused: the same bits as cpu-math's float64 arithmetic before the rounding.
__device__ __forceinline__ double rotary_first(double x1, double x2, double c, double s) {
  return __dsub_rn(__dmul_rn(x1, c), __dmul_rn(x2, s));
}
__device__ __forceinline__ double rotary_second(double x1, double x2, double c, double s) {
  return __dadd_rn(__dmul_rn(x1, s), __dmul_rn(x2, c));
}

// Where column c (< 2 * half) of a row sits in its pair: the pair's columns a and b, its table column i,
// and whether c is the pair's first output.
struct RotaryPair {
  int64_t a, b, i;
  bool first;
};
__device__ __forceinline__ RotaryPair rotary_pair(int64_t c, int64_t half, bool interleaved) {
  const int64_t i = interleaved ? c >> 1 : (c < half ? c : c - half);
  const int64_t a = interleaved ? c & ~int64_t(1) : i;
  const int64_t b = interleaved ? c | 1 : i + half;
  return {a, b, i, interleaved ? (c & 1) == 0 : c < half};
}

// Column c of row x (element stride xs) after the rotation at the table rows cos_row / sin_row (element
// strides cs / ss; half >= 1), rounded to T; columns past 2 * half are copied. Computes exactly what
// copy_row writes. Straight-line (every load issued, the result selected), so that a caller's unrolled
// loop over columns issues all its loads before the first use.
template <typename T>
__device__ __forceinline__ T rotary_column(const T* x, int64_t xs, int64_t c, const T* cos_row, int64_t cs,
                                           const T* sin_row, int64_t ss, int64_t half, bool interleaved) {
  const bool rotated = c < 2 * half;
  const RotaryPair pr = rotary_pair(rotated ? c : 0, half, interleaved);  // a copied column reads pair 0 unused
  const double co = Elem<T>::load(cos_row + pr.i * cs);
  const double si = Elem<T>::load(sin_row + pr.i * ss);
  const double x1 = Elem<T>::load(x + pr.a * xs);
  const double x2 = Elem<T>::load(x + pr.b * xs);
  const T own = x[c * xs];
  const double y1 = rotary_first(x1, x2, co, si), y2 = rotary_second(x1, x2, co, si);
  const T y = Elem<T>::round(pr.first ? y1 : y2);
  return rotated ? y : own;
}

}  // namespace attn::kv
