// The Hopper dK/dV kernel for D > 128 (bwd_sm90_traits.h, kRoles): 64 keys per CTA, the two warpgroups
// split by role, since one warpgroup cannot hold dK and dV of 64 keys x 256 columns (256 accumulators per
// thread) while two can hold one each. Per (query head, query block) pair, Q and dO in stage st:
//   warpgroup 0                                   warpgroup 1
//   S^T = K.Q^T (wgmma, 16 k16 steps)             dP^T = V.dO^T
//   S^T -> shared memory (fp32), arrive           wait for S^T
//   P (bwd_scores.h, mma.sync's element map)       dS from S^T and dP^T (grad_element)
//   dV += P^T.dO (A = P^T from registers)         dS^T -> shared memory; dK += dS^T.Q
//   ---------------------- barrier: dS^T complete ----------------------
//   dQ columns 0..127 = dS.K                      dQ columns 128..255   (passes of 64; fp32 atomics)
// Both warpgroups hold the same accumulator layout (64 keys x 64 queries, 16 keys per warp), so S^T crosses
// in fragment order (element e of thread t at [e][t]: conflict-free) and both replay the same dropout bits.
// Deterministic mode: no dQ part (flash_bwd_dq_kernel.h computes dQ after this kernel).
#pragma once
#include <cstdint>

