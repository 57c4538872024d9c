// The forward kernel body (FlashAttention-2's flash_fwd_kernel, written with inline PTX).
// One CTA: kBlockM query rows of one (batch, head) -- or, with pack_gqa, of the query heads sharing
// one KV head -- against the key tiles of its range (its split of it with split-KV).
//
// Pipeline per key tile n (walked from the last tile down, so the boundary tiles come first; the first
// tile's V is issued in the prologue, right behind its K):
//   wait K_n; barrier; issue V_n           | S = Q.K_n^T (mma, Q from registers or smem)
//   scale / softcap / ALiBi; masks only on boundary tiles
//   wait V_n; barrier; issue K_{n-1}       | online softmax, dropout, O += P.V_n (P from registers)
// (Tr::kEarlyK, the short query tiles: barrier; issue K_{n-1}; wait V_n only; barrier.)
// Epilogue: O / l through shared memory with 16-byte stores, logsumexp (natural log) as float32; with
// split-KV, O / l and lse as float32 partials for the combine kernel.
// Tr::kExtras = false compiles the lean kernel: no ALiBi / softcap / dropout / left window code, scores
// kept raw and the scale folded into the softmax's exp2 (FFMA + MUFU.EX2 per score).
#pragma once
#include <climits>
#include <cstdint>

#include "common/dependent_launch.h"
#include "fwd/fwd_gemm.h"
#include "common/fwd_params.h"
#include "common/kernel_traits.h"
#include "attn/convert.h"
#include "attn/ptx.h"
#include "common/row_state.h"
#include "common/seq_extents.h"
#include "common/tile_io.h"
#include "fwd/kv_fused.h"

