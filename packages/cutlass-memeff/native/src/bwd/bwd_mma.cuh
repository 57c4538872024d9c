// Backward of the tensor-core path (fp16/bf16, sm80+): key-split, one block per (128 keys and a
// kColSplit-th of their dK/dV/dQ columns, b, kv head, query split). Each step takes 32 queries of one query head of the GQA group: S^T = K Q^T and
// dP^T = V dO^T with mma.sync, P^T from the saved logsumexp, dropout replayed, dS^T; then
// dV += Pd^T dO and dK += dS^T Q from registers, and dQ = dS K from dS^T staged in shared memory,
// added to the fp32 workspace with atomics (the deterministic mode computes dQ in bwd_q_simt).
// Q, dO, logsumexp and D are double-buffered: step s + 1 loads while step s computes.
#pragma once
#include <cmath>

#include "bwd/bwd_lean.cuh"
#include "bwd/bwd_step.cuh"
#include "bwd/mma_bwd_traits.h"
#include "common/dbias_store.cuh"
#include "common/dtype_traits.cuh"
#include "common/mask_tile.cuh"
#include "common/toolkit.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"
#include "common/smem_tile.cuh"
#include "fwd/mma_traits.h"

namespace memeff {

// kFull: D == Dv == the bucket; the head-dim loops are then compile-time (as fwd_mma_kernel's).
// kMask: the call has a mask or bias; without one the mask code is compiled out (as fwd_mma_kernel's).
// kFeat: the feature kernel (FwdParams::features, built with kMask; as fwd_mma_kernel's).
template <typename T, typename Tr, bool kFull, bool kMask, bool kFeat>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm) bwd_mma_kernel(const BwdParams params) {
#ifdef ATTN_SM80
  constexpr int N = Tr::kBlockN, M = Tr::kBlockM, HD = Tr::kHeadDim, QT = Tr::kQTiles, DT = Tr::kDTiles;
  constexpr int DS = Tr::kDsStride;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* k_s = reinterpret_cast<T*>(smem_raw);
  T* v_s = k_s + Tr::kSmemK;
  T* q_s = v_s + Tr::kSmemK;                                     // [2][M][HD]
  T* do_s = q_s + 2 * Tr::kSmemQ;                                // [2][M][HD]
  T* dst_s = do_s + 2 * Tr::kSmemQ;                              // dS^T [N][DS]
  float* lse_s = reinterpret_cast<float*>(dst_s + Tr::kSmemDs);  // [2][M], log2 units
  float* dsum_s = lse_s + 2 * M;                                 // [2][M]
  // [2] mask tiles of [M queries][N keys], double-buffered with Q and dO (only with a mask).
  unsigned char* mask_s = reinterpret_cast<unsigned char*>(dsum_s + 2 * M);
  using MaskT = MaskTile<M, N>;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  // Column split (Tr::kColSplit > 1: head dims above 128): the blocks of one key block own the dK, dV and
  // dQ columns [c0, c0 + cols), balanced halves in whole k16 steps (D 160: 80 + 80, 192: 96 + 96), and
  // each recomputes S^T and dP^T over the whole head dim. Invariant: cols <= Tr::kColumns, a multiple of 16.
  constexpr int CS = Tr::kColSplit;
  const int cb = CS == 1 ? 0 : static_cast<int>(blockIdx.x % CS);
  const int j0 = static_cast<int>(CS == 1 ? blockIdx.x : blockIdx.x / CS) * N;
  const int dmax = params.head_dim > params.head_dim_v ? params.head_dim : params.head_dim_v;
  const int cols = CS == 1 || kFull ? Tr::kColumns : ((dmax + CS - 1) / CS + 15) / 16 * 16;
  const int c0 = cb * cols, c0_steps = c0 / 16, col_steps = cols / 16;
  const int bhk = blockIdx.y + params.bh_base, b = bhk / params.heads_kv, hk = bhk % params.heads_kv;
  const int split = blockIdx.z;
  // The feature kernel binds its sequence (varlen, sequsedK); the others read the call's parameters as they are.
  BwdParams bound = params;
  if constexpr (kFeat) bind_sequence(bound, b, sizeof(T));
  const BwdParams& p = kFeat ? bound : params;
  if (kFeat && j0 >= p.seq_k_rows) return;  // a varlen sequence shorter than the longest
  const T* k = static_cast<const T*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
  const T* v = static_cast<const T*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
  load_tile_async<T, N, HD, Tr::kThreads>(k_s, k, p.k_stride[2], j0, p.seq_k, p.head_dim);
  load_tile_async<T, N, HD, Tr::kThreads>(v_s, v, p.v_stride[2], j0, p.seq_k, p.head_dim_v);

  // Steps: (query head of the group, query block of this split), heads outer (inner with dbias_presum).
  const BwdSteps<M, N, kMask, kFeat> walk_of(p, bhk, hk, j0, split);
  const int steps = walk_of.steps;
  const bool presum = walk_of.presum;
  auto load_step = [&](int h, int i0, int buf) {
    const T* q = static_cast<const T*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
    const T* dout = static_cast<const T*>(p.dout) + b * p.do_stride[0] + h * p.do_stride[1];
    load_tile_async<T, M, HD, Tr::kThreads>(q_s + buf * Tr::kSmemQ, q, p.q_stride[2], i0, p.seq_q, p.head_dim);
    load_tile_async<T, M, HD, Tr::kThreads>(do_s + buf * Tr::kSmemQ, dout, p.do_stride[2], i0, p.seq_q, p.head_dim_v);
    const bool staged = stage_step_mask < M, N, Tr::kThreads,
               kMask && Tr::kStageMask > (p, b, h, i0, j0, mask_s + buf * MaskT::kBytes);
    load_step_rows<M>(p, b, h, i0, lse_s + buf * M, dsum_s + buf * M);
    return staged;
  };
  // Whether the step's mask tile was staged, carried from its load_step instead of the step recomputing
  // the mask view (64-bit strides, dtype size) and its alignment test.
  bool staged_cur = steps > 0 && load_step(walk_of.head(0), walk_of.row0(0), 0);
  cp_async_commit();

  const int qk_steps = kFull ? HD / 16 : (p.head_dim + 15) / 16, v_steps = kFull ? HD / 16 : (p.head_dim_v + 15) / 16;
  float acc_dk[DT][4], acc_dv[DT][4];
#pragma unroll
  for (int n = 0; n < DT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[n][e] = acc_dv[n][e] = 0.f;

  StepWalk walk;  // step s's position, advanced without division (bwd_lean.cuh)
  for (int s = 0; s < steps; ++s) {
    const int buf = s & 1;
    cp_async_wait_all();
    __syncthreads();  // this step's tiles landed; every warp is done with the previous step
    const StepWalk next = walk.next(presum, p.group, walk_of.per_head);
    const int h = hk * p.group + walk.gh, i0 = walk_of.row0_of(walk.r);
    const int h_next = hk * p.group + next.gh, i0_next = walk_of.row0_of(next.r);
    const int step_gh = walk.gh;  // this step's head within the GQA group
    walk = next;
    const bool staged_next = s + 1 < steps && load_step(h_next, i0_next, buf ^ 1);
    cp_async_commit();
    const T* qb_s = q_s + buf * Tr::kSmemQ;
    const T* dob_s = do_s + buf * Tr::kSmemQ;

    // S^T = K Q^T and dP^T = V dO^T: this warp's 16 keys x M queries.
    float acc_st[QT][4], acc_dpt[QT][4];
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_st[n][e] = acc_dpt[n][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      if (!kFull && ks >= qk_steps) break;
      uint32_t a[4];
      ldmatrix_x4(a, k_s + swizzle<HD>(warp * 16 + (lane % 16), ks * 16 + (lane / 16) * 8));
#pragma unroll
      for (int np = 0; np < QT / 2; ++np) {
        uint32_t bq[4];
        ldmatrix_x4(bq, qb_s + swizzle<HD>(np * 16 + (lane % 8) + (lane / 16) * 8, ks * 16 + ((lane / 8) % 2) * 8));
        mma_16816<T>(acc_st[2 * np], a, bq[0], bq[1]);
        mma_16816<T>(acc_st[2 * np + 1], a, bq[2], bq[3]);
      }
    }
#pragma unroll
    for (int ks = 0; ks < HD / 16; ++ks) {
      if (!kFull && ks >= v_steps) break;
      uint32_t a[4];
      ldmatrix_x4(a, v_s + swizzle<HD>(warp * 16 + (lane % 16), ks * 16 + (lane / 16) * 8));
#pragma unroll
      for (int np = 0; np < QT / 2; ++np) {
        uint32_t bd[4];
        ldmatrix_x4(bd, dob_s + swizzle<HD>(np * 16 + (lane % 8) + (lane / 16) * 8, ks * 16 + ((lane / 8) % 2) * 8));
        mma_16816<T>(acc_dpt[2 * np], a, bd[0], bd[1]);
        mma_16816<T>(acc_dpt[2 * np + 1], a, bd[2], bd[3]);
      }
    }

    // P^T, dropout, dS^T; acc_st becomes Pd^T, acc_dpt dS^T (bwd_step.cuh).
    // Without kMask the view is empty at compile time, so masked_logit keeps only causal and bounds.
    const MaskView mask = kMask ? mask_view(p, b, h) : MaskView{};
    // The same decision as load_step's for this step.
    const bool mask_smem = kMask && Tr::kStageMask && staged_cur;
    staged_cur = staged_next;
    // Every column block computes the same dS: only the first sends it to dbias.
    bwd_step_p_ds<T, M, N, Tr::kThreads, kMask, kFeat>(
        p, BwdStepAt{b, h, i0, j0, warp, lane, step_gh, cb == 0}, mask, score_ctx(p, b, h), mask_smem,
        mask_s + buf * MaskT::kBytes,
        reinterpret_cast<float*>(mask_s + (Tr::kStageMask ? 2 * MaskT::kBytes : 0)) + threadIdx.x, lse_s + buf * M,
        dsum_s + buf * M, acc_st, acc_dpt);

    // A operands over the queries (k = 16 per step), and dS^T to shared memory for dQ.
    uint32_t pa[QT / 2][4], da[QT / 2][4];
#pragma unroll
    for (int kk = 0; kk < QT / 2; ++kk) {
      pa[kk][0] = pack2<T>(acc_st[2 * kk][0], acc_st[2 * kk][1]);
      pa[kk][1] = pack2<T>(acc_st[2 * kk][2], acc_st[2 * kk][3]);
      pa[kk][2] = pack2<T>(acc_st[2 * kk + 1][0], acc_st[2 * kk + 1][1]);
      pa[kk][3] = pack2<T>(acc_st[2 * kk + 1][2], acc_st[2 * kk + 1][3]);
      da[kk][0] = pack2<T>(acc_dpt[2 * kk][0], acc_dpt[2 * kk][1]);
      da[kk][1] = pack2<T>(acc_dpt[2 * kk][2], acc_dpt[2 * kk][3]);
      da[kk][2] = pack2<T>(acc_dpt[2 * kk + 1][0], acc_dpt[2 * kk + 1][1]);
      da[kk][3] = pack2<T>(acc_dpt[2 * kk + 1][2], acc_dpt[2 * kk + 1][3]);
    }
#pragma unroll
    for (int n = 0; n < QT; ++n) {
      *reinterpret_cast<uint32_t*>(dst_s + (warp * 16 + g) * DS + n * 8 + 2 * t) =
          n % 2 == 0 ? da[n / 2][0] : da[n / 2][2];
      *reinterpret_cast<uint32_t*>(dst_s + (warp * 16 + g + 8) * DS + n * 8 + 2 * t) =
          n % 2 == 0 ? da[n / 2][1] : da[n / 2][3];
    }

    // dV += Pd^T dO, dK += dS^T Q over this block's columns (B operands transposed out of the row-major tiles).
#pragma unroll
    for (int kk = 0; kk < QT / 2; ++kk) {
#pragma unroll
      for (int dp = 0; dp < DT / 2; ++dp) {
        if (!kFull && (dp >= col_steps || c0_steps + dp >= v_steps)) break;
        uint32_t bv[4];
        ldmatrix_x4_trans(
            bv, dob_s + swizzle<HD>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, c0 + dp * 16 + (lane / 16) * 8));
        mma_16816<T>(acc_dv[2 * dp], pa[kk], bv[0], bv[1]);
        mma_16816<T>(acc_dv[2 * dp + 1], pa[kk], bv[2], bv[3]);
      }
#pragma unroll
      for (int dp = 0; dp < DT / 2; ++dp) {
        if (!kFull && (dp >= col_steps || c0_steps + dp >= qk_steps)) break;
        uint32_t bq[4];
        ldmatrix_x4_trans(
            bq, qb_s + swizzle<HD>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, c0 + dp * 16 + (lane / 16) * 8));
        mma_16816<T>(acc_dk[2 * dp], da[kk], bq[0], bq[1]);
        mma_16816<T>(acc_dk[2 * dp + 1], da[kk], bq[2], bq[3]);
      }
    }

    if (!p.deterministic) {
      __syncthreads();  // dS^T complete
      // dQ = dS K: warp (w % 2) takes 16 queries, (w / 2) a slice of kDqCols of the block's columns; fp32
      // atomics (red.global.add.f32: the result is unused).
      constexpr int DC = Tr::kDqCols;
      const int qh = warp % 2, cq = c0 + (warp / 2) * DC, c_end = c0 + cols < p.head_dim ? c0 + cols : p.head_dim;
      float acc_dq[DC / 8][4];
#pragma unroll
      for (int n = 0; n < DC / 8; ++n) acc_dq[n][0] = acc_dq[n][1] = acc_dq[n][2] = acc_dq[n][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < N / 16; ++kk) {
        uint32_t a[4];
        ldmatrix_x4_trans(a, dst_s + (kk * 16 + (lane % 8) + (lane / 16) * 8) * DS + qh * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
        for (int dp = 0; dp < DC / 16; ++dp) {
          if (!kFull && cq + dp * 16 >= c_end) break;
          uint32_t bk[4];
          ldmatrix_x4_trans(
              bk, k_s + swizzle<HD>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, cq + dp * 16 + (lane / 16) * 8));
          mma_16816<T>(acc_dq[2 * dp], a, bk[0], bk[1]);
          mma_16816<T>(acc_dq[2 * dp + 1], a, bk[2], bk[3]);
        }
      }
      float* dq_rows = p.dq_accum + lse_row(p, b, h, 0) * p.head_dim;
      // Columns 2t, 2t + 1 of each n8 tile as one vector reduction (head_dim is a multiple of 8 here,
      // so both are in range when the first is, and the address is 8-byte aligned).
#pragma unroll
      for (int n = 0; n < DC / 8; ++n)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int i = i0 + qh * 16 + g + 8 * r, d = cq + n * 8 + 2 * t;
          if (i < p.seq_q && d < c_end) {
            red_add_f32x2(dq_rows + static_cast<int64_t>(i) * p.head_dim + d, acc_dq[n][2 * r] * p.scale,
                          acc_dq[n][2 * r + 1] * p.scale);
          }
        }
    }
  }
  cp_async_wait_all();

  store_dk_dv<T, DT>(p, acc_dk, acc_dv, b, hk, j0, warp, lane, split, c0, c0 + cols);
#else
  __trap();  // built without sm80 code: the dispatcher never launches this kernel here
#endif
}

}  // namespace memeff
