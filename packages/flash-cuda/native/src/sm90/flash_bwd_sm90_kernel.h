// The Hopper dK/dV kernel of the backward: the row-tiled kernel's algorithm (flash_bwd_kernel.h: one CTA per key
// block, the whole GQA group and every query block that sees its keys, dQ by fp32 atomics) with every GEMM
// on wgmma (sm_90a), which reaches Hopper's full tensor-core rate where mma.sync tops out well below it.
// Tiles and the GEMMs' operands: bwd_sm90_traits.h. Per (query head, query block) pair, with Q and dO in
// stage st (cp.async, two stages: the next pair's copies overlap this one):
//   S^T = K.Q^T, dP^T = V.dO^T       one wgmma batch per warpgroup (its 64 keys)
//   P, dS elementwise                the mma.sync kernels' code (bwd_scores.h): the accumulators have its layout
//   dS^T -> shared memory            (default mode: the dQ GEMM needs every key's row)
//   dV += P^T.dO, dK += dS^T.Q       A from registers (P^T, dS^T packed from the accumulators)
//   dQ = dS.K                        A = dS^T, B = K, both MN-major in shared memory; fp32 atomics
// Deterministic mode: no dQ part (flash_bwd_dq_kernel.h computes dQ after this kernel).
#pragma once
#include <cstdint>

#include "common/bwd_params.h"
#include "bwd/bwd_scores.h"
#include "bwd/flash_bwd_kernel.h"
#include "attn/ptx.h"
#include "common/tile_io.h"
#include "sm90/bwd_sm90_pair.h"
#include "sm90/bwd_sm90_traits.h"
#include "sm90/wgmma_ops.h"
#include "sm90/wgmma_sync.h"

