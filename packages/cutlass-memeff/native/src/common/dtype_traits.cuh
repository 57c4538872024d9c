// Element types the kernels are instantiated for, and mask or bias elements of a run-time dtype as float
// (conversions of the kernels' own types: attn/convert.h).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

#include "common/params.h"
#include "common/toolkit.cuh"

namespace memeff {

template <typename T>
struct ElemTraits;
template <>
struct ElemTraits<float> {
  static constexpr ElemType kType = kF32;
  static constexpr const char* kName = "fp32";
};
template <>
struct ElemTraits<__half> {
  static constexpr ElemType kType = kF16;
  static constexpr const char* kName = "fp16";
};
template <>
struct ElemTraits<__nv_bfloat16> {
  static constexpr ElemType kType = kBF16;
  static constexpr const char* kName = "bf16";
};

// A mask or bias element of a run-time dtype (the mask's dtype need not be the query's).
__device__ __forceinline__ float load_any_float(const void* base, int32_t dtype, int64_t idx) {
  switch (dtype) {
    case kF64:
      return static_cast<float>(static_cast<const double*>(base)[idx]);
    case kF16:
      return __half2float(static_cast<const __half*>(base)[idx]);
    case kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[idx]);
    default:
      return static_cast<const float*>(base)[idx];
  }
}

__device__ __forceinline__ void store_any_float(void* base, int32_t dtype, int64_t idx, float x) {
  switch (dtype) {
    case kF64:
      static_cast<double*>(base)[idx] = x;
      break;
    case kF16:
      static_cast<__half*>(base)[idx] = __float2half_rn(x);
      break;
    case kBF16:
      static_cast<__nv_bfloat16*>(base)[idx] = __float2bfloat16_rn(x);
      break;
    default:
      static_cast<float*>(base)[idx] = x;
      break;
  }
}

}  // namespace memeff
