// Backward for fp32 on tensor cores (sm80+), 3xTF32 (common/tf32x3.cuh): the five products of the
// backward at fp32 accuracy, as torch's efficient backend does for fp32 on sm80+. The structure of
// bwd_mma_kernel (key-split: one block per (64 keys, b, kv head, query split); each step takes 16 queries
// of one query head of the GQA group; P, dS, masks, dropout and dbias by the same code, bwd_step.cuh)
// with fp32 operands split into TF32 parts in shared memory:
// - K and V are split once per block into {hi, lo} pairs (one 8-byte load per operand element);
// - each step's Q and dO land by cp.async in their double-buffered high-part tiles and are split in
//   place by the block, the low parts into one shared pair of tiles;
// - S^T = K Q^T and dP^T = V dO^T read both operands' parts; dV += P^T dO and dK += dS^T Q take P^T and
//   dS^T from registers as A operands (split there; the accumulator's columns 2t, 2t + 1 become the k
//   order t, t + 4, and the B fragments read query rows 2t, 2t + 1 to match); dS is stored in parts to
//   shared memory for dQ = dS K, added to the fp32 workspace with atomics.
// Every k8 step's three products go into a fresh partial added by an IEEE add (mma_1688_3xtf32), as in the
// forward. D must come from bwd_dsum_tf32_kernel (BwdParams::dsum_tf32): the same arithmetic as dP^T here.
// Deterministic calls skip dQ here; run_bwd_tf32 adds it by the FMA pass in key order (bwd_q_simt).
#pragma once
#include <cmath>

#include "bwd/bwd_lean.cuh"
#include "bwd/bwd_step.cuh"
#include "bwd/softcap_ahead.cuh"
#include "bwd/tf32_bwd_traits.h"
#include "common/mask_tile.cuh"
#include "common/params.h"
#include "common/tf32_tile.cuh"
#include "common/tf32x3.cuh"

namespace memeff {

__device__ __forceinline__ Tf32Pair tf32_parts(const float* hi, const float* lo, int i) {
  return Tf32Pair{__float_as_uint(hi[i]), __float_as_uint(lo[i])};
}
// Pair i of a {hi, lo} pair tile (one 8-byte load).
__device__ __forceinline__ Tf32Pair tf32_pair(const float* pairs, int i) {
  const float2 x = reinterpret_cast<const float2*>(pairs)[i];
  return Tf32Pair{__float_as_uint(x.x), __float_as_uint(x.y)};
}

// An accumulator fragment (m16n8: c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1)) as the
// A operand of an m16n8k8 step with the k order t -> 2t, t + 4 -> 2t + 1: a0 = c0, a1 = c2, a2 = c1, a3 = c3.
__device__ __forceinline__ void acc_as_a(Tf32Pair (&a)[4], const float (&c)[4]) {
  a[0] = split_tf32_lean(c[0]);
  a[1] = split_tf32_lean(c[2]);
  a[2] = split_tf32_lean(c[1]);
  a[3] = split_tf32_lean(c[3]);
}

// acc[dt] += A (this warp's 16 keys x QT * 8 queries, in acc_as_a form) times B = rows of a [M][PQ] tile
// (hi / lo), head-dim columns of n8 tile tile0 + dt: b0 = B[8n + 2t][8 (tile0 + dt) + g], b1 = B[8n + 2t + 1][...].
// tiles: the n8 tiles the head dim needs (all of them when kFull).
template <int QT, int DT, int PQ, bool kFull>
__device__ __forceinline__ void acc_a_times_rows(float (&acc)[DT][4], const Tf32Pair (&a)[QT][4], const float* hi,
                                                 const float* lo, int tile0, int tiles, int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int dt = 0; dt < DT; ++dt) {
    if (!kFull && tile0 + dt >= tiles) break;
#pragma unroll
    for (int n = 0; n < QT; ++n) {
      const int r = (8 * n + 2 * t) * PQ + 8 * (tile0 + dt) + g;
      const Tf32Pair b[2] = {tf32_parts(hi, lo, r), tf32_parts(hi, lo, r + PQ)};
      mma_1688_3xtf32(acc[dt], a[n], b);
    }
  }
}

