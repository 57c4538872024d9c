// The Hopper forward kernel's (flash_fwd_sm90_ws_kernel.h) pieces apart from its schedule: a CTA's work (rows,
// sequence extents, base pointers, key-tile range) and the epilogue (normalize O, logsumexp, O through shared
// memory to global with 16-byte stores).
#pragma once
#include <cstdint>

#include "common/fwd_params.h"
#include "common/kernel_traits.h"
#include "attn/convert.h"
#include "attn/ptx.h"
#include "common/row_state.h"
#include "common/seq_extents.h"
#include "common/tile_io.h"

namespace attn::flash::sm90 {

// Tr's tile layout with another thread count: TileIO spreads a tile's 16-byte chunks over kNThreads
// threads, and the warp-specialized kernel loads with one producer warp or with its consumer warps only.
template <typename Tr, int kThreads>
struct WithThreads : Tr {
  static constexpr int kNThreads = kThreads;
};

template <typename E>
struct CtaWork {
  int row0;          // first query row of the CTA
  int seq_q, seq_k;  // this batch's lengths (varlen: from cu_seqlens; seq_k: seqused_k where given)
  int off;           // causal / window alignment offset
  int h, b;
  int64_t q_start;  // varlen: first packed row of this batch
  bool varlen;
  int n_end;  // key tiles [0, n_end) may hold visible keys
  const E* q_bh;
  const E* k_bh;
  const E* v_bh;
};

// False when the CTA has no query rows (a varlen batch shorter than the grid): the whole CTA returns.
template <typename Tr>
__device__ __forceinline__ bool cta_work(const FwdParams& p, CtaWork<typename Tr::Element>& w) {
  using E = typename Tr::Element;
  int m_block = blockIdx.x;
  if (p.causal) m_block = p.m_blocks - 1 - m_block;  // heaviest row blocks first
  w.h = blockIdx.y;
  w.b = blockIdx.z;
  // Clamped extents (seq_extents.h); seq_k is seqused_k where given. No paged K/V here: the plan gives
  // paged calls to the sm80-family kernel.
  const SeqExtents ext = seq_extents(p, w.b);
  w.seq_q = ext.seq_q;
  w.seq_k = ext.seq_k;
  w.q_start = ext.q_start;
  const int64_t k_start = ext.k_start;
  w.varlen = p.cu_seqlens_q != nullptr;
  w.row0 = m_block * Tr::kBlockM;
  if (w.row0 >= w.seq_q) return false;
  const int hk = w.h / p.group;
  w.off = p.lower_right ? w.seq_k - w.seq_q : 0;
  w.q_bh = static_cast<const E*>(p.q) + (w.varlen ? w.q_start * p.q_row_stride : w.b * p.q_batch_stride) +
           w.h * p.q_head_stride;
  w.k_bh = static_cast<const E*>(p.k) + (w.varlen ? k_start * p.k_row_stride : w.b * p.k_batch_stride) +
           hk * p.k_head_stride;
  w.v_bh = static_cast<const E*>(p.v) + (w.varlen ? k_start * p.v_row_stride : w.b * p.v_batch_stride) +
           hk * p.v_head_stride;
  // Key tiles entirely right of the causal / window band of the CTA's last row are skipped.
  const int last_row = min(w.row0 + Tr::kBlockM, w.seq_q) - 1;
  int64_t j_end = w.seq_k;
  if (p.window_right >= 0) {
    const int64_t band_end = int64_t(last_row) + w.off + p.window_right + 1;
    if (band_end < j_end) j_end = band_end;
  }
  w.n_end = j_end > 0 ? static_cast<int>((j_end + Tr::kBlockN - 1) / Tr::kBlockN) : 0;
  return true;
}

// Whether key tile n needs masks (it crosses the end of the keys or the right edge of the band of the
// CTA's first row); interior tiles skip the mask code.
template <typename Tr>
__device__ __forceinline__ bool boundary_tile(const FwdParams& p, const CtaWork<typename Tr::Element>& w, int n) {
  const int j0 = n * Tr::kBlockN;
  return j0 + Tr::kBlockN > w.seq_k ||
         (p.window_right >= 0 && int64_t(j0) + Tr::kBlockN - 1 > int64_t(w.row0) + w.off + p.window_right);
}

template <typename Tr>
__device__ __forceinline__ RowCtx row_ctx(const CtaWork<typename Tr::Element>& w, int warp, int g) {
  RowCtx rc;
  rc.base = w.row0 + warp * 16 + g;  // warp w of the consumers owns rows 16w..16w+15 of the tile
  rc.rows_total = w.seq_q;
  rc.group = 1;
  rc.off = w.off;
  rc.seq_k = w.seq_k;
  rc.bh0 = 0;
  rc.slopes = nullptr;
  return rc;
}

// Normalize O and write it with the logsumexp. O goes through the Q tile's rows of the thread's own
// warpgroup (its wgmma reads of them are complete), then `sync()` (a barrier over the kConsumers threads
// that hold O) and 16-byte stores by those threads.
// Tr: the output's tile (its Element is O's type); W: the CTA's work, whose input type may differ (fp8 in, bf16
// out).
template <typename Tr, int kConsumers, typename W, typename Sync>
__device__ __forceinline__ void store_output(const FwdParams& p, const W& w, float (&acc_o)[1][Tr::kDTiles][4],
                                             const float (&row_max)[1][2], const float (&row_sum)[1][2],
                                             typename Tr::Element* sQ, int tid, Sync sync) {
  using E = typename Tr::Element;
  constexpr float kLn2 = 0.6931471805599453f;
  const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float l = quad_sum(row_sum[0][r]);
    const bool empty = l == 0.f;  // no visible key: out 0, lse -inf (NaN inputs stay NaN)
    const float lse = empty ? -INFINITY : row_max[0][r] * kLn2 + logf(l);
    const float o_scale = empty ? 0.f : 1.f / l;
    const int row = warp * 16 + g + 8 * r;
#pragma unroll
    for (int dt = 0; dt < Tr::kDTiles; ++dt)
      *reinterpret_cast<uint32_t*>(sQ + swizzle_offset<Tr>(row, dt, Tr::kBlockM) + 2 * t) =
          pack2<E>(acc_o[0][dt][2 * r] * o_scale, acc_o[0][dt][2 * r + 1] * o_scale);
    const int i = w.row0 + row;
    if (t == 0 && i < w.seq_q)
      p.lse[w.varlen ? w.h * p.lse_head_stride + w.q_start + i
                     : w.b * p.lse_batch_stride + w.h * p.lse_head_stride + i] = lse;
  }
  sync();
  E* o_bh =
      static_cast<E*>(p.o) + (w.varlen ? w.q_start * p.o_row_stride : w.b * p.o_batch_stride) + w.h * p.o_head_stride;
  TileIO<WithThreads<Tr, kConsumers>>::template store<Tr::kBlockM>(
      sQ, [&](int row) -> E* { return w.row0 + row < w.seq_q ? o_bh + (w.row0 + row) * p.o_row_stride : nullptr; },
      p.head_dim, p.aligned16, tid);
}

}  // namespace attn::flash::sm90
