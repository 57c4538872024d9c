// Per-thread view of the query rows a thread owns in the MMA accumulator layout, and the per-row
// score modifications (scale, softcap, ALiBi, causal/window/length masks, dropout) and online softmax.
//
// Accumulator layout of mma.m16n8k16 (per 16-row tile mi, n8 tile nt): thread (g = lane/4, t = lane%4)
// holds rows g (elements 0,1) and g+8 (elements 2,3), columns nt*8 + 2t and +1. Everything here is
// in log2 units: p = exp2(s2 - m2), with the softmax scale * log2(e) folded into s2.
#pragma once
#include <cmath>
#include <cstdint>

#include "attn/fast_math.h"
#include "attn/philox.h"
#include "attn/score_mods.h"
#include "common/fwd_params.h"

namespace attn::flash {

// What the score modifications need to know of a row: its diagonal key (i + alignment offset), recomputed
// from the row index where needed rather than kept live across the key loop (registers are the limit).
struct RowCtx {
  int base;        // row0 + warp*16 + g: the thread's row of tile mi, half r is base + mi*16*kNWarps + 8r
  int rows_total;  // rows of this (batch, head group)
  int group;       // pack_gqa: rows are (i, g) with row = i*group + g; otherwise group = 1
  int off;         // alignment offset: Sk - Sq for lower-right, 0 for upper-left
  int seq_k;
  int64_t bh0;          // b * Hq + first head of the CTA (pack_gqa: hk * group)
  const float* slopes;  // ALiBi slopes of batch b (null: off)

  __device__ __forceinline__ int row(int mi, int r, int kw) const {
    const int x = base + mi * 16 * kw + 8 * r;
    return x < rows_total ? x : rows_total - 1;
  }
  __device__ __forceinline__ int i_of(int row) const { return group == 1 ? row : row / group; }
  __device__ __forceinline__ int h_of(int row) const { return group == 1 ? 0 : row % group; }
};

// Scale (or softcap) every score of the tile into log2 units; ALiBi when on.
template <int kMT, int kNT, int kW>
__device__ __forceinline__ void scale_scores(float (&s)[kMT][kNT][4], const FwdParams& p, const RowCtx& rc, int j0,
                                             int t) {
  if (p.softcap_out != 0.f) {
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mi][nt][e] = p.softcap_out * tanh_ex2(s[mi][nt][e] * p.softcap_in);
  } else {
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mi][nt][e] *= p.score_mul;
  }
  if (rc.slopes != nullptr) {
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = rc.row(mi, r, kW);
        const float slope = __ldg(rc.slopes + rc.h_of(row)) * p.alibi_mul;
        const int diag = rc.i_of(row) + rc.off;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
          for (int c = 0; c < 2; ++c)
            s[mi][nt][2 * r + c] =
                add_alibi(s[mi][nt][2 * r + c], slope, static_cast<float>(diag - (j0 + nt * 8 + 2 * t + c)));
      }
  }
}

