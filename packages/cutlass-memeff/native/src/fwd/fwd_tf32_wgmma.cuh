// The fp32 forward on Hopper's warpgroup MMA (wgmma, sm_90a), 3xTF32 as fwd_tf32.cuh: the same split of
// each operand into TF32 parts (hi, lo; V's rest too, so that P = 1 gives V back exactly), the same
// online softmax (tf32_rows.cuh), but both GEMMs on wgmma: one instruction covers 64 rows x 32 keys (or
// x D) x 8, its operands read by the tensor cores from shared memory, where the mma.sync kernel spends
// most of its issue slots loading fragments. Calls without a mask, masked ones at d128, and calls with
// features (dispatch.cu); the others stay on fwd_tf32_kernel.
//
// One block: 128 query rows, one warpgroup per 64; 32 keys per step. Per step nb:
//   wait for K(nb); barrier; split it into K hi / lo (swizzled); barrier; issue V(nb) into the landing tile
//   S = Q.K^T      wgmma, A = Q parts and B = K parts from shared memory (both K-major), in fresh partials
//   scale / causal bounds, online softmax, dropout; P split into its A fragments (registers)
//   wait for V(nb); barrier; split it into V^T hi / lo / rest; barrier; issue K(nb + 1)
//   O' = P.V       wgmma, A = P from registers, B = V^T parts; O = O * alpha + O'
// The accumulator layout of wgmma m64nNk8 is mma.sync m16n8k8's per warp, so a warp's 16 rows and a
// thread's rows g and g + 8 are the mma.sync kernel's.
#pragma once
#include <cmath>
#include <cstdint>

#include "attn/wgmma_sync.h"
#include "common/toolkit.cuh"
#include "common/params.h"
#include "common/score_mods.cuh"
#include "common/tf32_tile.cuh"
#include "common/tf32x3.cuh"
#include "fwd/fwd_block_order.cuh"
#include "fwd/tf32_rows.cuh"
#include "fwd/tf32_wgmma_traits.h"
#include "generated/wgmma_tf32.h"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTN_MEMEFF_SM90A 1
#endif