namespace attn::flash {

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads, 1) flash_bwd_sm90_kernel(const __grid_constant__ BwdParams p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using E = typename Tr::Element;
  using IO = TileIO<Tr>;
  using sm90::Wgmma;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN;
  constexpr int kQT = Tr::kQTiles, kMS = Tr::kMSteps, kDT = Tr::kDTiles, kDqT = Tr::kDqTiles;
  static_assert(!Tr::kRoles && Tr::kDqPasses == 1, "D <= 128: warpgroups split the keys, one dQ pass");
  const FwdParams& f = p.f;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const sm90::BwdSmem<Tr> sm(smem_raw);
  E* const sK = sm.k;
  E* const sQ0 = sm.q0;
  constexpr int kStageElems = sm90::BwdSmem<Tr>::kStageElems;
  constexpr uint32_t kStageUnits = kStageElems * 2 / 16;  // descriptor start-address units (16 bytes)
  constexpr uint32_t kDoUnits = Tr::kSmemQElems * 2 / 16;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int wg = warp >> 2;  // warpgroup: keys wg * 64 .. wg * 64 + 63 of the block (warp w: keys 16w..16w+15)
  const int n_block = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const BwdSeq sq(f, b);
  const int j0 = n_block * kN;
  if (j0 >= sq.seq_k) return;
  const int off = f.lower_right ? sq.seq_k - sq.seq_q : 0;
  const QueryBlocks qb = query_blocks_for_keys<kM, kN>(f, sq, j0, off);
  const int m_begin = qb.begin, nm = qb.end - qb.begin;

  load_kv_tiles<IO, kN>(sK, sm.v, f, sq, b, hk, j0, tid);

  // Descriptors at stage 0 and the first k16 step (sm90/wgmma_sync.h make_desc). K-major views (rows x D,
  // 64-column blocks of rows x 128 bytes): this warpgroup's 64 rows of K and V, all kM rows of Q and dO; a
  // k16 step along D moves to column block ks / 4 and 32 bytes into it. MN-major views (k = the rows): Q and
  // dO for dV/dK (N = D in 64-column blocks kM rows apart), dS^T (M = queries) and K (N = this warpgroup's
  // dQ columns) for dQ; a k16 step is 16 rows = 2048 bytes.
  const uint64_t desc_k = sm90::make_desc(smem_addr(sK) + wg * 64 * 128, 16, 1024);
  const uint64_t desc_v = sm90::make_desc(smem_addr(sm.v) + wg * 64 * 128, 16, 1024);
  const uint64_t desc_q = sm90::make_desc(smem_addr(sQ0), 16, 1024);
  const uint64_t desc_q_mn = sm90::make_desc(smem_addr(sQ0), kM * 128, 1024);
  const uint64_t desc_ds = sm90::make_desc(smem_addr(sm.ds), kN * 128, 1024);
  // K's MN-major view starts at this warpgroup's first dQ column: column block dq_col0 / 64, and (D = 64:
  // 32 columns per warpgroup) 64 bytes into its rows; the swizzle is on absolute address bits, as for k steps.
  const int dq_col0 = wg * Tr::kDqCols;
  const uint64_t desc_k_mn =
      sm90::make_desc(smem_addr(sK) + (dq_col0 / 64) * kN * 128 + (dq_col0 % 64) * 2, kN * 128, 1024);
  static_assert(64 % Tr::kDqCols == 0 || Tr::kDqCols % 64 == 0, "a warpgroup's dQ columns start on a block or half");

  float acc_dk[kDT][4], acc_dv[kDT][4];
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[dt][e] = acc_dv[dt][e] = 0.f;

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
    pipe.begin(k, stage);  // overlaps this pair's math

    const BwdRowCtx rc = bwd_row_ctx(f, off, sq.seq_k, b, h);
    const float* lse_s = sm.lse + stage * kM;
    const float* dsum_s = sm.dsum + stage * kM;
    const uint32_t st_units = stage * kStageUnits;

    // Dropout bits of this thread's elements (element k = nt * 4 + e: key row 16 warp + g + 8 (e / 2), query
    // column nt * 8 + 2t + e % 2), before the accumulators are live.
    const uint32_t keep = dropout_mask<kQT * 4>(f, rc, [&](int x, int& i, int& j) {
      i = i0 + (x >> 2) * 8 + 2 * t + (x & 1);
      j = j0 + warp * 16 + g + 8 * ((x >> 1) & 1);
    });

    // ---- S^T = K Q^T and dP^T = V dO^T for this warpgroup's 64 keys, one commit group each: on plain tiles
    // P is computed while the dP^T GEMM still runs.
    const bool plain = p.plain_tiles && plain_tile(f, rc, i0, kM, j0, kN);
    float st[kQT][4], dpt[kQT][4];
    // Tiles that are not plain: every element by grad_element (bounds, masks, dropout).
    auto edge = [&] {
#pragma unroll
      for (int nt = 0; nt < kQT; ++nt) {
        const float2 l2 = *reinterpret_cast<const float2*>(lse_s + nt * 8 + 2 * t);
        const float2 d2 = *reinterpret_cast<const float2*>(dsum_s + nt * 8 + 2 * t);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int jl = warp * 16 + g + 8 * (e >> 1);
          const int il = nt * 8 + 2 * t + (e & 1);
          grad_element(st[nt][e], dpt[nt][e], i0 + il, j0 + jl, (e & 1) ? l2.y : l2.x, (e & 1) ? d2.y : d2.x,
                       (keep >> (nt * 4 + e)) & 1u, f, rc);
        }
      }
    };
    sm90::score_products<Tr>(st, dpt, plain, desc_k, desc_v, desc_q + st_units, desc_q + st_units + kDoUnits, lse_s,
                             dsum_s, f.score_mul, t, edge);

    // ---- P^T and dS^T as A fragments; dS^T also to shared memory for the dQ GEMM
    uint32_t pa[kMS][4], da[kMS][4];
    sm90::pack_a<Tr>(st, pa);
    sm90::pack_a<Tr>(dpt, da);
    if (!p.deterministic) sm90::store_ds_t<Tr>(sm.ds, da, warp * 16, g, t);

    // ---- dV += (P Z)^T dO, dK += dS^T Q
    sm90::dkdv_products<Tr>(acc_dv, acc_dk, pa, da, desc_q_mn + st_units + kDoUnits, desc_q_mn + st_units);

    if (!p.deterministic) {
      __syncthreads();  // both warpgroups' dS^T rows are in shared memory
      // ---- dQ_m = dS K over the block's 128 keys, this warpgroup's dQ columns; fp32 atomics
      float dq[kDqT][4];
      sm90::fence_operands(dq);
      sm90::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < Tr::kDqKSteps; ++ks)
        Wgmma<E, Tr::kDqCols>::template ss<1, 1>(dq, desc_ds + ks * 128, desc_k_mn + ks * 128, ks > 0);
      sm90::wgmma_commit();
      sm90::wgmma_wait<0>();
      sm90::fence_operands(dq);
      sm90::red_dq_rows(p, sq, b, h, i0 + (warp & 3) * 16, dq_col0, dq, g, t);
    } else {
      sm90::wgmma_wait<0>();
    }
    sm90::fence_operands(pa);
    sm90::fence_operands(da);
    sm90::fence_operands(acc_dv);
    sm90::fence_operands(acc_dk);
  }

  // ---- epilogue: dK = scale * sum dS^T Q, dV = sum (P Z)^T dO, in the output dtype, staged in K's and V's
  // tiles (free once every warpgroup's last dQ has read K) and written out in 16-byte row chunks
  cp_async_wait<0>();  // a CTA with no query block still has its K/V copies in flight
  __syncthreads();
  sm90::stage_key_rows<Tr, kN>(sK, acc_dk, p.scale, warp * 16, g, t);
  sm90::stage_key_rows<Tr, kN>(sm.v, acc_dv, 1.f, warp * 16, g, t);
  __syncthreads();
  sm90::store_tile_rows<Tr, kN>(p.dk, p.dk_batch_stride, p.dk_head_stride, p.dk_row_stride, sK, sq, b, hk, j0, f, tid);
  sm90::store_tile_rows<Tr, kN>(p.dv, p.dv_batch_stride, p.dv_head_stride, p.dv_row_stride, sm.v, sq, b, hk, j0, f,
                                tid);
#endif
}

}  // namespace attn::flash