// acc[n] += (16 rows of a K / V pair tile from row r0) times (rows of a [M][PQ] tile)^T, k over head-dim
// columns [8 ks0, 8 (ks0 + KS)) and below 8 steps: S^T = K Q^T or dP^T = V dO^T (or a part of it).
template <int QT, int KS, int P2, int PQ, bool kFull>
__device__ __forceinline__ void rows_times_rows_t(float (&acc)[QT][4], const float* a_pairs, int r0, const float* b_hi,
                                                  const float* b_lo, int ks0, int steps, int lane) {
  const int g = lane / 4, t = lane % 4;
  // tf32_pair_index: rows r0 + g and + 8 share bit 2 of g (r0 is a multiple of 16).
  const int ra = (r0 + g) * P2, sw = g & 4;
#pragma unroll
  for (int kp = 0; kp < KS; ++kp) {
    const int ks = ks0 + kp;
    if (!kFull && ks >= steps) break;
    const int c0 = ks * 8 + (t ^ sw), c1 = ks * 8 + ((t + 4) ^ sw);
    const Tf32Pair a[4] = {tf32_pair(a_pairs, ra + c0), tf32_pair(a_pairs, ra + 8 * P2 + c0),
                           tf32_pair(a_pairs, ra + c1), tf32_pair(a_pairs, ra + 8 * P2 + c1)};
#pragma unroll
    for (int n = 0; n < QT; ++n) {
      const int rb = (8 * n + g) * PQ + ks * 8 + t;
      const Tf32Pair b[2] = {tf32_parts(b_hi, b_lo, rb), tf32_parts(b_hi, b_lo, rb + 4)};
      mma_1688_3xtf32(acc[n], a, b);
    }
  }
}