#include "common/bwd_params.h"
#include "bwd/bwd_scores.h"
#include "bwd/flash_bwd_kernel.h"
#include "attn/ptx.h"
#include "common/tile_io.h"
#include "attn/barriers.h"
#include "sm90/bwd_sm90_pair.h"
#include "sm90/bwd_sm90_traits.h"
#include "sm90/wgmma_ops.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash {

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads, 1) flash_bwd_sm90_roles_kernel(const __grid_constant__ BwdParams p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using E = typename Tr::Element;
  using IO = TileIO<Tr>;
  using sm90::Wgmma;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kD = Tr::kHeadDim;
  constexpr int kQT = Tr::kQTiles, kMS = Tr::kMSteps, kDT = Tr::kDTiles, kDqT = Tr::kDqTiles;
  constexpr int kWgThreads = 128;
  constexpr int kSReady = 1;  // named barrier: warpgroup 0 has stored S^T
  static_assert(kN == 64 && Tr::kRoles, "one warpgroup's 64 keys per CTA");
  const FwdParams& f = p.f;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const sm90::BwdSmem<Tr> sm(smem_raw);
  E* const sK = sm.k;
  E* const sQ0 = sm.q0;
  float* const sS = sm.s;  // S^T from warpgroup 0 to 1: element e of thread t at [e][t]
  constexpr int kStageElems = sm90::BwdSmem<Tr>::kStageElems;
  constexpr uint32_t kStageUnits = kStageElems * 2 / 16;  // descriptor start-address units (16 bytes)
  constexpr uint32_t kDoUnits = Tr::kSmemQElems * 2 / 16;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wg = warp >> 2;  // the role: 0 = S, P, dV; 1 = dP, dS, dK
  const int wt = tid & (kWgThreads - 1);
  const int kw = warp & 3;  // keys 16 kw .. 16 kw + 15 of the block, in both warpgroups
  const int n_block = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const BwdSeq sq(f, b);
  const int j0 = n_block * kN;
  if (j0 >= sq.seq_k) return;
  const int off = f.lower_right ? sq.seq_k - sq.seq_q : 0;
  const QueryBlocks qb = query_blocks_for_keys<kM, kN>(f, sq, j0, off);
  const int m_begin = qb.begin, nm = qb.end - qb.begin;

  load_kv_tiles<IO, kN>(sK, sm.v, f, sq, b, hk, j0, tid);

  // Descriptors at stage 0 and the first k16 step (as flash_bwd_sm90_kernel.h): the role's A (K or V, all 64
  // rows) and B (Q or dO) for S^T / dP^T, K-major; its B for dV / dK (dO or Q), MN-major; dS^T and K for dQ.
  const uint64_t desc_a = sm90::make_desc(smem_addr(wg == 0 ? sK : sm.v), 16, 1024);
  const uint32_t role_units = wg == 0 ? 0u : kDoUnits;  // Q (S^T, dK) or dO (dP^T, dV) in a stage
  const uint64_t desc_b = sm90::make_desc(smem_addr(sQ0), 16, 1024) + role_units;
  const uint64_t desc_b_mn = sm90::make_desc(smem_addr(sQ0), kM * 128, 1024) + (kDoUnits - role_units);
  const uint64_t desc_ds = sm90::make_desc(smem_addr(sm.ds), kN * 128, 1024);

  float acc[kDT][4];  // dV (warpgroup 0) or dK (warpgroup 1)
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[dt][e] = 0.f;

  // The (query head, query block) pairs in order: every query block of head hk * group, then the next head.
  const int pairs = f.group * nm;
  const sm90::PairWalk first{hk * f.group, m_begin, m_begin, qb.end};
  sm90::PairPipeline<Tr> pipe{sm, p, sq, b, tid, pairs, first};
  pipe.start();
  sm90::PairWalk cur = first;

#pragma unroll 1
  for (int k = 0; k < pairs; ++k, cur.next()) {
    const int h = cur.h, i0 = cur.m * kM;
    const int stage = k & 1;
    pipe.begin(k, stage);  // also: warpgroup 1 read pair k - 1's S^T

    const BwdRowCtx rc = bwd_row_ctx(f, off, sq.seq_k, b, h);
    const float* lse_s = sm.lse + stage * kM;
    const float* dsum_s = sm.dsum + stage * kM;
    const uint32_t st_units = stage * kStageUnits;
    const uint32_t keep = dropout_mask<kQT * 4>(f, rc, [&](int x, int& i, int& j) {
      i = i0 + (x >> 2) * 8 + 2 * t + (x & 1);
      j = j0 + kw * 16 + g + 8 * ((x >> 1) & 1);
    });
    const bool plain = p.plain_tiles && plain_tile(f, rc, i0, kM, j0, kN);

    // ---- S^T (warpgroup 0) or dP^T (warpgroup 1)
    float x[kQT][4];
    sm90::fence_operands(x);
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < Tr::kKSteps; ++ks)
      Wgmma<E, kM>::template ss<0>(x, desc_a + sm90::kstep(ks, kN), desc_b + st_units + sm90::kstep(ks, kM), ks > 0);
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_operands(x);

    // ---- P (warpgroup 0) or dS (warpgroup 1) into x; element (nt, e): key row 16 kw + g + 8 (e / 2), query
    // column nt * 8 + 2t + e % 2
    auto for_elements = [&](auto&& fn) {
#pragma unroll
      for (int nt = 0; nt < kQT; ++nt) {
        const float2 l2 = *reinterpret_cast<const float2*>(lse_s + nt * 8 + 2 * t);
        const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + nt * 8 + 2 * t);
#pragma unroll
        for (int e = 0; e < 4; ++e)
          fn(nt, e, i0 + nt * 8 + 2 * t + (e & 1), j0 + kw * 16 + g + 8 * (e >> 1), (e & 1) ? l2.y : l2.x,
             (e & 1) ? d2.y : d2.x);
      }
    };
    if (wg == 0) {
#pragma unroll
      for (int nt = 0; nt < kQT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) sS[(nt * 4 + e) * kWgThreads + wt] = x[nt][e];
      named_barrier_arrive(kSReady, Tr::kNThreads);
      if (plain) {
        for_elements(
            [&](int nt, int e, int, int, float lse2, float) { x[nt][e] = prob_plain(x[nt][e], lse2, f.score_mul); });
      } else {
        for_elements([&](int nt, int e, int i, int j, float lse2, float dsum) {
          float unused = 0.f;  // grad_element's dS half is dead here: warpgroup 1 computes it
          grad_element(x[nt][e], unused, i, j, lse2, dsum, (keep >> (nt * 4 + e)) & 1u, f, rc);
        });
      }
    } else {
      named_barrier_sync(kSReady, Tr::kNThreads);
      if (plain) {
        for_elements([&](int nt, int e, int, int, float lse2, float dsum) {
          float s = sS[(nt * 4 + e) * kWgThreads + wt];
          grad_element_plain(s, x[nt][e], lse2, dsum, f.score_mul);
        });
      } else {
        for_elements([&](int nt, int e, int i, int j, float lse2, float dsum) {
          float s = sS[(nt * 4 + e) * kWgThreads + wt];
          grad_element(s, x[nt][e], i, j, lse2, dsum, (keep >> (nt * 4 + e)) & 1u, f, rc);
        });
      }
    }

    // ---- P^T or dS^T as A fragments (k16 step ms: query columns 16ms..16ms+15); dS^T also to shared memory
    uint32_t xa[kMS][4];
    sm90::pack_a<Tr>(x, xa);
    if (wg == 1 && !p.deterministic) sm90::store_ds_t<Tr>(sm.ds, xa, kw * 16, g, t);

    // ---- dV += (P Z)^T dO (warpgroup 0) or dK += dS^T Q (warpgroup 1): B MN-major, k16 step = 16 query rows
    sm90::fence_operands(acc);
    sm90::wgmma_fence();
