// Deterministic dQ of the tensor-core path: one block per 64 queries of one (b, h) walks the key
// blocks in order (S = Q K^T, dP = dO V^T, dS, dQ += dS K, all mma.sync) and writes dQ once: no
// atomics, so the result is bitwise reproducible. The key-split kernel (bwd_mma) then skips dQ.
// Every feature at run time (as the SIMT kernels: bind_sequence, then masked_logit's rule).
#pragma once
#include <cmath>

#include "bwd/mma_bwd_traits.h"
#include "common/dtype_traits.cuh"
#include "common/toolkit.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"
#include "common/smem_tile.cuh"
#include "fwd/mma_traits.h"

namespace memeff {

template <typename T, typename Tr>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm) bwd_dq_mma_kernel(const BwdParams params) {
#ifdef ATTN_SM80
  constexpr int M = Tr::kBlockM, N = Tr::kBlockN, HD = Tr::kHeadDim, NT = Tr::kNTiles, DT = Tr::kDTiles;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* q_s = reinterpret_cast<T*>(smem_raw);
  T* do_s = q_s + Tr::kSmemTile;
  T* k_s = do_s + Tr::kSmemTile;  // [2][N][HD]
  T* v_s = k_s + 2 * Tr::kSmemTile;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.y + params.bh_base, b = bh / params.heads_q, h = bh % params.heads_q, hk = h / params.group;
  const int i0 = blockIdx.x * M;
  BwdParams p = params;
  bind_sequence(p, b, sizeof(T));
  if (i0 >= p.seq_q) return;  // a varlen sequence shorter than the longest
  const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
  const T* dout = static_cast<const T*>(p.dout) + b * p.do_stride[0] + h * p.do_stride[1];
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
  const MaskView mask = mask_view(p, b, h);
  const ScoreCtx sc = score_ctx(p, b, h);

  // This thread's two rows: logsumexp (log2 units; -inf for padding and fully masked rows) and D.
  float lse2[2], dsum[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = i0 + warp * 16 + g + 8 * r;
    const int64_t row = lse_row(p, b, h, i);
    lse2[r] = i < p.seq_q ? p.lse[row] * kLog2e : -INFINITY;
    dsum[r] = i < p.seq_q ? p.dsum[row] : 0.f;
  }

  const int j_end = key_end_for_queries(p, min(i0 + M, p.seq_q) - 1);
  const int n_blocks = (j_end + N - 1) / N;
  const int nb0 = key_step_begin(p, i0, N);  // a window's left side skips the keys before it
  load_tile_async<T, M, HD, Tr::kThreads>(q_s, q, p.q_stride[2], i0, p.seq_q, p.head_dim);
  load_tile_async<T, M, HD, Tr::kThreads>(do_s, dout, p.do_stride[2], i0, p.seq_q, p.head_dim_v);
  if (nb0 < n_blocks) {
    load_tile_async<T, N, HD, Tr::kThreads>(k_s + (nb0 & 1) * Tr::kSmemTile, k, p.k_stride[2], nb0 * N, p.seq_k,
                                            p.head_dim);
    load_tile_async<T, N, HD, Tr::kThreads>(v_s + (nb0 & 1) * Tr::kSmemTile, v, p.v_stride[2], nb0 * N, p.seq_k,
                                            p.head_dim_v);
  }
  cp_async_commit();

  const int qk_steps = (p.head_dim + 15) / 16, v_steps = (p.head_dim_v + 15) / 16;
  float acc_dq[DT][4];
#pragma unroll
  for (int n = 0; n < DT; ++n) acc_dq[n][0] = acc_dq[n][1] = acc_dq[n][2] = acc_dq[n][3] = 0.f;

  for (int nb = nb0; nb < n_blocks; ++nb) {
    const int j0 = nb * N, buf = nb & 1;
    cp_async_wait_all();
    __syncthreads();  // K(nb), V(nb) landed; every warp is done with the other buffer
    if (nb + 1 < n_blocks) {
      load_tile_async<T, N, HD, Tr::kThreads>(k_s + (buf ^ 1) * Tr::kSmemTile, k, p.k_stride[2], j0 + N, p.seq_k,
                                              p.head_dim);
      load_tile_async<T, N, HD, Tr::kThreads>(v_s + (buf ^ 1) * Tr::kSmemTile, v, p.v_stride[2], j0 + N, p.seq_k,
                                              p.head_dim_v);
    }
    cp_async_commit();
    const T* kb_s = k_s + buf * Tr::kSmemTile;
    const T* vb_s = v_s + buf * Tr::kSmemTile;

    float acc_s[NT][4], acc_dp[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_s[n][e] = acc_dp[n][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      if (ks >= qk_steps) break;
      uint32_t a[4];
      ldmatrix_x4(a, q_s + swizzle<HD>(warp * 16 + (lane % 16), ks * 16 + (lane / 16) * 8));
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        uint32_t bk[4];
        ldmatrix_x4(bk, kb_s + swizzle<HD>(np * 16 + (lane % 8) + (lane / 16) * 8, ks * 16 + ((lane / 8) % 2) * 8));
        mma_16816<T>(acc_s[2 * np], a, bk[0], bk[1]);
        mma_16816<T>(acc_s[2 * np + 1], a, bk[2], bk[3]);
      }
    }
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      if (ks >= v_steps) break;
      uint32_t a[4];
      ldmatrix_x4(a, do_s + swizzle<HD>(warp * 16 + (lane % 16), ks * 16 + (lane / 16) * 8));
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        uint32_t bv[4];
        ldmatrix_x4(bv, vb_s + swizzle<HD>(np * 16 + (lane % 8) + (lane / 16) * 8, ks * 16 + ((lane / 8) % 2) * 8));
        mma_16816<T>(acc_dp[2 * np], a, bv[0], bv[1]);
        mma_16816<T>(acc_dp[2 * np + 1], a, bv[2], bv[3]);
      }
    }

    const bool plain = tile_unmasked<true>(p, i0, M, j0, N);
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e / 2, i = i0 + warp * 16 + g + 8 * r, j = j0 + n * 8 + 2 * t + (e % 2);
        float pr = 0.f, dcap = 1.f;
        if (lse2[r] != -INFINITY) {
          const float logit2 = plain ? acc_s[n][e] * (p.scale * kLog2e)
                                     : masked_logit<true, false>(p, mask, sc, i, j, acc_s[n][e], dcap) * kLog2e;
          pr = prob_of_logit2(logit2, lse2[r]);
        }
        float keep = 1.f;
        if (p.dropout) keep = (i < p.seq_q && j < p.seq_k && dropout_kept(p, b, h, i, j)) ? p.dropout_keep_scale : 0.f;
        acc_s[n][e] = attn::softmax_grad(pr, acc_dp[n][e] * keep, dsum[r]) * dcap;  // dS times the softcap derivative
      }

    // dQ += dS K: dS's accumulator layout is the A operand's, K transposed out of its row-major tile.
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) {
      uint32_t a[4];
      a[0] = pack2<T>(acc_s[2 * kk][0], acc_s[2 * kk][1]);
      a[1] = pack2<T>(acc_s[2 * kk][2], acc_s[2 * kk][3]);
      a[2] = pack2<T>(acc_s[2 * kk + 1][0], acc_s[2 * kk + 1][1]);
      a[3] = pack2<T>(acc_s[2 * kk + 1][2], acc_s[2 * kk + 1][3]);
#pragma unroll
      for (int dp = 0; dp < DT / 2; ++dp) {
        if (dp >= qk_steps) break;
        uint32_t bk[4];
        ldmatrix_x4_trans(bk,
                          kb_s + swizzle<HD>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, dp * 16 + (lane / 16) * 8));
        mma_16816<T>(acc_dq[2 * dp], a, bk[0], bk[1]);
        mma_16816<T>(acc_dq[2 * dp + 1], a, bk[2], bk[3]);
      }
    }
  }
  cp_async_wait_all();

  T* out = static_cast<T*>(p.dq) + b * p.dq_stride[0] + h * p.dq_stride[1];
#pragma unroll
  for (int n = 0; n < DT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = i0 + warp * 16 + g + 8 * (e / 2), d = n * 8 + 2 * t + (e % 2);
      if (i < p.seq_q && d < p.head_dim) out[i * p.dq_stride[2] + d] = from_float<T>(acc_dq[n][e] * p.scale);
    }
#else
  __trap();  // built without sm80 code: the dispatcher never launches this kernel here
#endif
}

}  // namespace memeff