// kFull: D == Dv == the bucket (compile-time head-dim loops). kMask: the call has a mask or bias. kFeat: the
// feature kernel (FwdParams::features, built with kMask; as bwd_mma_kernel's); kMods: its softcap and ALiBi
// code (bwd_step_p_ds). kSoftcap: the feature kernel for calls with a softcap and neither ALiBi nor a mask
// (launch_bwd_tf32), which takes its softcap steps' tanh and P between S^T's and dP^T's products
// (softcap_ahead.cuh); the d64 form only, whose S^T is whole there (d128's halves are summed after both).
template <typename Tr, bool kFull, bool kMask, bool kFeat, bool kMods = kFeat, bool kSoftcap = false>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm) bwd_tf32_kernel(const BwdParams params) {
  static_assert(!kSoftcap || (kFull && !kMask && kFeat && kMods && Tr::kDSplit == 1), "the d64 unmasked softcap form");
#ifdef ATTN_SM80
  constexpr int N = Tr::kBlockN, M = Tr::kBlockM, HD = Tr::kHeadDim, QT = Tr::kQTiles, DT = Tr::kDTiles,
                DQT = Tr::kDqTiles;
  constexpr int KSP = Tr::kKsPart, DSPLIT = Tr::kDSplit;
  constexpr int P2 = Tr::kPitchKV2, PQ = Tr::kPitchQ, PDS = Tr::kPitchDs;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  float* const k2_s = reinterpret_cast<float*>(smem_raw);  // K as {hi, lo} pairs [N][P2] (tf32_pair_index)
  float* const v2_s = k2_s + Tr::kSmemKV;                  // V as pairs; first, raw K and V land here
  float* const qh_s = v2_s + Tr::kSmemKV;                  // [2][M][PQ]: Q lands here, then holds its high parts
  float* const doh_s = qh_s + 2 * Tr::kSmemQ;              // [2][M][PQ]
  float* const ql_s = doh_s + 2 * Tr::kSmemQ;              // [M][PQ]: this step's low parts
  float* const dol_s = ql_s + Tr::kSmemQ;
  float* const dsh_s = dol_s + Tr::kSmemQ;  // dS [M][PDS], queries x keys
  float* const dsl_s = dsh_s + Tr::kSmemDs;
  float* const xch_s = dsl_s + Tr::kSmemDs;   // kDSplit: [warp][2 QT 4][32] S^T / dP^T partials
  float* const lse_s = xch_s + Tr::kSmemXch;  // [2][M], log2 units
  float* const dsum_s = lse_s + 2 * M;        // [2][M]
  // [kMaskBufs] mask tiles (only with a mask), then the presum slots.
  unsigned char* const mask_s = reinterpret_cast<unsigned char*>(dsum_s + 2 * M);
  constexpr int MB = Tr::kMaskBufs;
  using MaskT = MaskTile<M, N>;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  // kw: the warp's 16 keys; dh: its part of the head dim (kDSplit; 0 without).
  const int kw = warp % Tr::kKeyWarps, dh = warp / Tr::kKeyWarps;
  const int j0 = blockIdx.x * N;
  const int bhk = blockIdx.y + params.bh_base, b = bhk / params.heads_kv, hk = bhk % params.heads_kv;
  const int split = blockIdx.z;
  // The feature kernel binds its sequence (varlen, sequsedK); the others read the call's parameters as they are.
  BwdParams bound = params;
  if constexpr (kFeat) bind_sequence(bound, b, 4);
  const BwdParams& p = kFeat ? bound : params;
  if (kFeat && j0 >= p.seq_k_rows) return;  // a varlen sequence shorter than the longest
  const float* k = static_cast<const float*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
  const float* v = static_cast<const float*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
  load_tile_f32_async<N, HD, HD, Tr::kThreads>(v2_s, k, p.k_stride[2], j0, p.seq_k, p.head_dim);
  load_tile_f32_async<N, HD, HD, Tr::kThreads>(v2_s + N * HD, v, p.v_stride[2], j0, p.seq_k, p.head_dim_v);

  const BwdSteps<M, N, kMask, kFeat> walk_of(p, bhk, hk, j0, split);
  const int steps = walk_of.steps;
  auto load_step = [&](int h, int i0, int buf) {
    const float* q = static_cast<const float*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
    const float* dout = static_cast<const float*>(p.dout) + b * p.do_stride[0] + h * p.do_stride[1];
    load_tile_f32_async<M, HD, PQ, Tr::kThreads>(qh_s + buf * Tr::kSmemQ, q, p.q_stride[2], i0, p.seq_q, p.head_dim);
    load_tile_f32_async<M, HD, PQ, Tr::kThreads>(doh_s + buf * Tr::kSmemQ, dout, p.do_stride[2], i0, p.seq_q,
                                                 p.head_dim_v);
    // One mask buffer: the next step's tile is issued later, once every warp is done with this one's.
    const bool staged =
        MB == 2 && stage_step_mask<M, N, Tr::kThreads, kMask>(p, b, h, i0, j0, mask_s + buf * MaskT::kBytes);
    load_step_rows<M>(p, b, h, i0, lse_s + buf * M, dsum_s + buf * M);
    return staged;
  };
  bool staged_cur = steps > 0 && load_step(walk_of.head(0), walk_of.row0(0), 0);
  if (MB == 1 && steps > 0)
    staged_cur = stage_step_mask<M, N, Tr::kThreads, kMask>(p, b, walk_of.head(0), walk_of.row0(0), j0, mask_s);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();  // K and V landed
  split_tile_to_pairs<N, HD, P2, Tr::kThreads>(v2_s, k2_s);
  split_tile_to_pairs<N, HD, P2, Tr::kThreads>(v2_s + N * HD, v2_s);  // over its own source: reads, barrier, writes

  const int qk_steps = kFull ? HD / 8 : (p.head_dim + 7) / 8, v_steps = kFull ? HD / 8 : (p.head_dim_v + 7) / 8;
  float acc_dk[DT][4], acc_dv[DT][4];
#pragma unroll
  for (int n = 0; n < DT; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[n][e] = acc_dv[n][e] = 0.f;

  StepWalk walk;
  for (int s = 0; s < steps; ++s) {
    const int buf = s & 1;
    cp_async_wait_all();
    __syncthreads();  // this step's tiles landed; every warp is done with the previous step (and K, V split)
    float* const qb_s = qh_s + buf * Tr::kSmemQ;
    float* const dob_s = doh_s + buf * Tr::kSmemQ;
    split_tile_to<M, HD, PQ, Tr::kThreads>(qb_s, ql_s);
    split_tile_to<M, HD, PQ, Tr::kThreads>(dob_s, dol_s);
    const StepWalk next = walk.next(walk_of.presum, p.group, walk_of.per_head);
    const int h = hk * p.group + walk.gh, i0 = walk_of.row0_of(walk.r);
    const int step_gh = walk.gh;
    const int h_next = hk * p.group + next.gh, i0_next = walk_of.row0_of(next.r);
    const bool staged_next = s + 1 < steps && load_step(h_next, i0_next, buf ^ 1);
    cp_async_commit();
    walk = next;
    __syncthreads();  // the parts of Q and dO are in place

    // S^T = K Q^T and dP^T = V dO^T: this warp's 16 keys x M queries.
    float acc_st[QT][4], acc_dpt[QT][4];
#pragma unroll
    for (int n = 0; n < QT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_st[n][e] = acc_dpt[n][e] = 0.f;
    rows_times_rows_t<QT, KSP, P2, PQ, kFull>(acc_st, k2_s, kw * 16, qb_s, ql_s, dh * KSP, qk_steps, lane);
    SoftcapAhead<QT> cap;  // kSoftcap: a softcap step's tanh and P, scheduled under dP^T's products
    if constexpr (kSoftcap)
      cap.take(acc_st, p, lse_s + buf * M, t, !p.dropout && tile_mods_only<kFeat>(p, i0, M, j0, N));
    rows_times_rows_t<QT, KSP, P2, PQ, kFull>(acc_dpt, v2_s, kw * 16, dob_s, dol_s, dh * KSP, v_steps, lane);
    if constexpr (DSPLIT == 2) {
      // The two head-dim halves' partials, summed by both warps of the key group (a + b = b + a exactly, so
      // both hold the same S^T and dP^T; bwd_dsum_tf32 sums D's halves the same way, BwdParams::dsum_tf32_half).
      float* mine = xch_s + warp * (2 * QT * 4 * 32) + lane;
      const float* other = xch_s + (warp ^ Tr::kKeyWarps) * (2 * QT * 4 * 32) + lane;
#pragma unroll
      for (int n = 0; n < QT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          mine[(n * 4 + e) * 32] = acc_st[n][e];
          mine[(QT * 4 + n * 4 + e) * 32] = acc_dpt[n][e];
        }
      named_barrier_sync(1 + kw, 64);  // this key group's two warps
#pragma unroll
      for (int n = 0; n < QT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          acc_st[n][e] += other[(n * 4 + e) * 32];
          acc_dpt[n][e] += other[(QT * 4 + n * 4 + e) * 32];
        }
    }

    const MaskView mask = kMask ? mask_view(p, b, h) : MaskView{};
    const bool mask_smem = kMask && staged_cur;  // the staging's decision for this step (mask_tile_ok)
    if (MB == 2) staged_cur = staged_next;
    if (kSoftcap && cap.ready) {
      cap.finish(acc_st, acc_dpt, dsum_s + buf * M, t);
    } else {
      bwd_step_p_ds<float, M, N, Tr::kThreads, kMask, kFeat, kMods>(
          p, BwdStepAt{b, h, i0, j0, kw, lane, step_gh, dh == 0}, mask, score_ctx(p, b, h), mask_smem,
          mask_s + (MB == 2 ? buf : 0) * MaskT::kBytes,
          reinterpret_cast<float*>(mask_s + MB * MaskT::kBytes) + threadIdx.x, lse_s + buf * M, dsum_s + buf * M,
          acc_st, acc_dpt);
    }

    // dV += Pd^T dO.
    {
      Tf32Pair pa[QT][4];
#pragma unroll
      for (int n = 0; n < QT; ++n) acc_as_a(pa[n], acc_st[n]);
      acc_a_times_rows<QT, DT, PQ, kFull>(acc_dv, pa, dob_s, dol_s, dh * DT, v_steps, lane);
    }
    // dS^T's parts: to shared memory as dS [queries][keys] for dQ, and dK += dS^T Q.
    {
      Tf32Pair da[QT][4];
#pragma unroll
      for (int n = 0; n < QT; ++n) {
        acc_as_a(da[n], acc_dpt[n]);
        // a0 = (key g, query 2t), a1 = (g + 8, 2t), a2 = (g, 2t + 1), a3 = (g + 8, 2t + 1); one warp of a
        // key group stores them (with kDSplit both hold the same values).
        if (dh == 0) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int at = (8 * n + 2 * t + (e >> 1)) * PDS + kw * 16 + g + 8 * (e & 1);
            dsh_s[at] = __uint_as_float(da[n][e].hi);
            dsl_s[at] = __uint_as_float(da[n][e].lo);
          }
        }
      }
      acc_a_times_rows<QT, DT, PQ, kFull>(acc_dk, da, qb_s, ql_s, dh * DT, qk_steps, lane);
    }

    __syncthreads();  // dS complete; every warp is done with this step's mask tile
    if (MB == 1 && kMask && s + 1 < steps) {
      staged_cur = stage_step_mask<M, N, Tr::kThreads, kMask>(p, b, h_next, i0_next, j0, mask_s);
      cp_async_commit();
    }
    if (!p.deterministic) {
      // dQ = dS K: this warp's DQT n8 tiles of head-dim columns for all M queries, k over the N keys.
      const int c0 = warp * DQT * 8;
      float acc_dq[DQT][4];
#pragma unroll
      for (int n = 0; n < DQT; ++n) acc_dq[n][0] = acc_dq[n][1] = acc_dq[n][2] = acc_dq[n][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < N / 8; ++kk) {
        const int ai = g * PDS + kk * 8 + t;
        const Tf32Pair a[4] = {tf32_parts(dsh_s, dsl_s, ai), tf32_parts(dsh_s, dsl_s, ai + 8 * PDS),
                               tf32_parts(dsh_s, dsl_s, ai + 4), tf32_parts(dsh_s, dsl_s, ai + 8 * PDS + 4)};
#pragma unroll
        for (int n = 0; n < DQT; ++n) {
          if (!kFull && c0 + n * 8 >= p.head_dim) break;
          // keys kk * 8 + t (bit 2 clear: as is) and + 4 (bit 2 set: column ^ 4), column c0 + 8n + g
          const int col = c0 + n * 8 + g, rb = (kk * 8 + t) * P2;
          const Tf32Pair bk[2] = {tf32_pair(k2_s, rb + col), tf32_pair(k2_s, rb + 4 * P2 + (col ^ 4))};
          mma_1688_3xtf32(acc_dq[n], a, bk);
        }
      }
      float* dq_rows = p.dq_accum + lse_row(p, b, h, 0) * p.head_dim;
#pragma unroll
      for (int n = 0; n < DQT; ++n)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int i = i0 + g + 8 * r, d = c0 + n * 8 + 2 * t;
          if (i < p.seq_q && d < p.head_dim) {  // head_dim is a multiple of 4: d + 1 is in range too
            red_add_f32x2(dq_rows + static_cast<int64_t>(i) * p.head_dim + d, acc_dq[n][2 * r] * p.scale,
                          acc_dq[n][2 * r + 1] * p.scale);
          }
        }
    }
  }
  cp_async_wait_all();
  store_dk_dv<float, DT>(p, acc_dk, acc_dv, b, hk, j0, kw, lane, split, dh * DT * 8);
#else
  __trap();  // built without sm80 code: the dispatcher never launches this kernel here
#endif
}

}  // namespace memeff