namespace attn::flash {

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads) flash_fwd_kernel(const __grid_constant__ FwdParams p) {
  using E = typename Tr::Element;
  using IO = TileIO<Tr>;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kMT = Tr::kMTiles, kW = Tr::kNWarps;
  constexpr int kNT = Tr::kNTiles, kDT = Tr::kDTiles, kKS = Tr::kKSteps;
  dependent_launch_prologue();  // before any global access (common/dependent_launch.h)

  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* sQ = reinterpret_cast<E*>(smem_raw);
  E* sK = sQ + Tr::kSmemQElems;
  E* sV = sK + Tr::kSmemKVElems;
  // Paged calls: [2][kPageSlots] K and V row offsets in the pools, and the block-table entries behind them.
  int64_t* sOffK = reinterpret_cast<int64_t*>(sV + Tr::kSmemKVElems);
  int64_t* sOffV = sOffK + 2 * Tr::kPageSlots;
  int* sPages = reinterpret_cast<int*>(sOffV + 2 * Tr::kPageSlots);

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int split = blockIdx.x % p.num_splits;
  int m_block = blockIdx.x / p.num_splits;
  if (p.causal) m_block = p.m_blocks - 1 - m_block;  // heaviest row blocks first
  const int hy = blockIdx.y, b = blockIdx.z;

  // ---- this CTA's sequence extents (clamped: seq_extents.h) and row -> (i, h) mapping
  const SeqExtents ext = seq_extents(p, b);
  const int seq_q = ext.seq_q, seq_k = ext.seq_k;  // seq_k: seqused_k where given
  const int64_t q_start = ext.q_start, k_start = ext.k_start;
  const int group = p.group;
  const int rows_total = p.pack_gqa ? static_cast<int>(min64(int64_t(seq_q) * group, INT_MAX)) : seq_q;
  const int row0 = m_block * kM;
  if (row0 >= rows_total) return;
  const int hk = p.pack_gqa ? hy : hy / group;
  const int off = p.lower_right ? seq_k - seq_q : 0;
  const bool varlen = p.cu_seqlens_q != nullptr;

  const E* q_bh = static_cast<const E*>(p.q) + (varlen ? q_start * p.q_row_stride : b * p.q_batch_stride);
  const bool paged = p.block_table != nullptr;  // then k_start is 0: rows come from the pages
  // A kv cache without a block table (contiguous, fused append) is read as dense rows: key j of this batch row
  // is row k_pos0 + j of pool row kv_row.
  const bool kv_rows = p.kv_cache && !paged;
  const E* k_bh = static_cast<const E*>(p.k) + (varlen ? k_start * p.k_row_stride : b * p.k_batch_stride) +
                  hk * p.k_head_stride +
                  (kv_rows ? ext.kv_row * p.k_page_stride + int64_t(ext.k_pos0) * p.k_row_stride : 0);
  const E* v_bh = static_cast<const E*>(p.v) + (varlen ? k_start * p.v_row_stride : b * p.v_batch_stride) +
                  hk * p.v_head_stride +
                  (kv_rows ? ext.kv_row * p.v_page_stride + int64_t(ext.k_pos0) * p.v_row_stride : 0);
  const int* table_row = paged ? p.block_table + int64_t(b) * p.max_pages_per_seq : nullptr;
  auto row_i = [&](int r) { return p.pack_gqa ? r / group : r; };
  auto row_h = [&](int r) { return p.pack_gqa ? hk * group + r % group : hy; };

  // ---- key-tile range: skip tiles entirely outside the causal / window band
  const int last_row = min(row0 + kM, rows_total) - 1;
  const int i_lo = row_i(row0), i_hi = row_i(last_row);
  int64_t j_begin = 0, j_end = seq_k;
  if (p.window_right >= 0) j_end = min64(j_end, int64_t(i_hi) + off + p.window_right + 1);
  if (p.window_left >= 0) j_begin = max64(0, int64_t(i_lo) + off - p.window_left);
  int n_begin = static_cast<int>(j_begin / kN);
  int n_end = j_end > j_begin ? static_cast<int>((j_end + kN - 1) / kN) : n_begin;
  int64_t split_lo = 0, split_hi = seq_k;  // the keys of this CTA's split, whatever its rows see
  if (p.num_splits > 1) {
    const int per_split = ((seq_k + kN - 1) / kN + p.num_splits - 1) / p.num_splits;
    n_begin = max(n_begin, split * per_split);
    n_end = min(n_end, (split + 1) * per_split);
    split_lo = int64_t(split) * per_split * kN;
    split_hi = min64(seq_k, int64_t(split + 1) * per_split * kN);
  }
  // A kv-cache call that appends here (kv_k_new, the plan's fuse_kv_append): every CTA writes the appended keys
  // of its split (key index from kv_old - k_pos0 on), whether or not its rows see them, so every appended key is
  // written (by the CTAs of the one split that reads it, each before its own loads); no other CTA reads them.
  int append_lo = 0, append_hi = 0;
  if (p.kv_k_new != nullptr) {
    append_lo = static_cast<int>(max64(split_lo, max64(0, int64_t(ext.kv_old) - ext.k_pos0)));
    append_hi = static_cast<int>(split_hi);
  }
  const bool appends = append_lo < append_hi;
  const bool rotate_q = p.rot_cos != nullptr;  // kv cache, fused: q rotated as it is loaded (after K/V go out)
  // ---- what the score modifications need of this thread's rows
  RowCtx rc;
  rc.base = row0 + warp * 16 + g;
  rc.rows_total = rows_total;
  rc.group = p.pack_gqa ? group : 1;
  rc.off = off;
  rc.seq_k = seq_k;
  const int h0 = p.pack_gqa ? hk * group : hy;  // first query head of the CTA
  rc.bh0 = int64_t(b) * p.heads_q + h0;
  rc.slopes = Tr::kExtras && p.alibi != nullptr ? p.alibi + b * p.alibi_batch_stride + h0 : nullptr;
  // Warps whose rows all lie past the end (short queries, decode) skip the math, not the loads.
  const bool warp_active = row0 + warp * 16 < rows_total;

  // ---- Q tile, first K tile
  if (!rotate_q) {
    IO::template load<kM>(
        sQ,
        [&](int row) -> const E* {
          const int r = row0 + row;
          return r < rows_total ? q_bh + row_h(r) * p.q_head_stride + row_i(r) * p.q_row_stride : nullptr;
        },
        p.head_dim, p.aligned16, q_bh, tid);
    cp_async_commit();
  }
  const int64_t k_rs = p.k_row_stride, v_rs = p.v_row_stride;
  // K_n / V_n: rows n*kN.. of this (batch, KV head); rows past seq_k zero-filled. Paged (one uniform
  // branch per tile), tile n's rows come from buffer n & 1: its block-table entries arrive by cp.async in
  // the group of K_{n+1} (so their wait is that tile's wait); at the next iteration's first barrier each
  // thread turns one row's entry into K and V element offsets, read by load_k(n) and load_v(n) after the
  // barriers that follow.
  // The page locator reads k_pos0 from shared memory at each use: a register holding it for the whole key
  // loop pushes the D128 128x64 tile (which serves unpaged calls too) from 80 to 284 spilled bytes.
  __shared__ int sPagePos0;
  auto loc = [&]() { return PageLocator{p.page_size, p.page_div_mul, p.page_div_shift, sPagePos0}; };
  auto first_page = [&](int n) {
    int page, in_page;
    loc().locate(n * kN, page, in_page);
    return page;
  };
  // Entries of the pages tile n reads (n in [n_begin, n_end): its first key is below seq_k).
  auto load_pages = [&](int n) {
    const int first = first_page(n);
    int last, in_page;
    loc().locate(min(n * kN + kN, seq_k) - 1, last, in_page);
    int* dst = sPages + (n & 1) * Tr::kPageSlots;
    for (int e = tid; e <= last - first; e += Tr::kNThreads) cp_async_4(smem_addr(dst + e), table_row + first + e);
  };
  // Tile n's row offsets from its staged entries, each clamped into the pool (the replay rule).
  auto row_offsets = [&](int n) {
    const int* pages = sPages + (n & 1) * Tr::kPageSlots;
    const int first = first_page(n), last_page = p.num_pages - 1;
    for (int r = tid; r < kN; r += Tr::kNThreads) {
      const int j = n * kN + r;
      int64_t ko = 0, vo = 0;
      if (j < seq_k) {
        int page, in_page;
        loc().locate(j, page, in_page);
        int blk = pages[page - first];
        blk = blk < 0 ? 0 : (blk > last_page ? last_page : blk);
        ko = int64_t(blk) * p.k_page_stride + int64_t(in_page) * p.k_row_stride;
        vo = int64_t(blk) * p.v_page_stride + int64_t(in_page) * p.v_row_stride;
      }
      sOffK[(n & 1) * Tr::kPageSlots + r] = ko;
      sOffV[(n & 1) * Tr::kPageSlots + r] = vo;
    }
  };
  auto load_k = [&](int n) {
    if (paged) {
      IO::template load_rows_paged<kN>(sK, k_bh, sOffK + (n & 1) * Tr::kPageSlots, seq_k - n * kN, p.head_dim,
                                       p.aligned16, k_bh, tid);
      if (n > n_begin) load_pages(n - 1);
    } else {
      IO::template load_rows<kN>(sK, k_bh + int64_t(n) * kN * k_rs, k_rs, seq_k - n * kN, p.head_dim, p.aligned16, k_bh,
                                 tid);
    }
  };
  auto load_v = [&](int n) {
    if (paged) {
      IO::template load_rows_paged<kN>(sV, v_bh, sOffV + (n & 1) * Tr::kPageSlots, seq_k - n * kN, p.head_dim,
                                       p.aligned16, v_bh, tid);
    } else {
      IO::template load_rows<kN>(sV, v_bh + int64_t(n) * kN * v_rs, v_rs, seq_k - n * kN, p.head_dim, p.aligned16, v_bh,
                                 tid);
    }
  };
  // The appended keys go to the cache before this CTA's first load (its global stores, then a barrier, then
  // the cp.async reads of any thread); paged, while the first tile's table entries are in flight.
  auto append = [&]() { kv_append_rows<Tr>(p, b, hk, ext.k_pos0, ext.kv_old, ext.kv_row, append_lo, append_hi, tid); };
  if (n_end > n_begin) {
    if (paged) {  // the first tile's entries and offsets, waited for here; each later tile's come a tile ahead
      if (tid == 0) sPagePos0 = ext.k_pos0;
      __syncthreads();
      load_pages(n_end - 1);
      cp_async_commit();
      if (appends) append();
      cp_async_wait<0>();
      __syncthreads();
      row_offsets(n_end - 1);
      __syncthreads();
    } else if (appends) {
      append();
      __syncthreads();
    }
    load_k(n_end - 1);
    cp_async_commit();
    // The first tile's V goes out with its K, in a group of its own: a CTA with one key tile (decode splits,
    // short calls) then waits for one memory round trip instead of two, and S = Q.K^T still starts when K lands.
    load_v(n_end - 1);
    cp_async_commit();
  } else if (appends) {
    append();  // none of them is read here
  }
  if (rotate_q) load_q_rotated<Tr>(sQ, p, q_bh, p.pack_gqa ? group : 1, h0, ext.kv_old, row0, rows_total, tid);

  // Per-lane ldmatrix coordinates (see the fragment layouts in common/row_state.h and attn/ptx.h).
  const LdsmAddr<Tr, kM> lq(smem_addr(sQ), lane & 15, lane >> 4);                              // A from Q
  const LdsmAddr<Tr, kN> lk(smem_addr(sK), (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);  // B from K
  const LdsmAddr<Tr, kN> lv(smem_addr(sV), (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);  // B from V (.trans)

  uint32_t q_frag[Tr::kQInRegs ? kMT : 1][Tr::kQInRegs ? kKS : 1][4];
  if (n_end > n_begin) {
    cp_async_wait<1>();  // Q and the first K landed; the first V may still be in flight
  } else {
    cp_async_wait<0>();
  }
  __syncthreads();
  if constexpr (Tr::kQInRegs) {
    if (warp_active) {
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
        for (int ks = 0; ks < kKS; ++ks) {
          ldmatrix_x4(q_frag[mi][ks], lq.at(warp * 16 + mi * 16 * kW, ks * 2));
        }
    }
  }

  float acc_o[kMT][kDT][4];
  float row_max[kMT][2], row_sum[kMT][2];
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi) {
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mi][dt][e] = 0.f;
    row_max[mi][0] = row_max[mi][1] = -INFINITY;
    row_sum[mi][0] = row_sum[mi][1] = 0.f;
  }

  // ---- main loop over key tiles
#pragma unroll 1
  for (int n = n_end - 1; n >= n_begin; --n) {
    const int j0 = n * kN;
    if (n < n_end - 1) {  // the first tile's K was waited for above and its V is in flight since the prologue
      cp_async_wait<0>();
      __syncthreads();  // K_n landed; every warp is done reading V_{n+1}
    }
    if (paged && n > n_begin) row_offsets(n - 1);  // its entries landed with K_n; read after a barrier below
    if (n < n_end - 1) {
      load_v(n);
      cp_async_commit();
    }

    float s[kMT][kNT][4];
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mi][nt][e] = 0.f;

    if (warp_active) {
      gemm_qk<Tr>(s, q_frag, lq.fresh(), lk.fresh(), warp * 16);
      // Lean kernel: s stays raw (the scale is folded into the softmax's exp2); masks still give -inf.
      if constexpr (Tr::kExtras) scale_scores<kMT, kNT, kW>(s, p, rc, j0, t);
      const bool boundary = j0 + kN > seq_k ||
                            (p.window_right >= 0 && int64_t(j0) + kN - 1 > int64_t(i_lo) + off + p.window_right) ||
                            (Tr::kExtras && p.window_left >= 0 && int64_t(j0) < int64_t(i_hi) + off - p.window_left);
      if (boundary) mask_scores<Tr::kExtras, kMT, kNT, kW>(s, p, rc, j0, t);
    }

    if constexpr (Tr::kEarlyK) {
      // K_{n-1} goes out before V_n has landed: two tiles in flight while this CTA waits (short query
      // tiles are load-bound: decode, chunked prefill).
      __syncthreads();  // every warp is done reading K_n
      if (n > n_begin) {
        load_k(n - 1);
        cp_async_commit();
        cp_async_wait<1>();  // V_n landed; K_{n-1} may still be in flight
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();  // V_n visible to every warp
    } else {
      cp_async_wait<0>();
      __syncthreads();  // V_n landed; every warp is done reading K_n
      if (n > n_begin) {
        load_k(n - 1);
        cp_async_commit();
      }
    }

    if (warp_active) {
      softmax_update<!Tr::kExtras>(s, acc_o, row_max, row_sum, p.score_mul);
      if constexpr (Tr::kExtras) {
        if (p.dropout) apply_dropout<kMT, kNT, kW>(s, p, rc, j0, t);
      }
      gemm_pv<Tr>(acc_o, s, lv.fresh());
    }
  }

  // ---- epilogue: normalize, logsumexp
  constexpr float kLn2 = 0.6931471805599453f;
  float lse[kMT][2];
#pragma unroll
  for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float l = quad_sum(row_sum[mi][r]);
      const bool empty = l == 0.f;  // no visible key: out 0, lse -inf (NaN inputs stay NaN)
      lse[mi][r] = empty ? -INFINITY : row_max[mi][r] * kLn2 + logf(l);
      const float o_scale = empty ? 0.f : (Tr::kExtras && p.dropout ? p.dropout_keep_scale : 1.f) / l;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        acc_o[mi][dt][2 * r] *= o_scale;
        acc_o[mi][dt][2 * r + 1] *= o_scale;
      }
    }

  auto lse_index = [&](int r) -> int64_t {
    const int i = row_i(r), h = row_h(r);
    return varlen ? h * p.lse_head_stride + q_start + i : b * p.lse_batch_stride + h * p.lse_head_stride + i;
  };

  if (p.num_splits > 1) {
    // Partials in float32, straight from registers (8-byte stores).
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = row0 + warp * 16 + mi * 16 * kW + g + 8 * r;
        if (row >= rows_total) continue;
        const int64_t slot = split * p.accum_rows + lse_index(row);
        float* dst = p.oaccum + slot * p.oaccum_stride;
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt)
          *reinterpret_cast<float2*>(dst + dt * 8 + 2 * t) =
              make_float2(acc_o[mi][dt][2 * r], acc_o[mi][dt][2 * r + 1]);
        if (t == 0) p.lse_accum[slot] = lse[mi][r];
      }
    return;
  }

  // O through shared memory (the Q tile's space: each warp only ever read its own Q rows).
  if (warp_active) {
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = warp * 16 + mi * 16 * kW + g + 8 * r;
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt) {
          const uint32_t v2 = pack2<E>(acc_o[mi][dt][2 * r], acc_o[mi][dt][2 * r + 1]);
          *reinterpret_cast<uint32_t*>(sQ + swizzle_offset<Tr>(row, dt, kM) + 2 * t) = v2;
        }
        if (t == 0 && row0 + row < rows_total) p.lse[lse_index(row0 + row)] = lse[mi][r];
      }
  }
  __syncthreads();
  E* o_b = static_cast<E*>(p.o) + (varlen ? q_start * p.o_row_stride : b * p.o_batch_stride);
  IO::template store<kM>(
      sQ,
      [&](int row) -> E* {
        const int r = row0 + row;
        return r < rows_total ? o_b + row_h(r) * p.o_head_stride + row_i(r) * p.o_row_stride : nullptr;
      },
      p.head_dim, p.aligned16, tid);
}

}  // namespace attn::flash
