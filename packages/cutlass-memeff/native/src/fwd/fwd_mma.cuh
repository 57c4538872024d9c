// Forward kernel of the tensor-core path: Q.K^T and P.V with mma.sync m16n8k16 (fp32 accumulators),
// operands through ldmatrix from swizzled shared memory filled by cp.async, online softmax in
// registers, masks/bias/causal/dropout applied per element only on tiles that need them (the bias or
// boolean mask tile staged in shared memory by cp.async with K, see common/mask_tile.cuh).
//
// Each warp owns Tr::kMTiles 16-row tiles (rows warp * 16 * MT + mi * 16 + ...), so one K or V
// fragment feeds MT mma. kFull: D == Dv == Tr::kHeadDim, the head-dim loops are compile-time (no
// run-time exits between ldmatrix and mma, which would cut ptxas's scheduling into small blocks);
// otherwise they stop at the real D / Dv (e.g. D = 80 in the 128 bucket). Shared-memory tiles are
// Tr::kTileDim wide; only the first Tr::kHeadDim columns are loaded and read.
#pragma once
#include <cmath>

#include "common/dtype_traits.cuh"
#include "common/mask_tile.cuh"
#include "common/toolkit.cuh"
#include "common/smem_tile.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"
#include "fwd/fwd_block_order.cuh"
#include "fwd/mma_traits.h"

namespace memeff {

// kMask: the call has a mask or bias. Without one the mask code is compiled out: the staged-mask path,
// compiled into one kernel with the plain one, made the no-mask forward 10-18% slower (H200, bf16, D128
// S4k 151.6 vs 178.5 TFLOP/s) with registers unchanged (246 vs 242).
// kFeat: the feature kernel (FwdParams::features: a window's left side, softcap, ALiBi, varlen, sequsedK),
// built with kMask; calls without those features run kernels that have no code for them.
template <typename T, typename Tr, bool kFull, bool kMask, bool kFeat>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm) fwd_mma_kernel(const FwdParams params) {
#ifdef ATTN_SM80
  constexpr int M = Tr::kBlockM, N = Tr::kBlockN, HD = Tr::kHeadDim, TD = Tr::kTileDim, NT = Tr::kNTiles,
                OT = Tr::kOTiles;
  constexpr int MT = Tr::kMTiles;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* q_s = reinterpret_cast<T*>(smem_raw);
  T* k_s = q_s + Tr::kSmemQ;
  T* v_s = k_s + Tr::kSmemK;
  unsigned char* mask_s = reinterpret_cast<unsigned char*>(v_s + Tr::kSmemK);  // only with a mask

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const FwdBlock blk = fwd_block_of(params);  // causal: longest blocks first (fwd_block_order.cuh)
  const int m_block = blk.m_block, bh = blk.bh_local + params.bh_base, b = bh / params.heads_q, h = bh % params.heads_q;
  const int hk = h / params.group;
  const int i0 = m_block * M;
  // The feature kernel binds its sequence (varlen, sequsedK); the others read the call's parameters as they are.
  FwdParams bound = params;
  if constexpr (kFeat) bind_sequence(bound, b, sizeof(T));
  const FwdParams& p = kFeat ? bound : params;
  if (kFeat && i0 >= p.seq_q) return;  // a varlen sequence shorter than the longest
  const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
  const MaskView mask = mask_view(p, b, h);
  const bool mask_smem = kMask && mask_tile_ok(mask);               // the mask tile of step nb loads with K(nb)
  const int qk_steps = kFull ? HD / 16 : (p.head_dim + 15) / 16;    // k16 steps of Q.K^T needed
  const int pv_pairs = kFull ? HD / 16 : (p.head_dim_v + 15) / 16;  // pairs of n8 tiles of O needed
  const int row0 = warp * 16 * MT;                                  // this warp's first row in the block
  const float scale_log2 = p.scale * kLog2e;
  // Tiles that are not plain but have no mask need only the causal / bounds rule (score_mods.cuh).
  const bool bounds_only = !kMask || p.mask_kind == MaskKind::kNone;
  const int coff = right_coff(p);
  const ScoreCtx sc = score_ctx(p, b, h);
  const bool mods = kFeat && has_score_mods(p);  // softcap or ALiBi: every score takes the per-element rule

  float acc_o[MT][OT][4];
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int n = 0; n < OT; ++n) acc_o[mi][n][0] = acc_o[mi][n][1] = acc_o[mi][n][2] = acc_o[mi][n][3] = 0.f;
  float m_run[MT][2], l_run[MT][2];
