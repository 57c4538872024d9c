// The decode kernel: short queries (Sq * group <= 16 rows per KV head) against a long key range, as an
// LLM decode step runs it (sm90 and newer: the split-KV combine uses thread-block clusters).
//
// One CTA: kHeads consecutive KV heads of one batch row and one split of the keys; warp w owns KV head
// hk0 + w and its Sq * group query rows (GQA packed: row = i * group + g, one m16 MMA tile, rows past the
// end zero). Each key tile of kBlockN keys is loaded for all kHeads heads at once, so where K/V are laid out
// [.., S, Hk, D] (the usual cache layout) one tile row is kHeads * D * 2 contiguous bytes, and one stage is
// kBlockN such runs instead of kHeads * kBlockN scattered 256-byte rows. kStages stages of K and V are in
// flight in a cp.async ring (every thread issues; one barrier per tile): the SM keeps kStages - 1 tiles of
// bytes outstanding while the warps compute on the oldest.
//
// Paged K/V: each tile's row offsets come from the block table (entries clamped into the pool, the replay
// rule of seq_extents.h), computed into shared memory a tile ahead of the tile's issue by kBlockN threads.
//
// Split-KV without a second launch: the splits of one (batch, head group) are one cluster (grid.x = splits,
// cluster (splits, 1, 1)). After the key loop each CTA holds O / l and the logsumexp of its rows; the n8
// column tiles of O are dealt round-robin to the cluster's CTAs, each CTA writes every tile it does not own
// into its owner's shared memory (the stage buffers, free once the cluster has passed its first barrier), and
// after the second barrier every CTA merges its own columns and writes them out.
#pragma once
#include <climits>
#include <cstdint>

#include "attn/convert.h"
#include "attn/ptx.h"
#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "common/kernel_traits.h"
#include "common/row_state.h"
#include "common/seq_extents.h"
#include "common/tile_io.h"
#include "fwd/fwd_gemm.h"

namespace attn::flash {

template <int kHeadDim_, int kHeads_, int kBlockN_, int kStages_, typename Element_>
struct DecodeTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;  // the head-dim bucket (64 or 128)
  static constexpr int kHeads = kHeads_;      // KV heads per CTA, one warp each
  static constexpr int kBlockN = kBlockN_;    // keys per stage
  static constexpr int kStages = kStages_;
  static constexpr int kNWarps = kHeads;
  static constexpr int kNThreads = kHeads * 32;
  static constexpr int kMaxSplits = 8;  // the portable cluster size
  static constexpr int kRows = 16;      // query rows per KV head: one m16 tile
  // The per-warp view the shared GEMMs (fwd_gemm.h) and the swizzle (kernel_traits.h) read.
  static constexpr int kBlockM = kRows;
  static constexpr int kMTiles = 1, kNTiles = kBlockN / 8, kDTiles = kHeadDim / 8, kKSteps = kHeadDim / 16,
                       kPSteps = kBlockN / 16;
  static constexpr bool kQInRegs = true;
  static constexpr int kBlockKSmem = 64, kChunksPerBlock = 8, kChunksPerRow = kHeadDim / 8;
  static constexpr int kTileElems = kBlockN * kHeadDim;        // one head's K (or V) tile
  static constexpr int kStageElems = 2 * kHeads * kTileElems;  // K of every head, then V of every head
  static constexpr int kQElems = kHeads * kRows * kHeadDim;
  // Paged calls: per stage the K and V row offsets (int64) of its kBlockN rows.
  static constexpr int kSmemBytes = (kQElems + kStages * kStageElems) * 2 + kStages * kBlockN * 16;
  // The cluster exchange (after the key loop, in the stage buffers): per source split, head and row, the
  // columns this CTA owns (at most ceil(kDTiles / splits) n8 tiles) and the lse.
  // splits * ceil(kDTiles / splits) * 8 <= kHeadDim + 8 * splits columns, plus one lse, per (head, row).
  static constexpr int kExchangeBytes = kHeads * kRows * (kHeadDim + 9 * kMaxSplits) * 4;
  static_assert(kHeadDim % 64 == 0, "the 128-byte swizzle needs D a multiple of 64");
  static_assert(kBlockN % 16 == 0 && kBlockN <= 32 * kHeads, "kBlockN threads stage the page offsets");
  static_assert((kBlockN * kChunksPerRow) % 32 == 0, "tile chunks split evenly over the threads");
  static_assert(kExchangeBytes <= kStages * kStageElems * 2, "the exchange fits in the stage buffers");
};

