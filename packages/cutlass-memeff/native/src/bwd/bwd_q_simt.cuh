// Backward, deterministic dQ: one block per (query block, b, h, head-dim tile) walks the key blocks
// in order and accumulates dQ in registers; no atomics, so the result is bitwise reproducible.
#pragma once
#include "bwd/bwd_tile.cuh"

namespace memeff {

template <typename T, typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, 4) bwd_q_simt_kernel(const BwdParams params) {
  constexpr int CT = Tr::kTile / 8;
  __shared__ BwdTileSmem sm;
  const int tx = threadIdx.x % 8, ty = threadIdx.x / 8;
  const int i0 = blockIdx.x * 32;
  const int bh = blockIdx.y + params.bh_base, b = bh / params.heads_q, h = bh % params.heads_q;
  BwdParams p = params;
  bind_sequence(p, b, sizeof(T));
  if (i0 >= p.seq_q) return;  // a varlen sequence shorter than the longest
  const int c0 = blockIdx.z * Tr::kTile;
  const BwdHeadView<T> hv = bwd_head_view<T>(p, b, h);

  float dq[2][CT] = {};
  const int j_end = key_end_for_queries(p, min(i0 + 32, p.seq_q) - 1);
  for (int j0 = key_step_begin(p, i0, 32) * 32; j0 < j_end; j0 += 32) {
    bwd_tile(p, hv, sm, i0, j0);
#pragma unroll
    for (int q = 0; q < Tr::kChunksPerTile; ++q) {
      const int cc0 = c0 + 32 * q;
      if (cc0 >= p.head_dim) continue;
      __syncthreads();
      load_chunk(sm.b, hv.k, p.k_stride[2], j0, p.seq_k, cc0, p.head_dim);
      __syncthreads();
#pragma unroll 8
      for (int jj = 0; jj < 32; ++jj) {
        const float w0 = sm.dx[ty][jj], w1 = sm.dx[ty + 16][jj];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const float y = sm.b[jj][tx + 8 * c];
          dq[0][q * 4 + c] = fmaf(w0, y, dq[0][q * 4 + c]);
          dq[1][q * 4 + c] = fmaf(w1, y, dq[1][q * 4 + c]);
        }
      }
    }
  }
  T* out = static_cast<T*>(p.dq) + b * p.dq_stride[0] + h * p.dq_stride[1];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = i0 + ty + 16 * r;
    if (i >= p.seq_q) continue;
#pragma unroll
    for (int q = 0; q < Tr::kChunksPerTile; ++q)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int d = c0 + 32 * q + tx + 8 * c;
        if (d < p.head_dim) out[i * p.dq_stride[2] + d] = from_float<T>(dq[r][q * 4 + c] * p.scale);
      }
  }
}

}  // namespace memeff