#pragma unroll
  for (int mi = 0; mi < MT; ++mi) m_run[mi][0] = m_run[mi][1] = -INFINITY, l_run[mi][0] = l_run[mi][1] = 0.f;

  const int n_blocks = key_blocks_for_queries(p, i0, M, N);
  const int nb0 = kFeat ? key_step_begin(p, i0, N) : 0;  // a window's left side skips the keys before it

  load_tile_async<T, M, TD, Tr::kThreads, HD>(q_s, q, p.q_stride[2], i0, p.seq_q, p.head_dim);
  if (nb0 < n_blocks) {
    load_tile_async<T, N, TD, Tr::kThreads, HD>(k_s, k, p.k_stride[2], nb0 * N, p.seq_k, p.head_dim);
    if (mask_smem) load_mask_tile_async<M, N, Tr::kThreads>(mask_s, mask, i0, nb0 * N, p.seq_q, p.seq_k);
  }
  cp_async_commit();

#pragma unroll 1
  for (int nb = nb0; nb < n_blocks; ++nb) {
    const int j0 = nb * N;
    cp_async_wait_all();
    __syncthreads();  // K(nb) and its mask tile landed; every warp is done with V(nb - 1)
    load_tile_async<T, N, TD, Tr::kThreads, HD>(v_s, v, p.v_stride[2], j0, p.seq_k, p.head_dim_v);
    cp_async_commit();

    // S = Q K^T for this warp's MT x 16 rows: one K fragment feeds MT mma.
    float acc_s[MT][NT][4];
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
      for (int n = 0; n < NT; ++n) acc_s[mi][n][0] = acc_s[mi][n][1] = acc_s[mi][n][2] = acc_s[mi][n][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      if (!kFull && ks >= qk_steps) break;
      uint32_t a[MT][4];
#pragma unroll
      for (int mi = 0; mi < MT; ++mi)
        ldmatrix_x4(a[mi], q_s + swizzle<TD>(row0 + mi * 16 + (lane % 16), ks * 16 + (lane / 16) * 8));
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        uint32_t bk[4];
        ldmatrix_x4(bk, k_s + swizzle<TD>(np * 16 + (lane % 8) + (lane / 16) * 8, ks * 16 + ((lane / 8) % 2) * 8));
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
          mma_16816<T>(acc_s[mi][2 * np], a[mi], bk[0], bk[1]);
          mma_16816<T>(acc_s[mi][2 * np + 1], a[mi], bk[2], bk[3]);
        }
      }
    }

    // Logits in log2 units; masking only where the tile needs it.
    const bool plain = tile_unmasked<kFeat>(p, i0, M, j0, N);
    // Plain tiles with a positive scale keep the raw dot products: the scale (times log2 e) is folded
    // into the softmax (row max times sl2, then one FFMA per score before the exp2); other tiles are
    // scaled here and use sl2 = 1. d64 only: at d128 / d256 (242-250 regs) the fold made ptxas spill.
    const bool fold = HD == 64 && plain && scale_log2 > 0.f;
    // A staged mask on an interior step: dot * scale + mask term, one FFMA per score
    // (mask_tile.cuh). d64 keeps natural-log units and folds log2 e into the softmax as above (sl2);
    // d128 stays in log2 units (one FMUL more per score: the mask term times log2 e) so that sl2
    // stays the compile-time 1 there (a run-time sl2 spilled at d128, as the fold did). Not at d256:
    // its kFull kernel spilled 8 bytes with it (255 regs, ptxas sm_90a); d256 takes the per-element rule. Nor in
    // the d64 kernel for D != 64 on sm_80-89, where it spilled 12 bytes under the 168-register cap.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    constexpr bool kMaskFastShape = HD == 128 || (HD == 64 && kFull);