// Cluster primitives (sm90): a CTA's shared address mapped into CTA `rank` of its cluster, remote stores,
// and the full cluster barrier (release / acquire: shared-memory writes before it are visible after it).
__device__ __forceinline__ uint32_t cluster_map(uint32_t addr, int rank) {
  uint32_t out = addr;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
#endif
  return out;
}
__device__ __forceinline__ void st_cluster_f32x2(uint32_t addr, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
#endif
}
__device__ __forceinline__ void st_cluster_f32(uint32_t addr, float a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(addr), "f"(a) : "memory");
#endif
}
__device__ __forceinline__ void cluster_barrier() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads, 1) decode_kernel(const __grid_constant__ FwdParams p) {
  using E = typename Tr::Element;
  constexpr int kN = Tr::kBlockN, kS = Tr::kStages, kH = Tr::kHeads, kT = Tr::kNThreads;
  constexpr int kNT = Tr::kNTiles, kDT = Tr::kDTiles, kKS = Tr::kKSteps, kCPR = Tr::kChunksPerRow;
  dependent_launch_prologue();  // before any global access (common/dependent_launch.h)

  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* sQ = reinterpret_cast<E*>(smem_raw);
  E* sStages = sQ + Tr::kQElems;
  int64_t* sOff = reinterpret_cast<int64_t*>(sStages + kS * Tr::kStageElems);  // [kS][2][kN]

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int splits = p.num_splits, split = blockIdx.x;
  const int hk0 = blockIdx.y * kH, hk = hk0 + warp, b = blockIdx.z;

  const SeqExtents ext = seq_extents(p, b);
  const int seq_q = ext.seq_q, seq_k = ext.seq_k;
  const int group = p.group;
  // Rows of one KV head: (i, g) pairs, at most kRows (the plan's condition; clamped for any replayed length).
  const int rows_total = int64_t(seq_q) * group < Tr::kRows ? seq_q * group : Tr::kRows;
  const int off = p.lower_right ? seq_k - seq_q : 0;
  const bool varlen = p.cu_seqlens_q != nullptr;
  const bool paged = p.block_table != nullptr;
  const bool warp_active = hk < p.heads_k && rows_total > 0;

  // ---- key-tile range of this split (the causal / window band's right edge from the last row)
  int64_t j_end = seq_k;
  if (p.window_right >= 0 && rows_total > 0) {
    const int64_t band_end = int64_t((rows_total - 1) / group) + off + p.window_right + 1;
    j_end = band_end < j_end ? (band_end > 0 ? band_end : 0) : j_end;
  }
  const int tiles = static_cast<int>((j_end + kN - 1) / kN);
  const int per_split = ((seq_k + kN - 1) / kN + splits - 1) / splits;
  const int n_begin = split * per_split;
  const int n_end = min(tiles, n_begin + per_split);
  const int n_tiles = rows_total > 0 && n_end > n_begin ? n_end - n_begin : 0;

  const E* q_b = static_cast<const E*>(p.q) + (varlen ? ext.q_start * p.q_row_stride : b * p.q_batch_stride);
  const E* k_b = static_cast<const E*>(p.k) + (varlen ? ext.k_start * p.k_row_stride : b * p.k_batch_stride);
  const E* v_b = static_cast<const E*>(p.v) + (varlen ? ext.k_start * p.v_row_stride : b * p.v_batch_stride);
  const int* table_row = paged ? p.block_table + int64_t(b) * p.max_pages_per_seq : nullptr;
  const PageLocator loc{p.page_size, p.page_div_mul, p.page_div_shift, ext.k_pos0};

  // Paged: row r of tile n as K and V element offsets in the pools, staged in slot `slot` by kBlockN threads:
  // page_entry reads the row's block-table entry (issued before the tile's math, so its latency hides
  // behind it), stage_offsets writes the offsets after it.
  auto page_entry = [&](int n) -> int {
    const int j = n * kN + tid;
    if (tid >= kN || j >= seq_k) return 0;
    int page, in_page;
    loc.locate(j, page, in_page);
    return table_row[page];
  };
  auto stage_offsets = [&](int n, int entry, int slot) {
    const int j = n * kN + tid;
    if (tid >= kN) return;
    int64_t ko = 0, vo = 0;
    if (j < seq_k) {
      int page, in_page;
      loc.locate(j, page, in_page);
      const int blk = entry < 0 ? 0 : (entry >= p.num_pages ? p.num_pages - 1 : entry);
      ko = int64_t(blk) * p.k_page_stride + int64_t(in_page) * p.k_row_stride;
      vo = int64_t(blk) * p.v_page_stride + int64_t(in_page) * p.v_row_stride;
    }
    sOff[(slot * 2) * kN + tid] = ko;
    sOff[(slot * 2 + 1) * kN + tid] = vo;
  };
  // Tile n of every head of the CTA into stage `slot`: K then V, 16-byte chunks, consecutive threads on
  // consecutive chunks of one key row (its kHeads heads side by side where the layout is [.., S, Hk, D]).
  auto issue = [&](int n, int slot) {
    E* sK = sStages + slot * Tr::kStageElems;
    E* sV = sK + kH * Tr::kTileElems;
    const int64_t* offk = sOff + (slot * 2) * kN;
    const int64_t* offv = offk + kN;
#pragma unroll
    for (int it = 0; it < kN * kH * kCPR / kT; ++it) {
      const int idx = it * kT + tid;
      const int row = idx / (kH * kCPR), h = (idx / kCPR) % kH, c = idx % kCPR;
      const int j = n * kN + row;
      const bool ok = j < seq_k && hk0 + h < p.heads_k && c * 8 < p.head_dim;
      const int dst = h * Tr::kTileElems + swizzle_offset<Tr>(row, c, kN);
      const int64_t ko = paged ? offk[row] : int64_t(j) * p.k_row_stride;
      const int64_t vo = paged ? offv[row] : int64_t(j) * p.v_row_stride;
      const E* ks = k_b + (hk0 + h) * p.k_head_stride + ko + c * 8;
      const E* vs = v_b + (hk0 + h) * p.v_head_stride + vo + c * 8;
      cp_async_16(smem_addr(sK + dst), ok ? ks : k_b, ok ? 16 : 0);
      cp_async_16(smem_addr(sV + dst), ok ? vs : v_b, ok ? 16 : 0);
    }
  };

  // ---- prologue: Q (each warp its rows), the first kStages - 1 tiles
  if (paged) {
    int entries[kS];
#pragma unroll
    for (int k = 0; k < kS; ++k) entries[k] = k < n_tiles ? page_entry(n_begin + k) : 0;
#pragma unroll
    for (int k = 0; k < kS; ++k)
      if (k < n_tiles) stage_offsets(n_begin + k, entries[k], k);
    __syncthreads();
  }
  {
    E* sQw = sQ + warp * Tr::kRows * Tr::kHeadDim;
    const E* q_h = q_b + int64_t(hk) * group * p.q_head_stride;
#pragma unroll
    for (int it = 0; it < Tr::kRows * kCPR / 32; ++it) {
      const int idx = it * 32 + lane, row = idx / kCPR, c = idx % kCPR;
      const bool ok = warp_active && row < rows_total && c * 8 < p.head_dim;
      const E* src = q_h + (row % group) * p.q_head_stride + (row / group) * p.q_row_stride + c * 8;
      cp_async_16(smem_addr(sQw + swizzle_offset<Tr>(row, c, Tr::kRows)), ok ? src : q_b, ok ? 16 : 0);
    }
  }
#pragma unroll
  for (int k = 0; k < kS - 1; ++k) {
    if (k < n_tiles) issue(n_begin + k, k);
    cp_async_commit();  // Q rides in the first group
  }

  const uint32_t sQw_addr = smem_addr(sQ + warp * Tr::kRows * Tr::kHeadDim);
  const LdsmAddr<Tr, Tr::kRows> lq(sQw_addr, lane & 15, lane >> 4);
  uint32_t q_frag[1][kKS][4];
  float acc_o[1][kDT][4];
  float row_max[1][2], row_sum[1][2];
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_o[0][dt][e] = 0.f;
  row_max[0][0] = row_max[0][1] = -INFINITY;
  row_sum[0][0] = row_sum[0][1] = 0.f;

  RowCtx rc;
  rc.base = g;
  rc.rows_total = rows_total > 0 ? rows_total : 1;
  rc.group = group;
  rc.off = off;
  rc.seq_k = seq_k;
  rc.bh0 = 0;
  rc.slopes = nullptr;

  // ---- the key loop: wait for the oldest stage, refill the stage freed by the previous tile, compute
#pragma unroll 1
  for (int it = 0; it < n_tiles; ++it) {
    const int n = n_begin + it, slot = it % kS;
    cp_async_wait<kS - 2>();
    __syncthreads();  // tile n landed for every thread; every warp is done with the previous tile's stage
    if (it == 0 && warp_active) {
#pragma unroll
      for (int ks = 0; ks < kKS; ++ks) ldmatrix_x4(q_frag[0][ks], lq.at(0, ks * 2));
    }
    if (it + kS - 1 < n_tiles) issue(n + kS - 1, (it + kS - 1) % kS);
    cp_async_commit();
    // Paged: the block-table entries of the tile after that one (staged below, in the slot this tile's issue
    // read kStages - 1 tiles ago).
    const bool stage_next = paged && it + kS < n_tiles;
    const int entry = stage_next ? page_entry(n + kS) : 0;

    if (warp_active) {
      const E* sK = sStages + slot * Tr::kStageElems + warp * Tr::kTileElems;
      const E* sV = sK + kH * Tr::kTileElems;
      const LdsmAddr<Tr, kN> lk(smem_addr(sK), (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
      const LdsmAddr<Tr, kN> lv(smem_addr(sV), (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);
      float s[1][kNT][4];
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[0][nt][e] = 0.f;
      gemm_qk<Tr>(s, q_frag, lq, lk, 0);
      const int j0 = n * kN;
      const bool boundary = j0 + kN > seq_k || (p.window_right >= 0 && int64_t(j0) + kN - 1 > off + p.window_right);
      if (boundary) mask_scores<false, 1, kNT, 1>(s, p, rc, j0, t);
      softmax_update<true>(s, acc_o, row_max, row_sum, p.score_mul);
      gemm_pv<Tr>(acc_o, s, lv);
    }
    if (stage_next) stage_offsets(n + kS, entry, slot);
  }
  cp_async_wait<0>();

  // ---- this split's O / l and logsumexp (natural log) per row
  constexpr float kLn2 = 0.6931471805599453f;
  float lse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float l = quad_sum(row_sum[0][r]);
    const bool empty = l == 0.f;  // no visible key: O 0, lse -inf (NaN inputs stay NaN)
    lse[r] = empty ? -INFINITY : row_max[0][r] * kLn2 + logf(l);
    const float o_scale = empty ? 0.f : 1.f / l;
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt) {
      acc_o[0][dt][2 * r] *= o_scale;
      acc_o[0][dt][2 * r + 1] *= o_scale;
    }
  }
  E* o_b = static_cast<E*>(p.o) + (varlen ? ext.q_start * p.o_row_stride : b * p.o_batch_stride);
  auto out_row = [&](int row) {
    return o_b + (int64_t(hk) * group + row % group) * p.o_head_stride + int64_t(row / group) * p.o_row_stride;
  };
  auto lse_at = [&](int row) -> float* {
    const int64_t h = int64_t(hk) * group + row % group, i = row / group;
    return p.lse +
           (varlen ? h * p.lse_head_stride + ext.q_start + i : b * p.lse_batch_stride + h * p.lse_head_stride + i);
  };

  if (splits == 1) {
    if (!warp_active) return;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = g + 8 * r;
      if (row >= rows_total) continue;
      E* dst = out_row(row);
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const int col = dt * 8 + 2 * t;
        if (col < p.head_dim)
          *reinterpret_cast<uint32_t*>(dst + col) = pack2<E>(acc_o[0][dt][2 * r], acc_o[0][dt][2 * r + 1]);
      }
      if (t == 0) *lse_at(row) = lse[r];
    }
    return;
  }

  // ---- split-KV merge inside the cluster. Exchange layout in each CTA (floats, in the stage buffers):
  // xo[src][head][row][own_cols] (the n8 tiles dt with dt % splits == this CTA's rank), then xl[src][head][row].
  const int own_tiles = (kDT + splits - 1) / splits, own_cols = own_tiles * 8;
  float* xo = reinterpret_cast<float*>(sStages);
  float* xl = xo + splits * kH * Tr::kRows * own_cols;
  cluster_barrier();  // every CTA of the cluster is past its key loop: the stage buffers are free
  if (warp_active) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = g + 8 * r;
      if (row >= rows_total) continue;
      const int xrow = (split * kH + warp) * Tr::kRows + row;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const int owner = dt % splits;
        const uint32_t a = cluster_map(smem_addr(xo + xrow * own_cols + (dt / splits) * 8 + 2 * t), owner);
        st_cluster_f32x2(a, acc_o[0][dt][2 * r], acc_o[0][dt][2 * r + 1]);
      }
      for (int dst = t; dst < splits; dst += 4) st_cluster_f32(cluster_map(smem_addr(xl + xrow), dst), lse[r]);
    }
  }
  cluster_barrier();  // every CTA's columns have arrived
  if (!warp_active) return;
  for (int e = lane; e < rows_total * own_cols; e += 32) {
    const int row = e / own_cols, lc = e % own_cols;
    const int dt = (lc / 8) * splits + split, col = dt * 8 + lc % 8;
    if (dt >= kDT) continue;  // the last owned tile of a rank past the head dim
    float mx = -INFINITY;
    for (int s = 0; s < splits; ++s) mx = fmaxf(mx, xl[(s * kH + warp) * Tr::kRows + row]);
    float sum = 0.f, acc = 0.f;
    if (mx != -INFINITY) {
      for (int s = 0; s < splits; ++s) {
        const int xrow = (s * kH + warp) * Tr::kRows + row;
        const float w = expf(xl[xrow] - mx);
        sum += w;
        acc += w * xo[xrow * own_cols + lc];
      }
    }
    const bool empty = sum == 0.f;  // every split saw no key (NaN partials stay NaN)
    if (col < p.head_dim) out_row(row)[col] = from_float<E>(empty ? 0.f : acc / sum);
    if (split == 0 && lc == 0) *lse_at(row) = empty ? -INFINITY : mx + logf(sum);
  }
}

}  // namespace attn::flash
