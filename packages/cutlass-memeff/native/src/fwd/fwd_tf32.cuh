// Forward kernel for fp32 on tensor cores (sm80+), 3xTF32 (common/tf32x3.cuh): fp32 accuracy at
// tensor-core speed, as torch's efficient backend does on sm80+. Same structure as fwd_mma_kernel
// (cp.async tiles, K(j+1) under P.V, V(j) under Q.K^T, online softmax in registers, masks only on
// tiles that need them, the mask tile staged with K) but fp32 tiles in padded rows (no ldmatrix for
// 32-bit elements: fragments are read with plain conflict-free LDS), m16n8k8 tf32 mma, and P moved
// from the accumulator layout to the A layout with quad shuffles.
#pragma once
#include <cmath>

#include "common/mask_tile.cuh"
#include "common/toolkit.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"
#include "common/tf32_tile.cuh"
#include "common/tf32x3.cuh"
#include "fwd/fwd_block_order.cuh"
#include "fwd/tf32_rows.cuh"
#include "fwd/tf32_traits.h"

namespace memeff {

// The wide form's packed layout (Tr::kPitchKp, tf32_traits.h): the K tile in the landing tile `in` (pitch kPitchIn floats) into
// its parts, one 16-byte word per (row, k8 step, column t): {hi(t), hi(t + 4), lo(t), lo(t + 4)}. One item
// per thread and word; lanes: t in bits 0-1, 4 k8 steps in bits 2-3, 2 rows in bit 4, so a warp's reads fall
// on 32 banks (rows 1 apart are 4 banks apart at pitch 4 mod 32) and each 8-lane phase of the stores on 8
// 16-byte bank groups. The same split_tf32_lean of the same floats as split_tile_in_place.
template <int kRows, int kHeadDim, int kPitchIn, int kPitchOut, int kThreads>
__device__ __forceinline__ void split_k_packed(const float* in, uint32_t* out) {
  constexpr int kKs = kHeadDim / 8, kItems = kRows * kKs * 4;
  static_assert(kItems % kThreads == 0 && kKs % 4 == 0 && kRows % 2 == 0 && kPitchIn % 32 == 4,
                "whole passes, bank spread");
#pragma unroll
  for (int it = 0; it < kItems / kThreads; ++it) {
    const int idx = threadIdx.x + it * kThreads, t = idx & 3, q = idx >> 5;
    const int ks = (q % (kKs / 4)) * 4 + ((idx >> 2) & 3), r = (q / (kKs / 4)) * 2 + ((idx >> 4) & 1);
    const float* s = in + r * kPitchIn + ks * 8 + t;
    const Tf32Pair a = split_tf32_lean(s[0]), b = split_tf32_lean(s[4]);
    st_shared_v4(out + r * kPitchOut + ks * 16 + t * 4, a.hi, b.hi, a.lo, b.lo);
  }
}

// The packed layout: the V tile in the landing tile (pitch kPitchIn floats) into its three parts (tf32_traits.h):
// hi/lo words {hi0, hi1, lo0, lo1} of keys (8 kk + t, + 4) per key pair kp = 4 kk + t and column d at chunk
// d ^ 2t of row kp, and rest words {rest0(d), rest1(d), rest0(d + 8), rest1(d + 8)} (d = 16 n2 + g) at chunk
// 8 n2 + (g ^ 2t). One item per thread and (kp, n2, g): 4 floats, 2 hi/lo words and 1 rest word. Lanes:
// g in bits 0-2, n2's low bit in 3, t's high bit in 4: a warp's 32 reads fall on 32 banks (rows 2 apart
// are 8 banks apart at pitch 4 mod 32), each 8-lane phase of the stores on 8 bank groups. The same
// split_tf32_exact_lean of the same floats as split_tile_in_place.
template <int kRows, int kHeadDim, int kPitchIn, int kThreads>
__device__ __forceinline__ void split_v_packed(const float* in, uint32_t* out) {
  constexpr int kN2 = kHeadDim / 16, kItems = (kRows / 2) * kN2 * 8;
  static_assert(kHeadDim % 32 == 0 && kRows % 8 == 0 && kItems % kThreads == 0 && kPitchIn % 32 == 4,
                "whole passes, bank spread");
  uint32_t* rest_out = out + (kRows / 2) * 4 * kHeadDim;
#pragma unroll
  for (int it = 0; it < kItems / kThreads; ++it) {
    const int idx = threadIdx.x + it * kThreads, g = idx & 7, q = idx >> 5, q2 = q / (kN2 / 2);
    const int n2 = 2 * (q % (kN2 / 2)) + ((idx >> 3) & 1), t = (q2 & 1) | (((idx >> 4) & 1) << 1), kk = q2 >> 1;
    const int kp = kk * 4 + t, sw = g ^ (2 * t);
    const float* s = in + (kk * 8 + t) * kPitchIn + n2 * 16 + g;
    const Tf32Triple a = split_tf32_exact_lean(s[0]), b = split_tf32_exact_lean(s[4 * kPitchIn]);
    const Tf32Triple c = split_tf32_exact_lean(s[8]), e = split_tf32_exact_lean(s[4 * kPitchIn + 8]);
    uint32_t* hl = out + kp * 4 * kHeadDim + (n2 * 16 + sw) * 4;
    st_shared_v4(hl, a.hi, b.hi, a.lo, b.lo);
    st_shared_v4(hl + 32, c.hi, e.hi, c.lo, e.lo);  // column d + 8: chunk + 8
    st_shared_v4(rest_out + kp * 2 * kHeadDim + (n2 * 8 + sw) * 4, a.rest, b.rest, c.rest, e.rest);
  }
}

// Three forms, the same roundings of the same values (same bits):
// kLean: Q is split into TF32 parts once per block instead of once per key step, and the splits that feed
// fp32 arithmetic take tf32_rna_bits (3 issues instead of ptxas's 4). It keeps Q's low parts in shared memory
// (+33 KB at d128): the 4-warp form of d64 calls without features.
// Wide (Tr::kSplitKV, 8 warps, d128; needs kLean and kPacked): each K and V tile is split once per step by the
// whole block instead of once per warp, the parts stored so that one lane's operand words are adjacent
// (tf32_traits.h): one LDS.128 per K fragment (4 LDS unpacked), 1.5 per V fragment (6), 2 per Q fragment (8).
// K and V share one landing tile, so the step splits K before it issues V, and V before it issues the next K.
// kWideQPre: calls without a mask, where Q's parts fit beside K's and V's (226 KB): Q split once per block;
// with a mask Q is split per step in registers.
// kLean = false: Q split per step by every warp, with ptxas's roundings: the feature kernel (kFeat,
// FwdParams::features; as fwd_mma's), built in this plain 4-warp form only, for builds or devices without the
// wgmma forward (which takes every feature call where it runs).
template <typename Tr, bool kLean, bool kWideQPre = false, bool kPacked = false, bool kFeat = false>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm) fwd_tf32_kernel(const FwdParams params) {
#ifdef ATTN_SM80
  constexpr int M = Tr::kBlockM, N = Tr::kBlockN, HD = Tr::kHeadDim, NT = Tr::kNTiles, OT = Tr::kOTiles;
  constexpr int PQ = Tr::kPitchQK, PV = Tr::kPitchV;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  static_assert(!kPacked || Tr::kSplitKV, "kPacked is a form of the wide kernel");
  constexpr bool kQPre = kLean && (!Tr::kSplitKV || kWideQPre);
  // kPacked: [Q parts (kQPre) or Q][landing tile][K parts][V parts][mask tile]; with kQPre, Q lands over the
  // landing tile and the parts (tf32_traits.h) and is split before K(0) is issued.
  static_assert(!kPacked || !kQPre || Tr::kSmemQ <= Tr::kSmemLand + Tr::kSmemKp + Tr::kSmemVp,
                "Q lands where K and V go");
  float* const base_s = reinterpret_cast<float*>(smem_raw);
  float* const land_s = base_s + (kQPre ? Tr::kSmemQp : Tr::kSmemQ);  // kPacked only
  uint32_t* const qp_s = reinterpret_cast<uint32_t*>(base_s);         // kPacked && kQPre
  uint32_t* const kp_s = reinterpret_cast<uint32_t*>(land_s + Tr::kSmemLand);
  uint32_t* const vp_s = kp_s + Tr::kSmemKp;
  float* q_s = kPacked && kQPre ? land_s : base_s;
  float* k_s = kPacked ? land_s : q_s + Tr::kSmemQ;
  float* v_s = kPacked ? land_s : k_s + Tr::kSmemK;
  constexpr int PVL = kPacked ? PQ : PV;      // V's landing pitch
  constexpr int kKsUnroll = kPacked ? 2 : 4;  // Q.K^T's k8 steps per unrolled body
  // P.V leaves its n8 loop only at multiples of kPvGroup tiles (columns past Dv are zero in V's tile,
  // so the extra tiles add zeros to columns that are never stored). A branch between tiles made ptxas run
  // each tile's 4 dependent mma back to back with a NOP between each (ncu: 21% of stall samples on
  // NOPs, 50% `wait`); kPvGroup tiles between branches give their chains room to interleave. No branch at
  // all let ptxas hoist all 16 tiles' loads at d128 and spill.
  constexpr int kPvGroup = 4;
  static_assert(OT % kPvGroup == 0 && (HD / 8) % 2 == 0, "whole groups of n8 tiles and pairs of k8 steps");
  // kQPre (kLean, 4 warps): the low TF32 parts of Q ([M][PQ] words, q_s then holds the high parts), then
  // the mask tile.
  static_assert(!Tr::kSplitKV || (kLean && kPacked), "the wide kernel is a lean, packed one");
  static_assert(!kWideQPre || Tr::kSplitKV, "kWideQPre is a form of the wide kernel");
  uint32_t* qlo_s = reinterpret_cast<uint32_t*>(v_s + Tr::kSmemV);
  unsigned char* mask_s =
      kPacked ? reinterpret_cast<unsigned char*>(vp_s + Tr::kSmemVp)
              : reinterpret_cast<unsigned char*>(v_s + Tr::kSmemV + (kQPre ? Tr::kSmemQ : 0));  // only with a mask

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  // Causal launches run their longest query blocks first over the whole launch, as fwd_mma does (the
  // order within each (b, h) pair alone leaves long blocks in the tail).
  const FwdBlock blk = fwd_block_of(params);
  const int m_block = blk.m_block, bh = blk.bh_local + params.bh_base, b = bh / params.heads_q, h = bh % params.heads_q;
  const int hk = h / params.group;
  const int i0 = m_block * M;
  // The feature kernel binds its sequence (varlen, sequsedK); the others read the call's parameters as they are.
  FwdParams bound = params;
  if constexpr (kFeat) bind_sequence(bound, b, 4);
  const FwdParams& p = kFeat ? bound : params;
  if (kFeat && i0 >= p.seq_q) return;  // a varlen sequence shorter than the longest
  const float* q = static_cast<const float*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
  const float* k = static_cast<const float*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
  const float* v = static_cast<const float*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
  const MaskView mask = mask_view(p, b, h);
  const bool mask_smem = mask_tile_ok(mask);
  const int qk_steps = (p.head_dim + 15) / 16 * 2;  // k8 steps Q.K^T runs, in pairs; Q is split this far
  const int o_tiles = (p.head_dim_v + 7) / 8;       // n8 tiles of O needed
  const int r0 = warp * 16;
  const float scale_log2 = p.scale * kLog2e;
  // Steps that are not plain but have no mask need only the causal / bounds rule (score_mods.cuh).
  const bool bounds_only = p.mask_kind == MaskKind::kNone;
  const int coff = right_coff(p);
  const ScoreCtx sc = score_ctx(p, b, h);

  float acc_o[OT][4], m_run[2], l_run[2];
  init_rows(acc_o, m_run, l_run);

  const int n_blocks = key_blocks_for_queries(p, i0, M, N);
  const int nb0 = kFeat ? key_step_begin(p, i0, N) : 0;  // a window's left side skips the keys before it

  load_tile_f32_async<M, HD, PQ, Tr::kThreads>(q_s, q, p.q_stride[2], i0, p.seq_q, p.head_dim);
  if (!(kPacked && kQPre) && nb0 < n_blocks) {
    load_tile_f32_async<N, HD, PQ, Tr::kThreads>(k_s, k, p.k_stride[2], nb0 * N, p.seq_k, p.head_dim);
    if (mask_smem) load_mask_tile_async<M, N, Tr::kThreads>(mask_s, mask, i0, nb0 * N, p.seq_q, p.seq_k);
  }
  cp_async_commit();
  if constexpr (kPacked && kQPre) {
    if (nb0 < n_blocks) {
      // Q landed: each lane splits its own A fragments (rows r0 + g, + 8; columns 8 ks + t, + 4) into its
      // two 16-byte words of qp_s; then K(0) lands over Q's floats once every thread has read them.
      cp_async_wait_all();
      __syncthreads();
#pragma unroll 1
      for (int ks = 0; ks < qk_steps; ++ks) {
        uint32_t hi[4], lo[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const Tf32Pair pr = split_tf32_lean(q_s[(r0 + g + 8 * (e & 1)) * PQ + ks * 8 + t + 4 * (e >> 1)]);
          hi[e] = pr.hi;
          lo[e] = pr.lo;
        }
        uint32_t* dst = qp_s + (warp * (HD / 8) + ks) * 256 + lane * 4;
        st_shared_v4(dst, hi[0], hi[1], hi[2], hi[3]);
        st_shared_v4(dst + 128, lo[0], lo[1], lo[2], lo[3]);
      }
      __syncthreads();
      load_tile_f32_async<N, HD, PQ, Tr::kThreads>(k_s, k, p.k_stride[2], nb0 * N, p.seq_k, p.head_dim);
      if (mask_smem) load_mask_tile_async<M, N, Tr::kThreads>(mask_s, mask, i0, nb0 * N, p.seq_q, p.seq_k);
      cp_async_commit();
    }
  } else if (kQPre && nb0 < n_blocks) {
    // Q (and K(0)) landed once every thread's copies are waited for and the block has met. Each Q
    // element is read by exactly one thread (rows r0 + g, + 8; columns ks * 8 + t, + 4): that thread
    // splits it in place, the high part over the float and the low part into qlo_s, before the key
    // loop (where acc_o is live: splitting there spilled the d64 kernel). No other thread reads these
    // words, so no barrier after it.
    cp_async_wait_all();
    __syncthreads();
#pragma unroll 1
    for (int ks = 0; ks < qk_steps; ++ks)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int w = (r0 + g + 8 * (e & 1)) * PQ + ks * 8 + t + 4 * (e >> 1);
        const Tf32Pair pr = split_tf32_lean(q_s[w]);
        reinterpret_cast<uint32_t*>(q_s)[w] = pr.hi;
        qlo_s[w] = pr.lo;
      }
  }