namespace memeff {

// Word offset of 16-byte chunk `chunk` (4 words) of row r in a swizzled part tile of kRows rows: column
// blocks of 8 chunks (128 bytes), kRows rows each, the chunk XOR-ed by row % 8.
template <int kRows>
__device__ __forceinline__ int swizzled_chunk(int r, int chunk) {
  return (chunk >> 3) * kRows * 32 + r * 32 + (((chunk & 7) ^ (r & 7)) << 2);
}

// A landed [kRows][kHeadDim] fp32 tile (pitch kPitchIn) into its hi and lo parts (split_tf32_lean), swizzled
// K-major tiles of kRows rows. One 16-byte chunk per item: a phase of 8 lanes reads 8 chunks of one row and
// writes them to 8 distinct chunks (conflict free both ways).
template <int kRows, int kHeadDim, int kPitchIn, int kThreads>
__device__ __forceinline__ void split_rows_swizzled(const float* in, uint32_t* hi, uint32_t* lo) {
  constexpr int kChunks = kHeadDim / 4;
  static_assert((kRows * kChunks) % kThreads == 0, "whole passes");
#pragma unroll
  for (int it = 0; it < kRows * kChunks / kThreads; ++it) {
    const int idx = threadIdx.x + it * kThreads, r = idx / kChunks, c = idx % kChunks;
    const float4 x = *reinterpret_cast<const float4*>(in + r * kPitchIn + c * 4);
    const Tf32Pair a = split_tf32_lean(x.x), b = split_tf32_lean(x.y), e = split_tf32_lean(x.z),
                   f = split_tf32_lean(x.w);
    const int o = swizzled_chunk<kRows>(r, c);
    st_shared_v4(hi + o, a.hi, b.hi, e.hi, f.hi);
    st_shared_v4(lo + o, a.lo, b.lo, e.lo, f.lo);
  }
}

// A landed V tile ([kKeys][kHeadDim], pitch kPitchIn) into V^T's three parts (split_tf32_exact_lean),
// swizzled K-major tiles of kHeadDim rows (tf32 wgmma reads B only K-major). Within each k8 group of keys,
// position t + 4 e holds key 2 t + e: the A fragment of P then is the thread's own accumulator elements
// (a0 = P(g, 2t), a2 = P(g, 2t + 1)), no shuffles. Item: one head-dim row d and one 16-byte chunk of keys
// (2t + e for t < 4); a warp takes 32 consecutive d (conflict-free reads, 8 distinct chunks per store phase).
template <int kKeys, int kHeadDim, int kPitchIn, int kThreads>
__device__ __forceinline__ void split_v_transposed(const float* in, uint32_t* hi, uint32_t* lo, uint32_t* rest) {
  constexpr int kItems = kHeadDim * (kKeys / 4);
  static_assert(kItems % kThreads == 0 && kHeadDim % 32 == 0, "whole passes, whole warps per chunk");
#pragma unroll
  for (int it = 0; it < kItems / kThreads; ++it) {
    const int idx = threadIdx.x + it * kThreads, d = idx % kHeadDim, kc = idx / kHeadDim;
    const float* s = in + (8 * (kc >> 1) + (kc & 1)) * kPitchIn + d;
    const Tf32Triple a = split_tf32_exact_lean(s[0]), b = split_tf32_exact_lean(s[2 * kPitchIn]);
    const Tf32Triple e = split_tf32_exact_lean(s[4 * kPitchIn]), f = split_tf32_exact_lean(s[6 * kPitchIn]);
    const int o = swizzled_chunk<kHeadDim>(d, kc);
    st_shared_v4(hi + o, a.hi, b.hi, e.hi, f.hi);
    st_shared_v4(lo + o, a.lo, b.lo, e.lo, f.lo);
    st_shared_v4(rest + o, a.rest, b.rest, e.rest, f.rest);
  }
}

#ifdef ATTN_MEMEFF_SM90A
namespace wgmma_tf32_detail {
namespace w = attn::sm90;

// Q.K^T's k8 steps [4 ch, 4 ch + 4) into d (fresh: the first product starts it): the chunk's small terms
// (lo.hi, hi.lo) first, then its hi.hi terms, so that only the last 4 of the 12 sums the tensor cores
// truncate are at the partial's full size (per step in turn, 10 were: tools/research/tf32x3-emulate.py, the
// worst error against the rule's bound 0.57 -> 0.28). Descriptor offsets in 16-byte units: column block
// ks / 4, 32 bytes per step in it.
template <typename Tr>
__device__ __forceinline__ void issue_qk_chunk(float (&d)[Tr::kNTiles][4], int ch, uint64_t q_hi, uint64_t q_lo,
                                               uint64_t k_hi, uint64_t k_lo) {
  uint32_t qs[Tr::kQkChunk], kst[Tr::kQkChunk];
#pragma unroll
  for (int i = 0; i < Tr::kQkChunk; ++i) {
    const int ks = ch * Tr::kQkChunk + i;
    qs[i] = (ks >> 2) * Tr::kBlockM * 8 + (ks & 3) * 2;
    kst[i] = (ks >> 2) * Tr::kBlockN * 8 + (ks & 3) * 2;
  }
#pragma unroll
  for (int i = 0; i < Tr::kQkChunk; ++i) wgmma_tf32_ss(d, q_lo + qs[i], k_hi + kst[i], i > 0);
#pragma unroll
  for (int i = 0; i < Tr::kQkChunk; ++i) wgmma_tf32_ss(d, q_hi + qs[i], k_lo + kst[i], 1);
#pragma unroll
  for (int i = 0; i < Tr::kQkChunk; ++i) wgmma_tf32_ss(d, q_hi + qs[i], k_hi + kst[i], 1);
}

// S = Q.K^T: chunk 0 into s, each later chunk into a fresh partial (two, in turn) added to s once done, in
// chunk order, while the next chunk runs.
template <typename Tr>
__device__ __forceinline__ void qk_3xtf32(float (&s)[Tr::kNTiles][4], uint64_t q_hi, uint64_t q_lo, uint64_t k_hi,
                                          uint64_t k_lo) {
  constexpr int NT = Tr::kNTiles, C = Tr::kQkChunks;
  float part[2][NT][4];
  w::fence_operands(s);
  w::wgmma_fence();
  issue_qk_chunk<Tr>(s, 0, q_hi, q_lo, k_hi, k_lo);
  w::wgmma_commit();
#pragma unroll
  for (int ch = 1; ch < C; ++ch) {
    w::fence_operands(part[(ch - 1) & 1]);
    w::wgmma_fence();
    issue_qk_chunk<Tr>(part[(ch - 1) & 1], ch, q_hi, q_lo, k_hi, k_lo);
    w::wgmma_commit();
    w::wgmma_wait<1>();  // chunk ch - 1 done
    w::fence_operands(s);
    if (ch >= 2) {
      w::fence_operands(part[(ch - 2) & 1]);
#pragma unroll
      for (int n = 0; n < NT; ++n) add_partial(s[n], part[(ch - 2) & 1][n]);
    }
  }
  w::wgmma_wait<0>();
  w::fence_operands(s);
  if constexpr (C >= 2) {
    w::fence_operands(part[(C - 2) & 1]);
#pragma unroll
    for (int n = 0; n < NT; ++n) add_partial(s[n], part[(C - 2) & 1][n]);
  }
}

// O' = P.V over the step's k8 groups of keys into a fresh accumulator, V in three parts (mma_1688_3xtf32_bexact's
// terms), grouped as issue_qk_chunk: every group's hi.rest, then lo.hi, hi.lo, and the hi.hi terms last.
// Descriptor offsets: 32 bytes per group within V^T's 128-byte rows.
template <typename Tr>
__device__ __forceinline__ void pv_3xtf32(float (&o)[Tr::kOTiles][4], uint32_t (&p_hi)[Tr::kPSteps][4],
                                          uint32_t (&p_lo)[Tr::kPSteps][4], uint64_t v_hi, uint64_t v_lo,
                                          uint64_t v_rest) {
  w::fence_operands(o);
  w::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < Tr::kPSteps; ++kk) wgmma_tf32_rs(o, p_hi[kk], v_rest + (kk & 3) * 2, kk > 0);
#pragma unroll
  for (int kk = 0; kk < Tr::kPSteps; ++kk) wgmma_tf32_rs(o, p_lo[kk], v_hi + (kk & 3) * 2, 1);
#pragma unroll
  for (int kk = 0; kk < Tr::kPSteps; ++kk) wgmma_tf32_rs(o, p_hi[kk], v_lo + (kk & 3) * 2, 1);
#pragma unroll
  for (int kk = 0; kk < Tr::kPSteps; ++kk) wgmma_tf32_rs(o, p_hi[kk], v_hi + (kk & 3) * 2, 1);
  w::wgmma_commit();
  w::wgmma_wait<0>();
  w::fence_operands(o);
  w::fence_operands(p_hi);
  w::fence_operands(p_lo);
}
}  // namespace wgmma_tf32_detail
#endif

