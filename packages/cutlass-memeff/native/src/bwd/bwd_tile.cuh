// The recompute step every SIMT backward kernel shares: for one (b, h) and a 32x32 tile of the
// score matrix, S = Q K^T and dP = dO V^T from chunks in shared memory, then P from the saved
// logsumexp (every score rule of masked_logit, softcap and ALiBi included), the dropout mask replayed from
// (seed, offset), dS = P * (dP * keep / (1 - p) - D) and dX = dS times the softcap derivative.
// The SIMT kernels take every feature at run time: each binds its sequence first (bind_sequence).
#pragma once
#include <cmath>
#include <type_traits>

#include "bwd/simt_bwd_traits.h"
#include "common/dtype_traits.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"

namespace memeff {

// The (b, h) slice of every tensor a backward tile reads.
template <typename T>
struct BwdHeadView {
  const T *q, *k, *v, *dout;
  const float *lse, *dsum;  // row i at [i]
  MaskView mask;
  ScoreCtx sc;
  int b, h;
};

template <typename T>
__device__ __forceinline__ BwdHeadView<T> bwd_head_view(const BwdParams& p, int b, int h) {
  const int hk = h / p.group;
  const int64_t row = lse_row(p, b, h, 0);
  return BwdHeadView<T>{static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1],
                        static_cast<const T*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1],
                        static_cast<const T*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1],
                        static_cast<const T*>(p.dout) + b * p.do_stride[0] + h * p.do_stride[1],
                        p.lse + row,
                        p.dsum + row,
                        mask_view(p, b, h),
                        score_ctx(p, b, h),
                        b,
                        h};
}

// rows x 32 columns [c0, c0 + 32) of a [seq][dim] matrix into s (zero outside the bounds).
template <typename T>
__device__ __forceinline__ void load_chunk(float (*s)[33], const T* g, int64_t row_stride, int row0, int rows, int c0,
                                           int cols) {
  for (int idx = threadIdx.x; idx < 32 * 32; idx += 128) {
    const int r = idx / 32, c = idx % 32, i = row0 + r, d = c0 + c;
    s[r][c] = (i < rows && d < cols) ? to_float(g[i * row_stride + d]) : 0.f;
  }
}

// acc[r][c] += sum over dim of A[ty + 16r][:] * B[tx + 8c][:] (a 32x32 tile of A B^T).
template <typename T>
__device__ __forceinline__ void tile_abt(float (&acc)[2][4], BwdTileSmem& sm, const T* a, int64_t a_stride, int a0,
                                         int a_rows, const T* bm, int64_t b_stride, int b0, int b_rows, int dim) {
  const int tx = threadIdx.x % 8, ty = threadIdx.x / 8;
  for (int d0 = 0; d0 < dim; d0 += 32) {
    __syncthreads();
    load_chunk(sm.a, a, a_stride, a0, a_rows, d0, dim);
    load_chunk(sm.b, bm, b_stride, b0, b_rows, d0, dim);
    __syncthreads();
#pragma unroll 8
    for (int dd = 0; dd < 32; ++dd) {
      const float x0 = sm.a[ty][dd], x1 = sm.a[ty + 16][dd];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const float y = sm.b[tx + 8 * c][dd];
        acc[0][c] = fmaf(x0, y, acc[0][c]);
        acc[1][c] = fmaf(x1, y, acc[1][c]);
      }
    }
  }
}

// Fills sm.pd and sm.ds for queries [i0, i0 + 32) and keys [j0, j0 + 32); ends with a barrier.
template <typename T>
__device__ __forceinline__ void bwd_tile(const BwdParams& p, const BwdHeadView<T>& hv, BwdTileSmem& sm, int i0,
                                         int j0) {
  const int tx = threadIdx.x % 8, ty = threadIdx.x / 8;
  float s[2][4] = {}, dp[2][4] = {};
  tile_abt(s, sm, hv.q, p.q_stride[2], i0, p.seq_q, hv.k, p.k_stride[2], j0, p.seq_k, p.head_dim);
  tile_abt(dp, sm, hv.dout, p.do_stride[2], i0, p.seq_q, hv.v, p.v_stride[2], j0, p.seq_k, p.head_dim_v);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = i0 + ty + 16 * r;
    const bool row_ok = i < p.seq_q;
    const float lse = row_ok ? hv.lse[i] : -INFINITY;
    const float dsum = row_ok ? hv.dsum[i] : 0.f;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int j = j0 + tx + 8 * c;
      float pr = 0.f, dcap = 1.f;
      if (row_ok && lse != -INFINITY) {  // fully masked rows: P = 0, never exp(-inf + inf)
        const float logit = masked_logit<true, std::is_same_v<T, float>>(p, hv.mask, hv.sc, i, j, s[r][c], dcap);
        pr = exp2f((logit - lse) * kLog2e);
      }
      float scale_keep = 1.f;
      if (p.dropout)
        scale_keep = (j < p.seq_k && row_ok && dropout_kept(p, hv.b, hv.h, i, j)) ? p.dropout_keep_scale : 0.f;
      const float ds = attn::softmax_grad(pr, dp[r][c] * scale_keep, dsum);
      sm.pd[ty + 16 * r][tx + 8 * c] = pr * scale_keep;
      sm.ds[ty + 16 * r][tx + 8 * c] = ds;
      sm.dx[ty + 16 * r][tx + 8 * c] = ds * dcap;
    }
  }
  __syncthreads();
}

}  // namespace memeff