#pragma unroll 1
  for (int nb = nb0; nb < n_blocks; ++nb) {
    const int j0 = nb * N;
    cp_async_wait_all();
    __syncthreads();          // K(nb) and its mask tile landed; every warp is done with V(nb - 1)
    if constexpr (kPacked) {  // K's parts out of the landing tile, then V(nb) into it
      split_k_packed<N, HD, PQ, Tr::kPitchKp, Tr::kThreads>(k_s, kp_s);
      __syncthreads();
    }
    load_tile_f32_async<N, HD, PVL, Tr::kThreads>(v_s, v, p.v_stride[2], j0, p.seq_k, p.head_dim_v);
    cp_async_commit();

    // S = Q K^T, 3xTF32.
    float acc_s[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) acc_s[n][0] = acc_s[n][1] = acc_s[n][2] = acc_s[n][3] = 0.f;
#pragma unroll kKsUnroll
    for (int ks = 0; ks < HD / 8; ++ks) {
      if (ks % 2 == 0 && ks >= qk_steps) break;  // pairs of k8 steps (Q and K are zero past D)
      const float* qa = q_s + (r0 + g) * PQ + ks * 8 + t;
      Tf32Pair a[4];
      if constexpr (kPacked && kQPre) {
        const uint32_t* qf = qp_s + (warp * (HD / 8) + ks) * 256 + lane * 4;
        const uint4 h = *reinterpret_cast<const uint4*>(qf), l = *reinterpret_cast<const uint4*>(qf + 128);
        a[0] = Tf32Pair{h.x, l.x};
        a[1] = Tf32Pair{h.y, l.y};
        a[2] = Tf32Pair{h.z, l.z};
        a[3] = Tf32Pair{h.w, l.w};
      } else if constexpr (kQPre) {
        // qlo_s sits a compile-time number of words after q_s: one base register, immediate offsets.
        constexpr int kLo = Tr::kSmemQ + Tr::kSmemK + Tr::kSmemV;
        const uint32_t* qh = reinterpret_cast<const uint32_t*>(qa);
        const uint32_t* ql = qh + kLo;
        a[0] = Tf32Pair{qh[0], ql[0]};
        a[1] = Tf32Pair{qh[8 * PQ], ql[8 * PQ]};
        a[2] = Tf32Pair{qh[4], ql[4]};
        a[3] = Tf32Pair{qh[8 * PQ + 4], ql[8 * PQ + 4]};
      } else if constexpr (kLean) {
        a[0] = split_tf32_lean(qa[0]);
        a[1] = split_tf32_lean(qa[8 * PQ]);
        a[2] = split_tf32_lean(qa[4]);
        a[3] = split_tf32_lean(qa[8 * PQ + 4]);
      } else {
        a[0] = split_tf32(qa[0]);
        a[1] = split_tf32(qa[8 * PQ]);
        a[2] = split_tf32(qa[4]);
        a[3] = split_tf32(qa[8 * PQ + 4]);
      }
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        const float* kb = k_s + (n * 8 + g) * PQ + ks * 8 + t;
        Tf32Pair bk[2];
        if constexpr (kPacked) {
          const uint4 w = *reinterpret_cast<const uint4*>(kp_s + (n * 8 + g) * Tr::kPitchKp + ks * 16 + t * 4);
          bk[0] = Tf32Pair{w.x, w.z};
          bk[1] = Tf32Pair{w.y, w.w};
        } else if constexpr (kLean) {
          bk[0] = split_tf32_lean(kb[0]);
          bk[1] = split_tf32_lean(kb[4]);
        } else {
          bk[0] = split_tf32(kb[0]);
          bk[1] = split_tf32(kb[4]);
        }
        mma_1688_3xtf32(acc_s[n], a, bk);
      }
    }

    // Logits in log2 units; masking only where the tile needs it. A staged mask on an interior step
    // takes one FFMA per score (mask_tile.cuh), as in fwd_mma.
    const bool plain = tile_unmasked<kFeat>(p, i0, M, j0, N);
    if (mask_smem && tile_keys_visible<kFeat>(p, i0, M, j0, N)) {
      constexpr int kPitch = MaskTile<M, N>::kPitch;
      const unsigned char* row_g = mask_s + (r0 + g) * kPitch;
      with_mask_dtype<float>(
          mask.dtype, [&](auto dt) { add_mask_rows<decltype(dt)::value, kPitch, true>(acc_s, row_g, t, p.scale); });
    } else if (bounds_only) {
      scale_unmasked_scores<kFeat>(acc_s, p, sc, plain, tile_mods_only<kFeat>(p, i0, M, j0, N), scale_log2, i0 + r0 + g,
                                   j0, t, coff);
    } else {
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int il = r0 + g + 8 * (e / 2), jl = n * 8 + 2 * t + (e % 2);
          acc_s[n][e] =
              (mask_smem ? tile_logit<M, N, kFeat, true>(p, mask, sc, mask_s, i0 + il, j0 + jl, il, jl, acc_s[n][e])
                         : masked_logit<kFeat, true>(p, mask, sc, i0 + il, j0 + jl, acc_s[n][e])) *
              kLog2e;
        }
    }

    float alpha[2];
    online_softmax(acc_s, m_run, l_run, alpha);
    if (p.dropout) drop_probabilities(acc_s, p, b, h, i0 + r0 + g, j0, t);