#else
    constexpr bool kMaskFastShape = HD <= 128;
#endif
    const bool mask_fast = kMaskFastShape && mask_smem && tile_keys_visible<kFeat>(p, i0, M, j0, N);
    constexpr bool kMaskLog2 = HD != 64;
    const float sl2 = fold ? scale_log2 : (!kMaskLog2 && mask_fast) ? kLog2e : 1.f;
    if (mask_fast) {
      constexpr int kPitch = MaskTile<M, N>::kPitch;
      const unsigned char* row_g = mask_s + (row0 + g) * kPitch;
      with_mask_dtype<T>(mask.dtype, [&](auto dt) {
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
          add_mask_rows<decltype(dt)::value, kPitch, kMaskLog2>(acc_s[mi], row_g + mi * 16 * kPitch, t, p.scale);
        }
      });
    } else {
#pragma unroll
      for (int mi = 0; mi < MT; ++mi)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if (fold) {
              // raw dot product: scaled in the softmax below
            } else if (plain) {
              acc_s[mi][n][e] *= scale_log2;
            } else if (bounds_only && !mods) {
              // No mask: the causal / window bounds, in 32-bit compares (masked_logit's rule).
              const int i = i0 + row0 + mi * 16 + g + 8 * (e / 2), j = j0 + n * 8 + 2 * t + (e % 2);
              const bool vis = kFeat ? sc.kb.visible(i, j) : (i < p.seq_q && j < p.seq_k && j <= i + coff);
              acc_s[mi][n][e] = vis ? acc_s[mi][n][e] * scale_log2 : -INFINITY;
            } else {
              const int il = row0 + mi * 16 + g + 8 * (e / 2), jl = n * 8 + 2 * t + (e % 2);
              acc_s[mi][n][e] =
                  (mask_smem
                       ? tile_logit<M, N, kFeat, false>(p, mask, sc, mask_s, i0 + il, j0 + jl, il, jl, acc_s[mi][n][e])
                       : masked_logit<kFeat, false>(p, mask, sc, i0 + il, j0 + jl, acc_s[mi][n][e])) *
                  kLog2e;
            }
          }
    }

    // Online softmax: row max and sum over the quad that shares a row.
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
      float alpha[2], m_use[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < NT; ++n) mx = fmaxf(mx, fmaxf(acc_s[mi][n][2 * r], acc_s[mi][n][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_run[mi][r], mx * sl2);  // sl2 > 0: the max of the scaled logits
        m_use[r] = m_new == -INFINITY ? 0.f : m_new;
        alpha[r] = exp2_ftz(m_run[mi][r] - m_use[r]);
        m_run[mi][r] = m_new;
        l_run[mi][r] *= alpha[r];
      }
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float pe = exp2_ftz(fmaf(acc_s[mi][n][e], sl2, -m_use[e / 2]));
          l_run[mi][e / 2] += pe;
          acc_s[mi][n][e] = pe;
        }
