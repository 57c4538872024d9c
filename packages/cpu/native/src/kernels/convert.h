// Rows of any supported dtype and stride <-> fp32 rows. Contiguous rows take the vector path.
// Part of a kernel TU: include after the TU's simd header (inside its namespace).
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/half.h"
#include "problem.h"

namespace attn_cpu {
namespace ATTN_ISA {

// Address of element (a, b, c, d) of a view.
inline void* elem_ptr(const View4& v, int64_t a, int64_t b, int64_t c, int64_t d) {
  const int64_t e = a * v.strides[0] + b * v.strides[1] + c * v.strides[2] + d * v.strides[3];
  return static_cast<char*>(v.data) + e * dtype_bytes(v.dtype);
}

inline float load_one(const void* base, DType dt, int64_t idx) {
  switch (dt) {
    case DType::kFloat32:
      return static_cast<const float*>(base)[idx];
    case DType::kBFloat16:
      return bf16_to_f32(static_cast<const uint16_t*>(base)[idx]);
    case DType::kFloat16:
      return f16_to_f32(static_cast<const uint16_t*>(base)[idx]);
    case DType::kFloat64:
      return static_cast<float>(static_cast<const double*>(base)[idx]);
    case DType::kBool:
      return static_cast<const uint8_t*>(base)[idx] ? 1.f : 0.f;
  }
  return 0.f;
}

// dst[c] = src[c * stride] as fp32, c in [0, n).
inline void load_row(float* dst, const void* src, DType dt, int64_t n, int64_t stride) {
  int64_t c = 0;
  if (stride == 1) {
    if (dt == DType::kFloat32) {
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    }
    const uint16_t* s16 = static_cast<const uint16_t*>(src);
    if (dt == DType::kBFloat16) {
      for (; c + kLanes <= n; c += kLanes) vstore(dst + c, vload_bf16(s16 + c));
    } else if (dt == DType::kFloat16) {
      for (; c + kLanes <= n; c += kLanes) vstore(dst + c, vload_f16(s16 + c));
    }
  }
  for (; c < n; ++c) dst[c] = load_one(src, dt, c * stride);
}

// dst[c * stride] = src[c] converted to dt (round to nearest even), c in [0, n).
inline void store_row(void* dst, DType dt, const float* src, int64_t n, int64_t stride) {
  int64_t c = 0;
  if (dt == DType::kFloat32) {
    float* d = static_cast<float*>(dst);
    if (stride == 1) {
      std::memcpy(d, src, static_cast<size_t>(n) * 4);
      return;
    }
    for (; c < n; ++c) d[c * stride] = src[c];
    return;
  }
  uint16_t* d = static_cast<uint16_t*>(dst);
  if (dt == DType::kBFloat16) {
    if (stride == 1)
      for (; c + kLanes <= n; c += kLanes) vstore_bf16(d + c, vload(src + c));
    for (; c < n; ++c) d[c * stride] = f32_to_bf16(src[c]);
  } else {
    if (stride == 1)
      for (; c + kLanes <= n; c += kLanes) vstore_f16(d + c, vload(src + c));
    for (; c < n; ++c) d[c * stride] = f32_to_f16(src[c]);
  }
}

// dst[c] = src[c] * s for c in [0, n), then converted and stored as store_row.
inline void store_row_scaled(void* dst, DType dt, float* tmp, const float* src, float s, int64_t n, int64_t stride) {
  const V vs = vset(s);
  int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) vstore(tmp + c, vmul(vload(src + c), vs));
  for (; c < n; ++c) tmp[c] = src[c] * s;
  store_row(dst, dt, tmp, n, stride);
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
