// The deterministic mode's dQ kernel: forward-shaped (a CTA owns kBlockM query rows of one (batch,
// query head), 16 per warp) and walks its key tiles in one fixed order, so dQ is the same bits on
// every run. Per key tile: S = Q K^T, dP = dO V^T, dS elementwise (bwd_scores.h), dQ += dS K with dS
// packed straight from the accumulators into A fragments (as the forward packs P). dQ is written once,
// scaled, in the output dtype: no atomics and no float32 workspace. Costs the recompute of two GEMMs
// (Q K^T, dO V^T) that the fused default mode shares with dK/dV: 7 GEMMs instead of 5. Up to D = 128 the
// next key tile's copies run under the current one's GEMMs (DqTraits::kStages).
#pragma once
#include <cstdint>

#include "common/bwd_params.h"
#include "bwd/bwd_gemm.h"
#include "bwd/bwd_scores.h"
#include "bwd/bwd_traits.h"
#include "bwd/flash_bwd_kernel.h"
#include "attn/convert.h"
#include "attn/ptx.h"
#include "common/tile_io.h"

namespace attn::flash {

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads) flash_bwd_dq_kernel(const __grid_constant__ BwdParams p) {
  using E = typename Tr::Element;
  using IO = TileIO<Tr>;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN;
  constexpr int kNT = Tr::kNTiles, kDT = Tr::kDTiles, kKS = Tr::kKSteps, kPS = Tr::kPSteps;
  const FwdParams& f = p.f;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* sQ = reinterpret_cast<E*>(smem_raw);
  E* sdO = sQ + kM * Tr::kHeadDim;
  constexpr int kKVElems = kN * Tr::kHeadDim;
  E* sK = sdO + kM * Tr::kHeadDim;  // stage s: K at sK + 2 s kKVElems, V right after it
  E* sV = sK + kKVElems;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / f.group;
  const BwdSeq sq(f, b);
  const int i0 = blockIdx.x * kM;
  if (i0 >= sq.seq_q) return;
  const int off = f.lower_right ? sq.seq_k - sq.seq_q : 0;

  // Key tiles that some row of the block sees (as the forward's range).
  const int i_hi = min(i0 + kM, sq.seq_q) - 1;
  int64_t j_begin = 0, j_end = sq.seq_k;
  if (f.window_right >= 0) j_end = min(j_end, int64_t(i_hi) + off + f.window_right + 1);
  if (f.window_left >= 0) j_begin = max(int64_t(0), int64_t(i0) + off - f.window_left);
  const int n_begin = static_cast<int>(j_begin / kN);
  const int n_end = j_end > j_begin ? static_cast<int>((j_end + kN - 1) / kN) : n_begin;

  const BwdRowCtx rc = bwd_row_ctx(f, off, sq.seq_k, b, h);

  const E* q_base = static_cast<const E*>(f.q);
  const E* do_base = static_cast<const E*>(p.dout);
  load_query_rows<IO, kM>(sQ, q_base, sq, b, h, i0, f.q_batch_stride, f.q_head_stride, f.q_row_stride, f, tid);
  load_query_rows<IO, kM>(sdO, do_base, sq, b, h, i0, p.do_batch_stride, p.do_head_stride, p.do_row_stride, f, tid);
  cp_async_commit();

  // This thread's two rows: lse (log2 units) and Dsum.
  float lse2[2], dsum[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = i0 + warp * 16 + g + 8 * r;
    const bool in = i < sq.seq_q;
    const int64_t li = in ? sq.lse_index(f, b, h, i) : 0;
    lse2[r] = in ? lse_log2(f.lse[li]) : INFINITY;
    dsum[r] = in ? p.dsum[li] : 0.f;
  }

  const LdsmAddr<Tr, kM> lq(smem_addr(sQ), lane & 15, lane >> 4);
  const LdsmAddr<Tr, kM> ldo(smem_addr(sdO), lane & 15, lane >> 4);
  const LdsmAddr<Tr, kN> lk(smem_addr(sK), (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
  const LdsmAddr<Tr, kN> lv(smem_addr(sV), (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
  const LdsmAddr<Tr, kN> lkt(smem_addr(sK), (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);

  float acc_dq[kDT][4];
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dq[dt][e] = 0.f;

  const E* k_base = static_cast<const E*>(f.k);
  const E* v_base = static_cast<const E*>(f.v);
  // Key tile n's K and V rows into stage `stage` (one cp.async group; TileIO::load_rows: one 64-bit source per
  // thread, stepped by rows).
  auto load_kv = [&](int n, int stage) {
    const int j0 = n * kN;
    E* dst = sK + stage * 2 * kKVElems;
    IO::template load_rows<kN>(dst, k_base + sq.k_row(b, hk, j0, f.k_batch_stride, f.k_head_stride, f.k_row_stride),
                               f.k_row_stride, sq.seq_k - j0, f.head_dim, f.aligned16, k_base, tid);
    IO::template load_rows<kN>(dst + kKVElems,
                               v_base + sq.k_row(b, hk, j0, f.v_batch_stride, f.v_head_stride, f.v_row_stride),
                               f.v_row_stride, sq.seq_k - j0, f.head_dim, f.aligned16, v_base, tid);
    cp_async_commit();
  };
  if (Tr::kStages == 2 && n_begin < n_end) load_kv(n_begin, 0);
#pragma unroll 1
  for (int n = n_begin; n < n_end; ++n) {
    const int j0 = n * kN;
    const int stage = Tr::kStages == 2 ? (n - n_begin) & 1 : 0;
    if (Tr::kStages == 1) {
      __syncthreads();  // every warp is done with the previous K, V tiles
      load_kv(n, 0);
    }
    cp_async_wait<0>();
    __syncthreads();  // tile n is in; with two stages, every warp is also done with tile n - 1's stage
    if (Tr::kStages == 2 && n + 1 < n_end) load_kv(n + 1, stage ^ 1);
    const uint32_t stage_bytes = stage * 2 * kKVElems * 2;

    // Dropout bits (element k = nt * 4 + e: row g + 8 (e / 2), key nt * 8 + 2t + e % 2), before the GEMMs.
    const uint32_t keep = dropout_mask<kNT * 4>(f, rc, [&](int k, int& i, int& j) {
      i = i0 + warp * 16 + g + 8 * ((k >> 1) & 1);
      j = j0 + (k >> 2) * 8 + 2 * t + (k & 1);
    });
    float s[kNT][4], dp[kNT][4];
    {
      const LdsmAddr<Tr, kM> lqi = lq.fresh(), ldoi = ldo.fresh();
      LdsmAddr<Tr, kN> lki = lk.fresh(), lvi = lv.fresh();
      lki.base += stage_bytes;
      lvi.base += stage_bytes;
      gemm_pair_nt<E, kKS>(s, dp, lqi, ldoi, lki, lvi, warp * 16);
    }
    // element (r, c): query row g + 8r of the warp, key column 2t + c
    if (p.plain_tiles && plain_tile(f, rc, i0, kM, j0, kN)) {
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) grad_element_plain(s[nt][e], dp[nt][e], lse2[e >> 1], dsum[e >> 1], f.score_mul);
    } else {
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = e >> 1;
          grad_element(s[nt][e], dp[nt][e], i0 + warp * 16 + g + 8 * r, j0 + nt * 8 + 2 * t + (e & 1), lse2[r], dsum[r],
                       (keep >> (nt * 4 + e)) & 1u, f, rc);
        }
    }
    LdsmAddr<Tr, kN> lkti = lkt.fresh();
    lkti.base += stage_bytes;
#pragma unroll
    for (int ps = 0; ps < kPS; ++ps) {
      uint32_t a[4];
      a[0] = pack2<E>(dp[2 * ps][0], dp[2 * ps][1]);
      a[1] = pack2<E>(dp[2 * ps][2], dp[2 * ps][3]);
      a[2] = pack2<E>(dp[2 * ps + 1][0], dp[2 * ps + 1][1]);
      a[3] = pack2<E>(dp[2 * ps + 1][2], dp[2 * ps + 1][3]);
#pragma unroll
      for (int dpp = 0; dpp < kDT / 2; ++dpp) {
        uint32_t bk[4];
        ldmatrix_x4_trans(bk, lkti.at(ps * 16, dpp * 2));
        mma_16816<E>(acc_dq[2 * dpp], a, bk[0], bk[1]);
        mma_16816<E>(acc_dq[2 * dpp + 1], a, bk[2], bk[3]);
      }
    }
  }

  cp_async_wait<0>();
  E* dq_base = static_cast<E*>(p.dq);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = i0 + warp * 16 + g + 8 * r;
    if (i >= sq.seq_q) continue;
    E* row = dq_base + sq.q_row(b, h, i, p.dq_batch_stride, p.dq_head_stride, p.dq_row_stride);
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int col = dt * 8 + 2 * t + c;
        if (col < f.head_dim) row[col] = from_float<E>(acc_dq[dt][2 * r + c] * p.scale);
      }
  }
}

}  // namespace attn::flash