#pragma unroll
    for (int n = 0; n < OT; ++n) {
      acc_o[n][0] *= alpha[0];
      acc_o[n][1] *= alpha[0];
      acc_o[n][2] *= alpha[1];
      acc_o[n][3] *= alpha[1];
    }

    cp_async_wait_all();
    __syncthreads();          // V(nb) landed; every warp is done with K(nb) and the mask tile
    if constexpr (kPacked) {  // V's parts out of the landing tile, then K(nb + 1) into it
      split_v_packed<N, HD, PQ, Tr::kThreads>(v_s, vp_s);
      __syncthreads();
    }
    if (nb + 1 < n_blocks) {
      load_tile_f32_async<N, HD, PQ, Tr::kThreads>(k_s, k, p.k_stride[2], j0 + N, p.seq_k, p.head_dim);
      if (mask_smem) load_mask_tile_async<M, N, Tr::kThreads>(mask_s, mask, i0, j0 + N, p.seq_q, p.seq_k);
      cp_async_commit();
    }

    // O += P V over k8 blocks of keys. The A fragment wants P(g, t) and P(g, t + 4) of the block;
    // P(g, c) sits in lane 4g + c/2, element c % 2 of the n8 accumulator tile: fetch both elements
    // of lanes 4g + t/2 and 4g + 2 + t/2 and keep element t % 2.
    const int src_lo = (lane & ~3) | (t >> 1), src_hi = src_lo + 2;
    const bool odd = t & 1;