// kMasked: a bias or boolean mask, its terms read per step from global memory (load_mask_terms); d128 only
// (launch_fwd_tf32_wgmma), and at d64 in the feature kernel. kFeat: the feature kernel (FwdParams::features;
// as fwd_mma's); kMods: its softcap and ALiBi code (without a mask, calls without them take kMods = false).
template <typename Tr, bool kMasked, bool kFeat, bool kMods = kFeat>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm) fwd_tf32_wgmma_kernel(const FwdParams params) {
#ifdef ATTN_MEMEFF_SM90A
  namespace w = attn::sm90;
  namespace x = wgmma_tf32_detail;
  constexpr int M = Tr::kBlockM, N = Tr::kBlockN, HD = Tr::kHeadDim, NT = Tr::kNTiles, OT = Tr::kOTiles,
                PS = Tr::kPSteps;
  constexpr int PL = Tr::kPitchLand;
  extern __shared__ __align__(128) unsigned char smem_raw[];  // aligned up to 1024 below
  const uint32_t raw = smem_addr(smem_raw);
  uint32_t* const q_hi = reinterpret_cast<uint32_t*>(smem_raw + ((1024u - (raw & 1023u)) & 1023u));
  uint32_t* const q_lo = q_hi + Tr::kQPart;
  uint32_t* const k_hi = q_lo + Tr::kQPart;
  uint32_t* const k_lo = k_hi + Tr::kKPart;
  uint32_t* const v_hi = k_lo + Tr::kKPart;
  uint32_t* const v_lo = v_hi + Tr::kVPart;
  uint32_t* const v_rest = v_lo + Tr::kVPart;
  float* const land = reinterpret_cast<float*>(v_rest + Tr::kVPart);
  float* const q_land = reinterpret_cast<float*>(k_hi);

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wg = warp / 4;
  const int g = lane / 4, t = lane % 4;
  const FwdBlock blk = fwd_block_of(params);
  const int m_block = blk.m_block, bh = blk.bh_local + params.bh_base, b = bh / params.heads_q, h = bh % params.heads_q;
  const int hk = h / params.group;
  const int i0 = m_block * M, row = i0 + warp * 16 + g;
  // The feature kernel binds its sequence (varlen, sequsedK); the others read the call's parameters as they are.
  FwdParams bound = params;
  if constexpr (kFeat) bind_sequence(bound, b, 4);
  const FwdParams& p = kFeat ? bound : params;
  if (kFeat && i0 >= p.seq_q) return;  // a varlen sequence shorter than the longest
  const float* q = static_cast<const float*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
  const float* k = static_cast<const float*>(p.k) + b * p.k_stride[0] + hk * p.k_stride[1];
  const float* v = static_cast<const float*>(p.v) + b * p.v_stride[0] + hk * p.v_stride[1];
  const float scale_log2 = p.scale * kLog2e;
  const int coff = right_coff(p);
  const MaskView mask = mask_view(p, b, h);
  const ScoreCtx sc = score_ctx(p, b, h);

  // Descriptors at each tile's first step; Q's rows of this warpgroup (64 rows x 128 bytes further).
  const uint64_t dq_hi = w::make_desc(smem_addr(q_hi) + wg * 64 * 128, 16, 1024),
                 dq_lo = w::make_desc(smem_addr(q_lo) + wg * 64 * 128, 16, 1024);
  const uint64_t dk_hi = w::make_desc(smem_addr(k_hi), 16, 1024), dk_lo = w::make_desc(smem_addr(k_lo), 16, 1024);
  const uint64_t dv_hi = w::make_desc(smem_addr(v_hi), 16, 1024), dv_lo = w::make_desc(smem_addr(v_lo), 16, 1024);
  const uint64_t dv_rest = w::make_desc(smem_addr(v_rest), 16, 1024);

  float acc_o[OT][4], m_run[2], l_run[2];
  init_rows(acc_o, m_run, l_run);

  const int n_blocks = key_blocks_for_queries(p, i0, M, N);
  const int nb0 = kFeat ? key_step_begin(p, i0, N) : 0;  // a window's left side skips the keys before it

  load_tile_f32_async<M, HD, PL, Tr::kThreads>(q_land, q, p.q_stride[2], i0, p.seq_q, p.head_dim);
  cp_async_commit();
  if (nb0 < n_blocks) {
    cp_async_wait_all();
    __syncthreads();  // Q landed
    split_rows_swizzled<M, HD, PL, Tr::kThreads>(q_land, q_hi, q_lo);
    __syncthreads();  // every thread has read Q's floats: K(nb0) lands over them
    load_tile_f32_async<N, HD, PL, Tr::kThreads>(land, k, p.k_stride[2], nb0 * N, p.seq_k, p.head_dim);
    cp_async_commit();
  }

#pragma unroll 1
  for (int nb = nb0; nb < n_blocks; ++nb) {
    const int j0 = nb * N;
    cp_async_wait_all();
    __syncthreads();  // K(nb) landed; every warpgroup is done with K(nb - 1)'s parts
    split_rows_swizzled<N, HD, PL, Tr::kThreads>(land, k_hi, k_lo);
    w::fence_proxy_async();  // the parts (and, on the first step, Q's) are written for wgmma's reads
    __syncthreads();         // K's parts complete; the landing tile is free
    load_tile_f32_async<N, HD, PL, Tr::kThreads>(land, v, p.v_stride[2], j0, p.seq_k, p.head_dim_v);
    cp_async_commit();

    float s[NT][4], mv[NT][4];
    if constexpr (kMasked) load_mask_terms(mv, p, mask, row, j0, t);  // in flight under Q.K^T
    x::qk_3xtf32<Tr>(s, dq_hi, dq_lo, dk_hi, dk_lo);
    if constexpr (kMasked) {
      apply_mask_terms<kFeat>(s, mv, p, sc, row, j0, t, coff);
    } else {
      scale_unmasked_scores<kFeat, kMods>(s, p, sc, tile_unmasked<kFeat>(p, i0, M, j0, N),
                                          tile_mods_only<kFeat>(p, i0, M, j0, N), scale_log2, row, j0, t, coff);
    }
    float alpha[2];
    online_softmax(s, m_run, l_run, alpha);
    if (p.dropout) drop_probabilities(s, p, b, h, row, j0, t);
    // P's A fragments in V^T's key order (split_v_transposed): a0 = P(g, 2t), a1 = P(g + 8, 2t),
    // a2 = P(g, 2t + 1), a3 = P(g + 8, 2t + 1) of each k8 group.
    uint32_t p_hi[PS][4], p_lo[PS][4];
#pragma unroll
    for (int kk = 0; kk < PS; ++kk) {
      const float f[4] = {s[kk][0], s[kk][2], s[kk][1], s[kk][3]};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const Tf32Pair pr = split_tf32_lean(f[e]);
        p_hi[kk][e] = pr.hi;
        p_lo[kk][e] = pr.lo;
      }
    }

    cp_async_wait_all();
    __syncthreads();  // V(nb) landed; every warpgroup is done with V(nb - 1)'s parts
    split_v_transposed<N, HD, PL, Tr::kThreads>(land, v_hi, v_lo, v_rest);
    w::fence_proxy_async();
    __syncthreads();  // V's parts complete; the landing tile is free
    if (nb + 1 < n_blocks) {
      load_tile_f32_async<N, HD, PL, Tr::kThreads>(land, k, p.k_stride[2], j0 + N, p.seq_k, p.head_dim);
      cp_async_commit();
    }

    float o[OT][4];
    x::pv_3xtf32<Tr>(o, p_hi, p_lo, dv_hi, dv_lo, dv_rest);
#pragma unroll
    for (int n = 0; n < OT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[n][e] = fmaf(acc_o[n][e], alpha[e / 2], o[n][e]);
  }

  // The feature kernel binds its sequence again for the epilogue instead of holding its o and lse rows in
  // registers through the key loop (the d64 form runs at 128 registers, two blocks per SM).
  FwdParams tail = params;
  if constexpr (kFeat) bind_sequence(tail, b, 4);
  const FwdParams& pe = kFeat ? tail : params;
  float inv[2];
  finish_rows(pe, m_run, l_run, inv, b, h, row, t);
  cp_async_wait_all();
  store_rows(pe, acc_o, inv, b, h, row, t);
#else
  __trap();  // built without sm_90a code: the dispatcher never launches this kernel there
#endif
}

}  // namespace memeff