#pragma unroll
    for (int ms = 0; ms < kMS; ++ms) Wgmma<E, kD>::template rs<1>(acc, xa[ms], desc_b_mn + st_units + ms * 128);
    sm90::wgmma_commit();

    if (!p.deterministic) {
      __syncthreads();  // dS^T complete
                        // ---- dQ_m = dS K: this warpgroup's half of the columns, in passes of kDqCols; fp32 atomics
#pragma unroll
      for (int pass = 0; pass < Tr::kDqPasses; ++pass) {
        const int col0 = (wg * Tr::kDqPasses + pass) * Tr::kDqCols;  // a multiple of 64: one column block
        const uint64_t desc_k_mn = sm90::make_desc(smem_addr(sK) + (col0 / 64) * kN * 128, kN * 128, 1024);
        float dq[kDqT][4];
        sm90::fence_operands(dq);
        sm90::wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < Tr::kDqKSteps; ++ks)
          Wgmma<E, Tr::kDqCols>::template ss<1, 1>(dq, desc_ds + ks * 128, desc_k_mn + ks * 128, ks > 0);
        sm90::wgmma_commit();
        sm90::wgmma_wait<0>();
        sm90::fence_operands(dq);
        sm90::red_dq_rows(p, sq, b, h, i0 + kw * 16, col0, dq, g, t);
      }
    } else {
      sm90::wgmma_wait<0>();
      // Deterministic mode has no dQ barrier: without one here, compute-sanitizer's racecheck reports the S^T
      // exchange (write above, read by warpgroup 1) as a hazard, although the next pair's begin_pair barrier
      // already orders warpgroup 1's read before warpgroup 0's next write. Kept so that the tool's runs stay
      // clean; it costs only the deterministic mode (about 1% there, docs/perf/flash-cuda.md).
      __syncthreads();
    }
    sm90::fence_operands(xa);
    sm90::fence_operands(acc);
  }

  // ---- epilogue: warpgroup 0 writes dV, warpgroup 1 dK * scale, in the output dtype
  cp_async_wait<0>();  // a CTA with no query block still has its K/V copies in flight
  if (wg == 0)
    sm90::store_key_rows<Tr>(p.dv, p.dv_batch_stride, p.dv_head_stride, p.dv_row_stride, acc, 1.f, sq, b, hk,
                             j0 + kw * 16, f.head_dim, g, t);
  else
    sm90::store_key_rows<Tr>(p.dk, p.dk_batch_stride, p.dk_head_stride, p.dk_row_stride, acc, p.scale, sq, b, hk,
                             j0 + kw * 16, f.head_dim, g, t);
#endif
}

}  // namespace attn::flash