#pragma unroll
    for (int kk = 0; kk < NT; ++kk) {
      const float x0 = __shfl_sync(0xffffffffu, acc_s[kk][0], src_lo),
                  x1 = __shfl_sync(0xffffffffu, acc_s[kk][1], src_lo);
      const float x2 = __shfl_sync(0xffffffffu, acc_s[kk][2], src_lo),
                  x3 = __shfl_sync(0xffffffffu, acc_s[kk][3], src_lo);
      const float y0 = __shfl_sync(0xffffffffu, acc_s[kk][0], src_hi),
                  y1 = __shfl_sync(0xffffffffu, acc_s[kk][1], src_hi);
      const float y2 = __shfl_sync(0xffffffffu, acc_s[kk][2], src_hi),
                  y3 = __shfl_sync(0xffffffffu, acc_s[kk][3], src_hi);
      Tf32Pair a[4];
      if constexpr (kLean) {
        a[0] = split_tf32_lean(odd ? x1 : x0);
        a[1] = split_tf32_lean(odd ? x3 : x2);
        a[2] = split_tf32_lean(odd ? y1 : y0);
        a[3] = split_tf32_lean(odd ? y3 : y2);
      } else {
        a[0] = split_tf32(odd ? x1 : x0);
        a[1] = split_tf32(odd ? x3 : x2);
        a[2] = split_tf32(odd ? y1 : y0);
        a[3] = split_tf32(odd ? y3 : y2);
      }
      const float* vb = v_s + (kk * 8 + t) * PV + g;
      // kPacked: this lane's hi/lo words (key pair 4 kk + t, column 8 n + g) at + 32 n, rest words at + 32 (n / 2).
      const uint32_t* vhl = vp_s + (kk * 4 + t) * 4 * HD + (g ^ (2 * t)) * 4;
      const uint32_t* vrs = vp_s + (N / 2) * 4 * HD + (kk * 4 + t) * 2 * HD + (g ^ (2 * t)) * 4;
      if constexpr (kPacked) {
        uint4 rs = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
        for (int n = 0; n < OT; ++n) {
          if (n % kPvGroup == 0 && n >= o_tiles) break;
          const uint4 hl = *reinterpret_cast<const uint4*>(vhl + n * 32);
          if (n % 2 == 0) rs = *reinterpret_cast<const uint4*>(vrs + (n / 2) * 32);
          Tf32Triple bv[2];
          bv[0] = Tf32Triple{hl.x, hl.z, n % 2 ? rs.z : rs.x};
          bv[1] = Tf32Triple{hl.y, hl.w, n % 2 ? rs.w : rs.y};
          mma_1688_3xtf32_bexact(acc_o[n], a, bv);
        }
      } else {
#pragma unroll
        for (int n = 0; n < OT; ++n) {
          if (n % kPvGroup == 0 && n >= o_tiles) break;
          Tf32Triple bv[2];
          if constexpr (kLean) {
            bv[0] = split_tf32_exact_lean(vb[n * 8]);
            bv[1] = split_tf32_exact_lean(vb[4 * PV + n * 8]);
          } else {
            bv[0] = split_tf32_exact(vb[n * 8]);
            bv[1] = split_tf32_exact(vb[4 * PV + n * 8]);
          }
          mma_1688_3xtf32_bexact(acc_o[n], a, bv);
        }
      }
    }
  }

  // Epilogue: normalize; logsumexp per row; float2 stores straight from the accumulators (a quad
  // writes 32 contiguous bytes of a row).
  float inv[2];
  finish_rows(p, m_run, l_run, inv, b, h, i0 + r0 + g, t);
  cp_async_wait_all();
  store_rows(p, acc_o, inv, b, h, i0 + r0 + g, t);
#else
  __trap();  // built without sm80 code: the dispatcher never launches this kernel here
#endif
}

}  // namespace memeff
