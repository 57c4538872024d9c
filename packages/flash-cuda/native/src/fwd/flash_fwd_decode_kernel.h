// The decode kernel: calls whose (packed) query rows fit one 16-row tile -- a decode step, GQA heads packed
// -- are a stream of K/V bytes with a little math per byte, and they run at the HBM's speed only if every SM
// keeps a steady amount of K/V in flight. The 64-row forward tile cannot: its one K and one V buffer drain
// at every key tile (wait for K_n, then issue V_n); ncu on an H200 had it at 75% of the DRAM peak where a
// ring like the one below, without the softmax, reads at 87%.
// Here a CTA of DecodeTraits::kNWarps warps (4 over 64-key tiles, two CTAs per SM at D 128; 8 over 128-key
// tiles, one per SM: 'decode_wide', which the plan runs for paged K/V) walks its split's key tiles through a
// ring of DecodeTraits::kStages buffers: at tile i it issues tile i + kStages - 1 into the buffer tile i - 1
// left (once every warp is done with it), waits for tile i alone (cp.async groups) and multiplies it -- so
// kStages tiles are in flight while it waits, and at least kStages - 1 while it multiplies. Each warp takes 16
// keys of each tile against all 16 query rows (S = Q.K^T and O += P.V on mma.sync, its own online softmax), and
// the warps merge (max, sums, O) through shared memory once at the end, into the output or the split-KV
// partials (the combine kernel's format); on sm90 a pair of splits runs as one thread-block cluster and merges
// through its distributed shared memory instead (FwdParams::cluster_splits), so the call is one launch that
// reads nothing back.
//
// Features: the lean set (causal and right window in either alignment, varlen, seqused_k, paged K/V, the kv
// cache with its fused append and rotary, GQA packing, split-KV), any alignment (element-wise loads and
// stores where the tensors are not 16-byte aligned). The plan (dispatch.cu) runs it for lean calls with at
// most 16 packed rows at D <= 128 (more rows run correctly, a row tile each, reading K/V once per tile); the
// key ranges, clamps and the append follow flash_fwd_kernel.h's rules (seq_extents.h, kv_fused.h).
#pragma once
#include <climits>
#include <cstdint>

#include "attn/convert.h"
#include "attn/fast_math.h"
#include "attn/ptx.h"
#include "common/cluster_ops.h"
#include "common/dependent_launch.h"
#include "common/fwd_params.h"
#include "common/kernel_traits.h"
#include "common/row_state.h"
#include "common/seq_extents.h"
#include "common/tile_io.h"
#include "fwd/decode_traits.h"
#include "fwd/fwd_gemm.h"
#include "fwd/kv_fused.h"

namespace attn::flash {

// Key j's K and V element offsets from the CTA's (batch, KV head) bases, j < seq_k: strided rows, or paged rows
// through the block table, each entry clamped into the pool (the replay rule of seq_extents.h).
struct DecodeKvRows {
  int64_t k_row, v_row, k_page, v_page;
  const int* table_row;  // null: not paged
  int last_page;
  PageLocator loc;

