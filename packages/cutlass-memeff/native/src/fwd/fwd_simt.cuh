// Forward kernel of the SIMT path: FMA on fp32 registers, online softmax, any head dims, every
// feature at run time (varlen and sequsedK through bind_sequence, softcap and ALiBi through masked_logit).
// One block: kBlockM queries of one (b, h) and one tile of value columns.
#pragma once
#include <cmath>
#include <type_traits>

#include "common/dtype_traits.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"
#include "fwd/simt_traits.h"

namespace memeff {

template <typename T, typename Tr>
__global__ void __launch_bounds__(Tr::kThreads) fwd_simt_kernel(const FwdParams params) {
  constexpr int M = Tr::kBlockM, N = Tr::kBlockN, C = Tr::kChunk, DVT = Tr::kDvTile;
  constexpr int RT = Tr::kRowsPerThread, KT = Tr::kKeysPerThread, CT = Tr::kColsPerThread;
  __shared__ float q_s[M][C + Tr::kPad];
  __shared__ float k_s[N][C + Tr::kPad];
  __shared__ float p_s[M][N + Tr::kPad];
  __shared__ float v_s[N][DVT];

  const int tid = threadIdx.x, tx = tid % Tr::kTx, ty = tid / Tr::kTx;
  const int bh = blockIdx.y + params.bh_base, b = bh / params.heads_q, h = bh % params.heads_q, hk = h / params.group;
  const int m_block = params.has_right ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // heavy causal blocks first
  const int i0 = m_block * M;
  FwdParams p = params;
  bind_sequence(p, b, sizeof(T));
  if (i0 >= p.seq_q) return;  // a varlen sequence shorter than the longest
  const int dv0 = blockIdx.z * DVT;
  const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
  const MaskView mask = mask_view(p, b, h);
  const ScoreCtx sc = score_ctx(p, b, h);

  float o[RT][CT], m_run[RT], l_run[RT];
#pragma unroll
  for (int r = 0; r < RT; ++r) {
    m_run[r] = -INFINITY;
    l_run[r] = 0.f;
#pragma unroll
    for (int c = 0; c < CT; ++c) o[r][c] = 0.f;
  }

  const int j_end = key_end_for_queries(p, min(i0 + M, p.seq_q) - 1);
  for (int j0 = key_step_begin(p, i0, N) * N; j0 < j_end; j0 += N) {
    // S = Q K^T over head-dim chunks.
    float s[RT][KT];
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int c = 0; c < KT; ++c) s[r][c] = 0.f;
    for (int d0 = 0; d0 < p.head_dim; d0 += C) {
      __syncthreads();
      for (int idx = tid; idx < M * C; idx += Tr::kThreads) {
        const int r = idx / C, c = idx % C, i = i0 + r, d = d0 + c;
        q_s[r][c] = (i < p.seq_q && d < p.head_dim) ? to_float(q[i * p.q_stride[2] + d]) : 0.f;
      }
      for (int idx = tid; idx < N * C; idx += Tr::kThreads) {
        const int r = idx / C, c = idx % C, j = j0 + r, d = d0 + c;
        k_s[r][c] = (j < p.seq_k && d < p.head_dim) ? to_float(k[j * p.k_stride[2] + d]) : 0.f;
      }
      __syncthreads();
#pragma unroll 8
      for (int dd = 0; dd < C; ++dd) {
        float a[RT], bk[KT];
#pragma unroll
        for (int r = 0; r < RT; ++r) a[r] = q_s[ty + r * Tr::kTy][dd];
#pragma unroll
        for (int c = 0; c < KT; ++c) bk[c] = k_s[tx + c * Tr::kTx][dd];
#pragma unroll
        for (int r = 0; r < RT; ++r)
#pragma unroll
          for (int c = 0; c < KT; ++c) s[r][c] = fmaf(a[r], bk[c], s[r][c]);
      }
    }

    // Mask, online softmax, dropout; P goes to shared memory for P.V.
#pragma unroll
    for (int r = 0; r < RT; ++r) {
      const int i = i0 + ty + r * Tr::kTy;
      float mx = -INFINITY;
#pragma unroll
      for (int c = 0; c < KT; ++c) {
        const int j = j0 + tx + c * Tr::kTx;
        s[r][c] = masked_logit<true, std::is_same_v<T, float>>(p, mask, sc, i, j, s[r][c]) * kLog2e;
        mx = fmaxf(mx, s[r][c]);
      }
#pragma unroll
      for (int off = 1; off < Tr::kTx; off <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float m_new = fmaxf(m_run[r], mx);
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      const float alpha = exp2f(m_run[r] - m_use);
      m_run[r] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < KT; ++c) {
        const int j = j0 + tx + c * Tr::kTx;
        float pe = exp2f(s[r][c] - m_use);
        sum += pe;
        if (p.dropout) pe = (j < p.seq_k && dropout_kept(p, b, h, i, j)) ? pe * p.dropout_keep_scale : 0.f;
        p_s[ty + r * Tr::kTy][tx + c * Tr::kTx] = pe;
      }
      l_run[r] = l_run[r] * alpha + sum;  // per-thread partial; summed over kTx at the end
#pragma unroll
      for (int c = 0; c < CT; ++c) o[r][c] *= alpha;
    }
    for (int idx = tid; idx < N * DVT; idx += Tr::kThreads) {
      const int r = idx / DVT, c = idx % DVT, j = j0 + r, d = dv0 + c;
      v_s[r][c] = (j < p.seq_k && d < p.head_dim_v) ? to_float(v[j * p.v_stride[2] + d]) : 0.f;
    }
    __syncthreads();
#pragma unroll 4
    for (int jj = 0; jj < N; ++jj) {
      float pr[RT];
#pragma unroll
      for (int r = 0; r < RT; ++r) pr[r] = p_s[ty + r * Tr::kTy][jj];
#pragma unroll
      for (int c = 0; c < CT; ++c) {
        const float vv = v_s[jj][tx + c * Tr::kTx];
#pragma unroll
        for (int r = 0; r < RT; ++r) o[r][c] = fmaf(pr[r], vv, o[r][c]);
      }
    }
  }

  T* out = static_cast<T*>(p.o) + b * p.o_stride[0] + h * p.o_stride[1];
#pragma unroll
  for (int r = 0; r < RT; ++r) {
    float l = l_run[r];
#pragma unroll
    for (int off = 1; off < Tr::kTx; off <<= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
    const int i = i0 + ty + r * Tr::kTy;
    if (i >= p.seq_q) continue;
    const float inv = row_inv_sum(l);  // fully masked rows: out 0; NaN rows stay NaN
#pragma unroll
    for (int c = 0; c < CT; ++c) {
      const int d = dv0 + tx + c * Tr::kTx;
      if (d < p.head_dim_v) out[i * p.o_stride[2] + d] = from_float<T>(o[r][c] * inv);
    }
    if (blockIdx.z == 0 && tx == 0) {
      p.lse[lse_row(p, b, h, i)] = row_lse(m_run[r], l);
    }
  }
}

}  // namespace memeff
