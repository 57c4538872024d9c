// The decode forward kernel: calls whose (packed) query rows fit one 16-row MMA tile -- decode with GQA
// packed (Sq * group <= 16), short queries -- are bound by the K/V bytes, not by math. Where the
// sm80-family kernel gives a CTA 64 query rows (4 warps x 16, only 4 real at decode) and one K/V tile
// behind CTA-wide barriers, here the 16 rows are shared by every warp and the warps split the keys:
//
//   CTA (split, KV head or head, batch): key tiles of kBlockN = kNWarps * kKeys keys within its split;
//   warp w: keys [n * kBlockN + w * kKeys, + kKeys) of each CTA tile n, with its own ring of kStages
//           K/V stages in shared memory filled by cp.async (kStages - 1 tiles in flight per warp) and its
//           own online-softmax state. No CTA barrier in the key loop: a warp waits only for its own
//           copies (cp.async.wait_group + __syncwarp), so the loads of one warp run on while another
//           computes.
//   epilogue: one barrier, the warps' (max, sum, O) merged through shared memory (the stage ring's
//           space), then O / l and the logsumexp (or, with split-KV, the float32 partials).
//
// Lean feature set (FwdTraits kExtras = false: no ALiBi, softcap, dropout or left window bound; the scale
// folded into exp2). Causal / right window, varlen, seqused_k, packed GQA, split-KV and paged K/V (block
// table, entries clamped into the pool: the replay rule of seq_extents.h) are runtime, as in
// flash_fwd_kernel.h; every row of the grid's m_blocks is handled, so a forced decode kernel runs any lean
// call, only slower where rows > 16.
#pragma once
#include <climits>
#include <cstdint>

#include "fwd_gemm.h"
#include "fwd_params.h"
#include "kernel_traits.h"
#include "ptx.h"
#include "row_state.h"
#include "seq_extents.h"
#include "tile_io.h"

namespace attn::flash {

template <int kHeadDim_, int kKeys_, int kStages_, int kNWarps_, typename Element_>
struct DecodeTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = 16;           // query rows per CTA: one MMA row tile, shared by every warp
  static constexpr int kKeys = kKeys_;         // keys per warp tile
  static constexpr int kStages = kStages_;     // K/V stages per warp
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kNThreads = kNWarps * 32;
  static constexpr int kBlockN = kKeys * kNWarps;  // keys per CTA tile (the split-KV unit)
  static constexpr bool kQInRegs = true;
  static constexpr bool kExtras = false;
  // The one-warp view gemm_qk / gemm_pv (fwd_gemm.h) and the swizzle helpers (kernel_traits.h) read.
  static constexpr int kMTiles = 1;
  static constexpr int kNTiles = kKeys / 8;
  static constexpr int kDTiles = kHeadDim / 8;
  static constexpr int kKSteps = kHeadDim / 16;
  static constexpr int kPSteps = kKeys / 16;
  static constexpr int kBlockKSmem = kHeadDim % 64 == 0 ? 64 : 32;
  static constexpr int kChunksPerBlock = kBlockKSmem / 8;
  static constexpr int kChunksPerRow = kHeadDim / 8;
  static constexpr int kRowStep = 32 / kChunksPerRow;  // rows one warp-wide copy instruction covers

  static constexpr int kTileElems = kKeys * kHeadDim;
  // Per warp: its Q tile, then kStages x (K tile, V tile).
  static constexpr int kWarpElems = kBlockM * kHeadDim + kStages * 2 * kTileElems;
  static constexpr int kSmemBytes = kNWarps * kWarpElems * 2;
  static constexpr int kPagedSmemBytes = kSmemBytes;  // paged offsets travel by warp shuffles
  // The epilogue's merge reuses the same space: per warp 16 rows of O (float32) plus (max, sum).
  static constexpr int kMergeBytes = kNWarps * kBlockM * (kHeadDim + 2) * 4;
  // CTAs per SM the shared memory allows (227 KB per SM for CTAs on sm90, 1 KB reserved per CTA).
  static constexpr int kMinBlocks = (227 * 1024) / (kSmemBytes + 1024) > 0 ? (227 * 1024) / (kSmemBytes + 1024) : 1;