  __device__ __forceinline__ void operator()(int j, int64_t& ko, int64_t& vo) const {
    if (table_row == nullptr) {
      ko = int64_t(j) * k_row;
      vo = int64_t(j) * v_row;
      return;
    }
    int page, in_page;
    loc.locate(j, page, in_page);
    int blk = __ldg(table_row + page);
    blk = blk < 0 ? 0 : (blk > last_page ? last_page : blk);
    ko = int64_t(blk) * k_page + int64_t(in_page) * k_row;
    vo = int64_t(blk) * v_page + int64_t(in_page) * v_row;
  }
};

// A key tile loaded element-wise (tensors not 16-byte aligned) into the swizzled K and V buffers; out of line
// so that its temporaries never count against the key loop's registers.
template <typename Tr>
__device__ __noinline__ void load_tile_elementwise(typename Tr::Element* sk, typename Tr::Element* sv,
                                                   const typename Tr::Element* k_bh, const typename Tr::Element* v_bh,
                                                   DecodeKvRows kv_offsets, int n, int seq_k, int d, int tid) {
  constexpr int kN = Tr::kBlockN;
  for (int idx = tid; idx < kN * Tr::kChunksPerRow; idx += Tr::kNThreads) {
    const int row = idx / Tr::kChunksPerRow, chunk = idx % Tr::kChunksPerRow;
    const int j = n * kN + row;
    int64_t ko = 0, vo = 0;
    if (j < seq_k) kv_offsets(j, ko, vo);
    copy_chunk_elementwise<Tr, kN>(sk, j < seq_k ? k_bh + ko : nullptr, row, chunk, d);
    copy_chunk_elementwise<Tr, kN>(sv, j < seq_k ? v_bh + vo : nullptr, row, chunk, d);
  }
}

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads) flash_fwd_decode_kernel(const __grid_constant__ FwdParams p) {
  using E = typename Tr::Element;
  constexpr int kM = Tr::kBlockM, kN = Tr::kBlockN, kS = Tr::kStages, kW = Tr::kNWarps;
  constexpr int kDT = Tr::kDTiles, kKS = Tr::kKSteps;
  dependent_launch_prologue();  // before any global access (common/dependent_launch.h)

  extern __shared__ __align__(128) unsigned char smem_raw[];
  E* sQ = reinterpret_cast<E*>(smem_raw);
  E* ring = sQ + Tr::kSmemQElems;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int split = blockIdx.x % p.num_splits;
  const int m_block = blockIdx.x / p.num_splits;
  const int hy = blockIdx.y, b = blockIdx.z;

  // ---- extents, rows and base pointers (flash_fwd_kernel.h's rules)
  const SeqExtents ext = seq_extents(p, b);
  const int seq_q = ext.seq_q, seq_k = ext.seq_k;
  const int group = p.group;
  const int rows_total = p.pack_gqa ? static_cast<int>(min64(int64_t(seq_q) * group, INT_MAX)) : seq_q;
  const int row0 = m_block * kM;
  if (row0 >= rows_total) return;
  const int hk = p.pack_gqa ? hy : hy / group;
  const int off = p.lower_right ? seq_k - seq_q : 0;
  const bool varlen = p.cu_seqlens_q != nullptr;
  const E* q_bh = static_cast<const E*>(p.q) + (varlen ? ext.q_start * p.q_row_stride : b * p.q_batch_stride);
  const bool paged = p.block_table != nullptr;
  const bool kv_rows = p.kv_cache && !paged;
  const E* k_bh = static_cast<const E*>(p.k) + (varlen ? ext.k_start * p.k_row_stride : b * p.k_batch_stride) +
                  hk * p.k_head_stride +
                  (kv_rows ? ext.kv_row * p.k_page_stride + int64_t(ext.k_pos0) * p.k_row_stride : 0);
  const E* v_bh = static_cast<const E*>(p.v) + (varlen ? ext.k_start * p.v_row_stride : b * p.v_batch_stride) +
                  hk * p.v_head_stride +
                  (kv_rows ? ext.kv_row * p.v_page_stride + int64_t(ext.k_pos0) * p.v_row_stride : 0);
  const int* table_row = paged ? p.block_table + int64_t(b) * p.max_pages_per_seq : nullptr;
  auto row_i = [&](int r) { return p.pack_gqa ? r / group : r; };
  auto row_h = [&](int r) { return p.pack_gqa ? hk * group + r % group : hy; };

  // ---- key-tile range: the causal / right-window band of the tile's rows, then this CTA's split
  const int last_row = min(row0 + kM, rows_total) - 1;
  const int i_lo = row_i(row0), i_hi = row_i(last_row);
  int64_t j_end = seq_k;
  if (p.window_right >= 0) j_end = min64(j_end, int64_t(i_hi) + off + p.window_right + 1);
  int n_begin = 0;
  int n_end = j_end > 0 ? static_cast<int>((j_end + kN - 1) / kN) : 0;
  int64_t split_lo = 0, split_hi = seq_k;
  if (p.num_splits > 1) {
    const int per_split = ((seq_k + kN - 1) / kN + p.num_splits - 1) / p.num_splits;
    n_begin = split * per_split;
    n_end = min(n_end, (split + 1) * per_split);
    split_lo = int64_t(split) * per_split * kN;
    split_hi = min64(seq_k, int64_t(split + 1) * per_split * kN);
  }
  const int n_tiles = max(0, n_end - n_begin);
  int append_lo = 0, append_hi = 0;  // the fused append: this split's appended keys (flash_fwd_kernel.h)
  if (p.kv_k_new != nullptr) {
    append_lo = static_cast<int>(max64(split_lo, max64(0, int64_t(ext.kv_old) - ext.k_pos0)));
    append_hi = static_cast<int>(split_hi);
  }
  if (append_lo < append_hi) {
    kv_append_rows<Tr>(p, b, hk, ext.k_pos0, ext.kv_old, ext.kv_row, append_lo, append_hi, tid);
    __syncthreads();  // the appended rows are in the cache before any thread's cp.async reads them
  }

  // ---- Q (cp.async, or rotated by plain stores), then the ring's first kS - 1 tiles, one group each
  const bool rotate_q = p.rot_cos != nullptr;
  if (!rotate_q) {
    TileIO<Tr>::template load<kM>(
        sQ,
        [&](int row) -> const E* {
          const int r = row0 + row;
          return r < rows_total ? q_bh + row_h(r) * p.q_head_stride + row_i(r) * p.q_row_stride : nullptr;
        },
        p.head_dim, p.aligned16, q_bh, tid);
  }
  cp_async_commit();

  const int chunk = tid % Tr::kChunksPerRow, r0 = tid / Tr::kChunksPerRow;
  const bool col_ok = chunk * 8 < p.head_dim;
  const PageLocator loc{p.page_size, p.page_div_mul, p.page_div_shift, ext.k_pos0};
  const DecodeKvRows kv_offsets{
      p.k_row_stride, p.v_row_stride, p.k_page_stride, p.v_page_stride, table_row, p.num_pages - 1, loc};
  // Paged: the K and V pool offsets of a tile's rows, staged in shared memory for two tiles (sOff[tile & 1][K or
  // V][row]), each row's by thread `row` from its block-table entry: one lookup per row, not one per row and
  // column chunk. Staged for tile t between the barriers that follow the issue of tile t - 2 and precede its own.
  // The entries come by cp.async (copy_entry), 2 kS tiles ahead of their staging, in the groups of the K/V
  // tiles: a plain load of the table issued one tile ahead waited behind the ring's K/V traffic (ncu, H200:
  // the first use of the entry was the paged call's top stall, long scoreboard, 5% of the samples).
  int64_t* sOff = reinterpret_cast<int64_t*>(reinterpret_cast<unsigned char*>(ring) + Tr::kOffsetsAt);
  int* sEnt = reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(ring) + Tr::kEntriesAt);
  // Row `tid`'s entry of tile n (n < n_end, key below seq_k) into slot n % kEntrySlots. Group accounting: the
  // copy for tile n rides in the group committed at loop iteration n - 2 kS; that iteration's group is
  // complete for this thread at iteration n - kS - 1's wait<kS - 1>, before iteration n - kS stages tile n
  // (the prologue copies tiles n_begin .. n_begin + 2 kS - 1 and waits for them). Only this thread reads
  // what it copied, so no barrier is needed; the slot's next copy (tile n + kEntrySlots) comes after.
  auto copy_entry = [&](int n) {
    const int j = n * kN + tid;
    if (tid < kN && n < n_end && j < seq_k) {
      int page, in_page;
      loc.locate(j, page, in_page);
      cp_async_4(smem_addr(sEnt + (n % Tr::kEntrySlots) * kN + tid), table_row + page);
    }
  };
  auto stage_offsets = [&](int n) {
    if (tid < kN) {
      const int j = n * kN + tid;
      int64_t ko = 0, vo = 0;
      if (j < seq_k) {
        int page, in_page;
        loc.locate(j, page, in_page);
        const int last_page = p.num_pages - 1, entry = sEnt[(n % Tr::kEntrySlots) * kN + tid];
        const int64_t blk = entry < 0 ? 0 : (entry > last_page ? last_page : entry);  // the replay rule
        ko = blk * p.k_page_stride + int64_t(in_page) * p.k_row_stride;
        vo = blk * p.v_page_stride + int64_t(in_page) * p.v_row_stride;
      }
      sOff[((n & 1) * 2) * kN + tid] = ko;
      sOff[((n & 1) * 2 + 1) * kN + tid] = vo;
    }
  };
  // Key tile n into ring buffer `slot`, rows past seq_k and columns past head_dim zero-filled: cp.async (paged:
  // at the offsets staged for it), or (tensors not 16-byte aligned) element-wise loads and stores, visible
  // after the barrier before the tile's use.
  auto issue = [&](int n, int slot) {
    E* sk = ring + slot * Tr::kStageElems;
    if (!p.aligned16) {
      load_tile_elementwise<Tr>(sk, sk + Tr::kTileElems, k_bh, v_bh, kv_offsets, n, seq_k, p.head_dim, tid);
      return;
    }
    const uint32_t dk = smem_addr(sk + swizzle_offset<Tr>(r0, chunk, kN));
    const uint32_t dv = dk + Tr::kTileElems * 2;
    constexpr uint32_t kStep = Tr::kRowStep * Tr::kBlockKSmem * 2;
    const int j0 = n * kN + r0;
    if (paged) {
      const int64_t* ok_rows = sOff + ((n & 1) * 2) * kN + r0;
#pragma unroll
      for (int it = 0; it < Tr::kRowsPerThread; ++it) {
        const bool ok = col_ok && j0 + it * Tr::kRowStep < seq_k;
        const int64_t ko = ok_rows[it * Tr::kRowStep], vo = ok_rows[kN + it * Tr::kRowStep];
        cp_async_16(dk + it * kStep, ok ? k_bh + ko + chunk * 8 : k_bh, ok ? 16 : 0);
        cp_async_16(dv + it * kStep, ok ? v_bh + vo + chunk * 8 : v_bh, ok ? 16 : 0);
      }
      return;
    }
    // Strided rows: one pointer step per row; a tile wholly inside seq_k needs no per-row test.
    const E* ks = k_bh + int64_t(j0) * p.k_row_stride + chunk * 8;
    const E* vs = v_bh + int64_t(j0) * p.v_row_stride + chunk * 8;
    const int64_t k_step = int64_t(Tr::kRowStep) * p.k_row_stride, v_step = int64_t(Tr::kRowStep) * p.v_row_stride;
    const bool whole = col_ok && n * kN + kN <= seq_k;
#pragma unroll
    for (int it = 0; it < Tr::kRowsPerThread; ++it) {
      const bool ok = whole || (col_ok && j0 + it * Tr::kRowStep < seq_k);
      cp_async_16(dk + it * kStep, ok ? ks : k_bh, ok ? 16 : 0);
      cp_async_16(dv + it * kStep, ok ? vs : v_bh, ok ? 16 : 0);
      ks += k_step;
      vs += v_step;
    }
  };
  if (paged) {  // the entries of the first 2 kS tiles, in a group of their own, waited for here (with Q's group)
#pragma unroll
    for (int i = 0; i < 2 * kS; ++i) copy_entry(n_begin + i);
    cp_async_commit();
    cp_async_wait<0>();
  }