// -inf outside [jmin, jmax] of each row; called only for tiles that touch a boundary.
// Visible keys of a row: [diag - left, diag + right] (bounded sides only) within [0, seq_k).
// kLeft = false (lean kernel): the left bound is never set, so it is not computed.
template <bool kLeft, int kMT, int kNT, int kW>
__device__ __forceinline__ void mask_scores(float (&s)[kMT][kNT][4], const FwdParams& p, const RowCtx& rc, int j0,
                                            int t) {
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t diag = int64_t(rc.i_of(rc.row(mi, r, kW))) + rc.off;
      int64_t hi = rc.seq_k - 1, lo = 0;
      if (p.window_right >= 0 && diag + p.window_right < hi) hi = diag + p.window_right;
      if (kLeft && p.window_left >= 0 && diag - p.window_left > lo) lo = diag - p.window_left;
      // relative to j0 + 2t, so the comparisons below stay in int32
      const int64_t base = j0 + 2 * t;
      const int rel_lo = static_cast<int>(lo - base < -1 ? -1 : (lo - base > 1 << 30 ? 1 << 30 : lo - base));
      const int rel_hi = static_cast<int>(hi - base < -1 ? -1 : (hi - base > 1 << 30 ? 1 << 30 : hi - base));
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int rel = nt * 8 + c;
          if (rel < rel_lo || rel > rel_hi) s[mi][nt][2 * r + c] = -INFINITY;
        }
    }
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Online softmax step. softmax_row handles one accumulator row (tile mi, half r): new running max,
// scores -> probabilities, running sum; it returns the factor O's row must be rescaled by (corr).
// softmax_update does that and the rescale row by row (the sm80 kernels: corr dies at once); the Hopper
// kernel runs softmax_probs (every row) while an MMA into O is still in flight, then rescale_o.
// row_sum keeps this thread's partial sum (the quad is reduced once, in the epilogue); row_max is kept
// in log2 units. kFoldScale (lean kernel): s holds raw Q.K^T scores and score_mul (> 0, so the max of
// raw scores is the max of scaled ones) is folded into the exponent: p = exp2(s * score_mul - m), one
// FFMA and one MUFU.EX2 per score, no separate scaling pass. Otherwise s is already in log2 units.
template <bool kFoldScale, int kMT, int kNT>
__device__ __forceinline__ float softmax_row(float (&s)[kMT][kNT][4], float (&row_max)[kMT][2],
                                             float (&row_sum)[kMT][2], float score_mul, int mi, int r) {
  float mx = kFoldScale ? -INFINITY : row_max[mi][r];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) mx = fmaxf(mx, fmaxf(s[mi][nt][2 * r], s[mi][nt][2 * r + 1]));
  mx = quad_max(mx);
  if constexpr (kFoldScale) mx = fmaxf(row_max[mi][r], mx * score_mul);  // -inf stays -inf
  const float m_use = mx == -INFINITY ? 0.f : mx;                        // a row with no visible key so far: all p = 0
  const float corr = exp2_ftz(row_max[mi][r] - m_use);
  row_max[mi][r] = mx;
  float sum = 0.f;
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const float x = s[mi][nt][2 * r + c];
      const float pv = exp2_ftz(kFoldScale ? fmaf(x, score_mul, -m_use) : x - m_use);
      s[mi][nt][2 * r + c] = pv;
      sum += pv;
    }
  row_sum[mi][r] = row_sum[mi][r] * corr + sum;
  return corr;
}

template <int kMT, int kDT>
__device__ __forceinline__ void rescale_o_row(float (&acc_o)[kMT][kDT][4], int mi, int r, float corr) {
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt) {
    acc_o[mi][dt][2 * r] *= corr;
    acc_o[mi][dt][2 * r + 1] *= corr;
  }
}

template <bool kFoldScale, int kMT, int kNT, int kDT>
__device__ __forceinline__ void softmax_update(float (&s)[kMT][kNT][4], float (&acc_o)[kMT][kDT][4],
                                               float (&row_max)[kMT][2], float (&row_sum)[kMT][2], float score_mul) {
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r)
      rescale_o_row(acc_o, mi, r, softmax_row<kFoldScale>(s, row_max, row_sum, score_mul, mi, r));
}

template <bool kFoldScale, int kMT, int kNT>
__device__ __forceinline__ void softmax_probs(float (&s)[kMT][kNT][4], float (&row_max)[kMT][2],
                                              float (&row_sum)[kMT][2], float score_mul, float (&corr)[kMT][2]) {
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) corr[mi][r] = softmax_row<kFoldScale>(s, row_max, row_sum, score_mul, mi, r);
}

template <int kMT, int kDT>
__device__ __forceinline__ void rescale_o(float (&acc_o)[kMT][kDT][4], const float (&corr)[kMT][2]) {
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) rescale_o_row(acc_o, mi, r, corr[mi][r]);
}

// Dropout with attn's Philox mapping: element (b, h, i, j) uses word j & 3 of the block for j >> 2.
// A thread's two columns 2t, 2t+1 share one Philox call (same j >> 2).
template <int kMT, int kNT, int kW>
__device__ __forceinline__ void apply_dropout(float (&s)[kMT][kNT][4], const FwdParams& p, const RowCtx& rc, int j0,
                                              int t) {
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = rc.row(mi, r, kW);
      const uint32_t bh = static_cast<uint32_t>(rc.bh0 + rc.h_of(row));
      const uint32_t i = static_cast<uint32_t>(rc.i_of(row));
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const uint32_t j = static_cast<uint32_t>(j0 + nt * 8 + 2 * t);
        bool keep0, keep1;
        dropout_keep_pair(p.dropout_seed, p.dropout_offset, bh, i, j, p.dropout_threshold, keep0, keep1);
        if (!keep0) s[mi][nt][2 * r] = 0.f;
        if (!keep1) s[mi][nt][2 * r + 1] = 0.f;
      }
    }
}

}  // namespace attn::flash