  static_assert(kKeys == 16 || kKeys == 32, "a warp tile is 16 or 32 keys (one key per lane for paged offsets)");
  static_assert(kStages >= 2, "at least one tile in flight while one is read");
  static_assert(kHeadDim % 64 == 0 && kChunksPerRow <= 32 && 32 % kChunksPerRow == 0, "D 64, 128 or 256");
  static_assert(kMergeBytes <= kSmemBytes, "the merge fits in the stage ring");
};

template <typename Tr>
struct DecodeIO {
  using E = typename Tr::Element;
  // Element-wise copies of one warp's rows [0, kRows) (misaligned tensors): row_ptr(row) or nullptr
  // (zero-filled); columns >= d zero. Out of line so its temporaries never weigh on the key loop.
  template <int kRows, typename RowPtr>
  __device__ __noinline__ static void load_elementwise(E* smem, RowPtr row_ptr, int d, int lane) {
    for (int idx = lane; idx < kRows * Tr::kChunksPerRow; idx += 32) {
      const int row = idx / Tr::kChunksPerRow, chunk = idx % Tr::kChunksPerRow;
      copy_chunk_elementwise<Tr, kRows>(smem, row_ptr(row), row, chunk, d);
    }
  }
};

template <typename Tr>
__global__ void __launch_bounds__(Tr::kNThreads, Tr::kMinBlocks) flash_fwd_decode_kernel(const __grid_constant__ FwdParams p) {
  using E = typename Tr::Element;
  using IO = DecodeIO<Tr>;
  constexpr int kK = Tr::kKeys, kS = Tr::kStages, kW = Tr::kNWarps, kD = Tr::kHeadDim, kN = Tr::kBlockN;
  constexpr int kNT = Tr::kNTiles, kDT = Tr::kDTiles, kKS = Tr::kKSteps, kCPR = Tr::kChunksPerRow;
  constexpr int kRowStep = Tr::kRowStep;
  constexpr int kStageBytes = 2 * Tr::kTileElems * 2;

  extern __shared__ __align__(128) unsigned char smem_raw[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  E* sQ = reinterpret_cast<E*>(smem_raw) + warp * Tr::kWarpElems;
  E* sKV = sQ + Tr::kBlockM * kD;  // stage s: K at sKV + 2 s kTileElems, V behind it

  const int split = blockIdx.x % p.num_splits;
  const int m_block = blockIdx.x / p.num_splits;
  const int hy = blockIdx.y, b = blockIdx.z;

  // ---- this CTA's sequence extents (clamped: seq_extents.h) and row -> (i, h) mapping
  const SeqExtents ext = seq_extents(p, b);
  const int seq_q = ext.seq_q, seq_k = ext.seq_k;
  const int64_t q_start = ext.q_start, k_start = ext.k_start;
  const int group = p.group;
  const int64_t packed_rows = int64_t(seq_q) * group;
  const int rows_total = p.pack_gqa ? static_cast<int>(packed_rows < INT_MAX ? packed_rows : INT_MAX) : seq_q;
  const int row0 = m_block * Tr::kBlockM;
  if (row0 >= rows_total) return;  // uniform over the CTA
  const int hk = p.pack_gqa ? hy : hy / group;
  const int off = p.lower_right ? seq_k - seq_q : 0;
  const bool varlen = p.cu_seqlens_q != nullptr;
  const bool paged = p.block_table != nullptr;  // then k_start is 0: rows come from the pages
  const E* q_bh = static_cast<const E*>(p.q) + (varlen ? q_start * p.q_row_stride : b * p.q_batch_stride);
  const E* k_bh = static_cast<const E*>(p.k) + (varlen ? k_start * p.k_row_stride : b * p.k_batch_stride) +
                  hk * p.k_head_stride;
  const E* v_bh = static_cast<const E*>(p.v) + (varlen ? k_start * p.v_row_stride : b * p.v_batch_stride) +
                  hk * p.v_head_stride;
  const int* table_row = paged ? p.block_table + int64_t(b) * p.max_pages_per_seq : nullptr;
  auto row_i = [&](int r) { return p.pack_gqa ? r / group : r; };
  auto row_h = [&](int r) { return p.pack_gqa ? hk * group + r % group : hy; };

  // ---- CTA tiles of this split (no left window in the lean set: the range starts at key 0)
  const int last_row = min(row0 + Tr::kBlockM, rows_total) - 1;
  const int i_lo = row_i(row0), i_hi = row_i(last_row);
  int64_t j_end = seq_k;
  if (p.window_right >= 0) j_end = j_end < int64_t(i_hi) + off + p.window_right + 1 ? j_end : int64_t(i_hi) + off + p.window_right + 1;
  int n_begin = 0;
  int n_end = j_end > 0 ? static_cast<int>((j_end + kN - 1) / kN) : 0;
  if (p.num_splits > 1) {
    const int per_split = ((seq_k + kN - 1) / kN + p.num_splits - 1) / p.num_splits;
    n_begin = split * per_split;
    n_end = min(n_end, (split + 1) * per_split);
  }
  const int n_count = n_end > n_begin ? n_end - n_begin : 0;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The combine kernel (launched as a programmatic dependent) may start its prologue now; its
  // griddepcontrol.wait still waits for this whole grid and its memory.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif

  // ---- Q: this warp's copy of the 16 rows (zero past the end)
  auto q_row = [&](int row) -> const E* {
    const int r = row0 + row;
    return r < rows_total ? q_bh + row_h(r) * p.q_head_stride + row_i(r) * p.q_row_stride : nullptr;
  };
  if (p.aligned16) {
#pragma unroll
    for (int it = 0; it < Tr::kBlockM * kCPR / 32; ++it) {
      const int idx = it * 32 + lane, row = idx / kCPR, chunk = idx % kCPR;
      const E* src = q_row(row);
      const bool ok = src != nullptr && chunk * 8 < p.head_dim;
      cp_async_16(smem_addr(sQ + swizzle_offset<Tr>(row, chunk, Tr::kBlockM)), ok ? src + chunk * 8 : q_bh, ok ? 16 : 0);
    }
  } else {
    IO::template load_elementwise<Tr::kBlockM>(sQ, q_row, p.head_dim, lane);
  }
  cp_async_commit();

  // ---- K/V tile of CTA tile n into stage st: keys j0 + r, r < kK, j0 = n kBlockN + warp kKeys.
  // Paged: lane r % kK holds key j0 + r's page entry (read one tile ahead, clamped into the pool) and
  // turns it into K and V element offsets; the copying lanes take them by shuffle.
  const PageLocator loc{p.page_size, p.page_div_mul, p.page_div_shift, ext.k_pos0};
  const int last_page = p.num_pages - 1;
  auto page_entry = [&](int n) -> int {  // this lane's block-table entry for tile n, or 0 past the end
    const int j = n * kN + warp * kK + (lane % kK);
    if (n >= n_end || j >= seq_k) return 0;
    int page, in_page;
    loc.locate(j, page, in_page);
    return table_row[page];
  };
  int entry_next = paged && n_count > 0 ? page_entry(n_begin) : 0;
  const int chunk = lane % kCPR, r0 = lane / kCPR;
  const bool col_ok = chunk * 8 < p.head_dim;
  const uint32_t kv_base = smem_addr(sKV);
  auto issue = [&](int n, int st) {
    const int j0 = n * kN + warp * kK;
    const int valid = seq_k - j0;  // rows r < valid are real keys
    E* sk = sKV + st * 2 * Tr::kTileElems;
    E* sv = sk + Tr::kTileElems;
    int64_t ko = 0, vo = 0;
    if (paged) {
      const int j = j0 + (lane % kK);
      if (j < seq_k) {
        int page, in_page;
        loc.locate(j, page, in_page);
        const int blk = entry_next < 0 ? 0 : (entry_next > last_page ? last_page : entry_next);
        ko = int64_t(blk) * p.k_page_stride + int64_t(in_page) * p.k_row_stride;
        vo = int64_t(blk) * p.v_page_stride + int64_t(in_page) * p.v_row_stride;
      }
      entry_next = page_entry(n + 1);  // its latency hides behind this tile's copies and compute
    }
    if (p.aligned16) {
      const uint32_t dk = kv_base + st * kStageBytes, dv = dk + Tr::kTileElems * 2;
#pragma unroll
      for (int it = 0; it < kK / kRowStep; ++it) {
        const int r = r0 + it * kRowStep;
        const bool ok = col_ok && r < valid;
        const E* ks;
        const E* vs;
        if (paged) {
          ks = k_bh + __shfl_sync(0xffffffffu, ko, r) + chunk * 8;
          vs = v_bh + __shfl_sync(0xffffffffu, vo, r) + chunk * 8;
        } else {
          ks = k_bh + int64_t(j0 + r) * p.k_row_stride + chunk * 8;
          vs = v_bh + int64_t(j0 + r) * p.v_row_stride + chunk * 8;
        }
        const uint32_t so = swizzle_offset<Tr>(r, chunk, kK) * 2;
        cp_async_16(dk + so, ok ? ks : k_bh, ok ? 16 : 0);
        cp_async_16(dv + so, ok ? vs : v_bh, ok ? 16 : 0);
      }
    } else {
      // Misaligned tensors: element-wise, the offsets through shuffles first (every lane takes part).
      int64_t kofs[kK], vofs[kK];
#pragma unroll
      for (int r = 0; r < kK; ++r) {
        kofs[r] = paged ? __shfl_sync(0xffffffffu, ko, r) : int64_t(j0 + r) * p.k_row_stride;
        vofs[r] = paged ? __shfl_sync(0xffffffffu, vo, r) : int64_t(j0 + r) * p.v_row_stride;
      }
      IO::template load_elementwise<kK>(sk, [&](int r) -> const E* { return r < valid ? k_bh + kofs[r] : nullptr; },
                                        p.head_dim, lane);
      IO::template load_elementwise<kK>(sv, [&](int r) -> const E* { return r < valid ? v_bh + vofs[r] : nullptr; },
                                        p.head_dim, lane);
    }
  };

  // ---- prologue: kStages - 1 tiles in flight (empty groups past the end keep the group count fixed)
#pragma unroll
  for (int i = 0; i < kS - 1; ++i) {
    if (i < n_count) issue(n_begin + i, i);
    cp_async_commit();
  }

  uint32_t q_frag[1][kKS][4];
  cp_async_wait<kS - 1>();  // the Q group, the oldest
  __syncwarp();
  const LdsmAddr<Tr, Tr::kBlockM> lq(smem_addr(sQ), lane & 15, lane >> 4);
#pragma unroll
  for (int ks = 0; ks < kKS; ++ks) ldmatrix_x4(q_frag[0][ks], lq.at(0, ks * 2));

  const LdsmAddr<Tr, kK> lk0(kv_base, (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
  const LdsmAddr<Tr, kK> lv0(kv_base + Tr::kTileElems * 2, (lane & 7) + (((lane >> 3) & 1) << 3), lane >> 4);

  RowCtx rc;
  rc.base = row0 + g;
  rc.rows_total = rows_total;
  rc.group = p.pack_gqa ? group : 1;
  rc.off = off;
  rc.seq_k = seq_k;
  rc.bh0 = 0;
  rc.slopes = nullptr;

  float acc_o[1][kDT][4];
  float row_max[1][2], row_sum[1][2];
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_o[0][dt][e] = 0.f;
  row_max[0][0] = row_max[0][1] = -INFINITY;
  row_sum[0][0] = row_sum[0][1] = 0.f;

  // ---- key loop: tile i in stage i % kS; tile i + kS - 1 goes out into the stage tile i - 1 left
#pragma unroll 1
  for (int i = 0; i < n_count; ++i) {
    if (i + kS - 1 < n_count) issue(n_begin + i + kS - 1, (i + kS - 1) % kS);
    cp_async_commit();
    cp_async_wait<kS - 1>();  // tile i landed (this lane's copies)
    __syncwarp();             // ... and every lane's
    const int st = i % kS;
    const int j0 = (n_begin + i) * kN + warp * kK;
    LdsmAddr<Tr, kK> lk = lk0, lv = lv0;
    lk.base += st * kStageBytes;
    lv.base += st * kStageBytes;

    float s[1][kNT][4];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[0][nt][e] = 0.f;
    gemm_qk<Tr>(s, q_frag, lk, lk, 0);
    const bool boundary = j0 + kK > seq_k ||
                          (p.window_right >= 0 && int64_t(j0) + kK - 1 > int64_t(i_lo) + off + p.window_right);
    if (boundary) mask_scores<false, 1, kNT, 1>(s, p, rc, j0, t);
    softmax_update<true>(s, acc_o, row_max, row_sum, p.score_mul);
    gemm_pv<Tr>(acc_o, s, lv);
    __syncwarp();  // every lane is done reading stage st before the next iteration refills it
  }

  // ---- merge the warps' states through shared memory (the stage ring's space)
  cp_async_wait<0>();
  __syncthreads();
  float* sO = reinterpret_cast<float*>(smem_raw);  // [kW][16][kD]
  float* sML = sO + kW * Tr::kBlockM * kD;         // [kW][16][2]: max (log2 units), sum
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = g + 8 * r;
    const float l = quad_sum(row_sum[0][r]);
    if (t == 0) {
      sML[(warp * Tr::kBlockM + row) * 2] = row_max[0][r];
      sML[(warp * Tr::kBlockM + row) * 2 + 1] = l;
    }
    float* dst = sO + (warp * Tr::kBlockM + row) * kD + 2 * t;
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
      *reinterpret_cast<float2*>(dst + dt * 8) = make_float2(acc_o[0][dt][2 * r], acc_o[0][dt][2 * r + 1]);
  }
  __syncthreads();

  constexpr int kCols = Tr::kBlockM * kD / Tr::kNThreads;  // columns per thread, one row per thread group
  static_assert(kCols % 4 == 0 && kD % kCols == 0, "whole float4 column slices");
  const int row = tid / (kD / kCols), c0 = (tid % (kD / kCols)) * kCols;
  const int r = row0 + row;
  if (r >= rows_total) return;
  float m = -INFINITY;
#pragma unroll
  for (int w = 0; w < kW; ++w) m = fmaxf(m, sML[(w * Tr::kBlockM + row) * 2]);
  float wgt[kW], l = 0.f;
#pragma unroll
  for (int w = 0; w < kW; ++w) {
    const float mw = sML[(w * Tr::kBlockM + row) * 2];
    wgt[w] = mw == -INFINITY ? 0.f : exp2f(mw - m);  // a warp that saw no visible key weighs 0
    l += wgt[w] * sML[(w * Tr::kBlockM + row) * 2 + 1];
  }
  constexpr float kLn2 = 0.6931471805599453f;
  const bool empty = l == 0.f;  // no visible key: out 0, lse -inf (NaN inputs stay NaN)
  const float lse = empty ? -INFINITY : m * kLn2 + logf(l);
  const float inv = empty ? 0.f : 1.f / l;
  float o[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) o[c] = 0.f;
#pragma unroll
  for (int w = 0; w < kW; ++w) {
    const float* src = sO + (w * Tr::kBlockM + row) * kD + c0;
#pragma unroll
    for (int c = 0; c < kCols; c += 4) {
      const float4 x = *reinterpret_cast<const float4*>(src + c);
      o[c] += wgt[w] * x.x;
      o[c + 1] += wgt[w] * x.y;
      o[c + 2] += wgt[w] * x.z;
      o[c + 3] += wgt[w] * x.w;
    }
  }
  const int i = row_i(r), h = row_h(r);
  const int64_t lse_idx =
      varlen ? h * p.lse_head_stride + q_start + i : b * p.lse_batch_stride + h * p.lse_head_stride + i;
  if (p.num_splits > 1) {  // float32 partials for the combine kernel
    const int64_t slot = split * p.accum_rows + lse_idx;
    float* dst = p.oaccum + slot * p.oaccum_stride + c0;
#pragma unroll
    for (int c = 0; c < kCols; c += 4)
      *reinterpret_cast<float4*>(dst + c) = make_float4(o[c] * inv, o[c + 1] * inv, o[c + 2] * inv, o[c + 3] * inv);
    if (c0 == 0) p.lse_accum[slot] = lse;
    return;
  }
  E* dst = static_cast<E*>(p.o) + (varlen ? q_start * p.o_row_stride : b * p.o_batch_stride) + h * p.o_head_stride +
           i * p.o_row_stride;
#pragma unroll
  for (int c = 0; c < kCols; ++c)
    if (c0 + c < p.head_dim) dst[c0 + c] = MmaOp<E>::from_float(o[c] * inv);
  if (c0 == 0) p.lse[lse_idx] = lse;
}

}  // namespace attn::flash