#pragma unroll
      for (int n = 0; n < OT; ++n) {
        acc_o[mi][n][0] *= alpha[0];
        acc_o[mi][n][1] *= alpha[0];
        acc_o[mi][n][2] *= alpha[1];
        acc_o[mi][n][3] *= alpha[1];
      }
    }
    if (p.dropout) {
#pragma unroll
      for (int mi = 0; mi < MT; ++mi)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            bool k0, k1;
            const int i = i0 + row0 + mi * 16 + g + 8 * r, j = j0 + n * 8 + 2 * t;
            dropout_kept_pair(p, b, h, i, j, k0, k1);
            acc_s[mi][n][2 * r] = k0 ? acc_s[mi][n][2 * r] * p.dropout_keep_scale : 0.f;
            acc_s[mi][n][2 * r + 1] = k1 ? acc_s[mi][n][2 * r + 1] * p.dropout_keep_scale : 0.f;
          }
    }

    cp_async_wait_all();
    __syncthreads();  // V(nb) landed; every warp is done with K(nb) and the mask tile
    if (nb + 1 < n_blocks) {
      load_tile_async<T, N, TD, Tr::kThreads, HD>(k_s, k, p.k_stride[2], j0 + N, p.seq_k, p.head_dim);
      if (mask_smem) load_mask_tile_async<M, N, Tr::kThreads>(mask_s, mask, i0, j0 + N, p.seq_q, p.seq_k);
      cp_async_commit();
    }

    // O += P V: P's accumulator layout is the A operand's layout, two n8 tiles per k16 step; one V
    // fragment feeds MT mma.
#pragma unroll
    for (int kk = 0; kk < N / 16; ++kk) {
      uint32_t a[MT][4];
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
        a[mi][0] = pack2<T>(acc_s[mi][2 * kk][0], acc_s[mi][2 * kk][1]);
        a[mi][1] = pack2<T>(acc_s[mi][2 * kk][2], acc_s[mi][2 * kk][3]);
        a[mi][2] = pack2<T>(acc_s[mi][2 * kk + 1][0], acc_s[mi][2 * kk + 1][1]);
        a[mi][3] = pack2<T>(acc_s[mi][2 * kk + 1][2], acc_s[mi][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < OT / 2; ++dp) {
        if (!kFull && dp >= pv_pairs) break;
        uint32_t bv[4];
        ldmatrix_x4_trans(bv,
                          v_s + swizzle<TD>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, dp * 16 + (lane / 16) * 8));
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
          mma_16816<T>(acc_o[mi][2 * dp], a[mi], bv[0], bv[1]);
          mma_16816<T>(acc_o[mi][2 * dp + 1], a[mi], bv[2], bv[3]);
        }
      }
    }
  }

  // Epilogue: normalize, stage through shared memory, 16-byte stores; logsumexp per row.
  float inv[MT][2];
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[mi][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      inv[mi][r] = row_inv_sum(l);  // fully masked rows: out 0, lse -inf; NaN rows stay NaN
      const int i = i0 + row0 + mi * 16 + g + 8 * r;
      if (t == 0 && i < p.seq_q) {
        p.lse[lse_row(p, b, h, i)] = row_lse(m_run[mi][r], l);
      }
    }
  cp_async_wait_all();
  __syncthreads();  // every warp is done with q_s
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int n = 0; n < OT; ++n) {
      const int col = n * 8 + 2 * t, r0 = row0 + mi * 16 + g;
      *reinterpret_cast<uint32_t*>(q_s + swizzle<TD>(r0, col)) =
          pack2<T>(acc_o[mi][n][0] * inv[mi][0], acc_o[mi][n][1] * inv[mi][0]);
      *reinterpret_cast<uint32_t*>(q_s + swizzle<TD>(r0 + 8, col)) =
          pack2<T>(acc_o[mi][n][2] * inv[mi][1], acc_o[mi][n][3] * inv[mi][1]);
    }
  __syncthreads();
  T* out = static_cast<T*>(p.o) + b * p.o_stride[0] + h * p.o_stride[1];
  constexpr int kChunks = HD / 8;  // the columns of O (q_s rows are TD wide)
  for (int idx = threadIdx.x; idx < M * kChunks; idx += Tr::kThreads) {
    const int r = idx / kChunks, c = idx % kChunks, i = i0 + r;
    if (i < p.seq_q && c * 8 < p.head_dim_v) {
      *reinterpret_cast<uint4*>(out + i * p.o_stride[2] + c * 8) =
          *reinterpret_cast<const uint4*>(q_s + swizzle<TD>(r, c * 8));
    }
  }
#else
  __trap();  // built without sm80 code: the dispatcher never launches this kernel here
#endif
}

}  // namespace memeff
