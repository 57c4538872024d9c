// Backward, dbias of a broadcast bias (one summed over batch, heads, queries or keys): one block per
// 32x32 tile of dbias in its own shape recomputes dS for every (b, h, i, j) that lands on it and sums
// in a fixed order. Deterministic, no workspace; an unbroadcast dbias is written by bwd_kv instead.
#pragma once
#include "bwd/bwd_tile.cuh"

namespace memeff {

template <typename T>
__global__ void __launch_bounds__(128, 4) bwd_dbias_simt_kernel(const BwdParams p) {
  __shared__ BwdTileSmem sm;
  const int tid = threadIdx.x, tx = tid % 8, ty = tid / 8;
  const bool sum_b = p.dbias_size[0] == 1 && p.batch > 1, sum_h = p.dbias_size[1] == 1 && p.heads_q > 1;
  const bool sum_i = p.dbias_size[2] == 1 && p.seq_q > 1, sum_j = p.dbias_size[3] == 1 && p.seq_k > 1;
  const int own_h = p.dbias_size[1];
  const int obh = blockIdx.z + p.bh_base, ob = obh / own_h, oh = obh % own_h;
  const int oi0 = blockIdx.y * 32, oj0 = blockIdx.x * 32;  // tile origin in dbias's own rows/cols

  float acc[2][4] = {};  // !sum_i && !sum_j: the thread's 8 elements
  float line = 0.f;      // one of sum_i / sum_j: thread t < 32 owns column (row) t; both: thread 0
  const int b_lo = sum_b ? 0 : ob, b_hi = sum_b ? p.batch : ob + 1;
  const int h_lo = sum_h ? 0 : oh, h_hi = sum_h ? p.heads_q : oh + 1;
  const int i_lo = sum_i ? 0 : oi0, i_hi = sum_i ? p.seq_q : min(oi0 + 32, p.seq_q);
  const int j_lo = sum_j ? 0 : oj0, j_hi = sum_j ? p.seq_k : min(oj0 + 32, p.seq_k);
  for (int b = b_lo; b < b_hi; ++b)
    for (int h = h_lo; h < h_hi; ++h) {
      // dbias needs a mask, so the call is dense: only sequsedK can bind a shorter key range.
      BwdParams pb = p;
      bind_sequence(pb, b, sizeof(T));
      const BwdHeadView<T> hv = bwd_head_view<T>(pb, b, h);
      for (int i0 = i_lo; i0 < i_hi; i0 += 32)
        for (int j0 = j_lo; j0 < j_hi; j0 += 32) {
          if (pb.has_right && j0 > min(i0 + 31, p.seq_q - 1) + pb.right_offset) continue;  // dS = 0 there
          if (pb.has_left && j0 + 31 < i0 + pb.left_offset) continue;
          bwd_tile(pb, hv, sm, i0, j0);
          if (!sum_i && !sum_j) {
#pragma unroll
            for (int r = 0; r < 2; ++r)
#pragma unroll
              for (int c = 0; c < 4; ++c) acc[r][c] += sm.ds[ty + 16 * r][tx + 8 * c];
          } else if (tid < 32) {
            float part = 0.f;  // fixed order: rows (or columns) 0..31
            for (int k = 0; k < 32; ++k) part += sum_i && sum_j ? sm.ds[tid][k] : sum_i ? sm.ds[k][tid] : sm.ds[tid][k];
            line += part;
          }
        }
    }

  const int64_t base = ob * p.dbias_stride[0] + oh * p.dbias_stride[1];
  if (!sum_i && !sum_j) {
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int i = oi0 + ty + 16 * r, j = oj0 + tx + 8 * c;
        if (i < p.seq_q && j < p.seq_k)
          store_any_float(p.dbias, p.mask_dtype, base + i * p.dbias_stride[2] + j * p.dbias_stride[3], acc[r][c]);
      }
  } else if (tid < 32) {
    if (sum_i && sum_j) {
      for (int off = 16; off > 0; off >>= 1) line += __shfl_xor_sync(0xffffffffu, line, off);
      if (tid == 0) store_any_float(p.dbias, p.mask_dtype, base, line);
    } else if (sum_i) {
      const int j = oj0 + tid;
      if (j < p.seq_k) store_any_float(p.dbias, p.mask_dtype, base + j * p.dbias_stride[3], line);
    } else {
      const int i = oi0 + tid;
      if (i < p.seq_q) store_any_float(p.dbias, p.mask_dtype, base + i * p.dbias_stride[2], line);
    }
  }
}

}  // namespace memeff