#pragma unroll
  for (int i = 0; i < kS - 1; ++i) {
    if (i < n_tiles) {
      if (paged) {
        stage_offsets(n_begin + i);
        __syncthreads();
      }
      issue(n_begin + i, i);
    }
    cp_async_commit();
  }
  if (paged && kS - 1 < n_tiles) stage_offsets(n_begin + kS - 1);  // the loop's first issue reads these
  const int h0 = p.pack_gqa ? hk * group : hy;
  if (rotate_q) load_q_rotated<Tr>(sQ, p, q_bh, p.pack_gqa ? group : 1, h0, ext.kv_old, row0, rows_total, tid);

  // ---- the key loop: every warp all 16 rows, keys 16 * warp .. of each tile
  RowCtx rc;
  rc.base = row0 + g;
  rc.rows_total = rows_total;
  rc.group = p.pack_gqa ? group : 1;
  rc.off = off;
  rc.seq_k = seq_k;
  rc.bh0 = 0;
  rc.slopes = nullptr;
  const LdsmAddr<Tr, kM> lq(smem_addr(sQ), lane & 15, lane >> 4);
  const LdsmAddr<Tr, kN> lk(smem_addr(ring), warp * Tr::kKeysPerWarp + (lane & 7) + ((lane >> 4) << 3),
                            (lane >> 3) & 1);
  const LdsmAddr<Tr, kN> lv(smem_addr(ring + Tr::kTileElems),
                            warp * Tr::kKeysPerWarp + (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);
  uint32_t q_frag[1][kKS][4];
  float acc_o[1][kDT][4];
  float row_max[1][2] = {{-INFINITY, -INFINITY}}, row_sum[1][2] = {{0.f, 0.f}};
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_o[0][dt][e] = 0.f;

  // Keys below this are visible to every row of the tile (the first row's right window bound, seq_k).
  const int64_t unmasked_end =
      p.window_right >= 0 ? min64(seq_k, int64_t(i_lo) + off + p.window_right + 1) : int64_t(seq_k);
#pragma unroll 1
  for (int i = 0; i < n_tiles; ++i) {
    // Tile i + kS - 1 goes into the buffer tile i - 1 left as soon as every warp is done with it, before the
    // wait for tile i: kS tiles are in flight while this CTA waits.
    if (i > 0 || paged) __syncthreads();  // (paged: the offsets staged last are visible)
    if (i + kS - 1 < n_tiles) {
      issue(n_begin + i + kS - 1, (i + kS - 1) % kS);
      if (paged) {
        if (i + kS < n_tiles) stage_offsets(n_begin + i + kS);
        copy_entry(n_begin + i + 2 * kS);
      }
    }
    cp_async_commit();
    cp_async_wait<kS - 1>();  // this thread's copies of tile i (and of Q) landed
    __syncthreads();          // everyone's
    if (i == 0) {
#pragma unroll
      for (int ks = 0; ks < kKS; ++ks) ldmatrix_x4(q_frag[0][ks], lq.at(0, ks * 2));
    }

    const int slot = i % kS;
    const int j0 = (n_begin + i) * kN + warp * Tr::kKeysPerWarp;  // the warp's first key
    float s[1][Tr::kNTiles][4];
#pragma unroll
    for (int nt = 0; nt < Tr::kNTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[0][nt][e] = 0.f;
    LdsmAddr<Tr, kN> lks = lk.fresh(), lvs = lv.fresh();
    lks.base += slot * Tr::kStageElems * 2;
    lvs.base += slot * Tr::kStageElems * 2;
    gemm_qk<Tr>(s, q_frag, lq, lks, 0);
    if (j0 + Tr::kKeysPerWarp > unmasked_end) mask_scores<false, 1, Tr::kNTiles, 1>(s, p, rc, j0, t);
    float corr[1][2];
    softmax_probs<true>(s, row_max, row_sum, p.score_mul, corr);
    // O is rescaled only when a row's maximum moved (corr != 1), which after the first tiles is rare: the
    // warp's 64 multiplies per row then drop out of most tiles.
    if (__any_sync(0xffffffffu, corr[0][0] != 1.f || corr[0][1] != 1.f)) rescale_o(acc_o, corr);
    gemm_pv<Tr>(acc_o, s, lvs);
  }

  // ---- merge the warps: O rows, maxima and sums through the (drained) ring
  cp_async_wait<0>();
  __syncthreads();
  float* sO = reinterpret_cast<float*>(ring);
  float* sMax = sO + kW * kM * Tr::kMergeStride;
  float* sSum = sMax + kW * kM;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = g + 8 * r;
    const float l = quad_sum(row_sum[0][r]);
    if (t == 0) {
      sMax[warp * kM + row] = row_max[0][r];
      sSum[warp * kM + row] = l;
    }
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
      *reinterpret_cast<float2*>(sO + (warp * kM + row) * Tr::kMergeStride + dt * 8 + 2 * t) =
          make_float2(acc_o[0][dt][2 * r], acc_o[0][dt][2 * r + 1]);
  }
  __syncthreads();

  constexpr float kLn2 = 0.6931471805599453f;
  auto lse_index = [&](int r) -> int64_t {
    const int i = row_i(r), h = row_h(r);
    return varlen ? h * p.lse_head_stride + ext.q_start + i : b * p.lse_batch_stride + h * p.lse_head_stride + i;
  };
  E* o_b = static_cast<E*>(p.o) + (varlen ? ext.q_start * p.o_row_stride : b * p.o_batch_stride);
  // Row r's normalized columns c8 * 8 .. + 7 and its logsumexp, into out and lse.
  auto store_final = [&](int r, int c8, const float (&o)[8], float lse) {
    E* dst = o_b + row_h(r) * p.o_head_stride + row_i(r) * p.o_row_stride + c8 * 8;
    if (p.aligned16) {
      uint4 packed;
      packed.x = pack2<E>(o[0], o[1]);
      packed.y = pack2<E>(o[2], o[3]);
      packed.z = pack2<E>(o[4], o[5]);
      packed.w = pack2<E>(o[6], o[7]);
      *reinterpret_cast<uint4*>(dst) = packed;
    } else {
      for (int e = 0; e < 8 && c8 * 8 + e < p.head_dim; ++e) dst[e] = from_float<E>(o[e]);
    }
    if (c8 == 0) p.lse[lse_index(r)] = lse;
  };
  // Splits merged in the cluster: this split's O (unnormalized, relative to its row maxima), maxima and sums,
  // after the warps' parts in the ring, for the other CTAs of the cluster to read.
  float* sPartO = sSum + kW * kM;
  float* sPartM = sPartO + kM * Tr::kMergeStride;
  float* sPartL = sPartM + kM;
  // One 8-column chunk of one row per pass: the warps' parts weighted by exp2(max_w - max), over the sum.
  for (int idx = tid; idx < kM * Tr::kChunksPerRow; idx += Tr::kNThreads) {
    const int row = idx / Tr::kChunksPerRow, c8 = idx % Tr::kChunksPerRow;
    const int r = row0 + row;
    if (r >= rows_total || c8 * 8 >= p.head_dim) continue;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kW; ++w) mx = fmaxf(mx, sMax[w * kM + row]);
    const float m_use = mx == -INFINITY ? 0.f : mx;
    float f[kW], l = 0.f;
#pragma unroll
    for (int w = 0; w < kW; ++w) {
      f[w] = exp2_ftz(sMax[w * kM + row] - m_use);
      l += f[w] * sSum[w * kM + row];
    }
    float o[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      float x = 0.f;
#pragma unroll
      for (int w = 0; w < kW; ++w) x += f[w] * sO[(w * kM + row) * Tr::kMergeStride + c8 * 8 + e];
      o[e] = x;
    }
    if (p.cluster_splits) {
      float4* part = reinterpret_cast<float4*>(sPartO + row * Tr::kMergeStride + c8 * 8);
      part[0] = make_float4(o[0], o[1], o[2], o[3]);
      part[1] = make_float4(o[4], o[5], o[6], o[7]);
      if (c8 == 0) {
        sPartM[row] = mx;
        sPartL[row] = l;
      }
      continue;
    }
    const bool empty = l == 0.f;  // no visible key: out 0, lse -inf (NaN inputs stay NaN)
    const float inv = empty ? 0.f : 1.f / l;
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] *= inv;
    const float lse = empty ? -INFINITY : mx * kLn2 + logf(l);
    if (p.num_splits > 1) {
      const int64_t slot = split * p.accum_rows + lse_index(r);
      float4* dst = reinterpret_cast<float4*>(p.oaccum + slot * p.oaccum_stride + c8 * 8);
      dst[0] = make_float4(o[0], o[1], o[2], o[3]);
      dst[1] = make_float4(o[4], o[5], o[6], o[7]);
      if (c8 == 0) p.lse_accum[slot] = lse;
    } else {
      store_final(r, c8, o, lse);
    }
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (p.cluster_splits) {
    // The split-KV CTAs of this row tile are one cluster (cluster rank = split, launch/flash_fwd_decode_launch.h):
    // once every part is written, CTA `split` finishes its share of the (row, chunk) pairs from all the parts in
    // the cluster's shared memory -- no partials in global memory and no combine launch.
    cluster_barrier();
    const int splits = p.num_splits;  // <= kMaxClusterSplits (dispatch.cu)
    const uint32_t part_o = smem_addr(sPartO), part_m = smem_addr(sPartM), part_l = smem_addr(sPartL);
    for (int idx = split * Tr::kNThreads + tid; idx < kM * Tr::kChunksPerRow; idx += splits * Tr::kNThreads) {
      const int row = idx / Tr::kChunksPerRow, c8 = idx % Tr::kChunksPerRow;
      const int r = row0 + row;
      if (r >= rows_total || c8 * 8 >= p.head_dim) continue;
      float ms[kMaxClusterSplits];
      float mx = -INFINITY;
#pragma unroll
      for (int s = 0; s < kMaxClusterSplits; ++s) {
        ms[s] = s < splits ? ld_cluster_f32(cluster_addr(part_m + row * 4, s)) : -INFINITY;
        mx = fmaxf(mx, ms[s]);
      }
      const float m_use = mx == -INFINITY ? 0.f : mx;
      float o[8] = {}, l = 0.f;
#pragma unroll
      for (int s = 0; s < kMaxClusterSplits; ++s) {
        if (s >= splits) break;
        const float fs = exp2_ftz(ms[s] - m_use);  // 0 for a split that saw no key
        l += fs * ld_cluster_f32(cluster_addr(part_l + row * 4, s));
        const uint32_t src = cluster_addr(part_o + (row * Tr::kMergeStride + c8 * 8) * 4, s);
        const float4 a = ld_cluster_f32x4(src), c = ld_cluster_f32x4(src + 16);
        o[0] += fs * a.x, o[1] += fs * a.y, o[2] += fs * a.z, o[3] += fs * a.w;
        o[4] += fs * c.x, o[5] += fs * c.y, o[6] += fs * c.z, o[7] += fs * c.w;
      }
      const bool empty = l == 0.f;  // no split saw a key: out 0, lse -inf (NaN inputs stay NaN)
      const float inv = empty ? 0.f : 1.f / l;
#pragma unroll
      for (int e = 0; e < 8; ++e) o[e] *= inv;
      store_final(r, c8, o, empty ? -INFINITY : mx * kLn2 + logf(l));
    }
    cluster_barrier();  // no CTA leaves while another still reads its part
  }
#endif
}

}  // namespace attn::flash
