// dbias from a main backward kernel: a plain store where every (b, h, i, j) lands on its own element,
// an fp32 atomic add where dbias is summed over batch and/or heads (see BwdParams::dbias_accum). Both
// kernels of the backward (tensor-core and FMA) use write_dbias; the tensor-core one sends 4 adjacent
// keys at a time through write_dbias4 where BwdParams::dbias_quads allows it.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

#include "common/dtype_traits.cuh"
#include "common/toolkit.cuh"
#include "common/params.h"

namespace memeff {

__device__ __forceinline__ void write_dbias(const BwdParams& p, int64_t idx, float ds) {
  if (p.dbias_accum != nullptr) {
    atomicAdd(p.dbias_accum + idx, ds);  // result unused: compiles to red.global.add.f32
  } else {
    store_any_float(p.dbias, p.mask_dtype, idx, ds);
  }
}

// x[r], r = 0..3, is the value of query row r at this lane's key c (c = lane's g % 4) of a 4-key group
// held by 4 lanes, 4 lanes apart (lane ^ 4: c ^ 1, lane ^ 8: c ^ 2). Afterwards x[k] is the value of
// query row c at key k of the group: a 4 x 4 transpose in two exchange rounds (2 shuffles each), each
// lane keeping the rows of its own parity, then of its own half. Values are moved, never added.
__device__ __forceinline__ void transpose_keys4(float (&x)[4], int c) {
  const bool odd = c & 1, high = c & 2;
  // Round 1 (c ^ 1): keep rows of parity `odd`, send the other two.
  const float r0 = __shfl_xor_sync(0xffffffffu, odd ? x[0] : x[1], 4);
  const float r1 = __shfl_xor_sync(0xffffffffu, odd ? x[2] : x[3], 4);
  const float k0 = odd ? x[1] : x[0], k1 = odd ? x[3] : x[2];
  // Row odd (R0) and odd + 2 (R1), keys (c & 2) and (c & 2) + 1.
  const float lo0 = odd ? r0 : k0, hi0 = odd ? k0 : r0;
  const float lo1 = odd ? r1 : k1, hi1 = odd ? k1 : r1;
  // Round 2 (c ^ 2): keep row R0 when c < 2, else R1; send the other row's two keys.
  const float s_lo = __shfl_xor_sync(0xffffffffu, high ? lo0 : lo1, 8);
  const float s_hi = __shfl_xor_sync(0xffffffffu, high ? hi0 : hi1, 8);
  const float m_lo = high ? lo1 : lo0, m_hi = high ? hi1 : hi0;
  x[0] = high ? s_lo : m_lo;
  x[1] = high ? s_hi : m_hi;
  x[2] = high ? m_lo : s_lo;
  x[3] = high ? m_hi : s_hi;
}

// dbias[idx .. idx + 3] (keys j .. j + 3 of one row; `room` = keys left in the row from j): one vector
// reduction or one vector store when all 4 are in bounds (idx a multiple of 4 and dbias 16-byte aligned
// with unit key stride: dispatch.cu's dbias_quads conditions), else element by element.
__device__ __forceinline__ void write_dbias4(const BwdParams& p, int64_t idx, const float (&x)[4], int room) {
  if (room >= 4) {
    if (p.dbias_accum != nullptr) {
      red_add_f32x4(p.dbias_accum + idx, x[0], x[1], x[2], x[3]);
      return;
    }
    switch (p.mask_dtype) {
      case kF32:
        *reinterpret_cast<float4*>(static_cast<float*>(p.dbias) + idx) = make_float4(x[0], x[1], x[2], x[3]);
        return;
      case kBF16: {
        const __nv_bfloat162 a = __floats2bfloat162_rn(x[0], x[1]), b = __floats2bfloat162_rn(x[2], x[3]);
        *reinterpret_cast<uint2*>(static_cast<__nv_bfloat16*>(p.dbias) + idx) =
            make_uint2(*reinterpret_cast<const uint32_t*>(&a), *reinterpret_cast<const uint32_t*>(&b));
        return;
      }
      case kF16: {
        const __half2 a = __floats2half2_rn(x[0], x[1]), b = __floats2half2_rn(x[2], x[3]);
        *reinterpret_cast<uint2*>(static_cast<__half*>(p.dbias) + idx) =
            make_uint2(*reinterpret_cast<const uint32_t*>(&a), *reinterpret_cast<const uint32_t*>(&b));
        return;
      }
      default:
        break;  // fp64 never gets dbias_quads; fall through to the scalar path
    }
  }
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (k < room) write_dbias(p, idx + k, x[k]);
}

}  // namespace memeff
