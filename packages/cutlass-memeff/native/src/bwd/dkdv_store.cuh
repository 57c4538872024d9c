// One key's dK (already scaled) and dV element of the backward's main kernels: into dk / dv in the output
// dtype, or into this query split's fp32 partials (summed by bwd_kv_reduce) when the query range is split.
// Keys past sequsedK's (j >= seq_k, j < seq_k_rows) get 0.
#pragma once
#include <cstdint>

#include "common/dtype_traits.cuh"
#include "common/params.h"

namespace memeff {

template <typename T>
__device__ __forceinline__ void store_dkdv_element(const BwdParams& p, int b, int hk, int j, int d, int split, float gk,
                                                   float gv) {
  if (j >= p.seq_k) gk = gv = 0.f;
  if (p.query_splits == 1) {
    if (d < p.head_dim)
      static_cast<T*>(p.dk)[b * p.dk_stride[0] + hk * p.dk_stride[1] + j * p.dk_stride[2] + d] = from_float<T>(gk);
    if (d < p.head_dim_v)
      static_cast<T*>(p.dv)[b * p.dv_stride[0] + hk * p.dv_stride[1] + j * p.dv_stride[2] + d] = from_float<T>(gv);
  } else {
    const int64_t row = split * p.kv_accum_rows + b * p.kv_accum_stride[0] + hk * p.kv_accum_stride[1] + j;
    if (d < p.head_dim) p.dk_accum[row * p.head_dim + d] = gk;
    if (d < p.head_dim_v) p.dv_accum[row * p.head_dim_v + d] = gv;
  }
}

}  // namespace memeff
