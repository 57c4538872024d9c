// The small passes around the backward: D = rowsum(dO * O) before it; after it, dQ from the fp32
// atomic workspace to the output dtype, and the fixed-order sum of the query splits' dK/dV partials.
#pragma once
#include "common/dtype_traits.cuh"
#include "common/params.h"

namespace memeff {

// One warp per row of [B, Hq, Sq].
template <typename T>
__global__ void __launch_bounds__(128) bwd_dsum_kernel(const BwdParams p) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * 4 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= static_cast<int64_t>(p.batch) * p.heads_q * p.seq_q) return;
  const int i = static_cast<int>(row % p.seq_q);
  const int bh = static_cast<int>(row / p.seq_q), b = bh / p.heads_q, h = bh % p.heads_q;
  const T* o = static_cast<const T*>(p.o) + b * p.o_stride[0] + h * p.o_stride[1] + i * p.o_stride[2];
  const T* d = static_cast<const T*>(p.dout) + b * p.do_stride[0] + h * p.do_stride[1] + i * p.do_stride[2];
  float acc = 0.f;
  if constexpr (sizeof(T) == 4) {
    // fp32 (the SIMT backward): one sequential fmaf chain over c = 0, 1, ..., the order in which
    // bwd_tile's tile_abt sums dP = dO . V. Where O is exactly one V row (a query that sees one key,
    // conformance sq17-sk1) D and dP are then the same bits and dS = P (dP - D) is exactly 0, as in
    // the naive implementation; the warp tree sum left 1-2 ulps of dP in every dS, which dK sums
    // over the queries (a warp tree failed the case on ~20% of seeds with the FMA forward).
    if (lane == 0)
      for (int c = 0; c < p.head_dim_v; ++c) acc = fmaf(to_float(d[c]), to_float(o[c]), acc);
  } else {
    for (int c = lane; c < p.head_dim_v; c += 32) acc = fmaf(to_float(o[c]), to_float(d[c]), acc);
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  }
  if (lane == 0) p.dsum[row] = acc;
}

template <typename T>
__global__ void bwd_dq_convert_kernel(const BwdParams p) {
  const int64_t total = static_cast<int64_t>(p.batch) * p.heads_q * p.seq_q * p.head_dim;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int d = static_cast<int>(idx % p.head_dim);
    const int64_t row = idx / p.head_dim;
    const int i = static_cast<int>(row % p.seq_q);
    const int bh = static_cast<int>(row / p.seq_q), b = bh / p.heads_q, h = bh % p.heads_q;
    static_cast<T*>(p.dq)[b * p.dq_stride[0] + h * p.dq_stride[1] + i * p.dq_stride[2] + d] =
        from_float<T>(p.dq_accum[idx]);
  }
}

// dK and dV from the query splits' partials (already scaled), summed in split order.
template <typename T>
__global__ void bwd_kv_reduce_kernel(const BwdParams p) {
  const int64_t rows = static_cast<int64_t>(p.batch) * p.heads_kv * p.seq_k;
  const int width = p.head_dim + p.head_dim_v;
  const int64_t total = rows * width;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(idx % width);
    const int64_t row = idx / width;
    const int j = static_cast<int>(row % p.seq_k);
    const int bh = static_cast<int>(row / p.seq_k), b = bh / p.heads_kv, hk = bh % p.heads_kv;
    float acc = 0.f;
    if (c < p.head_dim) {
      for (int s = 0; s < p.query_splits; ++s) acc += p.dk_accum[(s * rows + row) * p.head_dim + c];
      static_cast<T*>(p.dk)[b * p.dk_stride[0] + hk * p.dk_stride[1] + j * p.dk_stride[2] + c] = from_float<T>(acc);
    } else {
      const int d = c - p.head_dim;
      for (int s = 0; s < p.query_splits; ++s) acc += p.dv_accum[(s * rows + row) * p.head_dim_v + d];
      static_cast<T*>(p.dv)[b * p.dv_stride[0] + hk * p.dv_stride[1] + j * p.dv_stride[2] + d] = from_float<T>(acc);
    }
  }
}

// dbias's own elements from the fp32 atomic accumulator (BwdParams::dbias_accum). dbias is contiguous
// in its own shape, so the accumulator's linear index is dbias's too.
template <typename T>
__global__ void bwd_dbias_convert_kernel(const BwdParams p, int64_t total) {
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    store_any_float(p.dbias, p.mask_dtype, idx, p.dbias_accum[idx]);
  }
}

}  // namespace memeff
